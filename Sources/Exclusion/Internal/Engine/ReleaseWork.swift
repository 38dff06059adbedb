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
    // @unchecked: `profile` is only touched with the instance's state held exclusively (its
    // holder read with it held shared too); the word is atomic.

    @usableFromInline let word = Atomic<Int>(0)
    /// A contention profile's notes on this instance's waits (`Profiling/`).
    var profile = _ProfileNotes()

    /// The word's layout. The bits from 32 up are the profile's (`Profiling/`).
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
}
