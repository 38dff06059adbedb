import Dispatch
import Foundation

/// What a run of one of the package's executables printed, and how it ended.
public struct ToolRun: Sendable {
    /// The exit code.
    public let status: Int32
    /// Standard output.
    public let output: String
    /// Standard error.
    public let errors: String
}

/// Runs the executable `name` that SwiftPM built next to the test binary (a test target builds it
/// by depending on it), and waits for it to end.
///
/// Both pipes are drained at once, so a tool that writes a lot to one of them while the other is
/// still open can't fill a pipe and stall.
public func runTool(_ name: String, _ arguments: [String]) throws -> ToolRun {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent(name)
    process.arguments = arguments
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let errorsRead = DispatchGroup()
    let errorData = ReadData()
    DispatchQueue.global().async(group: errorsRead) {
        errorData.data = errors.fileHandleForReading.readDataToEndOfFile()
    }
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    errorsRead.wait()
    process.waitUntilExit()
    return ToolRun(
        status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
        errors: String(decoding: errorData.data, as: UTF8.self))
}

/// What one pipe gave.
private final class ReadData: @unchecked Sendable {
    // @unchecked: written once by the reading block, read only after the group it ran in is done.
    var data = Data()
}
