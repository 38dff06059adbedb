import Foundation

/// What a ``ContentionProfile`` recorded: per instance, how often and how long accesses waited for
/// it, where they waited, and which call sites held it meanwhile.
///
/// `description` is the table a terminal user reads, longest total wait first; ``pprof()`` is the
/// same data for pprof viewers.
public struct ContentionReport: Sendable, CustomStringConvertible {
    /// How an access waited.
    public enum WaitKind: String, Sendable, Hashable, CaseIterable {
        /// A thread blocked until it could take the lock.
        case blockedThread = "blocked thread"
        /// A task suspended (`await access`) until its turn came.
        case suspendedTask = "suspended task"
        /// An access that held the state, found its condition false (`access(when:)`), and waited
        /// for another access to make it true: time spent waiting for the program's state, not
        /// for the lock, so it isn't counted as contention.
        case condition
    }

    /// A place in the source: a `#fileID` and a line.
    public struct Site: Sendable, Hashable, CustomStringConvertible {
        public let file: String
        public let line: Int

        public var description: String { "\(file):\(line)" }
    }

    /// How often, and how long in all, accesses waited at one site (or while one site held).
    public struct SiteWaits: Sendable, Hashable {
        /// The call site; nil for work that has none (asynchronous work run by whichever access
        /// held the state, or reads, whose holders aren't noted), and for the holders of waits
        /// that ended while the waiter spun (``endedWhileSpinning``).
        public let site: Site?
        public let count: Int
        public let wait: Duration
        /// Whether these are waits that ended while the waiter still spun, before it went to sleep
        /// (on Linux, the first microseconds of a wait for an `Exclusive`), whose holders aren't
        /// asked for their call site: asking would make every release take the slow path while
        /// anyone waits, which costs a lock that is handed back and forth more than the rest of
        /// the recording. They are counted and timed like any other wait. Only holder rows have it.
        public let endedWhileSpinning: Bool

        init(site: Site?, count: Int, wait: Duration, endedWhileSpinning: Bool = false) {
            self.site = site
            self.count = count
            self.wait = wait
            self.endedWhileSpinning = endedWhileSpinning
        }

        /// The site as the table names it, or why there is none.
        var siteDescription: String { ContentionReport.describe(site, endedWhileSpinning: endedWhileSpinning) }
    }

    /// One instance's waits.
    public struct Instance: Sendable, Hashable {
        /// The instance's label.
        public let label: String
        /// Its type, such as `Exclusive<Ledger>`.
        public let type: String
        /// Acquisitions that had to wait for the lock: blocked threads and suspended tasks.
        public let contentions: Int
        /// How long they waited in all.
        public let totalWait: Duration
        /// The longest of those waits.
        public let maxWait: Duration
        /// Contentions and wait by kind: ``WaitKind/blockedThread`` and ``WaitKind/suspendedTask``.
        public let byKind: [WaitKind: SiteWaits]
        /// Where the waiting accesses were called from, longest total wait first.
        public let waiters: [SiteWaits]
        /// Which call sites held the state when the waits ended (the previous holder each waiter
        /// took over from), longest total wait first.
        public let holders: [SiteWaits]
        /// Waits for a condition (not contention): how many, how long, and from where.
        public let conditionWaits: Int
        public let conditionWait: Duration
        public let conditionWaiters: [SiteWaits]
    }

    /// Every instance that was waited for, longest total wait first (then longest condition wait).
    public let instances: [Instance]
    /// How long the profile ran.
    public let duration: Duration
    /// What it sampled; counts and waits are scaled back up for ``ContentionProfile/Sampling/oneIn(_:)``.
    public let sampling: ContentionProfile.Sampling
    /// Sampled waits the profile had no room for (more distinct sites than it holds).
    public let dropped: Int
    /// When the profile started, in nanoseconds since 1970 (pprof's `time_nanos`).
    let startedAt: Int64
    /// The rows pprof gets: one per instance, kind, waiting site and holding site.
    let rows: [Row]

    struct Row: Sendable, Hashable {
        let label: String
        let type: String
        let kind: WaitKind
        let waiter: Site?
        let holder: Site?
        /// Whether the wait ended while its waiter spun, so its holder wasn't asked.
        let holderNotAsked: Bool
        let count: Int
        let nanoseconds: Int
        let longest: Int
    }

