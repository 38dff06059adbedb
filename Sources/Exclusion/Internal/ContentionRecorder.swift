import ExclusionShims
import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// MARK: - What a contended acquisition records

/// What kind of wait a record is: a thread blocked for the lock, a task suspended until its turn,
/// or an access waiting for its condition (which is not lock contention).
@usableFromInline
enum _WaitKind: UInt8, Sendable {
    case thread = 1
    case task = 2
    case condition = 3
}

/// A call site as the accessors receive it: a `#fileID` string's bytes (static, so they live as
/// long as the process) and a line. `start == 0` is no site; `start == 1`, a holder not asked.
@usableFromInline
struct _Site: Sendable, Hashable {
    @usableFromInline let start: UInt
    @usableFromInline let length: Int
    @usableFromInline let line: UInt

    @inlinable init(start: UInt, length: Int, line: UInt) {
        self.start = start
        self.length = length
        self.line = line
    }

    /// The site of an accessor's `file` and `line` arguments; an empty file is no site.
    @inlinable init(_ file: StaticString, _ line: UInt) {
        if file.utf8CodeUnitCount == 0 {
            self.init(start: 0, length: 0, line: 0)
        } else {
            self.init(start: UInt(bitPattern: file.utf8Start), length: file.utf8CodeUnitCount, line: line)
        }
    }

    @usableFromInline static var none: _Site { _Site(start: 0, length: 0, line: 0) }

    /// The holder of a wait that ended while the waiter still spun: not asked for its site (1 is
    /// no string's address).
    static var spun: _Site { _Site(start: 1, length: 0, line: 0) }

    var file: String? {
        guard start > 1, let pointer = UnsafePointer<UInt8>(bitPattern: start) else { return nil }
        return String(decoding: UnsafeBufferPointer(start: pointer, count: length), as: UTF8.self)
    }
}

/// One kind of wait at one place: the instance, the kind, where the waiter called from, and where
/// the access that held the state before the waiter got it had been called from. Identities only,
/// so that adding a wait to a slot that has it already builds no string.
struct _ContentionKey: Sendable, Hashable {
    let instance: ObjectIdentifier
    let kind: _WaitKind
    let waiter: _Site
    let holder: _Site

    /// A 64-bit hash that is never 0 (0 marks an empty slot).
    var hash: UInt64 {
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15
        for part in [
            UInt64(UInt(bitPattern: instance.hashValue)), UInt64(kind.rawValue), UInt64(waiter.start),
            UInt64(waiter.line), UInt64(holder.start), UInt64(holder.line),
        ] {
            h = (h ^ part) &* 0xBF58_476D_1CE4_E5B9
            h ^= h >> 31
        }
        return h == 0 ? 1 : h
    }
}

/// What a report says of an instance: its label and its type's name.
struct _ContentionNames: Sendable {
    let label: String
    let type: String
}

/// One slot of the table: a key, claimed once, and its totals.
final class _ContentionSlot: @unchecked Sendable {
    // @unchecked: `key` and `names` are written once, by the thread whose compare-and-swap of
    // `hash` from 0 succeeded, before it stores `ready` with releasing ordering; they are read only
    // after `ready` was loaded true with acquiring ordering. Everything else is atomic.
    let hash = Atomic<UInt64>(0)
    let ready = Atomic<Bool>(false)
    var key: _ContentionKey?
    var names: _ContentionNames?
    let count = Atomic<Int>(0)
    let nanoseconds = Atomic<Int>(0)
    let longest = Atomic<Int>(0)

    /// Adds one wait of `nanoseconds`.
    func add(_ nanoseconds: Int) {
        add(count: 1, nanoseconds: nanoseconds, longest: nanoseconds)
    }

    /// Adds `count` waits of `nanoseconds` in all, the longest `longest`.
    func add(count: Int, nanoseconds: Int, longest: Int) {
        self.count.add(count, ordering: .relaxed)
        self.nanoseconds.add(nanoseconds, ordering: .relaxed)
        if longest > self.longest.load(ordering: .relaxed) { self.longest.max(longest, ordering: .relaxed) }
    }
}

