import Banking
import Benchmark
import Dispatch
import Foundation
import Synchronization

// The Bank against the textbook design, with notifications on in both, posted to a private serial
// queue (nothing services the main queue in a benchmark). One iteration is a million operations,
// so each time is per operation; building the bank is setup, not measured. Transfers are timed
// until their last notification has been delivered, in both designs.

let accountCount = 1_000

func makeBank(
    _ concurrency: Bank.Concurrency, accounts: Int = accountCount,
    notifications: DispatchQueue = DispatchQueue(label: "notifications"),
    changeNotifications: Bank.ChangeNotifications = .eachChange
) -> (Bank, [Account]) {
    let bank = Bank(
        concurrency: concurrency, notificationQueue: notifications, changeNotifications: changeNotifications)
    // The opening notifications are delivered before anything is measured. One `sync` on the queue
    // isn't enough: an announcement round posts a batch and queues the next behind other work.
    let opening = DeliveredChanges(of: bank, until: accounts)
    let opened = (0..<accounts).map { _ in try! bank.openAccount(initialBalance: Money(minorUnits: 1_000_000)) }
    opening.wait()
    return (bank, opened)
}

/// Runs `body(thread, iterations)` on `count` threads started together; returns when all are done.
func onThreads(_ count: Int, iterations: Int, _ body: @escaping @Sendable (Int, Int) -> Void) {
    let group = DispatchGroup()
    let ready = Atomic<Int>(0)
    for thread in 0..<count {
        group.enter()
        Thread {
            ready.add(1, ordering: .sequentiallyConsistent)
            while ready.load(ordering: .sequentiallyConsistent) < count { sched_yield() }
            body(thread, iterations / count)
            group.leave()
        }.start()
    }
    group.wait()
}

/// Counts the changes a bank's notifications deliver, of either kind, until `count` of them.
final class DeliveredChanges {
    private final class Tally: Sendable {
        let delivered = Atomic<Int>(0)
    }

    private let done = DispatchSemaphore(value: 0)
    private let tally = Tally()
    private let count: Int
    private let observers: [any NSObjectProtocol]

    init(of bank: Bank, until count: Int) {
        let tally = tally
        let done = done
        self.count = count
        // Signalled when the count is first reached, so that a change too many can't hide it.
        let add: @Sendable (Int) -> Void = { changes in
            let (before, after) = tally.delivered.add(changes, ordering: .relaxed)
            if before < count, after >= count { done.signal() }
        }
        observers = [
            NotificationCenter.default.addObserver(
                forName: Bank.accountDidChangeNotification, object: bank, queue: nil
            ) { _ in add(1) },
            NotificationCenter.default.addObserver(
                forName: Bank.accountsDidChangeNotification, object: bank, queue: nil
            ) { note in add((note.userInfo?[Bank.changesKey] as? [AccountChange])?.count ?? 0) },
        ]
        if count == 0 { done.signal() }
    }

    deinit {
        for observer in observers { NotificationCenter.default.removeObserver(observer) }
    }

    /// Waits until the last change was delivered; stops the run with the counts if that takes
    /// minutes, instead of hanging.
    func wait() {
        guard done.wait(timeout: .now() + .seconds(300)) == .success else {
            fatalError("\(tally.delivered.load(ordering: .relaxed)) of \(count) changes delivered after 300 s")
        }
    }
}

/// One cent from account to account, `iterations` times in all, shared out over `threads` threads
/// (`pair` picks the accounts).
func transfer(on bank: Bank, _ accounts: [Account], threads: Int, iterations: Int) {
    let amount = Money(minorUnits: 1)
    onThreads(threads, iterations: iterations) { thread, count in
        for step in 0..<count {
            let (from, to) = pair(step, thread)
            try? bank.transferMoneyAmount(amount, from: accounts[from], to: accounts[to])
        }
    }
}

/// A cheap, deterministic account pair for step `step` of thread `thread`.
@inline(__always)
func pair(_ step: Int, _ thread: Int) -> (Int, Int) {
    let source = (step &* 7 &+ thread &* 13) % accountCount
    return (source, (source &+ 1 &+ step % 97) % accountCount)
}

