import Dispatch
import ExclusionShims
import Synchronization

// MARK: - Backing off for a granted waiter

extension _Engine {
    /// Called with the lock just taken while the state is promised to a granted waiter: lets go
    /// until that waiter has run, then takes the lock again. The waiter was woken already, so this
    /// lasts a thread wake-up; meanwhile this thread lends the waiter its priority where locks
    /// lend priority (`exclusion_wait_for_change`). Returns false, not holding the lock, if
    /// `deadline` passed first.
    @usableFromInline
    func _backOffForGrantee(before deadline: _Deadline?) -> Bool {
        repeat {
            let ended = _waitList.grantToWaitFor()
            let grantee = EXCLUSION_OWNED_LOCK != 0 && ended != nil ? _waitList.granteeThread : nil
            // Waited for without the lock, so that the grantee finds the lock free.
            _lock.unlockExclusive()
            if let ended {
                let changed = exclusion_wait_for_change(
                    _waitList._grantsWord, ended, deadline?.nanoseconds ?? 0, grantee ?? pthread_self(),
                    grantee == nil ? 0 : 1)
                guard changed != 0 else { return false }
            }
            if let deadline {
                guard _lock.lockExclusive(before: deadline) else { return false }
            } else {
                _lock.lockExclusive()
            }
        } while _waitList.isReserved
        return true
    }
}

// MARK: - Blocking until a condition holds

extension _Engine {
    /// Takes the state exclusively once `condition` holds, blocking the thread until then, and
    /// returns the outbox for the access. Throws `TimeoutError` past `limit`, not holding it,
    /// whatever it was waiting for: the lock, a granted waiter, or the condition.
    @inlinable
    func lockExclusively(
        _ thread: _CurrentThread, when condition: @Sendable (State) -> Bool, limit: _TimeLimit?,
        file: StaticString, line: UInt
    ) throws(TimeoutError) -> Outbox {
        // The entry is noted once the condition holds: until then, this access holds nothing.
        let held: Outbox?
        if let limit {
            held = _lockExclusively(thread, before: limit.deadline, file: file, line: line)
        } else {
            held = lockExclusively(thread, file: file, line: line, notingEntry: false)
        }
        guard let outbox = held else { throw limit!.error(on: label, waitingFor: .stateHeld) }
        if condition(_state.pointee) {
            if _watchesWaits { _noteEntry(file: file, line: line) }
            return outbox
        }
        return try _lockExclusivelyWaiting(thread, until: condition, limit: limit, file: file, line: line, outbox)
    }

    /// The rest of `lockExclusively(_:when:limit:file:line:)` once the condition was false: out of
    /// line, so that an access whose condition holds costs what a plain access does.
    ///
    /// Before it sleeps, the thread spins (the back-off's spin, `ExclusionShims.h`), letting go of
    /// the state and checking again now and then. Going to sleep and being woken costs more than
    /// the spin, and the change a waiter needs is often a few instructions away on another thread
    /// (a consumer that takes one item from a full queue). Each check takes the lock, so the spin
    /// looks only every `_spinHintsPerLook` hints, leaving the lock free for the thread it waits
    /// for. The checks happen before the access joins the wait list, so they change nothing about
    /// the order in which waiters are served.
    @usableFromInline
    func _lockExclusivelyWaiting(
        _ thread: _CurrentThread, until condition: @Sendable (State) -> Bool, limit: _TimeLimit?,
        file: StaticString, line: UInt, _ outbox: Outbox
    ) throws(TimeoutError) -> Outbox {
        if let explorer = thread._scheduleController {  // schedule seam
            return try _waitScheduled(explorer, thread, condition, limit, file, line, outbox)
        }
        guard _Contention.isOn else {
            return try _lockExclusivelyWaitingForCondition(
                thread, until: condition, limit: limit, file: file, line: line, outbox)
        }
        // Profiled: from the condition found false until it holds, a wait for the program's state.
        // A wait that timed out is recorded too: it waited as long as any.
        let start = _conditionWaitBegins(at: _Site(file, line))
        defer { _recordConditionWait(at: _Site(file, line), since: start) }
        return try _lockExclusivelyWaitingForCondition(
            thread, until: condition, limit: limit, file: file, line: line, outbox)
    }

