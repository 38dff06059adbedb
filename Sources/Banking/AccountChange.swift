/// What one committed change did to one account; carried by
/// ``Bank/accountDidChangeNotification`` under ``Bank/changeKey``.
public struct AccountChange: Sendable, Equatable {
    /// The account that changed.
    public let account: AccountID
    /// Its balance before the change.
    public let oldBalance: Money
    /// Its balance after the change.
    public let newBalance: Money
    /// Whether the account is closed after the change.
    public let isClosed: Bool

    public init(account: AccountID, oldBalance: Money, newBalance: Money, isClosed: Bool) {
        self.account = account
        self.oldBalance = oldBalance
        self.newBalance = newBalance
        self.isClosed = isClosed
    }
}
