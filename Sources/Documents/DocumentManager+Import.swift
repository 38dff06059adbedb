import Dispatch
import Exclusion
import Foundation

// MARK: - Importing files in the background

extension DocumentManager {
    /// Reads, parses and stores each file in the background, reporting to `delegate` on `queue`.
    ///
    /// Each file is a `BackgroundOperation` on an operation queue that runs at most as many at
    /// once as there are cores. A file that fails (missing, a folder, unreadable, an unsupported
    /// extension, malformed) fails alone and changes nothing; the others import. The delegate hears
    /// about each file and then, exactly once, gets the summary; ``documentsDidChangeNotification``
    /// is posted once on `queue`, just before the summary, if anything was imported. Nothing is
    /// delivered while the index is held.
    ///
    /// ```swift
    /// let progress = documents.importDocuments(at: urls, delegate: self)
    /// cancelButton.action = { progress.cancel() }   // files not started yet count as cancelled
    /// ```
    ///
    /// - Parameters:
    ///   - urls: The files to import; a document's name is its file's name.
    ///   - queue: Where the delegate and the notification run; the main queue unless you pick another.
    ///   - delegate: Hears how the import goes. It is kept until the import is over.
    /// - Returns: Progress counting files. Cancelling it stops what has not started.
    @discardableResult
    public func importDocuments(
        at urls: [URL], deliverOn queue: DispatchQueue = .main, delegate: (any DocumentImportDelegate)?
    ) -> Progress {
        let progress = Progress(totalUnitCount: Int64(urls.count))
        let operations = OperationQueue()
        operations.name = "document import"
        operations.maxConcurrentOperationCount = ProcessInfo.processInfo.activeProcessorCount
        progress.cancellationHandler = { operations.cancelAllOperations() }
        if urls.isEmpty {
            queue.async {
                delegate?.documentManager(self, didFinishImport: ImportSummary(imported: 0, failed: 0, cancelled: 0))
            }
            return progress
        }
        let tally = Exclusive(ImportTally(remaining: urls.count), label: "import tally")
        let batch = urls.map { url in
            BackgroundOperation<DocumentInfo>(
                deliverOn: queue,
                work: { operation in
                    guard !operation.isCancelled else { throw CancellationError() }
                    return try self.importFile(at: url)
                },
                completion: { result in
                    let outcome = ImportTally.Outcome(result)
                    switch result {
                    case .success(let info):
                        delegate?.documentManager(self, didImport: info)
                    case .failure(let error as DocumentError):
                        delegate?.documentManager(self, didFailToImport: url, error: error)
                    case .failure:
                        break  // cancelled
                    }
                    let summary = tally.access { tally in
                        progress.completedUnitCount += 1  // one file at a time, even on a concurrent queue
                        return tally.record(outcome)
                    }
                    if let summary {
                        // One announcement for the whole import: observers refresh once, not per file.
                        if summary.imported > 0 { self.postDidChange() }
                        delegate?.documentManager(self, didFinishImport: summary)
                    }
                })
        }
        operations.addOperations(batch, waitUntilFinished: false)
        return progress
    }

    /// Reads, parses and stores one file; runs on a background thread.
    func importFile(at url: URL) throws(DocumentError) -> DocumentInfo {
        let name = url.lastPathComponent
        try validateDocumentName(name)
        // Checked before reading, so nothing is read that can't be stored; a missing file or a
        // folder is still named as such, but only a failure pays for finding out.
        do {
            _ = try DocumentFormat(forName: name)
        } catch {
            throw Self.missingOrFolder(url) ?? error
        }
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw Self.missingOrFolder(url) ?? .io("cannot read \(url.path): \(error.localizedDescription)")
        }
        let info = try DocumentParser.parse(data, name: name)
        try store(data, info: info)
        return info
    }
}

extension DocumentManager {
    /// Why a path can't be read as a document, if the reason is that it's missing or a folder.
    fileprivate static func missingOrFolder(_ url: URL) -> DocumentError? {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            return .notFound(url.path)
        }
        return isDirectory.boolValue ? .io("\(url.path) is a folder, not a file") : nil
    }
}

/// Counts what an import's files came to, so the summary is delivered exactly once, by whichever
/// completion comes last.
struct ImportTally: Sendable {
    enum Outcome: Sendable {
        case imported, failed, cancelled

        init(_ result: Result<DocumentInfo, any Error>) {
            switch result {
            case .success: self = .imported
            case .failure(is DocumentError): self = .failed
            case .failure: self = .cancelled
            }
        }
    }

    var remaining: Int
    var imported = 0
    var failed = 0
    var cancelled = 0

    /// Counts one file; returns the summary when it was the last.
    mutating func record(_ outcome: Outcome) -> ImportSummary? {
        switch outcome {
        case .imported: imported += 1
        case .failed: failed += 1
        case .cancelled: cancelled += 1
        }
        remaining -= 1
        return remaining == 0 ? ImportSummary(imported: imported, failed: failed, cancelled: cancelled) : nil
    }
}
