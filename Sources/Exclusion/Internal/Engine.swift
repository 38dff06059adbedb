import Dispatch
import Synchronization

/// The access engine behind `Exclusive` and `ReadersWriter`, written once for both.
///
/// It owns the state and keeps every promise the two types make: work one thread submits runs in
/// the order it submitted it (synchronous, asynchronous and awaited alike), deliveries leave in
/// the order the state was held and never while it is held, an awaited access suspends instead of
/// blocking, a timed access gives up at its deadline whatever it waits for, and a re-entrant or
/// badly nested access stops the process with a message instead of deadlocking. The two types
/// differ only in their `Lock`: `Exclusive` has no shared access, so its engine never runs work
/// shared. Inside the engine, access is *exclusive* or *shared*; "read" and "write" are words of
/// the public types only.
///
/// ## One access, step by step
///
/// A synchronous exclusive access (`Exclusive.access`, `ReadersWriter.write`) takes these steps,
/// inlined into the caller except where it has to wait:
///
/// 1. **Check nesting** (`checkNesting`): a thread inside any instance stops here on re-entrancy,
///    and has the lock order checked (`LockOrder.swift`). One comparison otherwise.
/// 2. **Take the lock** (`lockExclusively`): the lock's fast path (`Lock.swift`, and on Linux
///    `ExclusionLock.h`). A wait for it is watched if stuck waits are reported
///    (`_lockExclusivelyWatching`), and bounded by a deadline in a timed access
///    (`_lockExclusively(_:before:file:line:)`).
/// 3. **Back off for a grantee** (`_backOffForGrantee`, in `Engine+Waiting.swift`): if the state
///    is promised to a woken waiter, let go until that waiter has run.
/// 4. **Enter and catch up** (`_enteredExclusively`): mark the thread as inside, then run what was
///    submitted earlier (`Backlog.swift`), so that it goes first.
/// 5. **Run the body**, in the public type's method.
/// 6. **Serve waiters** (`_serveWaitersAndUnlock`): if accesses wait for a condition, check them
///    with the state still held (`WaitList.swift`): awaited and submitted bodies run right there,
///    and one blocked thread is chosen to wake.
/// 7. **Leave, unlock, deliver** (`_leaveAndUnlock`): the thread leaves, the lock is released, what
///    the access posted to its outbox is handed out in order (`Outbox.swift`), and a thread chosen
///    in step 6 is woken.
///
/// A shared access (`ReadersWriter.read`) takes the lock shared in step 2 and skips the rest but 5
/// and 7, unless work is pending: then it runs exclusively, after that work. An awaited access
/// tries steps 2 to 7 at once on the caller's thread and otherwise queues a turn (`_awaitTurn`)
/// that a thread holding the state runs. Asynchronous work waits in the backlog for a drain
/// (`_drain`) or the next synchronous access. A conditional access waits for its condition between
/// steps 4 and 5 (`Engine+Waiting.swift`).
///
/// The engine is the instance as far as thread tracking and the lock-order check are concerned;
/// each public instance owns exactly one.
@usableFromInline
final class _Engine<State, Lock: _EngineLock>: @unchecked Sendable {
    // @unchecked: _state is only read with _lock held (shared or exclusively) and only changed
    // with it held exclusively; everything else is immutable or guards itself. The public types
    // decide which states may cross threads (`Exclusive` through `sending`, `ReadersWriter` by
    // requiring `Sendable` for its asynchronous accessors).

    /// A plain asynchronous body, applied to the state without wrapping it in another closure.
    @usableFromInline typealias Plain = @Sendable (inout sending State) -> Void

    @usableFromInline let label: String
    /// The public type's name without its generic argument, such as `"Exclusive"`.
    private let _kind: StaticString
    @usableFromInline let _state: UnsafeMutablePointer<State>
    @usableFromInline let _backlog = _Backlog<Plain>()
    @usableFromInline let _waitList: _WaitList<State>
    /// Whether blocking waits on this instance are watched and reported (`_StuckWait`); decided
    /// when it is created, so that an unwatched access pays one predictable branch.
    @usableFromInline let _watchesWaits: Bool
    /// Where the last watched access entered: the file's UTF-8 start and length, and the line.
    @usableFromInline let _entryFile = Atomic<UInt>(0)
    @usableFromInline let _entryFileLength = Atomic<Int>(0)
    @usableFromInline let _entryLine = Atomic<UInt>(0)

    /// Last, so that the fields above have offsets known at compile time whatever the lock is.
    @usableFromInline let _lock = Lock()

