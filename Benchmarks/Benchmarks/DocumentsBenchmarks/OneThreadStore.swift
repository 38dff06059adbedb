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

    func importFiles(_ files: [URL]) throws {
        try pool.write { db in
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO document (key, name, format, byteCount, title, wordCount, contents, revision)
                    VALUES (?, ?, ?, ?, ?, ?, ?, 1)
                    """)
            for url in files {
                let data = try Data(contentsOf: url)
                let name = url.lastPathComponent
                let info = try DocumentInfo(parsing: data, name: name)
                try insert.execute(arguments: [
                    name, name, info.format.rawValue, info.byteCount, info.title, info.wordCount, data,
                ])
            }
        }
    }
}
