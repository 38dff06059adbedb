import Dispatch
import ExclusionShims
import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One access waiting for a condition on the state.
@usableFromInline
final class _Waiter<State>: @unchecked Sendable {
    // @unchecked: every var is only touched while the wait list's lock is held, but for
    // `profiledSince`, touched only with the instance's state held exclusively; the closures taken
    // out of it are called by the one thread that took them.

    enum Status {
        /// An awaited or asynchronous access that hasn't looked at the state yet.
        case pending
        /// In the list; its condition is checked after every exclusive access.
        case waiting
        /// A thread woken because its condition held; it checks again once it holds the state.
        case woken
        /// A thread to which the state is promised: nobody else may take it exclusively first.
        case granted
        /// Ran, failed, timed out or was cancelled: nothing more will happen to it.
        case done
    }

    var status: Status
    var condition: (@Sendable (State) -> Bool)?
    /// For a blocked thread: what wakes it.
    let semaphore: DispatchSemaphore?
    /// For a blocked thread: the thread, which accesses that back off for its grant lend their
    /// priority to.
    let thread: pthread_t?
    /// For an awaited or asynchronous access: runs the body with the state held, posting what it
    /// delivers; or delivers an error without it.
    var run: (@Sendable (inout sending State, inout Outbox) -> Void)?
    var fail: (@Sendable (any Error) -> Void)?
    /// The error it was abandoned with before it could be set up (a task cancelled early).
    var abandonedWith: (any Error)?
    /// For a blocked thread: how many times it was woken and found its condition false again.
    /// After two, it is handed the state directly the next time, so a stream of other accesses
    /// can't keep taking what it waits for.
    var losses = 0
    var timer: (any DispatchSourceTimer)?

    /// A blocked thread's record.
    init(thread condition: @escaping @Sendable (State) -> Bool) {
        status = .waiting
        self.condition = condition
        semaphore = DispatchSemaphore(value: 0)
        thread = pthread_self()
        isObserver = false
    }

    /// Whether this is an iterator of `values` waiting for the next value: it ends when the public
    /// instance goes away, while other waiters go on until the engine itself does.
    let isObserver: Bool

    /// An awaited or asynchronous access's record; `run` and `fail` are set before it is submitted.
    init(job condition: @escaping @Sendable (State) -> Bool, observer: Bool = false) {
        status = .pending
        self.condition = condition
        semaphore = nil
        thread = nil
        isObserver = observer
    }

    var isThread: Bool { semaphore != nil }

    /// While a contention profile runs: when an awaited access that found its condition false
    /// began to wait. Written and read with the state held exclusively.
    var profiledSince: UInt64?

    /// Forgets the closures (which may belong to a caller's frame) and stops the timer. Call under
    /// the list's lock when the waiter is done.
    fileprivate func clear() {
        condition = nil
        run = nil
        fail = nil
        timer?.cancel()
        timer = nil
    }
}

/// The accesses waiting for a condition on one instance's state, in the order they began to wait.
///
/// Conditions are checked by whichever thread releases the state after an exclusive access, with
/// the state still held, so nothing that changes the state can slip between a check and the wait
/// it decides (no lost wake-ups), and no user code ever signals. What happens when a condition
/// holds depends on the waiter:
///
/// - An awaited or asynchronous access runs its body right there, on the releasing thread, before
///   the state is released: nothing can come between the condition and the body.
/// - A blocked thread is woken and checks again once it holds the state; if another access took
///   what it waited for, it waits again in its place. After two such losses it is *granted* the
///   state instead: it is woken, and every exclusive access backs off until it has run. Waking
///   without a grant lets a signaller carry on (a producer fills a queue while the consumer wakes);
///   the grant bounds how often a waiter can lose.
///
/// Not final only so that tests can plant bugs in a subclass (the members under "Policy" and
/// `nextReady`, with the entry points in `WaitList+Testing.swift`), to show that their checks
/// catch them; everything else is final.
@usableFromInline
class _WaitList<State>: @unchecked Sendable {
    // @unchecked: _waiters, _grantee and every waiter's fields are only touched while _lock is
    // held; the atomics are hints read without it.

