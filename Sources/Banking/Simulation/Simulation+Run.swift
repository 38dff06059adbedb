import Dispatch
import Foundation
import SplitMix

extension Simulation {
    /// How long the end of a run waits with nothing delivered before it gives up on the rest.
    private static let stallLimit: Duration = .seconds(30)

    /// Runs the simulation and checks the bank afterwards.
    ///
    /// - Precondition: At least two ``Configuration/accounts`` per thread.
    ///
    /// - Parameters:
    ///   - notificationQueue: Where the bank posts its notifications and delivers asynchronous
    ///     totals, and where they are counted. It must be serviced while the simulation runs
    ///     (for the main queue: an `async` main, or `dispatchMain()`).
    ///   - progress: Called now and then with how many operations are done, out of how many; one
    ///     call at a time, the last one when every operation is done.
    /// - Returns: The report, with ``Report/passed`` telling whether every check held.
    public func run(
        notificationQueue: DispatchQueue = .main,
        progress: @escaping @Sendable (_ done: Int, _ total: Int) -> Void = { _, _ in }
    ) async -> Report {
        let bank = Bank(
            concurrency: configuration.concurrency.bankConcurrency, notificationQueue: notificationQueue,
            changeNotifications: configuration.notifications)
        precondition(
            configuration.accounts >= 2 * configuration.threads,
            "a simulation needs at least two accounts per thread, not \(configuration.accounts) for "
                + "\(configuration.threads) threads")
        let counter = NotificationCounter(bank: bank)
        defer { counter.stop() }
        // Made before the first account opens, so it is given every change.
        let reader = configuration.countThrough == .changes ? ChangeCounter(bank: bank) : nil
        let counted: @Sendable () -> Int = { reader?.count ?? counter.count }

        var random = SplitMix64(seed: configuration.seed)
        var openingTotal = Money.zero
        var accounts: [Account] = []
        accounts.reserveCapacity(configuration.accounts)
        for _ in 0..<configuration.accounts {
            let balance = Money(minorUnits: Int64.random(in: 0...1_000_000, using: &random))
            // Small random balances: neither opening nor any later change can overflow.
            accounts.append(try! bank.openAccount(initialBalance: balance))
            openingTotal = Money(minorUnits: openingTotal.minorUnits + balance.minorUnits)
        }

        let done = SharedCount()
        let totalsDelivered = SharedCount()
        let started = ContinuousClock.now
        let tallies = await withTaskGroup(of: Tally.self) { group in
            let reporter = Task {
                while !Task.isCancelled {
                    progress(done.count, configuration.operations)
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
            let workers = configuration.threads
            var firstAccount = 0
            for worker in 0..<workers {
                let share = configuration.operations / workers + (worker < configuration.operations % workers ? 1 : 0)
                let seed = configuration.seed &+ UInt64(worker + 1) &* 0x9E37_79B9
                let accountsShare =
                    configuration.accounts / workers + (worker < configuration.accounts % workers ? 1 : 0)
                let branch = Branch(
                    bank: bank, accounts: Array(accounts[firstAccount..<firstAccount + accountsShare]), seed: seed)
                firstAccount += accountsShare
                group.addTask {
                    await onThread {
                        var branch = branch
                        branch.work(
                            operations: share, done: done, totalsDelivered: totalsDelivered, queue: notificationQueue)
                        return branch.tally
                    }
                }
            }
            var tallies: [Tally] = []
            for await tally in group { tallies.append(tally) }
            // The last call below must come after the reporter's: calls never overlap.
            reporter.cancel()
            await reporter.value
            return tallies
        }
        progress(configuration.operations, configuration.operations)

        let tally = tallies.reduce(into: Tally()) { $0.merge($1) }
        let expectedNotifications = configuration.accounts + tally.changes
        // Everything was committed; the run ends when the last announcement has been delivered.
        // (The bank's back-pressure keeps the committers at most a bounded backlog ahead of it.)
        // Delivery can be slow without being stuck: `NotificationCenter` serializes every post
        // of the process, so other threads posting make each post wait its turn. So the wait
        // gives up only when nothing at all was delivered for `stallLimit`; the checks then fail.
        await waitWhileProgressing(
            until: { counted() >= expectedNotifications && totalsDelivered.count >= tally.asyncTotalsRequested },
            progress: { counted() + totalsDelivered.count }, stallLimit: Self.stallLimit)
        let elapsed = ContinuousClock.now - started
        // Anything posted twice was queued before the last one was delivered: it is on the queue by now.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            notificationQueue.async { continuation.resume() }
        }
        let audit = await reader?.stop()

        // Every account, those opened during the run included.
        let everyAccount = bank.accounts
        return Report(
            configuration: configuration, bank: bank, accounts: everyAccount, openingTotal: openingTotal,
            tally: tally, notifications: counted(), expectedNotifications: expectedNotifications,
            changesProblem: audit?.problem(accounts: everyAccount, committed: expectedNotifications),
            totalsDelivered: totalsDelivered.count, elapsed: elapsed)
    }
}

// MARK: - Counting the changes

/// Counts the changes the bank announced, where they are delivered, whichever way it announces them.
private final class NotificationCounter: @unchecked Sendable {
    // @unchecked: `observers` is set once in init and only read in `stop`; `counted` is Sendable.
    private let counted = SharedCount()
    private var observers: [any NSObjectProtocol] = []

    init(bank: Bank) {
        observers = [
            NotificationCenter.default.addObserver(
                forName: Bank.accountDidChangeNotification, object: bank, queue: nil
            ) { [counted] _ in counted.add(1) },
            NotificationCenter.default.addObserver(
                forName: Bank.accountsDidChangeNotification, object: bank, queue: nil
            ) { [counted] notification in
                counted.add((notification.userInfo?[Bank.changesKey] as? [AccountChange])?.count ?? 0)
            },
        ]
    }

    /// How many changes were announced.
    var count: Int { counted.count }

    func stop() {
        for observer in observers { NotificationCenter.default.removeObserver(observer) }
    }
}

/// Counts the changes a loop over `Bank.changes` takes, and audits them.
private final class ChangeCounter: Sendable {
    private let counted = SharedCount()
    private let loop: Task<ChangeAudit, Never>

    init(bank: Bank) {
        let counted = counted
        // `bank.changes`' iterator, made here, before the caller commits anything, so that it is
        // given every change.
        let start = BankChanges(store: bank.store, announcer: bank.announcer).makeAsyncIterator()
        loop = Task.detached {
            var iterator = start
            var audit = ChangeAudit()
            while let change = await iterator.next() {
                audit.add(change)
                counted.add(1)
            }
            return audit
        }
    }

    /// How many changes the loop took.
    var count: Int { counted.count }

    /// Ends the loop (after what it has in hand) and returns its audit.
    func stop() async -> ChangeAudit {
        loop.cancel()
        return await loop.value
    }
}

/// Runs `body` on a new thread, so that blocking calls don't tie up the cooperative pool.
private func onThread<R: Sendable>(_ body: @escaping @Sendable () -> R) async -> R {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}
