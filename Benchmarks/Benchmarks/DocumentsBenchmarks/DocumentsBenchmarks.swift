import Benchmark
import Dispatch
import Documents
import Exclusion
import Foundation
import Synchronization

// Importing small XML and JSON files into a store on disk, end to end (until the last file is
// committed and reported), against one thread that reads, parses and inserts the same files in
// one transaction into a store with the same settings; and `allDocs` over 10,000 names while a
// writer keeps adding, against copying a plain array under a lock.

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock], timeUnits: .milliseconds, maxDuration: .seconds(10), maxIterations: 10)

    for count in [1_000, 2_000, 4_000, 10_000] {
        let configuration = Benchmark.Configuration(
            metrics: [.wallClock], timeUnits: .milliseconds, maxDuration: .seconds(count > 2_000 ? 20 : 10),
            maxIterations: count > 2_000 ? 5 : 10)
        Benchmark("Import \(count) files into a store", configuration: configuration) { benchmark in
            let files = Array(generatedFiles.prefix(count))
            let folder = TemporaryStoreFolder()
            defer { folder.remove() }
            do {
                let manager = try! DocumentManager(directory: folder.url)
                let waiter = ImportWaiter()
                let queue = DispatchQueue(label: "import delivery")
                benchmark.startMeasurement()
                manager.importDocuments(at: files, deliverOn: queue, delegate: waiter)
                waiter.done.wait()
                benchmark.stopMeasurement()
                precondition(waiter.imported.load(ordering: .relaxed) == count, "the import lost files")
            }
            // Untimed, as the peer's database closing is: the store copies its log into the
            // database file once the import is over, and that must not run into the next iteration.
            folder.waitUntilTheStoreIsClosed()
        }
        Benchmark("peer: one thread imports \(count) files into a store", configuration: configuration) {
            benchmark in
            let files = Array(generatedFiles.prefix(count))
            let folder = TemporaryStoreFolder()
            defer { folder.remove() }
            let store = try! OneThreadStore(in: folder.url)
            benchmark.startMeasurement()
            try! store.importFiles(files)
            benchmark.stopMeasurement()
        }
    }
    Benchmark("peer's storing alone: insert 2000 parsed files in one transaction") { benchmark in
        // The part of an import that can't run in parallel: the same inserts as the peer, with
        // the files read and parsed beforehand, outside the measurement.
        let files = Array(generatedFiles.prefix(2_000))
        let parsed = try! files.map { url in
            let data = try Data(contentsOf: url)
            return try OneThreadStore.Parsed(info: DocumentInfo(parsing: data, name: url.lastPathComponent), data: data)
        }
        let folder = TemporaryStoreFolder()
        defer { folder.remove() }
        let store = try! OneThreadStore(in: folder.url)
        benchmark.startMeasurement()
        try! store.insert(parsed)
        benchmark.stopMeasurement()
    }
    Benchmark("bound: parse 2000 files on 2 threads, nothing stored") { benchmark in
        // How much reading and parsing alone gains from the second core, with no store.
        let files = Array(generatedFiles.prefix(2_000))
        benchmark.startMeasurement()
        DispatchQueue.concurrentPerform(iterations: files.count) { index in blackHole(parseOne(files[index])) }
    }
    Benchmark("peer: parse 2000 files on one thread, nothing stored") { benchmark in
        let files = Array(generatedFiles.prefix(2_000))
        benchmark.startMeasurement()
        for file in files { blackHole(parseOne(file)) }
    }
    Benchmark("in memory: import 2000 files into DocumentManager()") { benchmark in
        let files = Array(generatedFiles.prefix(2_000))
        let waiter = ImportWaiter()
        let queue = DispatchQueue(label: "import delivery")
        benchmark.startMeasurement()
        DocumentManager().importDocuments(at: files, deliverOn: queue, delegate: waiter)
        waiter.done.wait()
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

    readLatencyBenchmarks()
}

/// What the import does for each file, minus storing it: read, and parse with the same parser.
func parseOne(_ url: URL) -> DocumentInfo {
    try! DocumentInfo(parsing: Data(contentsOf: url), name: url.lastPathComponent)
}

final class ImportWaiter: DocumentImportDelegate, Sendable {
    let done = DispatchSemaphore(value: 0)
    let imported = Atomic<Int>(0)
    func documentManager(_ manager: DocumentManager, didImport info: DocumentInfo) {
        imported.add(1, ordering: .relaxed)
    }
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
