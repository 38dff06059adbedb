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
/// Its state is a `_WaitLine`, changed under `_lock` by transitions that return their effects;
/// `_mutate` carries those out, the one place the sleepers' count and the grant's flag change.
@usableFromInline
final class _WaitList<State>: @unchecked Sendable {
    // @unchecked: `_line` and every waiter's fields are only touched while `_lock` is held; the
    // atomics are read without it, as hints or with the orderings `_apply` documents.

    let _lock = _Lock()
    private var _line = _WaitLine<State>()
    /// The word every exclusive release reads, in which the list counts its sleepers (waiters in
    /// the list not woken or granted): a release checks conditions only if some sleep.
    let releaseWork = _ReleaseWork()
    /// Whether the state is promised to a granted thread. Set with the state held exclusively, so
    /// a thread holding it reads it right; cleared when the grantee takes the state up, or leaves.
    @usableFromInline let _isReserved = Atomic<Bool>(false)
    /// Counts the grants that ended: what an access that backs off for a grantee sleeps on
    /// (`_Engine._backOffForGrantee`).
    private let _grantsEnded: UnsafeMutablePointer<Atomic<UInt32>> = {
        let word = UnsafeMutablePointer<Atomic<UInt32>>.allocate(capacity: 1)
        word.initialize(to: Atomic(0))
        return word
    }()

    init() {}

    deinit {
        _lock.destroy()
        _grantsEnded.deinitialize(count: 1)
        _grantsEnded.deallocate()
    }

    /// Runs a transition of the line under the lock, and carries out its effects before letting go.
    private func _mutate<R>(_ transition: (inout _WaitLine<State>) -> (R, _WaitEffects)) -> R {
        _lock.lock()
        defer { _lock.unlock() }
        let (result, effects) = transition(&_line)
        if effects.sleepers > 0 { releaseWork.sleepersArrive(effects.sleepers) }
        if effects.sleepers < 0 { releaseWork.sleepersLeave(-effects.sleepers) }
        switch effects.grant {
        case .made?:
            _isReserved.store(true, ordering: .relaxed)
        case .ended?:
            // Cleared, then counted: an access that read the count and then found the flag set
            // will see the count change (`grantToWaitFor`).
            _isReserved.store(false, ordering: .sequentiallyConsistent)
            _grantsEnded.pointee.add(1, ordering: .sequentiallyConsistent)
            exclusion_word_changed(_grantsWord)
        case nil:
            break
        }
        return result
    }

    func _look<R>(_ body: (_WaitLine<State>) -> R) -> R {
        _lock.lock()
        defer { _lock.unlock() }
        return body(_line)
    }

    // MARK: - Blocked threads

    /// Adds a thread that found its condition false; call with the state held exclusively.
    func enqueue(_ waiter: _Waiter<State>) { _mutate { ((), $0.join(waiter)) } }

    /// Called by a woken or granted thread that now holds the state: whether the promise it was
    /// granted (if any) is its own, which it now takes up.
    func takeGrant(_ waiter: _Waiter<State>) -> Bool {
        _mutate { line in line.grantee === waiter ? (true, line.endGrant()) : (false, _WaitEffects()) }
    }

    /// A thread holding the state found its condition true and will run, or gives up; either way
    /// it leaves the list, and a grant it held ends.
    func leave(_ waiter: _Waiter<State>) { _mutate { ((), $0.remove(waiter)) } }

    /// A thread holding the state found its condition false again: it waits again in its place.
    func waitAgain(_ waiter: _Waiter<State>) { _mutate { ((), $0.waitAgain(waiter)) } }

    /// A blocked thread's wait timed out. Returns true if it left the list without having been
    /// woken; false if a wake-up is on its way (the caller must then take it and check again).
    func timeOut(_ waiter: _Waiter<State>) -> Bool {
        _mutate { line in waiter.status == .waiting ? (true, line.remove(waiter)) : (false, _WaitEffects()) }
    }

    /// Whether the state is promised to a granted thread; read with the state held exclusively.
    @inlinable var isReserved: Bool { _isReserved.load(ordering: .relaxed) }

    /// The word that `_grantsEnded` is, for the system's sleep and wake calls.
    var _grantsWord: UnsafeMutablePointer<UInt32> {
        UnsafeMutableRawPointer(_grantsEnded).assumingMemoryBound(to: UInt32.self)
    }

    /// The count of ended grants that an access which found the state promised must see change,
    /// read with the state held; nil if the grant has ended already (a grantee that gave up ends it
    /// without the state). No lock: a grant ends by clearing `_isReserved` and then counting, so
    /// if `_isReserved` is still set after the count was read, the count will change.
    @inline(__always) func grantToWaitFor() -> UInt32? {
        let ended = _grantsEnded.pointee.load(ordering: .sequentiallyConsistent)
        return _isReserved.load(ordering: .sequentiallyConsistent) ? ended : nil
    }

    /// Lends the calling thread's priority to the granted thread, if a grant runs, where locks lend
    /// priority: what an access that backs off for it does while it waits. The loan starts under
    /// the list's lock, while the grantee is in the list and so can't have ended (it leaves the
    /// list under this lock before it returns); the loan then holds the thread itself, so it may
    /// end after the thread has.
    func lendPriorityToGrantee() -> exclusion_priority_loan? {
        _look { line in line.grantee?.thread.flatMap { exclusion_lend_priority($0) } }
    }

    // MARK: - Serving

