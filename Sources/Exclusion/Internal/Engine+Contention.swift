// MARK: - Contention profile

/// A profiled wait that is over, to be added to the profile: by an access called at `site`, of
/// `kind`, from `start` for `waited` nanoseconds, taking over from the access called at `holder`.
struct _PendingWait {
    let kind: _WaitKind
    let site: _Site
    let holder: _Site
    let start: UInt64
    let waited: UInt64
}

extension _Engine {
    /// Records a wait of `kind` by an access called at `site` that began at `start`; call with
    /// the state held (exclusively, or shared for a read), right after the wait ended.
    ///
    /// The holder is the access that released the state last while profiled accesses waited: the
    /// one this access took over from. A read never notes itself (that would cost every read), so
    /// a wait that ended when readers left has no holder site.
    func _recordWait(_ kind: _WaitKind, at site: _Site, since start: UInt64, exclusively: Bool = true) {
        let holder = _takeHolder(exclusively: exclusively)
        _record(kind, at: site, heldBy: holder, since: start)
    }

    /// Ends a profiled wait of `kind` by an access called at `site`, which began at `start` and
    /// ended at `end` with the state taken exclusively. The holder it took over from is read now;
    /// adding the wait to the profile waits until the state is released (`_takePendingWait`), so
    /// that the table's work doesn't lengthen a hold that the next waiter is waiting out.
    func _exclusiveWaitEnded(_ kind: _WaitKind, at site: _Site, from start: UInt64, to end: UInt64) {
        _Signposts.waitEnds(kind, id: start)
        // There is one place to keep a wait: if an earlier access's wait is still in it (that
        // access let go without a release that records, such as a back-off for a grantee), this
        // one is recorded now, with the state held.
        let recordsNow = _waitList.hasPendingWait
        // No longer counted as waiting first, so that the holder's hand-over sees only the others.
        if recordsNow { _waitList.profiledWaiterLeaves() } else { _waitList.profiledWaiterTookOver() }
        let wait = _PendingWait(
            kind: kind, site: site, holder: _takeHolder(exclusively: true), start: start, waited: end &- start)
        if recordsNow { _record(wait) } else { _waitList._pendingWait = wait }
    }

    /// A profiled exclusive access called at `site` starts waiting for the lock: it reads the clock
    /// and spins. Returns the wait's start, and whether the spin took the lock; then the wait is
    /// recorded already, and otherwise the access is counted as waiting, so that the holder notes
    /// its call site when it lets go.
    func _profiledWaitSpins(at site: _Site) -> (start: UInt64, took: Bool) {
        let start = _Contention.now()
        _Signposts.waitBegins(label, at: site, id: start)
        // While waiting anyway: make the thread's place ready to add a short wait up, if the
        // wait can be one.
        let prepared =
            Lock.timesItsSpin
            && _Contention.prepareShortWaits(
                for: _ContentionKey(instance: ObjectIdentifier(self), kind: .thread, waiter: site, holder: .spun)
            ) { _ContentionNames(label: label, type: _typeName) }
        if let end = _lock.spinExclusiveTimed() {
            _shortWaitEnded(at: site, from: start, to: end, kept: prepared)
            return (start, true)
        }
        if _waitList.profiledWaiterArrives() { _Signposts.holdBegins(self, label) }
        return (start, false)
    }

