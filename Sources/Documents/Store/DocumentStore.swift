import Foundation
import GRDB

/// The database behind a document manager on disk: one SQLite file, `documents.sqlite`, in WAL
/// mode, through GRDB.
///
/// The database is the truth; the manager's registry in memory is loaded from it and follows it.
/// The store knows nothing of the registry or the manager: it reads what was committed, commits
/// changes, and returns what it committed as values (`StoreRow`, `StoreUpdate`, `StoreCommit`) for
/// the manager to apply. Every write transaction first reads what other processes committed since
/// the revision the caller knows, then changes the database, then bumps the store's revision;
/// SQLite runs write transactions one at a time across processes, so a write made elsewhere is
/// never overwritten by a stale copy.
///
/// Commits are durable: `synchronous = FULL` makes SQLite sync the write-ahead log before a commit
/// returns, so a save that returned survives a power loss (with `NORMAL`, WAL mode may lose the
/// last commits then, though never to a crash of the process alone). On Apple platforms a sync
/// (`fsync`) only reaches the drive's cache, which a power loss empties; `fullfsync` and
/// `checkpoint_fullfsync` make SQLite ask the drive to write its cache out (`F_FULLFSYNC`) at every
/// commit and checkpoint. Elsewhere SQLite ignores them, so every connection sets them everywhere.
/// Checkpoints run apart (``StoreCheckpointer``); the tables are in ``StoreSchema``.
///
/// Nothing else in the store's folder is ever read, moved or deleted: only `documents.sqlite` and
/// the `-wal` and `-shm` files SQLite keeps beside it.
final class DocumentStore: Sendable {
    static let fileName = "documents.sqlite"

    let path: String
    private let pool: DatabasePool
    private let checkpointer: StoreCheckpointer

    /// Opens the store in `directory`; creates the folder and the database if `createIfMissing`.
    init(directory: URL, createIfMissing: Bool) throws(DocumentError) {
        let fileManager = FileManager.default
        path = directory.appendingPathComponent(Self.fileName).path
        var isDirectory: ObjCBool = false
        if fileManager.fileExists(atPath: directory.path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw .io("\(directory.path) is not a folder") }
        } else {
            guard createIfMissing else { throw .io("there is no document store at \(directory.path)") }
            do {
                try fileManager.createDirectory(at: directory, withIntermediateDirectories: true)
            } catch {
                throw .io("cannot create the store at \(directory.path): \(error.localizedDescription)")
            }
        }
        let exists = fileManager.fileExists(atPath: path, isDirectory: &isDirectory)
        if exists, isDirectory.boolValue { throw .io("\(path) is a folder, not a document store") }
        if !exists, !createIfMissing { throw .io("there is no document store at \(directory.path)") }

