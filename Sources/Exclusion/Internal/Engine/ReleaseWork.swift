import Synchronization

/// What the release of an exclusive access has to do besides giving the lock back, in one word
/// that every release reads, so that a release with nothing to do pays one load:
///
/// - the low 32 bits count the wait list's sleepers, whose conditions the release checks;
/// - from bit 32, a contention profile's waiters for the lock, who want the releaser's call site
///   (the holder they waited for);
/// - bit 62 says that the access holding the state waited while profiled, and its wait is to be
///   recorded once the state is released.
///
/// One object per instance, apart from the engine, so that waiters changing the word don't take
/// away the cache line that every access of the instance reads.
@usableFromInline
final class _ReleaseWork: @unchecked Sendable {
    // @unchecked: `holder` and `pendingWait` are only touched with the instance's state held
    // exclusively (`holder` read with it held shared too); the word is atomic.

    @usableFromInline let word = Atomic<Int>(0)
    /// Where the access that last released the state exclusively was called from, while profiled
    /// accesses wait for it (`.none` once a waiter took over from it).
    var holder = _Site.none
    /// The profiled wait of the access holding the state, to be recorded after its release.
    var pendingWait: _PendingWait?

    @usableFromInline static var profiledWaiter: Int { 1 << 32 }
    @usableFromInline static var pendingFlag: Int { 1 << 62 }

    init() {}

    /// Whether the release has anything to do; exact for sleepers with the state held exclusively
    /// (a waiter only starts sleeping with it held).
    @inlinable var isDue: Bool { word.load(ordering: .relaxed) != 0 }

    // MARK: - The wait list's sleepers

    var sleepers: Int { word.load(ordering: .sequentiallyConsistent) & (Self.profiledWaiter - 1) }
    var hasSleepers: Bool { word.load(ordering: .relaxed) & (Self.profiledWaiter - 1) != 0 }
    func sleepersArrive(_ count: Int) { word.add(count, ordering: .relaxed) }
    func sleepersLeave(_ count: Int) { word.subtract(count, ordering: .relaxed) }

    // MARK: - A contention profile's waiters

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
        holder = _Site(file, line)
    }

    /// Whether the access holding the state exclusively has a wait to record on release.
    var hasPendingWait: Bool { word.load(ordering: .relaxed) & Self.pendingFlag != 0 }

    /// A profiled access starts waiting for the lock.
    func profiledWaiterArrives() { word.add(Self.profiledWaiter, ordering: .relaxed) }

    /// A profiled access stops waiting, without a wait to record on release.
    func profiledWaiterLeaves() { word.subtract(Self.profiledWaiter, ordering: .relaxed) }

    /// A profiled access took the state exclusively; its wait is recorded on release.
    func profiledWaiterTookOver(_ wait: _PendingWait) {
        pendingWait = wait
        word.add(Self.pendingFlag - Self.profiledWaiter, ordering: .relaxed)
    }

    /// The pending wait, taken for recording once the state is released; call holding it.
    func takePendingWait() -> _PendingWait? {
        guard hasPendingWait else { return nil }
        word.subtract(Self.pendingFlag, ordering: .relaxed)
        defer { pendingWait = nil }
        return pendingWait
    }
}
