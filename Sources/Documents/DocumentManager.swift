import Dispatch
import Exclusion
import Foundation

/// A registry of documents, read from many threads and written rarely, optionally stored in a
/// folder on disk.
///
/// The registry (names in the order added, and what is known about each document) is held in a
/// `ReadersWriter`: ``allDocs`` and ``info(for:)`` run side by side, changes run alone like dispatch
/// barriers. Expensive work, reading and parsing files, happens in background operations that
/// report back on a delivery queue (main-thread gravity).
///
/// ```swift
/// let documents = try DocumentManager(directory: folder)
/// let info = try await documents.save(Data("<doc><title>Plan</title></doc>".utf8), as: "plan.xml")
/// print(info.title)                       // "Plan"
/// documents.importDocuments(at: urls, delegate: self)   // reports back on the main queue
/// ```
///
/// Names are not paths: every name is checked before any file is touched, so no name reaches
/// outside the store's folder (see ``DocumentError/invalidName(_:)``).
public final class DocumentManager: Sendable {
    /// The textbook singleton: a registry in memory, shared by the whole process.
    public static let shared = DocumentManager()

    /// Posted on the delivery queue (the main queue for ``save(_:as:)`` and ``remove(_:)``) after
    /// the documents changed; `object` is the manager.
    public static let documentsDidChangeNotification = Notification.Name("ExclusionDocumentsDidChange")

    let index: ReadersWriter<DocumentIndex>
    /// Where documents are stored, or nil for a registry in memory.
    let directory: URL?
    /// Recently read contents. Only filled under the index's read lock and emptied under its write
    /// lock, so it never holds anything older than the index.
    private let cache = ContentCache()

    /// Creates an empty registry in memory, like ``shared``.
    public init() {
        index = ReadersWriter(DocumentIndex(), label: "document index")
        directory = nil
    }

    /// Opens the store in `directory`, creating the folder if needed; reopening restores what was
    /// saved there.
    ///
    /// - Throws: ``DocumentError/io(_:)`` if the folder can't be created or its index can't be read.
    public init(directory: URL) throws(DocumentError) {
        self.directory = directory
        index = ReadersWriter(try DiskStore.open(directory), label: "document index")
    }

    // MARK: - Names

    /// Adds `name` to ``allDocs``, later; returns at once. An empty name is ignored.
    ///
    /// Like a dispatch barrier: the name is added alone, and this thread's next ``allDocs`` includes it.
    public func addDocumentName(_ name: String) {
        guard !name.isEmpty else { return }
        index.writeAsync { index in index.addName(name) }
    }

    /// Every document name, in the order added: a copy, so it can't change under you.
    public var allDocs: [String] {
        index.read { $0.names }
    }

    /// What is known about the document called `name`, or nil.
    public func info(for name: String) -> DocumentInfo? {
        index.read { $0.infos[name] }
    }

    // MARK: - Documents

    /// Stores `data` as the document `name`, replacing any document of that name.
    ///
    /// The data is parsed first; a malformed document changes nothing. With a folder, the
    /// document and then the index are each written to a temporary file and renamed into place,
    /// so a process killed at any moment leaves whole documents and an index that opens.
    ///
    /// - Returns: What the manager now knows about the document.
    /// - Throws: ``DocumentError/invalidName(_:)``, ``DocumentError/unsupportedFormat(_:)``,
    ///   ``DocumentError/malformed(_:reason:)`` or ``DocumentError/io(_:)``.
    public func save(_ data: Data, as name: String) async throws(DocumentError) -> DocumentInfo {
        try validateDocumentName(name)
        let info = try DocumentParser.parse(data, name: name)
        try store(data, info: info)
        DispatchQueue.main.async { self.postDidChange() }
        return info
    }

    /// The bytes of the document `name`.
    ///
    /// - Throws: ``DocumentError/invalidName(_:)``, ``DocumentError/notFound(_:)`` (also for a
    ///   name added without contents), or ``DocumentError/io(_:)``.
    public func contents(of name: String) async throws(DocumentError) -> Data {
        try validateDocumentName(name)
        return try await index.read { (index) throws(DocumentError) -> Data in
            guard index.infos[name] != nil else { throw .notFound(name) }
            if let cached = cache[name] { return cached }
            let data: Data
            if let directory, let file = index.files[name] {
                data = try DiskStore.read(file, in: directory)
            } else if let stored = index.contents[name] {
                data = stored
            } else {
                throw .notFound(name)
            }
            cache[name] = data
            return data
        }
    }

    /// Removes the document `name`.
    ///
    /// - Throws: ``DocumentError/invalidName(_:)``, ``DocumentError/notFound(_:)`` or
    ///   ``DocumentError/io(_:)``.
    public func remove(_ name: String) async throws(DocumentError) {
        try validateDocumentName(name)
        let file = try await index.write { (index) throws(DocumentError) -> String? in
            guard index.contains(name) else { throw .notFound(name) }
            var updated = index
            let file = updated.remove(name)
            if let directory { try DiskStore.writeIndex(updated, in: directory) }
            index = updated
            cache[name] = nil
            return file
        }
        // The index no longer points to the file, so a crash from here on leaves only an orphan.
        if let directory, let file { DiskStore.delete(file, in: directory) }
        DispatchQueue.main.async { self.postDidChange() }
    }

    /// Stores a parsed document: its bytes first, to a new file and outside the lock; then, alone,
    /// the index that points to it; then the file of the version it replaced goes.
    func store(_ data: Data, info: DocumentInfo) throws(DocumentError) {
        let file = try directory.map { (directory) throws(DocumentError) in try DiskStore.write(data, in: directory) }
        let replaced: String?
        do throws(DocumentError) {
            replaced = try index.write { (index) throws(DocumentError) -> String? in
                // Changed in place (copying a large index per save would cost O(n)), and put back
                // if the index can't be written.
                let previous = index.put(info, file: file, contents: directory == nil ? data : nil)
                if let directory {
                    do throws(DocumentError) {
                        try DiskStore.writeIndex(index, in: directory)
                    } catch {
                        index.restore(previous)
                        throw error
                    }
                }
                cache[info.name] = nil
                return previous.replacedFile
            }
        } catch {
            if let directory, let file { DiskStore.delete(file, in: directory) }
            throw error
        }
        if let directory, let replaced { DiskStore.delete(replaced, in: directory) }
    }

    func postDidChange() {
        NotificationCenter.default.post(name: Self.documentsDidChangeNotification, object: self)
    }
}

/// NSCache is documented as thread-safe; this wrapper only adds String keys and Data values.
final class ContentCache: @unchecked Sendable {
    // @unchecked: NSCache does its own locking.
    private let cache = NSCache<NSString, NSData>()

    subscript(name: String) -> Data? {
        get { cache.object(forKey: name as NSString).map { Data(referencing: $0) } }
        set {
            if let newValue {
                cache.setObject(newValue as NSData, forKey: name as NSString, cost: newValue.count)
            } else {
                cache.removeObject(forKey: name as NSString)
            }
        }
    }
}
