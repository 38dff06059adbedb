import Dispatch
import ExclusionShims
import Synchronization

// MARK: - Watching blocking waits

extension _Engine {
    /// `takeExclusively`'s wait when waits are watched: reported once if it lasts past the
    /// threshold, and the entry noted for the next waiter's report.
    @usableFromInline
    func _takeLockWatched(file: StaticString, line: UInt, notingEntry: Bool, profiled isProfiled: Bool) {
        if !_lock.tryLockExclusive() {
            let lock = {
                self._lock.lockExclusive(reportingAt: _Deadline(after: _StuckWait.threshold!)) {
                    self._reportStuck(waitingFor: "to take", file: file, line: line)
                }
            }
            if isProfiled, _Contention.isOn { _takeLockProfiled(at: _Site(file, line), lock) } else { lock() }
        }
        if notingEntry { _noteEntry(file: file, line: line) }
    }

    /// The lock by `deadline`; if waits are watched and the deadline lies past the stuck-wait
    /// threshold, reported once on the way.
    @usableFromInline
    func _takeLock(before deadline: _Deadline, file: StaticString, line: UInt) -> Bool {
        if _lock.tryLockExclusive() { return true }
        guard _Contention.isOn else { return _takeLockWatched(before: deadline, file: file, line: line) }
        if _lock.lockExclusiveBySpinning() { return true }  // a wait that ends in the spin isn't recorded
        let start = _lockWaitBegins(at: _Site(file, line))
        let locked = _takeLockWatched(before: deadline, file: file, line: line)
        if locked {
            _exclusiveWaitEnded(.blockedThread, at: _Site(file, line), since: start)
        } else {
            // A wait that gave up is recorded too: it waited as long as any.
            _releaseWork.profiledWaiterLeaves()
            _record(.blockedThread, at: _Site(file, line), since: start)
        }
        return locked
    }

    /// The rest of `_takeLock`, once the lock was found taken.
    private func _takeLockWatched(before deadline: _Deadline, file: StaticString, line: UInt) -> Bool {
        if _watchesWaits {
            let report = _Deadline(after: _StuckWait.threshold!)
            if report < deadline {
                if _lock.lockExclusive(before: report) { return true }
                _reportStuck(waitingFor: "to take", file: file, line: line)
            }
        }
        return _lock.lockExclusive(before: deadline)
    }

    /// A shared access's wait for the lock, once its quick path failed: watched if waits are.
    @usableFromInline
    func _takeSharedContended(_ thread: _CurrentThread, file: StaticString, line: UInt) -> Lock.SharedTicket {
        guard _Contention.isOn else { return _takeSharedWatched(thread, file: file, line: line) }
        // The quick path can fail with the lock free (a read-bias slot taken): only a real wait counts.
        if let ticket = _lock.tryLockShared(thread: thread.index) { return ticket }
        let start = _lockWaitBegins(at: _Site(file, line))
        let ticket = _takeSharedWatched(thread, file: file, line: line)
        _releaseWork.profiledWaiterLeaves()
        _recordWait(.blockedThread, at: _Site(file, line), since: start, exclusively: false)
        return ticket
    }

    /// The rest of `_takeSharedContended`: watched if waits are.
    private func _takeSharedWatched(_ thread: _CurrentThread, file: StaticString, line: UInt) -> Lock.SharedTicket {
        guard _watchesWaits else { return _lock.lockShared(thread: thread.index) }
        let ticket: Lock.SharedTicket
        if let quick = _lock.tryLockShared(thread: thread.index) {
            ticket = quick
        } else if let waited = _lock.lockShared(
            thread: thread.index, before: _Deadline(after: _StuckWait.threshold!))
        {
            ticket = waited
        } else {
            _reportStuck(waitingFor: "to read", file: file, line: line)
            ticket = _lock.lockShared(thread: thread.index)
        }
        _noteEntry(file: file, line: line)
        return ticket
    }

    @usableFromInline
    func _noteEntry(file: StaticString, line: UInt) {
        _entryFile.store(UInt(bitPattern: file.utf8Start), ordering: .relaxed)
        _entryFileLength.store(file.utf8CodeUnitCount, ordering: .relaxed)
        _entryLine.store(line, ordering: .relaxed)
    }

    /// Where the access holding this instance (or the last one that held it) entered, as far as
    /// the watched accesses noted it.
    private var _lastEntry: String {
        let address = _entryFile.load(ordering: .relaxed)
        guard let start = UnsafePointer<UInt8>(bitPattern: address) else {
            return "a place no watched access noted (asynchronous work, or an access that doesn't wait)"
        }
        let file = String(
            decoding: UnsafeBufferPointer(start: start, count: _entryFileLength.load(ordering: .relaxed)), as: UTF8.self
        )
        return "\(file):\(_entryLine.load(ordering: .relaxed))"
    }

    func _reportStuck(waitingFor what: String, file: StaticString, line: UInt) {
        _StuckWait.report(
            """
            Exclusion: a thread has waited \(_StuckWait.threshold!) at \(file):\(line) \(what) \(_typeName) \
            "\(label)". The access holding it, or the last one that held it, entered at \(_lastEntry). A wait \
            that never ends is a deadlock, or a condition that nothing will make true. \
            EXCLUSION_STUCK_WAIT_SECONDS sets how long a wait may last before this report (0 turns it off).
            """)
    }
}
