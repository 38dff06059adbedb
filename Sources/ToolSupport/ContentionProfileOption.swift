import ArgumentParser
import Exclusion
import Foundation

/// `--contention-profile FILE`: profiles the command's contended waits, writes the pprof file to
/// FILE and prints the top rows of the table on standard error.
public struct ContentionProfileOption: ParsableArguments {
    @Option(
        name: .customLong("contention-profile"),
        help: ArgumentHelp(
            "Record which instances threads and tasks waited for, where, and who held them; write it to FILE as a "
                + "gzipped pprof profile (go tool pprof FILE) and print the top rows on standard error.",
            valueName: "FILE"))
    public var path: String?

    public init() {}

    /// Starts the profile, if one was asked for and none runs yet (one started with
    /// `EXCLUSION_CONTENTION_PROFILE` goes on and writes its own file).
    public func start() -> ContentionProfile? {
        guard path != nil else { return nil }
        guard !ContentionProfile.isRunning else {
            _ = StandardStreams.error(
                "note: a contention profile already runs (\(ContentionProfile.environmentVariable)); "
                    + "--contention-profile is ignored.\n")
            return nil
        }
        return ContentionProfile.start()
    }

    /// Stops `profile`, writes its file and prints its top rows.
    public func finish(_ profile: ContentionProfile?) throws {
        guard let profile, let path else { return }
        let report = profile.stop()
        do {
            try report.pprof().write(to: URL(fileURLWithPath: path))
        } catch {
            throw ToolFailure("cannot write the contention profile to \(path): \(error.localizedDescription)")
        }
        _ = StandardStreams.error(report.table(instances: 5, rows: 3) + "\nContention profile written to \(path).\n")
    }
}
