import ArgumentParser

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension AsyncParsableCommand {
    /// Parses the arguments and runs the command as a good Unix citizen.
    ///
    /// - 0 on success; 64 for bad arguments (with usage); 1 for a failure the command reports,
    ///   and for output that can't be written (with a message on standard error, if it is open,
    ///   but for a pipe whose reader left: then the tool ends quietly, as Unix tools do).
    /// - Help goes to standard output, errors to standard error, both through
    ///   ``StandardStreams``: a closed or full stream never crashes the tool.
    public static func runAsTool() async -> Never {
        StandardStreams.prepare()
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
            terminate(EXIT_SUCCESS)
        } catch let error as OutputError where error.isClosedPipe {
            terminate(EXIT_FAILURE)
        } catch let error where error is ToolFailure || error is OutputError {
            StandardStreams.error("Error: \(error)\n")
            terminate(EXIT_FAILURE)
        } catch {
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .success {
                do {
                    try StandardStreams.output(message.isEmpty ? "" : message + "\n")
                } catch {
                    if !error.isClosedPipe { StandardStreams.error("Error: \(error)\n") }
                    terminate(EXIT_FAILURE)
                }
            } else if !message.isEmpty {
                StandardStreams.error(message + "\n")
            }
            terminate(code.rawValue)
        }
    }
}

/// Ends the process; the global `exit`, which `ParsableCommand.exit(withError:)` hides in the extension.
private func terminate(_ code: Int32) -> Never { exit(code) }
