import Synchronization

/// A profiled wait that is over, taking over from the access called at `holder`.
struct _PendingWait {
    let kind: ContentionReport.WaitKind
    let site: _Site
    let holder: _Site
    let start: UInt64
    let waited: UInt64
}

// The engine's side of a profile; the lock knows nothing of it. An access that found the lock taken
// times its wait around the lock's own if a profile runs, counted in `_ReleaseWork` so that the
// access it waits for notes its call site on release: the holder it charges its wait to, as Go's
// mutex profile charges the unlocker.
extension _Engine {
    /// A profiled wait begins: for the lock (counted, so that the holder notes its site), or not.
    /// For the lock, the engine's one wait (`_waitForLock`) begins it past the lock's spin (timing
    /// and asking the holder cost a lock handed back and forth more than waits that short), and
    /// ends it with `_profiledLockWaitEnds`.
    func _lockWaitBegins(at site: _Site, forTheLock: Bool = true) -> UInt64 {
        let start = _Contention.now()
        if forTheLock { _releaseWork.profiledWaiterArrives() }
        _Signposts.waitBegins(label, at: site, id: start)
        return start
    }

    /// A profiled wait for the lock that began at `start` ends: holding the state (`took`),
    /// exclusively or shared, or given up at its deadline, which is recorded too: it waited as long
    /// as any.
    func _profiledLockWaitEnds(at site: _Site, since start: UInt64, took: Bool, exclusively: Bool) {
        if took, exclusively { return _exclusiveWaitEnded(.blockedThread, at: site, since: start) }
        _releaseWork.profiledWaiterLeaves()
        if took {
            _recordWait(.blockedThread, at: site, since: start, exclusively: false)
        } else {
            _record(.blockedThread, at: site, since: start)
        }
    }

    /// Ends a profiled wait of `kind` by an access called at `site` that began at `start`, now that
    /// it holds the state exclusively. The holder it took over from is read now; the wait is added
    /// to the profile once the state is released, so that recording doesn't lengthen a hold that
    /// the next waiter is waiting out. (One wait can be pending: if an earlier one still is, since
    /// its access let go without a release that records, as a back-off for a grantee does, this
    /// one is recorded now.)
    func _exclusiveWaitEnded(_ kind: ContentionReport.WaitKind, at site: _Site, since start: UInt64) {
        _Signposts.waitEnds(kind, id: start)
        let wait = _PendingWait(
            kind: kind, site: site, holder: _takeHolder(exclusively: true), start: start,
            waited: _Contention.now() &- start)
        if _releaseWork.hasPendingWait {
            _releaseWork.profiledWaiterLeaves()
            _record(wait)
        } else {
            _releaseWork.profiledWaiterTookOver(wait)
        }
    }

    /// Records a wait of `kind` by an access called at `site` that began at `start`; call with
    /// the state held (exclusively, or shared for a read) right after the wait, once the access no
    /// longer counts as waiting. A read never notes itself as a holder (that would cost every
    /// read), so a wait that ended when readers left has no holder site.
    func _recordWait(_ kind: ContentionReport.WaitKind, at site: _Site, since start: UInt64, exclusively: Bool = true) {
        _record(kind, at: site, heldBy: _takeHolder(exclusively: exclusively), since: start)
    }

    /// The holder's call site, which an access that waited took the state over from; with
    /// `exclusively`, it is cleared, since the next waiter's holder is whoever releases next.
    private func _takeHolder(exclusively: Bool) -> _Site {
        let holder = _releaseWork.profile.holder
        if exclusively, holder.start != 0 { _releaseWork.profile.holder = .none }
        return holder
    }

    /// Adds a wait that began at `start` and ends now to the running profile.
    func _record(_ kind: ContentionReport.WaitKind, at site: _Site, heldBy holder: _Site = .none, since start: UInt64) {
        _Signposts.waitEnds(kind, id: start)
        _record(_PendingWait(kind: kind, site: site, holder: holder, start: start, waited: _Contention.now() &- start))
    }

    /// Adds a wait that is over to the running profile (the names only made for a new row).
    func _record(_ wait: _PendingWait) {
        let key = _ContentionKey(
            instance: ObjectIdentifier(self), kind: wait.kind, waiter: wait.site, holder: wait.holder)
        _Contention.record(key, nanoseconds: wait.waited) { (label, _typeName) }
    }
}

/// While a contention profile runs: when an awaited access that found its condition false began
/// to wait, for its wait to be recorded when it runs.
final class _ConditionWaitStart: @unchecked Sendable {
    // @unchecked: written by the access's turn and read by its body, both with the state held
    // exclusively.
    var since: UInt64?
}

/// What a contention profile notes in an instance's `_ReleaseWork`, beside the word's profile bits;
/// touched only with the state held exclusively (the holder read with it held shared too).
struct _ProfileNotes {
    /// Where the access that last released the state exclusively was called from, while profiled
    /// accesses wait for it (`.none` once a waiter took over from it).
    var holder = _Site.none
    /// The profiled wait of the access holding the state, to be recorded after its release.
    var pendingWait: _PendingWait?
}

// The profile's part of what a release has to do: counting profiled waiters for the lock in the
// word's bits from 32 up, so that the holder notes its call site on release, and the flag that the
// holder's own wait is to be recorded once it lets go.
extension _ReleaseWork {
    /// Whether an access waits for the lock while a profile runs: the releaser's site is wanted.
    var hasProfiledWaiters: Bool {
        word.load(ordering: .relaxed) & (Self.pendingFlag - 1) >= Self.profiledWaiter
    }

    /// Whether all a release has to do is note its call site for profiled waiters: no sleepers, no
    /// pending wait.
    @inlinable var onlyProfiledWaiters: Bool {
        word.load(ordering: .relaxed) & (Self.pendingFlag | (Self.profiledWaiter - 1)) == 0
    }

    /// Notes the releasing access's call site, for the profiled waiters; call holding the state
    /// exclusively.
    @usableFromInline func noteHolder(file: StaticString, line: UInt) {
        profile.holder = _Site(file, line)
    }

    /// Whether the access holding the state exclusively has a wait to record on release.
    var hasPendingWait: Bool { word.load(ordering: .relaxed) & Self.pendingFlag != 0 }

    /// A profiled access starts waiting for the lock.
    func profiledWaiterArrives() { word.add(Self.profiledWaiter, ordering: .relaxed) }

    /// A profiled access stops waiting, without a wait to record on release.
    func profiledWaiterLeaves() { word.subtract(Self.profiledWaiter, ordering: .relaxed) }

    /// A profiled access took the state exclusively; its wait is recorded on release.
    func profiledWaiterTookOver(_ wait: _PendingWait) {
        profile.pendingWait = wait
        word.add(Self.pendingFlag - Self.profiledWaiter, ordering: .relaxed)
    }

    /// The pending wait, taken for recording once the state is released; call holding it.
    func takePendingWait() -> _PendingWait? {
        guard hasPendingWait else { return nil }
        word.subtract(Self.pendingFlag, ordering: .relaxed)
        defer { profile.pendingWait = nil }
        return profile.pendingWait
    }
}
