/// A row of the store as the registry needs it: a name, and what is known about it if it has contents.
struct StoreRow: Sendable {
    let name: String
    let info: DocumentInfo?
}
