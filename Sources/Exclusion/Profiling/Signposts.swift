// MARK: - Contention in Instruments

#if canImport(os)
import os

/// On Apple platforms a running contention profile also marks its waits as signpost
/// intervals (subsystem "Exclusion", category "Contention"), so that Instruments shows them on
/// the timeline beside the program's own work:
///
/// - "Wait": one access's wait, from when it found the state held (or its condition false) until
///   it got the state; its end says which kind of wait it was.
///
/// Nothing is emitted unless a profile runs and Instruments (or `log stream --signpost`) records
/// the category: every function here first asks the signposter whether it is enabled.
enum _Signposts {
    static var signposter: OSSignposter { _Signposter.shared.signposter }

    /// A wait begins; `start` is its start time, which names the interval.
    static func waitBegins(_ label: @autoclosure () -> String, at site: _Site, id start: UInt64) {
        let signposter = self.signposter
        guard signposter.isEnabled else { return }
        let label = label()
        let file = site.file ?? "an unknown site"
        _ = signposter.beginInterval(
            "Wait", id: OSSignpostID(start | 1),
            "\(label, privacy: .public) from \(file, privacy: .public):\(site.line)")
    }

    /// The wait that began at `start` ends, as a wait of `kind`.
    static func waitEnds(_ kind: ContentionReport.WaitKind, id start: UInt64) {
        let signposter = self.signposter
        guard signposter.isEnabled else { return }
        let state = OSSignpostIntervalState.beginState(id: OSSignpostID(start | 1))
        switch kind {
        case .blockedThread: signposter.endInterval("Wait", state, "a blocked thread")
        case .suspendedTask: signposter.endInterval("Wait", state, "a suspended task")
        case .condition: signposter.endInterval("Wait", state, "a wait for the condition, not contention")
        }
    }
}

/// The one signposter, made on first use.
private final class _Signposter: @unchecked Sendable {
    // @unchecked: `signposter` is a constant, and an `OSSignposter` may be used from any thread
    // (it only refers to an os_log handle, which is thread-safe); the class exists only because
    // the SDK may not mark that struct `Sendable`.
    let signposter = OSSignposter(subsystem: "Exclusion", category: "Contention")
    static let shared = _Signposter()
}

#else

/// Signposts are an Apple platforms' tool: elsewhere these do nothing, and evaluate nothing.
enum _Signposts {
    @inline(__always) static func waitBegins(_ label: @autoclosure () -> String, at site: _Site, id start: UInt64) {}
    @inline(__always) static func waitEnds(_ kind: ContentionReport.WaitKind, id start: UInt64) {}
}

#endif
