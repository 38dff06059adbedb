import Dispatch
import ExclusionShims
import Synchronization

/// Work submitted for later, waiting its turn at an instance's state.
///
/// The queue is the semantics, not the mechanism: jobs wait here in submission order and run with
/// the state held, either in a *drain* dispatched to the instance's drain queue or on the thread
/// of the next synchronous access, which first runs everything submitted before it. That second rule is
/// what makes a thread's work run in the order it submitted it, sync and async alike, while a
/// synchronous access with nothing pending costs no more than a lock.
///
/// Submitting must stay cheap while a drain runs on another core. Jobs are stored inline in an
/// array (a closure without captures costs no allocation at all), guarded by a lock held for a few
/// instructions, and a consumer takes the whole array at once by swapping in an empty one:
/// the cache lines of a batch move between cores once, not once per job.
///
/// `Body` is the owner's plain closure type, stored without wrapping; the owner says how to apply it.
///
/// The backlog is the first part of an instance's side structures, which extend it
/// (`_EngineSide`), so that the two are one allocation, and its two locks are one more; an instance
/// that ran submitted work and went quiet lets them go (`Engine+Side.swift`).
@usableFromInline
class _Backlog<Body>: @unchecked Sendable {
    // @unchecked: _jobs and _drainQueue are only touched while _lock is held;
    // _spare only by the consumer, which holds the instance's state exclusively; the jobs and
    // drainScheduled flags in the instance's words are atomic, and only changed while _lock is held.

    @usableFromInline
    enum Job {
        /// The owner's plain closure, which needs the state exclusively, applied to it by the owner.
        case plain(Body)
        /// Anything else: runs itself, and may deliver results once the state is released. Shared
        /// jobs only read, and may run together.
        case closure(isShared: Bool, @Sendable (inout Outbox) -> Void)

        var isShared: Bool {
            switch self {
            case .plain: false
            case .closure(let isShared, _): isShared
            }
        }
    }

    /// The jobs' lock and the delivery lock, in one allocation: apart from the instance's words,
    /// which an iterator of `values` reads as the holder hands out deliveries (on the words' line,
    /// the delivery lock slowed the `values` row: `Benchmarks/README.md`, "What an instance costs").
    private final let _locks = UnsafeMutablePointer<exclusion_lock>.allocate(capacity: 2)

    /// Held for a few instructions at a time (an append, a swap): it spins, then parks.
    private final var _lock: _Lock { _Lock(_locks) }
    private var _jobs: [Job] = []
    /// Where drains run, made when a drain is scheduled and none is left from the last one. A
    /// serial queue of the instance's own, not a global queue: a drain blocks while a synchronous
    /// access holds the state, and a blocked serial queue gets a thread of its own, instead of
    /// taking one from the pool that Swift concurrency and the rest of the program share (where a
    /// few blocked drains would stall every task until the pool grows).
    ///
    /// A drain that ends lets it go, unless the side structures are kept (`_Flags.kept`): an
    /// instance that waits for conditions, feeds `values` or is busy with submitted work is
    /// drained again and again (every turn of a `values` loop is a submission), and making a
    /// queue each time cost more than the drain it ran on Apple platforms, where a drain that
    /// ends doesn't linger (`Benchmarks/README.md`, "The portable build").
    private var _drainQueue: DispatchQueue?
    private var _spare: [Job] = []
    /// The instance's words, whose jobs flag says whether any job waits here.
    final let _releaseWork: _ReleaseWork

    /// Serializes the hand-out of deliveries, so they leave in the order the state was held.
    private final var deliveryLock: _Lock { _Lock(_locks + 1) }

    init(_ releaseWork: _ReleaseWork) {
        _releaseWork = releaseWork
        exclusion_lock_init(_locks)
        exclusion_lock_init(_locks + 1)
    }

    /// Frees the locks: no thread can be inside them any more, since every caller of the backlog
    /// holds the state or counts itself as a user of the side structures, and they are let go only
    /// once no such thread is left (`Engine+Side.swift`), or in the instance's own `deinit`.
    deinit {
        _locks.deallocate()
    }

    /// How many jobs' room the backlog keeps between batches; a burst's more is let go.
    private static var _keptCapacity: Int { 64 }

    /// How many jobs' room the two arrays hold; for tests, which read it with the state held
    /// exclusively.
    final var _room: Int {
        _lock.lock()
        defer { _lock.unlock() }
        return _jobs.capacity + _spare.capacity
    }

