// MARK: - Waiting for the state

extension ReadersWriter {
    /// Runs `body` with access to the state once `condition` holds, blocking the calling thread
    /// until then, and returns its result.
    ///
    /// The condition is checked with the state held: now, and again after every write. Reads
    /// never change the state, so they never wake a waiter. If the condition holds at once, `body`
    /// runs alongside other reads; otherwise it runs right after the write that made it hold.
    ///
    /// ```swift
    /// let report = try index.read(when: { $0.isLoaded }, timeout: .seconds(2)) { $0.summary }
    /// ```
    ///
    /// - Parameters:
    ///   - condition: Whether `body` may run. It runs with the state held, on whichever thread
    ///     holds it, so it must be quick and must not touch any instance of this library.
    ///   - timeout: How long to wait at the most, whatever for: for other accesses to let go of the
    ///     state, or for `condition` to hold. `nil`, the default, waits for ever.
    ///   - body: Reads the state, which it receives as a value.
    ///   - file: Where the call is, for the lock-order check's message; leave the default.
    ///   - line: The line of the call, likewise.
    /// - Returns: What `body` returns.
    /// - Throws: ``TimeoutError`` past `timeout` (and `body` didn't run; its ``TimeoutError/cause``
    ///   says what it was still waiting for), or what `body` throws.
    public func read<R>(
        when condition: @Sendable (State) -> Bool, timeout: Duration? = nil, _ body: (State) throws -> R,
        file: StaticString = #fileID, line: UInt = #line
    ) throws -> R {
        let thread = _CurrentThread()
        _engine.checkNesting(thread, attempting: "read(when:)", file: file, line: line)
        return try _engine.shared(
            thread, when: condition, limit: timeout.map(_TimeLimit.init), file: file, line: line, body)
    }

    /// Runs `body` with exclusive access to the state once `condition` holds, blocking the calling
    /// thread until then, and returns its result.
    ///
    /// ```swift
    /// try slots.write(when: { $0.free > 0 }, timeout: .milliseconds(200)) { $0.free -= 1 }
    /// ```
    ///
    /// - Parameters:
    ///   - condition: Whether `body` may run; see ``read(when:timeout:_:file:line:)``.
    ///   - timeout: How long to wait at the most, whatever for: for other accesses to let go of the
    ///     state, or for `condition` to hold. `nil`, the default, waits for ever.
    ///   - body: Reads or changes the state. Changes made before a throw stay.
    ///   - file: Where the call is, for the lock-order check's message; leave the default.
    ///   - line: The line of the call, likewise.
    /// - Returns: What `body` returns.
    /// - Throws: ``TimeoutError`` past `timeout` (and `body` didn't run; its ``TimeoutError/cause``
    ///   says what it was still waiting for), or what `body` throws.
    @inlinable
    public func write<R>(
        when condition: @Sendable (State) -> Bool, timeout: Duration? = nil, _ body: (inout State) throws -> R,
        file: StaticString = #fileID, line: UInt = #line
    ) throws -> R {
        let thread = _CurrentThread()
        _engine.checkNesting(thread, attempting: "write(when:)", file: file, line: line)
        let outbox = try _engine.waitExclusively(
            thread, until: condition, limit: timeout.map(_TimeLimit.init), file: file, line: line)
        defer { _engine.releaseExclusively(thread, outbox, file: file, line: line) }
        return try body(&_engine._state.pointee)
    }

    /// Runs `body` with shared access to the state if no write holds it or waits for it right now,
    /// and returns its result; returns `nil` at once otherwise.
    ///
    /// A write waiting for the state goes before reads that come after it, so it counts as
    /// holding; so does asynchronous work submitted earlier, which may write. Other reads never
    /// make this fail, and it never fails spuriously.
    ///
    /// - Parameter body: Reads the state, which it receives as a value.
    /// - Returns: What `body` returns, or `nil` if it didn't run.
    /// - Throws: What `body` throws.
    public func readIfAvailable<R, E: Error>(_ body: (State) throws(E) -> R) throws(E) -> R? {
        let thread = _CurrentThread()
        _engine.checkBeforeNotWaiting(thread, .trying, shared: true, attempting: "readIfAvailable")
        return try _engine.sharedIfAvailable(thread, body)
    }

    /// Runs `body` with exclusive access to the state if nothing holds it right now, and returns
    /// its result; returns `nil` at once otherwise.
    ///
    /// It never fails spuriously: `nil` means a read or a write held the state (or it was
    /// promised to a waiting access) at the moment of asking.
    ///
    /// - Parameter body: Reads or changes the state.
    /// - Returns: What `body` returns, or `nil` if it didn't run.
    /// - Throws: What `body` throws.
    public func writeIfAvailable<R, E: Error>(_ body: (inout State) throws(E) -> R) throws(E) -> R? {
        let thread = _CurrentThread()
        _engine.checkBeforeNotWaiting(thread, .trying, shared: false, attempting: "writeIfAvailable")
        guard let outbox = _engine.tryTakeExclusively(thread) else { return nil }
        defer { _engine.releaseExclusively(thread, outbox) }
        return try body(&_engine._state.pointee)
    }
}

// Awaiting runs on other threads, so it needs an instance that can be shared.
extension ReadersWriter where State: Sendable {
    /// Runs `body` with access to the state once `condition` holds, suspending (never blocking a
    /// thread) until then, and returns its result.
    ///
    /// If the task is cancelled while it waits, the read leaves the line at once and throws
    /// `CancellationError` without running `body`.
    ///
    /// - Parameters:
    ///   - condition: Whether `body` may run; see ``read(when:timeout:_:file:line:)``.
    ///   - timeout: How long to wait at the most, whatever for: for other accesses to let go of the
    ///     state, or for `condition` to hold. `nil`, the default, waits for ever.
    ///   - body: Reads the state, which it receives as a value.
    /// - Returns: What `body` returns.
    /// - Throws: ``TimeoutError`` past `timeout`, `CancellationError` if the task was cancelled
    ///   before `body` started, or what `body` throws.
    nonisolated(nonsending) public func read<R: Sendable>(
        when condition: @Sendable (State) -> Bool, timeout: Duration? = nil, _ body: @Sendable (State) throws -> R
    ) async throws -> R {
        try await _engine.awaitShared(attempting: "await read(when:)", when: condition, timeout: timeout, body)
    }

    /// Runs `body` with exclusive access to the state once `condition` holds, suspending (never
    /// blocking a thread) until then, and returns its result.
    ///
    /// If the task is cancelled while it waits, the write leaves the line at once and throws
    /// `CancellationError` without running `body`.
    ///
    /// - Parameters:
    ///   - condition: Whether `body` may run; see ``read(when:timeout:_:file:line:)``.
    ///   - timeout: How long to wait at the most, whatever for: for other accesses to let go of the
    ///     state, or for `condition` to hold. `nil`, the default, waits for ever.
    ///   - body: Reads or changes the state. Changes made before a throw stay.
    /// - Returns: What `body` returns.
    /// - Throws: ``TimeoutError`` past `timeout`, `CancellationError` if the task was cancelled
    ///   before `body` started, or what `body` throws.
    nonisolated(nonsending) public func write<R: Sendable>(
        when condition: @Sendable (State) -> Bool, timeout: Duration? = nil,
        _ body: @Sendable (inout State) throws -> R
    ) async throws -> R {
        try await _engine.awaitExclusively(
            attempting: "await write(when:)", when: condition, timeout: timeout, body)
    }
}
