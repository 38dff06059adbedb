import Dispatch

/// A value that only one piece of code can touch at a time.
///
/// `Exclusive` is the *lockless exclusion accessor* of the classic Grand Central Dispatch pattern:
/// the state is private, and the only way to reach it is as the argument of a closure that runs
/// with exclusive access. Nothing outside the closure can see the state, so nothing outside the
/// closure can race on it.
///
/// ```swift
/// let visits = Exclusive([String: Int](), label: "visits")
///
/// // From any thread:
/// visits.access { $0["/home", default: 0] += 1 }
/// let homeVisits = visits.access { $0["/home"] ?? 0 }
///
/// // Later, without waiting; the result comes back on the main queue:
/// visits.accessAsync({ $0.values.reduce(0, +) }) { total in print((try? total.get()) ?? 0) }
/// ```
///
/// It behaves like a serial dispatch queue that owns the state: accesses never overlap, and the
/// work one thread submits runs in the order it submitted it, whether it waits (a synchronous `access`),
/// submits and moves on (``accessAsync(_:)``) or awaits (`await access`). It is built for
/// speed: a synchronous access with no asynchronous work pending costs about as much as a lock.
///
/// - Warning: Accessing an instance from inside one of its own accesses on the same thread would
///   deadlock, so it stops the process with a message naming the instance. Use the state passed
///   to your closure instead.
public final class Exclusive<State>: Sendable {
    // No stored property: the instance is its engine's storage (`_Engine`), made with it.

    /// The engine, a view of this instance's storage.
    @inlinable var _engine: _Engine<State, _Lock> { _Engine(of: self) }

    /// Creates an instance holding `initialState`, labeled with its type (`Exclusive<State>`).
    ///
    /// - Parameter initialState: The state; from now on it is only reachable through the accessors.
    @inlinable
    public convenience init(_ initialState: sending State) {
        self.init(_made: _Engine<State, _Lock>.make(initialState, label: nil, as: Exclusive<State>.self))
    }

    /// Creates an instance holding `initialState`, with a label for messages.
    ///
    /// - Parameters:
    ///   - initialState: The state; from now on it is only reachable through the accessors.
    ///   - label: A name for messages and debugging, such as `"bank ledger"`.
    @inlinable
    public convenience init(_ initialState: sending State, label: String) {
        self.init(_made: _Engine<State, _Lock>.make(initialState, label: label, as: Exclusive<State>.self))
    }

    deinit {
        // Iterators of `values` end, and so do accesses still waiting for a condition.
        _engine.tearDown()
    }

    /// The name of this instance, shown in re-entrancy messages.
    public var label: String { _engine.label }

    /// Whether the calling thread is inside an access of this instance right now.
    ///
    /// True inside the closures passed to any accessor of this instance, including asynchronous
    /// ones while they run; false everywhere else.
    public var isAccessing: Bool { _engine.isAccessing }
}

// MARK: - Synchronous access

extension Exclusive {
    /// Runs `body` with exclusive access to the state, on the calling thread, and returns its result.
    ///
    /// The access starts after every access this thread submitted earlier, including asynchronous
    /// ones, has run, and after any access in progress on another thread has finished.
    ///
    /// ```swift
    /// let count = Exclusive(0)
    /// let now = count.access { value in
    ///     value += 1
    ///     return value
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - body: Reads or changes the state. If it throws, changes it made before
    ///     throwing stay: there is no rollback.
    ///   - file: Where the call is, for the lock-order check's message; leave the default.
    ///   - line: The line of the call, likewise.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    /// - Warning: Calling any accessor of this instance from inside `body` stops the process: it
    ///   would deadlock. Use the state passed to your closure.
    @inlinable @inline(__always)
    public func access<R, E: Error>(
        _ body: (inout sending State) throws(E) -> sending R, file: StaticString = #fileID, line: UInt = #line
    ) throws(E) -> sending R {
        let thread = _CurrentThread()
        _engine.checkNesting(thread, attempting: "access", file: file, line: line)
        let outbox = _engine.takeExclusively(thread, file: file, line: line)
        defer { _engine.releaseExclusively(thread, outbox, file: file, line: line) }
        return try body(&_engine._state.pointee)
    }