    /// Whether the backlog holds a drain queue, which it makes when it schedules a drain and lets go
    /// when the drain ends, unless the side structures are kept; for tests.
    final var _holdsDrainQueue: Bool { _drainQueueIdentity != nil }

    /// Whether any job is waiting. A thread always sees the jobs it submitted itself: only a
    /// consumer clears this, and a consumer holds the state until it has run what it took.
    final var hasPending: Bool { _releaseWork.hasJobs }

    /// Releases the state with `unlock`, then hands out `deliveries`.
    ///
    /// Hand over hand: the delivery lock is taken before the state is released, so accesses hand
    /// out their deliveries in the order they held the state, and none runs while it is held.
    @usableFromInline
    final func release(handingOut deliveries: consuming Outbox, unlock: () -> Void) {
        deliveryLock.lock()
        unlock()
        deliveries.flush()
        deliveryLock.unlock()
    }

    /// Whether a drain is scheduled or running; for tests, which wait for one to end.
    final var _drainIsScheduled: Bool { _releaseWork.drainIsScheduled }

    /// The drain queue, if the backlog holds one; for tests.
    final var _drainQueueIdentity: ObjectIdentifier? {
        _lock.lock()
        defer { _lock.unlock() }
        return _drainQueue.map(ObjectIdentifier.init)
    }

    // MARK: - Submitting

    /// Adds a job; returns the queue on which the caller must schedule a drain, if it must.
    final func submit(_ job: Job, label: @autoclosure () -> String) -> DispatchQueue? {
        _lock.lock()
        defer { _lock.unlock() }
        _jobs.append(job)
        _releaseWork.jobsArrive()
        guard !_releaseWork.drainIsScheduled else { return nil }  // that drain will run the job
        _releaseWork.drainBegins()
        if let queue = _drainQueue { return queue }
        let queue = DispatchQueue(label: "Exclusion: \(label())")
        _drainQueue = queue
        return queue
    }

    // MARK: - Consuming (with the state held)

    /// Runs every job submitted before this call, oldest first, collecting what they deliver;
    /// call with the state held exclusively.
    @usableFromInline
    final func runAll(_ deliveries: inout Outbox, apply: (Body) -> Void) {
        _lock.lock()
        swap(&_jobs, &_spare)
        _releaseWork.jobsTaken()
        _lock.unlock()
        for job in _spare { _run(job, &deliveries, apply) }
        // Kept for the next batch if one is already coming, unless a burst made it large: an
        // instance that goes quiet lets its room go.
        _spare.removeAll(keepingCapacity: hasPending && _spare.capacity <= Self._keptCapacity)
    }

    /// Runs the waiting jobs up to the first one that needs the state exclusively, oldest first;
    /// call with the state held, shared or exclusively.
    final func runLeadingShared(_ deliveries: inout Outbox, apply: (Body) -> Void) {
        _lock.lock()
        let end = _jobs.firstIndex { !$0.isShared } ?? _jobs.endIndex
        let batch = Array(_jobs[..<end])
        _jobs.removeFirst(end)
        if _jobs.isEmpty { _releaseWork.jobsTaken() }
        _lock.unlock()
        for job in batch { _run(job, &deliveries, apply) }
    }

    private final func _run(_ job: Job, _ deliveries: inout Outbox, _ apply: (Body) -> Void) {
        switch job {
        case .plain(let body): apply(body)
        case .closure(_, let run): run(&deliveries)
        }
    }

    /// Whether the next job only reads, or nil if nothing is waiting.
    final func nextIsShared() -> Bool? {
        _lock.lock()
        defer { _lock.unlock() }
        return _jobs.first?.isShared
    }

    // MARK: - Draining

    /// Ends a drain if nothing is pending; returns false if the drain must go on.
    ///
    /// Before ending, the drain lingers for the back-off's spin (on Linux; nothing spins on Apple
    /// platforms): a submitter that keeps submitting then finds it still running, and doesn't pay
    /// for dispatching a new one each time.
    final func finishDrain() -> Bool {
        var backoff = exclusion_backoff()
        while !hasPending, exclusion_backoff_spin(&backoff) != 0 {}
        _lock.lock()
        defer { _lock.unlock() }
        guard _jobs.isEmpty else { return false }
        // Gone quiet: lets its room go, and its queue unless the side structures are kept. The
        // next submission makes what is gone again, and schedules a drain.
        _jobs = []
        _releaseWork.drainEnds()
        if !_releaseWork.keepsSide { _drainQueue = nil }
        return true
    }
}
