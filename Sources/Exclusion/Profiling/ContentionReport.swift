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
        /// The call site; nil for work that has none: asynchronous work run by whichever access
        /// held the state, reads, whose holders aren't noted, and holders that let go before
        /// their waiter had counted itself as waiting (just after its spin).
        public let site: Site?
        public let count: Int
        public let wait: Duration

        /// Always false: every holder of a recorded wait is asked for its call site now.
        @available(*, deprecated, message: "always false: every holder is asked for its call site")
        public var endedWhileSpinning: Bool { false }
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
        var count = 0
        var nanoseconds = 0
        var longest = 0
    }

    /// A report of the sampled `rows`, `duration` nanoseconds long.
    init(rows: [Row], dropped: Int, sampling: ContentionProfile.Sampling, duration: UInt64) {
        let scale = sampling.every
        self.rows = rows.map { row in
            var scaled = row
            (scaled.count, scaled.nanoseconds) = (row.count * scale, row.nanoseconds * scale)
            return scaled
        }
        self.dropped = dropped * scale
        self.sampling = sampling
        self.duration = .nanoseconds(Int64(truncatingIfNeeded: duration))
        startedAt = Int64(Date().timeIntervalSince1970 * 1e9) - Int64(truncatingIfNeeded: duration)
        // Instances with the same label and type are one row: a label names what it protects.
        let grouped = Dictionary(grouping: self.rows) { [$0.label, $0.type] }
        instances = grouped.values.map { Instance($0) }.sorted {
            ($0.totalWait, $0.conditionWait, $1.label) > ($1.totalWait, $1.conditionWait, $0.label)
        }
    }

    /// The table, longest total wait first: per instance its waits, then where they waited and
    /// which sites held the state.
    public var description: String { table(rows: .max) }

    /// The table with at most `instances` instances (the longest waits), and at most `rows` sites
    /// of each kind under each.
    public func table(instances count: Int = .max, rows limit: Int) -> String {
        let sampled = sampling == .all ? "every wait" : "one wait in \(sampling.every)"
        let lost = dropped > 0 ? ", \(dropped) waits not recorded (too many sites)" : ""
        var lines = ["Contention profile: \(Self.format(duration)), \(sampled)\(lost)."]
        guard !instances.isEmpty else { return (lines + ["No access waited."]).joined(separator: "\n") }
        var body: [(String, [String])] = []
        for instance in instances.prefix(count) {
            let kinds = [WaitKind.blockedThread, .suspendedTask].map { "\(instance.byKind[$0]?.count ?? 0)" }
            let condition =
                instance.conditionWaits == 0
                ? "-" : "\(instance.conditionWaits) (\(Self.format(instance.conditionWait)))"
            body.append(
                (
                    "\"\(instance.label)\" \(instance.type)",
                    [
                        "\(instance.contentions)", Self.format(instance.totalWait), Self.format(instance.maxWait),
                        kinds.joined(separator: "/"), condition,
                    ]
                ))
            for (role, sites) in [
                ("waited at", instance.waiters), ("held by", instance.holders),
                ("condition at", instance.conditionWaiters),
            ] {
                for waits in sites.prefix(limit) {
                    body.append(
                        ("  \(role) \(Self.describe(waits.site))", ["\(waits.count)", Self.format(waits.wait)]))
                }
            }
        }
        let width = min(80, max(44, body.map(\.0.count).max() ?? 0))
        let header = ("instance", ["waits", "total wait", "longest", "threads/tasks", "condition waits"])
        for (name, cells) in [header] + body {
            let right = zip(cells, [8, 12, 10, 14]).map { String(repeating: " ", count: max(0, $1 - $0.count)) + $0 }
            let last = cells.count > 4 ? "  " + cells[4] : ""
            lines.append(
                name.padding(toLength: max(name.count, width), withPad: " ", startingAt: 0) + " "
                    + right.joined(separator: " ") + last)
        }
        if instances.count > count { lines.append("(\(instances.count - count) more instances)") }
        return lines.joined(separator: "\n")
    }

    /// A site as the table and pprof name it, or why there is none.
    static func describe(_ site: Site?) -> String {
        site?.description ?? "(not noted: asynchronous work, a read, or a hold that ended at once)"
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
        let total = Self.sum(contended)
        (contentions, totalWait) = (total.count, total.wait)
        maxWait = .nanoseconds(contended.map(\.longest).max() ?? 0)
        byKind = Dictionary(grouping: contended, by: \.kind).mapValues(Self.sum)
        waiters = Self.bySite(contended, \.waiter)
        holders = Self.bySite(contended, \.holder)
        (conditionWaits, conditionWait) = (Self.sum(conditions).count, Self.sum(conditions).wait)
        conditionWaiters = Self.bySite(conditions, \.waiter)
    }

    private static func sum(_ rows: [ContentionReport.Row]) -> ContentionReport.SiteWaits {
        .init(
            site: nil, count: rows.reduce(0) { $0 + $1.count },
            wait: .nanoseconds(rows.reduce(0) { $0 + $1.nanoseconds }))
    }

    private static func bySite(
        _ rows: [ContentionReport.Row], _ site: KeyPath<ContentionReport.Row, ContentionReport.Site?>
    ) -> [ContentionReport.SiteWaits] {
        Dictionary(grouping: rows) { $0[keyPath: site] }.map { site, rows in
            ContentionReport.SiteWaits(site: site, count: sum(rows).count, wait: sum(rows).wait)
        }.sorted { ($0.wait, $0.count) > ($1.wait, $1.count) }
    }
}

extension ContentionReport.Site {
    init?(_ site: _Site) {
        guard let file = site.file else { return nil }
        self.init(file: file, line: Int(site.line))
    }
}
