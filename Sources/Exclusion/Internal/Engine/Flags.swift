import ExclusionShims

// MARK: - What an access looks at besides the lock

/// The bits of an instance's flags (`exclusion_engine_words`), which an access reads once it holds
/// the lock and a release reads before it lets go, one load each:
///
/// - bits 0 to 23 count the wait list's sleepers, whose conditions a release checks;
/// - `jobs`: the backlog holds submitted work, which an access runs first;
/// - `reserved`: the state is promised to a granted waiter, which an access backs off for;
/// - `watched`: waits on this instance are watched (`Checks/`), so an access notes where it
///   entered, for the report;
/// - `pendingWait` and, from bit 48, the count of a contention profile's waiters for the lock, who
///   want the releaser's call site (the holder they waited for); `pendingWait` says that the
///   access holding the state waited while profiled, and its wait is to be recorded once it lets
///   go (`Profiling/`);
/// - `kept`, `retiring`, `retirementWaiter` and, from bit 32, the count of the side structures'
///   announced users: what lets a quiet instance's side structures go (`Engine+Side.swift`);
/// - `drainScheduled`: a drain of the backlog is scheduled or running (`Backlog.swift`).
@usableFromInline
enum _Flags {
    @usableFromInline static var sleepers: UInt64 { (1 << 24) - 1 }
    @usableFromInline static var jobs: UInt64 { 1 << 24 }
    @usableFromInline static var reserved: UInt64 { 1 << 25 }
    @usableFromInline static var watched: UInt64 { 1 << 26 }
    @usableFromInline static var pendingWait: UInt64 { 1 << 27 }
    /// The side structures stay as long as the instance: something besides submitted work uses
    /// them (a wait list, a profile's notes).
    @usableFromInline static var kept: UInt64 { 1 << 28 }
    /// The side structures are being let go: a user that announced itself meanwhile waits.
    @usableFromInline static var retiring: UInt64 { 1 << 29 }
    /// A user waits, parked, for a retirement to end.
    @usableFromInline static var retirementWaiter: UInt64 { 1 << 30 }
    /// A drain is scheduled or running, and will run what is submitted before it ends; only
    /// changed with the backlog's lock held. Apart from whether the backlog has a drain queue: one
    /// whose side structures are kept keeps its queue between drains.
    static var drainScheduled: UInt64 { 1 << 31 }
    /// One announced user of the side structures; 16 bits count them: each thread inside a
    /// submission or a delivery, and each drain scheduled.
    @usableFromInline static var sideUser: UInt64 { 1 << 32 }
    @usableFromInline static var sideUsers: UInt64 { 0xFFFF << 32 }
    @usableFromInline static var profiledWaiter: UInt64 { 1 << 48 }
    @usableFromInline static var profiledWaiters: UInt64 { ~(profiledWaiter - 1) }

    /// What an access that has just taken the lock must do something about.
    @usableFromInline static var onEntry: UInt64 { jobs | reserved | watched }
    /// What a release must do something about.
    @usableFromInline static var onRelease: UInt64 { sleepers | pendingWait | profiledWaiters }
}

/// What an exclusive access has to look at besides the lock, in the instance's words: whether the
/// state is promised to a granted waiter (read once the lock is taken), and what its release has
/// to do besides giving the lock back (`_Flags`). The wait list changes the sleepers' count and
/// the grant (`_WaitList._mutate`); a profile its own bits (`Profiling/`).
@usableFromInline
struct _ReleaseWork: @unchecked Sendable {
    // @unchecked: the words are only touched through their atomic functions.

    @usableFromInline let words: UnsafeMutablePointer<exclusion_engine_words>

    @inlinable init(_ words: UnsafeMutablePointer<exclusion_engine_words>) {
        self.words = words
    }

    @inlinable var flags: UInt64 { exclusion_engine_flags(words) }

    /// Whether the state is promised to a granted thread; read with the state held exclusively.
    @inlinable var isReserved: Bool { flags & _Flags.reserved != 0 }

    /// Whether the release has anything to do; exact for sleepers with the state held exclusively
    /// (a waiter only starts sleeping with it held).
    @inlinable var isDue: Bool { flags & _Flags.onRelease != 0 }

    // MARK: - The wait list's sleepers and grant

    var sleepers: Int { Int(exclusion_engine_flags_ordered(words) & _Flags.sleepers) }
    var hasSleepers: Bool { flags & _Flags.sleepers != 0 }
    func sleepersArrive(_ count: Int) { exclusion_engine_flags_add(words, UInt64(count)) }
    func sleepersLeave(_ count: Int) { exclusion_engine_flags_subtract(words, UInt64(count)) }

    /// Whether the state is promised, ordered with the grant's end (`_WaitList.grantToWaitFor`).
    var isReservedOrdered: Bool { exclusion_engine_flags_ordered(words) & _Flags.reserved != 0 }
    func reserve() { exclusion_engine_flags_set(words, _Flags.reserved) }
    /// Ends the promise, ordered before the grant's end is counted.
    func endReservation() { exclusion_engine_flags_clear(words, _Flags.reserved) }

    // MARK: - The backlog's jobs

    /// Whether the backlog holds jobs. A thread always sees the jobs it submitted itself: only a
    /// consumer clears this, and a consumer holds the state until it has run what it took.
    @inlinable var hasJobs: Bool { flags & _Flags.jobs != 0 }
    func jobsArrive() { if !hasJobs { exclusion_engine_flags_set(words, _Flags.jobs) } }
    func jobsTaken() { exclusion_engine_flags_clear(words, _Flags.jobs) }

    // MARK: - The backlog's drain, with the backlog's lock held

    var drainIsScheduled: Bool { flags & _Flags.drainScheduled != 0 }
    func drainBegins() { exclusion_engine_flags_set(words, _Flags.drainScheduled) }
    func drainEnds() { exclusion_engine_flags_clear(words, _Flags.drainScheduled) }
    /// Whether the side structures stay as long as the instance (`Engine+Side.swift`): once set,
    /// `kept` is never cleared.
    var keepsSide: Bool { flags & _Flags.kept != 0 }
}
