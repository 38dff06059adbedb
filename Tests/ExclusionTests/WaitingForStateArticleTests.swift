import Dispatch
import Exclusion
import ExclusionTestSupport
import Testing

// The code of the "Waiting for state" article, as it is printed there, compiled and run.

// MARK: - From the article

private let jobs = Exclusive([String](), label: "jobs")

private func consumeOneJob() throws -> String {
    // A consumer thread:
    let next = try jobs.access(when: { !$0.isEmpty }) { $0.removeFirst() }
    return next
}

private func addAJob() {
    // Any other code, which knows nothing about who waits:
    jobs.access { $0.append("send invoices") }
}

struct Accounts {
    var balances: [String: Int] = [:]
}

private let accounts = Exclusive(Accounts(), label: "accounts")

/// Takes `amount` out of `account` as soon as it holds that much; gives up after `patience`.
private func withdraw(_ amount: Int, from account: String, waitingAtMost patience: Duration) throws -> Int {
    try accounts.access(when: { $0.balances[account, default: 0] >= amount }, timeout: patience) { accounts in
        accounts.balances[account, default: 0] -= amount
        return accounts.balances[account, default: 0]
    }
}

/// Puts `amount` into `account`. It wakes the withdrawal without knowing it exists.
private func deposit(_ amount: Int, into account: String) {
    accounts.access { $0.balances[account, default: 0] += amount }
}

struct BoundedQueue<Element: Sendable>: Sendable {
    private let items: Exclusive<[Element]>
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        items = Exclusive([], label: "bounded queue")
    }

    func put(_ element: Element) throws {
        let capacity = capacity
        try items.access(when: { $0.count < capacity }) { $0.append(element) }
    }

    func take() throws -> Element {
        try items.access(when: { !$0.isEmpty }) { $0.removeFirst() }
    }

    /// The same, from Swift concurrency: suspends instead of blocking, and can be cancelled.
    func take(waitingAtMost patience: Duration) async throws -> Element {
        try await items.access(when: { !$0.isEmpty }, timeout: patience) { $0.removeFirst() }
    }
}

// MARK: - What the article says they do

@Suite("The Waiting for state article", .patientTimeLimit(minutes: 10))
struct WaitingForStateArticleTests {
    @Test func theConsumerGetsTheJobAddedLater() async throws {
        let next = BlockingCall { try? consumeOneJob() }
        await onItsOwnThread { addAJob() }
        #expect(try await next.value() == "send invoices")
    }

    @Test func aWithdrawalWaitsForTheDepositAndGivesUpWithoutOne() async throws {
        let left = BlockingCall { try? withdraw(30, from: "savings", waitingAtMost: .seconds(60)) }
        await onItsOwnThread {
            deposit(20, into: "savings")  // not enough yet
            deposit(20, into: "savings")
        }
        #expect(try await left.value() == 10)
        let timedOut = try await onItsOwnThread { () -> Bool in
            do {
                _ = try withdraw(1_000, from: "savings", waitingAtMost: .milliseconds(10))
                return false
            } catch {
                return error is TimeoutError
            }
        }
        #expect(timedOut)
    }

    @Test func theBoundedQueueMovesEveryItemInOrder() async throws {
        let queue = BoundedQueue<Int>(capacity: 4)
        let produced = BlockingCall { for item in 0..<100 { try? queue.put(item) } }
        var taken: [Int] = []
        for _ in 0..<50 { taken.append(try await onItsOwnThread { (try? queue.take()) ?? -1 }) }
        for _ in 0..<50 { taken.append(try await queue.take(waitingAtMost: .seconds(60))) }
        try await produced.value()
        #expect(taken == Array(0..<100))
        await #expect(throws: TimeoutError.self) { try await queue.take(waitingAtMost: .milliseconds(10)) }
    }
}