    init(table: _ContentionTable, sampling: ContentionProfile.Sampling, until end: UInt64) {
        self.sampling = sampling
        let scale = sampling.every
        duration = .nanoseconds(Int64(truncatingIfNeeded: end &- table.started))
        startedAt = Int64(Date().timeIntervalSince1970 * 1e9) - Int64(truncatingIfNeeded: end &- table.started)
        dropped = table.dropped * scale
        rows = table.entries().map { entry in
            Row(
                label: entry.names.label, type: entry.names.type, kind: WaitKind(entry.key.kind),
                waiter: Site(entry.key.waiter), holder: Site(entry.key.holder),
                holderNotAsked: entry.key.holder == .spun, count: entry.count * scale,
                nanoseconds: entry.nanoseconds * scale, longest: entry.longest)
        }
        // Instances with the same label and type are one row: a label names what it protects.
        let grouped = Dictionary(grouping: rows) { InstanceKey(label: $0.label, type: $0.type) }
        instances = grouped.values.map { Instance($0) }.sorted {
            ($0.totalWait, $0.conditionWait, $1.label) > ($1.totalWait, $1.conditionWait, $0.label)
        }
    }

    private struct InstanceKey: Hashable {
        let label: String
        let type: String
    }

    /// The table, longest total wait first: per instance its waits, then where they waited and
    /// which sites held the state.
    public var description: String { table(rows: .max) }

    /// The table with at most `instances` instances (the longest waits), and at most `rows` sites
    /// of each kind under each.
    public func table(instances count: Int = .max, rows limit: Int) -> String {
        var lines = [
            "Contention profile: \(Self.format(duration)), \(sampling == .all ? "every wait" : "one wait in \(sampling.every)")"
                + (dropped > 0 ? ", \(dropped) waits not recorded (too many sites)" : "") + "."
        ]
        if instances.isEmpty {
            lines.append("No access waited.")
            return lines.joined(separator: "\n")
        }
        let shown = instances.prefix(count)
        let names =
            shown.map { "\"\($0.label)\" \($0.type)".count }
            + shown.flatMap { instance in
                (instance.waiters.prefix(limit) + instance.holders.prefix(limit)
                    + instance.conditionWaiters.prefix(limit))
                    .map { "  condition at \($0.siteDescription)".count }
            }
        let width = min(80, max(44, names.max() ?? 0))
        lines.append(
            Self.columns("instance", "waits", "total wait", "longest", "threads/tasks", "condition waits", width: width)
        )
        for instance in instances.prefix(count) {
            let threads = instance.byKind[.blockedThread]?.count ?? 0
            let tasks = instance.byKind[.suspendedTask]?.count ?? 0
            lines.append(
                Self.columns(
                    "\"\(instance.label)\" \(instance.type)", "\(instance.contentions)",
                    Self.format(instance.totalWait),
                    Self.format(instance.maxWait), "\(threads)/\(tasks)",
                    instance.conditionWaits == 0
                        ? "-" : "\(instance.conditionWaits) (\(Self.format(instance.conditionWait)))", width: width))
            for waiter in instance.waiters.prefix(limit) {
                lines.append(Self.siteLine("waited at", waiter, width: width))
            }
            for holder in instance.holders.prefix(limit) {
                lines.append(Self.siteLine("held by", holder, width: width))
            }
            for waiter in instance.conditionWaiters.prefix(limit) {
                lines.append(Self.siteLine("condition at", waiter, width: width))
            }
        }
        if instances.count > count { lines.append("(\(instances.count - count) more instances)") }
        return lines.joined(separator: "\n")
    }

    private static func columns(
        _ name: String, _ a: String, _ b: String, _ c: String, _ d: String, _ e: String, width: Int
    ) -> String {
        name.padding(toLength: max(name.count, width), withPad: " ", startingAt: 0) + " "
            + [(a, 8), (b, 12), (c, 10), (d, 14)].map { String(repeating: " ", count: max(0, $1 - $0.count)) + $0 }
            .joined(separator: " ") + "  " + e
    }

    private static func siteLine(_ role: String, _ waits: SiteWaits, width: Int) -> String {
        let name = "  \(role) \(waits.siteDescription)"
        return name.padding(toLength: max(name.count, width), withPad: " ", startingAt: 0) + " "
            + String(repeating: " ", count: max(0, 8 - "\(waits.count)".count)) + "\(waits.count) "
            + String(repeating: " ", count: max(0, 12 - format(waits.wait).count)) + format(waits.wait)
    }

