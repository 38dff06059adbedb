/// An amount of money, exact to the cent.
///
/// Money is counted in *minor units* (cents) as a 64-bit integer, never as a floating-point
/// number, so sums are exact and overflow is detected instead of rounded away.
///
/// ```swift
/// let price = Money("12.34")!          // 1234 minor units
/// print(price)                         // "12.34"
/// Money(minorUnits: -50).description   // "-0.50"
/// ```
public struct Money: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// No money at all.
    public static let zero = Money(minorUnits: 0)

    /// The amount in minor units (cents).
    public let minorUnits: Int64

    /// Creates an amount of `minorUnits` cents.
    public init(minorUnits: Int64) {
        self.minorUnits = minorUnits
    }

    /// Parses text such as `"12.34"`, `"-0.50"` or `"7"` (whole units).
    ///
    /// The text is an optional `-`, one or more digits, and optionally a `.` followed by one or
    /// two digits. Anything else gives nil: empty text, spaces, a `+`, exponents (`"1e5"`), more
    /// than two decimals (`"12.345"`), or an amount outside what `Int64` cents can hold.
    public init?(_ text: String) {
        var rest = text.utf8[...]
        let isNegative = rest.first == UInt8(ascii: "-")
        if isNegative { rest.removeFirst() }
        let whole = rest.prefix(while: Self.isDigit)
        rest.removeFirst(whole.count)
        var fraction = rest.prefix(0)
        if rest.first == UInt8(ascii: ".") {
            rest.removeFirst()
            fraction = rest.prefix(while: Self.isDigit)
            rest.removeFirst(fraction.count)
            guard (1...2).contains(fraction.count) else { return nil }
        }
        guard !whole.isEmpty, rest.isEmpty else { return nil }

        // Counted below zero: Int64 reaches one further below zero than above, so Int64.min parses.
        var negativeCents: Int64 = 0
        let padding = Array(repeating: UInt8(ascii: "0"), count: 2 - fraction.count)
        for digit in [whole, fraction].joined() + padding {
            let (shifted, overflowed) = negativeCents.multipliedReportingOverflow(by: 10)
            let (next, overflowedAgain) = shifted.subtractingReportingOverflow(Int64(digit &- UInt8(ascii: "0")))
            guard !overflowed, !overflowedAgain else { return nil }
            negativeCents = next
        }
        if isNegative {
            self.init(minorUnits: negativeCents)
        } else {
            guard negativeCents != .min else { return nil }
            self.init(minorUnits: -negativeCents)
        }
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    /// The amount with two decimals: `"12.34"`, `"-0.50"`, `"7.00"`.
    public var description: String {
        let magnitude = minorUnits.magnitude
        let cents = magnitude % 100
        return "\(minorUnits < 0 ? "-" : "")\(magnitude / 100).\(cents < 10 ? "0" : "")\(cents)"
    }

    public static func < (lhs: Money, rhs: Money) -> Bool {
        lhs.minorUnits < rhs.minorUnits
    }

    // MARK: - Codable, as text

    /// Decodes the text form, `"12.34"`: exact, and readable in JSON.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let money = Money(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an amount of money: \(text)")
        }
        self = money
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

// MARK: - Arithmetic that reports overflow

extension Money {
    /// The sum, or nil if it would leave the range of `Int64` cents.
    func adding(_ other: Money) -> Money? {
        let (sum, overflow) = minorUnits.addingReportingOverflow(other.minorUnits)
        return overflow ? nil : Money(minorUnits: sum)
    }

    /// The difference, or nil if it would leave the range of `Int64` cents.
    func subtracting(_ other: Money) -> Money? {
        let (difference, overflow) = minorUnits.subtractingReportingOverflow(other.minorUnits)
        return overflow ? nil : Money(minorUnits: difference)
    }
}