    init(_ initialState: sending State, kind: StaticString, label: String, waitList: _WaitList<State> = _WaitList()) {
        self.label = label
        _waitList = waitList
        _watchesWaits = _StuckWait.threshold != nil
        _kind = kind
        _state = .allocate(capacity: 1)
        _state.initialize(to: initialState)
        _ = ContentionProfile.fromEnvironment  // starts the run's profile, if one is asked for
    }

    deinit {
        // Only work submitted with a condition can still wait here: nobody is left to change the
        // state, so its condition will never hold. It must still hear back exactly once.
        _waitList.abandonAll(with: CancellationError())
        _LockOrder.forget(self)
        _state.deinitialize(count: 1)
        _state.deallocate()
        _lock.destroy()
    }

    /// The public type's full name, as messages show it: `Exclusive<Ledger>`.
    @usableFromInline var _typeName: String { "\(_kind)<\(State.self)>" }

    /// Whether the calling thread is inside an access of this instance right now.
    var isAccessing: Bool { _CurrentThread().mode(in: self) != nil }
}

extension _Engine: _LockOrderNamed {}

// MARK: - Checks before waiting

extension _Engine {
    /// Before blocking for this instance: stops on re-entrancy, and checks the lock order against
    /// the other instances this thread is inside. Costs one comparison when it is inside none.
    @inlinable @inline(__always)
    func checkNesting(_ thread: _CurrentThread, attempting attempted: String, file: StaticString, line: UInt) {
        if thread.isInsideAny { _checkNested(thread, attempting: attempted, file: file, line: line) }
    }

    /// Out of line, so that the accesses that hold nothing else stay small enough to inline.
    @usableFromInline
    func _checkNested(_ thread: _CurrentThread, attempting attempted: String, file: StaticString, line: UInt) {
        if thread._isScheduled { return _scheduledAccess(thread, attempted, file, line) }  // schedule seam
        checkNotInside(thread, attempting: attempted)
        _LockOrder.willAcquire(self, holding: thread, file: file, line: line)
    }

    /// Stops the process if this thread is inside this instance: waiting would never end.
    @inlinable
    func checkNotInside(_ thread: _CurrentThread, attempting attempted: String) {
        guard let mode = thread.mode(in: self) else { return }
        _reentrantAccess(type: _typeName, label: label, attempted: attempted, holding: Lock.describe(mode))
    }
}

// MARK: - Synchronous access

extension _Engine {
    /// Takes the state exclusively, on this thread, and runs everything submitted earlier; returns
    /// the outbox for the rest of the access. Pair with `unlockExclusively`; the caller's body runs
    /// in between (the public types call it, because only they know whether their bodies take the
    /// state as `sending`).
    ///
    /// `profiled` is false for the engine's own drains: a profile counts the work they run where
    /// it waited (an awaited access as a task's wait), not the drain's own wait for the lock.
    @inlinable @inline(__always)
    func lockExclusively(
        _ thread: _CurrentThread, file: StaticString = "(asynchronous work)", line: UInt = 0,
        notingEntry: Bool = true, profiled: Bool = true
    ) -> Outbox {
        if _watchesWaits {
            _lockExclusivelyWatching(file: file, line: line, notingEntry: notingEntry, profiled: profiled)
        } else if !_lock.lockExclusiveIfFree() {
            _lockExclusivelyContended(file: file, line: line, profiled: profiled)
        }
        if _waitList.isReserved { _ = _backOffForGrantee(before: nil) }
        return _enteredExclusively(thread)
    }

    /// The lock, once it was found taken: out of line, and timed for the contention profile if
    /// one runs.
    @usableFromInline @inline(never)
    func _lockExclusivelyContended(file: StaticString, line: UInt, profiled: Bool) {
        guard profiled, _Contention.isOn else { return _lock.lockExclusive() }
        let site = _Site(file, line)
        let (start, took) = _profiledWaitSpins(at: site)
        if took { return }
        let end = _lock.lockExclusiveTimed(afterSpinningSince: start)
        _exclusiveWaitEnded(.thread, at: site, from: start, to: end)
    }

    /// Takes the state exclusively by `deadline` (as long as it takes if nil), and runs everything
    /// submitted earlier; nil, not holding it, if the deadline passed first.
    @usableFromInline
    func _lockExclusively(
        _ thread: _CurrentThread, before deadline: _Deadline?, file: StaticString, line: UInt
    ) -> Outbox? {
        guard let deadline else { return lockExclusively(thread, file: file, line: line, notingEntry: false) }
        guard _lockExclusiveWatching(before: deadline, file: file, line: line) else { return nil }
        if _waitList.isReserved, !_backOffForGrantee(before: deadline) { return nil }
        return _enteredExclusively(thread)
    }

