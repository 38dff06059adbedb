import ExclusionShims

/// A readers-writer lock whose readers scale across cores and whose writers don't starve:
/// `exclusion_rwlock` from ExclusionShims, whose header (`ExclusionReadersWriterLock.h`) says how.
///
/// Reads take it through a slot of the table every lock shares while it is read-biased, and
/// otherwise through the underlying lock; writes wait only for the reads that started before them, like a dispatch
/// barrier; and every timed form sleeps until the lock is free or the deadline passes.
@usableFromInline
struct _ReadersWriterLock: @unchecked Sendable {
    // @unchecked: the lock is only touched through its own functions, which are thread-safe.

    /// A reader's ticket: the slot it announced itself in, or `EXCLUSION_READ_SLOW` if it holds
    /// the underlying lock instead.
    @usableFromInline typealias SharedTicket = Int32

    @usableFromInline let _handle: UnsafeMutablePointer<exclusion_rwlock>

    @inlinable
    init(_ handle: UnsafeMutablePointer<exclusion_rwlock>) {
        _handle = handle
    }

    // MARK: - Readers

    /// Shared access if the read bias gives it at once (it may fail when `tryLockShared` would
    /// succeed): the first step of a read.
    @inlinable
    func _tryFastShared(thread: UInt32) -> SharedTicket? {
        let ticket = exclusion_rwlock_read_quickly(_handle, thread)
        return ticket < 0 ? nil : ticket
    }

    /// Shared access if it can be had without waiting.
    @usableFromInline
    func tryLockShared(thread: UInt32) -> SharedTicket? {
        let ticket = exclusion_rwlock_try_read(_handle, thread)
        return ticket < 0 ? nil : ticket
    }

    /// Sleeps for shared access until `deadline` at the latest, or as long as it takes if nil; nil
    /// once the deadline passed. Pass the ticket to `unlockShared`.
    @usableFromInline
    func sleepShared(thread: UInt32, until deadline: _Deadline?) -> SharedTicket? {
        let ticket = exclusion_rwlock_read_until(_handle, thread, deadline?.nanoseconds ?? 0)
        return ticket < 0 ? nil : ticket
    }

    @inlinable
    func unlockShared(_ ticket: SharedTicket) {
        exclusion_rwlock_read_unlock(_handle, ticket)
    }

    // MARK: - Writers

    /// Exclusive access if no other thread holds the underlying lock; fast-path readers inside
    /// are waited out, as `lockExclusive` does.
    @inlinable
    func lockExclusiveIfFree() -> Bool {
        exclusion_rwlock_write_if_free(_handle) != 0
    }

    /// Exclusive access if it can be had without waiting.
    @usableFromInline
    func tryLockExclusive() -> Bool {
        exclusion_rwlock_try_write(_handle) != 0
    }

    /// Sleeps for exclusive access until `deadline` at the latest, or as long as it takes if nil;
    /// false, holding nothing, once the deadline passed. It waits for the readers inside to leave,
    /// not for readers that come later.
    @usableFromInline
    func sleepExclusive(until deadline: _Deadline?) -> Bool {
        exclusion_rwlock_write_until(_handle, deadline?.nanoseconds ?? 0) != 0
    }

    @inlinable
    func unlockExclusive() {
        exclusion_rwlock_write_unlock(_handle)
    }
}
