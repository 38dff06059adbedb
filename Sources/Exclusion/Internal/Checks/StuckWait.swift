import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reports a synchronous wait that lasts too long, once, on standard error.
///
/// A thread blocked for ten seconds on an instance is almost always a deadlock, or a condition
/// that nothing will make true, and a blocked thread says nothing on its own. So, in debug builds,
/// a blocking access (for the lock or for a condition) that has waited longer than the threshold
/// prints where it waits, on which instance, and where the access holding that instance entered.
/// The threshold is 10 seconds; `EXCLUSION_STUCK_WAIT_SECONDS` sets another (fractions allowed),
/// and `0` turns the report off. Release builds report only when that variable is set.
@usableFromInline
enum _StuckWait {
    /// How long a synchronous wait may last before it is reported; nil when reports are off.
    /// Read once, when the first instance is created.
    static let threshold: Duration? = {
        if let setting = getenv("EXCLUSION_STUCK_WAIT_SECONDS").map({ String(cString: $0) }) {
            guard let seconds = Double(setting), seconds > 0 else { return nil }
            return .seconds(seconds)
        }
        #if DEBUG
        return .seconds(10)
        #else
        return nil
        #endif
    }()

    /// Prints `message` on standard error with one `write`, so that reports from several threads
    /// don't interleave.
    static func report(_ message: String) {
        var line = message
        line.append("\n")
        line.withUTF8 { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
    }
}

// MARK: - The watch

/// A blocking wait the stuck-wait report watches: reported once if it is still going at the
/// threshold. `end` it when the wait ends, however it ends.
///
/// The watch never touches the wait. The waiting thread sleeps exactly as an unwatched one would,
/// untimed where its wait has no deadline, so that on Apple platforms it keeps lending its
/// priority to the holder through `os_unfair_lock`. The report comes from a timer of the watch's
/// own, on a queue of its own, while the thread still sleeps.
@usableFromInline
struct _WatchedWait: Sendable {
    let id: UInt64

    /// Starts watching a wait that begins now. `report` runs at most once, on the watch's queue,
    /// while the wait still goes on.
    init(report: @escaping @Sendable () -> Void) {
        id = _StuckWait.watch.begin(due: _Deadline(after: _StuckWait.threshold!), report: report)
    }

    /// The wait is over; no report comes after this returns, unless one is running already.
    func end() {
        _StuckWait.watch.end(id)
    }
}

extension _StuckWait {
    /// The waits being watched, and the one timer that reports them.
    static let watch = _Watch()

    final class _Watch: @unchecked Sendable {
        // @unchecked: `_waits` is only touched while `_lock` is held; the timer is only scheduled,
        // which libdispatch allows from any thread, and its handler runs on `queue`.
        private struct Watched {
            var due: _Deadline
            var report: @Sendable () -> Void
        }

        private struct Waits {
            var watched: [UInt64: Watched] = [:]
            var nextID: UInt64 = 0
            /// When the timer fires next, if it is set.
            var timerDue: _Deadline?
        }

        /// Exclusion's own lock, not `Mutex`, whose futex ThreadSanitizer can't see.
        private let _lock = _Lock.standalone()
        private var _waits = Waits()
        private let queue = DispatchQueue(label: "Exclusion stuck waits")
        private let timer: any DispatchSourceTimer

        init() {
            timer = DispatchSource.makeTimerSource(queue: queue)
            timer.setEventHandler { [unowned self] in fire() }
            timer.activate()
        }

        private func withWaits<R>(_ body: (inout Waits) -> R) -> R {
            _lock.lock()
            defer { _lock.unlock() }
            return body(&_waits)
        }

        func begin(due: _Deadline, report: @escaping @Sendable () -> Void) -> UInt64 {
            withWaits { waits in
                let id = waits.nextID
                waits.nextID += 1
                waits.watched[id] = Watched(due: due, report: report)
                if waits.timerDue.map({ due < $0 }) ?? true { schedule(due, &waits) }
                return id
            }
        }

        func end(_ id: UInt64) {
            // The timer stays set for a wait that has ended; firing for nothing costs one look.
            _ = withWaits { $0.watched.removeValue(forKey: id) }
        }

        /// Reports every wait that is due, then sets the timer for the next.
        private func fire() {
            let due = withWaits { waits -> [@Sendable () -> Void] in
                waits.timerDue = nil
                var due: [@Sendable () -> Void] = []
                for (id, wait) in waits.watched where wait.due.hasPassed {
                    due.append(wait.report)
                    waits.watched[id] = nil
                }
                if let next = waits.watched.values.map(\.due).min() { schedule(next, &waits) }
                return due
            }
            for report in due { report() }
        }

        private func schedule(_ due: _Deadline, _ waits: inout Waits) {
            waits.timerDue = due
            timer.schedule(deadline: due.dispatchTime, leeway: .milliseconds(10))
        }
    }
}
