import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A piece of work waiting in a backlog.
///
/// Subclasses say what to run; the base class is the link of the backlog's queue.
class _Job: @unchecked Sendable {
    // @unchecked: `next` is atomic; subclasses hold immutable, Sendable payloads.

    /// Whether the job only reads, so it may share the state with other readers.
    let isRead: Bool
    fileprivate let next = Atomic<Unmanaged<_Job>?>(nil)

    init(isRead: Bool) {
        self.isRead = isRead
    }

    /// Runs the job; called once, with the state held.
    func run(_ deliveries: inout _Deliveries) {}
}

/// A job given as a closure.
final class _ClosureJob: _Job, @unchecked Sendable {
    // @unchecked: the closure is immutable and Sendable.
    private let body: @Sendable (inout _Deliveries) -> Void

    init(isRead: Bool, _ body: @escaping @Sendable (inout _Deliveries) -> Void) {
        self.body = body
        super.init(isRead: isRead)
    }

    override func run(_ deliveries: inout _Deliveries) { body(&deliveries) }
}

/// Work submitted for later, waiting its turn at an instance's state.
///
/// The queue is the semantics, not the mechanism: jobs wait here in submission order and run with
/// the state held, either on the instance's own dispatch queue (a *drain*) or on the thread of the
/// next synchronous access, which first runs everything submitted before it. That second rule is
/// what makes a thread's work run in the order it submitted it, sync and async alike, while a
/// synchronous access with nothing pending costs no more than a lock.
///
/// Submitting must stay cheap while a drain runs, so the queue is Dmitry Vyukov's intrusive
/// multi-producer, single-consumer queue: a submission is one atomic exchange and one store, with
/// no lock for submitters and the drain to fight over. The single consumer is whoever holds the
/// state: exclusively, or shared for a drain that only runs reads. Jobs leave the queue only
/// then, and run before the state is released.
final class _Backlog: @unchecked Sendable {
    // @unchecked: every field is atomic or immutable. `_head` is only changed by the consumer,
    // one at a time, ordered by the instance's lock; others only read it to ask `hasPending`.

    /// Where submitters append; the stub when the queue is empty.
    private let _tail: Atomic<Unmanaged<_Job>>
    /// Where the consumer takes from.
    private let _headNode: Atomic<Unmanaged<_Job>>
    /// A placeholder node that keeps the queue from ever being empty of nodes.
    private let _stub = _Job(isRead: false)
    private let _drainScheduled = Atomic<Bool>(false)

    /// Serializes the hand-out of deliveries, so they leave in the order the state was held.
    let deliveryLock = _Lock()

    init() {
        _headNode = Atomic(Unmanaged.passUnretained(_stub))
        _tail = Atomic(Unmanaged.passUnretained(_stub))
    }

    deinit {
        while case .job(let job) = _pop() { job.release() }
        deliveryLock.destroy()
    }

    private var _head: Unmanaged<_Job> {
        get { _headNode.load(ordering: .acquiring) }
        set { _headNode.store(newValue, ordering: .releasing) }
    }

    /// Whether any job is waiting. A thread always sees the jobs it submitted itself.
    ///
    /// Empty means the stub is both where the consumer takes from and where submitters append.
    /// Looking at the tail alone is not enough: the consumer appends the stub behind the last job
    /// it sees, and a job submitted just before that sits between them, ahead of the stub.
    var hasPending: Bool {
        let stub = Unmanaged.passUnretained(_stub).toOpaque()
        return _tail.load(ordering: .sequentiallyConsistent).toOpaque() != stub || _head.toOpaque() != stub
    }

    // MARK: - Submitting

    /// Adds a job; returns whether the caller must schedule a drain.
    func submit(_ job: _Job) -> Bool {
        _push(Unmanaged.passRetained(job))
        // Cheap check first: while a drain runs, the flag stays set and this is a plain load.
        if _drainScheduled.load(ordering: .sequentiallyConsistent) { return false }
        return !_drainScheduled.exchange(true, ordering: .sequentiallyConsistent)
    }

