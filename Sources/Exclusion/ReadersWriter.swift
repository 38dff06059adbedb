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
    /// The name of this instance, shown in re-entrancy messages.
    public let label: String

    @usableFromInline let _state: UnsafeMutablePointer<State>
    @usableFromInline let _lock = _ReadersWriterLock()
    @usableFromInline let _backlog = _Backlog<@Sendable (inout State) -> Void>()

    /// Creates an instance holding `initialState`.
    ///
    /// - Parameters:
    ///   - initialState: The state; from now on it is only reachable through the accessors.
    ///   - label: A name for messages and debugging, such as `"document index"`.
    public init(_ initialState: sending State, label: String = "ReadersWriter<\(State.self)>") {
        self.label = label
        _state = .allocate(capacity: 1)
        _state.initialize(to: initialState)
    }

    deinit {
        _LockOrder.forget(self)
        _state.deinitialize(count: 1)
        _state.deallocate()
    }

    /// Whether the calling thread is inside a read or a write of this instance right now.
    public var isAccessing: Bool {
        _CurrentThread().mode(in: self) != nil
    }

    @usableFromInline var _typeName: String { "ReadersWriter<\(State.self)>" }

    /// Before blocking for this instance: stops on re-entrancy, and checks the lock order against
    /// the other instances this thread is inside.
    @inlinable @inline(__always)
    func _checkNesting(_ thread: _CurrentThread, attempting attempted: String, file: StaticString, line: UInt) {
        guard thread.isInsideAny else { return }
        _checkNotInside(thread, attempting: attempted)
        _LockOrder.willAcquire(self, holding: thread, file: file, line: line)
    }

    @inlinable
    func _checkNotInside(_ thread: _CurrentThread, attempting attempted: String) {
        guard let mode = thread.mode(in: self) else { return }
        _reentrantAccess(
            type: _typeName, label: label, attempted: attempted, holding: mode == .shared ? "a read" : "a write")
    }
}

extension ReadersWriter: _LockOrderNamed {}

