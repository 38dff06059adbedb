import Dispatch
import Exclusion
import Foundation

/// One import's shared parts: the files parsed and waiting to be stored, and the tally that
/// delivers the summary exactly once.
///
/// Storing is a group commit. Operations hand in what they parsed; when nobody is writing and
/// enough is ready, a writer starts on a thread of its own: it stores everything that is ready in
/// one transaction, then whatever got ready meanwhile in the next, until not enough is. The
/// operations go on parsing meanwhile, and the number of durable commits adapts to how slow they
/// are. Files are stored in the order they were given,
/// whichever operation parsed them first, so an import always lists its documents in that order.
final class ImportRun: Sendable {
    struct ParsedFile: Sendable {
        let url: URL
        let info: DocumentInfo
        let data: Data
    }

    /// Files handed in, by their place in the import; nil for one that failed or was cancelled.
    private struct Waiting {
        var handedIn: [Int: ParsedFile?] = [:]
        var next = 0
        var writing = false
        let count: Int

        /// The next files in order, at most `ImportRun.batchLimit`; or nil, and nobody writing,
        /// until enough are ready in order to be worth a commit, or the last file is.
        mutating func nextBatch() -> [ParsedFile]? {
            var end = next
            var bytes = 0
            while end < count, end - next < ImportRun.batchLimit, let file = handedIn[end] {
                bytes += file?.data.count ?? 0
                end += 1
            }
            // The first batch is small, so storing starts while the rest is parsed.
            let minimum = next == 0 ? ImportRun.firstBatchMinimum : ImportRun.batchMinimum
            guard end == count || end - next >= minimum || bytes >= ImportRun.batchBytes else {
                writing = false
                return nil
            }
            let batch = (next..<end).compactMap { handedIn.removeValue(forKey: $0)! }
            next = end
            guard !batch.isEmpty else {
                // Only failed or cancelled files: nothing to store, but the line moves on.
                if next == count {
                    writing = false
                    return nil
                }
                return nextBatch()
            }
            return batch
        }
    }

    /// Most files in one transaction: bounds how long one commit holds the registry.
    static let batchLimit = 1_000
    /// Fewest files (or bytes) worth a commit, but for the last: each commit pays for a sync of the
    /// log, which costs as much as storing a few dozen small files, so committing whatever is ready
    /// as soon as it is ready would make the sync the bottleneck.
    static let batchMinimum = 256
    static let firstBatchMinimum = 32
    static let batchBytes = 4 << 20

    private let manager: DocumentManager
    /// How many files are handed in, in all: the import's files less those refused up front.
    private let handedInCount: Int
    private let queue: DispatchQueue
    private let delegate: (any DocumentImportDelegate)?
    private let progress: Progress
    private let waiting: Exclusive<Waiting>
    /// Where the writer runs; one at a time, as `Waiting.writing` makes sure.
    private let writer = DispatchQueue(label: "document import writer")
    /// Only touched on the delivery queue.
    private let tally: Exclusive<ImportTally>

    init(
        manager: DocumentManager, total: Int, handedIn handedInCount: Int, queue: DispatchQueue,
        delegate: (any DocumentImportDelegate)?, progress: Progress
    ) {
        self.manager = manager
        self.handedInCount = handedInCount
        self.queue = queue
        self.delegate = delegate
        self.progress = progress
        tally = Exclusive(ImportTally(remaining: total), label: "import tally")
        waiting = Exclusive(Waiting(count: handedInCount), label: "import waiting to be stored")
        manager.database?.importStarts()
    }

    /// Hands in the files from place `first` on (nil for those that failed or were cancelled, or
    /// were never looked at) and has what is ready stored, unless a writer is at it.
    ///
    /// The writer runs on a thread of its own, not the operation's: while it waits for a sync, both
    /// cores go on parsing. Its queue is serial, so it gets a thread at once even while the
    /// operations keep every thread of the global pool busy; on a global queue it would wait for
    /// one of them to finish first.
    func handIn(_ files: [ParsedFile?], from first: Int) {
        if let batch = deposit(files, from: first) {
            writer.async { self.write(batch) }
        }
    }

    /// Records files; returns the first batch to write if a writer must start.
    private func deposit(_ files: [ParsedFile?], from first: Int) -> [ParsedFile]? {
        waiting.access { waiting -> [ParsedFile]? in
            for (offset, file) in files.enumerated() { waiting.handedIn[first + offset] = file }
            guard !waiting.writing else { return nil }
            waiting.writing = true
            return waiting.nextBatch()
        }
    }

    private func write(_ first: [ParsedFile]) {
        var batch: [ParsedFile]? = first
        while let files = batch {
            let result: Result<Void, DocumentError>
            do {
                try manager.storeDocuments(files.map { ($0.info, $0.data) })
                result = .success(())
            } catch {
                result = .failure(error)
            }
            let next = waiting.access { $0.nextBatch() }
            deliver(stored: files, result)
            batch = next
        }
    }

    private func deliver(stored files: [ParsedFile], _ result: Result<Void, DocumentError>) {
        let infos = files.map(\.info)
        let urls = files.map(\.url)
        queue.async { [self] in
            switch result {
            case .success:
                for info in infos { delegate?.documentManager(manager, didImport: info) }
                count(.imported, infos.count)
            case .failure(let error):
                for url in urls { delegate?.documentManager(manager, didFailToImport: url, error: error) }
                count(.failed, urls.count)
            }
        }
    }

    func report(failures: [(URL, DocumentError)], cancelled: Int = 0) {
        guard !failures.isEmpty || cancelled > 0 else { return }
        queue.async { [self] in
            for (url, error) in failures { delegate?.documentManager(manager, didFailToImport: url, error: error) }
            count(.failed, failures.count)
            count(.cancelled, cancelled)
        }
    }

    /// On the delivery queue: counts files, and delivers the summary after the last.
    private func count(_ outcome: ImportTally.Outcome, _ files: Int) {
        guard files > 0 else { return }
        let summary = tally.access { tally in
            progress.completedUnitCount += Int64(files)
            return tally.record(outcome, files: files)
        }
        guard let summary else { return }
        // Every file is stored durably or failed. What is still in the log is copied into the
        // database file after this, on the checkpointer's thread: nobody waits for it.
        manager.database?.importEnded()
        // One announcement for the whole import: observers refresh once, not per file.
        if summary.imported > 0 { manager.postDidChange() }
        delegate?.documentManager(manager, didFinishImport: summary)
    }
}