    /// A site as the table and pprof name it, or why there is none.
    static func describe(_ site: Site?, endedWhileSpinning: Bool = false) -> String {
        if let site { return site.description }
        return endedWhileSpinning
            ? "(not asked: waits that ended while spinning)" : "(no call site: asynchronous work or a read)"
    }

    /// A duration as people read it: 840 ns, 12.5 µs, 3.20 ms, 1.25 s.
    static func format(_ duration: Duration) -> String {
        let nanoseconds = Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
        switch nanoseconds {
        case ..<1_000: return "\(Int(nanoseconds)) ns"
        case ..<1_000_000: return String(format: "%.1f µs", nanoseconds / 1e3)
        case ..<1_000_000_000: return String(format: "%.2f ms", nanoseconds / 1e6)
        default: return String(format: "%.2f s", nanoseconds / 1e9)
        }
    }

    /// Writes the pprof file to `path` and the table's top rows to standard error; for the
    /// environment's profile, when the program exits.
    func writeAtExit(to path: String) {
        var message = table(instances: 5, rows: 3) + "\n"
        do {
            try pprof().write(to: URL(fileURLWithPath: path))
            message += "Contention profile written to \(path) (open it with `go tool pprof`).\n"
        } catch {
            message += "Contention profile: can't write \(path): \(error.localizedDescription)\n"
        }
        FileHandle.standardError.write(Data(message.utf8))
    }
}

extension ContentionReport.Instance {
    fileprivate init(_ rows: [ContentionReport.Row]) {
        let first = rows[0]
        label = first.label
        type = first.type
        let contended = rows.filter { $0.kind != .condition }
        let conditions = rows.filter { $0.kind == .condition }
        contentions = contended.reduce(0) { $0 + $1.count }
        totalWait = .nanoseconds(contended.reduce(0) { $0 + $1.nanoseconds })
        maxWait = .nanoseconds(contended.map(\.longest).max() ?? 0)
        var byKind: [ContentionReport.WaitKind: ContentionReport.SiteWaits] = [:]
        for kind in [ContentionReport.WaitKind.blockedThread, .suspendedTask] {
            let these = contended.filter { $0.kind == kind }
            if !these.isEmpty {
                byKind[kind] = .init(
                    site: nil, count: these.reduce(0) { $0 + $1.count },
                    wait: .nanoseconds(these.reduce(0) { $0 + $1.nanoseconds }))
            }
        }
        self.byKind = byKind
        waiters = Self.bySite(contended, \.waiter)
        holders = Dictionary(grouping: contended) { HolderKey(site: $0.holder, notAsked: $0.holderNotAsked) }
            .map { key, rows in
                ContentionReport.SiteWaits(
                    site: key.site, count: rows.reduce(0) { $0 + $1.count },
                    wait: .nanoseconds(rows.reduce(0) { $0 + $1.nanoseconds }), endedWhileSpinning: key.notAsked)
            }.sorted { ($0.wait, $0.count) > ($1.wait, $1.count) }
        conditionWaits = conditions.reduce(0) { $0 + $1.count }
        conditionWait = .nanoseconds(conditions.reduce(0) { $0 + $1.nanoseconds })
        conditionWaiters = Self.bySite(conditions, \.waiter)
    }

    private struct HolderKey: Hashable {
        let site: ContentionReport.Site?
        let notAsked: Bool
    }

    private static func bySite(
        _ rows: [ContentionReport.Row], _ site: KeyPath<ContentionReport.Row, ContentionReport.Site?>
    )
        -> [ContentionReport.SiteWaits]
    {
        Dictionary(grouping: rows) { $0[keyPath: site] }.map { site, rows in
            ContentionReport.SiteWaits(
                site: site, count: rows.reduce(0) { $0 + $1.count },
                wait: .nanoseconds(rows.reduce(0) { $0 + $1.nanoseconds }))
        }.sorted { ($0.wait, $0.count) > ($1.wait, $1.count) }
    }
}

extension ContentionReport.WaitKind {
    init(_ kind: _WaitKind) {
        switch kind {
        case .thread: self = .blockedThread
        case .task: self = .suspendedTask
        case .condition: self = .condition
        }
    }
}

extension ContentionReport.Site {
    init?(_ site: _Site) {
        guard let file = site.file else { return nil }
        self.init(file: file, line: Int(site.line))
    }
}
