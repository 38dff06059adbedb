import Dispatch
import Exclusion
import Foundation
import GRDB

/// The database behind a ``DocumentManager`` on disk: one SQLite file, `documents.sqlite`, in WAL
/// mode, through GRDB.
///
/// The database is the truth; the manager's registry in memory is loaded from it and kept up to
/// date with it. Every write transaction first catches the registry up with what other processes
/// committed, then changes the database, then bumps the store's revision. A write made by another
/// process is therefore never overwritten by a stale copy: SQLite runs write transactions one at a
/// time across processes, and each starts from what is committed.
///
/// Commits are durable: `synchronous = FULL` makes SQLite sync the write-ahead log before a commit
/// returns, so a save that returned survives a power loss (with `NORMAL`, WAL mode may lose the
/// last commits then, though never to a crash of the process alone).
///
/// Checkpoints (copying committed pages from the log into the database file) run on a connection
/// and a thread of their own, not inside a commit as SQLite's automatic checkpoint would: a large
/// import keeps writing while the previous batches are copied, on the other core. A commit is
/// durable before its checkpoint; the checkpoint only keeps the log short.
///
/// Nothing else in the store's folder is ever read, moved or deleted: only `documents.sqlite` and
/// the `-wal` and `-shm` files SQLite keeps beside it.
final class DocumentStore: Sendable {
    static let fileName = "documents.sqlite"
    /// `PRAGMA application_id`: tells this store from any other SQLite file ("ExDc").
    private static let applicationID: Int32 = 0x4578_4463
    private static let schemaVersion = 1

    let path: String
    private let pool: DatabasePool
    /// The connection that checkpoints, used only on `checkpoints`.
    private let checkpointer: DatabaseQueue
    private let checkpoints = DispatchQueue(label: "document store checkpoints")
    /// Bytes committed since the last checkpoint was scheduled (roughly: documents and a little
    /// per row), and whether one is scheduled.
    private let uncheckpointed = Exclusive(Uncheckpointed(), label: "document store log size")

    private struct Uncheckpointed {
        var bytes = 0
        var scheduled = false
    }

    /// A quarter of SQLite's own threshold for its automatic checkpoint (1,000 pages of 4 KiB): an
    /// import checkpoints after each batch, while it parses and writes the next ones, so little is
    /// left to copy when it ends.
    private static let checkpointThreshold = 1 << 20

    /// Opens the store in `directory`; creates the folder and the database if `ifMissing` says so.
    init(directory: URL, ifMissing: DocumentManager.MissingStore) throws(DocumentError) {
        let fileManager = FileManager.default
        path = directory.appendingPathComponent(Self.fileName).path
        var isDirectory: ObjCBool = false
        if fileManager.fileExists(atPath: directory.path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw .io("\(directory.path) is not a folder") }
        } else {
            guard ifMissing == .create else { throw .io("there is no document store at \(directory.path)") }
            do {
                try fileManager.createDirectory(at: directory, withIntermediateDirectories: true)
            } catch {
                throw .io("cannot create the store at \(directory.path): \(error.localizedDescription)")
            }
        }
        let exists = fileManager.fileExists(atPath: path, isDirectory: &isDirectory)
        if exists, isDirectory.boolValue { throw .io("\(path) is a folder, not a document store") }
        if !exists, ifMissing == .fail { throw .io("there is no document store at \(directory.path)") }

