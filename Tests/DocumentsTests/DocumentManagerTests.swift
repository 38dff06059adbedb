import Dispatch
import ExclusionTestSupport
import Foundation
import Synchronization
import Testing

@testable import Documents

private let xml = Data("<doc><title> Plan A </title><p>one two <b>three</b></p></doc>".utf8)
private let json = Data(#"{"title": "Jay", "body": ["x y", {"deep": "z"}], "n": 3}"#.utf8)
private let text = Data("hello world\nagain".utf8)

@Suite("DocumentManager", .patientTimeLimit(minutes: 10))
struct DocumentManagerTests {
    // MARK: - The registry

    @Test func addedNamesAreListedInOrderAndTheEmptyNameIsIgnored() {
        let manager = DocumentManager()
        manager.addDocumentName("b.txt")
        manager.addDocumentName("")
        manager.addDocumentName("a.txt")
        manager.addDocumentName("b.txt")
        #expect(manager.allDocs == ["b.txt", "a.txt"])  // the same thread's next read sees the adds
        #expect(manager.info(for: "a.txt") == nil)
    }

    @Test func namesAddedFromManyThreadsAreAllThere() async {
        let manager = DocumentManager()
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<4 {
                group.addTask { for step in 0..<250 { manager.addDocumentName("doc-\(thread)-\(step).txt") } }
            }
        }
        // The adds are asynchronous, but a read runs whatever was submitted before it first.
        #expect(Set(manager.allDocs).count == 1_000)
    }

    @Test func readsRunSideBySide() async {
        let manager = DocumentManager()
        #expect(await readsOverlap { inside in manager.registry.read { _ in inside() } })
    }

    // MARK: - Saving, reading, removing

    @Test(arguments: [false, true])
    func saveInfoContentsAndRemove(onDisk: Bool) async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let manager = onDisk ? try DocumentManager(directory: folder.url) : DocumentManager()

        let xmlInfo = try await manager.save(xml, as: "plan.xml")
        #expect(
            xmlInfo == DocumentInfo(name: "plan.xml", format: .xml, byteCount: xml.count, title: "Plan A", wordCount: 5)
        )
        let jsonInfo = try await manager.save(json, as: "jay.json")
        #expect(jsonInfo.title == "Jay")
        #expect(jsonInfo.wordCount == 4)
        let textInfo = try await manager.save(text, as: "notes.md")
        #expect(
            textInfo == DocumentInfo(name: "notes.md", format: .text, byteCount: text.count, title: nil, wordCount: 3))

        #expect(manager.allDocs == ["plan.xml", "jay.json", "notes.md"])
        #expect(manager.info(for: "jay.json") == jsonInfo)
        #expect(try await manager.contents(of: "plan.xml") == xml)

        try await manager.remove("jay.json")
        #expect(manager.allDocs == ["plan.xml", "notes.md"])
        #expect(manager.info(for: "jay.json") == nil)
        await #expect(throws: DocumentError.notFound("jay.json")) { try await manager.contents(of: "jay.json") }
        await #expect(throws: DocumentError.notFound("jay.json")) { try await manager.remove("jay.json") }
    }

    @Test func reopeningAFolderRestoresTheDocuments() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let first = try DocumentManager(directory: folder.url)
        _ = try await first.save(xml, as: "plan.xml")
        _ = try await first.save(text, as: "notes.txt")
        _ = try await first.save(Data("replaced".utf8), as: "notes.txt")
        _ = try await first.save(json, as: "gone.json")
        try await first.remove("gone.json")

        let reopened = try DocumentManager(directory: folder.url)
        #expect(reopened.allDocs == first.allDocs)
        for name in first.allDocs { #expect(reopened.info(for: name) == first.info(for: name)) }
        #expect(try await reopened.contents(of: "notes.txt") == Data("replaced".utf8))
        // The database and SQLite's own files beside it, nothing else.
        #expect(folder.entries.allSatisfy { $0.hasPrefix("documents.sqlite") })
    }

    @Test func contentsAreNeverStaleAfterSaveOrRemove() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let manager = try DocumentManager(directory: folder.url)
        for version in 0..<20 {
            let data = Data("version \(version)".utf8)
            _ = try await manager.save(data, as: "log.txt")
            #expect(try await manager.contents(of: "log.txt") == data)
        }
        try await manager.remove("log.txt")
        await #expect(throws: DocumentError.notFound("log.txt")) { try await manager.contents(of: "log.txt") }
        _ = try await manager.save(Data("back".utf8), as: "log.txt")
        #expect(try await manager.contents(of: "log.txt") == Data("back".utf8))
    }

    @Test func savesPostTheChangeNotificationOnTheMainQueue() async throws {
        let manager = DocumentManager()
        let posted = Atomic<Int>(0)
        let observer = NotificationCenter.default.addObserver(
            forName: DocumentManager.documentsDidChangeNotification, object: manager, queue: nil
        ) { _ in
            dispatchPrecondition(condition: .onQueue(.main))
            posted.add(1, ordering: .relaxed)
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        _ = try await manager.save(text, as: "a.txt")
        // Queued on the main queue before save returned.
        await drain(.main)
        #expect(posted.load(ordering: .relaxed) == 1)
        try await manager.remove("a.txt")
        await drain(.main)
        #expect(posted.load(ordering: .relaxed) == 2)
    }

    @Test func aBurstOfChangesPostsOnceAfterTheLast() async throws {
        // The queue the posts go to is kept busy meanwhile, so that no post can go out between
        // two changes: all of them share one, and it sees the last. Not the main queue: held for
        // the whole burst, which on a busy machine takes many times what it takes alone, it would
        // hold every main-actor test that runs beside this one.
        let announcements = DispatchQueue(label: "announcements")
        let manager = DocumentManager(announcingOn: announcements)
        let posts = Recorder<[String]>()
        let observer = NotificationCenter.default.addObserver(
            forName: DocumentManager.documentsDidChangeNotification, object: manager, queue: nil
        ) { _ in posts.record(manager.allDocs) }
        defer { NotificationCenter.default.removeObserver(observer) }
        let queueIsBusy = Flag()
        let changesDone = Flag()
        let heldLongEnough = Flag()
        announcements.async {
            queueIsBusy.raise()
            // 51 saves are a workload: on a busy machine they take many times what they take alone.
            if changesDone.wait(timeout: workloadPatience) { heldLongEnough.raise() }
        }
        #expect(await eventually { queueIsBusy.isRaised })
        // On a thread of its own, which says when the changes are done itself: a resumption of
        // this test's task can wait for a busy shared pool, and the queue would be held no longer.
        let changes = onADedicatedThread {
            defer { changesDone.raise() }
            for index in 0..<50 { _ = try await manager.save(text, as: "\(index).txt") }
            try await manager.remove("0.txt")
        }
        let changed = await changes.outcome(limit: workloadPatience)
        #expect((try? changed?.get()) != nil)
        await drain(announcements)
        try #require(heldLongEnough.isRaised, "the queue stopped waiting before the changes were done")
        #expect(posts.values.count == 1)
        #expect(posts.values.last?.count == 49)
    }

    // MARK: - Names are not paths

    @Test(arguments: [
        "", "/", "../x.txt", "/etc/passwd", "a/b.txt", "x\u{0}.txt", ".", "..", ".hidden.txt", ".index.json",
        String(repeating: "a", count: 252) + ".txt", String(repeating: "é", count: 126) + ".txt",
    ])
    func invalidNamesAreRefusedBeforeAnyFileIsTouched(name: String) async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let manager = try DocumentManager(directory: folder.url)
        let before = folder.entries
        await #expect(throws: DocumentError.invalidName(name)) { _ = try await manager.save(text, as: name) }
        await #expect(throws: DocumentError.invalidName(name)) { _ = try await manager.contents(of: name) }
        await #expect(throws: DocumentError.invalidName(name)) { try await manager.remove(name) }
        #expect(folder.entries == before)
        #expect(manager.allDocs.isEmpty)
    }

    @Test func theLongestValidNameIsAccepted() async throws {
        let manager = DocumentManager()
        let name = String(repeating: "a", count: 251) + ".txt"  // 255 bytes
        _ = try await manager.save(text, as: name)
        #expect(manager.allDocs == [name])
    }

    // MARK: - Bad input

    @Test func badDocumentsGetTheirSpecificErrorAndChangeNothing() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let manager = try DocumentManager(directory: folder.url)
        _ = try await manager.save(xml, as: "keep.xml")
        let before = folder.entries

        func expectMalformed(_ name: String, _ data: Data, mentioning detail: String) async {
            do {
                _ = try await manager.save(data, as: name)
                Issue.record("\(name) was accepted")
            } catch {
                guard case .malformed(name, let reason) = error else {
                    Issue.record("\(name): expected malformed, got \(error)")
                    return
                }
                #expect(reason.contains(detail), "\(name): \(reason)")
            }
        }
        await expectMalformed("truncated.xml", Data("<doc>\n<p>cut".utf8), mentioning: "line 2")
        await expectMalformed("tags.xml", Data("<a><b></a>".utf8), mentioning: "line 1")
        await expectMalformed("garbage.json", Data(#"{"a": 1} trailing"#.utf8), mentioning: "JSON")
        await expectMalformed("broken.json", Data("{\n\"a\": }".utf8), mentioning: "JSON")
        await expectMalformed("bytes.txt", Data([0x66, 0xFF, 0xFE, 0x6F]), mentioning: "UTF-8")
        await expectMalformed("empty.txt", Data(), mentioning: "empty")
        await expectMalformed("empty.json", Data(), mentioning: "empty")
        await #expect(throws: DocumentError.unsupportedFormat("picture.png")) {
            _ = try await manager.save(text, as: "picture.png")
        }
        await #expect(throws: DocumentError.unsupportedFormat("README")) {
            _ = try await manager.save(text, as: "README")
        }

        #expect(folder.entries == before)
        #expect(manager.allDocs == ["keep.xml"])
        #expect(try await manager.contents(of: "keep.xml") == xml)
    }

    // MARK: - Opening a store

    @Test func aPathThatIsAFileIsNotAStore() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let file = folder.file("not-a-folder", "x")
        #expect(throws: DocumentError.self) { _ = try DocumentManager(directory: file) }
        #expect(try Data(contentsOf: file) == Data("x".utf8))
    }

    @Test(arguments: [
        Data("{ not a database at all }".utf8),
        Data(repeating: 0x41, count: 8_192),
        Data("SQLite format 3\u{0}".utf8) + Data(repeating: 0xFF, count: 4_000),
    ])
    func aFileThatIsNotAStoreIsRefusedAndLeftAlone(bytes: Data) throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let file = folder.file(DocumentStore.fileName, bytes: bytes)
        let before = folder.entries
        do {
            _ = try DocumentManager(directory: folder.url)
            Issue.record("opened a store that isn't one")
        } catch {
            guard case .io(let message) = error else { return #expect(Bool(false), "\(error)") }
            #expect(message.contains(file.path), "\(message)")
        }
        #expect(try Data(contentsOf: file) == bytes)
        #expect(folder.entries == before)
    }

    @Test func anotherApplicationsDatabaseIsRefusedAndLeftAlone() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        // A real SQLite database with a table of its own: made by a store, then given another owner.
        _ = try await DocumentManager(directory: folder.url).save(text, as: "a.txt")
        try await folder.waitUntilTheStoreIsClosed()
        let file = folder.url.appendingPathComponent(DocumentStore.fileName)
        try rewriteHeader(of: file) { header in header[68..<72] = [0, 0, 0, 7] }  // application_id
        let bytes = try Data(contentsOf: file)
        #expect(throws: DocumentError.self) { _ = try DocumentManager(directory: folder.url) }
        #expect(try Data(contentsOf: file) == bytes)
    }

    @Test func aDamagedDatabaseIsAnIOErrorAndChangesNothing() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        do {
            let manager = try DocumentManager(directory: folder.url)
            for number in 0..<50 { _ = try await manager.save(text, as: "doc-\(number).txt") }
        }
        try await folder.waitUntilTheStoreIsClosed()
        let file = folder.url.appendingPathComponent(DocumentStore.fileName)
        // Checkpointed into the main file when the last connection closed; now scribble over the
        // schema that follows the 100-byte header.
        try rewriteHeader(of: file) { header in
            for offset in 100..<header.count { header[offset] = UInt8(truncatingIfNeeded: offset &* 31) }
        }
        let bytes = try Data(contentsOf: file)
        do {
            let reopened = try DocumentManager(directory: folder.url)
            Issue.record("opened a damaged store with \(reopened.allDocs.count) documents")
        } catch {
            guard case .io(let message) = error else { return #expect(Bool(false), "\(error)") }
            #expect(message.contains(file.path), "\(message)")
        }
        #expect(try Data(contentsOf: file) == bytes)
    }

    @Test func commitsAndCheckpointsSyncAllTheWayToTheDrive() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let store = try #require(try DocumentManager(directory: folder.url).database)
        // FULL, and F_FULLFSYNC where it exists (Apple platforms; SQLite keeps the setting anyway).
        #expect(try store.writerDurability() == .required)
        #expect(try store.checkpointerDurability() == .required)
    }

    @Test func readersCreateNothingWhereThereIsNoStore() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let missing = folder.url.appendingPathComponent("missing")
        #expect(throws: DocumentError.self) { _ = try DocumentManager(directory: missing, ifMissing: .fail) }
        #expect(throws: DocumentError.self) { _ = try DocumentManager(directory: folder.url, ifMissing: .fail) }
        #expect(folder.entries.isEmpty)
    }

    @Test func nothingElseInTheFolderIsEverTouched() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        folder.file("document-notes.txt", "mine")
        folder.file("document-archive/old.txt", "mine too")
        folder.file(".index.json", "{}")
        folder.file("documents.sqlite.txt", "not the store")
        let theirs = folder.entries
        let manager = try DocumentManager(directory: folder.url)
        _ = try await manager.save(text, as: "a.txt")
        _ = try await manager.save(text, as: "document-notes.txt")
        try await manager.remove("a.txt")
        _ = try DocumentManager(directory: folder.url).allDocs
        #expect(Set(theirs).isSubset(of: folder.entries))
        #expect(folder.entries.filter { !theirs.contains($0) }.allSatisfy { $0.hasPrefix("documents.sqlite") })
        #expect(
            try String(contentsOf: folder.url.appendingPathComponent("document-notes.txt"), encoding: .utf8) == "mine")
        #expect(
            try String(contentsOf: folder.url.appendingPathComponent("document-archive/old.txt"), encoding: .utf8)
                == "mine too")
    }

    // MARK: - Two managers on one store

    @Test func twoManagersOnOneStoreSeeAndKeepEachOthersDocuments() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let first = try DocumentManager(directory: folder.url)
        let second = try DocumentManager(directory: folder.url)
        _ = try await first.save(text, as: "a.txt")
        _ = try await second.save(text, as: "b.txt")  // catches up with a.txt before writing
        #expect(second.allDocs == ["a.txt", "b.txt"])
        _ = try await first.save(Data("newer".utf8), as: "a.txt")
        try first.refresh()
        #expect(first.allDocs == ["a.txt", "b.txt"])
        try await second.remove("b.txt")
        try second.refresh()
        #expect(second.info(for: "a.txt")?.wordCount == 1)
        try first.refresh()
        #expect(first.allDocs == ["a.txt"])
        #expect(try await first.contents(of: "a.txt") == Data("newer".utf8))
        // Without refresh(): within refreshInterval of the change.
        _ = try await second.save(text, as: "c.txt")
        let deadline = ContinuousClock.now + .seconds(30)
        while first.allDocs != ["a.txt", "c.txt"], ContinuousClock.now < deadline { await Task.yield() }
        #expect(first.allDocs == ["a.txt", "c.txt"])
    }

    @Test func canonicallyEquivalentNamesAreOneDocument() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let manager = try DocumentManager(directory: folder.url)
        _ = try await manager.save(Data("one".utf8), as: "caf\u{E9}.txt")
        _ = try await manager.save(Data("two".utf8), as: "cafe\u{301}.txt")
        #expect(manager.allDocs.count == 1)
        #expect(try await manager.contents(of: "caf\u{E9}.txt") == Data("two".utf8))
        #expect(try DocumentManager(directory: folder.url).allDocs.count == 1)
    }
}

/// Changes the first page of a closed SQLite file in place.
private func rewriteHeader(of file: URL, _ change: (inout [UInt8]) -> Void) throws {
    let handle = try FileHandle(forUpdating: file)
    defer { try? handle.close() }
    var header = [UInt8](try handle.read(upToCount: 4_096) ?? Data())
    change(&header)
    try handle.seek(toOffset: 0)
    try handle.write(contentsOf: header)
}
