import Dispatch
import Synchronization

// MARK: - Awaited access

extension _Engine {
    /// Takes the state shared if nothing is pending and no exclusive access holds the lock; nil if
    /// that would mean waiting. The first half of an awaited shared access.
    @inlinable @inline(__always)
    func tryTakeShared(_ thread: _CurrentThread) -> Lock.SharedTicket? {
        guard !_releaseWork.hasJobs else { return nil }
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
        checkBeforeNotWaiting(thread, .awaited, shared: false, attempting: attempted, at: site)
        if let result = try _runIfFree(thread, body) { return result }
        return try await _awaitTurn(isShared: false, at: site, body)
    }

    /// Runs `body` at once if the state can be had without waiting; nil, without running it,
    /// otherwise.
    @inlinable @inline(__always)
    func _runIfFree<R, E: Error>(
        _ thread: _CurrentThread, _ body: @Sendable (inout sending State) throws(E) -> R
    ) throws(E) -> R? {
        guard let outbox = tryTakeExclusively(thread) else { return nil }
        // Not a `defer`: in an async caller that is a function of its own, called every time.
        let result: Result<R, E>
        do throws(E) { result = .success(try body(&_state.pointee)) } catch { result = .failure(error) }
        releaseExclusively(thread, outbox)
        return try result.get()
    }

    /// Runs `body` with the state held shared: at once on this thread if nothing is pending and no
    /// exclusive access holds the lock, otherwise in its turn while the task is suspended.
    @inlinable @inline(__always)
    nonisolated(nonsending) func awaitShared<R: Sendable, E: Error>(
        attempting attempted: String, at site: _Site = .none, _ body: @Sendable (State) throws(E) -> R
    ) async throws(E) -> R {
        let thread = _CurrentThread()
        checkBeforeNotWaiting(thread, .awaited, shared: true, attempting: attempted, at: site)
        if let ticket = tryTakeShared(thread) { return try _runShared(thread, holding: ticket, body) }
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
                _scheduledTaskWait()  // schedule seam
                let turn = _Turn(body: body, continuation: continuation)
                guard _observeWait(.suspendedTask, at: site, .profile).isProfiled else {
                    return _enqueue(
                        .closure(isShared: isShared) { deliveries in turn.run(&self._state.pointee, &deliveries) })
                }
                // Profiled: the wait lasts until the turn runs, with the state held.
                let start = _lockWaitBegins(at: site)
                _enqueue(
                    .closure(isShared: isShared) { deliveries in
                        self._releaseWork.profiledWaiterLeaves()
                        self._recordWait(.suspendedTask, at: site, since: start, exclusively: !isShared)
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
    func submit(attempting attempted: String, _ body: @escaping Plain) {
        checkBeforeNotWaiting(_CurrentThread(), .submitting, shared: false, attempting: attempted)
        _enqueue(.plain(body))
    }

    /// Runs `body` with the state held shared, later, and delivers its result on `queue`.
    func submitShared<R: Sendable>(
        attempting attempted: String, deliverOn queue: DispatchQueue, _ body: @escaping @Sendable (State) throws -> R,
        completion: @escaping @Sendable (Result<R, any Error>) -> Void
    ) {
        checkBeforeNotWaiting(_CurrentThread(), .submitting, shared: true, attempting: attempted)
        _enqueue(
            .closure(isShared: true) { deliveries in
                let result = Result { () throws(any Error) -> R in try body(self._state.pointee) }
                deliveries.post(on: queue) { completion(result) }
            })
    }

    /// Runs `body` with the state held exclusively, later, and delivers its result on `queue`.
    func submit<R: Sendable>(
        attempting attempted: String, deliverOn queue: DispatchQueue,
        _ body: @escaping @Sendable (inout sending State) throws -> R,
        completion: @escaping @Sendable (Result<R, any Error>) -> Void
    ) {
        checkBeforeNotWaiting(_CurrentThread(), .submitting, shared: false, attempting: attempted)
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
        let work = _releaseWork  // the words, found once
        let announced = work.announceSideUser()  // Engine+Side.swift
        guard let queue = _withSide(at: work.words, { $0.submit(job, label: label) }) else {
            return work.leaveSide(announced)
        }
        // The drain holds the instance until it is done, since jobs in the backlog run only while
        // something holds it, and this submission's announcement, since it uses the side
        // structures.
        let held = _held
        if let explorer = _CurrentThread()._scheduleController {  // schedule seam
            return explorer.drainScheduled(for: _scheduledInstance) { held.engine._drain(announced: announced) }
        }
        queue.async { held.engine._drain(announced: announced) }
    }

    /// Runs the backlog a batch at a time, letting synchronous callers in between batches: leading
    /// shared jobs together under shared access, anything else under exclusive access. At its end,
    /// lets the side structures go if the instance is quiet (`_endDrain`), unless it ran long
    /// enough to keep them (`_Flags.batchesOfABusyDrain`).
    private func _drain(announced: Bool) {
        let thread = _CurrentThread()
        var batches = 0
        repeat {
            batches += 1
            // Busy with submitted work: from now on, submissions skip counting themselves.
            if announced, batches == _Flags.batchesOfABusyDrain { _keepSide() }
            if Lock.sharesAccess, _withSide({ $0.nextIsShared() }) == true {
                // If a synchronous access takes these jobs first, this batch is just empty.
                // Watched like the exclusive drain's wait, and likewise not profiled.
                let ticket =
                    _lock.lockSharedQuickly(thread: thread.index)
                    ?? _waitShared(thread, before: nil, file: "(asynchronous work)", line: 0, observers: .watch)!
                thread.enter(_identity, .shared)
                var deliveries = Outbox()
                _withSide { $0.runLeadingShared(&deliveries, apply: _apply) }
                thread.leave()
                _releaseShared(ticket, deliveries)
            } else {
                releaseExclusively(thread, takeExclusively(thread, profiled: false))
            }
        } while !_withSide({ $0.finishDrain() })
        _endDrain(thread, announced: announced)
    }
}
