// Entry points for tests only: what a test reads to know where the waiters are. Nothing in the
// engine calls them.

extension _WaitList {
    /// How many blocked threads wait asleep (not woken, not granted).
    var threadsAsleep: Int {
        _look { line in
            line.entries.count { waiter in
                if case .thread(_, woken: false, _) = waiter.entry { true } else { false }
            }
        }
    }

    /// How many accesses wait for a condition (asleep, or awaited and submitted ones in line).
    var waiting: Int { releaseWork.sleepers }
}
