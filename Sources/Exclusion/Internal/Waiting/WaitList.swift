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
/// Who waits is a `_WaitLine`, a value whose transitions say what to do; this class holds it
/// under `_lock`, evaluates the conditions the line asks about, and carries out its actions.
/// `_mutate` is the one place that publishes what releases and accesses read without the lock:
/// the count of sleepers (`_ReleaseWork`) and whether the state is promised (`_Flags.reserved`, and
/// `_grantsEnded` to sleep on until a grant ends).
@usableFromInline
final class _WaitList<State>: @unchecked Sendable {
    // @unchecked: `_line` is only touched while `_lock` is held; the atomics are read without it,
    // as hints or with the orderings `_mutate` documents.

    typealias Line = _WaitLine<_Sleeper, _WaitingJob>
    typealias Action = _WaitAction<_Sleeper, _WaitingJob>

    let _lock = _Lock.standalone()
    private var _line = Line()
    /// The instance's words, in which the list counts its sleepers (waiters in the list not woken
    /// or granted; a release checks conditions only if some sleep) and marks the grant.
    let releaseWork: _ReleaseWork
    /// False once the instance has gone (`detach`): a timer that fires late still changes the
    /// line, but no longer the words, which went with the instance. Only touched under `_lock`.
    private var _attached = true
    /// Counts the grants that ended: what an access that backs off for a grantee sleeps on
    /// (`_Engine._backOffForGrantee`).
    let _grantsEnded: UnsafeMutablePointer<exclusion_change_word> = {
        let word = UnsafeMutablePointer<exclusion_change_word>.allocate(capacity: 1)
        word.initialize(to: exclusion_change_word())
        return word
    }()

    init(_ releaseWork: _ReleaseWork) {
        self.releaseWork = releaseWork
    }

    deinit {
        _lock.deallocate()
        _grantsEnded.deinitialize(count: 1)
        _grantsEnded.deallocate()
    }

    /// Runs a transition of the line under the lock, and publishes what it changed before letting
    /// go: the sleepers' count, and the grant.
    private func _mutate<R>(_ transition: (inout Line) -> R) -> R {
        _lock.lock()
        defer { _lock.unlock() }
        let sleepers = _line.sleepers
        let granted = _line.grantee != nil
        let result = transition(&_line)
        guard _attached else { return result }
        if _line.sleepers > sleepers { releaseWork.sleepersArrive(_line.sleepers - sleepers) }
        if _line.sleepers < sleepers { releaseWork.sleepersLeave(sleepers - _line.sleepers) }
        switch (granted, _line.grantee != nil) {
        case (false, true):
            releaseWork.reserve()
        case (true, false):
            // Cleared, then counted: an access that read the count and then found the flag set
            // will see the count change (`grantToWaitFor`).
            releaseWork.endReservation()
            exclusion_change_word_bump(_grantsEnded)
        default:
            break
        }
        return result
    }

    /// The instance is going: nothing may touch its words from now on. Call after `endAll`.
    func detach() {
        _lock.lock()
        _attached = false
        _lock.unlock()
    }

    func _look<R>(_ body: (Line) -> R) -> R {
        _lock.lock()
        defer { _lock.unlock() }
        return body(_line)
    }

    // MARK: - Blocked threads

    /// Adds the calling thread, which found its condition false; call with the state held
    /// exclusively.
    func sleep(_ sleeper: _Sleeper) -> _WaiterID { _mutate { $0.threadSleeps(sleeper) } }

    /// Called by a woken or granted thread that now holds the state: whether the promise it was
    /// granted (if any) is its own, which it now takes up.
    func takeGrant(_ id: _WaiterID) -> Bool { _mutate { $0.threadTakesUpItsGrant(id) } }

    /// A thread holding the state found its condition true and will run, or gives up; either way
    /// it leaves the list, and a grant it held ends.
    func leave(_ id: _WaiterID) { _mutate { $0.threadLeaves(id) } }

    /// A thread holding the state found its condition false again: it waits again in its place.
    func sleepAgain(_ id: _WaiterID) { _mutate { $0.threadSleepsAgain(id) } }

