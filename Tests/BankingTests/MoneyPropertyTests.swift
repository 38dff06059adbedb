import Banking
import ExclusionTestSupport
import Foundation
import PropertyBased
import Testing

/// `Money`'s text form, checked on generated amounts and on text fuzzed from the characters that
/// matter to the parser. A failure prints the seed to replay and the shrunk input.
@Suite("Money properties", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
struct MoneyPropertyTests {
    @Test func printingThenParsingGivesTheSameAmount() async {
        await propertyCheck(count: 2_000, input: Gen.int64()) { cents in
            let money = Money(minorUnits: cents)
            #expect(Money(money.description) == money, "\(money)")
        }
    }

    /// Short text over the parser's alphabet, digits most often, and a few characters it must refuse.
    static let fuzzedText = {
        let alphabet: [Character] = ["0", "1", "5", "9", "2", "7", "0", "3", ".", ".", "-", "+", " ", "e", ",", "٣"]
        return Gen.int(in: 0...(alphabet.count - 1)).map { alphabet[$0] }.array(of: 0...10).map { String($0) }
    }()

    /// Amounts of every length up to past the limit: sign, whole digits (leading zeros too), and
    /// up to three decimals (three is one too many).
    static let wellFormedText = zip(
        Gen.bool, Gen.int(in: 0...9).array(of: 1...20), Gen.int(in: 0...9).array(of: 0...3), Gen.bool
    ).map { negative, whole, fraction, hasPoint in
        let decimals = hasPoint && !fraction.isEmpty ? "." + fraction.map(String.init).joined() : ""
        return (negative ? "-" : "") + whole.map(String.init).joined() + decimals
    }

    @Test func parsingAcceptsExactlyTheGrammarWithinRange() async {
        await propertyCheck(count: 3_000, input: Self.fuzzedText) { text in
            #expect(Money(text)?.minorUnits == Self.referenceCents(text), "\(text.debugDescription)")
        }
        await propertyCheck(count: 3_000, input: Self.wellFormedText) { text in
            #expect(Money(text)?.minorUnits == Self.referenceCents(text), "\(text.debugDescription)")
        }
    }

    @Test func parsingThenPrintingNormalizes() async {
        await propertyCheck(count: 3_000, input: Self.wellFormedText) { text in
            guard let money = Money(text) else { return }  // out of range: covered above
            let description = money.description
            #expect(Money(description) == money)
            // Two decimals, no leading zeros, a sign only below zero.
            let unsigned = description.hasPrefix("-") ? description.dropFirst() : description[...]
            #expect(unsigned.split(separator: ".").last?.count == 2, "\(description)")
            #expect(!unsigned.hasPrefix("0") || unsigned.hasPrefix("0."), "\(description)")
            #expect(description.hasPrefix("-") == (money.minorUnits < 0), "\(description)")
        }
    }

    /// An independent reading of the grammar (`-? digit+ (. digit digit?)?`) in 128-bit arithmetic;
    /// nil where the text isn't an amount or the amount doesn't fit `Int64` cents.
    static func referenceCents(_ text: String) -> Int64? {
        var body = Substring(text)
        let negative = body.first == "-"
        if negative { body = body.dropFirst() }
        let parts = body.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let isASCIIDigits = { (part: Substring) in part.allSatisfy { ("0"..."9").contains($0) } }
        guard let whole = parts.first, !whole.isEmpty, isASCIIDigits(whole) else { return nil }
        var fraction = Substring("")
        if parts.count == 2 {
            fraction = parts[1]
            guard (1...2).contains(fraction.count), isASCIIDigits(fraction) else { return nil }
        }
        var cents: Int128 = 0
        for digit in whole + fraction.padding(toLength: 2, withPad: "0", startingAt: 0) {
            cents = cents * 10 + Int128(digit.wholeNumberValue!)
            if cents > Int128(Int64.max) + 1 { return nil }
        }
        let signed = negative ? -cents : cents
        return Int64(exactly: signed)
    }
}
