/// What the access engine needs from a lock: exclusive access, and shared access if the lock has
/// any. This is the one thing `Exclusive` and `ReadersWriter` do differently.
@usableFromInline
protocol _EngineLock: Sendable {
    /// What a reader keeps while it holds the lock shared, to give it back.
    associatedtype ReadTicket

    /// Whether readers can hold the lock at the same time. If not, the engine never batches reads.
    static var sharesReads: Bool { get }

    /// How a thread inside an instance in `mode` is described in re-entrancy messages.
    static func describe(_ mode: _CurrentThread.Mode) -> String

    init()
    /// Frees the lock; called once, from the engine's `deinit`.
    func destroy()

    func lockExclusive()
    func tryLockExclusive() -> Bool
    func unlockExclusive()
    /// Exclusive access within `timeout`, or false; only for watched waits, which may be slower.
    func lockExclusive(waitingAtMost timeout: Duration) -> Bool

    func lockShared(thread: UInt32) -> ReadTicket
    /// Shared access if the lock's quickest path gives it (it may fail even when `tryLockShared`
    /// would succeed); the first step of a read.
    func lockSharedQuickly(thread: UInt32) -> ReadTicket?
    /// Shared access within `timeout`, or nil; only for watched waits, which may be slower.
    func lockShared(thread: UInt32, waitingAtMost timeout: Duration) -> ReadTicket?
    func tryLockShared(thread: UInt32) -> ReadTicket?
    func unlockShared(_ ticket: ReadTicket)
}

/// `Exclusive`'s lock: every access is exclusive.
extension _Lock: _EngineLock {
    @usableFromInline static var sharesReads: Bool { false }

    @usableFromInline static func describe(_ mode: _CurrentThread.Mode) -> String { "an access" }

    @inlinable func lockExclusive() { lock() }
    @inlinable func tryLockExclusive() -> Bool { tryLock() }
    @inlinable func unlockExclusive() { unlock() }

    @inlinable func lockShared(thread: UInt32) { lock() }
    @inlinable func tryLockShared(thread: UInt32) -> Void? { tryLock() ? () : nil }
    @inlinable func unlockShared(_ ticket: Void) { unlock() }
    @inlinable func lockSharedQuickly(thread: UInt32) -> Void? { tryLock() ? () : nil }

    @usableFromInline func lockShared(thread: UInt32, waitingAtMost timeout: Duration) -> Void? {
        lockExclusive(waitingAtMost: timeout) ? () : nil
    }
}

/// `ReadersWriter`'s lock: reads share it, writes hold it alone.
extension _ReadersWriterLock: _EngineLock {
    @usableFromInline static var sharesReads: Bool { true }

    @usableFromInline static func describe(_ mode: _CurrentThread.Mode) -> String {
        mode == .shared ? "a read" : "a write"
    }

    @inlinable func lockSharedQuickly(thread: UInt32) -> ReadTicket? { _tryFastRead(thread: thread) }

    /// Nothing to do: the lock frees itself when the engine lets go of it.
    @usableFromInline func destroy() {}
}
