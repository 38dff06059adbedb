import Foundation

/// 10,000 small XML and JSON files (about 4 KB each), written once, outside any measurement; the
/// import benchmarks take the first 1,000, 2,000, 4,000 or all of them. Reading them once more
/// here leaves them in the page cache: every side of a comparison reads warm files.
let generatedFiles: [URL] = {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("exclusion-benchmark-documents")
    try? FileManager.default.removeItem(at: folder)
    try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let files = (0..<10_000).map { index in
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
    for file in files { _ = try? Data(contentsOf: file) }
    return files
}()

/// A new folder for one store, on the same disk as the files.
struct TemporaryStoreFolder {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("exclusion-benchmark-store-\(UUID())")

    init() {
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(at: url) }

    /// Waits until the last connection to the store in this folder has closed: SQLite then copies
    /// the write-ahead log into the database file and deletes it. (The tests have the same wait,
    /// asynchronous, in their support files, which this package can't import.)
    func waitUntilTheStoreIsClosed() {
        let log = url.appendingPathComponent("documents.sqlite-wal").path
        let deadline = ContinuousClock.now + .seconds(60)
        while FileManager.default.fileExists(atPath: log) {
            guard ContinuousClock.now < deadline else { fatalError("the store in \(url.path) never closed") }
            usleep(1_000)
        }
    }
}
