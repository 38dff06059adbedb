import Foundation

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
}
