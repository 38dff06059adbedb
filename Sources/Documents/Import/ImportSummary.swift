/// How an import went: each file counted once.
public struct ImportSummary: Sendable, Equatable {
    public let imported: Int
    public let failed: Int
    public let cancelled: Int

    public init(imported: Int, failed: Int, cancelled: Int) {
        self.imported = imported
        self.failed = failed
        self.cancelled = cancelled
    }
}
