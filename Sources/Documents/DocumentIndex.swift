import Foundation

/// The registry's state, all of it behind one `ReadersWriter`: names in the order added, what is
/// known about each stored document, and where its bytes are.
struct DocumentIndex: Sendable, Codable {
    private(set) var names: [String] = []
    /// The names again, for asking "is it there?" in O(1). Not stored: rebuilt from `names`.
    private var listed: Set<String> = []
    private(set) var infos: [String: DocumentInfo] = [:]
    /// The file holding each stored document's bytes, for a store on disk.
    private(set) var files: [String: String] = [:]
    /// Each stored document's bytes, for a registry in memory (never written to disk).
    private(set) var contents: [String: Data] = [:]

    enum CodingKeys: String, CodingKey { case names, infos, files }

    init() {}

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        names = try container.decode([String].self, forKey: .names)
        listed = Set(names)
        infos = try container.decode([String: DocumentInfo].self, forKey: .infos)
        files = try container.decode([String: String].self, forKey: .files)
    }

    func contains(_ name: String) -> Bool { listed.contains(name) }

    mutating func addName(_ name: String) {
        guard listed.insert(name).inserted else { return }
        names.append(name)
    }

    /// What the index holds for one name, to put back if writing the index fails.
    struct Entry {
        fileprivate let name: String
        fileprivate let wasListed: Bool
        fileprivate let info: DocumentInfo?
        fileprivate let file: String?
        fileprivate let contents: Data?

        /// The file of the version this entry describes, if any.
        var replacedFile: String? { file }
    }

    /// Records a stored document; returns what it replaced.
    mutating func put(_ info: DocumentInfo, file: String?, contents data: Data?) -> Entry {
        let previous = Entry(
            name: info.name, wasListed: contains(info.name), info: infos[info.name], file: files[info.name],
            contents: contents[info.name])
        addName(info.name)
        infos[info.name] = info
        contents[info.name] = data
        files[info.name] = file
        return previous
    }

    /// Puts back what `put` replaced.
    mutating func restore(_ entry: Entry) {
        if !entry.wasListed {
            names.removeAll { $0 == entry.name }
            listed.remove(entry.name)
        }
        infos[entry.name] = entry.info
        files[entry.name] = entry.file
        contents[entry.name] = entry.contents
    }

    /// Forgets a document; returns its file, if it had one.
    mutating func remove(_ name: String) -> String? {
        names.removeAll { $0 == name }
        listed.remove(name)
        infos[name] = nil
        contents[name] = nil
        return files.removeValue(forKey: name)
    }
}

/// The on-disk side of a store: one file per stored document under a name of its own, and an
/// index file, each written completely before anything points to it.
///
/// A document's bytes go to a new file with a unique name; only then does a new index, written
/// to a temporary file and renamed over the old one, point to it; only then is the file of the
/// version it replaced deleted. A process killed at any moment leaves an index that opens and
/// points only to whole files; files nothing points to are swept away at the next open.
enum DiskStore {
    static let indexName = ".index.json"
    private static let stagingIndexName = ".index.json.new"

    static func open(_ directory: URL) throws(DocumentError) -> DocumentIndex {
        let manager = FileManager.default
        do {
            try manager.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw .io("cannot create the store at \(directory.path): \(error.localizedDescription)")
        }
        var isDirectory: ObjCBool = false
        guard manager.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .io("\(directory.path) is not a folder")
        }
        let indexURL = directory.appendingPathComponent(indexName)
        var index = DocumentIndex()
        if manager.fileExists(atPath: indexURL.path) {
            do {
                index = try JSONDecoder().decode(DocumentIndex.self, from: Data(contentsOf: indexURL))
            } catch {
                throw .io("cannot read the store's index \(indexURL.path): \(error.localizedDescription)")
            }
        }
        sweep(directory, keeping: Set(index.files.values))
        return index
    }

    /// Deletes files the index doesn't point to: leftovers of writes a crash interrupted.
    private static func sweep(_ directory: URL, keeping referenced: Set<String>) {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for entry in entries where entry != indexName && !referenced.contains(entry) && isOurs(entry) {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(entry))
        }
    }

    private static func isOurs(_ entry: String) -> Bool {
        entry == stagingIndexName || entry.hasPrefix("document-")
    }

    /// Writes `data` to a new file; returns its name. Nothing points to it yet.
    static func write(_ data: Data, in directory: URL) throws(DocumentError) -> String {
        let file = "document-\(UUID().uuidString)"
        do {
            try data.write(to: directory.appendingPathComponent(file))
        } catch {
            throw .io("cannot write to the store at \(directory.path): \(error.localizedDescription)")
        }
        return file
    }

    static func read(_ file: String, in directory: URL) throws(DocumentError) -> Data {
        do {
            return try Data(contentsOf: directory.appendingPathComponent(file))
        } catch {
            throw .io("cannot read \(file) in the store at \(directory.path): \(error.localizedDescription)")
        }
    }

    static func delete(_ file: String, in directory: URL) {
        try? FileManager.default.removeItem(at: directory.appendingPathComponent(file))
    }

    /// Replaces the index file atomically: a whole new file renamed over the old one.
    static func writeIndex(_ index: DocumentIndex, in directory: URL) throws(DocumentError) {
        let staging = directory.appendingPathComponent(stagingIndexName)
        let final = directory.appendingPathComponent(indexName)
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            try encoder.encode(index).write(to: staging)
        } catch {
            throw .io("cannot write the store's index: \(error.localizedDescription)")
        }
        guard rename(staging.path, final.path) == 0 else {
            throw .io("cannot replace the store's index: \(String(cString: strerror(errno)))")
        }
    }
}
