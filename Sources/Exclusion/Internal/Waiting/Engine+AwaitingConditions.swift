import Dispatch
import ExclusionShims
import Synchronization

// MARK: - Awaiting a condition, or submitting work that waits for one

extension _Engine {
    /// Runs `body` with the state held exclusively once `condition` holds, suspending until then.
    /// Throws `TimeoutError` past `timeout` and `CancellationError` if the task is cancelled before
    /// `body` starts; either way `body` doesn't run.
    nonisolated(nonsending) func awaitExclusively<R: Sendable>(
        attempting attempted: String, when condition: @Sendable (State) -> Bool, timeout: Duration?,
        _ body: @Sendable (inout sending State) throws -> R
    ) async throws -> R {
        let limit = timeout.map(_TimeLimit.init)
        let thread = _CurrentThread()
        checkBeforeNotWaiting(thread, .awaited, shared: false, attempting: attempted)
        try Task.checkCancellation()
        var looked = false
        if let outbox = tryTakeExclusively(thread) {
            if condition(_state.pointee) {
                defer { releaseExclusively(thread, outbox) }
                return try body(&_state.pointee)
            }
            releaseExclusively(thread, outbox)
            looked = true
        }
        return try await _awaitCondition(condition, limit, looked: looked, body)
    }

    /// Runs `body` with the state held once `condition` holds, suspending until then: shared if it
    /// holds at once, otherwise exclusively once an exclusive access made it hold. Throws as
    /// `awaitExclusively`.
    nonisolated(nonsending) func awaitShared<R: Sendable>(
        attempting attempted: String, when condition: @Sendable (State) -> Bool, timeout: Duration?,
        _ body: @Sendable (State) throws -> R
    ) async throws -> R {
        let limit = timeout.map(_TimeLimit.init)
        let thread = _CurrentThread()
        // Shared only if the condition holds at once: to the explorer it may change the state.
        checkBeforeNotWaiting(thread, .awaited, shared: false, attempting: attempted)
        try Task.checkCancellation()
        var looked = false
        if let ticket = tryTakeShared(thread) {
            if condition(_state.pointee) { return try _runShared(thread, holding: ticket, body) }
            _lock.unlockShared(ticket)
            looked = true
        }
        return try await _awaitCondition(condition, limit, looked: looked) { (state: inout sending State) throws -> R in
            try body(state)
        }
    }

    nonisolated(nonsending) func _awaitCondition<R: Sendable>(
        _ condition: @Sendable (State) -> Bool, _ limit: _TimeLimit?, observer: Bool = false, looked: Bool = false,
        _ body: @Sendable (inout sending State) throws -> R
    ) async throws -> R {
        let result: Result<R, any Error> = await withoutActuallyEscaping(condition) { condition in
            await withoutActuallyEscaping(body) { body in
                let waiter = _withWaitList { $0.expect(observer: observer, looked: looked) }
                return await withTaskCancellationHandler {
                    await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<R, any Error>, Never>) in
                        _scheduledTaskWait(canTimeOut: limit != nil)  // schedule seam
                        let observed = observer ? nil : _observeWait(.suspendedTask, at: .none, .profile)
                        let profile = observed?.isProfiled == true ? _ConditionWaitStart() : nil
                        let job = _WaitingJob(
                            condition: condition,
                            run: { state, deliveries in
                                if let since = profile?.since { self._record(.condition, at: .none, since: since) }
                                let result: Result<R, any Error>
                                do { result = .success(try body(&state)) } catch { result = .failure(error) }
                                deliveries.runAfterRelease { continuation.resume(returning: result) }
                            },
                            fail: { error in continuation.resume(returning: .failure(error)) },
                            timer: limit.map { limit in
                                _withWaitList { $0.startTimer(for: waiter, limit, label: label) }
                            })
                        if _withWaitList({ $0.arrive(waiter, job) }) { _enqueueTurn(of: waiter, profile: profile) }
                    }
                } onCancel: {
                    _withWaitList { $0.end(waiter, .cancelled) }
                }
            }
        }
        return try result.get()
    }

    /// Runs `body` with the state held exclusively once `condition` holds, later, and delivers its
    /// result on `queue`, or a `TimeoutError` past `timeout` without running it.
    func submit<R: Sendable>(
        attempting attempted: String, when condition: @escaping @Sendable (State) -> Bool, timeout: Duration?,
        _ body: @escaping @Sendable (inout sending State) throws -> R, deliverOn queue: DispatchQueue,
        completion: @escaping @Sendable (Result<R, any Error>) -> Void
    ) {
        checkBeforeNotWaiting(_CurrentThread(), .submitting, shared: false, attempting: attempted)
        let waiter = _withWaitList { $0.expect() }
        let job = _WaitingJob(
            condition: condition, run: _delivering(body, on: queue, to: completion),
            fail: { error in queue.async { completion(.failure(error)) } },
            timer: timeout.map { timeout in
                _withWaitList { $0.startTimer(for: waiter, _TimeLimit(timeout), label: label) }
            })
        if _withWaitList({ $0.arrive(waiter, job) }) { _enqueueTurn(of: waiter) }
    }

    /// Puts an access that has arrived in line for its turn: then, with the state held
    /// exclusively, it runs if its condition holds, and otherwise joins the wait list. Its timer,
    /// if any, ends it wherever it is by then.
    ///
    /// With a `profile` (a contention profile runs, and the access is not an observer), the wait
    /// for the turn is recorded as a task's wait for the lock if the condition then holds, and
    /// the whole wait as a wait for the condition if it doesn't.
    func _enqueueTurn(of waiter: _WaiterID, profile: _ConditionWaitStart? = nil) {
        guard let profile else {
            return _enqueue(
                .closure(isShared: false) { deliveries in
                    if let run = self._withWaitList({ $0.check(waiter, self._state) }) { run(self._state, &deliveries) }
                })
        }
        let start = _lockWaitBegins(at: .none)
        _enqueue(
            .closure(isShared: false) { deliveries in
                self._releaseWork.profiledWaiterLeaves()
                if let run = self._withWaitList({ $0.check(waiter, self._state) }) {
                    self._recordWait(.suspendedTask, at: .none, since: start)
                    run(self._state, &deliveries)
                } else {
                    profile.since = start
                }
            })
    }

}

// MARK: - Shared access without waiting

extension _Engine {
    /// Runs `body` with the state held shared if no exclusive access holds it or waits for it; nil
    /// otherwise. Work submitted earlier counts as an exclusive access waiting: if there is some,
    /// `body` runs after it under exclusive access if that can be had at once.
    @usableFromInline
    func sharedIfAvailable<R, E: Error>(_ thread: _CurrentThread, _ body: (State) throws(E) -> R) throws(E) -> R? {
        if let ticket = tryTakeShared(thread) { return try _runShared(thread, holding: ticket, body) }
        guard _releaseWork.hasJobs, let outbox = tryTakeExclusively(thread) else { return nil }
        defer { releaseExclusively(thread, outbox) }
        return try body(_state.pointee)
    }
}
