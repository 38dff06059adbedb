import Dispatch
import Exclusion
import Foundation
import Synchronization

/// A registry of documents, read from many threads and written rarely, in memory or kept in a
/// SQLite database in a folder.
///
/// The registry (names in the order added, and what is known about each document) is held in a
/// `ReadersWriter`: ``allDocs`` and ``info(for:)`` run side by side, changes run alone like dispatch
/// barriers. Expensive work, reading and parsing files, happens in background operations that
/// report back on a delivery queue (main-thread gravity).
///
/// With a folder, the registry is loaded from the store's database and every change is written
/// through to it in a durable transaction before the registry changes. Several processes can use
/// one store at once: each change starts from what the others committed, and a long-lived manager
/// sees their changes within ``refreshInterval`` (see ``refresh()``).
///
/// ```swift
/// let documents = try DocumentManager(directory: folder)
/// let info = try await documents.save(Data("<doc><title>Plan</title></doc>".utf8), as: "plan.xml")
/// print(info.title ?? "untitled")                       // Plan
/// documents.importDocuments(at: urls, delegate: self)   // reports back on the main queue
/// ```
public final class DocumentManager: Sendable {
    /// The textbook singleton: a registry in memory, shared by the whole process.
    public static let shared = DocumentManager()

    /// Posted on the delivery queue (the main queue for ``save(_:as:)`` and ``remove(_:)``) after
    /// the documents changed; `object` is the manager.
    public static let documentsDidChangeNotification = Notification.Name("ExclusionDocumentsDidChange")

    /// How long a manager on a store may go on answering ``allDocs`` and ``info(for:)`` before it
    /// looks again for what other processes committed: 100 milliseconds.
    public static let refreshInterval: Duration = .milliseconds(100)

    /// What ``init(directory:ifMissing:)`` does when the folder holds no store.
    public enum MissingStore: Sendable {
        /// Creates the folder, if needed, and an empty store in it.
        case create
        /// Throws ``DocumentError/io(_:)`` and creates nothing: for tools that only read.
        case fail
    }

    let index: ReadersWriter<DocumentIndex>
    /// The database, or nil for a registry in memory.
    let database: DocumentStore?
    /// When the registry should next look for other processes' changes, in uptime nanoseconds.
    private let nextRefresh = Atomic<UInt64>(0)

    /// Creates an empty registry in memory, like ``shared``.
    public init() {
        index = ReadersWriter(DocumentIndex(), label: "document index")
        database = nil
    }

    /// Opens the store in `directory`: the database file `documents.sqlite` there.
    ///
    /// Nothing else in the folder is read, moved or deleted. A file of that name that is not a
    /// document store, or a damaged database, is refused and left as it is.
    ///
    /// - Parameters:
    ///   - directory: The store's folder.
    ///   - ifMissing: Whether to create a store where there is none; ``MissingStore/create`` unless
    ///     you only mean to read.
    /// - Throws: ``DocumentError/io(_:)`` saying what is wrong.
    public init(directory: URL, ifMissing: MissingStore = .create) throws(DocumentError) {
        let store = try DocumentStore(directory: directory, ifMissing: ifMissing)
        self.database = store
        index = ReadersWriter(try store.load(), label: "document index")
        nextRefresh.store(Self.uptime() + Self.refreshNanoseconds, ordering: .relaxed)
    }

    // MARK: - Names

    /// Throws ``DocumentError/invalidName(_:)`` if `name` can't name a document: empty, `/`, a
    /// control character, `.`, `..`, a leading `.`, or over 255 UTF-8 bytes.
    public static func checkName(_ name: String) throws(DocumentError) {
        try validateDocumentName(name)
    }

    /// Adds `name` to ``allDocs``, later; returns at once. A name that isn't valid, the empty one
    /// among them, is ignored; so is a name the store can't write.
    ///
    /// Like a dispatch barrier: the name is added alone, and this thread's next ``allDocs`` includes it.
    public func addDocumentName(_ name: String) {
        guard (try? validateDocumentName(name)) != nil else { return }
        if let store = database {
            index.writeAsync { index in _ = try? store.write([.addName(name)], to: &index) }
        } else {
            index.writeAsync { index in index.addName(name) }
        }
    }

    /// Every document name, in the order added: a copy, so it can't change under you.
    public var allDocs: [String] {
        refreshIfDue()
        return index.read { $0.names }
    }

    /// What is known about the document called `name`, or nil.
    public func info(for name: String) -> DocumentInfo? {
        refreshIfDue()
        return index.read { $0.infos[name] }
    }