/// Where a running profile adds up its waits: a fixed table, open addressing, that threads add to
/// with atomic operations only, so recording never takes a lock that could itself contend.
///
/// The table is striped: each thread adds to one of `_Contention.stripeCount` tables of its own choosing by
/// its index, so that two threads that wait for the same instance at the same site don't take the
/// same slot's cache line from each other at every wait. The report merges the stripes.
final class _ContentionTable: Sendable {
    let stripes: [_ContentionStripe]
    let sampleEvery: Int
    let started: UInt64
    /// Tells this table apart from every other, even one at the same address after it is gone:
    /// short waits added up for it (`_Contention.keepShortWait`) say which table they are for by
    /// this number. Never 0.
    let serial = _Contention.serials.add(1, ordering: .relaxed).newValue

    /// `capacity` slots per stripe, each a distinct key one thread waited with: far more than a
    /// program has sites.
    init(capacity: Int = 1_024, sampleEvery: Int) {
        stripes = (0..<_Contention.stripeCount).map { _ in _ContentionStripe(capacity: capacity) }
        self.sampleEvery = sampleEvery
        started = _Contention.now()
    }

    /// Sampled waits that found their stripe full.
    var dropped: Int { stripes.reduce(0) { $0 + $1.dropped.load(ordering: .relaxed) } }

    /// Adds a wait, if it is one of those sampled, to `key`'s slot in `stripe`; `names` is asked
    /// for only when the key takes a slot of its own.
    func add(
        _ key: _ContentionKey, nanoseconds: Int, stripe index: Int, names: () -> _ContentionNames
    ) {
        let stripe = stripes[index]
        guard sampleEvery == 1 || stripe.seen.add(1, ordering: .relaxed).newValue % sampleEvery == 0 else { return }
        stripe.add(key, nanoseconds: nanoseconds, names: names)
    }

    /// What was added up, for the report: every key any stripe has, its totals summed over them.
    func entries() -> [(key: _ContentionKey, names: _ContentionNames, count: Int, nanoseconds: Int, longest: Int)] {
        let all = stripes.flatMap { $0.entries() }
        let merged = Dictionary(all.map { ($0.key, $0) }) { one, other in
            (
                one.key, one.names, one.count + other.count, one.nanoseconds + other.nanoseconds,
                max(one.longest, other.longest)
            )
        }
        return Array(merged.values)
    }
}

/// One stripe of the table.
final class _ContentionStripe: Sendable {
    let slots: [_ContentionSlot]
    /// Contended waits seen (sampled or not), to pick one in `sampleEvery`.
    let seen = Atomic<Int>(0)
    /// Sampled waits that found the stripe full.
    let dropped = Atomic<Int>(0)

    init(capacity: Int) {
        slots = (0..<capacity).map { _ in _ContentionSlot() }
    }

    /// Adds a wait to `key`'s slot; `names` is asked for only when the key takes a slot of its own.
    func add(_ key: _ContentionKey, nanoseconds: Int, names: () -> _ContentionNames) {
        slot(for: key, names: names)?.add(nanoseconds)
    }

    /// `key`'s slot, claimed for it if it has none yet (`names` is asked for only then); nil, with
    /// the wait counted as dropped, if the stripe is full.
    func slot(for key: _ContentionKey, names: () -> _ContentionNames) -> _ContentionSlot? {
        let hash = key.hash
        let mask = slots.count - 1
        var index = Int(truncatingIfNeeded: hash) & mask
        for _ in 0..<slots.count {
            let slot = slots[index]
            var current = slot.hash.load(ordering: .acquiring)
            if current == 0 {
                let (exchanged, original) = slot.hash.compareExchange(
                    expected: 0, desired: hash, ordering: .acquiringAndReleasing)
                if exchanged {
                    slot.key = key
                    slot.names = names()
                    slot.ready.store(true, ordering: .releasing)
                    current = hash
                } else {
                    current = original
                }
            }
            if current == hash { return slot }
            index = (index + 1) & mask
        }
        dropped.add(1, ordering: .relaxed)
        return nil
    }

    /// Every claimed slot whose key is written and that has a wait: a slot is claimed for short
    /// waits before a wait is known to be one (`_Contention.prepareShortWaits`).
    func entries() -> [(key: _ContentionKey, names: _ContentionNames, count: Int, nanoseconds: Int, longest: Int)] {
        slots.compactMap { slot in
            guard slot.ready.load(ordering: .acquiring), let key = slot.key, let names = slot.names,
                slot.count.load(ordering: .relaxed) > 0
            else { return nil }
            return (
                key, names, slot.count.load(ordering: .relaxed), slot.nanoseconds.load(ordering: .relaxed),
                slot.longest.load(ordering: .relaxed)
            )
        }
    }
}

