import Foundation

/// A strict reader of JSON text (RFC 8259) that keeps what ``DocumentInfo`` needs: every string
/// value, and the top-level object's `"title"` if it is a string.
///
/// Written by hand because, on Linux, Foundation's `JSONSerialization` and `JSONDecoder` both
/// accept trailing commas (`[1,]`, `{"a":1,}`), and no strict JSON parser is among the packages
/// this project can use. The grammar is small enough to follow to the letter. Nesting lives on a
/// stack on the heap, so no depth of `[[[[…` can overflow a thread's stack.
struct JSONReader {
    struct Failure: Error, Equatable {
        let line: Int
        let reason: String
    }

    private(set) var title: String?
    private(set) var strings: [String] = []

    private var bytes: [UInt8] = []
    private var position = 0

    private enum Container {
        case array, object

        var closing: UInt8 { self == .array ? UInt8(ascii: "]") : UInt8(ascii: "}") }
    }

    /// Reads `data` as one JSON text; throws where it breaks the grammar.
    mutating func read(_ data: Data) throws(Failure) {
        bytes = [UInt8](data)
        position = 0
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw Failure(line: 1, reason: "not valid UTF-8")
        }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }  // RFC 8259 §8.1: a reader may ignore a BOM
        var open: [Container] = []
        var valueIsTitle = false
        reading: while true {
            // A value is expected here.
            skipWhitespace()
            guard let byte = peek() else {
                throw failure(open.isEmpty ? "no value" : "the text ends inside a value")
            }
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let container: Container = byte == UInt8(ascii: "{") ? .object : .array
                position += 1
                skipWhitespace()
                if peek() == container.closing {
                    position += 1
                } else {
                    open.append(container)
                    // Every member's name is read; only the top-level object's "title" is the title.
                    valueIsTitle = container == .object ? try readKey() == "title" && open.count == 1 : false
                    continue reading
                }
            case UInt8(ascii: "\""):
                let string = try readString()
                strings.append(string)
                if valueIsTitle, title == nil { title = string }
            case UInt8(ascii: "t"): try expectLiteral("true")
            case UInt8(ascii: "f"): try expectLiteral("false")
            case UInt8(ascii: "n"): try expectLiteral("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try readNumber()
            default: throw failure("expected a value")
            }
            valueIsTitle = false
            // After a value: a comma and the next one, or the end of containers.
            while let container = open.last {
                skipWhitespace()
                let byte = peek()
                if byte == UInt8(ascii: ",") {
                    position += 1
                    if container == .object { valueIsTitle = try readKey() == "title" && open.count == 1 }
                    continue reading
                }
                if byte == container.closing {
                    position += 1
                    open.removeLast()
                    continue
                }
                if byte == nil { throw failure("the text ends inside an \(container)") }
                throw failure(container == .array ? "expected , or ] in an array" : "expected , or } in an object")
            }
            break reading
        }
        skipWhitespace()
        guard position == bytes.count else { throw failure("content after the JSON value") }
    }

    // MARK: - Pieces of the grammar

    private func peek() -> UInt8? { position < bytes.count ? bytes[position] : nil }

    private mutating func skipWhitespace() {
        while let byte = peek(),
            byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
        {
            position += 1
        }
    }

    /// A member's name and the colon after it.
    private mutating func readKey() throws(Failure) -> String {
        skipWhitespace()
        guard peek() == UInt8(ascii: "\"") else {
            throw failure(peek() == UInt8(ascii: "}") ? "a trailing comma in an object" : "expected a member name")
        }
        let key = try readString()
        skipWhitespace()
        guard peek() == UInt8(ascii: ":") else { throw failure("expected : after a member name") }
        position += 1
        return key
    }

    private mutating func expectLiteral(_ literal: String) throws(Failure) {
        let expected = literal.utf8
        guard bytes.count - position >= expected.count,
            bytes[position..<position + expected.count].elementsEqual(expected)
        else { throw failure("expected a value") }
        position += expected.count
    }

    private mutating func readNumber() throws(Failure) {
        if peek() == UInt8(ascii: "-") { position += 1 }
        guard let first = peek(), isDigit(first) else { throw failure("a number needs a digit") }
        position += 1
        if first == UInt8(ascii: "0"), let next = peek(), isDigit(next) {
            throw failure("a number can't start with 0")
        }
        skipDigits()
        if peek() == UInt8(ascii: ".") {
            position += 1
            guard let digit = peek(), isDigit(digit) else { throw failure("a digit must follow the decimal point") }
            skipDigits()
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            position += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { position += 1 }
            guard let digit = peek(), isDigit(digit) else { throw failure("an exponent needs a digit") }
            skipDigits()
        }
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func skipDigits() {
        while let byte = peek(), isDigit(byte) { position += 1 }
    }

    /// A string, from its opening quote; escapes decoded.
    private mutating func readString() throws(Failure) -> String {
        position += 1
        let start = position
        var decoded: [UInt8]?  // only once an escape is seen
        while true {
            let plain = plainEnd(from: position)
            decoded?.append(contentsOf: bytes[position..<plain])
            position = plain
            guard let byte = peek() else { throw failure("the text ends inside a string") }
            switch byte {
            case UInt8(ascii: "\""):
                defer { position += 1 }
                if let decoded { return String(decoding: decoded, as: UTF8.self) }
                return String(decoding: bytes[start..<position], as: UTF8.self)
            case UInt8(ascii: "\\"):
                if decoded == nil { decoded = Array(bytes[start..<position]) }
                position += 1
                try readEscape(into: &decoded!)
            default:
                throw failure("a control character in a string must be escaped")
            }
        }
    }

    /// Where the bytes of a string that stand for themselves end, from `index` on: at the next
    /// quote, backslash or control character, or the end of the text. Eight bytes at a time, since
    /// most of a JSON document is the inside of its strings.
    private func plainEnd(from index: Int) -> Int {
        bytes.withUnsafeBufferPointer { buffer in
            var index = index
            while buffer.count - index >= 8 {
                let chunk = ByteChunk(at: buffer.baseAddress! + index)
                let special =
                    chunk.equal(to: UInt8(ascii: "\"")) | chunk.equal(to: UInt8(ascii: "\\")) | chunk.below(0x20)
                if special != 0 { return index + special.trailingZeroBitCount / 8 }
                index += 8
            }
            while index < buffer.count, buffer[index] >= 0x20, buffer[index] != UInt8(ascii: "\""),
                buffer[index] != UInt8(ascii: "\\")
            {
                index += 1
            }
            return index
        }
    }

    private mutating func readEscape(into decoded: inout [UInt8]) throws(Failure) {
        guard let escape = peek() else { throw failure("the text ends inside a string") }
        position += 1
        let simple: UInt8? =
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): escape
            case UInt8(ascii: "b"): 0x08
            case UInt8(ascii: "f"): 0x0C
            case UInt8(ascii: "n"): 0x0A
            case UInt8(ascii: "r"): 0x0D
            case UInt8(ascii: "t"): 0x09
            default: nil
            }
        if let simple {
            decoded.append(simple)
            return
        }
        guard escape == UInt8(ascii: "u") else { throw failure("an unknown escape in a string") }
        var value = try readHex4()
        if (0xD800...0xDBFF).contains(value) {
            guard peek() == UInt8(ascii: "\\"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "u")
            else { throw failure("an unpaired surrogate in a string") }
            position += 2
            let low = try readHex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw failure("an unpaired surrogate in a string") }
            value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(value) {
            throw failure("an unpaired surrogate in a string")
        }
        // Every value left is a Unicode scalar: surrogates were paired or refused above.
        decoded.append(contentsOf: String(Character(Unicode.Scalar(value)!)).utf8)
    }

    private mutating func readHex4() throws(Failure) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = peek(), let digit = hexValue(byte) else {
                throw failure("\\u needs four hexadecimal digits")
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    private func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    private func failure(_ reason: String) -> Failure {
        let line = bytes[..<min(position, bytes.count)].reduce(1) { $0 + ($1 == 0x0A ? 1 : 0) }
        return Failure(line: line, reason: reason)
    }
}
