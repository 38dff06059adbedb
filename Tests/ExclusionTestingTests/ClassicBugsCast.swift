import Exclusion
import ExclusionTesting

// The code the classic bugs (`classicBugs`) run in, besides Exclusion's instances: actors, a view
// model on the main actor, a one-time event, and two instances nested in either order.

/// An account kept by an actor, with no Exclusion instance in it.
actor Wallet {
    private var balance = 100

    /// Takes `amount` if the balance covers it, once the card network approves: an await, in
    /// which the actor runs other calls. Fixed, it checks the balance again after the await.
    func withdraw(_ amount: Int, fixed: Bool) async -> Bool {
        guard balance >= amount else { return false }
        await approve(amount)
        if fixed, balance < amount { return false }
        balance -= amount
        return true
    }

    /// Asks the card network, off the actor: a round trip, which takes a while.
    private nonisolated func approve(_ amount: Int) async {
        try? await Task.sleep(for: .milliseconds(30))
    }
}

/// A like button's count, kept on the main actor, as a view model keeps what a screen shows.
@MainActor final class LikeButton {
    private var likes = 0

    nonisolated init() {}

    /// Counts a tap, sends the count to the server, and returns it. The send is an await, in which
    /// other code runs on the main actor: counted from what it read before, the tap writes back a
    /// count another tap already used. Fixed, it counts before it awaits.
    func tap(sendingTo server: LikeServer, fixed: Bool) async -> Int {
        if fixed {
            likes += 1
            let count = likes
            await server.record(count)
            return count
        }
        let count = likes + 1
        await server.record(count)
        likes = count
        return count
    }
}

/// The server that keeps the counts.
actor LikeServer {
    private var counts: [Int] = []

    func record(_ count: Int) { counts.append(count) }
}

/// A one-time event, and the continuations of the tasks that wait for it.
struct Event: Sendable {
    var fired = false
    var waiters: [CheckedContinuation<Void, Never>] = []
}

/// A request's continuation, waiting to be completed once.
enum Request: Sendable, Equatable {
    case empty
    case waiting(CheckedContinuation<Void, Never>)
    case done

    static func == (left: Self, right: Self) -> Bool {
        switch (left, right) {
        case (.empty, .empty), (.waiting, .waiting), (.done, .done): true
        default: false
        }
    }
}

/// Two threads, each nesting two instances, in opposite orders; fixed, in the same order.
func opposite(fixed: Bool, awaited: Bool, _ threads: ScheduleThreads) {
    let a = Exclusive(0, label: "a")
    let b = Exclusive(0, label: "b")
    if awaited {
        threads.spawn { await a.access { _ in sync(b) { $0 += 1 } } }
        threads.spawn {
            if fixed {
                await a.access { _ in sync(b) { $0 += 1 } }
            } else {
                await b.access { _ in sync(a) { $0 += 1 } }
            }
        }
    } else {
        threads.spawn { sync(a) { _ in sync(b) { $0 += 1 } } }
        threads.spawn {
            if fixed { sync(a) { _ in sync(b) { $0 += 1 } } } else { sync(b) { _ in sync(a) { $0 += 1 } } }
        }
    }
}
