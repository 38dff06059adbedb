import Banking
import ExclusionTestSupport
import Foundation
import Testing

@Suite("Money", .patientTimeLimit(minutes: 10))
struct MoneyTests {
    @Test(
        arguments: [
            ("12.34", 1234), ("-0.50", -50), ("7", 700), ("0", 0), ("-0", 0), ("0.5", 50), ("00012.30", 1230),
            ("92233720368547758.07", Int64.max), ("-92233720368547758.08", Int64.min),
        ] as [(String, Int64)])
    func parsesValidText(text: String, minorUnits: Int64) {
        #expect(Money(text) == Money(minorUnits: minorUnits))
    }

    @Test(arguments: [
        "", "1e5", "12.345", "abc", " 1", "1 ", "+1", "1.", ".5", "-", "--1", "1.2.3", "1,00", "١٢",
        "92233720368547758.08", "-92233720368547758.09", "99999999999999999999",
    ])
    func rejectsMalformedText(text: String) {
        #expect(Money(text) == nil)
    }

    @Test(
        arguments: [
            (1234, "12.34"), (-50, "-0.50"), (700, "7.00"), (0, "0.00"), (5, "0.05"), (-5, "-0.05"),
            (Int64.max, "92233720368547758.07"), (Int64.min, "-92233720368547758.08"),
        ] as [(Int64, String)])
    func printsTwoDecimals(minorUnits: Int64, text: String) {
        #expect(Money(minorUnits: minorUnits).description == text)
    }

    @Test func printingAndParsingRoundTrip() {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<10_000 {
            let money = Money(minorUnits: Int64.random(in: .min ... .max, using: &random))
            #expect(Money(money.description) == money)
        }
    }

    @Test func codableAsText() throws {
        let data = try JSONEncoder().encode([Money(minorUnits: 1234)])
        #expect(String(decoding: data, as: UTF8.self) == #"["12.34"]"#)
        #expect(try JSONDecoder().decode([Money].self, from: data) == [Money(minorUnits: 1234)])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([Money].self, from: Data(#"["1e5"]"#.utf8)) }
    }

    @Test func comparesByAmount() {
        #expect(Money("-1")! < .zero)
        #expect(Money("0.01")! > .zero)
        #expect([Money("3")!, Money("1")!, Money("2")!].sorted() == [Money("1")!, Money("2")!, Money("3")!])
    }
}
