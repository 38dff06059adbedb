import Dispatch
import ExclusionShims
import Synchronization

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

        // 2. Who observes this wait: asked once (`_observeWait`).
        let observed = _observeWait(exclusively ? .exclusiveLock : .sharedLock, at: _Site(file, line), observers)
        let watched = observed.watched
        let profiled = observed.isProfiled ? _lockWaitBegins(at: _Site(file, line)) : nil

        // 3. The sleep, until the deadline (for ever if there is none).
        let held = sleep(deadline)

        // 4. The end, with the lock or without it.
        watched?.end()
        if let profiled {
            _profiledLockWaitEnds(at: _Site(file, line), since: profiled, took: held != nil, exclusively: exclusively)
        }
        return held
    }
}

// MARK: - Who observes a wait

/// A wait an access makes, as the observers of waits tell them apart.
enum _ObservedWait {
    /// A thread's wait for the lock.
    case exclusiveLock, sharedLock
    /// A thread's wait for its condition to hold.
    case condition
    /// A task's wait for its turn at the state, or for its condition.
    case suspendedTask

    /// What the stuck-wait report says the thread waits for, if it is a thread's wait.
    var stuckWaitReport: String? {
        switch self {
        case .exclusiveLock: "to take"
        case .sharedLock: "to read"
        case .condition: "for its condition to hold, on"
        case .suspendedTask: nil  // a task that waits blocks no thread
        }
    }
}

/// Who observes one wait: the stuck-wait watch, if it watches it, and whether a contention profile
/// times it.
struct _WaitObservation {
    var watched: _WatchedWait?
    var isProfiled = false
}

extension _Engine {
    /// Who observes a wait that begins now at `site`, among `observers`: the one place every wait
    /// an access makes (for the lock, for a condition, for a task's turn) asks the stuck-wait watch
    /// (`Checks/`), which reports a thread's wait that lasts too long from a timer of its own, so
    /// that the wait sleeps as an unwatched one does, and a contention profile (`Profiling/`), which
    /// the caller then tells of the wait, as its kind requires. End the watch when the wait ends.
    func _observeWait(_ wait: _ObservedWait, at site: _Site, _ observers: _WaitObservers) -> _WaitObservation {
        var observation = _WaitObservation()
        if observers.contains(.watch), _watchesWaits, let waitingFor = wait.stuckWaitReport {
            observation.watched = _watchWait(waitingFor: waitingFor, at: site)
        }
        observation.isProfiled = observers.contains(.profile) && _Contention.isOn
        return observation
    }
}

// MARK: - Backing off for a granted waiter

extension _Engine {
    /// Called with the lock just taken while the state is promised to a granted waiter: lets go
    /// until that waiter has run, then takes the lock again. The waiter was woken already, so this
    /// lasts a thread wake-up; meanwhile this thread lends the waiter its priority where locks
    /// lend priority (`lendPriorityToGrantee`). Returns false, not holding the lock, if `deadline`
    /// passed first.
    @usableFromInline
    func _backOffForGrantee(before deadline: _Deadline?) -> Bool {
        repeat {
            let ended = _withWaitList { $0.grantToWaitFor() }
            let loan = EXCLUSION_OWNED_LOCK != 0 && ended != nil ? _withWaitList { $0.lendPriorityToGrantee() } : nil
            // Waited for without the lock, so that the grantee finds the lock free.
            _lock.unlockExclusive()
            if let ended {
                let changed = exclusion_wait_for_change(
                    _withWaitList { $0._grantsEnded }, ended, deadline?.nanoseconds ?? 0)
                exclusion_end_loan(loan)
                guard changed != 0 else { return false }
            }
            guard _lock.tryLockExclusive() || _waitExclusively(before: deadline, file: "", line: 0, observers: [])
            else { return false }
        } while _releaseWork.isReserved
        return true
    }
}
