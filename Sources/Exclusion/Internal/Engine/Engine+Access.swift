import Dispatch
import ExclusionShims
import Synchronization

// MARK: - Taking and releasing the state

extension _Engine {
    /// Takes the state exclusively, on this thread, and runs everything submitted earlier; returns
    /// the outbox for the rest of the access. Pair with `releaseExclusively`; the caller's body runs
    /// in between (the public types call it, because only they know whether their bodies take the
    /// state as `sending`).
    ///
    /// `profiled` is false for the engine's own drains: a profile counts the work they run where
    /// it waited (an awaited access as a task's wait), not the drain's own wait for the lock.
    @inlinable @inline(__always)
    func takeExclusively(
        _ thread: _CurrentThread, file: StaticString = "(asynchronous work)", line: UInt = 0,
        notingEntry: Bool = true, profiled: Bool = true
    ) -> Outbox {
        if !_lock.lockExclusiveIfFree() {
            _ = _waitExclusively(before: nil, file: file, line: line, observers: profiled ? .access : .watch)
        }
        // One look at the flags: an uncontended access finds none of what `onEntry` names.
        if _flags & _Flags.onEntry != 0 {
            return _enteringWithWork(thread, file: file, line: line, notingEntry: notingEntry)
        }
        thread.enter(_identity, .exclusive)
        return Outbox()
    }

    /// Past the lock, with something to do before the body: notes where this access entered if
    /// waits are watched, lets go until a granted waiter has run if the state is promised, then
    /// enters and runs what was submitted earlier.
    @usableFromInline @inline(never)
    func _enteringWithWork(_ thread: _CurrentThread, file: StaticString, line: UInt, notingEntry: Bool) -> Outbox {
        if _watchesWaits, notingEntry { _noteEntry(file: file, line: line) }
        if _releaseWork.isReserved { _ = _backOffForGrantee(before: nil) }
        return _enteredExclusively(thread)
    }

    /// Whether blocking waits on this instance are watched and reported (`_StuckWait`); decided
    /// when it is made.
    @inlinable var _watchesWaits: Bool { _flags & _Flags.watched != 0 }

    /// Takes the state exclusively by `deadline` (as long as it takes if nil), and runs everything
    /// submitted earlier; nil, not holding it, if the deadline passed first. The entry isn't
    /// noted: a conditional access notes it once its condition holds. Inlinable for the spin of a
    /// conditional wait, which takes the state again at every look (`Engine+Conditions.swift`).
    @inlinable
    func takeExclusively(
        _ thread: _CurrentThread, before deadline: _Deadline?, file: StaticString, line: UInt
    ) -> Outbox? {
        guard let deadline else { return takeExclusively(thread, file: file, line: line, notingEntry: false) }
        guard _lock.tryLockExclusive() || _waitExclusively(before: deadline, file: file, line: line, observers: .access)
        else { return nil }
        if _releaseWork.isReserved, !_backOffForGrantee(before: deadline) { return nil }
        return _enteredExclusively(thread)
    }

    /// Takes the state exclusively once `condition` holds, blocking the thread until then, and
    /// returns the outbox for the access. Throws `TimeoutError` past `limit`, not holding it,
    /// whatever it was waiting for: the lock, a granted waiter, or the condition.
    @inlinable
    func waitExclusively(
        _ thread: _CurrentThread, until condition: @Sendable (State) -> Bool, limit: _TimeLimit?,
        file: StaticString, line: UInt
    ) throws(TimeoutError) -> Outbox {
        // The entry is noted once the condition holds: until then, this access holds nothing.
        let held: Outbox?
        if let limit {
            held = takeExclusively(thread, before: limit.deadline, file: file, line: line)
        } else {
            held = takeExclusively(thread, file: file, line: line, notingEntry: false)
        }
        guard let outbox = held else { throw limit!.error(on: label, waitingFor: .stateHeld) }
        if condition(_state.pointee) {
            if _watchesWaits { _noteEntry(file: file, line: line) }
            return outbox
        }
        // A wait nothing observes (no watch, no profile, no schedule explorer) spins in code
        // specialized for the state, as the accesses it waits for run: each look takes the state
        // again, and the look that finds the change is most of a wake-up.
        guard !_watchesWaits, !thread._isScheduled, !_Contention.isOn else {
            return try _waitForCondition(thread, until: condition, limit: limit, file: file, line: line, outbox)
        }
        let spun = try _spinForCondition(thread, until: condition, limit: limit, file: file, line: line, outbox)
        if spun.holds { return spun.outbox }
        return try _blockForCondition(thread, until: condition, limit: limit, file: file, line: line, spun.outbox)
    }

