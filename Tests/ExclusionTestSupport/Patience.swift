import Dispatch
import Foundation
import Synchronization
import Testing

/// How long a test waits for anything before it fails: seconds, so that a lost wake-up or a loop
/// that never lets go fails the test that waits for it, with a message that says what it waited
/// for, instead of stalling the run until a time limit that names nothing.
///
/// Ten seconds, far more than anything a test waits for takes on a busy two-core machine;
/// `EXCLUSION_TEST_PATIENCE` multiplies it (`.ci/run` sets 6 for ThreadSanitizer, whose threads run
/// several times slower).
public let patience: Duration = .seconds(10 * patienceScale)

/// How long a test lets a workload run (many threads doing thousands of accesses) before it fails:
/// a workload on a machine whose other work takes the processors runs many times slower than
/// alone, where a wait for an event takes about as long. A hang fails within it all the same.
public let workloadPatience: Duration = patience * 12

private let patienceScale: Double = {
    guard let setting = ProcessInfo.processInfo.environment["EXCLUSION_TEST_PATIENCE"], let scale = Double(setting),
        scale > 0
    else { return 1 }
    return scale
}()

/// Where the tests' limits are enforced and their conditions polled: a serial queue of its own,
/// whose thread libdispatch starts apart from the cooperative pool that runs the tests' tasks. A
/// limit fires even when every thread of that pool is busy in a loop under test, or blocked.
let watchdog = DispatchQueue(label: "test watchdog")

/// A test gave up waiting: what for, where, and for how long.
public struct GaveUp: Error, CustomStringConvertible {
    public let what: String
    public let sourceLocation: SourceLocation
    public let limit: Duration

    public init(what: String, sourceLocation: SourceLocation, limit: Duration) {
        self.what = what
        self.sourceLocation = sourceLocation
        self.limit = limit
    }

    public var description: String {
        "waited \(limit) at \(sourceLocation.fileID):\(sourceLocation.line) for \(what), in vain"
    }
}

/// Resumes `continuation` with what `body` returns, or with `GaveUp` once `limit` has passed,
/// whichever comes first; the other is ignored.
final class OneResumption<Value: Sendable>: @unchecked Sendable {
    // @unchecked: _continuation is only touched while _lock is held.
    private let _lock = NSLock()
    private var _continuation: CheckedContinuation<Value, any Error>?

    init(_ continuation: CheckedContinuation<Value, any Error>) {
        _continuation = continuation
    }

    /// Resumes with `result` if nothing resumed yet; whether it did.
    @discardableResult
    func resume(with result: Result<Value, any Error>) -> Bool {
        guard
            let continuation = _lock.withLock({ () -> CheckedContinuation<Value, any Error>? in
                defer { _continuation = nil }
                return _continuation
            })
        else { return false }
        continuation.resume(with: result)
        return true
    }

    /// Whether nothing resumed yet.
    var isPending: Bool { _lock.withLock { _continuation != nil } }

    /// Starts the limit: `GaveUp` after `limit`, timed on the watchdog's queue.
    func giveUp(after limit: Duration, _ what: String, _ sourceLocation: SourceLocation) {
        watchdog.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds(limit)))) {
            self.resume(with: .failure(GaveUp(what: what, sourceLocation: sourceLocation, limit: limit)))
        }
    }

    /// Starts a limit on time in which every one of `times` ran: `GaveUp` once each has counted
    /// `limit`, looked at on the watchdog's queue. Time in which one of them got no thread doesn't
    /// count.
    func giveUp(
        afterEachRuns times: [RunTime], limit: Duration, _ what: String, _ sourceLocation: SourceLocation
    ) {
        @Sendable func look() {
            watchdog.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds(RunTime.interval)))) {
                guard self.isPending else { return }
                if times.allSatisfy({ $0.elapsed >= limit }) {
                    self.resume(with: .failure(GaveUp(what: what, sourceLocation: sourceLocation, limit: limit)))
                } else {
                    look()
                }
            }
        }
        look()
    }

    /// Starts a limit on progress: `GaveUp` once `progress()` hasn't changed for `stall`, looked
    /// at on the watchdog's queue a few times per `stall`.
    func giveUp(
        whenStalledFor stall: Duration, progress: @escaping @Sendable () -> Int, _ what: String,
        _ sourceLocation: SourceLocation
    ) {
        let interval = DispatchTimeInterval.nanoseconds(Int(nanoseconds(stall / 4)))
        @Sendable func look(since seen: Int, at time: ContinuousClock.Instant) {
            watchdog.asyncAfter(deadline: .now() + interval) {
                guard self.isPending else { return }
                let now = ContinuousClock.now
                let current = progress()
                if current != seen {
                    look(since: current, at: now)
                } else if now - time >= stall {
                    self.resume(with: .failure(GaveUp(what: what, sourceLocation: sourceLocation, limit: stall)))
                } else {
                    look(since: seen, at: time)
                }
            }
        }
        look(since: progress(), at: .now)
    }
}

