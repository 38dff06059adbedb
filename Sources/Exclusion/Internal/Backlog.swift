import Dispatch
import Synchronization

/// Work submitted for later, waiting its turn at an instance's state.
///
/// The queue is the semantics, not the mechanism: jobs wait here in submission order and run with
/// the state held, either on the instance's own dispatch queue (a *drain*) or on the thread of the
/// next synchronous access, which runs everything submitted before it first. That second rule is
/// what makes a thread's work run in the order it submitted it, sync and async alike, while a
/// synchronous access with nothing pending costs no more than a lock.
///
/// Jobs leave the backlog only while the state is held, and run before it is released.
final class _Backlog: @unchecked Sendable {
    // @unchecked: _jobs and _drainScheduled are only touched while _lock is held.

    struct Job {
        /// Whether the job only reads, so it may share the state with other readers.
        let isRead: Bool
        let run: @Sendable (inout _Deliveries) -> Void
    }

    private let _lock = _Lock()
    private var _jobs: [Job] = []
    private var _drainScheduled = false
    private let _count = Atomic<Int>(0)

    /// Serializes the hand-out of deliveries, so they leave in the order the state was held.
    let deliveryLock = _Lock()

    deinit {
        _lock.destroy()
        deliveryLock.destroy()
    }

    /// Whether any job is waiting. A thread always sees the jobs it submitted itself.
    var hasPending: Bool { _count.load(ordering: .relaxed) != 0 }

    /// Adds a job; returns whether the caller must schedule a drain.
    func submit(_ job: Job) -> Bool {
        _lock.withLock {
            _jobs.append(job)
            _count.add(1, ordering: .relaxed)
            if _drainScheduled { return false }
            _drainScheduled = true
            return true
        }
    }

    /// Runs `batch`, oldest first, collecting what it delivers; call with the state held.
    static func run(_ batch: [Job], _ deliveries: inout _Deliveries) {
        for job in batch { job.run(&deliveries) }
    }

    /// Takes every waiting job, oldest first.
    func takeAll() -> [Job] {
        _lock.withLock {
            _count.store(0, ordering: .relaxed)
            return _jobs.isEmpty ? [] : _take(upTo: _jobs.endIndex)
        }
    }

    /// What a drain should do next: nil when the backlog is empty, which ends the drain, so the next
    /// submission schedules a new one; otherwise whether the next job only reads.
    func nextDrainStep() -> Bool? {
        _lock.withLock {
            guard let first = _jobs.first else {
                _drainScheduled = false
                return nil
            }
            return first.isRead
        }
    }

    /// Takes the waiting jobs up to the first one that writes.
    func takeLeadingReads() -> [Job] {
        _lock.withLock {
            let end = _jobs.firstIndex { !$0.isRead } ?? _jobs.endIndex
            guard end > 0 else { return [] }
            let taken = _take(upTo: end)
            _count.store(_jobs.count, ordering: .relaxed)
            return taken
        }
    }

    private func _take(upTo end: Int) -> [Job] {
        if end == _jobs.endIndex {
            var taken: [Job] = []
            taken.reserveCapacity(_jobs.capacity)
            swap(&taken, &_jobs)
            return taken
        }
        let taken = Array(_jobs[..<end])
        _jobs.removeFirst(end)
        return taken
    }
}