    /// A blocked thread's wait timed out. Returns true if it left the list without having been
    /// woken; false if a wake-up is on its way (the caller must then take it and check again).
    func timeOut(_ id: _WaiterID) -> Bool { _mutate { $0.threadTimesOut(id) } }

    /// The count of ended grants that an access which found the state promised must see change,
    /// read with the state held; nil if the grant has ended already (a grantee that gave up ends it
    /// without the state). No lock: a grant ends by clearing `reserved` and then counting, so
    /// if `reserved` is still set after the count was read, the count will change.
    @inline(__always) func grantToWaitFor() -> UInt32? {
        let ended = exclusion_change_word_load(_grantsEnded)
        return releaseWork.isReservedOrdered ? ended : nil
    }

    /// Lends the calling thread's priority to the granted thread, if a grant runs, where locks lend
    /// priority: what an access that backs off for it does while it waits. The loan starts under
    /// the list's lock, while the grantee is in the list and so can't have ended (it leaves the
    /// list under this lock before it returns); the loan then holds the thread itself, so it may
    /// end after the thread has.
    func lendPriorityToGrantee() -> exclusion_priority_loan? {
        _look { line in line.granteeSleeper.flatMap { exclusion_lend_priority($0.thread) } }
    }

    // MARK: - Serving

    /// The next waiter to serve, in order, with the state held exclusively by the calling thread,
    /// which is about to release it after an access that may have changed it: `.run`, the body of
    /// an awaited or asynchronous access whose condition holds, to run now (the caller then asks
    /// again, since the body changed the state), or `.wake`, a blocked thread whose condition
    /// holds, woken or granted the state, which the caller wakes once it has released
    /// the state, so that the thread doesn't wake only to wait for the lock. Blocked threads only
    /// if `mayWake`; `joiner` is a thread that has just joined after finding its condition false.
    func nextReady(
        _ state: UnsafeMutablePointer<State>, mayWake: Bool, skipping joiner: _WaiterID?
    ) -> _Served {
        let state = UnsafeMutableRawPointer(state)
        return _mutate { line -> _Served in
            var ready: _WaiterID?
            for candidate in line.candidates(mayWake: mayWake, skipping: joiner) {
                let holds: Bool
                switch candidate.entry {
                case .job(let job, _): holds = job.condition(state)
                case .thread(let sleeper, _, _): holds = sleeper.condition(state)
                }
                if holds {
                    ready = candidate.id
                    break
                }
            }
            // Served once the look is over, so that the line's entries aren't copied to change one.
            guard let ready else { return .nothing }
            switch line.serve(ready) {
            case .run(let job):
                job.timer?.cancel()
                return .run(job.run)
            case .wake(let sleeper, let granted):
                return .wake(_Wakeup(sleeper.word), granted: granted)
            case .fail, .none:
                return .nothing
            }
        }
    }
}

/// What `_WaitList.nextReady` found to serve: only what the releasing thread needs, so that the
/// job's other closures (which may belong to a suspended caller's frame) go with the line's copy,
/// and a sleeper's condition, which belongs to the sleeping thread's frame, stays in the line.
enum _Served {
    case nothing
    /// An awaited or asynchronous access's body, to run now with the state held.
    case run(_WaitingJob.Run)
    /// A blocked thread to wake once the state is released; `granted` if it was promised the state.
    case wake(_Wakeup, granted: Bool)
}

// MARK: - Awaited and asynchronous accesses

extension _WaitList {
    /// Names an awaited or asynchronous access about to be set up, for what happens to it next.
    /// `looked`: it held the state and found its condition false already.
    func expect(observer: Bool = false, looked: Bool = false) -> _WaiterID {
        _mutate { $0.expectJob(observer: observer, looked: looked) }
    }

    /// The access is set up: whether it waits for its turn now. If it was cancelled or timed out
    /// meanwhile, or observes an instance that went away, it fails instead (and must not be
    /// submitted).
    func arrive(_ id: _WaiterID, _ job: _WaitingJob) -> Bool {
        let failure = _mutate { line in Self._failure(line.jobArrives(id, job)) }
        guard let failure else { return true }
        failure()
        return false
    }