    /// Takes the state exclusively if that needs no waiting, and runs what was submitted earlier;
    /// nil if another access holds it or it is promised to a waiter.
    @inlinable @inline(__always)
    func tryLockExclusively(_ thread: _CurrentThread) -> Outbox? {
        guard _lock.tryLockExclusive() else { return nil }
        if _waitList.isReserved {
            _lock.unlockExclusive()
            return nil
        }
        return _enteredExclusively(thread)
    }

    /// Gives up exclusive access, then hands out what the accesses delivered, in the order they ran.
    /// `file` and `line` are the access's call site, which a contention profile notes when others
    /// wait for this release.
    @inlinable @inline(__always)
    func unlockExclusively(
        _ thread: _CurrentThread, _ deliveries: borrowing Outbox, file: StaticString = "", line: UInt = 0
    ) {
        if _waitList.isWaiting {
            _serveWaitersAndUnlock(thread, copy deliveries, file: file, line: line)
        } else {
            _leaveAndUnlock(thread, deliveries)
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
        if _backlog.hasPending {
            let outbox = lockExclusively(thread, file: file, line: line)
            defer { unlockExclusively(thread, outbox, file: file, line: line) }
            return try body(_state.pointee)
        }
        // The lock's quick path first, exactly as an unwatched shared access takes it; watching
        // only slows down one that has to wait anyway.
        let ticket = _lock.lockSharedQuickly(thread: thread.index) ?? _lockSharedSlowly(thread, file: file, line: line)
        return try _runShared(thread, holding: ticket, body)
    }

    /// Runs `body` on the state, which this thread holds shared with `ticket`, then lets go of it.
    @inlinable @inline(__always)
    func _runShared<R, E: Error>(
        _ thread: _CurrentThread, holding ticket: Lock.SharedTicket, _ body: (State) throws(E) -> R
    ) throws(E) -> R {
        thread.enter(self, .shared)
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
        thread.enter(self, .exclusive)
        var outbox = Outbox()
        if _backlog.hasPending {
            _backlog.runAll(&outbox, apply: _apply)
        }
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
        _ thread: _CurrentThread, _ deliveries: consuming Outbox, skipping joiner: _Waiter<State>? = nil,
        file: StaticString = "", line: UInt = 0
    ) {
        let pending = _takePendingWait()
        if _waitList.hasProfiledWaiters { _noteHolder(_Site(file, line)) }
        var deliveries = deliveries
        var woken: DispatchSemaphore?
        while _waitList.hasSleepers, let run = _waitList.nextReady(_state, woken: &woken, skipping: joiner) {
            run(&_state.pointee, &deliveries)
        }
        _leaveAndUnlock(thread, deliveries)
        woken?.signal()
        if let pending { _record(pending) }
    }

    @usableFromInline
    func _releaseExclusiveDelivering(_ deliveries: consuming Outbox) {
        _backlog.release(handingOut: deliveries) { _lock.unlockExclusive() }
    }

    private func _releaseShared(_ ticket: Lock.SharedTicket, _ deliveries: consuming Outbox) {
        if deliveries.isEmpty {
            _lock.unlockShared(ticket)
        } else {
            _backlog.release(handingOut: deliveries) { _lock.unlockShared(ticket) }
        }
    }
}

// MARK: - Awaited access

extension _Engine {
    /// Takes the state shared if nothing is pending and no exclusive access holds the lock; nil if
    /// that would mean waiting. The first half of an awaited shared access.
    @inlinable @inline(__always)
    func tryLockShared(_ thread: _CurrentThread) -> Lock.SharedTicket? {
        guard !_backlog.hasPending else { return nil }
        return _lock.tryLockShared(thread: thread.index)
    }

    /// Runs `body` with the state held exclusively: at once on this thread if the lock is free
    /// (after running what was submitted earlier), otherwise in its turn while the task is
    /// suspended. Inlined into the public accessor, so that its first half costs what a
    /// synchronous access does.
    @inlinable @inline(__always)
    nonisolated(nonsending) func awaitExclusively<R: Sendable, E: Error>(
        attempting attempted: String, at site: _Site = .none, _ body: @Sendable (inout sending State) throws(E) -> R
    ) async throws(E) -> R {
        let thread = _CurrentThread()
        checkNotInside(thread, attempting: attempted)
        if let deliveries = tryLockExclusively(thread) {
            defer { unlockExclusively(thread, deliveries) }
            return try body(&_state.pointee)
        }
        return try await _awaitTurn(isShared: false, at: site, body)
    }