    final let _lock = _Lock()
    final var _waiters: [_Waiter<State>] = []
    private final var _grantee: _Waiter<State>?
    /// Set when the public instance went away: observers still to come end at once.
    private final var _observationsEnded = false
    /// The word every exclusive release reads, in which the list counts its sleepers (waiters in
    /// the list not woken or granted): a release checks conditions only if some sleep.
    final let releaseWork = _ReleaseWork()
    /// Whether the state is promised to a granted thread. Set with the state held exclusively, so
    /// a thread holding it reads it right; cleared when the grantee takes the state up, or gives up.
    @usableFromInline final let _isReserved = Atomic<Bool>(false)
    /// Counts the grants that ended: what an access that backs off for a grantee sleeps on
    /// (`_Engine._backOffForGrantee`).
    private final let _grantsEnded: UnsafeMutablePointer<Atomic<UInt32>> = {
        let word = UnsafeMutablePointer<Atomic<UInt32>>.allocate(capacity: 1)
        word.initialize(to: Atomic(0))
        return word
    }()

    /// Where timeouts of awaited and submitted accesses fire: a queue of our own, so that a timer
    /// fires on time even when every thread of the global pool is blocked.
    private static var _timers: DispatchQueue { _timerQueue }

    init() {}

    deinit {
        _lock.destroy()
        _grantsEnded.deinitialize(count: 1)
        _grantsEnded.deallocate()
    }

    // MARK: - Policy

    /// Whether a woken thread, holding the state again, may run: its condition checked again,
    /// since another access may have taken what it waited for.
    func stillHolds(_ condition: (State) -> Bool, _ state: State) -> Bool {
        condition(state)
    }

    /// How many times a blocked thread may be woken and find its condition false again before it
    /// is granted the state.
    var lossesBeforeGrant: Int { 2 }

    /// Whether a woken thread that gave up before it could take the state back has the other
    /// waiters checked in its place.
    var rechecksForAThreadThatGaveUp: Bool { true }

    /// A cancelled awaited access leaves the line, and hears `CancellationError`.
    func cancel(_ waiter: _Waiter<State>) {
        abandon(waiter, with: CancellationError())
    }

    /// Whether the state is promised to a granted thread; read with the state held exclusively.
    @inlinable final var isReserved: Bool { _isReserved.load(ordering: .relaxed) }

    // MARK: - Blocked threads

    /// Adds a thread that found its condition false; call with the state held exclusively.
    final func enqueue(_ waiter: _Waiter<State>) {
        _lock.lock()
        _waiters.append(waiter)
        releaseWork.sleeperArrives()
        _lock.unlock()
    }

    /// Called by a woken or granted thread that now holds the state: whether the promise it was
    /// granted (if any) is its own, which it now takes up.
    final func takeGrant(_ waiter: _Waiter<State>) -> Bool {
        _lock.lock()
        defer { _lock.unlock() }
        guard _grantee === waiter else { return false }
        _endGrant()
        return true
    }

    /// A thread holding the state found its condition true and will run, or gives up;
    /// either way it leaves the list. If it was granted the state without taking it up, the grant
    /// ends too.
    final func leave(_ waiter: _Waiter<State>) {
        _lock.lock()
        _remove(waiter)
        _lock.unlock()
    }

    /// A thread holding the state found its condition false again: it waits again in its place.
    final func waitAgain(_ waiter: _Waiter<State>) {
        _lock.lock()
        waiter.losses += 1
        waiter.status = .waiting
        releaseWork.sleeperArrives()
        _lock.unlock()
    }

    /// A blocked thread's wait timed out. Returns true if it left the list without having been
    /// woken; false if a wake-up is on its way (the caller must then take it and check again).
    final func timeOut(_ waiter: _Waiter<State>) -> Bool {
        _lock.lock()
        defer { _lock.unlock() }
        guard waiter.status == .waiting else { return false }
        _remove(waiter)
        return true
    }

