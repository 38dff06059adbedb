import Dispatch
import ExclusionShims
import Synchronization

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
        _ thread: _CurrentThread, when condition: @Sendable (State) -> Bool, timeout: Duration?,
        file: StaticString, line: UInt
    ) throws(TimeoutError) -> Outbox {
        // The entry is noted once the condition holds: until then, this access holds nothing.
        let outbox = lockExclusively(thread, file: file, line: line, notingEntry: false)
        if condition(_state.pointee) {
            if _watchesWaits { _noteEntry(file: file, line: line) }
            return outbox
        }
        return try _lockExclusivelyWaiting(thread, until: condition, timeout: timeout, file: file, line: line, outbox)
    }

    /// The rest of `lockExclusively(_:when:timeout:)` once the condition was false: out of line,
    /// so that an access whose condition holds costs what a plain access does.
    ///
    /// Before it sleeps, the thread spins for about a microsecond, letting go of the state and
    /// checking again between spins. Going to sleep and being woken costs several microseconds and
    /// two trips through the scheduler, and the change a waiter needs is often a few instructions
    /// away on another thread (a consumer that takes one item from a full queue): the bounded
    /// queue benchmark takes 0.47× the time with two producers, 0.80× with one (`Benchmarks/ab.py`
    /// against the engine without the spin). It spins with the processor's spin hint, not
    /// `sched_yield`, and briefly: Linux wakes a thread that has just yielded or spun later, by
    /// about the time it spent, so a waiter that does go to sleep pays for the spin when it is
    /// woken (the "wake-up when asleep" benchmark: 5.3 → 6.6 µs). The checks happen before the
    /// access joins the wait list, so they change nothing about the order in which waiters are
    /// served.
    @usableFromInline
    func _lockExclusivelyWaiting(
        _ thread: _CurrentThread, until condition: @Sendable (State) -> Bool, timeout: Duration?,
        file: StaticString, line: UInt, _ outbox: Outbox
    ) throws(TimeoutError) -> Outbox {
        var outbox = outbox
        let spinUntil = DispatchTime.now().uptimeNanoseconds &+ Self._spinBeforeSleeping
        repeat {
            unlockExclusively(thread, outbox)
            for _ in 0..<32 { exclusion_spin_hint() }
            outbox = lockExclusively(thread, file: file, line: line, notingEntry: false)
            if condition(_state.pointee) {
                if _watchesWaits { _noteEntry(file: file, line: line) }
                return outbox
            }
        } while DispatchTime.now().uptimeNanoseconds < spinUntil
        let held = outbox
        let result: Result<Outbox, TimeoutError> = withoutActuallyEscaping(condition) { condition in
            Result { () throws(TimeoutError) -> Outbox in
                try _block(thread, until: condition, timeout, file: file, line: line, held)
            }
        }
        return try result.get()
    }

    /// How long, in nanoseconds, a blocked wait spins and checks again before it sleeps: 1 µs.
    @usableFromInline static var _spinBeforeSleeping: UInt64 { 1_000 }

    private func _block(
        _ thread: _CurrentThread, until condition: @escaping @Sendable (State) -> Bool, _ timeout: Duration?,
        file: StaticString, line: UInt, _ outbox: Outbox
    ) throws(TimeoutError) -> Outbox {
        let waiter = _Waiter<State>(thread: condition)
        let deadline = timeout.map { DispatchTime.now() + _dispatchInterval($0) }
        _waitList.enqueue(waiter)
        unlockExclusively(thread, outbox)
        let semaphore = waiter.semaphore!
        // Reported once if it lasts past the stuck-wait threshold, then waited for as asked.
        var reportAt = _watchesWaits ? DispatchTime.now() + _dispatchInterval(_StuckWait.threshold!) : nil
        while true {
            if let stuck = reportAt, deadline.map({ stuck < $0 }) ?? true {
                if semaphore.wait(timeout: stuck) == .timedOut {
                    _reportStuck(waitingFor: "for its condition to hold, on", file: file, line: line)
                    reportAt = nil
                    continue
                }
            } else if let deadline {
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
                if _watchesWaits { _noteEntry(file: file, line: line) }
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
        file: StaticString, line: UInt, _ body: (State) throws -> R
    ) throws -> R {
        if !_backlog.hasPending {
            let ticket = _lock.lockShared(thread: thread.index)
            if condition(_state.pointee) { return try _read(thread, holding: ticket, body) }
            _lock.unlockShared(ticket)
        }
        let outbox = try lockExclusively(thread, when: condition, timeout: timeout, file: file, line: line)
        defer { unlockExclusively(thread, outbox) }
        return try body(_state.pointee)
    }
}

// MARK: - Awaiting a condition, or submitting work that waits for one

extension _Engine {
    /// Runs `body` with the state held exclusively once `condition` holds, suspending until then.
    /// Throws `TimeoutError` past `timeout` and `CancellationError` if the task is cancelled before
    /// `body` starts; either way `body` doesn't run.
    nonisolated(nonsending) func awaitExclusively<R: Sendable>(
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
    nonisolated(nonsending) func awaitShared<R: Sendable>(
        attempting attempted: String, when condition: @Sendable (State) -> Bool, timeout: Duration?,
        _ body: @Sendable (State) throws -> R
    ) async throws -> R {
        let thread = _CurrentThread()
        checkNotInside(thread, attempting: attempted)
        try Task.checkCancellation()
        if let ticket = tryLockShared(thread) {
            if condition(_state.pointee) { return try _read(thread, holding: ticket, body) }
            _lock.unlockShared(ticket)
        }
        return try await _awaitCondition(condition, timeout) { (state: inout sending State) throws -> R in
            try body(state)
        }
    }

    nonisolated(nonsending) private func _awaitCondition<R: Sendable>(
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
            waiter, run: _delivering(body, on: queue, to: completion),
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
        if let ticket = tryLockShared(thread) { return try _read(thread, holding: ticket, body) }
        guard _backlog.hasPending, let outbox = tryLockExclusively(thread) else { return nil }
        defer { unlockExclusively(thread, outbox) }
        return try body(_state.pointee)
    }
}

// MARK: - Watching blocking waits

extension _Engine {
    /// `lockExclusively`'s wait when waits are watched: reported once if it lasts past the
    /// threshold, and the entry noted for the next waiter's report.
    @usableFromInline
    func _lockExclusivelyWatching(file: StaticString, line: UInt, notingEntry: Bool) {
        if !_lock.tryLockExclusive(), !_lock.lockExclusive(waitingAtMost: _StuckWait.threshold!) {
            _reportStuck(waitingFor: "to take", file: file, line: line)
            _lock.lockExclusive()
        }
        if notingEntry { _noteEntry(file: file, line: line) }
    }

    /// A read's wait for the lock, once its quick path failed: watched if waits are.
    @usableFromInline
    func _lockSharedSlowly(_ thread: _CurrentThread, file: StaticString, line: UInt) -> Lock.ReadTicket {
        guard _watchesWaits else { return _lock.lockShared(thread: thread.index) }
        let ticket: Lock.ReadTicket
        if let quick = _lock.tryLockShared(thread: thread.index) {
            ticket = quick
        } else if let waited = _lock.lockShared(thread: thread.index, waitingAtMost: _StuckWait.threshold!) {
            ticket = waited
        } else {
            _reportStuck(waitingFor: "to read", file: file, line: line)
            ticket = _lock.lockShared(thread: thread.index)
        }
        _noteEntry(file: file, line: line)
        return ticket
    }

    @usableFromInline
    func _noteEntry(file: StaticString, line: UInt) {
        _entryFile.store(UInt(bitPattern: file.utf8Start), ordering: .relaxed)
        _entryFileLength.store(file.utf8CodeUnitCount, ordering: .relaxed)
        _entryLine.store(line, ordering: .relaxed)
    }

    /// Where the access holding this instance (or the last one that held it) entered, as far as
    /// the watched accesses noted it.
    private var _lastEntry: String {
        let address = _entryFile.load(ordering: .relaxed)
        guard let start = UnsafePointer<UInt8>(bitPattern: address) else {
            return "a place no watched access noted (asynchronous work, or an access that doesn't wait)"
        }
        let file = String(
            decoding: UnsafeBufferPointer(start: start, count: _entryFileLength.load(ordering: .relaxed)), as: UTF8.self
        )
        return "\(file):\(_entryLine.load(ordering: .relaxed))"
    }

    func _reportStuck(waitingFor what: String, file: StaticString, line: UInt) {
        _StuckWait.report(
            """
            Exclusion: a thread has waited \(_StuckWait.threshold!) at \(file):\(line) \(what) \(_typeName) \
            "\(label)". The access holding it, or the last one that held it, entered at \(_lastEntry). A wait \
            that never ends is a deadlock, or a condition that nothing will make true. \
            EXCLUSION_STUCK_WAIT_SECONDS sets how long a wait may last before this report (0 turns it off).
            """)
    }
}

/// `duration` as a dispatch interval.
func _dispatchInterval(_ duration: Duration) -> DispatchTimeInterval {
    .nanoseconds(Int(clamping: _nanoseconds(duration)))
}