    /// Runs `body` with the state held shared: at once on this thread if nothing is pending and no
    /// exclusive access holds the lock, otherwise in its turn while the task is suspended.
    @inlinable @inline(__always)
    nonisolated(nonsending) func awaitShared<R: Sendable, E: Error>(
        attempting attempted: String, at site: _Site = .none, _ body: @Sendable (State) throws(E) -> R
    ) async throws(E) -> R {
        let thread = _CurrentThread()
        checkNotInside(thread, attempting: attempted)
        if let ticket = tryLockShared(thread) { return try _runShared(thread, holding: ticket, body) }
        return try await _awaitTurn(isShared: true, at: site) { (state: inout sending State) throws(E) -> R in
            try body(state)
        }
    }

    @usableFromInline
    nonisolated(nonsending) func _awaitTurn<R: Sendable, E: Error>(
        isShared: Bool, at site: _Site = .none, _ body: @Sendable (inout sending State) throws(E) -> R
    ) async throws(E) -> R {
        let result: Result<R, E> = await withoutActuallyEscaping(body) { body in
            await withUnsafeContinuation { continuation in
                let turn = _Turn(body: body, continuation: continuation)
                guard _Contention.isOn else {
                    return _enqueue(
                        .closure(isShared: isShared) { deliveries in turn.run(&self._state.pointee, &deliveries) })
                }
                // Profiled: the wait lasts until the turn runs, with the state held.
                let start = _lockWaitBegins(at: site)
                _enqueue(
                    .closure(isShared: isShared) { deliveries in
                        self._waitList.profiledWaiterLeaves()
                        self._recordWait(.task, at: site, since: start, exclusively: !isShared)
                        turn.run(&self._state.pointee, &deliveries)
                    })
            }
        }
        return try result.get()
    }
}

// MARK: - Asynchronous access

extension _Engine {
    /// Runs `body` with the state held exclusively, later.
    @inlinable
    func submitExclusive(_ body: @escaping Plain) {
        _enqueue(.plain(body))
    }

    /// Runs `body` with the state held shared, later, and delivers its result on `queue`.
    func submitShared<R: Sendable>(
        deliverOn queue: DispatchQueue, _ body: @escaping @Sendable (State) throws -> R,
        completion: @escaping @Sendable (Result<R, any Error>) -> Void
    ) {
        _enqueue(
            .closure(isShared: true) { deliveries in
                let result = Result { () throws(any Error) -> R in try body(self._state.pointee) }
                deliveries.post(on: queue) { completion(result) }
            })
    }

    /// Runs `body` with the state held exclusively, later, and delivers its result on `queue`.
    func submitExclusive<R: Sendable>(
        deliverOn queue: DispatchQueue, _ body: @escaping @Sendable (inout sending State) throws -> R,
        completion: @escaping @Sendable (Result<R, any Error>) -> Void
    ) {
        let run = _delivering(body, on: queue, to: completion)
        _enqueue(.closure(isShared: false) { deliveries in run(&self._state.pointee, &deliveries) })
    }

    /// `body` as a job that runs it on the state and delivers what it returned or threw to
    /// `completion` on `queue`, once the state is released.
    func _delivering<R: Sendable>(
        _ body: @escaping @Sendable (inout sending State) throws -> R, on queue: DispatchQueue,
        to completion: @escaping @Sendable (Result<R, any Error>) -> Void
    ) -> @Sendable (inout sending State, inout Outbox) -> Void {
        { state, deliveries in
            let result: Result<R, any Error>
            do { result = .success(try body(&state)) } catch { result = .failure(error) }
            deliveries.post(on: queue) { completion(result) }
        }
    }

    /// Puts `job` in the backlog, and schedules a drain if none is.
    @usableFromInline
    func _enqueue(_ job: _Backlog<Plain>.Job) {
        if let queue = _backlog.submit(job, label: label) {
            if let explorer = _CurrentThread()._scheduleController {  // schedule seam
                return explorer.drainScheduled(for: ScheduledInstance(self)) { self._drain() }
            }
            queue.async { self._drain() }
        }
    }

    /// Runs the backlog a batch at a time, letting synchronous callers in between batches: leading
    /// shared jobs together under shared access, anything else under exclusive access.
    private func _drain() {
        let thread = _CurrentThread()
        repeat {
            if Lock.sharesAccess, _backlog.nextIsShared() == true {
                // If a synchronous access takes these jobs first, this batch is just empty.
                let ticket = _lock.lockShared(thread: thread.index)
                thread.enter(self, .shared)
                var deliveries = Outbox()
                _backlog.runLeadingShared(&deliveries, apply: _apply)
                thread.leave()
                _releaseShared(ticket, deliveries)
            } else {
                unlockExclusively(thread, lockExclusively(thread, profiled: false))
            }
        } while !_backlog.finishDrain()
    }
}