    /// Takes the state exclusively if that needs no waiting, and runs what was submitted earlier;
    /// nil if another access holds it or it is promised to a waiter.
    @inlinable @inline(__always)
    func tryTakeExclusively(_ thread: _CurrentThread) -> Outbox? {
        guard _lock.tryLockExclusive() else { return nil }
        if _releaseWork.isReserved {
            _lock.unlockExclusive()
            return nil
        }
        return _enteredExclusively(thread)
    }

    /// Gives up exclusive access, then hands out what the accesses delivered, in the order they ran.
    /// `file` and `line` are the access's call site, which a contention profile notes when others
    /// wait for this release.
    @inlinable @inline(__always)
    func releaseExclusively(
        _ thread: _CurrentThread, _ deliveries: borrowing Outbox, file: StaticString = "", line: UInt = 0
    ) {
        if _releaseWork.isDue {
            _releaseWhenDue(thread, deliveries, file: file, line: line)
        } else {
            _leaveAndUnlock(thread, deliveries)
        }
    }

    /// A release with something to do. When all it has to do is note its call site for a profiled
    /// waiter, it does that and lets go as a release with nothing to do would, specialized and
    /// inlined: a holder may let go many times while one waiter sleeps.
    @inlinable @inline(__always)
    func _releaseWhenDue(
        _ thread: _CurrentThread, _ deliveries: borrowing Outbox, file: StaticString, line: UInt
    ) {
        if _releaseWork.onlyProfiledWaiters {
            _noteHolder(file: file, line: line)
            _leaveAndUnlock(thread, deliveries)
        } else {
            _serveWaitersAndUnlock(thread, copy deliveries, file: file, line: line)
        }
    }

    /// The end of every exclusive access: this thread leaves, the lock is released, and what the
    /// access delivered is handed out.
    @inlinable @inline(__always)
    func _leaveAndUnlock(_ thread: _CurrentThread, _ deliveries: borrowing Outbox) {
        thread.leave()
        if deliveries.isEmpty {
            _lock.unlockExclusive()
        } else {
            _releaseExclusiveDelivering(copy deliveries)
        }
    }

    /// Runs `body` with the state held shared, alongside other shared accesses, on this thread.
    ///
    /// If anything submitted earlier is waiting, it goes first, and it may need the state
    /// exclusively: then the whole lot, `body` included, runs under exclusive access.
    @inlinable @inline(__always)
    func shared<R, E: Error>(
        _ thread: _CurrentThread, file: StaticString, line: UInt, _ body: (State) throws(E) -> R
    ) throws(E) -> R {
        if _releaseWork.hasJobs {
            let outbox = takeExclusively(thread, file: file, line: line)
            defer { releaseExclusively(thread, outbox, file: file, line: line) }
            return try body(_state.pointee)
        }
        // The lock's quick path first, exactly as an unwatched shared access takes it; watching
        // only slows down one that has to wait anyway.
        let ticket =
            _lock.lockSharedQuickly(thread: thread.index) ?? _takeSharedContended(thread, file: file, line: line)
        return try _runShared(thread, holding: ticket, body)
    }