    /// The next waiter to serve, in order, with the state held exclusively by the calling thread,
    /// which is about to release it after an access that may have changed it: the body of an
    /// awaited or asynchronous access whose condition holds, to run now (the caller then asks again,
    /// since the body changed the state), or a blocked thread whose condition holds, woken or
    /// granted the state, whose semaphore the caller signals once it has released the state, so
    /// that the thread doesn't wake only to wait for the lock. Blocked threads only if `mayWake`;
    /// `joiner` is a thread that has just joined after finding its condition false.
    func nextReady(
        _ state: UnsafeMutablePointer<State>, mayWake: Bool, skipping joiner: _Waiter<State>?
    ) -> _Served<State> {
        _mutate { $0.nextReady(state.pointee, mayWake: mayWake, skipping: joiner) }
    }
}

// MARK: - Awaited and asynchronous accesses

extension _WaitList {
    /// Looks at a pending awaited or asynchronous access, with the state held exclusively: if its
    /// condition holds, returns its body to run now; otherwise it joins the list. Returns nil too
    /// if it was abandoned meanwhile.
    func check(_ waiter: _Waiter<State>, _ state: UnsafeMutablePointer<State>) -> _Waiter<State>.Job? {
        // Under one lock with the joining, so that an observer can't join after observations ended.
        let (run, ended): (_Waiter<State>.Job?, Bool) = _mutate { line in
            if waiter.isObserver, line.observationsEnded { return ((nil, true), _WaitEffects()) }
            let (run, effects) = line.check(waiter, state.pointee)
            return ((run, false), effects)
        }
        if ended { abandon(waiter, with: _ObservationEnded()) }
        return run
    }

    /// Ends a pending or waiting awaited or asynchronous access without running it, delivering
    /// `error`: a timeout, a cancellation. Does nothing if it already ran or ended.
    func abandon(_ waiter: _Waiter<State>, with error: any Error) {
        abandon(waiter) { _ in error }
    }

    /// The same, with the error made from the status the waiter had (pending or waiting).
    func abandon(_ waiter: _Waiter<State>, with error: (_Waiter<State>.Status) -> any Error) {
        let failure: (fail: (@Sendable (any Error) -> Void)?, error: any Error)? = _mutate { line in
            guard waiter.status == .pending || waiter.status == .waiting else { return (nil, _WaitEffects()) }
            let failure = (fail: waiter.fail, error: error(waiter.status))
            if failure.fail == nil { waiter.abandonedWith = failure.error }
            return (failure, line.remove(waiter))
        }
        if let failure, let fail = failure.fail { fail(failure.error) }
    }

    /// A cancelled awaited access leaves the line, and hears `CancellationError`.
    func cancel(_ waiter: _Waiter<State>) {
        abandon(waiter, with: CancellationError())
    }

    /// Ends every observer waiting, and every one to come, with `_ObservationEnded`: the public
    /// instance went away, so no access will change the state again.
    func endObservations() {
        for observer in _mutate({ ($0.endObservations(), _WaitEffects()) }) {
            abandon(observer, with: _ObservationEnded())
        }
    }

    /// Whether the public instance went away (a quick look; `arm` and `check` decide under the lock).
    var observationsEnded: Bool { _look(\.observationsEnded) }

    /// Ends every waiter still in the list with `error`; called when the instance goes away.
    func abandonAll(with error: any Error) {
        for waiter in _look(\.waiters) where !waiter.isThread { abandon(waiter, with: error) }
    }

    /// Sets up an awaited access's closures once its continuation exists. Returns the error it was
    /// abandoned with if that happened first (then it must not be submitted).
    func arm(
        _ waiter: _Waiter<State>, run: @escaping _Waiter<State>.Job, fail: @escaping @Sendable (any Error) -> Void
    ) -> (any Error)? {
        _mutate { line in
            if let error = waiter.abandonedWith { return (error, _WaitEffects()) }
            if waiter.isObserver, line.observationsEnded { return (_ObservationEnded(), _WaitEffects()) }
            waiter.run = run
            waiter.fail = fail
            return (nil, _WaitEffects())
        }
    }

    /// Starts a timer that abandons `waiter` when `limit` passes, with the `TimeoutError` for what it
    /// still waits for: the state if it hasn't looked at it yet, its condition if it has.
    func startTimer(for waiter: _Waiter<State>, _ limit: _TimeLimit, label: String) {
        let timer = DispatchSource.makeTimerSource(queue: _timerQueue)
        timer.schedule(deadline: limit.deadline.dispatchTime)
        timer.setEventHandler { [weak self, weak waiter] in
            guard let self, let waiter else { return }
            let looked = waiter.looked
            self.abandon(waiter) { status in
                limit.error(on: label, waitingFor: status == .pending && !looked ? .stateHeld : .conditionFalse)
            }
        }
        // Active before anything can cancel it: libdispatch must not release an inactive source.
        timer.activate()
        let isLive: Bool = _mutate { _ in
            let isLive = waiter.status == .pending || waiter.status == .waiting
            if isLive { waiter.timer = timer }
            return (isLive, _WaitEffects())
        }
        if !isLive { timer.cancel() }
    }
}

/// The queue every instance's timeouts fire on: a queue of our own, so that a timer fires on time
/// even when every thread of the global pool is blocked.
private let _timerQueue = DispatchQueue(label: "Exclusion timeouts")

/// What an observer's wait ends with when the public instance has gone away.
struct _ObservationEnded: Error {}
