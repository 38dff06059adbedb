import Dispatch

// Entry points for tests only: what a test reads to know where the waiters are, and what a test's
// subclass of `_WaitList` calls to plant a bug. Nothing in the engine calls them.

extension _WaitList {
    /// How many blocked threads wait asleep (not woken, not granted).
    final var threadsAsleep: Int {
        _lock.lock()
        defer { _lock.unlock() }
        return _waiters.count { $0.isThread && $0.status == .waiting }
    }

    /// How many accesses wait for a condition (asleep, or awaited and submitted ones in line).
    final var waiting: Int { releaseWork.sleepers }

    /// Wakes every blocked thread, whatever its condition says: what a release that signals
    /// everyone instead of checking would do.
    final func wakeEveryThreadWithoutChecking() {
        _lock.lock()
        for waiter in _waiters where waiter.status == .waiting && waiter.isThread {
            waiter.status = .woken
            releaseWork.sleeperLeaves()
            waiter.semaphore!.signal()
        }
        _lock.unlock()
    }
}