    /// A shared access's wait for the lock, once its quick path failed; its entry is noted if
    /// waits are watched.
    @usableFromInline @inline(never)
    func _takeSharedContended(_ thread: _CurrentThread, file: StaticString, line: UInt) -> Lock.SharedTicket {
        // Without a deadline the wait ends only with the lock.
        let ticket = _waitShared(thread, before: nil, file: file, line: line)!
        if _watchesWaits { _noteEntry(file: file, line: line) }
        return ticket
    }

    /// Runs `body` on the state, which this thread holds shared with `ticket`, then lets go of it.
    @inlinable @inline(__always)
    func _runShared<R, E: Error>(
        _ thread: _CurrentThread, holding ticket: Lock.SharedTicket, _ body: (State) throws(E) -> R
    ) throws(E) -> R {
        thread.enter(_identity, .shared)
        defer {
            thread.leave()
            _lock.unlockShared(ticket)
        }
        return try body(_state.pointee)
    }

    /// Call right after taking the lock exclusively: marks the thread as inside, then runs whatever
    /// was submitted earlier, so it goes first. Returns the outbox for the rest of the access.
    @inlinable @inline(__always)
    func _enteredExclusively(_ thread: _CurrentThread) -> Outbox {
        thread.enter(_identity, .exclusive)
        return _releaseWork.hasJobs ? _runJobs() : Outbox()
    }

    /// Runs everything submitted so far, with the state held exclusively, and returns the outbox
    /// they delivered to. (Returned, not passed in: an outbox passed by address is a store on the
    /// stack in every access, before its release.)
    @usableFromInline @inline(never)
    func _runJobs() -> Outbox {
        var outbox = Outbox()
        _withSide { $0.runAll(&outbox, apply: _apply) }
        return outbox
    }

    /// Applies a plain asynchronous body; call with the state held exclusively.
    @usableFromInline
    func _apply(_ body: Plain) {
        body(&_state.pointee)
    }

    /// The release after an exclusive access while accesses wait for conditions: checks them
    /// first, with the state still held.
    @usableFromInline
    func _serveWaitersAndUnlock(
        _ thread: _CurrentThread, _ deliveries: consuming Outbox, skipping joiner: _WaiterID? = nil,
        file: StaticString = "", line: UInt = 0
    ) {
        let pending = _takePendingWait()
        if _releaseWork.hasProfiledWaiters { _noteHolder(file: file, line: line) }
        var deliveries = deliveries
        var woken: _Wakeup?
        serving: while _releaseWork.hasSleepers {
            switch _withWaitList({ $0.nextReady(_state, mayWake: woken == nil, skipping: joiner) }) {
            case .nothing:
                break serving
            case .run(let run):
                run(_state, &deliveries)
            case .wake(let sleeper, let granted):
                woken = sleeper
                if granted { break serving }  // promised: nothing else may change the state first
            }
        }
        _leaveAndUnlock(thread, deliveries)
        woken?.wake()
        if let pending { _record(pending) }
    }

    /// Lets go of the state and hands out `deliveries` under the backlog's delivery lock, as an
    /// announced user of the side structures (`Engine+Side.swift`): it touches them after the
    /// state is let go.
    @usableFromInline
    func _releaseExclusiveDelivering(_ deliveries: consuming Outbox) {
        let announced = _announceSideUser()
        _withSide { [deliveries] in $0.release(handingOut: deliveries) { _lock.unlockExclusive() } }
        _leaveSide(announced)
    }

    func _releaseShared(_ ticket: Lock.SharedTicket, _ deliveries: consuming Outbox) {
        if deliveries.isEmpty {
            _lock.unlockShared(ticket)
        } else {
            let announced = _announceSideUser()
            _withSide { [deliveries] in $0.release(handingOut: deliveries) { _lock.unlockShared(ticket) } }
            _leaveSide(announced)
        }
    }
}
