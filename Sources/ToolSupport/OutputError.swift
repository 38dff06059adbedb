#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Standard output could not be written: the disk is full, the pipe was closed, or the stream was.
public struct OutputError: Error, CustomStringConvertible {
    /// The `errno` of the failed write.
    public let code: Int32

    /// Whether the reader of a pipe went away (`EPIPE`): how `head` or a pager says "enough". Unix
    /// tools end quietly then, with a non-zero status and nothing on standard error.
    public var isClosedPipe: Bool { code == EPIPE }

    public var description: String {
        code == EBADF
            ? "cannot write the output: standard output is closed"
            : "cannot write the output: \(String(cString: strerror(code)))"
    }
}
