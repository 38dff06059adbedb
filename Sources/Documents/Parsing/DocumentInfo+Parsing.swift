import Foundation

extension DocumentInfo {
    /// Parses `data` as the document `name` (its extension picks the format), without storing it.
    ///
    /// - Throws: ``DocumentError/unsupportedFormat(_:)`` or ``DocumentError/malformed(_:reason:)``.
    public init(parsing data: Data, name: String) throws(DocumentError) {
        self = try DocumentParser.parse(data, name: name)
    }
}
