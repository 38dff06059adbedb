import Dispatch

/// A value that many pieces of code can read at once, and one at a time can change.
///
/// `ReadersWriter` is the read/write form of the lockless exclusion accessor: the classic
/// readers-writer idiom with a concurrent dispatch queue, where reads are plain blocks that share
/// the queue and writes are *barrier* blocks that run alone. The state is private; reads receive it
/// as an immutable value, writes receive it `inout`.
///
/// ```swift
/// let names = ReadersWriter([String](), label: "document names")
///
/// names.writeAsync { $0.append("Report.xml") }   // returns at once
/// let all = names.read { $0 }                     // sees the append: same thread, later
/// ```
///
/// - Reads overlap each other, on as many threads as call them.
/// - A write waits for the reads that started before it, then runs alone; reads that arrive while a
///   write waits queue behind it, so a stream of readers can't starve a writer.
/// - The work one thread submits runs in the order it submitted it, synchronous, asynchronous and
///   awaited alike.
///
/// Reads get a value instead of `inout` access, so a read can't change the state by mistake: the
/// compiler rejects it. That is the "immutable view" of the original pattern, checked at compile
/// time instead of at run time.
///
/// - Warning: Reading or writing an instance from inside one of its own reads or writes on the same
///   thread stops the process with a message naming the instance: it would deadlock. Use the state
///   passed to your closure instead.
public final class ReadersWriter<State> {
    // No stored property: the instance is its engine's storage (`_Engine`), made with it.

    /// The engine, a view of this instance's storage.
    @inlinable var _engine: _Engine<State, _ReadersWriterLock> { _Engine(of: self) }

    /// Creates an instance holding `initialState`, labeled with its type (`ReadersWriter<State>`).
    ///
    /// - Parameter initialState: The state; from now on it is only reachable through the accessors.
    @inlinable
    public convenience init(_ initialState: sending State) {
        self.init(
            _made: _Engine<State, _ReadersWriterLock>.make(initialState, label: nil, as: ReadersWriter<State>.self))
    }

    /// Creates an instance holding `initialState`, with a label for messages.
    ///
    /// - Parameters:
    ///   - initialState: The state; from now on it is only reachable through the accessors.
    ///   - label: A name for messages and debugging, such as `"document index"`.
    @inlinable
    public convenience init(_ initialState: sending State, label: String) {
        self.init(
            _made: _Engine<State, _ReadersWriterLock>.make(initialState, label: label, as: ReadersWriter<State>.self))
    }

    deinit {
        // Iterators of `values` end, and so do accesses still waiting for a condition.
        _engine.tearDown()
    }

    /// The name of this instance, shown in re-entrancy messages.
    public var label: String { _engine.label }

    /// Whether the calling thread is inside a read or a write of this instance right now.
    public var isAccessing: Bool { _engine.isAccessing }
}

// Readers share the value, so the state itself must be Sendable for the instance to be shared.
extension ReadersWriter: Sendable where State: Sendable {}

// MARK: - Synchronous access

extension ReadersWriter {
    /// Runs `body` with shared access to the state, alongside other reads, and returns its result.
    ///
    /// The read starts after every access this thread submitted earlier has run, and after any
    /// write in progress or waiting has finished.
    ///
    /// ```swift
    /// let count = names.read { $0.count }
    /// ```
    ///
    /// - Parameters:
    ///   - body: Reads the state, which it receives as a value.
    ///   - file: Where the call is, for the lock-order check's message; leave the default.
    ///   - line: The line of the call, likewise.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    /// - Warning: Calling any accessor of this instance from inside `body` stops the process.
    @inlinable @inline(__always)
    public func read<R, E: Error>(
        _ body: (State) throws(E) -> R, file: StaticString = #fileID, line: UInt = #line
    ) throws(E) -> R {
        let thread = _CurrentThread()
        _engine.checkNesting(thread, attempting: "read", shared: true, file: file, line: line)
        return try _engine.shared(thread, file: file, line: line, body)
    }