/// A loop over a bank's `changes` on a task of its own, made and waiting before this returns, that
/// counts changes until it has `count` of them.
final class ChangesConsumer: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let loop: Task<Void, Never>

    init<Changes: AsyncSequence<AccountChange, Never> & Sendable>(_ changes: Changes, until count: Int) {
        let started = DispatchSemaphore(value: 0)
        let done = done
        loop = Task.detached {
            var iterator = changes.makeAsyncIterator()
            started.signal()
            var taken = 0
            while taken < count, await iterator.next(isolation: nil) != nil { taken += 1 }
            done.signal()
        }
        started.wait()
    }

    /// Waits until the loop has taken its changes; stops the run if that takes minutes.
    func wait() {
        guard done.wait(timeout: .now() + .seconds(300)) == .success else {
            fatalError("the changes loop didn't take its changes within 300 s")
        }
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock], timeUnits: .nanoseconds, scalingFactor: .mega, maxDuration: .seconds(3),
        maxIterations: 5)

    // MARK: - Transfers with notifications

    for threads in [1, 2] {
        let suffix = threads == 1 ? "" : ", 2 threads"
        for changeNotifications in Bank.ChangeNotifications.allCases {
            let kind = changeNotifications == .batched ? ", batched notifications" : ""
            Benchmark("Bank transfer\(kind)\(suffix)") { benchmark in
                let notifications = DispatchQueue(label: "notifications")
                let (bank, accounts) = makeBank(
                    .serial, notifications: notifications, changeNotifications: changeNotifications)
                let delivered = DeliveredChanges(
                    of: bank, until: benchmark.scaledIterations.count / threads * threads * 2)
                benchmark.startMeasurement()
                transfer(on: bank, accounts, threads: threads, iterations: benchmark.scaledIterations.count)
                // An announcement round posts one batch and queues the next behind other work, so
                // one `sync` on the queue isn't the end: wait for the last change to be delivered.
                delivered.wait()
            }
        }
        // One loop over `bank.changes`, made before the transfers: timed until it has taken the
        // last change (and the notifications are delivered too).
        for changeNotifications in Bank.ChangeNotifications.allCases {
            let kind = changeNotifications == .batched ? ", batched notifications" : ""
            Benchmark("Bank transfer, one changes consumer\(kind)\(suffix)") { benchmark in
                let notifications = DispatchQueue(label: "notifications")
                let (bank, accounts) = makeBank(
                    .serial, notifications: notifications, changeNotifications: changeNotifications)
                let expected = benchmark.scaledIterations.count / threads * threads * 2
                let consumer = ChangesConsumer(bank.changes, until: expected)
                let delivered = DeliveredChanges(of: bank, until: expected)
                benchmark.startMeasurement()
                transfer(on: bank, accounts, threads: threads, iterations: benchmark.scaledIterations.count)
                consumer.wait()
                delivered.wait()
            }
        }
        Benchmark("peer: textbook transfer\(suffix)") { benchmark in
            let notifications = DispatchQueue(label: "notifications")
            let bank = TextbookBank(accounts: accountCount, balance: 1_000_000, notificationQueue: notifications)
            benchmark.startMeasurement()
            onThreads(threads, iterations: benchmark.scaledIterations.count) { thread, count in
                for step in 0..<count {
                    let (from, to) = pair(step, thread)
                    _ = bank.transfer(1, from: from, to: to)
                }
            }
            notifications.sync {}  // every post was queued before its transfer returned
        }
    }

    notificationFloorBenchmarks()

    // MARK: - 90 % reads, two threads

    for (name, concurrency) in [("serial", Bank.Concurrency.serial), ("readersWriter", .readersWriter)] {
        Benchmark("Bank 90% reads, 2 threads, \(name)") { benchmark in
            let (bank, accounts) = makeBank(concurrency)
            let amount = Money(minorUnits: 1)
            benchmark.startMeasurement()
            onThreads(2, iterations: benchmark.scaledIterations.count) { thread, count in
                for step in 0..<count {
                    let (from, to) = pair(step, thread)
                    if step % 10 == 0 {
                        try? bank.transferMoneyAmount(amount, from: accounts[from], to: accounts[to])
                    } else {
                        blackHole(accounts[from].balance)
                    }
                }
            }
        }
    }

    // MARK: - Totals over a million accounts

    Benchmark(
        "Bank totalBalanceInAllAccounts, 1M accounts",
        configuration: .init(metrics: [.wallClock], timeUnits: .nanoseconds, scalingFactor: .kilo, maxIterations: 1_000)
    ) { benchmark in
        let (bank, _) = millionAccountBank
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(bank.totalBalanceInAllAccounts) }
    }
    Benchmark(
        "Bank balance read, 1M accounts",
        configuration: .init(metrics: [.wallClock], timeUnits: .nanoseconds, scalingFactor: .kilo, maxIterations: 1_000)
    ) { benchmark in
        let (_, accounts) = millionAccountBank
        benchmark.startMeasurement()
        for step in benchmark.scaledIterations { blackHole(accounts[step &* 997 % accounts.count].balance) }
    }
    Benchmark(
        "Bank transfer, 1M accounts",
        configuration: .init(metrics: [.wallClock], timeUnits: .nanoseconds, scalingFactor: .kilo, maxIterations: 1_000)
    ) { benchmark in
        let (bank, accounts) = millionAccountBank
        let amount = Money(minorUnits: 1)
        benchmark.startMeasurement()
        for step in benchmark.scaledIterations {
            let from = step &* 997 % accounts.count
            try? bank.transferMoneyAmount(amount, from: accounts[from], to: accounts[(from + 1) % accounts.count])
        }
    }
    Benchmark(
        "Bank totalBalance(deliverOn:) to completion, 1M accounts",
        configuration: .init(metrics: [.wallClock], timeUnits: .nanoseconds, scalingFactor: .one, maxIterations: 10_000)
    ) { benchmark in
        let (bank, _) = millionAccountBank
        let done = DispatchSemaphore(value: 0)
        benchmark.startMeasurement()
        bank.totalBalance(deliverOn: completionQueue) { _ in done.signal() }
        done.wait()
    }
}

let completionQueue = DispatchQueue(label: "completions")

/// Built once, on first use, outside any measurement.
let millionAccountBank = makeBank(.serial, accounts: 1_000_000)
