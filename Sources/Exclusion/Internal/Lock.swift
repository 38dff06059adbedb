import ExclusionShims

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A plain mutual-exclusion lock at a stable address.
///
/// The fast path of every access goes through this lock, so it is the cheapest one each platform
/// has: `os_unfair_lock` on Apple platforms; on Linux, `exclusion_lock` from ExclusionShims, which
/// gives the lock back with a plain store instead of an atomic read-modify-write (its header says
/// how sleepers stay safe). `pthread_mutex_t` pays two read-modify-writes per access, and
/// `Synchronization.Mutex` on Linux about twice that (priority-inheritance futexes).
@usableFromInline
struct _Lock: @unchecked Sendable {
    // @unchecked: the pointee is only touched through the platform's lock functions.
    #if canImport(Darwin)
    @usableFromInline let _handle: UnsafeMutablePointer<os_unfair_lock>
    #else
    @usableFromInline let _handle: UnsafeMutablePointer<exclusion_lock>
    #endif

    @usableFromInline
    init() {
        _handle = .allocate(capacity: 1)
        #if canImport(Darwin)
        _handle.initialize(to: os_unfair_lock())
        #else
        _handle.initialize(to: exclusion_lock(word: 0, sleepers: 0, waking: 0, wakeups: 0))
        #endif
    }

    /// Frees the lock; call once, when no thread can reach it any more.
    @usableFromInline
    func destroy() {
        _handle.deinitialize(count: 1)
        _handle.deallocate()
    }

    @inlinable
    func lock() {
        #if canImport(Darwin)
        os_unfair_lock_lock(_handle)
        #else
        exclusion_lock_lock(_handle)
        #endif
    }

    @inlinable
    func tryLock() -> Bool {
        #if canImport(Darwin)
        return os_unfair_lock_trylock(_handle)
        #else
        return exclusion_lock_try(_handle) != 0
        #endif
    }

    /// Waits for the lock at most `timeout`; whether it got it.
    @usableFromInline
    func lockExclusive(waitingAtMost timeout: Duration) -> Bool {
        #if canImport(Darwin)
        _lockWithin(timeout, timed: nil, polling: { tryLock() ? 0 : EBUSY })
        #else
        tryLock() || exclusion_lock_wait_at_most(_handle, _nanoseconds(timeout)) != 0
        #endif
    }

    @inlinable
    func unlock() {
        #if canImport(Darwin)
        os_unfair_lock_unlock(_handle)
        #else
        exclusion_lock_unlock(_handle)
        #endif
    }
}

/// Takes a lock within `timeout`: with `timed`, a POSIX timed lock call given its deadline, where
/// the platform has one (Linux); otherwise by polling `polling`, a try-lock call, every
/// millisecond (Apple platforms have no timed mutex or rwlock). Both return 0 on success. Only
/// watched waits come here, so polling is acceptable.
func _lockWithin(
    _ timeout: Duration, timed: ((UnsafePointer<timespec>) -> Int32)?, polling: () -> Int32
) -> Bool {
    #if !canImport(Darwin)
    if let timed {
        var deadline = _realtimeDeadline(after: timeout)
        return timed(&deadline) == 0
    }
    #endif
    let deadline = ContinuousClock.now + timeout
    while polling() != 0 {
        if ContinuousClock.now >= deadline { return false }
        usleep(1_000)
    }
    return true
}

/// The `CLOCK_REALTIME` moment `timeout` from now, as the POSIX timed waits want it.
func _realtimeDeadline(after timeout: Duration) -> timespec {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    let total = Int64(now.tv_nsec) + _nanoseconds(timeout) % 1_000_000_000
    var deadline = timespec()
    deadline.tv_sec = now.tv_sec + Int(_nanoseconds(timeout) / 1_000_000_000) + Int(total / 1_000_000_000)
    deadline.tv_nsec = Int(total % 1_000_000_000)
    return deadline
}
