import Foundation

/// The files named on the command line, folders walked recursively in a stable order.
struct FoundFiles {
    private(set) var files: [URL] = []
    /// Hidden entries and links to folders, not imported.
    private(set) var skipped = 0

    mutating func add(_ url: URL) {
        guard isFolder(url) else {
            files.append(url)  // a file, a link to one, or a path that fails on import with its reason
            return
        }
        walk(url)
    }

    private mutating func walk(_ folder: URL) {
        let keys: [URLResourceKey] = [.isDirectoryKey, .isSymbolicLinkKey]
        let entries =
            (try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: keys)) ?? []
        for entry in entries.sorted(by: { $0.lastPathComponent < $1.lastPathComponent }) {
            if entry.lastPathComponent.hasPrefix(".") {
                skipped += 1
                continue
            }
            let values = try? entry.resourceValues(forKeys: Set(keys))
            if values?.isSymbolicLink == true {
                // Followed once, to a file; never into a folder, so no link can make a loop.
                if isFolder(entry) { skipped += 1 } else { files.append(entry) }
            } else if values?.isDirectory == true {
                walk(entry)
            } else {
                files.append(entry)
            }
        }
    }

    private func isFolder(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
    }
}
