/// Names an account within its bank: account numbers count up from 1 in opening order.
public struct AccountID: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The account's number within its bank.
    public let number: Int

    init(number: Int) {
        self.number = number
    }

    /// Where the account's data sits in the ledger.
    var index: Int { number - 1 }

    public var description: String { "#\(number)" }

    public init(from decoder: any Decoder) throws {
        number = try decoder.singleValueContainer().decode(Int.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(number)
    }
}
