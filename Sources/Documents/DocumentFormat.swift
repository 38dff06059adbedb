import Foundation

/// The formats the document manager reads, chosen by a name's extension.
public enum DocumentFormat: String, Sendable, Codable {
    case xml, json, text

    /// The format for `name`'s extension: `.xml`, `.json`, or `.txt`, `.md`, `.text`.
    init(forName name: String) throws(DocumentError) {
        let dot = name.utf8.lastIndex(of: UInt8(ascii: "."))
        switch dot.map({ name[name.index(after: $0)...].lowercased() }) {
        case "xml": self = .xml
        case "json": self = .json
        case "txt", "md", "text": self = .text
        default: throw .unsupportedFormat(name)
        }
    }
}