        var configuration = Configuration()
        configuration.label = "documents"
        // Another process may hold the write lock for one batch of an import; wait for it.
        configuration.busyMode = .timeout(60)
        do {
            // Opening a pool writes (GRDB makes sure a write-ahead log exists), so a file that
            // isn't a store is first looked at through a connection that can't write.
            if exists { try Self.checkReadOnly(path: path, configuration: configuration) }
            pool = try DatabasePool(path: path, configuration: configuration)
            checkpointer = try DatabaseQueue(path: path, configuration: configuration)
            try checkpointer.inDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            try pool.writeWithoutTransaction { db in
                // GRDB sets NORMAL for WAL mode; only FULL syncs the log at every commit.
                try db.execute(sql: "PRAGMA synchronous = FULL")
                // Checkpoints run in the background instead (see above).
                try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
                try db.inTransaction(.immediate) {
                    try Self.checkOrCreateSchema(db, path: path)
                    return .commit
                }
            }
        } catch let error as DocumentError {
            throw error
        } catch {
            throw Self.failure(error, path: path, doing: "open")
        }
    }

    /// Refuses a file that isn't a document store without writing to it.
    private static func checkReadOnly(path: String, configuration: Configuration) throws {
        var configuration = configuration
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        _ = try queue.read { db in try checkSchema(db, path: path) }
    }

    /// Whether `db` is a document store (true) or empty (false); throws for anything else.
    @discardableResult
    private static func checkSchema(_ db: Database, path: String) throws -> Bool {
        let application = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        if application == applicationID {
            guard version <= schemaVersion else {
                throw DocumentError.io("\(path) was written by a newer version of Documents (schema \(version))")
            }
            return true
        }
        let tables = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") ?? 0
        guard application == 0, tables == 0 else {
            throw DocumentError.io("\(path) is a SQLite database, but not a document store; nothing was changed")
        }
        return false
    }

    /// Creates the tables in an empty database; refuses a database that isn't a document store.
    private static func checkOrCreateSchema(_ db: Database, path: String) throws {
        guard try !checkSchema(db, path: path) else { return }
        try db.execute(
            sql: """
                CREATE TABLE document (
                    -- The order names were added in: AUTOINCREMENT never reuses a removed position.
                    position INTEGER PRIMARY KEY AUTOINCREMENT,
                    -- The name in Unicode normalization form C: names that are canonically
                    -- equivalent (equal as Swift strings) are one document.
                    key TEXT NOT NULL UNIQUE,
                    name TEXT NOT NULL,
                    -- NULL for a name added without contents.
                    format TEXT,
                    byteCount INTEGER,
                    title TEXT,
                    wordCount INTEGER,
                    contents BLOB,
                    -- The store's revision when this row last changed.
                    revision INTEGER NOT NULL
                );
                CREATE INDEX document_revision ON document(revision);
                CREATE TABLE store (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    -- Bumped by every write transaction.
                    revision INTEGER NOT NULL,
                    -- How many documents were ever removed: a change here means a full reload.
                    removals INTEGER NOT NULL
                );
                INSERT INTO store (id, revision, removals) VALUES (1, 0, 0);
                PRAGMA application_id = \(applicationID);
                PRAGMA user_version = \(schemaVersion);
                """)
    }

    // MARK: - Reading

    /// Everything but the documents' bytes: what the registry in memory holds.
    func load() throws(DocumentError) -> DocumentIndex {
        try run("read") { try pool.read { db in try Self.load(db) } }
    }

    /// What was committed since `index` was loaded or last caught up; apply it with
    /// `DocumentIndex.apply(_:)`.
    func changes(since known: (revision: Int64, removals: Int64)) throws(DocumentError) -> Changes {
        try run("read") { try pool.read { db in try Self.changes(since: known, db) } }
    }

    /// The writer's `PRAGMA synchronous`: 2 (FULL) for a durable commit.
    func synchronousLevel() throws(DocumentError) -> Int {
        try run("read") {
            try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? 0 }
        }
    }

    /// The store's revision: cheap to ask, to see whether anything changed.
    func revision() throws(DocumentError) -> Int64 {
        try run("read") { try pool.read { db in try Self.marks(db).revision } }
    }

    /// The bytes of the document `name`, or nil if it has none.
    func contents(of name: String) throws(DocumentError) -> Data? {
        try run("read") {
            try pool.read { db in
                try Data.fetchOne(db, sql: "SELECT contents FROM document WHERE key = ?", arguments: [Self.key(name)])
            }
        }
    }

    private static func marks(_ db: Database) throws -> (revision: Int64, removals: Int64) {
        guard let row = try Row.fetchOne(db, sql: "SELECT revision, removals FROM store WHERE id = 1") else {
            throw DocumentError.io("the store's bookkeeping row is missing")
        }
        return (row["revision"], row["removals"])
    }

    private static let columns = "name, format, byteCount, title, wordCount"

    private static func load(_ db: Database) throws -> DocumentIndex {
        var index = DocumentIndex()
        (index.revision, index.removals) = try marks(db)
        let rows = try Row.fetchCursor(db, sql: "SELECT \(columns) FROM document ORDER BY position")
        while let row = try rows.next() { try index.merge(entry(row)) }
        return index
    }

    /// What other connections committed after `revision`: nothing, the rows they changed, or, if
    /// one removed a document (rare), the whole registry again.
    enum Changes {
        case none
        case rows([(name: String, info: DocumentInfo?)], revision: Int64)
        case all(DocumentIndex)
    }

    private static func changes(since known: (revision: Int64, removals: Int64), _ db: Database) throws -> Changes {
        let (revision, removals) = try marks(db)
        guard revision != known.revision else { return .none }
        if removals != known.removals { return .all(try load(db)) }
        var rows: [(name: String, info: DocumentInfo?)] = []
        let cursor = try Row.fetchCursor(
            db, sql: "SELECT \(columns) FROM document WHERE revision > ? ORDER BY position",
            arguments: [known.revision])
        while let row = try cursor.next() { rows.append(try entry(row)) }
        return .rows(rows, revision: revision)
    }

    private static func entry(_ row: Row) throws -> (name: String, info: DocumentInfo?) {
        let name: String = row["name"]
        guard let formatName: String = row["format"] else { return (name, nil) }
        guard let format = DocumentFormat(rawValue: formatName) else {
            throw DocumentError.io("the store names an unknown format \(formatName.debugDescription) for \(name)")
        }
        let info = DocumentInfo(
            name: name, format: format, byteCount: row["byteCount"], title: row["title"], wordCount: row["wordCount"])
        return (name, info)
    }

    // MARK: - Writing

    /// One change to the store, applied in a write transaction and then to the registry.
    enum Change {
        case addName(String)
        case save(DocumentInfo, Data)
        case remove(String)
    }

    /// Applies `changes` in one durable transaction, after catching `index` up with other processes;
    /// then applies them to `index`. Returns, for each change, whether it applied (a remove of a
    /// name that isn't there doesn't).
    ///
    /// If the transaction fails, nothing of `changes` is stored and `index` holds what was committed.
    func write(_ changes: [Change], to index: inout DocumentIndex) throws(DocumentError) -> [Bool] {
        // `index` is changed in place, never copied: a save costs O(1) in the registry.
        let applied = try run("write") {
            try pool.writeWithoutTransaction { db in
                var applied: [Bool] = []
                try db.inTransaction(.immediate) {
                    index.apply(try Self.changes(since: (index.revision, index.removals), db))
                    let revision = index.revision + 1
                    var removed: Int64 = 0
                    applied = try changes.map { change in
                        let done = try Self.apply(change, revision: revision, db)
                        if done, case .remove = change { removed += 1 }
                        return done
                    }
                    try db.execute(
                        sql: "UPDATE store SET revision = ?, removals = removals + ? WHERE id = 1",
                        arguments: [revision, removed])
                    return .commit
                }
                return applied
            }
        }
        index.revision += 1
        didCommit(
            bytes: changes.reduce(0) { total, change in
                if case .save(_, let data) = change { return total + data.count + 200 }
                return total + 200
            })
        for (change, done) in zip(changes, applied) where done {
            switch change {
            case .addName(let name): index.addName(name)
            case .save(let info, _): index.put(info, contents: nil)
            case .remove(let name):
                index.remove(name)
                index.removals += 1
            }
        }
        return applied
    }

    private static func apply(_ change: Change, revision: Int64, _ db: Database) throws -> Bool {
        switch change {
        case .addName(let name):
            try db.execute(
                sql: "INSERT INTO document (key, name, revision) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING",
                arguments: [key(name), name, revision])
            return db.changesCount > 0
        case .save(let info, let data):
            // Cached: an import runs this once per file.
            try db.cachedStatement(
                sql: """
                    INSERT INTO document (key, name, format, byteCount, title, wordCount, contents, revision)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (key) DO UPDATE SET format = excluded.format, byteCount = excluded.byteCount,
                        title = excluded.title, wordCount = excluded.wordCount, contents = excluded.contents,
                        revision = excluded.revision
                    """
            ).execute(
                arguments: [
                    key(info.name), info.name, info.format.rawValue, info.byteCount, info.title, info.wordCount,
                    data, revision,
                ])
            return true
        case .remove(let name):
            try db.execute(sql: "DELETE FROM document WHERE key = ?", arguments: [key(name)])
            return db.changesCount > 0
        }
    }

    /// The column a name is looked up by: its canonical composition, so that equal Swift strings
    /// are one row.
    private static func key(_ name: String) -> String {
        // ASCII is its own composition, and most names are ASCII: skip Foundation's normalization.
        name.utf8.allSatisfy { $0 < 0x80 } ? name : name.precomposedStringWithCanonicalMapping
    }

    // MARK: - Checkpoints

    private func didCommit(bytes: Int) {
        let schedule = uncheckpointed.access { state -> Bool in
            state.bytes += bytes
            guard !state.scheduled, state.bytes >= Self.checkpointThreshold else { return false }
            state.scheduled = true
            state.bytes = 0
            return true
        }
        if schedule { checkpoints.async { self.checkpoint() } }
    }

    /// Copies what is committed into the database file, and waits for it: afterwards the file
    /// holds every document committed before the call, whatever happens to the log.
    func checkpointNow() {
        uncheckpointed.access { state in
            state.scheduled = true
            state.bytes = 0
        }
        checkpoints.sync { checkpoint() }
    }

    /// On `checkpoints`. A failed checkpoint is harmless: SQLite tries again at the next one, and
    /// at the latest when the last connection closes.
    private func checkpoint() {
        uncheckpointed.access { $0.scheduled = false }
        _ = try? checkpointer.inDatabase { db in try db.checkpoint(.passive) }
    }

    // MARK: - Errors

    private func run<T>(_ doing: String, _ body: () throws -> T) throws(DocumentError) -> T {
        do {
            return try body()
        } catch let error as DocumentError {
            throw error
        } catch {
            throw Self.failure(error, path: path, doing: doing)
        }
    }

    private static func failure(_ error: any Error, path: String, doing: String) -> DocumentError {
        guard let error = error as? DatabaseError else {
            return .io("cannot \(doing) the store \(path): \(error)")
        }
        switch error.resultCode {
        case .SQLITE_NOTADB:
            return .io("\(path) is not a document store (SQLite: \(error.message ?? "file is not a database"))")
        case .SQLITE_CORRUPT:
            return .io("the store \(path) is damaged (SQLite: \(error.message ?? "database disk image is malformed"))")
        default:
            return .io("cannot \(doing) the store \(path): SQLite: \(error.message ?? "\(error.resultCode)")")
        }
    }
}
