/// What a store held after some revision: nothing new, the rows that changed, or, if a document was
/// removed meanwhile (rare), every row again.
enum StoreUpdate: Sendable {
    case unchanged(StoreMarks)
    case rows([StoreRow], StoreMarks)
    case all([StoreRow], StoreMarks)

    /// The store's marks this update brings a registry to.
    var marks: StoreMarks {
        switch self {
        case .unchanged(let marks), .rows(_, let marks), .all(_, let marks): marks
        }
    }

    var revision: Int64 { marks.revision }
}
