import Dispatch
import ExclusionShims
import Synchronization

// MARK: - Blocking until a condition holds

extension _Engine {
    /// The rest of `waitExclusively(_:until:limit:file:line:)` once the condition was false, for a
    /// wait that something observes (the stuck-wait watch, a profile, a schedule explorer): out of
    /// line, so that an access whose condition holds costs what a plain access does. A wait nothing
    /// observes goes straight to the spin and the block (`_spinForCondition`, `_blockForCondition`).
    ///
    /// Before it sleeps, the thread spins (the back-off's spin, `ExclusionShims.h`), letting go of
    /// the state and checking again now and then. Going to sleep and being woken costs more than
    /// the spin, and the change a waiter needs is often a few instructions away on another thread
    /// (a consumer that takes one item from a full queue). Each check takes the lock, so the spin
    /// looks only every `_spinHintsPerLook` hints, leaving the lock free for the thread it waits
    /// for. The checks happen before the access joins the wait list, so they change nothing about
    /// the order in which waiters are served.
    @usableFromInline
    func _waitForCondition(
        _ thread: _CurrentThread, until condition: @Sendable (State) -> Bool, limit: _TimeLimit?,
        file: StaticString, line: UInt, _ outbox: Outbox
    ) throws(TimeoutError) -> Outbox {
        if let explorer = thread._scheduleController {  // schedule seam
            return try _waitScheduled(explorer, thread, condition, limit, file, line, outbox)
        }
        let observed = _observeWait(.condition, at: _Site(file, line), .access)
        defer { observed.watched?.end() }
        guard observed.isProfiled else {
            return try _spinThenBlock(
                thread, until: condition, limit: limit, file: file, line: line, outbox)
        }
        // Profiled: from the condition found false until it holds, a wait for the program's state.
        // A wait that timed out is recorded too: it waited as long as any.
        let start = _lockWaitBegins(at: _Site(file, line), forTheLock: false)
        defer { _record(.condition, at: _Site(file, line), since: start) }
        return try _spinThenBlock(
            thread, until: condition, limit: limit, file: file, line: line, outbox)
    }

    /// `_waitForCondition` itself, once its observers are set up.
    private func _spinThenBlock(
        _ thread: _CurrentThread, until condition: @Sendable (State) -> Bool, limit: _TimeLimit?,
        file: StaticString, line: UInt, _ outbox: Outbox
    ) throws(TimeoutError) -> Outbox {
        let spun = try _spinForCondition(thread, until: condition, limit: limit, file: file, line: line, outbox)
        guard spun.holds else {
            return try _blockForCondition(thread, until: condition, limit: limit, file: file, line: line, spun.outbox)
        }
        if _watchesWaits { _noteEntry(file: file, line: line) }
        return spun.outbox
    }

    /// The spin of a conditional wait, with the state held and its condition false: lets go of the
    /// state, spins, takes it again and checks, until the condition holds or the spin ends. Returns
    /// holding the state, and whether the condition holds; throws, not holding it, if `limit`
    /// passed while it waited for the state.
    ///
    /// Inlinable, and so specialized for the state in the caller's module, where a wait that
    /// nothing observes calls it (`waitExclusively`): generic code reaches the lock, the words and
    /// the state through the type's metadata at every look. Not inlined, so that every call site
    /// doesn't carry the loop.
    @inlinable @inline(never)
    func _spinForCondition(
        _ thread: _CurrentThread, until condition: @Sendable (State) -> Bool, limit: _TimeLimit?,
        file: StaticString, line: UInt, _ outbox: Outbox
    ) throws(TimeoutError) -> (outbox: Outbox, holds: Bool) {
        var outbox = outbox
        var backoff = exclusion_backoff()
        var spinning = true
        while spinning {
            // The spin happens with the state let go of, so that the access it waits for can run.
            releaseExclusively(thread, outbox)
            spinning = exclusion_backoff_spin_hints(&backoff, Self._spinHintsPerLook) != 0
            guard let again = takeExclusively(thread, before: limit?.deadline, file: file, line: line) else {
                throw limit!.error(on: label, waitingFor: .stateHeld)
            }
            outbox = again
            if condition(_state.pointee) { return (outbox, true) }
        }
        return (outbox, false)
    }