    /// `_lockExclusivelyWaiting` itself.
    private func _lockExclusivelyWaitingForCondition(
        _ thread: _CurrentThread, until condition: @Sendable (State) -> Bool, limit: _TimeLimit?,
        file: StaticString, line: UInt, _ outbox: Outbox
    ) throws(TimeoutError) -> Outbox {
        var outbox = outbox
        var backoff = exclusion_backoff()
        var spinning = true
        while spinning {
            // The spin happens with the state let go of, so that the access it waits for can run.
            unlockExclusively(thread, outbox)
            spinning = exclusion_backoff_spin_hints(&backoff, Self._spinHintsPerLook) != 0
            guard let again = _lockExclusively(thread, before: limit?.deadline, file: file, line: line) else {
                throw limit!.error(on: label, waitingFor: .stateHeld)
            }
            outbox = again
            if condition(_state.pointee) {
                if _watchesWaits { _noteEntry(file: file, line: line) }
                return outbox
            }
        }
        let held = outbox
        let result: Result<Outbox, TimeoutError> = withoutActuallyEscaping(condition) { condition in
            Result { () throws(TimeoutError) -> Outbox in
                try _block(thread, until: condition, limit: limit, file: file, line: line, held)
            }
        }
        return try result.get()
    }

    /// How many spin hints a blocked conditional wait gives between two looks at its condition.
    @usableFromInline static var _spinHintsPerLook: UInt32 { UInt32(EXCLUSION_BACKOFF_SPINS / 4) }

    /// Joins the wait list and sleeps until a release finds the condition true, then takes the
    /// state back and checks again; waits again if another access took what it waited for.
    private func _block(
        _ thread: _CurrentThread, until condition: @escaping @Sendable (State) -> Bool, limit: _TimeLimit?,
        file: StaticString, line: UInt, _ outbox: Outbox
    ) throws(TimeoutError) -> Outbox {
        let waiter = _Waiter<State>(thread: condition)
        _waitList.enqueue(waiter)
        // Others may need serving (the access ran what was submitted before it), but not this one.
        _serveWaitersAndUnlock(thread, outbox, skipping: waiter)
        let semaphore = waiter.semaphore!
        // Reported once if it lasts past the stuck-wait threshold, then waited for as asked.
        var reportAt = _watchesWaits ? _Deadline(after: _StuckWait.threshold!) : nil
        while true {
            if let stuck = reportAt, limit.map({ stuck < $0.deadline }) ?? true {
                if semaphore.wait(timeout: stuck.dispatchTime) == .timedOut {
                    _reportStuck(waitingFor: "for its condition to hold, on", file: file, line: line)
                    reportAt = nil
                    continue
                }
            } else if let limit {
                if semaphore.wait(timeout: limit.deadline.dispatchTime) == .timedOut {
                    if _waitList.timeOut(waiter) { throw limit.error(on: label, waitingFor: .conditionFalse) }
                    semaphore.wait()  // a wake-up was sent before the timeout took effect
                }
            } else {
                semaphore.wait()
            }
            guard let outbox = _retake(thread, waiter, before: limit?.deadline) else {
                _giveUp(waiter)
                throw limit!.error(on: label, waitingFor: .stateHeld)
            }
            if _waitList.stillHolds(condition, _state.pointee) {
                _waitList.leave(waiter)
                if _watchesWaits { _noteEntry(file: file, line: line) }
                return outbox
            }
            if let limit, limit.deadline.hasPassed {
                _waitList.leave(waiter)
                unlockExclusively(thread, outbox)
                throw limit.error(on: label, waitingFor: .conditionFalse)
            }
            _waitList.waitAgain(waiter)
            _serveWaitersAndUnlock(thread, outbox, skipping: waiter)
        }
    }

    /// After a wake-up: takes the lock by `deadline` and, unless the state is promised to this
    /// waiter, backs off for the waiter it is promised to; then enters. Nil, not holding the state,
    /// if the deadline passed first.
    private func _retake(_ thread: _CurrentThread, _ waiter: _Waiter<State>, before deadline: _Deadline?) -> Outbox? {
        if let deadline {
            guard _lock.lockExclusive(before: deadline) else { return nil }
        } else {
            _lock.lockExclusive()
        }
        if !_waitList.takeGrant(waiter), _waitList.isReserved, !_backOffForGrantee(before: deadline) { return nil }
        return _enteredExclusively(thread)
    }

    /// A woken or granted waiter that couldn't take the state back in time leaves the line. The
    /// release that woke it checked no other blocked thread (or promised the state to it), so an
    /// empty exclusive access is queued, whose release checks the others in its place.
    private func _giveUp(_ waiter: _Waiter<State>) {
        _waitList.leave(waiter)
        if _waitList.rechecksForAThreadThatGaveUp { _enqueue(.plain { _ in }) }
    }

