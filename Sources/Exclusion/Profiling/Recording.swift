import ExclusionShims
import Synchronization

#if canImport(os)
import os
#endif

// How a running contention profile records a wait, in the order a wait goes through it: the
// engine's side (a wait begins, ends, and is added to the profile, charged to the holder it waited
// for), the table it is added to, and the signposts Instruments shows. A recorded wait reads
// nothing outside this file but the engine's; the report is made from the table when the profile
// stops (`ContentionProfile.swift`, `ContentionReport.swift`).

// MARK: - The engine's side

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
        // The side structures hold the holder's site, which the release notes for this waiter.
        if forTheLock {
            _makeSideIfNeeded()
            _releaseWork.profiledWaiterArrives()
        }
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
            _withKeptSide { $0.profile.pointee.pendingWait = wait }
            _releaseWork.profiledWaiterTookOver()
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
        _withKeptSide { side in
            guard let notes = side.existingProfile else { return .none }
            let holder = notes.pointee.holder
            if exclusively, holder.start != 0 { notes.pointee.holder = .none }
            return holder
        }
    }

    /// Adds a wait that began at `start` and ends now to the running profile.
    func _record(_ kind: ContentionReport.WaitKind, at site: _Site, heldBy holder: _Site = .none, since start: UInt64) {
        _Signposts.waitEnds(kind, id: start)
        _record(_PendingWait(kind: kind, site: site, holder: holder, start: start, waited: _Contention.now() &- start))
    }

    /// Adds a wait that is over to the running profile (the names only made for a new row).
    func _record(_ wait: _PendingWait) {
        let key = _ContentionKey(
            instance: ObjectIdentifier(_instance), kind: wait.kind, waiter: wait.site, holder: wait.holder)
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

/// What a contention profile notes in an instance's side structures, beside the flags' profile
/// bits; touched only with the state held exclusively (the holder read with it held shared too).
struct _ProfileNotes {
    /// Where the access that last released the state exclusively was called from, while profiled
    /// accesses wait for it (`.none` once a waiter took over from it).
    var holder = _Site.none
    /// The profiled wait of the access holding the state, to be recorded after its release.
    var pendingWait: _PendingWait?
}

// The profile's part of what a release has to do: counting profiled waiters for the lock in the
// flags' bits from 32 up, so that the holder notes its call site on release, and the flag that the
// holder's own wait is to be recorded once it lets go (`_Flags`).
extension _ReleaseWork {
    /// Whether an access waits for the lock while a profile runs: the releaser's site is wanted.
    var hasProfiledWaiters: Bool { flags & _Flags.profiledWaiters != 0 }

    /// Whether all a release has to do is note its call site for profiled waiters: no sleepers, no
    /// pending wait.
    @inlinable var onlyProfiledWaiters: Bool { flags & (_Flags.pendingWait | _Flags.sleepers) == 0 }

    /// Whether the access holding the state exclusively has a wait to record on release.
    var hasPendingWait: Bool { flags & _Flags.pendingWait != 0 }

    /// A profiled access starts waiting for the lock.
    func profiledWaiterArrives() { exclusion_engine_flags_add(words, _Flags.profiledWaiter) }

    /// A profiled access stops waiting, without a wait to record on release.
    func profiledWaiterLeaves() { exclusion_engine_flags_subtract(words, _Flags.profiledWaiter) }

    /// A profiled access took the state exclusively; its wait is recorded on release.
    func profiledWaiterTookOver() { exclusion_engine_flags_add(words, _Flags.pendingWait &- _Flags.profiledWaiter) }

    /// The pending wait is taken for recording.
    func pendingWaitTaken() { exclusion_engine_flags_subtract(words, _Flags.pendingWait) }
}

extension _Engine {
    /// Notes the releasing access's call site, for the profiled waiters; call holding the state
    /// exclusively.
    @usableFromInline func _noteHolder(file: StaticString, line: UInt) {
        _withKeptSide { $0.profile.pointee.holder = _Site(file, line) }
    }

    /// The pending wait, taken for recording once the state is released; call holding it.
    func _takePendingWait() -> _PendingWait? {
        guard _releaseWork.hasPendingWait else { return nil }
        _releaseWork.pendingWaitTaken()
        return _withKeptSide { side in
            guard let notes = side.existingProfile else { return nil }
            defer { notes.pointee.pendingWait = nil }
            return notes.pointee.pendingWait
        }
    }
}

// MARK: - The running profile's table

/// A call site as the accessors receive it: a `#fileID` string's bytes (static, so they live as
/// long as the process) and a line. `start == 0` is no site.
@usableFromInline
struct _Site: Sendable, Hashable {
    @usableFromInline let start: UInt
    @usableFromInline let length: Int
    @usableFromInline let line: UInt

    /// The site of an accessor's `file` and `line` arguments; an empty file is no site.
    @inlinable init(_ file: StaticString, _ line: UInt) {
        let empty = file.utf8CodeUnitCount == 0
        start = empty ? 0 : UInt(bitPattern: file.utf8Start)
        length = empty ? 0 : file.utf8CodeUnitCount
        self.line = empty ? 0 : line
    }

    @usableFromInline static var none: _Site { _Site("", 0) }

    var file: String? {
        guard let pointer = UnsafePointer<UInt8>(bitPattern: start) else { return nil }
        return String(decoding: UnsafeBufferPointer(start: pointer, count: length), as: UTF8.self)
    }
}

/// One row of a profile: the instance, the kind of wait, the waiter's and the holder's call sites.
/// Identities only, so that adding to a row that exists builds no string.
struct _ContentionKey: Sendable, Hashable {
    let instance: ObjectIdentifier
    let kind: ContentionReport.WaitKind
    let waiter: _Site
    let holder: _Site
}

/// The running profile's table: 16 stripes, each a dictionary behind a lock of its own, picked by
/// the recording thread's index, so that threads rarely take the same lock. The stripes live as
/// long as the process, and a profile is a generation number: a recording adds to its stripe only
/// if its generation still runs once it holds the stripe's lock, and `stop` empties each stripe
/// under its lock after ending the generation. Nothing recorded is lost or lands in the next
/// profile, and nothing waits for recorders to finish.
@usableFromInline
enum _Contention {
    private static let generation = Atomic<UInt64>(0)
    private static let lastGeneration = Atomic<UInt64>(0)
    private static let sampleEvery = Atomic<Int>(1)
    private static let stripes = (0..<16).map { _ in _StripeLock() }
    /// The most distinct rows one stripe keeps; waits for more are counted as dropped.
    static let rowsPerStripe = 4_096

    /// Exclusion's own lock, not `Mutex`, whose futex ThreadSanitizer can't see.
    private final class _StripeLock: @unchecked Sendable {
        // @unchecked: `rows` is only touched with `lock` held.
        private let lock = _Lock.standalone()
        private var rows = _ContentionRows()
        func withLock<R>(_ body: (inout _ContentionRows) -> R) -> R {
            lock.lock()
            defer { lock.unlock() }
            return body(&rows)
        }
    }

    /// Whether a profile runs, a hint read without ordering; and the clock waits are timed with.
    @usableFromInline static var isOn: Bool { generation.load(ordering: .relaxed) != 0 }
    @usableFromInline static func now() -> UInt64 { exclusion_monotonic_now() }

    /// Adds a wait to the running profile, if one runs and samples it; `names` only for a new row.
    static func record(_ key: _ContentionKey, nanoseconds: UInt64, names: () -> (String, String)) {
        let running = generation.load(ordering: .acquiring)
        guard running != 0 else { return }
        let every = sampleEvery.load(ordering: .relaxed)
        stripes[Int(_CurrentThread().index) % stripes.count].withLock { stripe in
            guard generation.load(ordering: .relaxed) == running else { return }  // stopped meanwhile
            if stripe.generation != running { stripe = _ContentionRows(generation: running) }
            stripe.add(key, nanoseconds: nanoseconds, sampleEvery: every, names: names)
        }
    }

    /// Starts a profile that samples one wait in `every`: its generation, or nil if one runs.
    static func start(sampleEvery every: Int) -> UInt64? {
        let next = lastGeneration.add(1, ordering: .relaxed).newValue
        sampleEvery.store(every, ordering: .relaxed)
        let started = generation.compareExchange(expected: 0, desired: next, ordering: .acquiringAndReleasing)
        return started.exchanged ? next : nil
    }

    /// Stops the profile `running` (if it still runs) and returns its rows, merged over the
    /// stripes, and how many waits found no room.
    static func stop(_ running: UInt64) -> (rows: [ContentionReport.Row], dropped: Int) {
        _ = generation.compareExchange(expected: running, desired: 0, ordering: .acquiringAndReleasing)
        var merged = _ContentionRows(generation: running)
        for stripe in stripes {
            stripe.withLock { stripe in
                guard stripe.generation == running else { return }
                merged.merge(stripe)
                stripe = _ContentionRows()
            }
        }
        return (merged.reportRows, merged.dropped)
    }
}

/// The rows of one stripe of a profile (`generation`), or all of them merged; `seen` counts waits
/// sampled or not, and `dropped` the sampled ones that found no room. Tallies of its own, not the
/// report's rows: a recording touches nothing but this file's types, and the report is made once,
/// when the profile stops.
struct _ContentionRows {
    /// One row's names (made once, for its first wait) and sums.
    struct Tally {
        let label: String, type: String
        var count = 1, nanoseconds: Int, longest: Int
    }

    var generation: UInt64 = 0, seen = 0, dropped = 0
    var rows: [_ContentionKey: Tally] = [:]

    /// Adds a wait of `nanoseconds` to `key`'s row, if it is one of those sampled.
    mutating func add(
        _ key: _ContentionKey, nanoseconds: UInt64, sampleEvery: Int, names: () -> (String, String)
    ) {
        seen += 1
        guard seen % sampleEvery == 0 else { return }
        let waited = Int(truncatingIfNeeded: nanoseconds)
        guard let index = rows.index(forKey: key) else {
            guard rows.count < _Contention.rowsPerStripe else { return dropped += 1 }
            let (label, type) = names()
            rows[key] = Tally(label: label, type: type, nanoseconds: waited, longest: waited)
            return
        }
        rows.values[index].count += 1  // one lookup, then in place
        rows.values[index].nanoseconds += waited
        rows.values[index].longest = max(rows.values[index].longest, waited)
    }

    mutating func merge(_ other: _ContentionRows) {
        dropped += other.dropped
        rows.merge(other.rows) { one, other in
            var sum = one
            (sum.count, sum.nanoseconds) = (one.count + other.count, one.nanoseconds + other.nanoseconds)
            sum.longest = max(one.longest, other.longest)
            return sum
        }
    }

    /// The rows as a report shows them.
    var reportRows: [ContentionReport.Row] {
        rows.map { key, tally in
            ContentionReport.Row(
                label: tally.label, type: tally.type, kind: key.kind, waiter: .init(key.waiter),
                holder: .init(key.holder), count: tally.count, nanoseconds: tally.nanoseconds,
                longest: tally.longest)
        }
    }
}

// MARK: - Contention in Instruments

#if canImport(os)

/// On Apple platforms a running contention profile also marks its waits as signpost
/// intervals (subsystem "Exclusion", category "Contention"), so that Instruments shows them on
/// the timeline beside the program's own work:
///
/// - "Wait": one access's wait, from when it found the state held (or its condition false) until
///   it got the state; its end says which kind of wait it was.
///
/// Nothing is emitted unless a profile runs and Instruments (or `log stream --signpost`) records
/// the category: every function here first asks the signposter whether it is enabled.
enum _Signposts {
    static var signposter: OSSignposter { _Signposter.shared.signposter }

    /// A wait begins; `start` is its start time, which names the interval.
    static func waitBegins(_ label: @autoclosure () -> String, at site: _Site, id start: UInt64) {
        let signposter = self.signposter
        guard signposter.isEnabled else { return }
        let label = label()
        let file = site.file ?? "an unknown site"
        _ = signposter.beginInterval(
            "Wait", id: OSSignpostID(start | 1),
            "\(label, privacy: .public) from \(file, privacy: .public):\(site.line)")
    }

    /// The wait that began at `start` ends, as a wait of `kind`.
    static func waitEnds(_ kind: ContentionReport.WaitKind, id start: UInt64) {
        let signposter = self.signposter
        guard signposter.isEnabled else { return }
        let state = OSSignpostIntervalState.beginState(id: OSSignpostID(start | 1))
        switch kind {
        case .blockedThread: signposter.endInterval("Wait", state, "a blocked thread")
        case .suspendedTask: signposter.endInterval("Wait", state, "a suspended task")
        case .condition: signposter.endInterval("Wait", state, "a wait for the condition, not contention")
        }
    }
}

/// The one signposter, made on first use.
private final class _Signposter: @unchecked Sendable {
    // @unchecked: `signposter` is a constant, and an `OSSignposter` may be used from any thread
    // (it only refers to an os_log handle, which is thread-safe); the class exists only because
    // the SDK may not mark that struct `Sendable`.
    let signposter = OSSignposter(subsystem: "Exclusion", category: "Contention")
    static let shared = _Signposter()
}

#else

/// Signposts are an Apple platforms' tool: elsewhere these do nothing, and evaluate nothing.
enum _Signposts {
    @inline(__always) static func waitBegins(_ label: @autoclosure () -> String, at site: _Site, id start: UInt64) {}
    @inline(__always) static func waitEnds(_ kind: ContentionReport.WaitKind, id start: UInt64) {}
}

#endif