    /// Runs `body` with exclusive access to the state and an outbox for what should happen after
    /// the access, and returns its result.
    ///
    /// Use the outbox for notifications and callbacks that must not run while the state is held.
    /// They run after the state is released, in the order the accesses of this instance ran:
    ///
    /// ```swift
    /// try ledger.access { ledger, outbox in
    ///     let change = try ledger.withdraw(amount, from: id)
    ///     outbox.post(on: notificationQueue) { post(change) }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - body: Reads or changes the state, and posts to the outbox. Work posted before a
    ///     throw still runs, as do the changes made before it.
    ///   - file: Where the call is, for the lock-order check's message; leave the default.
    ///   - line: The line of the call, likewise.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    @inlinable
    public func access<R, E: Error>(
        _ body: (inout sending State, inout Outbox) throws(E) -> sending R, file: StaticString = #fileID,
        line: UInt = #line
    ) throws(E) -> sending R {
        let thread = _CurrentThread()
        _engine.checkNesting(thread, attempting: "access", file: file, line: line)
        var outbox = _engine.takeExclusively(thread, file: file, line: line)
        defer { _engine.releaseExclusively(thread, outbox, file: file, line: line) }
        return try body(&_engine._state.pointee, &outbox)
    }
}

// MARK: - Asynchronous access

extension Exclusive {
    /// Runs `body` with exclusive access to the state later, and returns at once.
    ///
    /// ```swift
    /// log.accessAsync { $0.append(entry) }
    /// ```
    ///
    /// The access runs after every access this thread submitted earlier. A synchronous access
    /// submitted by this thread afterwards sees its effects.
    ///
    /// - Parameter body: Changes the state. It runs on a thread of the instance's choosing.
    @inlinable
    public func accessAsync(_ body: @escaping @Sendable (inout sending State) -> Void) {
        _engine.submit(attempting: "accessAsync", body)
    }

    /// Runs `body` with exclusive access to the state later, and delivers its result on `queue`.
    ///
    /// ```swift
    /// inventory.accessAsync({ $0.count }) { result in
    ///     label.text = "\(try! result.get()) items"   // on the main queue
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - queue: Where `completion` runs; the main queue unless you pick another.
    ///   - body: Reads or changes the state and returns a result. Changes made before a throw stay.
    ///   - completion: Receives what `body` returned or threw. It runs exactly once, on `queue`,
    ///     after the state has been released, so it may call back into this instance freely.
    ///     Completions delivered to a serial queue arrive in the order the accesses ran.
    public func accessAsync<R: Sendable>(
        deliverOn queue: DispatchQueue = .main,
        _ body: @escaping @Sendable (inout sending State) throws -> R,
        completion: @escaping @Sendable (Result<R, any Error>) -> Void
    ) {
        _engine.submit(attempting: "accessAsync", deliverOn: queue, body, completion: completion)
    }

    /// Runs `body` with exclusive access to the state, suspending instead of blocking while
    /// another access holds it, and returns its result.
    ///
    /// ```swift
    /// let total = await ledger.access { $0.total }
    /// ```
    ///
    /// The access runs in the caller's isolation, never hopping to another executor on its own:
    /// when the state is free and nothing is pending, `body` runs at once, on the caller's thread
    /// and actor (a caller on the main actor stays on it); otherwise the task suspends, `body` runs
    /// in its turn on the thread that holds the state, and the task resumes where it was.
    ///
    /// - Parameters:
    ///   - body: Reads or changes the state. Changes made before a throw stay.
    ///   - file: Where the call is, for a ``ContentionProfile``; leave the default.
    ///   - line: The line of the call, likewise.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    @inlinable @inline(__always)
    nonisolated(nonsending) public func access<R: Sendable, E: Error>(
        _ body: @Sendable (inout sending State) throws(E) -> R, file: StaticString = #fileID, line: UInt = #line
    ) async throws(E) -> R {
        try await _engine.awaitExclusively(attempting: "await access", at: _Site(file, line), body)
    }
}

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
        let limit = timeout.map(_TimeLimit.init)
        try _engine.checkNesting(thread, attempting: "access(when:)", limit: limit, file: file, line: line)
        let outbox = try _engine.waitExclusively(thread, until: condition, limit: limit, file: file, line: line)
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
    /// - Parameters:
    ///   - body: Reads or changes the state.
    ///   - file: Where the call is, for a schedule explorer's reports; leave the default.
    ///   - line: The line of the call, likewise.
    /// - Returns: What `body` returns, or `nil` if it didn't run.
    /// - Throws: What `body` throws.
    public func accessIfAvailable<R, E: Error>(
        _ body: (inout sending State) throws(E) -> sending R, file: StaticString = #fileID, line: UInt = #line
    ) throws(E) -> sending R? {
        let thread = _CurrentThread()
        _engine.checkBeforeNotWaiting(
            thread, .trying, shared: false, attempting: "accessIfAvailable", at: _Site(file, line))
        guard let outbox = _engine.tryTakeExclusively(thread) else { return nil }
        defer { _engine.releaseExclusively(thread, outbox) }
        return try body(&_engine._state.pointee)
    }
}

extension Exclusive: _MadeByEngine, _EngineInstance {
    typealias EngineState = State
    typealias EngineLock = _Lock
}
