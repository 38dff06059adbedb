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

/// What the manager knows about a stored document.
public struct DocumentInfo: Sendable, Equatable, Codable {
    public let name: String
    public let format: DocumentFormat
    public let byteCount: Int
    /// XML: the text of the first `<title>` element; JSON: a top-level `"title"` string.
    public let title: String?
    /// Words of text content: XML character data, JSON strings, or the whole text.
    public let wordCount: Int

    public init(name: String, format: DocumentFormat, byteCount: Int, title: String?, wordCount: Int) {
        self.name = name
        self.format = format
        self.byteCount = byteCount
        self.title = title
        self.wordCount = wordCount
    }

    /// Parses `data` as the document `name` (its extension picks the format), without storing it.
    ///
    /// - Throws: ``DocumentError/unsupportedFormat(_:)`` or ``DocumentError/malformed(_:reason:)``.
    public init(parsing data: Data, name: String) throws(DocumentError) {
        self = try DocumentParser.parse(data, name: name)
    }
}

/// Why the document manager refused or failed. Nothing already stored is lost when it throws.
public enum DocumentError: Error, Equatable, Sendable {
    /// Not a plain file name: empty, `/`, a control character, `.`, `..`, a leading `.`, or over 255
    /// UTF-8 bytes.
    case invalidName(String)
    case notFound(String)
    /// The file name and what is wrong, with the line where known.
    case malformed(String, reason: String)
    /// The extension isn't `.xml`, `.json`, `.txt`, `.md` or `.text`.
    case unsupportedFormat(String)
    /// A file of an import whose name is that of an earlier file of the same import (or
    /// canonically equivalent to it): its path, and the earlier file's.
    case duplicateName(String, firstPath: String)
    /// The store can't be opened, read or written; the message says which and why.
    case io(String)
}

extension DocumentError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .invalidName(let name): "invalid document name \(name.debugDescription)"
        case .notFound(let name): "no document named \(name.debugDescription)"
        case .malformed(let name, let reason): "\(name) is malformed: \(reason)"
        case .unsupportedFormat(let name): "\(name): unsupported format (use .xml, .json, .txt, .md or .text)"
        case .duplicateName(let path, let firstPath):
            "\(path): an earlier file of this import, \(firstPath), has the same name"
        case .io(let message): message
        }
    }
}

/// How an import went: each file counted once.
public struct ImportSummary: Sendable, Equatable {
    public let imported: Int
    public let failed: Int
    public let cancelled: Int

    public init(imported: Int, failed: Int, cancelled: Int) {
        self.imported = imported
        self.failed = failed
        self.cancelled = cancelled
    }
}

/// Hears how an import goes, on the delivery queue given to
/// ``DocumentManager/importDocuments(at:deliverOn:delegate:)``.
public protocol DocumentImportDelegate: AnyObject, Sendable {
    func documentManager(_ manager: DocumentManager, didImport info: DocumentInfo)
    func documentManager(_ manager: DocumentManager, didFailToImport url: URL, error: DocumentError)
    /// Called exactly once, after every file was imported, failed or was cancelled.
    func documentManager(_ manager: DocumentManager, didFinishImport summary: ImportSummary)
}
