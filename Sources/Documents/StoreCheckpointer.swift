import Dispatch
import Exclusion
import GRDB

/// Copies what a store committed from its write-ahead log into the database file, on a connection
/// and a thread of its own.
///
/// SQLite's automatic checkpoint would run inside a commit, on the committing thread; here a large
/// import keeps committing while the previous batches are copied, on another core. A commit is
/// durable before its checkpoint: the checkpoint only keeps the log short.
final class StoreCheckpointer: Sendable {
    /// A quarter of SQLite's own threshold for its automatic checkpoint (1,000 pages of 4 KiB): an
    /// import checkpoints after each batch, while it parses and writes the next ones, so little is
    /// left to copy when it ends.
    static let threshold = 1 << 20

    private let connection: DatabaseQueue
    private let queue = DispatchQueue(label: "document store checkpoints")
    /// Bytes committed since the last checkpoint was scheduled (roughly), and whether one is.
    private let uncheckpointed = Exclusive(Uncheckpointed(), label: "document store log size")

    private struct Uncheckpointed {
        var bytes = 0
        var scheduled = false
    }

    /// Opens the checkpointing connection to the database at `path`.
    init(path: String, configuration: Configuration) throws {
        connection = try DatabaseQueue(path: path, configuration: configuration)
        try connection.inDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
    }

    /// Counts `bytes` committed, and schedules a checkpoint once enough are.
    func didCommit(bytes: Int) {
        let schedule = uncheckpointed.access { state -> Bool in
            state.bytes += bytes
            guard !state.scheduled, state.bytes >= Self.threshold else { return false }
            state.scheduled = true
            state.bytes = 0
            return true
        }
        if schedule { queue.async { self.checkpoint() } }
    }

    /// Copies what is committed into the database file, and waits for it: afterwards the file
    /// holds every document committed before the call, whatever happens to the log.
    func checkpointNow() {
        uncheckpointed.access { state in
            state.scheduled = true
            state.bytes = 0
        }
        queue.sync { checkpoint() }
    }

    /// On `queue`. A failed checkpoint is harmless: SQLite tries again at the next one, and at the
    /// latest when the last connection closes.
    private func checkpoint() {
        uncheckpointed.access { $0.scheduled = false }
        _ = try? connection.inDatabase { db in try db.checkpoint(.passive) }
    }
}
