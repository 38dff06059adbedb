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
        case .xml: (title, words) = try parseXML(data, name: name)
        case .json: (title, words) = try parseJSON(data, name: name)
        case .text:
            guard let text = String(data: data, encoding: .utf8) else {
                throw .malformed(name, reason: "not valid UTF-8 text")
            }
            (title, words) = (nil, wordCount(text))
        }
        return DocumentInfo(name: name, format: format, byteCount: data.count, title: title, wordCount: words)
    }

    /// Counts runs of non-whitespace. ASCII is decided by a byte test; other scalars ask Unicode.
    static func wordCount(_ text: String) -> Int {
        var count = 0
        var inWord = false
        for scalar in text.unicodeScalars {
            let isSpace: Bool
            switch scalar.value {
            case 0x09...0x0D, 0x20: isSpace = true
            case 0..<0x80: isSpace = false
            default: isSpace = scalar.properties.isWhitespace
            }
            if isSpace {
                inWord = false
            } else if !inWord {
                inWord = true
                count += 1
            }
        }
        return count
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
