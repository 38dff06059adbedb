import Dispatch
import Exclusion
import Foundation

/// A bank of accounts, safe to use from any thread, with no threading in its API.
///
/// This is the reference system of the serial-member-queue pattern. All of the bank's state (every
/// balance, every closed flag, the running total) is one value, the ledger, behind one accessor:
/// one member queue for the whole area of functionality. ``Account`` objects are thin handles into
/// it, so a transfer between two accounts is one atomic change, with no lock order to get wrong.
///
/// ```swift
/// let bank = Bank()
/// let alice = try bank.openAccount(initialBalance: Money("100.00")!)
/// let bob = try bank.openAccount()
/// try bank.transferMoneyAmount(Money("30.00")!, from: alice, to: bob)
/// bank.totalBalance { total in print(total) }   // "100.00", on the main queue
/// ```
///
/// The three rules of the member-queue pattern hold by construction, not by discipline: the state
/// that must be serialized is one type (the ledger), it is only reachable inside an access of the
/// bank's one `Exclusive` (or `ReadersWriter`), and the ledger's methods can only touch the ledger.
///
/// Every operation checks before it changes anything: a thrown ``BankError`` leaves every balance,
/// flag and the total exactly as they were.
///
/// Every committed change of an account is announced on the bank's notification queue, in commit
/// order, after the ledger is released: by default one ``accountDidChangeNotification`` per change
/// (a transfer posts two), or, with ``ChangeNotifications/batched``, one
/// ``accountsDidChangeNotification`` per batch of changes. An observer may therefore call back
/// into the bank synchronously, to read a balance or make a transfer, without deadlock.
public final class Bank: Sendable {
    /// How the ledger is shared between threads.
    public enum Concurrency: Sendable {
        /// One access at a time: an `Exclusive` ledger. The right default.
        case serial
        /// Reads side by side, changes alone: a `ReadersWriter` ledger, for read-heavy use.
        case readersWriter
    }

    /// How a bank announces the changes it commits. Either way every change is announced exactly
    /// once, in commit order, on the notification queue, after the ledger is released.
    public enum ChangeNotifications: String, Sendable, Codable, CaseIterable {
        /// One ``Bank/accountDidChangeNotification`` per changed account: a transfer posts two.
        /// The default.
        case eachChange = "each-change"
        /// One ``Bank/accountsDidChangeNotification`` per batch: every change committed since the
        /// previous batch was taken, in commit order. The same information in far fewer posts, which
        /// matters because a post through `NotificationCenter` costs several times what a commit
        /// does (the Bank rows of `Benchmarks/` measure both), and because the notification center
        /// serializes posts: on Linux, other threads posting at the same time (another bank, say)
        /// make each post wait its turn. Batches are as large as the backlog the announcer finds, so
        /// they grow when committers outpace it.
        case batched
    }

    /// Posted after each committed change of an account, unless the bank announces
    /// ``ChangeNotifications/batched``; `object` is the bank and `userInfo[changeKey]` the
    /// ``AccountChange``.
    public static let accountDidChangeNotification = Notification.Name("ExclusionBankAccountDidChange")

    /// The `userInfo` key of ``accountDidChangeNotification`` that holds the ``AccountChange``.
    public static let changeKey = "change"

    /// Posted after a batch of committed changes by a bank that announces
    /// ``ChangeNotifications/batched``; `object` is the bank and `userInfo[changesKey]` the
    /// `[AccountChange]`, in commit order and never empty.
    public static let accountsDidChangeNotification = Notification.Name("ExclusionBankAccountsDidChange")

    /// The `userInfo` key of ``accountsDidChangeNotification`` that holds the `[AccountChange]`.
    public static let changesKey = "changes"

    let store: LedgerStore
    private let notificationQueue: DispatchQueue
    /// How this bank announces changes.
    public let changeNotifications: ChangeNotifications
    let announcer: Announcer

    /// Creates an empty bank.
    ///
    /// - Parameters:
    ///   - concurrency: How the ledger is shared between threads; results are the same either way.
    ///   - notificationQueue: Where changes are announced.
    ///   - changeNotifications: How changes are announced: one notification each (the default), or
    ///     one per batch.
    public convenience init(
        concurrency: Concurrency = .serial, notificationQueue: DispatchQueue = .main,
        changeNotifications: ChangeNotifications = .eachChange
    ) {
        self.init(
            concurrency: concurrency, notificationQueue: notificationQueue, changeNotifications: changeNotifications,
            announcer: Announcer())
    }

    /// For tests: a bank whose back-pressure has another limit and patience.
    init(
        concurrency: Concurrency, notificationQueue: DispatchQueue,
        changeNotifications: ChangeNotifications = .eachChange,
        announcer: Announcer
    ) {
        store = LedgerStore(concurrency)
        self.notificationQueue = notificationQueue
        self.changeNotifications = changeNotifications
        self.announcer = announcer
    }

    deinit {
        // No change can be committed any more: loops over `changes` end once they took the rest.
        store.change { $0.changeLog.end() }
    }

    // MARK: - Accounts

    /// Opens an account holding `initialBalance`.
    ///
    /// - Throws: ``BankError/invalidAmount(_:)`` for a negative balance, ``BankError/overflow`` if
    ///   the bank's total would overflow.
    public func openAccount(initialBalance: Money = .zero) throws(BankError) -> Account {
        let change = try commit { (ledger: inout Ledger) throws(BankError) in
            (try ledger.open(initialBalance: initialBalance), nil)
        }
        return Account(id: change.account, bank: self)
    }

