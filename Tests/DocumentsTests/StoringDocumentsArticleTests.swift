import Documents
import ExclusionTestSupport
import Foundation
import Testing

/// The code of the article "Storing documents" (Documents.docc), so that it keeps compiling and
/// keeps printing what the article says it prints.
@Suite("Storing documents article", .patientTimeLimit(minutes: 10))
struct StoringDocumentsArticleTests {
    @Test func openAStore() async throws {
        let temporary = TemporaryFolder()
        defer { temporary.remove() }
        let folder = temporary.url.appendingPathComponent("MyDocuments")

        let documents = try DocumentManager(directory: folder)
        let info = try await documents.save(Data("<doc><title>Plan</title></doc>".utf8), as: "plan.xml")
        #expect((info.title ?? "untitled") == "Plan")
        #expect(documents.allDocs == ["plan.xml"])

        let existing = try DocumentManager(directory: folder, ifMissing: .fail)
        #expect(existing.allDocs == ["plan.xml"])
    }
}
