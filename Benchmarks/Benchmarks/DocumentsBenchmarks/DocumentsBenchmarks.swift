import Benchmark
import Dispatch
import Documents
import Exclusion
import Foundation
import Synchronization

// Importing 2,000 small XML and JSON files with the background operations, against one thread
// parsing the same files in a loop; and `allDocs` over 10,000 names while a writer keeps adding,
// against copying a plain array under a lock.

let fileCount = 2_000

/// The generated files, written once, outside any measurement.
let generatedFiles: [URL] = {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("exclusion-benchmark-documents")
    try? FileManager.default.removeItem(at: folder)
    try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return (0..<fileCount).map { index in
        let words = (0..<300).map { "word\(($0 * 31 + index) % 1_000)" }.joined(separator: " ")
        let isXML = index % 2 == 0
        let url = folder.appendingPathComponent("file-\(index).\(isXML ? "xml" : "json")")
        let body =
            isXML
            ? "<doc><title>Title \(index)</title><body><p>\(words)</p><p>\(words)</p></body></doc>"
            : #"{"title": "Title \#(index)", "paragraphs": ["\#(words)", "\#(words)"]}"#
        try! Data(body.utf8).write(to: url)
        return url
    }
}()

/// What the import does for each file, minus storing it: read, and parse with the same parser.
func parseOne(_ url: URL) -> DocumentInfo {
    try! DocumentInfo(parsing: Data(contentsOf: url), name: url.lastPathComponent)
}

final class ImportWaiter: DocumentImportDelegate, @unchecked Sendable {
    // @unchecked: only the semaphore is touched, and it is thread-safe.
    let done = DispatchSemaphore(value: 0)
    func documentManager(_ manager: DocumentManager, didImport info: DocumentInfo) {}
    func documentManager(_ manager: DocumentManager, didFailToImport url: URL, error: DocumentError) {}
    func documentManager(_ manager: DocumentManager, didFinishImport summary: ImportSummary) { done.signal() }
}

final class LockedNames: @unchecked Sendable {
    // @unchecked: names is only touched while lock is held.
    private let lock = NSLock()
    private var names: [String]
    init(_ names: [String]) { self.names = names }
    func copy() -> [String] { lock.withLock { names } }
    func add(_ name: String) { lock.withLock { names.append(name) } }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock], timeUnits: .milliseconds, maxDuration: .seconds(10), maxIterations: 10)

    Benchmark("Import 2000 files") { benchmark in
        let files = generatedFiles
        let waiter = ImportWaiter()
        let queue = DispatchQueue(label: "import delivery")
        benchmark.startMeasurement()
        DocumentManager().importDocuments(at: files, deliverOn: queue, delegate: waiter)
        waiter.done.wait()
    }
    Benchmark("2000 empty BackgroundOperations, 2 at a time") { benchmark in
        // What the import pays per file before any reading or parsing: its fixed overhead.
        let operations = OperationQueue()
        operations.maxConcurrentOperationCount = 2
        let delivery = DispatchQueue(label: "delivery")
        let batch = (0..<fileCount).map { index in
            BackgroundOperation(deliverOn: delivery, work: { _ in index }, completion: { _ in })
        }
        benchmark.startMeasurement()
        operations.addOperations(batch, waitUntilFinished: true)
    }
    Benchmark("peer: 2000 empty BlockOperations, 2 at a time") { benchmark in
        // What the operation queue itself costs per operation, without ours.
        let operations = OperationQueue()
        operations.maxConcurrentOperationCount = 2
        let batch = (0..<fileCount).map { _ in BlockOperation {} }
        benchmark.startMeasurement()
        operations.addOperations(batch, waitUntilFinished: true)
    }
    Benchmark("bound: parse 2000 files on 2 threads, no operations") { benchmark in
        // The most any two-core import could gain: the same parsing spread over both cores with
        // concurrentPerform, with no operations, no index and no delivery.
        let files = generatedFiles
        benchmark.startMeasurement()
        DispatchQueue.concurrentPerform(iterations: files.count) { index in blackHole(parseOne(files[index])) }
    }
    Benchmark("bound: parse 2000 files in 2000 BlockOperations, 2 at a time") { benchmark in
        // The most an import with one operation per file can gain: the same parsing, each file in
        // a plain operation of its own, nothing of ours.
        let files = generatedFiles
        let operations = OperationQueue()
        operations.maxConcurrentOperationCount = 2
        let batch = files.map { file in BlockOperation { blackHole(parseOne(file)) } }
        benchmark.startMeasurement()
        operations.addOperations(batch, waitUntilFinished: true)
    }
    Benchmark("peer: parse 2000 files on one thread") { benchmark in
        let files = generatedFiles
        benchmark.startMeasurement()
        for file in files { blackHole(parseOne(file)) }
    }

    let names = (0..<10_000).map { "document-\($0).txt" }
    let perCopy = Benchmark.Configuration(
        metrics: [.wallClock], timeUnits: .nanoseconds, scalingFactor: .kilo, maxIterations: 200)
    Benchmark("allDocs of 10000 names, writer adding", configuration: perCopy) { benchmark in
        let manager = DocumentManager()
        for name in names { manager.addDocumentName(name) }
        _ = manager.allDocs
        whileAWriterAdds(manager.addDocumentName) {
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { blackHole(manager.allDocs) }
            benchmark.stopMeasurement()
        }
    }
    Benchmark("peer: copy 10000 names under NSLock, writer adding", configuration: perCopy) { benchmark in
        let locked = LockedNames(names)
        whileAWriterAdds(locked.add) {
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { blackHole(locked.copy()) }
            benchmark.stopMeasurement()
        }
    }
}

/// Runs `body` while another thread adds a new name every 50 µs or so.
func whileAWriterAdds(_ add: @escaping @Sendable (String) -> Void, _ body: () -> Void) {
    let stop = Atomic<Bool>(false)
    let writer = Thread {
        var step = 0
        while !stop.load(ordering: .relaxed) {
            step += 1
            add("extra-\(step).txt")
            usleep(50)
        }
    }
    writer.start()
    body()
    stop.store(true, ordering: .relaxed)
}
