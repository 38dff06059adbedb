/// A store's revision (bumped by every commit) and how many documents were ever removed from it.
struct StoreMarks: Sendable, Equatable {
    var revision: Int64 = 0
    var removals: Int64 = 0
}
