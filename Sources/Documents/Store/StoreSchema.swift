import GRDB

/// The tables of a document store, and how a database is told apart as one.
///
/// A store is a SQLite database with `PRAGMA application_id` set to "ExDc" and `user_version` to
/// the schema it was written with. Its tables come from GRDB's `DatabaseMigrator`: one migration
/// per schema version, each of which can run again without harm (`IF NOT EXISTS`), so that a store
/// written before the migrator kept its bookkeeping opens as it is.
enum StoreSchema {
    /// `PRAGMA application_id`: tells this store from any other SQLite file ("ExDc").
    static let applicationID: Int32 = 0x4578_4463
    static let version = 1

    /// What a database is, as far as stores go.
    enum Kind {
        case store
        case empty
    }

    /// Whether `db` is a store or empty; throws for anything else: another application's database,
    /// or a store written by a newer version of Documents.
    static func kind(of db: Database, path: String) throws -> Kind {
        let application = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        if application == applicationID {
            guard version <= Self.version else {
                throw DocumentError.io("\(path) was written by a newer version of Documents (schema \(version))")
            }
            return .store
        }
        // GRDB's migrator makes its own table before the first migration runs.
        let tables =
            try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE tbl_name != 'grdb_migrations'") ?? 0
        guard application == 0, tables == 0 else {
            throw DocumentError.io("\(path) is a SQLite database, but not a document store; nothing was changed")
        }
        return .empty
    }

    /// Brings the database at `path` to the current schema, creating the tables in an empty one.
    ///
    /// GRDB's migrator records what it ran in a table of its own, and two processes opening a new
    /// store at once would both try to record the first migration: the second gets a constraint
    /// error. The migrations themselves can run twice, so the second simply looks again and finds
    /// everything done.
    static func migrate(_ writer: some DatabaseWriter, path: String) throws {
        let migrator = migrator(path: path)
        do {
            try migrator.migrate(writer)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            try migrator.migrate(writer)
        }
    }

    private static func migrator(path: String) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            // In the migration's transaction, so that nothing else is created meanwhile.
            _ = try kind(of: db, path: path)
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS document (
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
                    CREATE INDEX IF NOT EXISTS document_revision ON document(revision);
                    CREATE TABLE IF NOT EXISTS store (
                        id INTEGER PRIMARY KEY CHECK (id = 1),
                        -- Bumped by every write transaction.
                        revision INTEGER NOT NULL,
                        -- How many documents were ever removed: a change here means a full reload.
                        removals INTEGER NOT NULL
                    );
                    INSERT OR IGNORE INTO store (id, revision, removals) VALUES (1, 0, 0);
                    PRAGMA application_id = \(applicationID);
                    PRAGMA user_version = 1;
                    """)
        }
        return migrator
    }
}
