import Documents
import Foundation
import GRDB

/// The honest peer for an import: what a careful programmer writes with one thread and GRDB.
/// It opens a database with the store's settings (WAL, `synchronous = FULL`) and the store's
/// table, then reads, parses and inserts every file in one transaction, with a cached statement.
struct OneThreadStore {
    let pool: DatabasePool

    init(in folder: URL) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(60)
        pool = try DatabasePool(path: folder.appendingPathComponent("peer.sqlite").path, configuration: configuration)
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(
                sql: """
                    CREATE TABLE document (
                        position INTEGER PRIMARY KEY AUTOINCREMENT,
                        key TEXT NOT NULL UNIQUE,
                        name TEXT NOT NULL,
                        format TEXT,
                        byteCount INTEGER,
                        title TEXT,
                        wordCount INTEGER,
                        contents BLOB,
                        revision INTEGER NOT NULL
                    );
                    CREATE INDEX document_revision ON document(revision);
                    """)
        }
    }

    struct Parsed {
        let info: DocumentInfo
        let data: Data
    }

    private static let insertSQL = """
        INSERT INTO document (key, name, format, byteCount, title, wordCount, contents, revision)
        VALUES (?, ?, ?, ?, ?, ?, ?, 1)
        """

    func importFiles(_ files: [URL]) throws {
        try pool.write { db in
            let insert = try db.cachedStatement(sql: Self.insertSQL)
            for url in files {
                let data = try Data(contentsOf: url)
                try Self.insert(
                    Parsed(info: DocumentInfo(parsing: data, name: url.lastPathComponent), data: data), insert)
            }
        }
    }

    /// Only the storing part of `importFiles`, for files already parsed.
    func insert(_ files: [Parsed]) throws {
        try pool.write { db in
            let insert = try db.cachedStatement(sql: Self.insertSQL)
            for file in files { try Self.insert(file, insert) }
        }
    }

    private static func insert(_ file: Parsed, _ statement: Statement) throws {
        let info = file.info
        try statement.execute(arguments: [
            info.name, info.name, info.format.rawValue, info.byteCount, info.title, info.wordCount, file.data,
        ])
    }
}
