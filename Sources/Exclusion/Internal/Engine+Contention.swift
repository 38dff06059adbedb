// MARK: - Contention profile

extension _Engine {
    /// Records a wait of `kind` by an access called at `site` that began at `start`; call with
    /// the state held (exclusively, or shared for a read), right after the wait ended.
    ///
    /// The holder is the access that released the state last while profiled accesses waited: the
    /// one this access took over from. A read never notes itself (that would cost every read), so
    /// a wait that ended when readers left has no holder site.
    func _recordWait(_ kind: _WaitKind, at site: _Site, since start: UInt64, exclusively: Bool = true) {
        let waited = _Contention.fault == .waitFromAcquisition ? 0 : _Contention.now() &- start
        let holder = _Site(
            start: _holderFile.load(ordering: .relaxed), length: _holderFileLength.load(ordering: .relaxed),
            line: _holderLine.load(ordering: .relaxed))
        // Taken over: the next waiter's holder is whoever releases next.
        if exclusively { _noteHolder(.none) }
        _record(kind, at: site, heldBy: holder, nanoseconds: waited)
    }

    /// Adds a wait to the running profile. The instance's names are only made when its key is new
    /// to the profile: a wait that is recorded with the state held builds no string.
    func _record(_ kind: _WaitKind, at site: _Site, heldBy holder: _Site = .none, nanoseconds: UInt64) {
        _Contention.record(
            _ContentionKey(instance: ObjectIdentifier(self), kind: kind, waiter: site, holder: holder),
            nanoseconds: nanoseconds
        ) { _ContentionNames(label: label, type: _typeName) }
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
