import Dispatch
import Exclusion
import Synchronization

// MARK: - The names, kept current

extension DocumentManager {
    /// ``allDocs`` as an asynchronous sequence that a `for await` loop keeps current: the names now,
    /// then the names again whenever they change.
    ///
    /// ```swift
    /// @MainActor func showNames(of documents: DocumentManager) async {
    ///     for await names in documents.allDocsValues {
    ///         list.rows = names   // on the main actor, where the loop runs
    ///     }
    /// }
    /// ```
    ///
    /// - Changes this manager makes (saves, removals, names added, imports) come at once; changes
    ///   other processes commit to the same store come within ``refreshInterval``: while a loop
    ///   waits, the manager looks at the store that often.
    /// - A loop that is slow gets the latest names, never a backlog: what is kept for it is one
    ///   list, whatever the rate of changes.
    /// - Elements arrive in the loop's isolation (the main actor, for a loop there). Ending the
    ///   loop or cancelling its task stops it and the looking at once; the sequence ends when the
    ///   manager goes away.
    public var allDocsValues: some AsyncSequence<[String], Never> & Sendable {
        DocumentNames(names: registry.values { $0.names }, manager: self)
    }

    /// While a loop over ``allDocsValues`` waits on a store, looks at the store every
    /// ``refreshInterval``, which its names then reflect.
    func looksAtTheStoreWhileWatched() -> StoreWatch? {
        database == nil ? nil : StoreWatch(manager: self)
    }
}

/// The sequence of ``DocumentManager/allDocsValues``: the registry's `values` of its names, and for
/// a manager on a store, a watch that brings in other processes' changes while a loop iterates.
struct DocumentNames<Names: AsyncSequence<[String], Never> & Sendable>: AsyncSequence, Sendable {
    typealias Element = [String]
    typealias Failure = Never

    let names: Names
    /// Weak, so a loop doesn't keep the manager (and its database) alive: the sequence ends with it.
    weak var manager: DocumentManager?

    struct Iterator: AsyncIteratorProtocol {
        typealias Element = [String]
        typealias Failure = Never

        var names: Names.AsyncIterator
        /// Ends its looking when the last copy of the iterator goes away.
        let watch: StoreWatch?

        mutating func next(isolation actor: isolated (any Actor)?) async -> [String]? {
            await names.next(isolation: actor)
        }
    }

    func makeAsyncIterator() -> Iterator {
        Iterator(names: names.makeAsyncIterator(), watch: manager?.looksAtTheStoreWhileWatched())
    }
}

/// Looks at a manager's store every ``DocumentManager/refreshInterval`` until it goes away, or the
/// manager does. The registry's `values` then hands whatever that brought in to the loop.
///
/// A store changed by another process tells nobody (SQLite has no notification across
/// processes), so looking is the only way; it reads one row when nothing changed.
///
/// On a timer of its own, on a queue of its own: the look is due every interval however busy the
/// program's tasks keep Swift's shared pool (as many threads as cores), and it reads the database
/// synchronously, which would hold one of that pool's few threads meanwhile.
final class StoreWatch: @unchecked Sendable {
    // @unchecked: `timer` is a dispatch source, whose calls are safe from any thread; it is set up
    // in init and only cancelled after (Dispatch doesn't mark it Sendable on every platform).
    private let timer: any DispatchSourceTimer
    private weak let manager: DocumentManager?

    init(manager: DocumentManager) {
        self.manager = manager
        manager.storeWatches.add(1, ordering: .relaxed)
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "Documents: looking at the store"))
        let interval = DispatchTimeInterval.nanoseconds(Int(DocumentManager.refreshNanoseconds))
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(5))
        timer.setEventHandler { [weak manager] in
            try? manager?.refresh()  // a store that can't be read now is looked at next time
        }
        timer.activate()
    }

    deinit {
        timer.cancel()
        manager?.storeWatches.subtract(1, ordering: .relaxed)
    }
}
