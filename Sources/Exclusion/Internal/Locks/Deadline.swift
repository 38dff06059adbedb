import Dispatch
import ExclusionShims

/// A moment on the monotonic clock that a wait must not pass.
///
/// Every timed wait in Exclusion measures against one of these, made once when the wait begins,
/// so that a wait in several steps (the lock, then the condition, then the lock again) gives up at
/// the same moment whatever each step took. This file is where Swift's `Duration` becomes
/// nanoseconds and a dispatch time; the C side turns nanoseconds into what each system call takes
/// (`ExclusionPlatform.c`).
@usableFromInline
struct _Deadline: Sendable, Comparable {
    /// Nanoseconds on `CLOCK_MONOTONIC` (`exclusion_monotonic_now`), as the lock takes them.
    @usableFromInline let nanoseconds: UInt64

    @usableFromInline
    init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    /// `duration` from now; a negative duration is now.
    @usableFromInline
    init(after duration: Duration) {
        let now = exclusion_monotonic_now()
        let (sum, overflow) = now.addingReportingOverflow(UInt64(max(_nanoseconds(duration), 0)))
        nanoseconds = overflow ? .max : sum
    }

    var hasPassed: Bool { exclusion_monotonic_now() >= nanoseconds }

    /// Nanoseconds left, 0 once passed.
    var remainingNanoseconds: Int64 {
        let now = exclusion_monotonic_now()
        return now >= nanoseconds ? 0 : Int64(clamping: nanoseconds - now)
    }

    /// The same moment for a dispatch wait (`DispatchSemaphore.wait(timeout:)`).
    var dispatchTime: DispatchTime { .now() + .nanoseconds(Int(clamping: remainingNanoseconds)) }

    @usableFromInline
    static func < (lhs: _Deadline, rhs: _Deadline) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
}

/// How long a timed access may wait, and until when: made once, when the access is asked for.
@usableFromInline
struct _TimeLimit: Sendable {
    /// As the caller gave it, for the error.
    @usableFromInline let timeout: Duration
    @usableFromInline let deadline: _Deadline

    @usableFromInline
    init(_ timeout: Duration) {
        self.timeout = timeout
        deadline = _Deadline(after: timeout)
    }

    /// The error for a wait that gave up at this limit.
    @usableFromInline
    func error(on label: String, waitingFor cause: TimeoutError.Cause) -> TimeoutError {
        TimeoutError(label: label, timeout: timeout, cause: cause)
    }
}

/// `duration` in whole nanoseconds, saturating.
func _nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    if overflow { return seconds < 0 ? .min : .max }
    return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
}
