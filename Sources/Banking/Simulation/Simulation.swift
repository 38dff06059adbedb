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
