import DocumentsXML
import Foundation

/// Reads a document's bytes into a ``DocumentInfo``, or says precisely what is wrong with them.
///
/// Parsing is the expensive, self-contained work that main-thread gravity sends to the background:
/// it touches no shared state, so it needs no lock.
enum DocumentParser {
    static func parse(_ data: Data, name: String) throws(DocumentError) -> DocumentInfo {
        let format = try DocumentFormat(forName: name)
        guard !data.isEmpty else { throw .malformed(name, reason: "the file is empty") }
        let (title, words): (String?, Int)
        switch format {
        case .xml:
            // A binary property list is kept under the same `.plist` name as an XML one.
            guard !data.starts(with: "bplist".utf8) else {
                throw .malformed(
                    name, reason: "a binary property list, not XML (`plutil -convert xml1` makes an XML one)")
            }
            (title, words) = try parseXML(data, name: name)
        case .json: (title, words) = try parseJSON(data, name: name)
        case .text:
            guard let text = String(data: data, encoding: .utf8) else {
                throw .malformed(name, reason: "not valid UTF-8 text")
            }
            (title, words) = (nil, wordCount(text))
        }
        return DocumentInfo(name: name, format: format, byteCount: data.count, title: title, wordCount: words)
    }

    /// Counts runs of non-whitespace: ASCII is decided by a byte test, other scalars by Unicode's
    /// White_Space property.
    static func wordCount(_ text: String) -> Int {
        var text = text
        return text.withUTF8 { wordCount(validUTF8: $0) }
    }

    /// `wordCount` over a string's own bytes, which are valid UTF-8, so a lead byte says how long its
    /// scalar is. Counting reads every byte of every document an import parses, so ASCII goes eight
    /// bytes at a time (`ByteChunk`), and no branch depends on where words start: such a branch
    /// is mispredicted at about every word.
    private static func wordCount(validUTF8 bytes: UnsafeBufferPointer<UInt8>) -> Int {
        guard let base = bytes.baseAddress else { return 0 }
        var count = 0
        // 1 if the byte before `index` is a space, or there is none; else 0.
        var afterSpace: UInt64 = 1
        var index = 0
        while index < bytes.count {
            if bytes.count - index >= 8 {
                let chunk = ByteChunk(at: base + index)
                if chunk.isASCII {
                    // A word starts at a byte that isn't a space after one that is.
                    let spaces = chunk.whitespace
                    let starts = ~spaces & (spaces << 8 | afterSpace << 7) & ByteChunk.highBits
                    count += starts.nonzeroBitCount
                    afterSpace = spaces >> 63
                    index += 8
                    continue
                }
            }
            let lead = bytes[index]
            let isSpace: Bool
            if lead < 0x80 {
                isSpace = lead == 0x20 || lead &- 0x09 < 5
                index += 1
            } else {
                let length = lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4
                var value = UInt32(lead & (0x7F >> length))
                for offset in 1..<length { value = value << 6 | UInt32(bytes[index + offset] & 0x3F) }
                isSpace = isNonASCIIWhitespace(value)
                index += length
            }
            let space: UInt64 = isSpace ? 1 : 0
            count += Int(afterSpace & (space ^ 1))
            afterSpace = space
        }
        return count
    }

    /// Whether the scalar `value` (not ASCII) is whitespace. Unicode's White_Space scalars above
    /// ASCII are U+0085, U+00A0 and a few between U+1680 and U+3000 (a test checks every scalar),
    /// so the property is only looked up in that range.
    static func isNonASCIIWhitespace(_ value: UInt32) -> Bool {
        switch value {
        case 0x85, 0xA0: true
        case 0x1680...0x3000: Unicode.Scalar(value)?.properties.isWhitespace ?? false
        default: false
        }
    }

    // MARK: - XML

    /// XML through libxml2 (see DocumentsXML): well-formedness per XML 1.0, internal DTD subsets and
    /// their entities, and no external entity, DTD or network ever loaded.
    private static func parseXML(_ data: Data, name: String) throws(DocumentError) -> (String?, Int) {
        var result = documents_xml_result()
        data.withUnsafeBytes { bytes in
            // Data is never empty here, so baseAddress is not nil.
            documents_xml_parse(bytes.baseAddress!, bytes.count, &result)
        }
        defer { documents_xml_result_free(&result) }
        guard result.well_formed != 0 else {
            let reason = result.error_message.map { String(cString: $0) } ?? "not well-formed XML"
            throw .malformed(name, reason: result.error_line > 0 ? "line \(result.error_line): \(reason)" : reason)
        }
        let text = utf8String(result.text, count: result.text_length)
        let title = result.title.map {
            utf8String($0, count: result.title_length).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return (title, wordCount(text))
    }

    private static func utf8String(_ bytes: UnsafeMutablePointer<CChar>?, count: Int) -> String {
        guard let bytes, count > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    // MARK: - JSON

    private static func parseJSON(_ data: Data, name: String) throws(DocumentError) -> (String?, Int) {
        var reader = JSONReader()
        do {
            try reader.read(data)
        } catch {
            throw .malformed(name, reason: "line \(error.line): not valid JSON: \(error.reason)")
        }
        return (reader.title, reader.strings.reduce(0) { $0 + wordCount($1) })
    }
}
