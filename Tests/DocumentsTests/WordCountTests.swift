import ExclusionTestSupport
import Foundation
import PropertyBased
import Testing

@testable import Documents

/// The word count's fast paths (eight bytes at a time, a byte walk instead of Unicode scalars)
/// against a plain reading of the definition: runs of scalars that aren't Unicode White_Space.
@Suite("Word count", .patientTimeLimit(minutes: 10))
struct WordCountTests {
    /// The definition, a scalar at a time.
    static func referenceCount(_ text: String) -> Int {
        text.unicodeScalars.split { $0.properties.isWhitespace }.count
    }

    /// Text made of pieces that matter: ASCII words and every ASCII space, whitespace above ASCII
    /// (U+0085, U+00A0, U+1680, U+2000, U+2028, U+3000), and scalars of two, three and four bytes
    /// that aren't whitespace (U+180E was whitespace once; U+200B never was). Long enough to
    /// straddle several eight-byte chunks at every offset.
    static let texts = {
        let pieces = [
            "a", "word", "x", " ", " ", "\t", "\n", "\u{0B}", "\u{0C}", "\r", "\u{1F}", "\u{7F}", "é", "中", "😀",
            "\u{85}", "\u{A0}", "\u{1680}", "\u{2000}", "\u{2028}", "\u{3000}", "\u{180E}", "\u{200B}", "\u{FEFF}",
        ]
        return Gen.int(in: 0...(pieces.count - 1)).map { pieces[$0] }.array(of: 0...40).map { $0.joined() }
    }()

    @Test func theCountAgreesWithUnicodeOnMixedText() async {
        await propertyCheck(count: 5_000, input: Self.texts) { text in
            #expect(DocumentParser.wordCount(text) == Self.referenceCount(text), "\(text.debugDescription)")
        }
    }

    @Test func theCheckCatchesACountThatKnowsOnlyASCIISpaces() async {
        // The same property against a count that treats every scalar above ASCII as part of a word.
        await withKnownIssue("only ASCII spaces") {
            await propertyCheck(count: 5_000, input: Self.texts) { text in
                let asciiOnly = text.unicodeScalars.split { $0.isASCII && $0.properties.isWhitespace }.count
                #expect(asciiOnly == Self.referenceCount(text), "\(text.debugDescription)")
            }
        }
    }

    @Test func longASCIITextIsCountedAtEveryOffset() {
        // Words of every length from 1 to 19 and runs of 1 to 3 spaces: word starts fall on every
        // byte of a chunk, and on chunk edges.
        var text = ""
        for length in 1...19 {
            text += String(repeating: "w", count: length) + String(repeating: " ", count: length % 3 + 1)
        }
        for start in 0..<16 {
            let slice = String(text.dropFirst(start))
            #expect(DocumentParser.wordCount(slice) == Self.referenceCount(slice), "from \(start)")
        }
    }

    @Test func everyScalarAboveASCIIIsWhitespaceExactlyWhenUnicodeSaysSo() {
        var disagreeing: [UInt32] = []
        for value in UInt32(0x80)...0x10_FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }  // surrogates
            if DocumentParser.isNonASCIIWhitespace(value) != scalar.properties.isWhitespace {
                disagreeing.append(value)
            }
        }
        #expect(disagreeing.isEmpty, "\(disagreeing.map { String($0, radix: 16) })")
    }

    @Test func eachByteTestAgreesWithLookingAtOneByteAtATime() {
        // Every byte value at every place in a chunk, among neighbours of every kind: a carry from
        // one byte into the next would show as a wrong answer for the neighbour.
        var random = SystemRandomNumberGenerator()
        var wrong: [String] = []
        for _ in 0..<4 {
            for value in UInt8.min...UInt8.max {
                for place in 0..<8 {
                    var bytes = (0..<8).map { _ in UInt8.random(in: .min ... .max, using: &random) }
                    bytes[place] = value
                    let chunk = ByteChunk(
                        bits: bytes.enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * $1.offset) })
                    let tests: [(String, UInt64, (UInt8) -> Bool)] = [
                        ("equal to quote", chunk.equal(to: 0x22), { $0 == 0x22 }),
                        ("equal to 0", chunk.equal(to: 0), { $0 == 0 }),
                        ("equal to 0xFF", chunk.equal(to: 0xFF), { $0 == 0xFF }),
                        ("below 0x20", chunk.below(0x20), { $0 < 0x20 }),
                        ("below 0x80", chunk.below(0x80), { $0 < 0x80 }),
                        ("below 1", chunk.below(1), { $0 < 1 }),
                        ("whitespace", chunk.whitespace, { $0 == 0x20 || (0x09...0x0D).contains($0) }),
                    ]
                    for (name, mask, expected) in tests {
                        for (offset, byte) in bytes.enumerated()
                        where ((mask >> (8 * offset + 7)) & 1 == 1) != expected(byte) {
                            wrong.append("\(name): \(bytes) at \(offset)")
                        }
                    }
                    if chunk.isASCII != bytes.allSatisfy({ $0 < 0x80 }) { wrong.append("isASCII: \(bytes)") }
                }
            }
        }
        #expect(wrong.isEmpty, "\(wrong.prefix(5))")
    }
}