    final func _remove(_ waiter: _Waiter<State>) {
        if waiter.status == .granted, _grantee === waiter { _endGrant() }
        if waiter.status == .waiting { releaseWork.sleeperLeaves() }
        waiter.status = .done
        waiter.clear()
        if let index = _waiters.firstIndex(where: { $0 === waiter }) { _waiters.remove(at: index) }
    }

    /// The grant ends: the state is no longer promised, and accesses that back off for the grantee
    /// are woken. Call under the list's lock.
    private final func _endGrant() {
        _grantee = nil
        _isReserved.store(false, ordering: .sequentiallyConsistent)
        _grantsEnded.pointee.add(1, ordering: .sequentiallyConsistent)
        exclusion_word_changed(_grantsWord)
    }

    /// The word that `_grantsEnded` is, for the system's sleep and wake calls.
    final var _grantsWord: UnsafeMutablePointer<UInt32> {
        UnsafeMutableRawPointer(_grantsEnded).assumingMemoryBound(to: UInt32.self)
    }

    /// The count of ended grants that an access which found the state promised must see change,
    /// read with the state held; nil if the grant has ended already (a grantee that gave up ends it
    /// without the state). No lock: a grant ends by clearing `_isReserved` and then counting, so
    /// if `_isReserved` is still set after the count was read, the count will change.
    @inline(__always) final func grantToWaitFor() -> UInt32? {
        let ended = _grantsEnded.pointee.load(ordering: .sequentiallyConsistent)
        return _isReserved.load(ordering: .sequentiallyConsistent) ? ended : nil
    }

    /// The granted thread, if a grant runs: what an access that backs off for it lends priority
    /// to, where locks lend priority.
    final var granteeThread: pthread_t? {
        _lock.lock()
        defer { _lock.unlock() }
        return _grantee?.thread
    }

    // MARK: - Awaited and asynchronous accesses

    /// Looks at a pending awaited or asynchronous access, with the state held exclusively: if its
    /// condition holds, returns its body to run now; otherwise it joins the list. Returns nil too
    /// if it was abandoned meanwhile.
    final func check(
        _ waiter: _Waiter<State>, _ state: UnsafeMutablePointer<State>
    ) -> (@Sendable (inout sending State, inout Outbox) -> Void)? {
        _lock.lock()
        if waiter.isObserver, _observationsEnded {
            _lock.unlock()
            abandon(waiter, with: _ObservationEnded())
            return nil
        }
        defer { _lock.unlock() }
        guard waiter.status == .pending, let condition = waiter.condition else { return nil }
        if condition(state.pointee) {
            let run = waiter.run
            waiter.status = .done
            waiter.clear()
            return run
        }
        waiter.status = .waiting
        _waiters.append(waiter)
        releaseWork.sleeperArrives()
        return nil
    }

    /// Ends a pending or waiting awaited or asynchronous access without running it, delivering
    /// `error`: a timeout, a cancellation. Does nothing if it already ran or ended.
    final func abandon(_ waiter: _Waiter<State>, with error: any Error) {
        abandon(waiter) { _ in error }
    }

    /// The same, with the error made from the status the waiter had (pending or waiting).
    final func abandon(_ waiter: _Waiter<State>, with error: (_Waiter<State>.Status) -> any Error) {
        _lock.lock()
        guard waiter.status == .pending || waiter.status == .waiting else {
            _lock.unlock()
            return
        }
        let error = error(waiter.status)
        let fail = waiter.fail
        if fail == nil { waiter.abandonedWith = error }
        _remove(waiter)
        _lock.unlock()
        fail?(error)
    }

    /// Ends every observer waiting, and every one to come, with `_ObservationEnded`: the public
    /// instance went away, so no access will change the state again.
    final func endObservations() {
        _lock.lock()
        _observationsEnded = true
        let observers = _waiters.filter(\.isObserver)
        _lock.unlock()
        for observer in observers { abandon(observer, with: _ObservationEnded()) }
    }

