import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - Backing off for a granted waiter

extension _Engine {
    /// Called with the lock just taken while the state is promised to a granted waiter: lets go
    /// until that waiter has run. The waiter was woken already, so this lasts a thread wake-up.
    @usableFromInline
    func _backOffForGrantee() {
        repeat {
            // Watch the promise without the lock, so that the grantee finds the lock free.
            _lock.unlockExclusive()
            var spins = 0
            while _waitList.isReserved {
                spins += 1
                if spins < 100 { sched_yield() } else { usleep(20) }
            }
            _lock.lockExclusive()
        } while _waitList.isReserved
    }
}

// MARK: - Blocking until a condition holds

extension _Engine {
    /// Takes the state exclusively once `condition` holds, blocking the thread until then, and
    /// returns the outbox for the access. Throws `TimeoutError` past `timeout`, not holding it.
    @inlinable
    func lockExclusively(
        _ thread: _CurrentThread, when condition: @Sendable (State) -> Bool, timeout: Duration?
    ) throws(TimeoutError) -> Outbox {
        let outbox = lockExclusively(thread)
        if condition(_state.pointee) { return outbox }
        return try _lockExclusivelyWaiting(thread, until: condition, timeout: timeout, outbox)
    }

    /// The rest of `lockExclusively(_:when:timeout:)` once the condition was false: out of line,
    /// so that an access whose condition holds costs what a plain access does.
    @usableFromInline
    func _lockExclusivelyWaiting(
        _ thread: _CurrentThread, until condition: @Sendable (State) -> Bool, timeout: Duration?,
        _ outbox: Outbox
    ) throws(TimeoutError) -> Outbox {
        let result: Result<Outbox, TimeoutError> = withoutActuallyEscaping(condition) { condition in
            Result { () throws(TimeoutError) -> Outbox in try _block(thread, until: condition, timeout, outbox) }
        }
        return try result.get()
    }

    private func _block(
        _ thread: _CurrentThread, until condition: @escaping @Sendable (State) -> Bool, _ timeout: Duration?,
        _ outbox: Outbox
    ) throws(TimeoutError) -> Outbox {
        let waiter = _Waiter<State>(thread: condition)
        let deadline = timeout.map { DispatchTime.now() + .nanoseconds(Int(clamping: _nanoseconds($0))) }
        _waitList.enqueue(waiter)
        unlockExclusively(thread, outbox)
        let semaphore = waiter.semaphore!
        while true {
            if let deadline {
                if semaphore.wait(timeout: deadline) == .timedOut {
                    if _waitList.timeOut(waiter) { throw TimeoutError(label: label, timeout: timeout!) }
                    semaphore.wait()  // a wake-up was sent before the timeout took effect
                }
            } else {
                semaphore.wait()
            }
            _lock.lockExclusive()
            if !_waitList.takeGrant(waiter), _waitList.isReserved { _backOffForGrantee() }
            let outbox = _enteredExclusively(thread)
            if _waitList.faults.contains(.noRecheck) || condition(_state.pointee) {
                _waitList.leave(waiter)
                return outbox
            }
            if let deadline, DispatchTime.now() >= deadline {
                _waitList.leave(waiter)
                unlockExclusively(thread, outbox)
                throw TimeoutError(label: label, timeout: timeout!)
            }
            _waitList.waitAgain(waiter)
            unlockExclusively(thread, outbox)
        }
    }

    /// Runs `body` with the state held shared once `condition` holds, blocking until then: shared
    /// if it holds at once, otherwise exclusively once a write made it hold.
    func read<R>(
        _ thread: _CurrentThread, when condition: @Sendable (State) -> Bool, timeout: Duration?,
        _ body: (State) throws -> R
    ) throws -> R {
        if !_backlog.hasPending {
            let ticket = _lock.lockShared(thread: thread.index)
            if condition(_state.pointee) { return try _read(thread, holding: ticket, body) }
            _lock.unlockShared(ticket)
        }
        let outbox = try lockExclusively(thread, when: condition, timeout: timeout)
        defer { unlockExclusively(thread, outbox) }
        return try body(_state.pointee)
    }
}

// MARK: - Awaiting a condition, or submitting work that waits for one

extension _Engine {
    /// Runs `body` with the state held exclusively once `condition` holds, suspending until then.
    /// Throws `TimeoutError` past `timeout` and `CancellationError` if the task is cancelled before
    /// `body` starts; either way `body` doesn't run.
    func awaitExclusively<R: Sendable>(
        attempting attempted: String, when condition: @Sendable (State) -> Bool, timeout: Duration?,
        _ body: @Sendable (inout sending State) throws -> R
    ) async throws -> R {
        let thread = _CurrentThread()
        checkNotInside(thread, attempting: attempted)
        try Task.checkCancellation()
        if let outbox = tryLockExclusively(thread) {
            if condition(_state.pointee) {
                defer { unlockExclusively(thread, outbox) }
                return try body(&_state.pointee)
            }
            unlockExclusively(thread, outbox)
        }
        return try await _awaitCondition(condition, timeout, body)
    }