    /// The rest of a conditional wait once its spin ended with the condition false, the state
    /// held: it joins the wait list and sleeps (`_block`).
    @usableFromInline
    func _blockForCondition(
        _ thread: _CurrentThread, until condition: @Sendable (State) -> Bool, limit: _TimeLimit?,
        file: StaticString, line: UInt, _ outbox: Outbox
    ) throws(TimeoutError) -> Outbox {
        let result: Result<Outbox, TimeoutError> = withoutActuallyEscaping(condition) { condition in
            Result { () throws(TimeoutError) -> Outbox in
                try _block(thread, until: condition, limit: limit, file: file, line: line, outbox)
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
        let sleeper = _Sleeper(waitingFor: condition)
        let waiter = _withWaitList { $0.sleep(sleeper) }
        // Others may need serving (the access ran what was submitted before it), but not this one.
        _serveWaitersAndUnlock(thread, outbox, skipping: waiter)
        while true {
            if !sleeper.sleep(until: limit?.deadline) {
                if _withWaitList({ $0.timeOut(waiter) }) { throw limit!.error(on: label, waitingFor: .conditionFalse) }
                _ = sleeper.sleep(until: nil)  // a wake-up was sent before the timeout took effect
            }
            guard let outbox = _retake(thread, waiter, before: limit?.deadline) else {
                _giveUp(waiter)
                throw limit!.error(on: label, waitingFor: .stateHeld)
            }
            if condition(_state.pointee) {
                _withWaitList { $0.leave(waiter) }
                if _watchesWaits { _noteEntry(file: file, line: line) }
                return outbox
            }
            if let limit, limit.deadline.hasPassed {
                _withWaitList { $0.leave(waiter) }
                releaseExclusively(thread, outbox)
                throw limit.error(on: label, waitingFor: .conditionFalse)
            }
            sleeper.rearm()
            _withWaitList { $0.sleepAgain(waiter) }
            _serveWaitersAndUnlock(thread, outbox, skipping: waiter)
        }
    }

    /// After a wake-up: takes the lock by `deadline` and, unless the state is promised to this
    /// waiter, backs off for the waiter it is promised to; then enters. Nil, not holding the state,
    /// if the deadline passed first.
    private func _retake(_ thread: _CurrentThread, _ waiter: _WaiterID, before deadline: _Deadline?) -> Outbox? {
        guard _lock.tryLockExclusive() || _waitExclusively(before: deadline, file: "", line: 0, observers: [])
        else { return nil }
        if !_withWaitList({ $0.takeGrant(waiter) }), _releaseWork.isReserved, !_backOffForGrantee(before: deadline) {
            return nil
        }
        return _enteredExclusively(thread)
    }

    /// A woken or granted waiter that couldn't take the state back in time leaves the line. The
    /// release that woke it checked no other blocked thread (or promised the state to it), so an
    /// empty exclusive access is queued, whose release checks the others in its place.
    private func _giveUp(_ waiter: _WaiterID) {
        _withWaitList { $0.leave(waiter) }
        _enqueue(.plain { _ in })
    }

    /// Runs `body` with the state held shared once `condition` holds, blocking until then: shared
    /// if it holds at once, otherwise exclusively once an exclusive access made it hold.
    func shared<R>(
        _ thread: _CurrentThread, when condition: @Sendable (State) -> Bool, limit: _TimeLimit?,
        file: StaticString, line: UInt, _ body: (State) throws -> R
    ) throws -> R {
        if !_releaseWork.hasJobs {
            guard
                let ticket = _lock.lockSharedQuickly(thread: thread.index)
                    ?? _waitShared(thread, before: limit?.deadline, file: file, line: line)
            else { throw limit!.error(on: label, waitingFor: .stateHeld) }
            if condition(_state.pointee) { return try _runShared(thread, holding: ticket, body) }
            _lock.unlockShared(ticket)
        }
        let outbox = try waitExclusively(thread, until: condition, limit: limit, file: file, line: line)
        defer { releaseExclusively(thread, outbox, file: file, line: line) }
        return try body(_state.pointee)
    }
}
