import Dispatch
import Exclusion
import GRDB

/// Copies what a store committed from its write-ahead log into the database file, on a connection
/// and a thread of its own.
///
/// SQLite's automatic checkpoint would run inside a commit, on the committing thread; here commits
/// go on while the log is copied, on another core. A commit is durable before its checkpoint: the
/// checkpoint only keeps the log short.
///
/// While an import runs, the log may grow much longer before it is copied: the import's writer
/// keeps one core busy and its parsers the other, so a checkpoint meanwhile would take time from
/// them, and the import would end later. Once the last import ends, everything is copied.
final class StoreCheckpointer: Sendable {
    /// A quarter of SQLite's own threshold for its automatic checkpoint (1,000 pages of 4 KiB).
    static let threshold = 1 << 20
    /// The threshold while an import runs: large enough for the imports people make, small enough
    /// that a huge one doesn't double its size on disk in the log.
    static let importThreshold = 64 << 20

    private let connection: DatabaseQueue
    private let queue = DispatchQueue(label: "document store checkpoints")
    /// Bytes committed since the last checkpoint was scheduled (roughly), whether one is, and how
    /// many imports run.
    private let uncheckpointed = Exclusive(Uncheckpointed(), label: "document store log size")

    private struct Uncheckpointed {
        var bytes = 0
        var scheduled = false
        var imports = 0

        var threshold: Int { imports > 0 ? StoreCheckpointer.importThreshold : StoreCheckpointer.threshold }
    }

    /// Opens the checkpointing connection to the database at `path`.
    init(path: String, configuration: Configuration) throws {
        connection = try DatabaseQueue(path: path, configuration: configuration)
        try connection.inDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
    }

    /// Counts `bytes` committed, and schedules a checkpoint once enough are.
    func didCommit(bytes: Int) {
        schedule { state in
            state.bytes += bytes
            return state.bytes >= state.threshold
        }
    }

    /// An import starts: the log may grow longer until it ends.
    func importStarts() {
        uncheckpointed.access { $0.imports += 1 }
    }

    /// An import ended: once none runs, everything it committed is copied soon.
    func importEnded() {
        schedule { state in
            state.imports -= 1
            return state.imports == 0 && state.bytes > 0
        }
    }

    /// Schedules a checkpoint if `wanted` says so, unless one is scheduled and not yet started
    /// (that one copies everything committed before it starts).
    private func schedule(if wanted: (inout Uncheckpointed) -> Bool) {
        let schedule = uncheckpointed.access { state -> Bool in
            guard wanted(&state), !state.scheduled else { return false }
            state.scheduled = true
            state.bytes = 0
            return true
        }
        if schedule { queue.async { self.checkpoint() } }
    }

    /// On `queue`. A failed checkpoint is harmless: SQLite tries again at the next one, and at the
    /// latest when the last connection closes.
    /// How this connection syncs the database when it checkpoints.
    func durability() throws -> StoreDurability {
        try connection.inDatabase { db in try StoreDurability(db) }
    }

    private func checkpoint() {
        uncheckpointed.access { $0.scheduled = false }
        _ = try? connection.inDatabase { db in try db.checkpoint(.passive) }
    }
}
