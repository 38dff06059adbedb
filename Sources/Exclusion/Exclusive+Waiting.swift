import Dispatch

// MARK: - Waiting for the state

extension Exclusive {
    /// Runs `body` with exclusive access to the state once `condition` holds, blocking the calling
    /// thread until then, and returns its result.
    ///
    /// The condition is checked with the state held: now, and again after every access that could
    /// have changed it. Nothing has to signal anything; when an access makes the condition true,
    /// `body` runs with the state exactly as the condition saw it.
    ///
    /// ```swift
    /// // Waits until the account holds enough, then withdraws, in one access.
    /// try ledger.access(when: { $0.balance(of: id) >= amount }, timeout: .seconds(5)) { ledger in
    ///     ledger.withdraw(amount, from: id)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - condition: Whether `body` may run. It runs with the state held, on whichever thread
    ///     holds it, so it must be quick and must not touch any instance of this library.
    ///   - timeout: How long to wait at the most, whatever for: for other accesses to let go of the
    ///     state, or for `condition` to hold. `nil`, the default, waits for ever.
    ///   - body: Reads or changes the state. Changes made before a throw stay.
    ///   - file: Where the call is, for the lock-order check's message; leave the default.
    ///   - line: The line of the call, likewise.
    /// - Returns: What `body` returns.
    /// - Throws: ``TimeoutError`` past `timeout` (and `body` didn't run; its ``TimeoutError/cause``
    ///   says what it was still waiting for), or what `body` throws.
    /// - Warning: Waiting for one instance while inside another is checked like any nested access.
    @inlinable
    public func access<R>(
        when condition: @Sendable (State) -> Bool, timeout: Duration? = nil,
        _ body: (inout sending State) throws -> sending R, file: StaticString = #fileID, line: UInt = #line
    ) throws -> sending R {
        let thread = _CurrentThread()
        _engine.checkNesting(thread, attempting: "access(when:)", file: file, line: line)
        let outbox = try _engine.waitExclusively(
            thread, until: condition, limit: timeout.map(_TimeLimit.init), file: file, line: line)
        defer { _engine.releaseExclusively(thread, outbox, file: file, line: line) }
        return try body(&_engine._state.pointee)
    }

    /// Runs `body` with exclusive access to the state once `condition` holds, suspending (never
    /// blocking a thread) until then, and returns its result.
    ///
    /// ```swift
    /// let job = try await jobs.access(when: { !$0.isEmpty }) { $0.removeFirst() }
    /// ```
    ///
    /// The condition is checked as for the synchronous form. If the task is cancelled while it
    /// waits, the access leaves the line at once and throws `CancellationError` without running
    /// `body`; once `body` has started, cancelling changes nothing.
    ///
    /// - Parameters:
    ///   - condition: Whether `body` may run; see the synchronous form.
    ///   - timeout: How long to wait at the most, whatever for; `nil`, the default, waits for ever.
    ///   - body: Reads or changes the state. Changes made before a throw stay.
    /// - Returns: What `body` returns.
    /// - Throws: ``TimeoutError`` past `timeout`, `CancellationError` if the task was cancelled
    ///   before `body` started, or what `body` throws.
    nonisolated(nonsending) public func access<R: Sendable>(
        when condition: @Sendable (State) -> Bool, timeout: Duration? = nil,
        _ body: @Sendable (inout sending State) throws -> R
    ) async throws -> R {
        try await _engine.awaitExclusively(
            attempting: "await access(when:)", when: condition, timeout: timeout, body)
    }

    /// Runs `body` with exclusive access to the state once `condition` holds, later, and delivers
    /// its result on `queue`.
    ///
    /// ```swift
    /// orders.accessAsync(when: { $0.isOpen }, { $0.place(order) }) { result in
    ///     show(result)   // on the main queue
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - condition: Whether `body` may run; see the synchronous form.
    ///   - timeout: How long to wait at the most, whatever for; `nil`, the default, waits for ever.
    ///   - body: Reads or changes the state and returns a result. Changes made before a throw stay.
    ///   - queue: Where `completion` runs; the main queue unless you pick another.
    ///   - completion: Receives what `body` returned or threw, or ``TimeoutError`` past `timeout`.
    ///     It runs exactly once, on `queue`, after the state has been released. If the instance
    ///     goes away while the access still waits, it receives `CancellationError`.
    public func accessAsync<R: Sendable>(
        when condition: @escaping @Sendable (State) -> Bool, timeout: Duration? = nil,
        _ body: @escaping @Sendable (inout sending State) throws -> R, deliverOn queue: DispatchQueue = .main,
        completion: @escaping @Sendable (Result<R, any Error>) -> Void
    ) {
        _engine.submit(
            attempting: "accessAsync(when:)", when: condition, timeout: timeout, body, deliverOn: queue,
            completion: completion)
    }

    /// Runs `body` with exclusive access to the state if nothing else holds it right now, and
    /// returns its result; returns `nil` at once otherwise.
    ///
    /// It never fails spuriously: `nil` means another access held the state (or it was promised
    /// to a waiting access) at the moment of asking.
    ///
    /// ```swift
    /// if let depth = queue.accessIfAvailable({ $0.count }) { report(depth) }
    /// ```
    ///
    /// - Parameter body: Reads or changes the state.
    /// - Returns: What `body` returns, or `nil` if it didn't run.
    /// - Throws: What `body` throws.
    public func accessIfAvailable<R, E: Error>(
        _ body: (inout sending State) throws(E) -> sending R
    ) throws(E) -> sending R? {
        let thread = _CurrentThread()
        _engine.checkBeforeNotWaiting(thread, .trying, shared: false, attempting: "accessIfAvailable")
        guard let outbox = _engine.tryTakeExclusively(thread) else { return nil }
        defer { _engine.releaseExclusively(thread, outbox) }
        return try body(&_engine._state.pointee)
    }
}