    /// Runs `body` with the state held once `condition` holds, suspending until then: shared if it
    /// holds at once, otherwise exclusively once a write made it hold. Throws as `awaitExclusively`.
    func awaitShared<R: Sendable>(
        attempting attempted: String, when condition: @Sendable (State) -> Bool, timeout: Duration?,
        _ body: @Sendable (State) throws -> R
    ) async throws -> R {
        let thread = _CurrentThread()
        checkNotInside(thread, attempting: attempted)
        try Task.checkCancellation()
        if !_backlog.hasPending, let ticket = _lock.tryLockShared(thread: thread.index) {
            if condition(_state.pointee) { return try _read(thread, holding: ticket, body) }
            _lock.unlockShared(ticket)
        }
        return try await _awaitCondition(condition, timeout) { (state: inout sending State) throws -> R in
            try body(state)
        }
    }

    private func _awaitCondition<R: Sendable>(
        _ condition: @Sendable (State) -> Bool, _ timeout: Duration?,
        _ body: @Sendable (inout sending State) throws -> R
    ) async throws -> R {
        let result: Result<R, any Error> = await withoutActuallyEscaping(condition) { condition in
            await withoutActuallyEscaping(body) { body in
                let waiter = _Waiter<State>(job: condition)
                return await withTaskCancellationHandler {
                    await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<R, any Error>, Never>) in
                        let failure = _waitList.arm(
                            waiter,
                            run: { state, deliveries in
                                let result: Result<R, any Error>
                                do { result = .success(try body(&state)) } catch { result = .failure(error) }
                                deliveries.runAfterRelease { continuation.resume(returning: result) }
                            },
                            fail: { error in continuation.resume(returning: .failure(error)) })
                        if let failure {
                            continuation.resume(returning: .failure(failure))
                        } else {
                            _submit(waiter, timeout: timeout)
                        }
                    }
                } onCancel: {
                    if !_waitList.faults.contains(.forgetCancelled) {
                        _waitList.abandon(waiter, with: CancellationError())
                    }
                }
            }
        }
        return try result.get()
    }

    /// Runs `body` with the state held exclusively once `condition` holds, later, and delivers its
    /// result on `queue`, or a `TimeoutError` past `timeout` without running it.
    func submit<R: Sendable>(
        when condition: @escaping @Sendable (State) -> Bool, timeout: Duration?,
        _ body: @escaping @Sendable (inout sending State) throws -> R, deliverOn queue: DispatchQueue,
        completion: @escaping @Sendable (Result<R, any Error>) -> Void
    ) {
        let waiter = _Waiter<State>(job: condition)
        _ = _waitList.arm(
            waiter,
            run: { state, deliveries in
                let result: Result<R, any Error>
                do { result = .success(try body(&state)) } catch { result = .failure(error) }
                deliveries.post(on: queue) { completion(result) }
            },
            fail: { error in queue.async { completion(.failure(error)) } })
        _submit(waiter, timeout: timeout)
    }

    /// Puts a set-up waiter in line: in its turn, with the state held exclusively, it runs if its
    /// condition holds, and otherwise joins the wait list.
    private func _submit(_ waiter: _Waiter<State>, timeout: Duration?) {
        if let timeout {
            _waitList.startTimer(for: waiter, after: timeout, error: TimeoutError(label: label, timeout: timeout))
        }
        _submit(
            .closure(isRead: false) { deliveries in
                if let run = self._waitList.check(waiter, self._state) { run(&self._state.pointee, &deliveries) }
            })
    }
}

// MARK: - Reading without waiting

extension _Engine {
    /// Runs `body` with the state held shared if no write holds it or waits for it; nil otherwise.
    /// Work submitted earlier counts as a write waiting: if there is some, the read runs after it
    /// under exclusive access if that can be had at once.
    @usableFromInline
    func readIfAvailable<R, E: Error>(_ thread: _CurrentThread, _ body: (State) throws(E) -> R) throws(E) -> R? {
        if _backlog.hasPending {
            guard let outbox = tryLockExclusively(thread) else { return nil }
            defer { unlockExclusively(thread, outbox) }
            return try body(_state.pointee)
        }
        guard let ticket = _lock.tryLockShared(thread: thread.index) else { return nil }
        return try _read(thread, holding: ticket, body)
    }
}
