import Foundation
import Synchronization

/// A record of who waited for whom, per instance, while it runs: which instances threads and
/// tasks had to wait for, from which call sites, for how long, and which call sites held the state
/// meanwhile.
///
/// ```swift
/// let profile = ContentionProfile.start(sampling: .all)
/// runTheSlowPart()
/// let report = profile.stop()
/// print(report)                                        // a table, longest total wait first
/// try report.pprof().write(to: URL(fileURLWithPath: "contention.pb.gz"))   // for `go tool pprof`
/// ```
///
/// Only acquisitions that wait past the lock's own spin are recorded: one that finds its instance
/// free costs what it costs without a profile. Three kinds of wait are told apart (``ContentionReport/WaitKind``): a
/// thread blocked for the lock, a task suspended until its turn (`await access`), and an access
/// waiting for its condition (`access(when:)`), which is not contention and is reported apart.
///
/// One profile runs at a time, for the whole process. To profile a program without changing it,
/// set `EXCLUSION_CONTENTION_PROFILE` to a file path: a profile starts with the first instance the
/// program creates, and at exit the pprof file is written there and the table's top rows printed
/// on standard error. On Apple platforms the waits are also signpost intervals, which Instruments
/// shows on its timeline: see <doc:FindingContention>.
public final class ContentionProfile: Sendable {
    /// Which contended waits a profile records.
    public enum Sampling: Sendable, Hashable {
        /// Every one.
        case all
        /// One in every `n` (at least 1); the report scales counts and waits back up by `n`.
        case oneIn(Int)

        var every: Int {
            switch self {
            case .all: 1
            case .oneIn(let n): max(1, n)
            }
        }
    }

    /// The environment variable that profiles a whole run: the path the pprof file is written to
    /// when the program exits.
    public static let environmentVariable = "EXCLUSION_CONTENTION_PROFILE"

    /// Whether a profile is running, started in code or by the environment variable.
    public static var isRunning: Bool { _Contention.isOn }

    /// What this profile samples.
    public let sampling: Sampling
    private let generation: UInt64
    private let started = _Contention.now()
    /// The report, once stopped.
    private let report = Mutex<ContentionReport?>(nil)

    private init(sampling: Sampling, generation: UInt64) {
        self.sampling = sampling
        self.generation = generation
    }

    /// Starts recording contended waits on every instance in the process.
    ///
    /// - Parameter sampling: Which waits to record: ``Sampling/all`` (the default), or one in
    ///   `n` when waits are so frequent that recording each would cost too much.
    /// - Returns: The running profile; call ``stop()`` for its report.
    /// - Precondition: No other profile is running. Stopping the process here, with a message,
    ///   is kinder than two profiles that each see half of the waits.
    public static func start(sampling: Sampling = .all) -> ContentionProfile {
        guard let generation = _Contention.start(sampleEvery: sampling.every) else {
            fatalError(
                "ContentionProfile.start: a contention profile is already running (started in code or with "
                    + "\(environmentVariable)); stop it before starting another.")
        }
        return ContentionProfile(sampling: sampling, generation: generation)
    }

    /// Stops recording and returns what was recorded. Calling it again returns the same report.
    public func stop() -> ContentionReport {
        report.withLock { report in
            if let report { return report }
            let (rows, dropped) = _Contention.stop(generation)
            let stopped = ContentionReport(
                rows: rows, dropped: dropped, sampling: sampling, duration: _Contention.now() &- started)
            report = stopped
            return stopped
        }
    }

    deinit {
        _ = stop()
    }
}

// MARK: - Profiling a whole run

extension ContentionProfile {
    /// The profile `EXCLUSION_CONTENTION_PROFILE` asked for, started by the first instance made;
    /// nil when the variable isn't set.
    static let fromEnvironment: ContentionProfile? = {
        guard let path = getenv(environmentVariable).map({ String(cString: $0) }), !path.isEmpty else { return nil }
        let profile = ContentionProfile.start()
        _environmentProfile.withLock { $0 = (profile, path) }
        atexit {
            guard let (profile, path) = _environmentProfile.withLock({ $0 }) else { return }
            profile.stop().writeAtExit(to: path)
        }
        return profile
    }()
}

/// The environment's profile and the path for its file, for the `atexit` handler, which can't
/// capture anything.
private let _environmentProfile = Mutex<(ContentionProfile, String)?>(nil)
