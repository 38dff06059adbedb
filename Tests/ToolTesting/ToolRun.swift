// Foundation's `Process` exists on macOS and Linux only: Package.swift's `childProcessPlatforms`.
#if os(macOS) || os(Linux)
import Dispatch
import ExclusionTestSupport
import Foundation
import Testing

#if canImport(Darwin)
import Darwin
#endif

/// What a run of one of the package's executables printed, and how it ended.
public struct ToolRun: Sendable {
    /// The exit code.
    public let status: Int32
    /// Standard output.
    public let output: String
    /// Standard error.
    public let errors: String
}

/// An executable of the package that isn't where the tests looked for it.
public struct ToolNotFound: Error, CustomStringConvertible {
    public let description: String
}

/// Runs the executable `name` that SwiftPM built with the tests (a test target builds it by
/// depending on it), and waits for it to end, on a thread of its own: a tool runs for seconds, and
/// the tasks of every other test share the cooperative pool.
///
/// Both pipes are drained at once, so a tool that writes a lot to one of them while the other is
/// still open can't fill a pipe and stall.
///
/// - Throws: ``ToolNotFound``, saying where it looked, if the executable isn't there; `GaveUp` if
///   the tool runs longer than a workload may.
public func runTool(_ name: String, _ arguments: [String]) async throws -> ToolRun {
    let process = Process()
    process.executableURL = try toolURL(name)
    process.arguments = arguments
    return try await runOnItsOwnThread(process)
}

/// Runs `script` in bash with `$TOOL` set to the executable `name`, for what needs a shell:
/// `"$TOOL" list > /dev/full`, a closed stream (`>&-`), a pipe into `head`.
///
/// - Throws: ``ToolNotFound``, saying where it looked, if the executable isn't there.
public func runToolInShell(_ name: String, _ script: String) async throws -> ToolRun {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/bash")
    process.arguments = ["-c", script]
    var environment = ProcessInfo.processInfo.environment
    environment["TOOL"] = try toolURL(name).path
    process.environment = environment
    return try await runOnItsOwnThread(process)
}

/// A script for ``runToolInShell(_:_:)`` that runs `command` with its standard output on a pipe
/// whose only reader has already closed it, and exits with the command's status: every write the
/// command makes meets the closed pipe, whatever the timing.
///
/// `command | true` races instead: a command that writes before `true` has left, which a busy
/// machine allows, fills the pipe's buffer and succeeds.
public func withItsReaderGone(_ command: String) -> String {
    """
    gone=$(mktemp -d) && mkfifo "$gone/left" || exit 99
    { read -r _ < "$gone/left"; \(command); } | { exec 0<&-; echo > "$gone/left"; }
    status=${PIPESTATUS[0]}; rm -rf "$gone"; exit $status
    """
}

/// `run(process)` on a thread of its own.
private func runOnItsOwnThread(_ process: Process) async throws -> ToolRun {
    let box = ProcessBox(process)
    return try await onItsOwnThread(limit: workloadPatience) { Result { try run(box.process) } }.get()
}

/// A process, handed to the one thread that runs it.
private final class ProcessBox: @unchecked Sendable {
    // @unchecked: only the thread that runs the process touches it once it is handed over.
    let process: Process
    init(_ process: Process) { self.process = process }
}

/// The executable `name`: in `EXCLUSION_TOOLS_DIRECTORY` if that is set, else in the nearest
/// folder above the test code's own image that holds one.
///
/// The tools are built into the folder that holds the tests' image (Linux:
/// `.build/debug/ExclusionPackageTests.xctest`) or the bundle around it (macOS:
/// `.build/<triple>/debug/ExclusionPackageTests.xctest/Contents/MacOS/…`), and Xcode puts them in
/// the products folder above its test bundles. The process's own path says nothing on macOS, where
/// `swift test` and Xcode load the bundle into a runner of their own.
private func toolURL(_ name: String) throws -> URL {
    if let directory = ProcessInfo.processInfo.environment["EXCLUSION_TOOLS_DIRECTORY"] {
        let tool = URL(fileURLWithPath: directory).appendingPathComponent(name)
        guard isExecutableFile(tool.path) else {
            throw ToolNotFound(description: "no executable \(name) in EXCLUSION_TOOLS_DIRECTORY (\(directory))")
        }
        return tool
    }
    guard let image = testImagePath() else {
        throw ToolNotFound(
            description: "cannot tell where the test code is loaded from, to find \(name) near it: "
                + "set EXCLUSION_TOOLS_DIRECTORY to the folder the tools are built in")
    }
    var searched: [String] = []
    var directory = (URL(fileURLWithPath: image).standardizedFileURL.path as NSString).deletingLastPathComponent
    while !searched.contains(directory) {
        let tool = (directory as NSString).appendingPathComponent(name)
        if isExecutableFile(tool) { return URL(fileURLWithPath: tool) }
        searched.append(directory)
        directory = (directory as NSString).deletingLastPathComponent
    }
    throw ToolNotFound(
        description: "no executable \(name) in any folder above the test code's image \(image) (looked in "
            + "\(searched.joined(separator: ", "))): build it, or set EXCLUSION_TOOLS_DIRECTORY to the folder it is in")
}

/// The file of the image this code was loaded from.
private func testImagePath() -> String? {
    #if canImport(Darwin)
    // The binary inside the `.xctest` bundle (this code is linked into it), not the runner.
    var info = Dl_info()
    guard dladdr(#dsohandle, &info) != 0, let file = info.dli_fname else { return nil }
    return String(cString: file)
    #else
    // Swift's Glibc leaves out `dladdr` (a GNU extension); the tests are built into the executable
    // itself here, `ExclusionPackageTests.xctest`, so the process's own file is the image.
    return try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    #endif
}

/// Whether `path` is a file this process may run: not a folder, which is "executable" too.
private func isExecutableFile(_ path: String) -> Bool {
    var isDirectory: ObjCBool = false
    return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
        && FileManager.default.isExecutableFile(atPath: path)
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
#endif
