import Dispatch
import ExclusionTestSupport
import Foundation
import GRDB
import Testing

@testable import Documents

private let text = Data("some words here".utf8)

@Suite("Document store", .patientTimeLimit(minutes: 5))
struct DocumentStoreTests {
    @Test func aReadDoesNotWaitForACommitThatWaitsForTheDatabase() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        // Its connections tell when the committing thread below sleeps in SQLite's busy handler.
        let manager = try SQLiteSleeps.watching { try DocumentManager(directory: folder.url) }
        _ = try await manager.save(text, as: "first.txt")
        // Another connection holds the write lock, so the next commit waits in SQLite.
        let other = try DatabaseQueue(path: folder.url.appendingPathComponent(DocumentStore.fileName).path)
        let locked = Flag()
        let release = Flag()
        // The holder lets go when the test does, on every path out: a limit of its own would run
        // while the test waits for a thread, and on a busy machine end the transaction too soon.
        defer { release.raise() }
        onNewThread {
            try? other.inTransaction(.immediate) { _ in
                locked.raise()
                release.waitUntilRaised()
                return .rollback
            }
        }
        #expect(await eventually { locked.isRaised })
        let saved = Countdown(1)
        onNewThread {
            SQLiteSleeps.watchThisThread()
            // SQLite gives up after the store's busy timeout (60 s); on a machine slow enough (TSan,
            // two cores, the whole suite) the test may not have let go by then: try again.
            for _ in 0..<5 {
                if (try? manager.storeDocuments([(DocumentInfo(parsing: text, name: "second.txt"), text)])) != nil {
                    break
                }
            }
            saved.arrive()
        }
        // The commit is waiting for the database: the registry must be free all the while.
        #expect(await eventually { SQLiteSleeps.watchedThreadSleeps })
        let names = manager.registry.readIfAvailable { $0.names }
        #expect(names == ["first.txt"])  // nil on the engine that held the registry through commits
        #expect(try await onItsOwnThread { manager.allDocs } == ["first.txt"])
        release.raise()
        await saved.wait()
        #expect(manager.allDocs == ["first.txt", "second.txt"])
    }

    @Test func aStoreWrittenBeforeTheMigratorOpensWithItsDocuments() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        // What a store of schema 1 held before GRDB's migrator kept the schema: no migrations table.
        let path = folder.url.appendingPathComponent(DocumentStore.fileName).path
        do {
            let queue = try DatabaseQueue(path: path)
            try await queue.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE document (
                            position INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL UNIQUE,
                            name TEXT NOT NULL, format TEXT, byteCount INTEGER, title TEXT, wordCount INTEGER,
                            contents BLOB, revision INTEGER NOT NULL);
                        CREATE INDEX document_revision ON document(revision);
                        CREATE TABLE store (
                            id INTEGER PRIMARY KEY CHECK (id = 1), revision INTEGER NOT NULL,
                            removals INTEGER NOT NULL);
                        INSERT INTO store (id, revision, removals) VALUES (1, 1, 0);
                        INSERT INTO document (key, name, format, byteCount, title, wordCount, contents, revision)
                            VALUES ('old.txt', 'old.txt', 'text', 15, NULL, 3, x'736f6d6520776f7264732068657265', 1);
                        PRAGMA application_id = 1165509731;
                        PRAGMA user_version = 1;
                        """)
            }
        }
        let manager = try DocumentManager(directory: folder.url)
        #expect(manager.allDocs == ["old.txt"])
        let contents = try await manager.contents(of: "old.txt")
        #expect(contents == text)
        _ = try await manager.save(text, as: "new.txt")
        #expect(try DocumentManager(directory: folder.url).allDocs == ["old.txt", "new.txt"])
    }

    @Test func managersOpeningANewStoreAtOnceAllSucceed() async throws {
        // GRDB's migrator records its first migration once; managers racing to make the store
        // must not fail on each other's record.
        for _ in 0..<5 {
            let folder = TemporaryFolder()
            defer { folder.remove() }
            let failures = Recorder<String>()
            await onThreads(4) { _ in
                do {
                    _ = try DocumentManager(directory: folder.url).allDocs
                } catch {
                    failures.record("\(error)")
                }
            }
            #expect(failures.values.isEmpty)
        }
    }

    @Test func aNameAddedToAStoreIsListedAtOnceAndCommittedSoonAfter() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let manager = try DocumentManager(directory: folder.url)
        manager.addDocumentName("later.txt")
        #expect(manager.allDocs == ["later.txt"])
        #expect(await eventually { (try? DocumentManager(directory: folder.url).allDocs) == ["later.txt"] })
    }
}

/// The registry follows the store in revision order, whatever order the updates arrive in.
@Suite("Document registry")
struct DocumentRegistryTests {
    private func info(_ name: String, words: Int = 1) -> DocumentInfo {
        DocumentInfo(name: name, format: .text, byteCount: 1, title: nil, wordCount: words)
    }

    @Test func aCommitThatArrivesLateChangesNothingANewerOneBrought() {
        let first = StoreCommit(
            before: .unchanged(StoreMarks()), changes: [.save(info("a.txt", words: 1), text)], applied: [true],
            revision: 1, removals: 0)
        // The second commit read the first one's row, with what it held by then, before its own.
        let second = StoreCommit(
            before: .rows([StoreRow(name: "a.txt", info: info("a.txt", words: 1))], StoreMarks(revision: 1)),
            changes: [.save(info("b.txt"), text)], applied: [true], revision: 2, removals: 0)
        var inOrder = DocumentRegistry()
        inOrder.apply(first)
        inOrder.apply(second)
        var outOfOrder = DocumentRegistry()
        outOfOrder.apply(second)
        outOfOrder.apply(first)
        for registry in [inOrder, outOfOrder] {
            #expect(registry.names == ["a.txt", "b.txt"])
            #expect(registry.marks.revision == 2)
        }
        // A look at the store older than what the registry holds is ignored too.
        outOfOrder.apply(.rows([StoreRow(name: "a.txt", info: info("a.txt", words: 9))], StoreMarks(revision: 1)))
        #expect(outOfOrder.infos["a.txt"]?.wordCount == 1)
    }

    @Test func aPendingNameOutlivesAReloadAndLeavesIfItsCommitFails() {
        var registry = DocumentRegistry()
        registry.addPendingName("pending.txt")
        registry.apply(.all([StoreRow(name: "other.txt", info: nil)], StoreMarks(revision: 3)))
        #expect(registry.names == ["other.txt", "pending.txt"])
        registry.settlePendingName("pending.txt", stored: false)
        #expect(registry.names == ["other.txt"])
    }
}
