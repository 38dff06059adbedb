/// Why the document manager refused or failed. Nothing already stored is lost when it throws.
public enum DocumentError: Error, Equatable, Sendable {
    /// Not a plain file name: empty, `/`, a control character, `.`, `..`, a leading `.`, or over 255
    /// UTF-8 bytes.
    case invalidName(String)
    case notFound(String)
    /// The file name and what is wrong, with the line where known.
    case malformed(String, reason: String)
    /// The extension is none of ``DocumentFormat/extensions`` of any format.
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
        case .unsupportedFormat(let name): "\(name): unsupported format (use \(DocumentFormat.accepted))"
        case .duplicateName(let path, let firstPath):
            "\(path): an earlier file of this import, \(firstPath), has the same name"
        case .io(let message): message
        }
    }
}