    /// Runs `body` with exclusive access to the state, after the reads in progress and before the
    /// reads that come later, and returns its result.
    ///
    /// ```swift
    /// names.write { $0.removeAll { $0.hasPrefix("~") } }
    /// ```
    ///
    /// - Parameters:
    ///   - body: Reads or changes the state. Changes made before a throw stay.
    ///   - file: Where the call is, for the lock-order check's message; leave the default.
    ///   - line: The line of the call, likewise.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    /// - Warning: Calling any accessor of this instance from inside `body` stops the process.
    @inlinable @inline(__always)
    public func write<R, E: Error>(
        _ body: (inout State) throws(E) -> R, file: StaticString = #fileID, line: UInt = #line
    ) throws(E) -> R {
        try write({ (state, _) throws(E) -> R in try body(&state) }, file: file, line: line)
    }

    /// Runs `body` with exclusive access to the state and an outbox for what should happen after
    /// the write, and returns its result.
    ///
    /// Work posted to the outbox runs after the state is released, in the order the writes ran.
    /// See ``Outbox``.
    ///
    /// - Parameters:
    ///   - body: Reads or changes the state, and posts to the outbox.
    ///   - file: Where the call is, for the lock-order check's message; leave the default.
    ///   - line: The line of the call, likewise.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    @inlinable @inline(__always)
    public func write<R, E: Error>(
        _ body: (inout State, inout Outbox) throws(E) -> R, file: StaticString = #fileID, line: UInt = #line
    ) throws(E) -> R {
        let thread = _CurrentThread()
        _engine.checkNesting(thread, attempting: "write", file: file, line: line)
        var outbox = _engine.takeExclusively(thread, file: file, line: line)
        defer { _engine.releaseExclusively(thread, outbox, file: file, line: line) }
        return try body(&_engine._state.pointee, &outbox)
    }
}

// MARK: - Asynchronous access

// Asynchronous work runs on another thread, so it needs an instance that can be shared.
extension ReadersWriter where State: Sendable {
    /// Runs `body` with shared access to the state later, and delivers its result on `queue`.
    ///
    /// - Parameters:
    ///   - queue: Where `completion` runs; the main queue unless you pick another.
    ///   - body: Reads the state and returns a result.
    ///   - completion: Receives what `body` returned or threw, exactly once, on `queue`, after the
    ///     state has been released.
    public func readAsync<R: Sendable>(
        deliverOn queue: DispatchQueue = .main,
        _ body: @escaping @Sendable (State) throws -> R,
        completion: @escaping @Sendable (Result<R, any Error>) -> Void
    ) {
        _engine.submitShared(attempting: "readAsync", deliverOn: queue, body, completion: completion)
    }

    /// Runs `body` with exclusive access to the state later, and returns at once.
    ///
    /// A read or write submitted by this thread afterwards sees its effects.
    ///
    /// ```swift
    /// names.writeAsync { $0.append("Notes.txt") }
    /// ```
    @inlinable
    public func writeAsync(_ body: @escaping @Sendable (inout State) -> Void) {
        _engine.submit(attempting: "writeAsync", body)
    }

    /// Runs `body` with exclusive access to the state later, and delivers its result on `queue`.
    ///
    /// - Parameters:
    ///   - queue: Where `completion` runs; the main queue unless you pick another.
    ///   - body: Reads or changes the state and returns a result. Changes made before a throw stay.
    ///   - completion: Receives what `body` returned or threw, exactly once, on `queue`, after the
    ///     state has been released.
    public func writeAsync<R: Sendable>(
        deliverOn queue: DispatchQueue = .main,
        _ body: @escaping @Sendable (inout State) throws -> R,
        completion: @escaping @Sendable (Result<R, any Error>) -> Void
    ) {
        _engine.submit(attempting: "writeAsync", deliverOn: queue, body, completion: completion)
    }