    /// Brings the registry up to date with what other processes committed to the store, now.
    ///
    /// A manager does this by itself before every change, and before answering ``allDocs`` or
    /// ``info(for:)`` when ``refreshInterval`` has passed since it last looked; call this to look at
    /// once. A registry in memory has nothing to do.
    ///
    /// - Throws: ``DocumentError/io(_:)`` if the store can't be read; the registry stays as it was.
    public func refresh() throws(DocumentError) {
        nextRefresh.store(Self.uptime() + Self.refreshNanoseconds, ordering: .relaxed)
        try lookForChanges()
    }

    private func refreshIfDue() {
        guard database != nil else { return }
        let now = Self.uptime()
        let due = nextRefresh.load(ordering: .relaxed)
        // One reader looks; the others go on with what the registry holds.
        guard now >= due,
            nextRefresh.compareExchange(
                expected: due, desired: now + Self.refreshNanoseconds, ordering: .relaxed
            ).exchanged
        else { return }
        try? lookForChanges()  // A store that can't be read now leaves the registry as it was.
    }

    /// Reads what other processes committed without holding the registry, then takes it in,
    /// unless a change of this process caught up first (it reads inside its own transaction).
    private func lookForChanges() throws(DocumentError) {
        guard let store = database else { return }
        // Only the marks: a copy of the registry held here would make the write below copy it all.
        let known = index.read { (revision: $0.revision, removals: $0.removals) }
        let changes = try store.changes(since: known)
        if case .none = changes { return }
        index.write { index in
            if index.revision == known.revision { index.apply(changes) }
        }
    }

    private static let refreshNanoseconds =
        UInt64(refreshInterval.components.seconds) * 1_000_000_000
        + UInt64(refreshInterval.components.attoseconds / 1_000_000_000)

    private static func uptime() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    // MARK: - Documents

    /// Stores `data` as the document `name`, replacing any document of that name.
    ///
    /// The data is parsed first; a malformed document changes nothing. With a store, the document
    /// is written in one durable transaction: when this returns, it survives a crash or a power
    /// loss.
    ///
    /// - Returns: What the manager now knows about the document.
    /// - Throws: ``DocumentError/invalidName(_:)``, ``DocumentError/unsupportedFormat(_:)``,
    ///   ``DocumentError/malformed(_:reason:)`` or ``DocumentError/io(_:)``.
    public func save(_ data: Data, as name: String) async throws(DocumentError) -> DocumentInfo {
        try validateDocumentName(name)
        let info = try DocumentParser.parse(data, name: name)
        try storeDocuments([(info, data)])
        DispatchQueue.main.async { self.postDidChange() }
        return info
    }

    /// The bytes of the document `name`.
    ///
    /// - Throws: ``DocumentError/invalidName(_:)``, ``DocumentError/notFound(_:)`` (also for a
    ///   name added without contents), or ``DocumentError/io(_:)``.
    public func contents(of name: String) async throws(DocumentError) -> Data {
        try validateDocumentName(name)
        if let store = database {
            // Straight from the database: its snapshot is whole, whatever other processes do.
            guard let data = try store.contents(of: name) else { throw .notFound(name) }
            return data
        }
        return try await index.read { (index) throws(DocumentError) -> Data in
            guard let data = index.contents[name] else { throw .notFound(name) }
            return data
        }
    }

    /// Removes the document `name`.
    ///
    /// - Throws: ``DocumentError/invalidName(_:)``, ``DocumentError/notFound(_:)`` or
    ///   ``DocumentError/io(_:)``.
    public func remove(_ name: String) async throws(DocumentError) {
        try validateDocumentName(name)
        try await index.write { [database] (index) throws(DocumentError) in
            if let database {
                guard try database.write([.remove(name)], to: &index) == [true] else { throw .notFound(name) }
            } else {
                guard index.contains(name) else { throw .notFound(name) }
                index.remove(name)
            }
        }
        DispatchQueue.main.async { self.postDidChange() }
    }

    /// Stores parsed documents, all or none: with a store, in one transaction.
    func storeDocuments(_ documents: [(info: DocumentInfo, data: Data)]) throws(DocumentError) {
        try index.write { [database] (index) throws(DocumentError) in
            if let database {
                _ = try database.write(documents.map { .save($0.info, $0.data) }, to: &index)
            } else {
                for document in documents { index.put(document.info, contents: document.data) }
            }
        }
    }

    func postDidChange() {
        NotificationCenter.default.post(name: Self.documentsDidChangeNotification, object: self)
    }
}
