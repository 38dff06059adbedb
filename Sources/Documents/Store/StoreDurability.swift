import GRDB

/// How a store's connection makes SQLite sync what it writes: the settings a commit that survives a
/// power loss rests on, as SQLite reports them.
struct StoreDurability: Equatable {
    /// `PRAGMA synchronous`: 2 (FULL), so that a commit syncs the write-ahead log before it returns.
    let synchronous: Int
    /// `PRAGMA fullfsync` and `checkpoint_fullfsync`: on Apple platforms, syncs that reach the
    /// drive's storage rather than its cache (`F_FULLFSYNC`), at commits and at checkpoints.
    let fullfsync: Bool
    let checkpointFullfsync: Bool

    /// What every store connection has.
    static let required = StoreDurability(synchronous: 2, fullfsync: true, checkpointFullfsync: true)

    init(synchronous: Int, fullfsync: Bool, checkpointFullfsync: Bool) {
        self.synchronous = synchronous
        self.fullfsync = fullfsync
        self.checkpointFullfsync = checkpointFullfsync
    }

    /// What `db` has, read back from SQLite.
    init(_ db: Database) throws {
        synchronous = try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? 0
        fullfsync = try Bool.fetchOne(db, sql: "PRAGMA fullfsync") ?? false
        checkpointFullfsync = try Bool.fetchOne(db, sql: "PRAGMA checkpoint_fullfsync") ?? false
    }

    /// Sets the full syncs on a connection as it opens. `synchronous` is set on the connections that
    /// write (GRDB sets NORMAL on every connection of a pool in WAL mode).
    static func set(in db: Database) throws {
        try db.execute(sql: "PRAGMA fullfsync = ON; PRAGMA checkpoint_fullfsync = ON")
    }
}
