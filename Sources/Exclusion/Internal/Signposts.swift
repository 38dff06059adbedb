// MARK: - Contention in Instruments

#if canImport(os)
import os

/// On Apple platforms a running contention profile also marks its waits and holds as signpost
/// intervals (subsystem "Exclusion", category "Contention"), so that Instruments shows them on
/// the timeline beside the program's own work:
///
/// - "Wait": one access's wait, from when it found the state held (or its condition false) until
///   it got the state; its end says which kind of wait it was and, for a wait for the lock, where
///   the access it took over from had been called.
/// - "Hold": an instance held while profiled accesses wait for it, from when the first of them
///   began to wait until one of them took over.
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
    static func waitEnds(_ kind: _WaitKind, id start: UInt64) {
        let signposter = self.signposter
        guard signposter.isEnabled else { return }
        let state = OSSignpostIntervalState.beginState(id: OSSignpostID(start | 1))
        switch kind {
        case .thread: signposter.endInterval("Wait", state, "a blocked thread")
        case .task: signposter.endInterval("Wait", state, "a suspended task")
        case .condition: signposter.endInterval("Wait", state, "a wait for the condition, not contention")
        }
    }

    /// The first profiled access starts waiting for `instance`: its holder now holds up others.
    static func holdBegins(_ instance: AnyObject, _ label: @autoclosure () -> String) {
        let signposter = self.signposter
        guard signposter.isEnabled else { return }
        let label = label()
        _ = signposter.beginInterval(
            "Hold", id: signposter.makeSignpostID(from: instance), "\(label, privacy: .public)")
    }

    /// A waiter took `instance` over from the access called at `holder`; if others still wait, the
    /// new holder's hold is the next interval.
    static func holdTakenOver(
        _ instance: AnyObject, _ label: @autoclosure () -> String, from holder: _Site,
        othersWait: @autoclosure () -> Bool
    ) {
        let signposter = self.signposter
        guard signposter.isEnabled else { return }
        let id = signposter.makeSignpostID(from: instance)
        let file = holder.file ?? "an unknown site"
        signposter.endInterval(
            "Hold", .beginState(id: id), "held from \(file, privacy: .public):\(holder.line)")
        if othersWait() {
            let label = label()
            _ = signposter.beginInterval("Hold", id: id, "\(label, privacy: .public)")
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
    @inline(__always) static func waitEnds(_ kind: _WaitKind, id start: UInt64) {}
    @inline(__always) static func holdBegins(_ instance: AnyObject, _ label: @autoclosure () -> String) {}
    @inline(__always) static func holdTakenOver(
        _ instance: AnyObject, _ label: @autoclosure () -> String, from holder: _Site,
        othersWait: @autoclosure () -> Bool
    ) {}
}

#endif
