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

    /// Exclusive access if no other thread holds the lock, and false, holding nothing, if one does:
    /// the engine's quick path, which sends a contended acquisition out of line. Unlike
    /// `tryLockExclusive` it may wait out readers on their way in or out, as a wait would.
    func lockExclusiveIfFree() -> Bool
    func tryLockExclusive() -> Bool
    /// Exclusive access if it comes within the lock's own spin (one try, for a lock that doesn't
    /// spin before it sleeps); false, holding nothing, otherwise.
    func spinExclusive() -> Bool
    /// Sleeps for exclusive access, without spinning first: until `deadline` at the latest (false,
    /// holding nothing, once it passed), or as long as it takes if nil.
    func sleepExclusive(until deadline: _Deadline?) -> Bool
    func unlockExclusive()

    /// Shared access if the lock's quickest path gives it (it may fail even when `tryLockShared`
    /// would succeed); the first step of a read.
    func lockSharedQuickly(thread: UInt32) -> SharedTicket?
    func tryLockShared(thread: UInt32) -> SharedTicket?
    /// Shared access if it comes within the lock's own spin; as `spinExclusive`.
    func spinShared(thread: UInt32) -> SharedTicket?
    /// Sleeps for shared access, as `sleepExclusive`: nil once `deadline` passed.
    func sleepShared(thread: UInt32, until deadline: _Deadline?) -> SharedTicket?
    func unlockShared(_ ticket: SharedTicket)
}

/// `Exclusive`'s lock: every access is exclusive.
extension _Lock: _EngineLock {
    @usableFromInline static var sharesAccess: Bool { false }

    @usableFromInline static func describe(_ mode: _CurrentThread.Mode) -> String { "an access" }

    @inlinable func lockExclusiveIfFree() -> Bool { tryLock() }
    @inlinable func tryLockExclusive() -> Bool { tryLock() }
    @usableFromInline func spinExclusive() -> Bool { spin() }
    @usableFromInline func sleepExclusive(until deadline: _Deadline?) -> Bool { sleep(until: deadline) }
    @inlinable func unlockExclusive() { unlock() }

    @inlinable func lockSharedQuickly(thread: UInt32) -> Void? { tryLock() ? () : nil }
    @inlinable func tryLockShared(thread: UInt32) -> Void? { tryLock() ? () : nil }
    @usableFromInline func spinShared(thread: UInt32) -> Void? { spin() ? () : nil }
    @usableFromInline func sleepShared(thread: UInt32, until deadline: _Deadline?) -> Void? {
        sleep(until: deadline) ? () : nil
    }
    @inlinable func unlockShared(_ ticket: Void) { unlock() }
}

/// `ReadersWriter`'s lock: reads share it, writes hold it alone.
extension _ReadersWriterLock: _EngineLock {
    @usableFromInline static var sharesAccess: Bool { true }

    @usableFromInline static func describe(_ mode: _CurrentThread.Mode) -> String {
        mode == .shared ? "a read" : "a write"
    }

    @inlinable func lockSharedQuickly(thread: UInt32) -> SharedTicket? { _tryFastShared(thread: thread) }

    /// No spin of its own: one try.
    @usableFromInline func spinExclusive() -> Bool { tryLockExclusive() }
    @usableFromInline func spinShared(thread: UInt32) -> SharedTicket? { tryLockShared(thread: thread) }

    /// Nothing to do: the lock frees itself when the engine lets go of it.
    @usableFromInline func destroy() {}
}
