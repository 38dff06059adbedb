/// What the access engine needs from a lock: exclusive access, and shared access if the lock has
/// any. This is the one thing `Exclusive` and `ReadersWriter` do differently.
@usableFromInline
protocol _EngineLock: Sendable {
    /// What a thread keeps while it holds the lock shared, to give it back.
    associatedtype SharedTicket

    /// Whether threads can hold the lock shared at the same time. If not, the engine never batches
    /// shared work.
    static var sharesAccess: Bool { get }

    /// How a thread inside an instance in `mode` is described in re-entrancy messages.
    static func describe(_ mode: _CurrentThread.Mode) -> String

    init()
    /// Frees the lock; called once, from the engine's `deinit`.
    func destroy()

    func lockExclusive()
    func tryLockExclusive() -> Bool
    /// Exclusive access if it comes within the lock's own spin (at once, for a lock that doesn't
    /// spin before it sleeps); false, holding nothing, otherwise.
    func lockExclusiveBySpinning() -> Bool
    /// Exclusive access as long as it takes, after `lockExclusiveBySpinning` failed: without a
    /// second spin.
    func lockExclusiveAfterSpinning()
    /// What `lockExclusive` does if nobody else holds the lock, and false, holding nothing, if
    /// somebody does: the engine's quick path, which sends a contended acquisition out of line.
    /// It may wait out readers on their way in or out (unlike `tryLockExclusive`), as
    /// `lockExclusive` does, so that it costs no more than `lockExclusive`.
    func lockExclusiveIfFree() -> Bool
    func unlockExclusive()
    /// Exclusive access by `deadline`, or false, holding nothing; only for timed waits.
    func lockExclusive(before deadline: _Deadline) -> Bool
    /// Exclusive access, as long as it takes; calls `report` once if `deadline` passes first, and
    /// keeps its place meanwhile. Only for watched waits.
    func lockExclusive(reportingAt deadline: _Deadline, _ report: () -> Void)

    func lockShared(thread: UInt32) -> SharedTicket
    /// Shared access if the lock's quickest path gives it (it may fail even when `tryLockShared`
    /// would succeed); the first step of a read.
    func lockSharedQuickly(thread: UInt32) -> SharedTicket?
    /// Shared access by `deadline`, or nil; only for timed and watched waits.
    func lockShared(thread: UInt32, before deadline: _Deadline) -> SharedTicket?
    func tryLockShared(thread: UInt32) -> SharedTicket?
    func unlockShared(_ ticket: SharedTicket)
}

/// `Exclusive`'s lock: every access is exclusive.
extension _Lock: _EngineLock {
    @usableFromInline static var sharesAccess: Bool { false }

    @usableFromInline static func describe(_ mode: _CurrentThread.Mode) -> String { "an access" }

    @inlinable func lockExclusive() { lock() }
    @inlinable func tryLockExclusive() -> Bool { tryLock() }
    @usableFromInline func lockExclusiveBySpinning() -> Bool { lockBySpinning() }
    @usableFromInline func lockExclusiveAfterSpinning() { lockAfterSpinning() }
    @inlinable func lockExclusiveIfFree() -> Bool { tryLock() }
    @inlinable func unlockExclusive() { unlock() }
    @usableFromInline func lockExclusive(before deadline: _Deadline) -> Bool { lock(before: deadline) }
    @usableFromInline func lockExclusive(reportingAt deadline: _Deadline, _ report: () -> Void) {
        if !lock(before: deadline) {
            report()
            lock()
        }
    }

    @inlinable func lockShared(thread: UInt32) { lock() }
    @inlinable func tryLockShared(thread: UInt32) -> Void? { tryLock() ? () : nil }
    @inlinable func unlockShared(_ ticket: Void) { unlock() }
    @inlinable func lockSharedQuickly(thread: UInt32) -> Void? { tryLock() ? () : nil }
    @usableFromInline func lockShared(thread: UInt32, before deadline: _Deadline) -> Void? {
        lock(before: deadline) ? () : nil
    }
}

/// `ReadersWriter`'s lock: reads share it, writes hold it alone.
extension _ReadersWriterLock: _EngineLock {
    @usableFromInline static var sharesAccess: Bool { true }

    @usableFromInline static func describe(_ mode: _CurrentThread.Mode) -> String {
        mode == .shared ? "a read" : "a write"
    }

    @inlinable func lockSharedQuickly(thread: UInt32) -> SharedTicket? { _tryFastShared(thread: thread) }

    /// No spin of its own: one try.
    @usableFromInline func lockExclusiveBySpinning() -> Bool { tryLockExclusive() }
    @usableFromInline func lockExclusiveAfterSpinning() { lockExclusive() }

    /// Nothing to do: the lock frees itself when the engine lets go of it.
    @usableFromInline func destroy() {}
}
