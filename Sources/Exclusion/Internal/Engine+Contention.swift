// MARK: - Contention profile

extension _Engine {
    /// Records a wait of `kind` by an access called at `site` that began at `start`; call with
    /// the state held (exclusively, or shared for a read), right after the wait ended.
    ///
    /// The holder is the access that released the state last while profiled accesses waited: the
    /// one this access took over from. A read never notes itself (that would cost every read), so
    /// a wait that ended when readers left has no holder site.
    func _recordWait(_ kind: _WaitKind, at site: _Site, since start: UInt64, exclusively: Bool = true) {
        let holder = _Site(
            start: _holderFile.load(ordering: .relaxed), length: _holderFileLength.load(ordering: .relaxed),
            line: _holderLine.load(ordering: .relaxed))
        // Taken over: the next waiter's holder is whoever releases next.
        if exclusively { _noteHolder(.none) }
        _Signposts.holdTakenOver(
            self, label, from: holder, othersWait: exclusively && self._waitList.hasProfiledWaiters)
        _record(kind, at: site, heldBy: holder, since: start)
    }

    /// Adds a wait that began at `start` to the running profile. The instance's names are only
    /// made when its key is new to the profile: a wait that is recorded with the state held builds
    /// no string.
    func _record(_ kind: _WaitKind, at site: _Site, heldBy holder: _Site = .none, since start: UInt64) {
        let waited = _Contention.fault == .waitFromAcquisition ? 0 : _Contention.now() &- start
        _Signposts.waitEnds(kind, id: start)
        _Contention.record(
            _ContentionKey(instance: ObjectIdentifier(self), kind: kind, waiter: site, holder: holder),
            nanoseconds: waited
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
        _holderFile.store(site.start, ordering: .relaxed)
        _holderFileLength.store(site.length, ordering: .relaxed)
        _holderLine.store(site.line, ordering: .relaxed)
    }
}