    /// Looks at an access whose turn came, with the state held exclusively: if its condition
    /// holds, returns its body to run now; otherwise it joins the list. Returns nil too if it
    /// ended meanwhile.
    func check(_ id: _WaiterID, _ state: UnsafeMutablePointer<State>) -> _WaitingJob.Run? {
        let state = UnsafeMutableRawPointer(state)
        let (run, failure) = _mutate { line -> (_WaitingJob.Run?, (@Sendable () -> Void)?) in
            let holds = line.jobInTurn(id).map { $0.condition(state) } ?? false
            let action = line.jobLooked(id, conditionHolds: holds)
            guard case .run(let job) = action else { return (nil, Self._failure(action)) }
            job.timer?.cancel()
            return (job.run, nil)
        }
        failure?()
        return run
    }

    /// Ends an access that hasn't run, wherever it is, for `failure`; does nothing if it ran or
    /// ended already.
    func end(_ id: _WaiterID, _ failure: _WaitFailure) {
        _mutate { line in Self._failure(line.jobEnds(id, failure)) }?()
    }

    /// Ends every observer waiting, and every one to come, with `_ObservationEnded`: the public
    /// instance went away, so no access will change the state again.
    func endObservations() {
        let failures = _mutate { line in line.endObservations().map { Self._failure(.fail($0, .observationEnded)) } }
        for failure in failures { failure?() }
    }

    /// Whether the public instance went away (a quick look; `arrive` and `check` decide under the
    /// lock).
    var observationsEnded: Bool { _look(\.observationsEnded) }

    /// Ends every access still waiting with `CancellationError`; called when the engine goes away.
    func endAll() {
        let failures = _mutate { line in line.endJobs().map { Self._failure(.fail($0, .cancelled)) } }
        for failure in failures { failure?() }
    }

    /// Starts a timer that ends the access `id` when `limit` passes, with the `TimeoutError` for
    /// what it still waits for: the state if it hasn't looked at it yet, its condition if it has.
    func startTimer(for id: _WaiterID, _ limit: _TimeLimit, label: String) -> _JobTimer {
        let timer = DispatchSource.makeTimerSource(queue: _timerQueue)
        timer.schedule(deadline: limit.deadline.dispatchTime)
        timer.setEventHandler { [weak self] in self?.end(id, .timedOut(conditionFalse: false)) }
        // Active before anything can cancel it: libdispatch must not release an inactive source.
        timer.activate()
        return _JobTimer(source: timer, limit: limit, label: label)
    }

    /// What a job's failure leaves to do once the lock is let go: deliver its error. Made under
    /// the lock, where the job is dropped: the delivery holds the job's `fail` and nothing else,
    /// since the job's condition and body may belong to the frame of a caller that the delivery
    /// lets go on (an awaited access's closures, made escaping only while it waits).
    private static func _failure(_ action: Action) -> (@Sendable () -> Void)? {
        guard case .fail(let job, let failure) = action else { return nil }
        job.timer?.cancel()
        let fail = job.fail
        let error = failure.error(job.timer)
        return { fail(error) }
    }
}

extension _WaitFailure {
    /// The error the job hears, for a job whose time limit (if any) `timer` keeps.
    func error(_ timer: _JobTimer?) -> any Error {
        switch self {
        case .timedOut(let conditionFalse):
            guard let timer else { return CancellationError() }  // only a job's timer ends it for time
            return timer.limit.error(on: timer.label, waitingFor: conditionFalse ? .conditionFalse : .stateHeld)
        case .cancelled:
            return CancellationError()
        case .observationEnded:
            return _ObservationEnded()
        }
    }
}

/// The queue every instance's timeouts fire on: a queue of our own, so that a timer fires on time
/// even when every thread of the global pool is blocked.
private let _timerQueue = DispatchQueue(label: "Exclusion timeouts")

/// What an observer's wait ends with when the public instance has gone away.
struct _ObservationEnded: Error {}
