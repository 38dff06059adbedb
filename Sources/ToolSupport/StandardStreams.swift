import CToolSupport

#if canImport(Glibc)
import Glibc
private let systemWrite = Glibc.write
#elseif canImport(Darwin)
import Darwin
private let systemWrite = Darwin.write
#endif

/// Standard output and standard error for a command-line tool, written with `write(2)`, so that a
/// full disk, a closed pipe or a closed stream is an error the tool can report, never a crash.
///
/// Foundation's `FileHandle.write` traps when it can't write, and `print` ignores the failure; a
/// tool that is part of a pipeline must do neither.
public enum StandardStreams {
    /// Readies the streams; call it before anything else.
    ///
    /// A closed pipe becomes an `EPIPE` error instead of a `SIGPIPE` that kills the process. A
    /// standard stream that was closed is held open on `/dev/null` so that no file opened later
    /// (a document, the database) can take its number and receive the tool's output: closed
    /// standard output can't be written (so it is reported), closed standard error swallows.
    ///
    /// The streams themselves are held by CToolSupport before any Swift code runs.
    public static func prepare() {
        signal(SIGPIPE, SIG_IGN)
    }

    private static var outputWasClosed: Bool { c_tool_support_output_was_closed() != 0 }

    /// Writes `text` to standard output.
    ///
    /// - Throws: ``OutputError`` if it can't all be written.
    public static func output(_ text: String) throws(OutputError) {
        try write(text, to: STDOUT_FILENO)
    }

    /// Writes `text` to standard error, if it can: a tool goes on when nobody listens.
    ///
    /// - Returns: Whether it was all written.
    @discardableResult
    public static func error(_ text: String) -> Bool {
        do {
            try write(text, to: STDERR_FILENO)
            return true
        } catch {
            return false
        }
    }

    /// Writes `bytes` to standard output, as they are.
    ///
    /// - Throws: ``OutputError`` if they can't all be written.
    public static func output(bytes: some Sequence<UInt8>) throws(OutputError) {
        let bytes = Array(bytes)
        try check(bytes.withUnsafeBufferPointer { write($0, to: STDOUT_FILENO) }, on: STDOUT_FILENO)
    }

    private static func write(_ text: String, to descriptor: Int32) throws(OutputError) {
        var text = text
        try check(text.withUTF8 { write($0, to: descriptor) }, on: descriptor)
    }

    /// Throws for a failed write; a write to a standard output that was closed says so.
    private static func check(_ failure: Int32?, on descriptor: Int32) throws(OutputError) {
        guard let failure else { return }
        throw OutputError(code: descriptor == STDOUT_FILENO && outputWasClosed ? EBADF : failure)
    }

    /// Writes all of `bytes`; returns `errno` if it can't.
    private static func write(_ bytes: UnsafeBufferPointer<UInt8>, to descriptor: Int32) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let written = systemWrite(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += written
        }
        return nil
    }
}