    /// Whether the public instance went away (a quick look; `arm` and `check` decide under the lock).
    final var observationsEnded: Bool {
        _lock.lock()
        defer { _lock.unlock() }
        return _observationsEnded
    }

    /// Ends every waiter still in the list with `error`; called when the instance goes away.
    final func abandonAll(with error: any Error) {
        _lock.lock()
        let waiters = _waiters
        _lock.unlock()
        for waiter in waiters where !waiter.isThread { abandon(waiter, with: error) }
    }

    /// Sets up an awaited access's closures once its continuation exists. Returns the error it was
    /// abandoned with if that happened first (then it must not be submitted).
    final func arm(
        _ waiter: _Waiter<State>, run: @escaping @Sendable (inout sending State, inout Outbox) -> Void,
        fail: @escaping @Sendable (any Error) -> Void
    ) -> (any Error)? {
        _lock.lock()
        defer { _lock.unlock() }
        if let error = waiter.abandonedWith { return error }
        if waiter.isObserver, _observationsEnded { return _ObservationEnded() }
        waiter.run = run
        waiter.fail = fail
        return nil
    }

    /// Starts a timer that abandons `waiter` when `limit` passes, with the `TimeoutError` for what it
    /// still waits for: the state if it hasn't looked at it yet, its condition if it has.
    final func startTimer(for waiter: _Waiter<State>, _ limit: _TimeLimit, label: String) {
        let timer = DispatchSource.makeTimerSource(queue: Self._timers)
        timer.schedule(deadline: limit.deadline.dispatchTime)
        timer.setEventHandler { [weak self, weak waiter] in
            guard let self, let waiter else { return }
            self.abandon(waiter) { status in
                limit.error(on: label, waitingFor: status == .pending ? .stateHeld : .conditionFalse)
            }
        }
        // Active before anything can cancel it: libdispatch must not release an inactive source.
        timer.activate()
        _lock.lock()
        let isLive = waiter.status == .pending || waiter.status == .waiting
        if isLive { waiter.timer = timer }
        _lock.unlock()
        if !isLive { timer.cancel() }
    }

    // MARK: - Serving

    /// Checks the waiters' conditions in order, with the state held exclusively by the calling
    /// thread, which is about to release it after an access that may have changed it. Wakes or
    /// grants the first blocked thread whose condition holds, and returns the body of the first
    /// awaited or asynchronous access whose condition holds, to run now; nil when there is none, or
    /// once the state is promised to a granted thread.
    ///
    /// The caller runs each body returned and asks again, since the body changed the state.
    /// `woken` receives the semaphore of the thread to wake: the caller signals it once it has
    /// released the state, so that the thread doesn't wake only to wait for the lock. `joiner` is a
    /// thread that has just joined the list after finding its condition false with the state held:
    /// looking at it again in the same release would be wasted.
    func nextReady(
        _ state: UnsafeMutablePointer<State>, woken: inout DispatchSemaphore?, skipping joiner: _Waiter<State>?
    ) -> (@Sendable (inout sending State, inout Outbox) -> Void)? {
        let grantAfter = lossesBeforeGrant
        _lock.lock()
        defer { _lock.unlock() }
        for waiter in _waiters where waiter.status == .waiting && waiter !== joiner {
            guard !(woken != nil && waiter.isThread), let condition = waiter.condition, condition(state.pointee)
            else { continue }
            guard let semaphore = waiter.semaphore else {
                let run = waiter.run
                _remove(waiter)
                return run
            }
            woken = semaphore
            if waiter.losses >= grantAfter {
                waiter.status = .granted
                releaseWork.sleeperLeaves()
                _grantee = waiter
                _isReserved.store(true, ordering: .relaxed)
                return nil  // promised: nothing else may change the state before it runs
            }
            waiter.status = .woken
            releaseWork.sleeperLeaves()
        }
        return nil
    }
}

/// The queue every instance's timeouts fire on.
private let _timerQueue = DispatchQueue(label: "Exclusion timeouts")

/// What an observer's wait ends with when the public instance has gone away.
struct _ObservationEnded: Error {}
