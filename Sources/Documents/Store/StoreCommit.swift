/// What one transaction committed: what other processes had committed before it (after the
/// revision the committer knew), its changes and which of them applied (a remove of a name that
/// isn't there doesn't), its revision, and how many documents it removed.
struct StoreCommit: Sendable {
    let before: StoreUpdate
    let changes: [StoreChange]
    let applied: [Bool]
    let revision: Int64
    let removals: Int64
}
