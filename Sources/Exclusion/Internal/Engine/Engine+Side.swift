import ExclusionShims

// MARK: - Letting a quiet instance's side structures go

/// An instance that ran submitted work and went quiet lets its side structures go, as it lets its
/// drain queue go: users hold hundreds of thousands of instances, and most submit now and then.
///
/// Threads reach the side structures without a retain (`_withSide`), so the engine must know
/// that none is inside them before it frees them. Each kind of user is accounted for:
///
/// - **Holders.** A thread holding the state (running submitted work, noting a profile's holder)
///   needs nothing more: the side structures are let go only with the state held exclusively.
/// - **Announced users.** A submitter, and a release that hands out deliveries after it let go of
///   the state, count themselves in the flags (`sideUser`) before they load the pointer, and leave
///   after their last touch. A submission that schedules a drain hands its count to the drain,
///   which leaves at its end.
/// - **Keepers.** Anything else that reaches them off the state (the wait list's users: conditional
///   and awaited waiters, iterators of `values`, a timer; a profiled wait) sets `kept` first: from
///   then on the side structures stay as long as the instance (and so does the drain queue, once a
///   drain made one: `Backlog.swift`), and a keeper needs no count.
///   Instances that wait for conditions keep them anyway, and their waits stay as cheap as before.
///   So does a drain that is still running after `_Flags.batchesOfABusyDrain` batches: an
///   instance busy with submitted work would otherwise have every submission count itself in and
///   out, two atomic read-modify-writes that make a burst of submissions measurably slower
///   (`Benchmarks/README.md`), to save memory it soon needs again.
///
/// A drain that ends is the one place they are let go (`_endDrain`): it takes the state if it is
/// free, and if the flags say that nothing is submitted, nothing waits or is profiled, nothing keeps
/// them and the drain is their only user, it exchanges its count for `retiring`, empties the
/// pointer, clears `retiring` and frees them once it has let go of the state. A user that announced
/// itself while `retiring` was set waits until it clears (parked, past a spin: the window is two
/// stores long), and then finds no side structures, and makes new ones.
/// `Verification/side.pml` models this protocol and the broken variants it catches.
extension _Engine {
    /// Announces the calling thread as a user of the side structures unless they are kept; returns
    /// whether it did, and must leave (`_leaveSide`).
    @inline(__always)
    func _announceSideUser() -> Bool { _releaseWork.announceSideUser() }

    /// Ends an announcement made by `_announceSideUser`, after the last touch of the side structures.
    @inline(__always)
    func _leaveSide(_ announced: Bool) { _releaseWork.leaveSide(announced) }

    /// Runs `body` with the side structures, made now if they aren't yet, kept from then on as long
    /// as the instance: for every use but submitted work's.
    @inline(__always)
    func _withKeptSide<R>(_ body: (_EngineSide<State>) -> R) -> R {
        let words = _words
        if exclusion_engine_flags_acquire(words) & (_Flags.kept | _Flags.retiring) != _Flags.kept { _keepSide() }
        return _withSide(at: words, body)
    }

    /// Sets `kept`, and waits for a retirement that was under way.
    @inline(never)
    func _keepSide() {
        let before = exclusion_engine_flags_fetch_or(_words, _Flags.kept)
        if before & _Flags.retiring != 0 { _waitForRetirement() }
    }

    @inline(never)
    func _waitForRetirement() { _releaseWork.waitForRetirement() }

    /// Ends a drain that found nothing more to run: lets the side structures go if the instance is
    /// quiet, and otherwise ends the drain's announcement. `announced` is the count the submission
    /// that scheduled the drain handed it.
    func _endDrain(_ thread: _CurrentThread, announced: Bool) {
        guard announced else { return }  // kept: nothing to let go
        var retired: _EngineSide<State>?
        if _flags & _Flags.keepingSide == 0, let outbox = tryTakeExclusively(thread) {
            // Work submitted since the drain looked ran here, as any access runs it; deliveries
            // need the side structures once the state is let go, so they stay.
            if outbox.isEmpty { retired = _retireSideIfQuiet() }
            releaseExclusively(thread, outbox)
        }
        guard let retired else { return _leaveSide(true) }
        // Nobody can reach them now: the count the retirement took was the drain's own.
        Unmanaged.passUnretained(retired).release()
    }

    /// With the state held exclusively: empties the side structures' pointer and returns what it
    /// held, to be released once the state is let go, if the calling drain is their one announced
    /// user and nothing else uses or keeps them; nil otherwise.
    private func _retireSideIfQuiet() -> _EngineSide<State>? {
        let flags = _flags
        guard flags & _Flags.sideUsers == _Flags.sideUser, flags & _Flags.keepingSide == 0,
            let side = _existingSide,
            exclusion_engine_flags_exchange(_words, flags, (flags &- _Flags.sideUser) | _Flags.retiring) != 0
        else { return nil }
        exclusion_engine_retire_side(_words)
        exclusion_engine_flags_end(_words, _Flags.retiring, _Flags.retirementWaiter)
        return side
    }
}

// The announcements, on the words' view: code not specialized for a state (a submission) finds the
// words once, and the view keeps them.
extension _ReleaseWork {
    @inline(__always)
    func announceSideUser() -> Bool {
        // Kept, with no retirement under way: a keeper sets `kept` even while one is, and then waits.
        if exclusion_engine_flags_acquire(words) & (_Flags.kept | _Flags.retiring) == _Flags.kept { return false }
        let before = exclusion_engine_flags_fetch_add(words, _Flags.sideUser)
        if before & _Flags.retiring != 0 { waitForRetirement() }
        return true
    }

    @inline(__always)
    func leaveSide(_ announced: Bool) {
        if announced { exclusion_engine_flags_release_subtract(words, _Flags.sideUser) }
    }

    @inline(never)
    func waitForRetirement() {
        exclusion_engine_flags_wait_until_clear(words, _Flags.retiring, _Flags.retirementWaiter)
    }
}

extension _Flags {
    /// How many batches a drain runs before it keeps the side structures (`_drain`): more than a
    /// few jobs submitted now and then make, and well inside a burst.
    static var batchesOfABusyDrain: Int { 64 }

    /// What keeps the side structures, or shows they are in use, besides announced users: jobs
    /// waiting, sleepers, a promise, a profile's waiters or pending wait, `kept`, a retirement.
    static var keepingSide: UInt64 {
        jobs | sleepers | reserved | pendingWait | profiledWaiters | kept | retiring
    }
}
