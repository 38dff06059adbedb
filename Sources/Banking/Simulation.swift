import Dispatch
import Foundation
import SplitMix
import Synchronization

/// A load test of a ``Bank``: many threads making random operations at once, and afterwards a
/// check that no money appeared or vanished and that every change was announced exactly once.
///
/// ```swift
/// let simulation = Simulation(configuration: .init(accounts: 1_000, threads: 4, operations: 200_000))
/// let report = await simulation.run()
/// print(report.summary)
/// ```
public struct Simulation: Sendable {
    /// What to simulate.
    public struct Configuration: Sendable, Codable, Equatable {
        /// How many accounts to open before the threads start.
        public var accounts: Int
        /// How many threads make operations at once.
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
        case transfer, deposit, withdrawal, balance, asyncTotal, close

        /// How often each kind is chosen, per ten thousand operations.
        var weight: Int {
            switch self {
            case .transfer: 6_000
            case .deposit: 1_200
            case .withdrawal: 1_200
            case .balance: 1_400
            case .asyncTotal: 195
            case .close: 5
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
        let accountsOpened = accounts
        let started = ContinuousClock.now
        let tallies = await withTaskGroup(of: Tally.self) { group in
            let reporter = Task {
                while !Task.isCancelled {
                    progress(done.count, configuration.operations)
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
            let workers = configuration.threads
            for worker in 0..<workers {
                let share = configuration.operations / workers + (worker < configuration.operations % workers ? 1 : 0)
                let seed = configuration.seed &+ UInt64(worker + 1) &* 0x9E37_79B9
                group.addTask {
                    await onThread {
                        Self.work(
                            bank: bank, accounts: accountsOpened, operations: share, seed: seed, done: done,
                            totalsDelivered: totalsDelivered, queue: notificationQueue)
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

        return Report(
            configuration: configuration, bank: bank, accounts: accounts, openingTotal: openingTotal, tally: tally,
            notifications: counted(), expectedNotifications: expectedNotifications,
            changesProblem: audit?.problem(accounts: accounts, committed: expectedNotifications),
            totalsDelivered: totalsDelivered.count, elapsed: elapsed)
    }

    // MARK: - One worker thread

    private static func work(
        bank: Bank, accounts: [Account], operations: Int, seed: UInt64, done: SharedCount,
        totalsDelivered: SharedCount, queue: DispatchQueue
    ) -> Tally {
        var random = SplitMix64(seed: seed)
        var tally = Tally()
        let totalWeight = Operation.allCases.reduce(0) { $0 + $1.weight }
        for step in 0..<operations {
            var pick = Int.random(in: 0..<totalWeight, using: &random)
            let operation = Operation.allCases.first {
                pick -= $0.weight; return pick < 0
            }!
            let account = accounts.randomElement(using: &random)!
            let amount = Money(minorUnits: Int64.random(in: 1...50_000, using: &random))
            tally.counts[operation, default: 0] += 1
            do throws(BankError) {
                switch operation {
                case .transfer:
                    let other = accounts.randomElement(using: &random)!
                    try bank.transferMoneyAmount(amount, from: account, to: other)
                    tally.changes += 2
                case .deposit:
                    try account.addMoney(amount)
                    tally.deposits += amount.minorUnits
                    tally.changes += 1
                case .withdrawal:
                    try account.subtractMoney(amount)
                    tally.withdrawals += amount.minorUnits
                    tally.changes += 1
                case .balance:
                    if account.balance < .zero { tally.negativeBalancesSeen += 1 }
                case .asyncTotal:
                    tally.asyncTotalsRequested += 1
                    bank.totalBalance(deliverOn: queue) { _ in totalsDelivered.add(1) }
                case .close:
                    tally.payouts += try account.closeAccount().minorUnits
                    tally.changes += 1
                }
            } catch {
                tally.rejections[error.reason, default: 0] += 1
            }
            if step % 256 == 255 { done.add(256) }
        }
        done.add(operations % 256)
        return tally
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
