/// Everything the bank knows, as one value: every balance, every closed flag, the running total.
///
/// This is the *member queue* state of the classic pattern. Its methods are the original's
/// `memberQueue_` functions, and the three naming rules hold by construction:
///
/// 1. Everything that must be serialized is a stored property or method of `Ledger`; nothing else is.
/// 2. A `Ledger` is only reachable inside an access of the bank's one `Exclusive` (or
///    `ReadersWriter`): `Bank` holds the accessor, never the ledger itself.
/// 3. A ledger method can only touch the ledger: `self` is all it has, so it can't hop onto the
///    queue again.
///
/// Every changing method checks everything first and changes nothing when it throws.
struct Ledger: Sendable {
    private var balances: [Money] = []
    private var closed: [Bool] = []
    /// The sum of all balances, kept up to date with every change, so asking for it is O(1).
    private(set) var total = Money.zero
    /// Committed changes not yet announced, in commit order.
    private var unannounced: [AccountChange] = []
    /// Whether an announcement round is scheduled or running.
    private var isAnnouncing = false
    /// How many changes were ever recorded for announcement: a change's place in line.
    private(set) var changesRecorded = 0
    /// Committed changes that iterators of `Bank.changes` have yet to take.
    var changeLog = ChangeLog()

    var accountCount: Int { balances.count }

    func balance(of account: AccountID) -> Money { balances[account.index] }

    func isClosed(_ account: AccountID) -> Bool { closed[account.index] }

    // MARK: - Changes

    mutating func open(initialBalance: Money) throws(BankError) -> AccountChange {
        guard initialBalance >= .zero else { throw .invalidAmount(initialBalance) }
        guard let newTotal = total.adding(initialBalance) else { throw .overflow }
        balances.append(initialBalance)
        closed.append(false)
        total = newTotal
        let account = AccountID(number: balances.count)
        return AccountChange(account: account, oldBalance: .zero, newBalance: initialBalance, isClosed: false)
    }

    mutating func deposit(_ amount: Money, into account: AccountID) throws(BankError) -> AccountChange {
        try checkAmount(amount)
        try checkOpen(account)
        let old = balances[account.index]
        guard let new = old.adding(amount), let newTotal = total.adding(amount) else { throw .overflow }
        balances[account.index] = new
        total = newTotal
        return AccountChange(account: account, oldBalance: old, newBalance: new, isClosed: false)
    }

    mutating func withdraw(_ amount: Money, from account: AccountID) throws(BankError) -> AccountChange {
        try checkAmount(amount)
        try checkOpen(account)
        let old = balances[account.index]
        guard old >= amount else { throw .insufficientFunds(account, balance: old, requested: amount) }
        let new = Money(minorUnits: old.minorUnits - amount.minorUnits)
        balances[account.index] = new
        total = Money(minorUnits: total.minorUnits - amount.minorUnits)
        return AccountChange(account: account, oldBalance: old, newBalance: new, isClosed: false)
    }

    /// Closes the account and pays out its balance.
    mutating func close(_ account: AccountID) throws(BankError) -> AccountChange {
        try checkOpen(account)
        let old = balances[account.index]
        balances[account.index] = .zero
        closed[account.index] = true
        total = Money(minorUnits: total.minorUnits - old.minorUnits)
        return AccountChange(account: account, oldBalance: old, newBalance: .zero, isClosed: true)
    }

    /// Moves `amount` between two accounts: both sides or neither. The total doesn't change.
    mutating func transfer(
        _ amount: Money, from source: AccountID, to destination: AccountID
    ) throws(BankError) -> (AccountChange, AccountChange) {
        guard source != destination else { throw .sameAccount(source) }
        try checkAmount(amount)
        try checkOpen(source)
        try checkOpen(destination)
        let sourceOld = balances[source.index]
        let destinationOld = balances[destination.index]
        guard sourceOld >= amount else { throw .insufficientFunds(source, balance: sourceOld, requested: amount) }
        // Can't happen while the total fits (both balances are part of it); checked all the same.
        guard let destinationNew = destinationOld.adding(amount) else { throw .overflow }
        let sourceNew = Money(minorUnits: sourceOld.minorUnits - amount.minorUnits)
        balances[source.index] = sourceNew
        balances[destination.index] = destinationNew
        return (
            AccountChange(account: source, oldBalance: sourceOld, newBalance: sourceNew, isClosed: false),
            AccountChange(account: destination, oldBalance: destinationOld, newBalance: destinationNew, isClosed: false)
        )
    }

    // MARK: - Announcements

    /// Records one commit's changes for announcement, in commit order; returns whether the caller
    /// must start an announcement round once it has released the ledger.
    mutating func announce(_ first: AccountChange, _ second: AccountChange?) -> Bool {
        unannounced.append(first)
        if let second { unannounced.append(second) }
        if changeLog.isWatched { changeLog.record(first, second) }
        changesRecorded += second == nil ? 1 : 2
        if isAnnouncing { return false }
        isAnnouncing = true
        return true
    }

    /// Moves the oldest changes waiting for announcement, at most `limit`, into `batch` (which
    /// must be empty); when none are waiting, the announcement round is over.
    mutating func takeUnannounced(into batch: inout [AccountChange], limit: Int) {
        if unannounced.count <= limit {
            swap(&batch, &unannounced)
        } else {
            batch.append(contentsOf: unannounced.prefix(limit))
            unannounced.removeFirst(limit)
        }
        if batch.isEmpty { isAnnouncing = false }
    }

    /// Adds an iterator of `Bank.changes` that takes every change from the next one on.
    mutating func addChangesIterator() -> Int {
        changeLog.addIterator(at: changesRecorded)
    }

    // MARK: - Checks

    private func checkAmount(_ amount: Money) throws(BankError) {
        guard amount > .zero else { throw .invalidAmount(amount) }
    }

    private func checkOpen(_ account: AccountID) throws(BankError) {
        guard !closed[account.index] else { throw .accountClosed(account) }
    }
}
