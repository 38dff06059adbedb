import Dispatch
import Documents
import ExclusionTestSupport
import Foundation
import Synchronization
import Testing

/// A fresh folder under the temporary directory, removed with `remove()`.
struct TemporaryFolder {
    let url: URL

    init(_ label: String = "documents") {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// Writes `text` (or raw bytes) to a file in the folder; returns its URL.
    @discardableResult
    func file(_ name: String, _ text: String) -> URL { file(name, bytes: Data(text.utf8)) }

    @discardableResult
    func file(_ name: String, bytes: Data) -> URL {
        let fileURL = url.appendingPathComponent(name)
        try! FileManager.default.createDirectory(
            at: fileURL.deletingLastPathComponent(), withIntermediateDirectories: true)
        try! bytes.write(to: fileURL)
        return fileURL
    }

    var entries: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).sorted() }

    func remove() { try? FileManager.default.removeItem(at: url) }

    /// Waits until the last manager on the store in this folder is gone: SQLite then folds the
    /// write-ahead log into the database file and deletes it. Notifications still on their way to
    /// the main queue keep a manager alive until they are delivered.
    func waitUntilTheStoreIsClosed(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let log = url.appendingPathComponent("documents.sqlite-wal").path
        let limit = patience * 3
        let deadline = ContinuousClock.now + limit
        while FileManager.default.fileExists(atPath: log) {
            guard ContinuousClock.now < deadline else {
                throw GaveUp(what: "the store to be closed", sourceLocation: sourceLocation, limit: limit)
            }
            await pause(.milliseconds(5))
        }
    }
}

/// Records what an import reports, checking it arrives on the expected queue.
final class RecordingDelegate: DocumentImportDelegate, @unchecked Sendable {
    // @unchecked: every field is only touched while `lock` is held.
    private let lock = NSLock()
    private let queue: DispatchQueue
    private var _imported: [DocumentInfo] = []
    private var _failed: [(URL, DocumentError)] = []
    private var _summaries: [ImportSummary] = []
    private var waiter: CheckedContinuation<ImportSummary, Never>?

    init(queue: DispatchQueue) {
        self.queue = queue
    }

    var imported: [DocumentInfo] { lock.withLock { _imported } }
    var failed: [(URL, DocumentError)] { lock.withLock { _failed } }
    var summaries: [ImportSummary] { lock.withLock { _summaries } }

    func documentManager(_ manager: DocumentManager, didImport info: DocumentInfo) {
        dispatchPrecondition(condition: .onQueue(queue))
        lock.withLock { _imported.append(info) }
    }

    func documentManager(_ manager: DocumentManager, didFailToImport url: URL, error: DocumentError) {
        dispatchPrecondition(condition: .onQueue(queue))
        lock.withLock { _failed.append((url, error)) }
    }

    func documentManager(_ manager: DocumentManager, didFinishImport summary: ImportSummary) {
        dispatchPrecondition(condition: .onQueue(queue))
        let waiter = lock.withLock {
            _summaries.append(summary)
            defer { self.waiter = nil }
            return self.waiter
        }
        waiter?.resume(returning: summary)
    }

    /// Waits for the summary.
    func finished() async -> ImportSummary {
        await withCheckedContinuation { continuation in
            let summary: ImportSummary? = lock.withLock {
                if let first = _summaries.first { return first }
                waiter = continuation
                return nil
            }
            if let summary { continuation.resume(returning: summary) }
        }
    }
}