    private func _push(_ node: Unmanaged<_Job>) {
        node.takeUnretainedValue().next.store(nil, ordering: .relaxed)
        let previous = _tail.exchange(node, ordering: .sequentiallyConsistent)
        // Between the exchange and this store the queue is briefly unlinked; the consumer waits it out.
        previous.takeUnretainedValue().next.store(node, ordering: .releasing)
    }

    // MARK: - Consuming (with the state held)

    private enum Popped {
        case job(Unmanaged<_Job>)
        case empty
        /// A submitter is between its two steps; the job behind it will be there in a moment.
        case linking
    }

    private func _pop() -> Popped {
        var head = _head
        var next = head.takeUnretainedValue().next.load(ordering: .acquiring)
        if head.toOpaque() == Unmanaged.passUnretained(_stub).toOpaque() {
            guard let first = next else {
                return _tail.load(ordering: .acquiring).toOpaque() == head.toOpaque() ? .empty : .linking
            }
            _head = first
            head = first
            next = first.takeUnretainedValue().next.load(ordering: .acquiring)
        }
        if let next {
            _head = next
            return .job(head)
        }
        guard _tail.load(ordering: .acquiring).toOpaque() == head.toOpaque() else { return .linking }
        // `head` is the last job: put the stub behind it so it can be taken.
        _push(Unmanaged.passUnretained(_stub))
        guard let afterHead = head.takeUnretainedValue().next.load(ordering: .acquiring) else { return .linking }
        _head = afterHead
        return .job(head)
    }

    /// The next job to run without taking it, or nil if there is none.
    private func _peek() -> _Job? {
        while true {
            let head = _head
            if head.toOpaque() != Unmanaged.passUnretained(_stub).toOpaque() { return head.takeUnretainedValue() }
            if let next = head.takeUnretainedValue().next.load(ordering: .acquiring) {
                return next.takeUnretainedValue()
            }
            if _tail.load(ordering: .acquiring).toOpaque() == head.toOpaque() { return nil }
            sched_yield()  // linking
        }
    }

    /// Runs every job submitted before this call, oldest first, collecting what they deliver;
    /// call with the state held exclusively.
    func runAll(_ deliveries: inout _Deliveries) {
        // Jobs submitted from now on can wait for the next access; without this bound, a stream of
        // submissions from other threads could keep this access running their work indefinitely.
        let last = _tail.load(ordering: .acquiring)
        let stub = Unmanaged.passUnretained(_stub).toOpaque()
        while true {
            if last.toOpaque() == stub, _head.toOpaque() == stub { return }
            switch _pop() {
            case .job(let job):
                job.takeUnretainedValue().run(&deliveries)
                job.release()
                if job.toOpaque() == last.toOpaque() { return }
            case .empty:
                return
            case .linking:
                sched_yield()
            }
        }
    }

    /// Runs the waiting jobs up to the first one that writes, oldest first; call with the state
    /// held, shared or exclusively.
    func runLeadingReads(_ deliveries: inout _Deliveries) {
        while let next = _peek(), next.isRead {
            guard case .job(let job) = _pop() else { return }
            job.takeUnretainedValue().run(&deliveries)
            job.release()
        }
    }

    /// Whether the next job only reads, or nil if nothing is waiting; call with the state held.
    func nextIsRead() -> Bool? {
        _peek()?.isRead
    }

    // MARK: - Draining

    /// Ends a drain if nothing is pending; returns false if the drain must go on, because work
    /// arrived that no other drain will pick up.
    ///
    /// Before ending, the drain lingers for a moment: a submitter that keeps submitting then finds
    /// it still running, and doesn't pay for dispatching a new one each time.
    func finishDrain() -> Bool {
        for _ in 0..<16 where !hasPending { sched_yield() }
        if hasPending { return false }
        _drainScheduled.store(false, ordering: .sequentiallyConsistent)
        // A submitter that saw the flag still set before it was cleared left its job to this drain.
        if !hasPending { return true }
        return _drainScheduled.exchange(true, ordering: .sequentiallyConsistent)
    }
}
