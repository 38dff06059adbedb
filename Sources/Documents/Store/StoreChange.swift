import Foundation

/// One change to a store.
enum StoreChange: Sendable {
    case addName(String)
    case save(DocumentInfo, Data)
    case remove(String)

    var isRemove: Bool {
        if case .remove = self { true } else { false }
    }

    /// Roughly what it adds to the write-ahead log: the document, and a little per row.
    var loggedBytes: Int {
        if case .save(_, let data) = self { data.count + 200 } else { 200 }
    }
}