    /// Every account of the bank, in opening order, closed ones included.
    public var accounts: [Account] {
        // Only the count is read under the ledger; the handles are made outside it.
        let count = store.read { $0.accountCount }
        return (0..<count).map { Account(id: AccountID(number: $0 + 1), bank: self) }
    }

    // MARK: - Totals

    /// The sum of all balances, consistent with every committed change.
    ///
    /// The ledger keeps a running total, so this costs the same with a million accounts as with
    /// one, and holds the ledger no longer than reading one balance does.
    public var totalBalanceInAllAccounts: Money { store.read { $0.total } }

    /// Delivers the sum of all balances on `queue`, without blocking the caller.
    ///
    /// The value is consistent: it is the total at one moment between committed changes. Reading
    /// it holds the ledger for O(1) time however many accounts there are.
    public func totalBalance(deliverOn queue: DispatchQueue = .main, completion: @escaping @Sendable (Money) -> Void) {
        store.readAsync(deliverOn: queue, { $0.total }, completion: completion)
    }

    /// The sum of all balances, suspending instead of blocking while a change holds the ledger.
    ///
    /// It runs in the caller's isolation: on the main actor, an uncontended read never leaves it.
    nonisolated(nonsending) public func totalBalance() async -> Money {
        await store.read { $0.total }
    }

    // MARK: - Transfers

    /// Moves `amount` from one account to another, atomically: both sides change or neither does.
    ///
    /// - Throws: ``BankError/unknownAccount(_:)`` for an account of another bank,
    ///   ``BankError/sameAccount(_:)``, ``BankError/invalidAmount(_:)``,
    ///   ``BankError/accountClosed(_:)``, ``BankError/insufficientFunds(_:balance:requested:)`` or
    ///   ``BankError/overflow``. Nothing changes when it throws.
    public func transferMoneyAmount(_ amount: Money, from source: Account, to destination: Account) throws(BankError) {
        try checkOwnership(source)
        try checkOwnership(destination)
        try commit { (ledger: inout Ledger) throws(BankError) in
            let (debit, credit) = try ledger.transfer(amount, from: source.id, to: destination.id)
            return (debit, credit)
        }
    }

    private func checkOwnership(_ account: Account) throws(BankError) {
        guard account.bank === self else { throw .unknownAccount(account.id) }
    }

    // MARK: - Committing changes

    /// Applies `change` to the ledger in one access and records what changed for announcement; the
    /// announcement itself happens on the notification queue, after the ledger is released.
    ///
    /// Back-pressure: a commit that leaves more than ``announcementBacklogLimit`` changes waiting to
    /// be posted waits, holding nothing, until the announcer has caught up. So what is committed
    /// but not yet announced stays bounded however fast the committers are.
    @discardableResult
    func commit(
        _ change: (inout Ledger) throws(BankError) -> (AccountChange, AccountChange?)
    ) throws(BankError) -> AccountChange {
        var mustAnnounce = false
        var place = 0
        let first = try store.change { (ledger) throws(BankError) -> AccountChange in
            let (first, second) = try change(&ledger)
            mustAnnounce = ledger.announce(first, second)
            place = ledger.changesRecorded
            return first
        }
        if mustAnnounce { notificationQueue.async { self.announceChanges() } }
        if place - announcer.delivered > announcer.limit { announcer.waitUntilWithinLimit(place) }
        return first
    }

    /// Most changes that may wait to be posted before a commit waits for the announcer: 65,536, a
    /// few megabytes.
    public static let announcementBacklogLimit = 65_536

    /// Posts one batch of what was committed, then, if more is waiting, schedules itself again
    /// behind whatever else was queued meanwhile. One round at a time posts in commit order; giving
    /// the queue back between batches lets the rest of its work run (completions of
    /// ``totalBalance(deliverOn:completion:)``, the app's own blocks), instead of piling up behind an
    /// announcer that never returns while committers keep it busy.
    private func announceChanges() {
        var posted = false
        announcer.onQueue {
            var batch: [AccountChange] = []
            // A quarter of the limit at a time, so waiting committers go on before all is posted.
            store.change { $0.takeUnannounced(into: &batch, limit: max(1, announcer.limit / 4)) }
            if batch.isEmpty { return }  // the round is over; the next commit starts another
            posted = true
            let count = batch.count
            switch changeNotifications {
            case .eachChange:
                postEach(batch)
            case .batched:
                NotificationCenter.default.post(
                    name: Bank.accountsDidChangeNotification, object: self, userInfo: [Bank.changesKey: batch])
            }
            announcer.didAnnounce(count)
        }
        if posted { notificationQueue.async { self.announceChanges() } }
    }

    /// Posts one ``accountDidChangeNotification`` for each change of `batch`, in order.
    ///
    /// Most of a post's cost is `NotificationCenter`'s own, so the bank saves what it can of the
    /// rest: one `Notification` serves the whole batch, and each change replaces the one value of
    /// its `userInfo` in place, without a new dictionary, key or notification per change. Observers
    /// get their own copy as ever: one that keeps a notification keeps the change it was posted
    /// with, as the next replacement copies the dictionary first.
    private func postEach(_ batch: [AccountChange]) {
        guard let first = batch.first else { return }
        var notification = Notification(
            name: Bank.accountDidChangeNotification, object: self, userInfo: [Bank.changeKey: first])
        // Replacing a value moves nothing, so the key's index holds for the batch (and for a copy).
        let changeIndex = notification.userInfo!.index(forKey: Bank.changeKey)!
        for change in batch {
            notification.userInfo!.values[changeIndex] = change
            NotificationCenter.default.post(notification)
        }
    }
}
