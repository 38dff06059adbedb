import ExclusionTestSupport
import Foundation
import Testing

@testable import Documents

// The Documents example of the "Observing changes" article (Exclusion.docc), compiled and run.

// MARK: - From the article

@MainActor final class DocumentList {
    var rows: [String] = []

    func keepCurrent(_ documents: DocumentManager) async {
        for await names in documents.allDocsValues {
            rows = names  // set on the main actor: the only place others look
        }
    }
}

// MARK: - Running it

@Suite("Observing documents (the article's example)", .patientTimeLimit(minutes: 10))
struct ObservingDocumentsArticleTests {
    @MainActor @Test func theListFollowsABackgroundImport() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let urls = (0..<20).map { folder.file("in/doc\($0).xml", "<doc><title>\($0)</title></doc>") }
        let documents = try DocumentManager(directory: folder.url.appendingPathComponent("store"))
        let list = DocumentList()
        let loop = Task { await list.keepCurrent(documents) }  // on the main actor, like the list

        // Parsing happens in background operations; nothing here waits for it.
        let progress = documents.importDocuments(at: urls, delegate: nil)

        // Limited by the main actor's own looks, not the clock: a busy machine can keep the main
        // actor from looking at all for minutes (under ThreadSanitizer beside other work).
        _ = await eventuallyOnTheMainActor(for: "the list to show every document", limit: workloadPatience) {
            list.rows.count >= 20
        }
        #expect(Set(list.rows) == Set((0..<20).map { "doc\($0).xml" }))
        #expect(progress.totalUnitCount == 20)
        loop.cancel()
        _ = await loop.outcome()
    }
}
