/// A failure the tool has already explained: its message goes to standard error, without usage
/// text, and the tool exits with 1.
public struct ToolFailure: Error, CustomStringConvertible {
    public let description: String

    public init(_ message: String) {
        description = message
    }
}
