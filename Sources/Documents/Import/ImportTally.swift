/// Counts what an import's files came to, so the summary is delivered exactly once, by whichever
/// count comes last.
struct ImportTally: Sendable {
    enum Outcome: Sendable { case imported, failed, cancelled }

    var remaining: Int
    var imported = 0
    var failed = 0
    var cancelled = 0

    /// Counts `files` files; returns the summary when they were the last.
    mutating func record(_ outcome: Outcome, files: Int) -> ImportSummary? {
        switch outcome {
        case .imported: imported += files
        case .failed: failed += files
        case .cancelled: cancelled += files
        }
        remaining -= files
        return remaining == 0 ? ImportSummary(imported: imported, failed: failed, cancelled: cancelled) : nil
    }
}