        var configuration = Configuration()
        configuration.label = "documents"
        // Another process may hold the write lock for one batch of an import; wait for it.
        configuration.busyMode = .timeout(60)
        configuration.prepareDatabase { db in try StoreDurability.set(in: db) }
        do {
            (pool, checkpointer) = try Self.open(path: path, exists: exists, configuration: configuration)
        } catch {
            throw .store(error, path: path, doing: "open")
        }
    }

    /// Opens the pool and the checkpointer, and makes sure of the schema.
    ///
    /// Managers that create a store at the same moment can find it locked where SQLite doesn't wait
    /// for the busy timeout (switching a new file to write-ahead logging): such an open is tried
    /// again, a few times, after a short pause.
    private static func open(
        path: String, exists: Bool, configuration: Configuration
    ) throws -> (DatabasePool, StoreCheckpointer) {
        var attempt = 0
        while true {
            do {
                // Opening a pool writes (GRDB makes sure a write-ahead log exists), so a file that
                // isn't a store is first looked at through a connection that can't write.
                if exists { try checkReadOnly(path: path, configuration: configuration) }
                let pool = try DatabasePool(path: path, configuration: configuration)
                let checkpointer = try StoreCheckpointer(path: path, configuration: configuration)
                try pool.writeWithoutTransaction { db in
                    // GRDB sets NORMAL for WAL mode; only FULL syncs the log at every commit.
                    try db.execute(sql: "PRAGMA synchronous = FULL")
                    // Checkpoints run in the background instead.
                    try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
                }
                try StoreSchema.migrate(pool, path: path)
                return (pool, checkpointer)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY && attempt < 50 {
                attempt += 1
                usleep(UInt32(1_000 * attempt))
            }
        }
    }

    /// Refuses a file that isn't a document store without writing to it.
    private static func checkReadOnly(path: String, configuration: Configuration) throws {
        var configuration = configuration
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        _ = try queue.read { db in try StoreSchema.kind(of: db, path: path) }
    }

    // MARK: - Reading

    /// Every row, without the documents' bytes, and the marks they are at: what the registry in
    /// memory is loaded from.
    func load() throws(DocumentError) -> (rows: [StoreRow], marks: StoreMarks) {
        try run("read") { try pool.read { db in try Self.load(db) } }
    }

    /// What was committed after `known`, for a registry that reflects it.
    func update(since known: StoreMarks) throws(DocumentError) -> StoreUpdate {
        try run("read") { try pool.read { db in try Self.update(since: known, db) } }
    }

    /// How the writer syncs: what a durable commit needs.
    func writerDurability() throws(DocumentError) -> StoreDurability {
        try run("read") { try pool.writeWithoutTransaction { db in try StoreDurability(db) } }
    }

    /// How the checkpoints' connection syncs.
    func checkpointerDurability() throws(DocumentError) -> StoreDurability {
        try run("read") { try checkpointer.durability() }
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

    private static func marks(_ db: Database) throws -> StoreMarks {
        guard let row = try Row.fetchOne(db, sql: "SELECT revision, removals FROM store WHERE id = 1") else {
            throw DocumentError.io("the store's bookkeeping row is missing")
        }
        return StoreMarks(revision: row["revision"], removals: row["removals"])
    }

    private static let columns = "name, format, byteCount, title, wordCount"

    private static func load(_ db: Database) throws -> (rows: [StoreRow], marks: StoreMarks) {
        let marks = try marks(db)
        let rows = try Row.fetchCursor(db, sql: "SELECT \(columns) FROM document ORDER BY position")
        var loaded: [StoreRow] = []
        while let row = try rows.next() { loaded.append(try storeRow(row)) }
        return (loaded, marks)
    }

    private static func update(since known: StoreMarks, _ db: Database) throws -> StoreUpdate {
        let marks = try marks(db)
        guard marks.revision != known.revision else { return .unchanged(marks) }
        if marks.removals != known.removals {
            let (rows, marks) = try load(db)
            return .all(rows, marks)
        }
        var rows: [StoreRow] = []
        let cursor = try Row.fetchCursor(
            db, sql: "SELECT \(columns) FROM document WHERE revision > ? ORDER BY position",
            arguments: [known.revision])
        while let row = try cursor.next() { rows.append(try storeRow(row)) }
        return .rows(rows, marks)
    }

    private static func storeRow(_ row: Row) throws -> StoreRow {
        let name: String = row["name"]
        guard let formatName: String = row["format"] else { return StoreRow(name: name, info: nil) }
        guard let format = DocumentFormat(rawValue: formatName) else {
            throw DocumentError.io("the store names an unknown format \(formatName.debugDescription) for \(name)")
        }
        let info = DocumentInfo(
            name: name, format: format, byteCount: row["byteCount"], title: row["title"], wordCount: row["wordCount"])
        return StoreRow(name: name, info: info)
    }

    // MARK: - Writing

    /// Commits `changes` in one durable transaction, and returns what it committed, with what
    /// other processes had committed after `known` before it: everything a registry that reflects
    /// `known` needs to reflect this commit.
    ///
    /// If the transaction fails, nothing of `changes` is stored.
    func commit(_ changes: [StoreChange], after known: StoreMarks) throws(DocumentError) -> StoreCommit {
        let commit = try run("write") {
            try pool.writeWithoutTransaction { db in
                var commit: StoreCommit?
                try db.inTransaction(.immediate) {
                    let before = try Self.update(since: known, db)
                    let revision = before.marks.revision + 1
                    // Prepared once per commit, not looked up again for each of an import's files.
                    let save = try db.cachedStatement(sql: Self.saveSQL)
                    let applied = try changes.map { change in try Self.apply(change, revision: revision, save: save, db)
                    }
                    let removed = Int64(zip(changes, applied).count { change, done in done && change.isRemove })
                    try db.execute(
                        sql: "UPDATE store SET revision = ?, removals = removals + ? WHERE id = 1",
                        arguments: [revision, removed])
                    commit = StoreCommit(
                        before: before, changes: changes, applied: applied, revision: revision, removals: removed)
                    return .commit
                }
                return commit!
            }
        }
        checkpointer.didCommit(bytes: changes.reduce(0) { $0 + $1.loggedBytes })
        return commit
    }

    /// An import starts: checkpoints wait for it to end (up to a much longer log).
    func importStarts() {
        checkpointer.importStarts()
    }

    /// An import ended: what it committed is copied into the database file soon, in the background.
    func importEnded() {
        checkpointer.importEnded()
    }

    private static let saveSQL = """
        INSERT INTO document (key, name, format, byteCount, title, wordCount, contents, revision)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (key) DO UPDATE SET format = excluded.format, byteCount = excluded.byteCount,
            title = excluded.title, wordCount = excluded.wordCount, contents = excluded.contents,
            revision = excluded.revision
        """

    private static func apply(
        _ change: StoreChange, revision: Int64, save: Statement, _ db: Database
    ) throws -> Bool {
        switch change {
        case .addName(let name):
            try db.execute(
                sql: "INSERT INTO document (key, name, revision) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING",
                arguments: [key(name), name, revision])
            return db.changesCount > 0
        case .save(let info, let data):
            try save.execute(
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

    private func run<T>(_ doing: String, _ body: () throws -> T) throws(DocumentError) -> T {
        do {
            return try body()
        } catch {
            throw .store(error, path: path, doing: doing)
        }
    }
}
