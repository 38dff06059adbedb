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
/// With a folder, the registry is loaded from the store's database, and every change is committed
/// to it in a durable transaction first, then applied to the registry. The transaction, and the
/// sync of the disk it waits for, happen outside the registry: reads go on meanwhile, and see the
/// change once it is durable. Several processes can use one store at once: each change starts from
/// what the others committed, and a long-lived manager sees their changes within
/// ``refreshInterval`` (see ``refresh()``).
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
    ///
    /// Changes made while a post is on its way to the main queue share it: a burst of saves posts
    /// once, after the last of them, instead of queueing one block per save in front of everything
    /// else the main queue has to do.
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

    let registry: ReadersWriter<DocumentRegistry>
    /// The database, or nil for a registry in memory.
    let database: DocumentStore?
    /// When the registry should next look for other processes' changes, in uptime nanoseconds.
    private let nextRefresh = Atomic<UInt64>(0)
    /// How many loops over ``allDocsValues`` have the store looked at (see `StoreWatch`).
    let storeWatches = Atomic<Int>(0)
    /// Where ``addDocumentName(_:)`` commits names, one after the other, in the order added.
    private let nameCommits = DispatchQueue(label: "document names")
    /// Whether a ``documentsDidChangeNotification`` is on its way to the main queue.
    private let didChangeOnItsWay = Atomic<Bool>(false)
    /// Where ``documentsDidChangeNotification`` is posted: the main queue, but in tests that must
    /// hold the queue a post waits on, which would hold every main-actor test running beside them.
    let announcements: DispatchQueue

    /// Creates an empty registry in memory, like ``shared``.
    public convenience init() {
        self.init(announcingOn: .main)
    }

    /// An empty registry in memory whose notifications are posted on `announcements`.
    init(announcingOn announcements: DispatchQueue) {
        registry = ReadersWriter(DocumentRegistry(), label: "document registry")
        database = nil
        self.announcements = announcements
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
        let store = try DocumentStore(directory: directory, createIfMissing: ifMissing == .create)
        self.database = store
        announcements = .main
        let (rows, marks) = try store.load()
        registry = ReadersWriter(.loaded(rows, marks: marks), label: "document registry")
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
    /// With a store, the name is listed at once and committed right after, in the background; if
    /// the commit fails, it leaves the list again.
    public func addDocumentName(_ name: String) {
        guard (try? validateDocumentName(name)) != nil else { return }
        guard database != nil else {
            registry.writeAsync { registry in registry.addName(name) }
            return
        }
        registry.writeAsync { registry in registry.addPendingName(name) }
        nameCommits.async { [self] in
            let stored = (try? commit([.addName(name)])) != nil
            registry.writeAsync { registry in registry.settlePendingName(name, stored: stored) }
        }
    }

    /// Every document name, in the order added: a copy, so it can't change under you.
    public var allDocs: [String] {
        refreshIfDue()
        return registry.read { $0.names }
    }

    /// What is known about the document called `name`, or nil.
    public func info(for name: String) -> DocumentInfo? {
        refreshIfDue()
        return registry.read { $0.infos[name] }
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

    /// Reads what other processes committed without holding the registry, then takes it in, unless
    /// a commit of this process brought the registry further meanwhile (it only moves forward).
    private func lookForChanges() throws(DocumentError) {
        guard let store = database else { return }
        // Only the marks: a copy of the registry held here would make the write below copy it all.
        let known = registry.read { $0.marks }
        let update = try store.update(since: known)
        if case .unchanged = update { return }
        registry.write { registry in registry.apply(update) }
    }

    /// Commits `changes` to the store in one durable transaction, without holding the registry,
    /// then applies what was committed to the registry. Commits of several threads may land in any
    /// order: each one carries what was committed before it, and the registry takes in only what is
    /// newer than what it has.
    @discardableResult
    private func commit(_ changes: [StoreChange]) throws(DocumentError) -> StoreCommit {
        guard let store = database else { preconditionFailure("commit needs a store") }
        let known = registry.read { $0.marks }
        let commit = try store.commit(changes, after: known)
        registry.write { registry in registry.apply(commit) }
        return commit
    }

    static let refreshNanoseconds =
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
        announceChangeOnTheMainQueue()
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
        return try await registry.read { (registry) throws(DocumentError) -> Data in
            guard let data = registry.contents[name] else { throw .notFound(name) }
            return data
        }
    }

    /// Removes the document `name`.
    ///
    /// - Throws: ``DocumentError/invalidName(_:)``, ``DocumentError/notFound(_:)`` or
    ///   ``DocumentError/io(_:)``.
    public func remove(_ name: String) async throws(DocumentError) {
        try validateDocumentName(name)
        if database != nil {
            guard try commit([.remove(name)]).applied == [true] else { throw .notFound(name) }
        } else {
            try await registry.write { (registry) throws(DocumentError) in
                guard registry.contains(name) else { throw .notFound(name) }
                registry.remove(name)
            }
        }
        announceChangeOnTheMainQueue()
    }

    /// Stores parsed documents, all or none: with a store, in one transaction.
    func storeDocuments(_ documents: [(info: DocumentInfo, data: Data)]) throws(DocumentError) {
        if database != nil {
            try commit(documents.map { .save($0.info, $0.data) })
        } else {
            registry.write { registry in
                for document in documents { registry.put(document.info, contents: document.data) }
            }
        }
    }

    func postDidChange() {
        NotificationCenter.default.post(name: Self.documentsDidChangeNotification, object: self)
    }

    /// Posts ``documentsDidChangeNotification`` on the main queue, after a change this thread made,
    /// unless a post is on its way there already and will come after the change.
    ///
    /// The post clears the flag before it posts, and both exchanges order the change: a change
    /// that finds the flag set happened before the clear, so the post that clears it comes after
    /// the change; one that finds it clear sends a post of its own.
    private func announceChangeOnTheMainQueue() {
        guard !didChangeOnItsWay.exchange(true, ordering: .acquiringAndReleasing) else { return }
        announcements.async {
            _ = self.didChangeOnItsWay.exchange(false, ordering: .acquiringAndReleasing)
            self.postDidChange()
        }
    }
}