/// A count of recordings under way, alone on its cache lines.
final class _RecordingCount: Sendable {
    let value = Atomic<Int>(0)
    // Keeps the next count, wherever the allocator puts it, off this one's cache line.
    private let _padding: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int) = (
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
    )
}

// MARK: - The switch

/// The running profile, if any. Accesses look here only once they have found the lock taken, so a
/// program that is not profiled, or not contended, never does.
@usableFromInline
enum _Contention {
    /// The table of the running profile; its `ContentionProfile` keeps it alive.
    static let active = Atomic<Unmanaged<_ContentionTable>?>(nil)
    /// How many stripes the table has, and counts of recordings under way (one per stripe). Threads
    /// get their indices in the order they first use Exclusion, so up to this many threads started
    /// together each add to a stripe of their own, and share neither a slot, a count nor a
    /// reference count with another thread (what a shared stripe cost showed up in a profile of
    /// eight threads on one instance).
    static let stripeCount = 16
    /// How many recordings are under way, counted in the recorder's stripe: `stop` waits for them
    /// before the table can go. Outside the table, since a recorder counts itself before it knows
    /// that the table is still there.
    static let recording: [_RecordingCount] = (0..<stripeCount).map { _ in _RecordingCount() }

    /// Serial numbers of tables (`_ContentionTable.serial`), the last one handed out.
    static let serials = Atomic<UInt64>(0)
    /// The running profile's table's serial number, 0 if none: what a thread compares its place
    /// with, without touching a table that may be gone.
    static let activeSerial = Atomic<UInt64>(0)

    /// A bug planted by a test, to show that its check catches it; `_ContentionFault` raw values.
    static let _fault = Atomic<Int>(0)

    static var fault: _ContentionFault { _ContentionFault(rawValue: _fault.load(ordering: .relaxed)) ?? .none }

    /// Whether a profile runs; a hint, read without ordering.
    @usableFromInline static var isOn: Bool { active.load(ordering: .relaxed) != nil }

    /// Monotonic nanoseconds: the clock the lock's timed wait reads (`exclusion_lock_spin_timed`,
    /// `exclusion_lock_sleep_timed`).
    @usableFromInline static func now() -> UInt64 { exclusion_monotonic_now() }

    /// Runs `body` with the running profile's table, counted in `stripe`'s recordings under way so
    /// that `stop` waits for it to finish; nil if no profile runs.
    ///
    /// Only a recorder that saw a profile running counts itself, and it looks again after counting
    /// itself: once `stop` has cleared `active`, no new recorder counts itself, so `stop` waits
    /// only for the few already inside, however many threads keep waiting.
    @inline(__always)
    private static func recording<Result>(in stripe: Int, _ body: (_ContentionTable) -> Result) -> Result? {
        guard active.load(ordering: .sequentiallyConsistent) != nil else { return nil }
        let count = recording[stripe]
        count.value.add(1, ordering: .sequentiallyConsistent)
        defer { count.value.subtract(1, ordering: .releasing) }
        guard let table = active.load(ordering: .sequentiallyConsistent)?.takeUnretainedValue() else { return nil }
        return body(table)
    }

    /// Adds a wait of `nanoseconds` to the running profile, if one runs and samples it, in the
    /// calling thread's stripe.
    static func record(_ key: _ContentionKey, nanoseconds: UInt64, names: () -> _ContentionNames) {
        let stripe = Int(_CurrentThread().index) % stripeCount
        recording(in: stripe) { table in
            table.add(key, nanoseconds: Int(truncatingIfNeeded: nanoseconds), stripe: stripe, names: names)
        }
    }

