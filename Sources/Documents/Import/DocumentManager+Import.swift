import Dispatch
import Exclusion
import Foundation

// MARK: - Importing files in the background

extension DocumentManager {
    /// Reads, parses and stores files in the background, reporting to `delegate` on `queue`.
    ///
    /// Files are read and parsed in `BackgroundOperation`s, a few files each, on an operation
    /// queue that runs as many at once as there are cores. Parsed files are stored in batches: one
    /// transaction takes every file parsed while the previous one was being written, so a store on
    /// disk pays for a durable commit per batch, not per file.
    ///
    /// A file that fails (missing, a folder, unreadable, an unsupported extension, malformed, or a
    /// second file with the name of one earlier in `urls`) fails alone and changes nothing; the
    /// others import. If a batch can't be written, each of its files fails with that error. The
    /// delegate hears about each file, once it is stored or has failed, and then, exactly once,
    /// gets the summary; ``documentsDidChangeNotification`` is posted once on `queue`, just before
    /// the summary, if anything was imported. Nothing is delivered while the registry is held.
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
        if urls.isEmpty {
            queue.async {
                delegate?.documentManager(self, didFinishImport: ImportSummary(imported: 0, failed: 0, cancelled: 0))
            }
            return progress
        }
        let operations = OperationQueue()
        operations.name = "document import"
        let cores = ProcessInfo.processInfo.activeProcessorCount
        operations.maxConcurrentOperationCount = cores
        progress.cancellationHandler = { operations.cancelAllOperations() }

        let (files, duplicates) = Self.firstOfEachName(urls)
        let run = ImportRun(
            manager: self, total: urls.count, handedIn: files.count, queue: queue, delegate: delegate,
            progress: progress)
        run.report(failures: duplicates)

        // Enough operations to keep every core busy to the end, few enough that each carries
        // several files: an operation costs about as much as parsing a small file.
        let filesPerOperation = min(32, max(1, files.count / (cores * 16)))
        let batch = stride(from: 0, to: files.count, by: filesPerOperation).map { start in
            let chunk = Array(files[start..<min(start + filesPerOperation, files.count)])
            return BackgroundOperation<Void>(
                deliverOn: queue,
                work: { operation in
                    var parsed: [ImportRun.ParsedFile?] = []
                    var failures: [(URL, DocumentError)] = []
                    var cancelled = 0
                    for url in chunk {
                        guard !operation.isCancelled else {
                            cancelled += 1
                            parsed.append(nil)
                            continue
                        }
                        do throws(DocumentError) {
                            let (info, data) = try Self.readDocument(at: url)
                            parsed.append(ImportRun.ParsedFile(url: url, info: info, data: data))
                        } catch {
                            failures.append((url, error))
                            parsed.append(nil)
                        }
                    }
                    run.report(failures: failures, cancelled: cancelled)
                    run.handIn(parsed, from: start)
                },
                completion: { result in
                    // Cancelled before it started: none of its files was looked at.
                    if case .failure = result {
                        run.report(failures: [], cancelled: chunk.count)
                        run.handIn(Array(repeating: nil, count: chunk.count), from: start)
                    }
                })
        }
        operations.addOperations(batch, waitUntilFinished: false)
        return progress
    }

    /// Splits `urls` into the first file of each name and the later ones, which fail: one import
    /// never replaces one of its own files with another. Names are compared as Swift strings, so
    /// canonically equivalent spellings are the same name.
    private static func firstOfEachName(_ urls: [URL]) -> (files: [URL], duplicates: [(URL, DocumentError)]) {
        var first: [String: URL] = [:]
        var files: [URL] = []
        var duplicates: [(URL, DocumentError)] = []
        for url in urls {
            let name = url.lastPathComponent
            if let earlier = first[name] {
                duplicates.append((url, .duplicateName(url.path, firstPath: earlier.path)))
            } else {
                first[name] = url
                files.append(url)
            }
        }
        return (files, duplicates)
    }

    /// Reads and parses one file; runs on a background thread and touches no shared state.
    static func readDocument(at url: URL) throws(DocumentError) -> (DocumentInfo, Data) {
        let name = url.lastPathComponent
        try validateDocumentName(name)
        // Checked before reading, so nothing is read that can't be stored; a missing file or a
        // folder is still named as such, but only a failure pays for finding out.
        do {
            _ = try DocumentFormat(forName: name)
        } catch {
            throw missingOrFolder(url) ?? error
        }
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw missingOrFolder(url) ?? .io("cannot read \(url.path): \(error.localizedDescription)")
        }
        return (try DocumentParser.parse(data, name: name), data)
    }

    /// Why a path can't be read as a document, if the reason is that it's missing or a folder.
    private static func missingOrFolder(_ url: URL) -> DocumentError? {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            return .notFound(url.path)
        }
        return isDirectory.boolValue ? .io("\(url.path) is a folder, not a file") : nil
    }
}
