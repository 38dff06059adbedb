// MARK: - Waiting for the lock

/// Who may observe a wait for an instance's lock: the stuck-wait report (`Checks/`) and the
/// contention profile (`Profiling/`). Each is asked once per wait whether it is on.
@usableFromInline
struct _WaitObservers: OptionSet, Sendable {
    @usableFromInline let rawValue: UInt8
    @inlinable init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Reported once, if it lasts past the stuck-wait threshold.
    @usableFromInline static var watch: Self { Self(rawValue: 1) }
    /// Timed and recorded, while a contention profile runs.
    @usableFromInline static var profile: Self { Self(rawValue: 2) }
    /// What an access's own wait has: both.
    @usableFromInline static var access: Self { [.watch, .profile] }
}

extension _Engine {
    /// The one way an access waits for the lock once its quick path failed, exclusively: spins
    /// once (in the lock), then sleeps until `deadline` (for ever if nil), watched and profiled as
    /// `observers` allow. False, holding nothing, if the deadline passed first. The caller backs
    /// off for a granted waiter afterwards, if the state is promised to one.
    @usableFromInline @inline(never)
    func _waitExclusively(
        before deadline: _Deadline?, file: StaticString, line: UInt, observers: _WaitObservers
    ) -> Bool {
        _waitForLock(
            exclusively: true, before: deadline, file: file, line: line, observers: observers,
            spin: { _lock.spinExclusive() ? () : nil },
            sleep: { _lock.sleepExclusive(until: $0) ? () : nil }) != nil
    }

    /// `_waitExclusively` for shared access: a ticket, or nil once `deadline` passed.
    @usableFromInline @inline(never)
    func _waitShared(
        _ thread: _CurrentThread, before deadline: _Deadline?, file: StaticString, line: UInt,
        observers: _WaitObservers = .access
    ) -> Lock.SharedTicket? {
        _waitForLock(
            exclusively: false, before: deadline, file: file, line: line, observers: observers,
            spin: { _lock.spinShared(thread: thread.index) },
            sleep: { _lock.sleepShared(thread: thread.index, until: $0) })
    }

    /// The wait itself, in its steps.
    private func _waitForLock<Held>(
        exclusively: Bool, before deadline: _Deadline?, file: StaticString, line: UInt,
        observers: _WaitObservers, spin: () -> Held?, sleep: (_Deadline?) -> Held?
    ) -> Held? {
        // 1. The spin: a wait that ends in it is too short to report or to be worth timing.
        if let held = spin() { return held }

        // 2. Who observes this wait: asked here, once. The watch wants to report it when it lasts
        // too long (`Checks/`); the profile times it and counts it in (`Profiling/`).
        var reportAt = observers.contains(.watch) && _watchesWaits ? _Deadline(after: _StuckWait.threshold!) : nil
        let profiled = observers.contains(.profile) && _Contention.isOn ? _lockWaitBegins(at: _Site(file, line)) : nil

        // 3. The sleep: until the deadline, or first until the report, once.
        var held: Held?
        while true {
            if let report = reportAt, deadline.map({ report < $0 }) ?? true {
                held = sleep(report)
                if held != nil { break }
                _reportStuck(waitingFor: exclusively ? "to take" : "to read", file: file, line: line)
                reportAt = nil
            } else {
                held = sleep(deadline)
                break
            }
        }

        // 4. The end, with the lock or without it.
        if let profiled {
            _profiledLockWaitEnds(at: _Site(file, line), since: profiled, took: held != nil, exclusively: exclusively)
        }
        return held
    }
}
