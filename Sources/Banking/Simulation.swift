import Dispatch
import Foundation
import SplitMix
import Synchronization

/// A load test of a ``Bank``: many threads making random operations at once, and afterwards a
/// check that no money appeared or vanished and that every change was announced exactly once.
///
/// It runs like a day at a bank. Each thread is a branch with its own customers' accounts: it
/// transfers between them, takes deposits and withdrawals, reads balances, asks for the bank's
/// total, and opens and closes accounts, so that the branch keeps about its share of
/// ``Configuration/accounts`` open however long the run. What the bank refuses is what a bank
/// refuses: a withdrawal or transfer larger than the balance, and now and then a customer naming an
/// account that was recently closed. Every branch works on the bank's one ledger, so they contend
/// for it as much as threads sharing accounts would; but no branch touches another's accounts, so
/// what each operation does depends on the seed alone, not on how the threads interleave, and the
/// same configuration gives the same report but for its timing.
///
/// ```swift
/// let simulation = Simulation(configuration: .init(accounts: 1_000, threads: 4, operations: 200_000))
/// let report = await simulation.run()
/// print(report.summary)
/// ```
public struct Simulation: Sendable {
    /// What to simulate.
    public struct Configuration: Sendable, Codable, Equatable {
        /// How many accounts to open before the threads start, shared out between the threads; about
        /// as many stay open through the run. At least two per thread: a branch transfers between
        /// two of its accounts.
        public var accounts: Int
        /// How many threads make operations at once, each a branch with its own accounts.
        public var threads: Int
        /// How many operations in all, shared out between the threads.
        public var operations: Int
        /// How the bank shares its ledger.
        public var concurrency: ConcurrencyChoice
        /// How the bank announces changes; the simulation counts every change either way.
        public var notifications: Bank.ChangeNotifications
        /// Where the simulation counts the changes: as they are announced, or as a loop over
        /// ``Bank/changes`` takes them.
        public var countThrough: Counting
        /// Where the random choices start; the same seed makes the same choices per thread.
        public var seed: UInt64

        public init(
            accounts: Int = 1_000, threads: Int = 4, operations: Int = 200_000,
            concurrency: ConcurrencyChoice = .serial, notifications: Bank.ChangeNotifications = .eachChange,
            countThrough: Counting = .notifications, seed: UInt64 = 42
        ) {
            self.accounts = accounts
            self.threads = threads
            self.operations = operations
            self.concurrency = concurrency
            self.notifications = notifications
            self.countThrough = countThrough
            self.seed = seed
        }
    }

    /// Where a simulation counts the bank's changes.
    public enum Counting: String, Sendable, Codable, CaseIterable {
        /// As the bank's notifications deliver them, on the notification queue.
        case notifications
        /// As a loop over ``Bank/changes`` takes them, which also checks each account's changes
        /// chain from its opening to its final balance (none lost, none twice, none out of order).
        case changes
    }

    /// ``Bank/Concurrency`` as a value that can be named on a command line and in JSON.
    public enum ConcurrencyChoice: String, Sendable, Codable, CaseIterable {
        case serial
        case readersWriter = "readers-writer"

        var bankConcurrency: Bank.Concurrency {
            switch self {
            case .serial: .serial
            case .readersWriter: .readersWriter
            }
        }
    }

    /// The kinds of operation the threads make.
    public enum Operation: String, Sendable, Codable, CaseIterable, Comparable {
        case transfer, deposit, withdrawal, balance, asyncTotal, open, close

        /// How often each kind is chosen, per ten thousand operations. Opening and closing share
        /// their ten: which of the two it is depends on how many accounts the branch has open
        /// (`Branch.opensRatherThanCloses`).
        var weight: Int {
            switch self {
            case .transfer: 6_000
            case .deposit: 1_200
            case .withdrawal: 1_200
            case .balance: 1_400
            case .asyncTotal: 190
            case .open, .close: 5
            }
        }

        public static func < (lhs: Operation, rhs: Operation) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }
    }

    public let configuration: Configuration

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

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

// MARK: - Bookkeeping

/// What the threads did, added up.
struct Tally: Sendable {
    var counts: [Simulation.Operation: Int] = [:]
    var rejections: [String: Int] = [:]
    var deposits: Int64 = 0
    var withdrawals: Int64 = 0
    var payouts: Int64 = 0
    /// Accounts opened during the run, and what they were opened with.
    var opened = 0
    var openedWith: Int64 = 0
    var closed = 0
    /// Accounts open at the end, and the fewest and most at any moment, each branch's added up: no
    /// moment of the whole bank had fewer or more.
    var openAtEnd = 0
    var fewestOpen = 0
    var mostOpen = 0
    /// Committed account changes, each of which must be announced once.
    var changes = 0
    var negativeBalancesSeen = 0
    var asyncTotalsRequested = 0

    mutating func merge(_ other: Tally) {
        counts.merge(other.counts, uniquingKeysWith: +)
        rejections.merge(other.rejections, uniquingKeysWith: +)
        deposits += other.deposits
        withdrawals += other.withdrawals
        payouts += other.payouts
        opened += other.opened
        openedWith += other.openedWith
        closed += other.closed
        openAtEnd += other.openAtEnd
        fewestOpen += other.fewestOpen
        mostOpen += other.mostOpen
        changes += other.changes
        negativeBalancesSeen += other.negativeBalancesSeen
        asyncTotalsRequested += other.asyncTotalsRequested
    }
}

/// A counter shared between threads.
final class SharedCount: Sendable {
    private let value = Atomic<Int>(0)
    func add(_ amount: Int) { value.add(amount, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
}

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
