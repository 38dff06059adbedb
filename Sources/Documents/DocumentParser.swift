import Foundation

#if canImport(FoundationXML)
import FoundationXML
#endif

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

    private static func parseXML(_ data: Data, name: String) throws(DocumentError) -> (String?, Int) {
        let parser = XMLParser(data: data)
        let reader = XMLReader()
        parser.delegate = reader
        guard parser.parse(), reader.sawRootElement else {
            let reason = parser.parserError.map { "\($0.localizedDescription)" } ?? "not well-formed XML"
            throw .malformed(name, reason: "line \(parser.lineNumber): \(reason)")
        }
        // Some XMLParser implementations accept a document that simply stops; an element left open
        // means the file was cut short.
        if let unclosed = reader.openElements.last {
            throw .malformed(name, reason: "line \(parser.lineNumber): the document ends inside <\(unclosed)>")
        }
        return (reader.title, wordCount(reader.text))
    }

    /// Collects character data and the first `<title>` element's text.
    private final class XMLReader: NSObject, XMLParserDelegate {
        var text = ""
        var title: String?
        var sawRootElement = false
        var openElements: [String] = []
        private var titleDepth = 0
        private var titleText = ""

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
            qualifiedName: String?, attributes: [String: String] = [:]
        ) {
            sawRootElement = true
            openElements.append(elementName)
            if elementName == "title", title == nil { titleDepth += 1 }
            text += " "
        }

        func parser(
            _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?
        ) {
            _ = openElements.popLast()
            if elementName == "title", titleDepth > 0, title == nil {
                titleDepth -= 1
                if titleDepth == 0 {
                    title = titleText.trimmingCharacters(in: .whitespacesAndNewlines)
                }
            }
            text += " "
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            text += string
            if titleDepth > 0 { titleText += string }
        }

        func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
            let string = String(decoding: CDATABlock, as: UTF8.self)
            text += string
            if titleDepth > 0 { titleText += string }
        }
    }

    // MARK: - JSON

    private static func parseJSON(_ data: Data, name: String) throws(DocumentError) -> (String?, Int) {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw .malformed(name, reason: jsonReason(error, data: data))
        }
        let title = (object as? [String: Any])?["title"] as? String
        return (title, strings(in: object).reduce(0) { $0 + wordCount($1) })
    }

    private static func strings(in object: Any) -> [String] {
        switch object {
        case let string as String: [string]
        case let array as [Any]: array.flatMap(strings(in:))
        case let dictionary as [String: Any]: dictionary.values.flatMap(strings(in:))
        default: []
        }
    }

    private static func jsonReason(_ error: any Error, data: Data) -> String {
        let nsError = error as NSError
        if let index = nsError.userInfo["NSJSONSerializationErrorIndex"] as? Int, index <= data.count {
            let line = data.prefix(index).reduce(1) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
            return "line \(line): not valid JSON (\(nsError.localizedDescription))"
        }
        return "not valid JSON (\(nsError.localizedDescription))"
    }
}
