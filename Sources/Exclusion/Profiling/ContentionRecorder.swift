import ExclusionShims
import Synchronization

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
        private let lock = _Lock()
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
        return (Array(merged.rows.values), merged.dropped)
    }
}

/// The rows of one stripe of a profile (`generation`), or all of them merged; `seen` counts waits
/// sampled or not, and `dropped` the sampled ones that found no room.
struct _ContentionRows {
    var generation: UInt64 = 0, seen = 0, dropped = 0
    var rows: [_ContentionKey: ContentionReport.Row] = [:]

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
            rows[key] = ContentionReport.Row(
                label: label, type: type, kind: key.kind, waiter: .init(key.waiter), holder: .init(key.holder),
                count: 1, nanoseconds: waited, longest: waited)
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
}
