// Entry points for tests only: what a test reads to know where the waiters are. Nothing in the
// engine calls them.

extension _WaitList {
    /// How many blocked threads wait asleep (not woken, not granted).
    var threadsAsleep: Int { _look { $0.waiters.count { $0.isThread && $0.status == .waiting } } }

    /// How many accesses wait for a condition (asleep, or awaited and submitted ones in line).
    var waiting: Int { releaseWork.sleepers }
}