    /// Runs `body` with shared access to the state, suspending instead of blocking while a write
    /// holds or waits for it, and returns its result.
    ///
    /// It runs in the caller's isolation: if it needn't wait, `body` runs at once on the caller's
    /// thread and actor; otherwise the task suspends and resumes where it was.
    ///
    /// `file` and `line` name the call in a ``ContentionProfile``; leave the defaults.
    @inlinable @inline(__always)
    nonisolated(nonsending) public func read<R: Sendable, E: Error>(
        _ body: @Sendable (State) throws(E) -> R, file: StaticString = #fileID, line: UInt = #line
    ) async throws(E) -> R {
        try await _engine.awaitShared(attempting: "await read", at: _Site(file, line), body)
    }

    /// Runs `body` with exclusive access to the state, suspending instead of blocking while other
    /// accesses hold it, and returns its result.
    ///
    /// It runs in the caller's isolation: if it needn't wait, `body` runs at once on the caller's
    /// thread and actor; otherwise the task suspends and resumes where it was.
    ///
    /// `file` and `line` name the call in a ``ContentionProfile``; leave the defaults.
    @inlinable @inline(__always)
    nonisolated(nonsending) public func write<R: Sendable, E: Error>(
        _ body: @Sendable (inout State) throws(E) -> R, file: StaticString = #fileID, line: UInt = #line
    ) async throws(E) -> R {
        try await _engine.awaitExclusively(attempting: "await write", at: _Site(file, line), body)
    }
}

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
        let limit = timeout.map(_TimeLimit.init)
        try _engine.checkNesting(thread, attempting: "read(when:)", limit: limit, file: file, line: line)
        return try _engine.shared(thread, when: condition, limit: limit, file: file, line: line, body)
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
        let limit = timeout.map(_TimeLimit.init)
        try _engine.checkNesting(thread, attempting: "write(when:)", limit: limit, file: file, line: line)
        let outbox = try _engine.waitExclusively(thread, until: condition, limit: limit, file: file, line: line)
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
    /// - Parameters:
    ///   - body: Reads the state, which it receives as a value.
    ///   - file: Where the call is, for a schedule explorer's reports; leave the default.
    ///   - line: The line of the call, likewise.
    /// - Returns: What `body` returns, or `nil` if it didn't run.
    /// - Throws: What `body` throws.
    public func readIfAvailable<R, E: Error>(
        _ body: (State) throws(E) -> R, file: StaticString = #fileID, line: UInt = #line
    ) throws(E) -> R? {
        let thread = _CurrentThread()
        _engine.checkBeforeNotWaiting(
            thread, .trying, shared: true, attempting: "readIfAvailable", at: _Site(file, line))
        return try _engine.sharedIfAvailable(thread, body)
    }

    /// Runs `body` with exclusive access to the state if nothing holds it right now, and returns
    /// its result; returns `nil` at once otherwise.
    ///
    /// It never fails spuriously: `nil` means a read or a write held the state (or it was
    /// promised to a waiting access) at the moment of asking.
    ///
    /// - Parameters:
    ///   - body: Reads or changes the state.
    ///   - file: Where the call is, for a schedule explorer's reports; leave the default.
    ///   - line: The line of the call, likewise.
    /// - Returns: What `body` returns, or `nil` if it didn't run.
    /// - Throws: What `body` throws.
    public func writeIfAvailable<R, E: Error>(
        _ body: (inout State) throws(E) -> R, file: StaticString = #fileID, line: UInt = #line
    ) throws(E) -> R? {
        let thread = _CurrentThread()
        _engine.checkBeforeNotWaiting(
            thread, .trying, shared: false, attempting: "writeIfAvailable", at: _Site(file, line))
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

extension ReadersWriter: _MadeByEngine, _EngineInstance {
    typealias EngineState = State
    typealias EngineLock = _ReadersWriterLock
}