    /// Runs `body` with the state held shared once `condition` holds, blocking until then: shared
    /// if it holds at once, otherwise exclusively once an exclusive access made it hold.
    func shared<R>(
        _ thread: _CurrentThread, when condition: @Sendable (State) -> Bool, limit: _TimeLimit?,
        file: StaticString, line: UInt, _ body: (State) throws -> R
    ) throws -> R {
        if !_backlog.hasPending {
            let ticket: Lock.SharedTicket
            if let limit {
                guard let timed = _lock.lockShared(thread: thread.index, before: limit.deadline) else {
                    throw limit.error(on: label, waitingFor: .stateHeld)
                }
                ticket = timed
            } else {
                ticket =
                    _lock.lockSharedQuickly(thread: thread.index) ?? _lockSharedSlowly(thread, file: file, line: line)
            }
            if condition(_state.pointee) { return try _runShared(thread, holding: ticket, body) }
            _lock.unlockShared(ticket)
        }
        let outbox = try lockExclusively(thread, when: condition, limit: limit, file: file, line: line)
        defer { unlockExclusively(thread, outbox, file: file, line: line) }
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
        let limit = timeout.map(_TimeLimit.init)
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
        return try await _awaitCondition(condition, limit, body)
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
        checkNotInside(thread, attempting: attempted)
        try Task.checkCancellation()
        if let ticket = tryLockShared(thread) {
            if condition(_state.pointee) { return try _runShared(thread, holding: ticket, body) }
            _lock.unlockShared(ticket)
        }
        return try await _awaitCondition(condition, limit) { (state: inout sending State) throws -> R in
            try body(state)
        }
    }

    nonisolated(nonsending) func _awaitCondition<R: Sendable>(
        _ condition: @Sendable (State) -> Bool, _ limit: _TimeLimit?, observer: Bool = false,
        _ body: @Sendable (inout sending State) throws -> R
    ) async throws -> R {
        let result: Result<R, any Error> = await withoutActuallyEscaping(condition) { condition in
            await withoutActuallyEscaping(body) { body in
                let waiter = _Waiter<State>(job: condition, observer: observer)
                return await withTaskCancellationHandler {
                    await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<R, any Error>, Never>) in
                        let failure = _waitList.arm(
                            waiter,
                            run: { state, deliveries in
                                if let since = waiter.profiledSince {
                                    self._recordConditionWait(at: .none, since: since)
                                }
                                let result: Result<R, any Error>
                                do { result = .success(try body(&state)) } catch { result = .failure(error) }
                                deliveries.runAfterRelease { continuation.resume(returning: result) }
                            },
                            fail: { error in continuation.resume(returning: .failure(error)) })
                        if let failure {
                            continuation.resume(returning: .failure(failure))
                        } else {
                            _enqueue(waiter, limit, profiled: !observer && _Contention.isOn)
                        }
                    }
                } onCancel: {
                    _waitList.cancel(waiter)
                }
            }
        }
        return try result.get()
    }

    /// Runs `body` with the state held exclusively once `condition` holds, later, and delivers its
    /// result on `queue`, or a `TimeoutError` past `timeout` without running it.
    func submitExclusive<R: Sendable>(
        when condition: @escaping @Sendable (State) -> Bool, timeout: Duration?,
        _ body: @escaping @Sendable (inout sending State) throws -> R, deliverOn queue: DispatchQueue,
        completion: @escaping @Sendable (Result<R, any Error>) -> Void
    ) {
        let limit = timeout.map(_TimeLimit.init)
        let waiter = _Waiter<State>(job: condition)
        _ = _waitList.arm(
            waiter, run: _delivering(body, on: queue, to: completion),
            fail: { error in queue.async { completion(.failure(error)) } })
        _enqueue(waiter, limit)
    }

    /// Puts a set-up waiter in line: in its turn, with the state held exclusively, it runs if its
    /// condition holds, and otherwise joins the wait list. A timer abandons it at `limit`, wherever
    /// it is by then.
    ///
    /// With `profiled` (a contention profile runs, and the access is not an observer), the wait for the
    /// turn is recorded as a task's wait for the lock if the condition then holds, and the whole
    /// wait as a wait for the condition if it doesn't.
    private func _enqueue(_ waiter: _Waiter<State>, _ limit: _TimeLimit?, profiled: Bool = false) {
        if let limit { _waitList.startTimer(for: waiter, limit, label: label) }
        guard profiled else {
            return _enqueue(
                .closure(isShared: false) { deliveries in
                    if let run = self._waitList.check(waiter, self._state) { run(&self._state.pointee, &deliveries) }
                })
        }
        let start = _lockWaitBegins(at: .none)
        _enqueue(
            .closure(isShared: false) { deliveries in
                self._waitList.profiledWaiterLeaves()
                if let run = self._waitList.check(waiter, self._state) {
                    self._recordWait(.task, at: .none, since: start)
                    run(&self._state.pointee, &deliveries)
                } else {
                    waiter.profiledSince = start
                }
            })
    }

    /// Records a wait for a condition that began at `start`: not contention, and no holder.
    func _recordConditionWait(at site: _Site, since start: UInt64) {
        _record(_Contention.fault == .conditionAsContention ? .thread : .condition, at: site, since: start)
    }
}

