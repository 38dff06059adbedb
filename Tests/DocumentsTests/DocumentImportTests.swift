import Dispatch
import ExclusionTestSupport
import Foundation
import Synchronization
import Testing

@testable import Documents

@Suite("Document import", .patientTimeLimit(minutes: 10))
struct DocumentImportTests {
    @Test func importsEveryGoodFileAndFailsEachBadOneAlone() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let good = [
            folder.file("a.xml", "<doc><title>A</title>alpha beta</doc>"),
            folder.file("b.json", #"{"title": "B", "words": "gamma delta epsilon"}"#),
            folder.file("c.txt", "zeta eta"),
        ]
        let missing = folder.url.appendingPathComponent("missing.txt")
        let directory = folder.url.appendingPathComponent("folder.txt")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let bad: [(URL, DocumentError)] = [
            (folder.file("cut.xml", "<doc><p>"), .malformed("cut.xml", reason: "")),
            (folder.file("tail.json", "[1] 2"), .malformed("tail.json", reason: "")),
            (folder.file("bytes.txt", bytes: Data([0xC3, 0x28])), .malformed("bytes.txt", reason: "")),
            (folder.file("zero.xml", bytes: Data()), .malformed("zero.xml", reason: "")),
            (folder.file("image.png", "png"), .unsupportedFormat("image.png")),
            (folder.file(".hidden.txt", "hidden"), .invalidName(".hidden.txt")),
            (missing, .notFound(missing.path)),
            (directory, .io("")),
        ]

        let store = TemporaryFolder()
        defer { store.remove() }
        let manager = try DocumentManager(directory: store.url)
        let queue = DispatchQueue(label: "import delivery")
        let delegate = RecordingDelegate(queue: queue)
        let changes = Atomic<Int>(0)
        let observer = NotificationCenter.default.addObserver(
            forName: DocumentManager.documentsDidChangeNotification, object: manager, queue: nil
        ) { _ in
            changes.add(1, ordering: .relaxed)
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        _ = try await manager.save(Data("kept".utf8), as: "kept.txt")

        let progress = manager.importDocuments(at: good + bad.map(\.0), deliverOn: queue, delegate: delegate)
        let summary = await delegate.finished()
        await drain(queue)  // anything delivered twice would be there by now

        #expect(summary == ImportSummary(imported: 3, failed: 8, cancelled: 0))
        #expect(delegate.summaries.count == 1)
        #expect(progress.completedUnitCount == 11 && progress.totalUnitCount == 11)
        #expect(Set(delegate.imported.map(\.name)) == ["a.xml", "b.json", "c.txt"])
        #expect(delegate.imported.first { $0.name == "b.json" }?.title == "B")
        for (url, expected) in bad {
            let reported = delegate.failed.first { $0.0 == url }?.1
            switch (expected, reported) {
            case (.malformed(let name, _), .malformed(let reportedName, let reason)?):
                #expect(name == reportedName && !reason.isEmpty)
            case (.io, .io(let message)?):
                #expect(message.contains("folder"))
            default:
                #expect(reported == expected, "\(url.lastPathComponent)")
            }
        }
        await drain(.main)  // the save's notification was queued there before the save returned
        let count = changes.load(ordering: .relaxed)
        #expect(count == 2)  // one for the save on the main queue, one for the whole import
        #expect(Set(manager.allDocs) == ["kept.txt", "a.xml", "b.json", "c.txt"])
        #expect(try await manager.contents(of: "kept.txt") == Data("kept".utf8))
    }

    @Test func anImportsDocumentsReachTheDatabaseFileSoonAfterItEnds() async throws {
        // While an import runs, what it commits stays in SQLite's log (copying it would take a
        // core from the import); once it ends, the log is copied into the database file, in the
        // background. 400 files of 5 KB are past the threshold a store checkpoints at otherwise.
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let text = String(repeating: "word ", count: 1_000)
        let files = (0..<400).map { folder.file("file-\($0).txt", text) }
        let store = TemporaryFolder()
        defer { store.remove() }
        let manager = try DocumentManager(directory: store.url)
        let queue = DispatchQueue(label: "import delivery")
        let delegate = RecordingDelegate(queue: queue)
        manager.importDocuments(at: files, deliverOn: queue, delegate: delegate)
        #expect(await delegate.finished() == ImportSummary(imported: 400, failed: 0, cancelled: 0))

        let database = store.url.appendingPathComponent(DocumentStore.fileName).path
        func databaseBytes() -> Int {
            ((try? FileManager.default.attributesOfItem(atPath: database))?[.size] as? Int) ?? 0
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while databaseBytes() < files.count * text.utf8.count, ContinuousClock.now < deadline {
            await pause(.milliseconds(5))
        }
        #expect(databaseBytes() >= files.count * text.utf8.count)
        withExtendedLifetime(manager) {}  // closing the store would checkpoint too
    }

    @Test func importDeliversOnTheMainQueueByDefault() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let delegate = RecordingDelegate(queue: .main)
        DocumentManager().importDocuments(at: [folder.file("a.txt", "a b")], delegate: delegate)
        #expect(await delegate.finished() == ImportSummary(imported: 1, failed: 0, cancelled: 0))
    }

    @Test func anEmptyImportStillFinishesOnce() async {
        let delegate = RecordingDelegate(queue: .main)
        let progress = DocumentManager().importDocuments(at: [], delegate: delegate)
        #expect(await delegate.finished() == ImportSummary(imported: 0, failed: 0, cancelled: 0))
        #expect(progress.totalUnitCount == 0)
    }

    @Test func cancellingStopsWhatHasNotStartedAndCountsIt() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let urls = (0..<300).map { folder.file("doc-\($0).txt", String(repeating: "word ", count: 2_000)) }
        let manager = DocumentManager()
        let queue = DispatchQueue(label: "import delivery")
        let delegate = RecordingDelegate(queue: queue)
        let progress = manager.importDocuments(at: urls, deliverOn: queue, delegate: delegate)
        progress.cancel()
        let summary = await delegate.finished()
        await drain(queue)  // anything delivered twice would be there by now
        #expect(summary.cancelled > 0)
        #expect(summary.imported + summary.failed + summary.cancelled == 300)
        #expect(summary.failed == 0)
        #expect(delegate.summaries.count == 1)
        #expect(manager.allDocs.count == summary.imported)
    }

    @Test func importedDocumentsSurviveReopening() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let store = TemporaryFolder()
        defer { store.remove() }
        let urls = (0..<40).map { folder.file("n\($0).json", #"{"title": "t\#($0)", "v": "a b c"}"#) }
        let queue = DispatchQueue(label: "import delivery")
        let delegate = RecordingDelegate(queue: queue)
        let manager = try DocumentManager(directory: store.url)
        manager.importDocuments(at: urls, deliverOn: queue, delegate: delegate)
        #expect(await delegate.finished().imported == 40)
        let reopened = try DocumentManager(directory: store.url)
        #expect(Set(reopened.allDocs) == Set(urls.map(\.lastPathComponent)))
        #expect(reopened.info(for: "n7.json")?.title == "t7")
    }
}
