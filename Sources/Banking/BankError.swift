/// Why the bank refused an operation. A refused operation changes nothing.
public enum BankError: Error, Equatable, Sendable {
    /// The amount is zero or negative (an opening balance may be zero, never negative).
    case invalidAmount(Money)
    /// The account is closed: it accepts nothing and pays nothing.
    case accountClosed(AccountID)
    /// The account holds less than was asked for.
    case insufficientFunds(AccountID, balance: Money, requested: Money)
    /// The account belongs to another bank.
    case unknownAccount(AccountID)
    /// A transfer from an account to itself.
    case sameAccount(AccountID)
    /// A balance, or the bank's total, would leave the range of `Int64` cents.
    case overflow
}

extension BankError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .invalidAmount(let amount): "invalid amount \(amount): amounts must be positive"
        case .accountClosed(let account): "account \(account) is closed"
        case .insufficientFunds(let account, let balance, let requested):
            "account \(account) holds \(balance), less than the \(requested) requested"
        case .unknownAccount(let account): "account \(account) belongs to another bank"
        case .sameAccount(let account): "account \(account) can't transfer to itself"
        case .overflow: "the amount is too large for the balance or the bank's total"
        }
    }

    /// A short name for the kind of error, for counting rejections by reason.
    public var reason: String {
        switch self {
        case .invalidAmount: "invalidAmount"
        case .accountClosed: "accountClosed"
        case .insufficientFunds: "insufficientFunds"
        case .unknownAccount: "unknownAccount"
        case .sameAccount: "sameAccount"
        case .overflow: "overflow"
        }
    }
}
