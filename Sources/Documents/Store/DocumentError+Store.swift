import GRDB

extension DocumentError {
    /// What a user is told when the store at `path` failed while `doing` something ("open",
    /// "read", "write"): SQLite's reason, in words that say which file and what it means.
    static func store(_ error: any Error, path: String, doing: String) -> DocumentError {
        if let error = error as? DocumentError { return error }
        guard let error = error as? DatabaseError else {
            return .io("cannot \(doing) the store \(path): \(error)")
        }
        switch error.resultCode {
        case .SQLITE_NOTADB:
            return .io("\(path) is not a document store (SQLite: \(error.message ?? "file is not a database"))")
        case .SQLITE_CORRUPT:
            return .io("the store \(path) is damaged (SQLite: \(error.message ?? "database disk image is malformed"))")
        case .SQLITE_FULL:
            return .io("cannot \(doing) the store \(path): the disk is full")
        default:
            return .io("cannot \(doing) the store \(path): SQLite: \(error.message ?? "\(error.resultCode)")")
        }
    }
}
