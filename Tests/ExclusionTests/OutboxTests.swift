import Dispatch
import Exclusion
import ExclusionTestSupport
import Foundation
import Testing

@Suite("Outbox", .patientTimeLimit(minutes: 10))
struct OutboxTests {
    @Test func postedWorkRunsAfterTheAccessOnTheGivenQueue() async {
        let value = Exclusive(0)
        let queue = DispatchQueue(label: "notifications")
        let seen: Int = await withCheckedContinuation { continuation in
            syncAccessWithOutbox(value) { state, outbox in
                state = 5
                outbox.post(on: queue) {
                    dispatchPrecondition(condition: .onQueue(queue))
                    #expect(!value.isAccessing)
                    continuation.resume(returning: value.access { $0 })  // calls back in: no deadlock
                }
            }
        }
        #expect(seen == 5)
    }

    @Test func postsFromManyThreadsArriveInCommitOrder() async {
        // Each access stamps the next number and posts it; a serial queue must see 1, 2, 3, ...
        let counter = Exclusive(0)
        let arrived = await arrivalOrder(threads: 4, commits: 2_000) { queue, deliver in
            syncAccessWithOutbox(counter) { state, outbox in
                state += 1
                let stamp = state
                outbox.post(on: queue) { deliver(stamp) }
            }
        }
        #expect(arrived == Array(1...8_000))
    }

    @Test func theOrderCheckCatchesPostingAfterTheAccessReturns() async {
        // The naive way, posting after the access returns, lets threads overtake each other.
        let counter = Exclusive(0)
        let arrived = await arrivalOrder(threads: 4, commits: 2_000) { queue, deliver in
            let stamp = syncAccess(counter) { state -> Int in
                state += 1
                return state
            }
            usleep(UInt32.random(in: 0...20))  // anything can come between the access and the post
            queue.async { deliver(stamp) }
        }
        let inCommitOrder = arrived == Array(1...8_000)
        #expect(!inCommitOrder)
    }

    @Test func postsOfAThrowingAccessStillRun() async {
        struct Failure: Error {}
        let value = Exclusive(0)
        await withCheckedContinuation { continuation in
            #expect(throws: Failure.self) {
                try value.access { (state: inout Int, outbox: inout Outbox) throws(Failure) in
                    outbox.post(on: .global()) { continuation.resume() }
                    throw Failure()
                }
            }
        }
    }

    @Test func readersWriterWritesPostInCommitOrder() async {
        let counter = ReadersWriter(0)
        let arrived = await arrivalOrder(threads: 2, commits: 2_000) { queue, deliver in
            counter.write { (state: inout Int, outbox: inout Outbox) in
                state += 1
                let stamp = state
                outbox.post(on: queue) { deliver(stamp) }
            }
        }
        #expect(arrived == Array(1...4_000))
    }
}

/// Runs `commits` commits on each of `threads` threads. Each `commit` stamps a number and has
/// `deliver` called with it on the serial queue it is given; returns the stamps in the order they
/// arrived there.
private func arrivalOrder(
    threads: Int, commits: Int,
    _ commit: @escaping @Sendable (DispatchQueue, @escaping @Sendable (Int) -> Void) -> Void
) async -> [Int] {
    let queue = DispatchQueue(label: "notifications")
    let arrived = Recorder<Int>()
    let done = Countdown(threads * commits)
    let deliver: @Sendable (Int) -> Void = { stamp in
        arrived.record(stamp)
        done.arrive()
    }
    await onThreads(threads, rounds: commits) { _, _ in
        commit(queue, deliver)
    }
    await done.wait()
    return arrived.values
}

private func syncAccessWithOutbox(_ value: Exclusive<Int>, _ body: (inout Int, inout Outbox) -> Void) {
    value.access { state, outbox in body(&state, &outbox) }
}