// @unchecked: _state is only read under the shared lock and only changed under the exclusive lock.
// Readers share the value, so the state itself must be Sendable.
extension ReadersWriter: @unchecked Sendable where State: Sendable {}

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
    @inlinable
    public func read<R, E: Error>(
        _ body: (State) throws(E) -> R, file: StaticString = #fileID, line: UInt = #line
    ) throws(E) -> R {
        let thread = _CurrentThread()
        _checkNesting(thread, attempting: "read", file: file, line: line)
        if _backlog.hasPending {
            // Work submitted earlier goes first, and it may write: run it all under exclusion.
            return try _exclusively(thread) { (state, _) throws(E) -> R in try body(state) }
        }
        let ticket = _lock.lockShared(thread: thread.index)
        thread.enter(self, .shared)
        defer {
            thread.leave()
            _lock.unlockShared(ticket)
        }
        return try body(_state.pointee)
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
    @inlinable
    public func write<R, E: Error>(
        _ body: (inout State) throws(E) -> R, file: StaticString = #fileID, line: UInt = #line
    ) throws(E) -> R {
        let thread = _CurrentThread()
        _checkNesting(thread, attempting: "write", file: file, line: line)
        return try _exclusively(thread) { (state, _) throws(E) -> R in try body(&state) }
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
    @inlinable
    public func write<R, E: Error>(
        _ body: (inout State, inout Outbox) throws(E) -> R, file: StaticString = #fileID, line: UInt = #line
    ) throws(E) -> R {
        let thread = _CurrentThread()
        _checkNesting(thread, attempting: "write", file: file, line: line)
        return try _exclusively(thread, body)
    }

    @inlinable
    func _exclusively<R, E: Error>(
        _ thread: _CurrentThread, _ body: (inout State, inout Outbox) throws(E) -> R
    ) throws(E) -> R {
        _lock.lockExclusive()
        var outbox = _enteredExclusively(thread)
        defer { _releaseExclusive(thread, outbox) }
        return try body(&_state.pointee, &outbox)
    }

    /// Call right after taking the exclusive lock: marks the thread as inside, then runs whatever
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

    /// Applies a plain `writeAsync` body; call with the state held exclusively.
    @usableFromInline
    func _apply(_ body: @Sendable (inout State) -> Void) {
        body(&_state.pointee)
    }

    /// Gives up exclusive access, then hands out what the accesses delivered, in the order they ran.
    @inlinable @inline(__always)
    func _releaseExclusive(_ thread: _CurrentThread, _ deliveries: borrowing Outbox) {
        thread.leave()
        if deliveries.isEmpty {
            _lock.unlockExclusive()
        } else {
            _releaseExclusiveDelivering(copy deliveries)
        }
    }

    @usableFromInline
    func _releaseExclusiveDelivering(_ deliveries: consuming Outbox) {
        _backlog.release(handingOut: deliveries) { _lock.unlockExclusive() }
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
        _submit(isRead: true) { deliveries in
            let result = Result { try body(self._state.pointee) }
            deliveries.post(on: queue) { completion(result) }
        }
    }

    /// Runs `body` with exclusive access to the state later, and returns at once.
    ///
    /// A read or write submitted by this thread afterwards sees its effects.
    ///
    /// ```swift
    /// names.writeAsync { $0.append("Notes.txt") }
    /// ```
    public func writeAsync(_ body: @escaping @Sendable (inout State) -> Void) {
        _submit(.plain(body))
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
        _submit(isRead: false) { deliveries in
            let result: Result<R, any Error>
            do { result = .success(try body(&self._state.pointee)) } catch { result = .failure(error) }
            deliveries.post(on: queue) { completion(result) }
        }
    }

    /// Runs `body` with shared access to the state, suspending instead of blocking while a write
    /// holds or waits for it, and returns its result.
    public func read<R: Sendable, E: Error>(_ body: @Sendable (State) throws(E) -> R) async throws(E) -> R {
        let thread = _CurrentThread()
        _checkNotInside(thread, attempting: "await read")
        if !_backlog.hasPending, let ticket = _lock.tryLockShared(thread: thread.index) {
            thread.enter(self, .shared)
            defer {
                thread.leave()
                _lock.unlockShared(ticket)
            }
            return try body(_state.pointee)
        }
        return try await _awaitTurn(isRead: true) { (state: inout State) throws(E) -> R in try body(state) }
    }

    /// Runs `body` with exclusive access to the state, suspending instead of blocking while other
    /// accesses hold it, and returns its result.
    public func write<R: Sendable, E: Error>(_ body: @Sendable (inout State) throws(E) -> R) async throws(E) -> R {
        let thread = _CurrentThread()
        _checkNotInside(thread, attempting: "await write")
        if _lock.tryLockExclusive() {
            let deliveries = _enteredExclusively(thread)
            defer { _releaseExclusive(thread, deliveries) }
            return try body(&_state.pointee)
        }
        return try await _awaitTurn(isRead: false, body)
    }

    private func _awaitTurn<R: Sendable, E: Error>(
        isRead: Bool, _ body: @Sendable (inout State) throws(E) -> R
    ) async throws(E) -> R {
        let result: Result<R, E> = await withoutActuallyEscaping(body) { body in
            await withUnsafeContinuation { continuation in
                let turn = _Turn(body: body, continuation: continuation)
                _submit(isRead: isRead) { deliveries in turn.run(&self._state.pointee, &deliveries) }
            }
        }
        return try result.get()
    }

    private func _submit(isRead: Bool, _ run: @escaping @Sendable (inout Outbox) -> Void) {
        _submit(.closure(isRead: isRead, run))
    }

    private func _submit(_ job: _Backlog<@Sendable (inout State) -> Void>.Job) {
        if _backlog.submit(job) {
            // At most one drain is scheduled at a time (the backlog sees to it), so a global queue
            // does what a private serial queue would, without one per instance.
            DispatchQueue.global().async { self._drain() }
        }
    }

    /// Runs the backlog: leading reads together under shared access,
    /// anything else under exclusive access, letting synchronous callers in between batches.
    private func _drain() {
        let thread = _CurrentThread()
        repeat {
            if _backlog.nextIsRead() == true {
                // If a synchronous access takes these reads first, this batch is just empty.
                let ticket = _lock.lockShared(thread: thread.index)
                thread.enter(self, .shared)
                var deliveries = Outbox()
                _backlog.runLeadingReads(&deliveries, apply: _apply)
                thread.leave()
                _release(ticket, deliveries)
            } else {
                _lock.lockExclusive()
                _releaseExclusive(thread, _enteredExclusively(thread))
            }
        } while !_backlog.finishDrain()
    }

    private func _release(_ ticket: _ReadersWriterLock.ReadTicket, _ deliveries: consuming Outbox) {
        if deliveries.isEmpty {
            _lock.unlockShared(ticket)
        } else {
            _backlog.release(handingOut: deliveries) { _lock.unlockShared(ticket) }
        }
    }
}