/// Time in which a queue, or the shared pool of Swift tasks, ran, as far as a test needs it for a
/// limit: a beat is posted every few milliseconds, each once the one before has run, and each beat
/// that ran counts as that interval. A queue that got no thread for a minute counts one beat for it.
///
/// For limits on waits that need the shared pool, or the main queue: in a test process on Linux the
/// main thread parks in `dispatchMain()`, and the main queue is drained by dispatch's threads; on a
/// busy machine, or while the suite's CPU-bound tests hold the pool (under ThreadSanitizer), either
/// can go without a thread for minutes. A wait that never ends still fails once what it needs has
/// been free to end it for the limit.
///
/// The pool is measured by tasks, never by `DispatchQueue.global()`: on Linux dispatch gives the
/// global queues a thread of their own once their threads have been busy for a while, and the
/// pool's tasks get none (`RunTimeTests` shows both).
///
/// It beats for as long as it exists.
public final class RunTime: Sendable {
    public static let interval = Duration.milliseconds(20)
    private let beats = Atomic<Int>(0)

    /// Counts time in which `queue` ran.
    public convenience init(of queue: DispatchQueue) {
        self.init { beat in queue.async(execute: beat) }
    }

    /// Counts time in which the shared pool ran tasks of `priority` (the caller's by default).
    public convenience init(ofThePoolAt priority: TaskPriority = Task.currentPriority) {
        self.init { beat in Task.detached(priority: priority) { beat() } }
    }

    private init(posting post: @escaping @Sendable (_ beat: @escaping @Sendable () -> Void) -> Void) {
        Self.beat(self, posting: post)
    }

    /// Posts `time`'s next beat once an interval has passed, holding it weakly: the beats end
    /// with it.
    private static func beat(
        _ time: RunTime, posting post: @escaping @Sendable (_ beat: @escaping @Sendable () -> Void) -> Void
    ) {
        watchdog.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds(interval)))) { [weak time] in
            guard time != nil else { return }
            post { [weak time] in
                guard let time else { return }
                time.beats.add(1, ordering: .relaxed)
                beat(time, posting: post)
            }
        }
    }

    /// The beats that ran, times their interval.
    public var elapsed: Duration { Self.interval * beats.load(ordering: .relaxed) }
}

/// `duration` in whole nanoseconds, saturating.
func nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    return overflow ? .max : scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
}

/// For the body of an exit test, in the child process it runs in: stops that process, with a
/// message saying where and a failing status, if it is still running after `limit`. A hang in the
/// child then fails its test, instead of leaving the parent waiting for it as long as CI lets it.
public func stopIfStuck(after limit: Duration = patience * 3, sourceLocation: SourceLocation = #_sourceLocation) {
    watchdog.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds(limit)))) {
        var message = "Exclusion tests: the exit test at \(sourceLocation.fileID):\(sourceLocation.line) "
        message += "was still running after \(limit); stopping it.\n"
        message.withUTF8 { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
        _exit(86)
    }
}

extension Trait where Self == TimeLimitTrait {
    /// A suite's or test's time limit, `minutes` times `EXCLUSION_TEST_PATIENCE`: under
    /// ThreadSanitizer every test runs several times slower, and a limit that fits an ordinary
    /// build would fail tests that are only slow.
    public static func patientTimeLimit(minutes: Int) -> Self {
        .timeLimit(.minutes(Int((Double(minutes) * patienceScale).rounded(.up))))
    }
}
