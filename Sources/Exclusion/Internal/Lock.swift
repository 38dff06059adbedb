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
/// why sleepers are still never missed); `pthread_mutex_t` elsewhere. On Linux `pthread_mutex_t`
/// costs two atomic read-modify-writes per access, about 5 ns each on the machines we measure,
/// and `Synchronization.Mutex` about twice that (priority-inheritance futexes).
@usableFromInline
struct _Lock: @unchecked Sendable {
    // @unchecked: the pointee is only touched through the platform's lock functions.
    #if canImport(Darwin)
    @usableFromInline let _handle: UnsafeMutablePointer<os_unfair_lock>
    #elseif os(Linux)
    @usableFromInline let _handle: UnsafeMutablePointer<exclusion_lock>
    #else
    @usableFromInline let _handle: UnsafeMutablePointer<pthread_mutex_t>
    #endif

    @usableFromInline
    init() {
        _handle = .allocate(capacity: 1)
        #if canImport(Darwin)
        _handle.initialize(to: os_unfair_lock())
        #elseif os(Linux)
        _handle.initialize(to: exclusion_lock(word: 0, sleepers: 0, waking: 0, wakeups: 0))
        #else
        _handle.initialize(to: pthread_mutex_t())
        let status = pthread_mutex_init(_handle, nil)
        precondition(status == 0, "pthread_mutex_init failed: \(status)")
        #endif
    }

    /// Frees the lock; call once, when no thread can reach it any more.
    @usableFromInline
    func destroy() {
        #if !canImport(Darwin) && !os(Linux)
        pthread_mutex_destroy(_handle)
        #endif
        _handle.deinitialize(count: 1)
        _handle.deallocate()
    }

    @inlinable
    func lock() {
        #if canImport(Darwin)
        os_unfair_lock_lock(_handle)
        #elseif os(Linux)
        exclusion_lock_lock(_handle)
        #else
        pthread_mutex_lock(_handle)
        #endif
    }

    @inlinable
    func tryLock() -> Bool {
        #if canImport(Darwin)
        return os_unfair_lock_trylock(_handle)
        #elseif os(Linux)
        return exclusion_lock_try(_handle) != 0
        #else
        return pthread_mutex_trylock(_handle) == 0
        #endif
    }

    /// Waits for the lock at most `timeout`; whether it got it.
    @usableFromInline
    func lockExclusive(waitingAtMost timeout: Duration) -> Bool {
        #if canImport(Darwin)
        _lockWithin(timeout, timed: nil, polling: { tryLock() ? 0 : EBUSY })
        #elseif os(Linux)
        tryLock() || exclusion_lock_wait_at_most(_handle, _nanoseconds(timeout)) != 0
        #else
        _lockWithin(
            timeout, timed: { pthread_mutex_timedlock(_handle, $0) }, polling: { pthread_mutex_trylock(_handle) })
        #endif
    }

    @inlinable
    func unlock() {
        #if canImport(Darwin)
        os_unfair_lock_unlock(_handle)
        #elseif os(Linux)
        exclusion_lock_unlock(_handle)
        #else
        pthread_mutex_unlock(_handle)
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
