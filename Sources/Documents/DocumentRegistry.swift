import Foundation

/// The registry: what a ``DocumentManager`` knows about its documents, all of it behind one
/// `ReadersWriter`. Names in the order added, and what is known about each stored document; for a
/// registry in memory, the documents' bytes too.
///
/// A registry on a store follows the store's database. It knows the store revision it reflects, and
/// takes in only what is newer, so updates can arrive in any order (a commit of this process, a look
/// at what other processes committed) and the registry still only ever moves forward.
struct DocumentRegistry: Sendable {
    private(set) var names: [String] = []
    /// The names again, for asking "is it there?" in O(1).
    private var listed: Set<String> = []
    private(set) var infos: [String: DocumentInfo] = [:]
    /// Each stored document's bytes, for a registry in memory only: a store keeps them in its database.
    private(set) var contents: [String: Data] = [:]

    /// For a registry on a store: the store's revision and count of removals it reflects.
    private(set) var marks = StoreMarks()
    /// Names added to the registry whose commit to the store hasn't landed yet: they stay listed
    /// through a reload.
    private var pending: [String] = []

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

    /// Forgets a document.
    mutating func remove(_ name: String) {
        guard listed.remove(name) != nil else { return }
        names.removeAll { $0 == name }
        infos[name] = nil
        contents[name] = nil
    }

    // MARK: - Following the store

    /// Lists `name` at once, before its commit to the store lands.
    mutating func addPendingName(_ name: String) {
        addName(name)
        pending.append(name)
    }

    /// The commit of a pending name landed (`stored`), or failed: the name is no longer pending,
    /// and if it wasn't stored it leaves the list, unless the store has it anyway.
    mutating func settlePendingName(_ name: String, stored: Bool) {
        guard let index = pending.firstIndex(of: name) else { return }
        pending.remove(at: index)
        if !stored, infos[name] == nil, !pending.contains(name) { remove(name) }
    }

    /// Takes in what the store held at a later revision than this registry reflects.
    mutating func apply(_ update: StoreUpdate) {
        guard update.revision > marks.revision else { return }
        take(update)
    }

    /// Takes in a commit of this process: what others committed before it, then its own changes.
    mutating func apply(_ commit: StoreCommit) {
        guard commit.revision > marks.revision else { return }  // a later look already brought it
        take(commit.before)
        for (change, applied) in zip(commit.changes, commit.applied) where applied {
            switch change {
            case .addName(let name): addName(name)
            case .save(let info, _): put(info, contents: nil)
            case .remove(let name): remove(name)
            }
        }
        marks = StoreMarks(revision: commit.revision, removals: marks.removals + commit.removals)
    }

    private mutating func take(_ update: StoreUpdate) {
        switch update {
        case .unchanged: break
        case .rows(let rows, let marks):
            for row in rows { merge(row) }
            self.marks = marks
        case .all(let rows, let marks):
            let pending = pending
            self = .loaded(rows, marks: marks)
            for name in pending { addPendingName(name) }
        }
    }

    /// Takes in a row read from a store: a name, with what is known about it if it has contents.
    mutating func merge(_ row: StoreRow) {
        addName(row.name)
        if let info = row.info { infos[row.name] = info }
    }

    /// A registry loaded from a store at `marks`.
    static func loaded(_ rows: [StoreRow], marks: StoreMarks) -> DocumentRegistry {
        var registry = DocumentRegistry()
        for row in rows { registry.merge(row) }
        registry.marks = marks
        return registry
    }
}
