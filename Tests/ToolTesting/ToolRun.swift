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
    process.executableURL = toolURL(name)
    process.arguments = arguments
    return try run(process)
}

/// Runs `script` in bash with `$TOOL` set to the executable `name`, for what needs a shell:
/// `"$TOOL" list > /dev/full`, a closed stream (`>&-`), a pipe into `head`.
public func runToolInShell(_ name: String, _ script: String) throws -> ToolRun {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/bash")
    process.arguments = ["-c", script]
    var environment = ProcessInfo.processInfo.environment
    environment["TOOL"] = toolURL(name).path
    process.environment = environment
    return try run(process)
}

private func toolURL(_ name: String) -> URL {
    URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name)
}

private func run(_ process: Process) throws -> ToolRun {
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
