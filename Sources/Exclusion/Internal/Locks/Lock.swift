import ExclusionShims

/// A plain mutual-exclusion lock at a stable address: `exclusion_lock` from ExclusionShims.
///
/// The fast path of every access goes through this lock, so it is the cheapest one each platform
/// can have. On Linux it is Exclusion's own (`ExclusionLock.h` says how it gives the lock back with
/// a plain store, and why sleepers are still never missed); on Apple platforms it is
/// `os_unfair_lock`, which lends a waiter's priority to the holder, with a timed wait beside it
/// that sleeps instead of polling (`ExclusionOwnedLock.h`). `ExclusionPlatform.h` says which.
@usableFromInline
struct _Lock: @unchecked Sendable {
    // @unchecked: the pointee is only touched through the lock's own functions.
    @usableFromInline let _handle: UnsafeMutablePointer<exclusion_lock>

    @usableFromInline
    init() {
        _handle = .allocate(capacity: 1)
        exclusion_lock_init(_handle)
    }

    /// Frees the lock; call once, when no thread can reach it any more: not merely when it is free,
    /// but when every thread that called into it has returned.
    @usableFromInline
    func destroy() {
        _handle.deallocate()
    }

    /// Takes the lock, spinning and then sleeping, as long as it takes: for the locks beside an
    /// instance's (the wait list's, the backlog's). An instance's own lock is waited for in steps
    /// (`spin`, then `sleep(until:)`), so that the engine can watch and profile the wait.
    @inlinable
    func lock() {
        exclusion_lock_lock(_handle)
    }

    @inlinable
    func tryLock() -> Bool {
        exclusion_lock_try(_handle) != 0
    }

    /// Takes the lock if it comes free within the spin a wait starts with (one try where nothing
    /// spins); whether it did.
    @usableFromInline
    func spin() -> Bool {
        exclusion_lock_spin(_handle) != 0
    }

    /// Sleeps until the lock is free and takes it, without spinning first: until `deadline` at the
    /// latest, or as long as it takes if nil; whether it got it.
    @usableFromInline
    func sleep(until deadline: _Deadline?) -> Bool {
        exclusion_lock_sleep_until(_handle, deadline?.nanoseconds ?? 0) != 0
    }

    @inlinable
    func unlock() {
        exclusion_lock_unlock(_handle)
    }
}