    /// Records a wait for the lock by an access called at `site` that ended within the lock's spin,
    /// from `start` to `end`; call with the state held exclusively, right after taking it.
    ///
    /// Its holder was never asked for its call site: asking makes every release go the slow way
    /// while anyone waits, which for a lock that is handed back and forth costs more than all the
    /// rest of the recording. A wait this short holds up little, and is recorded as one.
    ///
    /// With the state held, it is only added up in the thread's own place, made ready while the
    /// access waited (`prepared`): adding it to the table, a few atomic read-modify-writes, would
    /// lengthen the hold, and so the next wait. Making the place ready is a few loads when the
    /// thread's last short wait had the same instance and call site; only otherwise does the
    /// waiter send the place's sum to the table and find the new key's slot. That matters even
    /// though the waiter would only spin meanwhile: where threads outnumber processors, its work
    /// takes processor time from the threads that have work to do. The sums go to the table when
    /// the thread's waits move to another key, or when the profile stops. Without a place (a
    /// sampling profile, a stripe full, the place taken), the wait is recorded the long way.
    func _shortWaitEnded(at site: _Site, from start: UInt64, to end: UInt64, kept prepared: Bool) {
        _Signposts.waitEnds(.thread, id: start)
        // Cleared as any taker clears it: a waiter that arrives now may take over from this access
        // without its release noting a site, and must not find an older holder's.
        if _waitList._holder.start != 0 { _noteHolder(.none) }
        let fault = _Contention.fault
        if fault == .spunWaitsLost { return }
        if prepared, fault == .none || fault == .keptWaitsLeftAtStop, _Contention.keepShortWait(end &- start) {
            return
        }
        _record(_PendingWait(kind: .thread, site: site, holder: .spun, start: start, waited: end &- start))
    }

    /// The wait that the last exclusive access took over with, if its recording is still to do;
    /// call with the state held exclusively, and record it (`_record(_:)`) after letting go.
    func _takePendingWait() -> _PendingWait? {
        guard _waitList.hasPendingWait else { return nil }
        defer {
            _waitList._pendingWait = nil
            _waitList.pendingWaitTaken()
        }
        return _waitList._pendingWait
    }

    /// The holder's call site, which an access that waited took the state over from; with
    /// `exclusively`, it is cleared, since the next waiter's holder is whoever releases next.
    private func _takeHolder(exclusively: Bool) -> _Site {
        let holder = _waitList._holder
        if exclusively, holder.start != 0 { _noteHolder(.none) }
        _Signposts.holdTakenOver(
            self, label, from: holder, othersWait: exclusively && self._waitList.hasProfiledWaiters)
        return holder
    }

    /// Adds a wait that began at `start` to the running profile. The instance's names are only
    /// made when its key is new to the profile: a wait that is recorded with the state held builds
    /// no string.
    func _record(_ kind: _WaitKind, at site: _Site, heldBy holder: _Site = .none, since start: UInt64) {
        let waited = _Contention.now() &- start
        _Signposts.waitEnds(kind, id: start)
        _record(_PendingWait(kind: kind, site: site, holder: holder, start: start, waited: waited))
    }

    /// Adds a wait that is over to the running profile.
    func _record(_ wait: _PendingWait) {
        let nanoseconds: UInt64 =
            switch _Contention.fault {
            case .waitFromAcquisition: 0
            case .waitUntilRelease: _Contention.now() &- wait.start
            default: wait.waited
            }
        _Contention.record(
            _ContentionKey(instance: ObjectIdentifier(self), kind: wait.kind, waiter: wait.site, holder: wait.holder),
            nanoseconds: nanoseconds
        ) { _ContentionNames(label: label, type: _typeName) }
    }

    /// A profiled access called at `site` starts waiting for the lock: counted, so that the holder
    /// notes where it was called from. Returns the wait's start, for `_recordWait`.
    func _lockWaitBegins(at site: _Site) -> UInt64 {
        let start = _Contention.now()
        if _waitList.profiledWaiterArrives() { _Signposts.holdBegins(self, label) }
        _Signposts.waitBegins(label, at: site, id: start)
        return start
    }

    /// A profiled access called at `site` starts waiting for its condition. Returns the wait's
    /// start, for `_recordConditionWait`.
    func _conditionWaitBegins(at site: _Site) -> UInt64 {
        let start = _Contention.now()
        _Signposts.waitBegins(label, at: site, id: start)
        return start
    }

    /// Notes `site` as the holder that profiled waiters take over from; call with the state held
    /// exclusively, just before letting go of it.
    func _noteHolder(_ site: _Site) {
        if _Contention.fault == .noHolders { return }
        _waitList._holder = site
    }
}
