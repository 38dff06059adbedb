/// One account of a ``Bank``: a thin handle, its bank and its number.
///
/// An account keeps no state of its own. Every property and method goes through its bank's ledger,
/// so an account is as thread-safe as the bank, and a transfer never has to coordinate two
/// accounts' locks: there is one ledger, not one lock per account.
///
/// ```swift
/// let savings = try bank.openAccount(initialBalance: Money("100.00")!)
/// try savings.subtractMoney(Money("25.50")!)
/// print(savings.balance)   // "74.50"
/// ```
public final class Account: Sendable {
    /// The account's number within its bank.
    public let id: AccountID
    /// The bank that holds the account's money.
    let bank: Bank

    init(id: AccountID, bank: Bank) {
        self.id = id
        self.bank = bank
    }

    /// Whether the account is closed; a closed account accepts nothing and pays nothing.
    public var isClosed: Bool {
        let id = id  // captured alone, so reading doesn't retain the account
        return bank.store.read { $0.isClosed(id) }
    }

    /// The account's balance right now.
    public var balance: Money {
        let id = id  // captured alone, so reading doesn't retain the account
        return bank.store.read { $0.balance(of: id) }
    }

    /// Pays `amount` in.
    ///
    /// - Throws: ``BankError/invalidAmount(_:)`` unless `amount` is positive,
    ///   ``BankError/accountClosed(_:)``, or ``BankError/overflow``. Nothing changes when it throws.
    public func addMoney(_ amount: Money) throws(BankError) {
        try bank.commit { (ledger: inout Ledger) throws(BankError) in (try ledger.deposit(amount, into: id), nil) }
    }

    /// Takes `amount` out; the balance never goes below zero.
    ///
    /// - Throws: ``BankError/invalidAmount(_:)`` unless `amount` is positive,
    ///   ``BankError/accountClosed(_:)``, or ``BankError/insufficientFunds(_:balance:requested:)``.
    ///   Nothing changes when it throws.
    public func subtractMoney(_ amount: Money) throws(BankError) {
        try bank.commit { (ledger: inout Ledger) throws(BankError) in (try ledger.withdraw(amount, from: id), nil) }
    }

    /// Closes the account and pays out its balance.
    ///
    /// - Returns: The balance paid out.
    /// - Throws: ``BankError/accountClosed(_:)`` if the account is closed already.
    public func closeAccount() throws(BankError) -> Money {
        let change = try bank.commit { (ledger: inout Ledger) throws(BankError) in (try ledger.close(id), nil) }
        return change.oldBalance
    }
}

extension Account: Hashable {
    /// Two handles are equal when they name the same account of the same bank.
    public static func == (lhs: Account, rhs: Account) -> Bool {
        lhs.bank === rhs.bank && lhs.id == rhs.id
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(bank))
        hasher.combine(id)
    }
}

extension Account: CustomStringConvertible {
    public var description: String { "account \(id)" }
}
