import Foundation

/// The registry's state, all of it behind one `ReadersWriter`: names in the order added and what
/// is known about each stored document; for a registry in memory, the documents' bytes too.
struct DocumentIndex: Sendable {
    private(set) var names: [String] = []
    /// The names again, for asking "is it there?" in O(1).
    private var listed: Set<String> = []
    private(set) var infos: [String: DocumentInfo] = [:]
    /// Each stored document's bytes, for a registry in memory only: a store keeps them in its database.
    private(set) var contents: [String: Data] = [:]

    /// For a registry loaded from a store: the store's revision and count of removals it reflects.
    var revision: Int64 = 0
    var removals: Int64 = 0

    func contains(_ name: String) -> Bool { listed.contains(name) }

    mutating func addName(_ name: String) {
        guard listed.insert(name).inserted else { return }
        names.append(name)
    }

    /// Records a stored document, replacing any of that name in its place.
    mutating func put(_ info: DocumentInfo, contents data: Data?) {
        addName(info.name)
        infos[info.name] = info
        contents[info.name] = data
    }

    /// Takes in what other connections committed to the store.
    mutating func apply(_ changes: DocumentStore.Changes) {
        switch changes {
        case .none: break
        case .rows(let rows, let revision):
            for row in rows { merge(row) }
            self.revision = revision
        case .all(let reloaded): self = reloaded
        }
    }

    /// Takes in a name read from a store, with what is known about it if it has contents.
    mutating func merge(_ entry: (name: String, info: DocumentInfo?)) {
        addName(entry.name)
        if let info = entry.info { infos[entry.name] = info }
    }

    /// Forgets a document.
    mutating func remove(_ name: String) {
        guard listed.remove(name) != nil else { return }
        names.removeAll { $0 == name }
        infos[name] = nil
        contents[name] = nil
    }
}