    /// Makes the calling thread's place add up its short waits for `key` (a thread's wait, with a
    /// holder not asked) in the running profile's table: at once if it does already; otherwise
    /// what the place held goes to its table first, and `key`'s slot is found (or claimed) now, while
    /// the wait goes on, so that nothing is left to look up once the state is held. False if no
    /// profile runs, the profile samples (whether a wait is sampled is decided when it is added),
    /// the stripe is full, or another thread is busy with the place: then record the wait itself.
    static func prepareShortWaits(for key: _ContentionKey, names: () -> _ContentionNames) -> Bool {
        let serial = activeSerial.load(ordering: .relaxed)
        guard serial != 0 else { return false }
        let thread = _CurrentThread().index
        let instance = UInt(bitPattern: key.instance)
        if exclusion_short_waits_are_for(thread, serial, instance, key.waiter.start, UInt64(key.waiter.line)) != 0 {
            return true
        }
        let stripe = Int(thread) % stripeCount
        return recording(in: stripe) { table in
            guard table.sampleEvery == 1, let slot = table.stripes[stripe].slot(for: key, names: names) else {
                return false
            }
            var before = exclusion_short_wait_sum()
            guard
                exclusion_short_waits_start(
                    thread, table.serial, UInt(bitPattern: Unmanaged.passUnretained(slot).toOpaque()), instance,
                    key.waiter.start, UInt64(key.waiter.line), &before) != 0
            else { return false }
            add(before, to: table)
            return true
        } ?? false
    }

    /// Adds a short wait of `nanoseconds` in the calling thread's place, made ready for its key by
    /// `prepareShortWaits`: a few stores, for a wait that ended with the state held. False if the
    /// place was taken meanwhile (by a stopping profile, or another thread); then record it itself.
    static func keepShortWait(_ nanoseconds: UInt64) -> Bool {
        exclusion_short_waits_add(_CurrentThread().index, nanoseconds) != 0
    }

    /// Adds what a place added up to `table`'s slot, if it was added up for `table`; dropped if not
    /// (the profile it was for has stopped). Call while `table` can't go away: counted as
    /// recording into it, or from its `stop`.
    private static func add(_ sum: exclusion_short_wait_sum, to table: _ContentionTable) {
        guard sum.table == table.serial, sum.count > 0, let pointer = UnsafeRawPointer(bitPattern: sum.slot) else {
            return
        }
        Unmanaged<_ContentionSlot>.fromOpaque(pointer).takeUnretainedValue().add(
            count: Int(truncatingIfNeeded: sum.count), nanoseconds: Int(truncatingIfNeeded: sum.nanoseconds),
            longest: Int(truncatingIfNeeded: sum.longest))
    }

    /// Makes `table` the running profile's; false if another profile runs.
    static func start(_ table: _ContentionTable) -> Bool {
        guard
            active.compareExchange(
                expected: nil, desired: Unmanaged.passUnretained(table), ordering: .sequentiallyConsistent
            ).exchanged
        else { return false }
        activeSerial.store(table.serial, ordering: .relaxed)
        return true
    }

    /// Ends `table`'s profile and waits until nothing records into it any more.
    static func stop(_ table: _ContentionTable) {
        _ = activeSerial.compareExchange(expected: table.serial, desired: 0, ordering: .relaxed)
        _ = active.compareExchange(
            expected: Unmanaged.passUnretained(table), desired: nil, ordering: .sequentiallyConsistent)
        for count in recording {
            while count.value.load(ordering: .acquiring) != 0 { sched_yield() }
        }
        // The short waits that threads added up in their places for this table. A place a thread
        // is adding to right now is waited for, not skipped: it holds every short wait that thread
        // had at that site. (A wait that ends from now on is recorded the long way, and dropped.)
        guard fault != .keptWaitsLeftAtStop else { return }
        for place in 0..<UInt32(EXCLUSION_SHORT_WAIT_PLACES) {
            var sum = exclusion_short_wait_sum()
            var taken = exclusion_short_waits_take(place, table.serial, &sum)
            while taken < 0 {
                sched_yield()
                taken = exclusion_short_waits_take(place, table.serial, &sum)
            }
            if taken > 0 { add(sum, to: table) }
        }
    }
}

/// The bugs a test can plant in the recording (`_Contention._fault`), each one its checks must
/// catch. Nothing but tests sets one.
enum _ContentionFault: Int {
    case none = 0
    /// Waits measured from when the lock was taken, not from when the wait began.
    case waitFromAcquisition = 1
    /// Waits of accesses that took the state exclusively measured until they let go of it, not
    /// until they took it.
    case waitUntilRelease = 4
    /// Holders never noted.
    case noHolders = 2
    /// Waits for a condition recorded as threads' waits for the lock.
    case conditionAsContention = 3
    /// Waits that ended while the waiter spun not recorded.
    case spunWaitsLost = 5
    /// Short waits that threads added up in their places (`_Contention.keepShortWait`) not added
    /// when the profile stops.
    case keptWaitsLeftAtStop = 6
}