// MARK: - Shared access without waiting

extension _Engine {
    /// Runs `body` with the state held shared if no exclusive access holds it or waits for it; nil
    /// otherwise. Work submitted earlier counts as an exclusive access waiting: if there is some,
    /// `body` runs after it under exclusive access if that can be had at once.
    @usableFromInline
    func sharedIfAvailable<R, E: Error>(_ thread: _CurrentThread, _ body: (State) throws(E) -> R) throws(E) -> R? {
        if let ticket = tryLockShared(thread) { return try _runShared(thread, holding: ticket, body) }
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
    func _lockExclusivelyWatching(file: StaticString, line: UInt, notingEntry: Bool, profiled isProfiled: Bool) {
        if !_lock.tryLockExclusive() {
            let profiled = isProfiled && _Contention.isOn ? _profiledWaitSpins(at: _Site(file, line)) : nil
            if profiled?.took != true {
                _lock.lockExclusive(reportingAt: _Deadline(after: _StuckWait.threshold!)) {
                    _reportStuck(waitingFor: "to take", file: file, line: line)
                }
                if let profiled {
                    _exclusiveWaitEnded(.thread, at: _Site(file, line), from: profiled.start, to: _Contention.now())
                }
            }
        }
        if notingEntry { _noteEntry(file: file, line: line) }
    }

    /// The lock by `deadline`; if waits are watched and the deadline lies past the stuck-wait
    /// threshold, reported once on the way.
    @usableFromInline
    func _lockExclusiveWatching(before deadline: _Deadline, file: StaticString, line: UInt) -> Bool {
        if _lock.tryLockExclusive() { return true }
        guard _Contention.isOn else { return _lockExclusiveWaiting(before: deadline, file: file, line: line) }
        let start = _lockWaitBegins(at: _Site(file, line))
        let locked = _lockExclusiveWaiting(before: deadline, file: file, line: line)
        if locked {
            _exclusiveWaitEnded(.thread, at: _Site(file, line), from: start, to: _Contention.now())
        } else {
            // A wait that gave up is recorded too: it waited as long as any.
            _waitList.profiledWaiterLeaves()
            _record(.thread, at: _Site(file, line), since: start)
        }
        return locked
    }

    /// The rest of `_lockExclusiveWatching`, once the lock was found taken.
    private func _lockExclusiveWaiting(before deadline: _Deadline, file: StaticString, line: UInt) -> Bool {
        if _watchesWaits {
            let report = _Deadline(after: _StuckWait.threshold!)
            if report < deadline {
                if _lock.lockExclusive(before: report) { return true }
                _reportStuck(waitingFor: "to take", file: file, line: line)
            }
        }
        return _lock.lockExclusive(before: deadline)
    }

    /// A shared access's wait for the lock, once its quick path failed: watched if waits are.
    @usableFromInline
    func _lockSharedSlowly(_ thread: _CurrentThread, file: StaticString, line: UInt) -> Lock.SharedTicket {
        guard _Contention.isOn else { return _lockSharedWaiting(thread, file: file, line: line) }
        // The quick path can fail with the lock free (a read-bias slot taken): only a real wait counts.
        if let ticket = _lock.tryLockShared(thread: thread.index) { return ticket }
        let start = _lockWaitBegins(at: _Site(file, line))
        let ticket = _lockSharedWaiting(thread, file: file, line: line)
        _waitList.profiledWaiterLeaves()
        _recordWait(.thread, at: _Site(file, line), since: start, exclusively: false)
        return ticket
    }

    /// The rest of `_lockSharedSlowly`: watched if waits are.
    private func _lockSharedWaiting(_ thread: _CurrentThread, file: StaticString, line: UInt) -> Lock.SharedTicket {
        guard _watchesWaits else { return _lock.lockShared(thread: thread.index) }
        let ticket: Lock.SharedTicket
        if let quick = _lock.tryLockShared(thread: thread.index) {
            ticket = quick
        } else if let waited = _lock.lockShared(
            thread: thread.index, before: _Deadline(after: _StuckWait.threshold!))
        {
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
