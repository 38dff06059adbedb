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
/// has: `os_unfair_lock` on Apple platforms; on Linux, `exclusion_lock` from ExclusionShims
/// (`ExclusionLock.h` says how it gives the lock back with a plain store, and why sleepers are
/// still never missed); `pthread_mutex_t` elsewhere.
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
        exclusion_lock_init(_handle)
        #else
        _handle.initialize(to: pthread_mutex_t())
        let status = pthread_mutex_init(_handle, nil)
        precondition(status == 0, "pthread_mutex_init failed: \(status)")
        #endif
    }

    /// Frees the lock; call once, when no thread can reach it any more: not merely when it is free,
    /// but when every thread that called into it has returned.
    @usableFromInline
    func destroy() {
        #if !canImport(Darwin) && !os(Linux)
        pthread_mutex_destroy(_handle)
        #endif
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

    /// Whether `spinTimed` can take the lock: only where the lock's spin is Exclusion's own.
    @usableFromInline static var timesItsSpin: Bool {
        #if os(Linux) && !canImport(Darwin)
        true
        #else
        false
        #endif
    }

    /// The spin that a timed wait starts with: when it took the lock on the monotonic clock, read
    /// before the look that took it, so that timing a wait doesn't lengthen the hold that the next
    /// waiter waits out; nil if the spin ended first, and always where the platform's lock spins
    /// out of sight.
    @usableFromInline
    func spinTimed() -> UInt64? {
        #if os(Linux) && !canImport(Darwin)
        let took = exclusion_lock_spin_timed(_handle)
        return took == 0 ? nil : took
        #else
        return nil
        #endif
    }

    /// The rest of a timed wait, once `spinTimed` returned nil: takes the lock, waiting as long as
    /// it takes, and returns when it got it on the monotonic clock, given that the wait began at
    /// `start`. On Linux the clock is read before each look at the lock, not once it is held.
    @usableFromInline
    func lockTimed(afterSpinningSince start: UInt64) -> UInt64 {
        #if os(Linux) && !canImport(Darwin)
        return exclusion_lock_sleep_timed(_handle, start)
        #else
        lock()
        return _Contention.now()
        #endif
    }

    /// Waits for the lock until `deadline` at the latest; whether it got it.
    @usableFromInline
    func lock(before deadline: _Deadline) -> Bool {
        #if canImport(Darwin)
        // Apple platforms have no timed mutex: poll, backing off.
        _poll(until: deadline) { tryLock() }
        #elseif os(Linux)
        tryLock() || exclusion_lock_wait_until(_handle, deadline.nanoseconds) != 0
        #else
        var realtime = deadline.realtime
        return pthread_mutex_timedlock(_handle, &realtime) == 0
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

/// Calls `attempt` until it succeeds, backing off between calls, or until `deadline` passes;
/// whether it succeeded.
func _poll(until deadline: _Deadline, _ attempt: () -> Bool) -> Bool {
    var backoff = exclusion_backoff()
    while !attempt() {
        if deadline.hasPassed { return false }
        exclusion_backoff_wait(&backoff)
    }
    return true
}
