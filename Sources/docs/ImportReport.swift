import Documents
import Foundation
import ToolSupport

/// Hears the import on the main queue: progress on standard error, failures for the summary.
///
/// Progress that can't be written (standard error closed, or a pipe whose reader left) is given
/// up on, never the import.
final class ImportReport: DocumentImportDelegate, @unchecked Sendable {
    // @unchecked: every method runs on the main queue (the import's delivery queue).
    private let onTerminal: Bool
    private let total: Int
    private var done = 0
    private var showsProgress = true
    private(set) var failures: [String] = []
    var finished: (@Sendable (ImportSummary) -> Void)?

    init(onTerminal: Bool, total: Int) {
        self.onTerminal = onTerminal
        self.total = total
    }

    func documentManager(_ manager: DocumentManager, didImport info: DocumentInfo) {
        advance("imported \(printable(info.name))")
    }

    func documentManager(_ manager: DocumentManager, didFailToImport url: URL, error: DocumentError) {
        failures.append(Self.failure(of: url, error))
        advance("failed \(printable(url.lastPathComponent))")
    }

    func documentManager(_ manager: DocumentManager, didFinishImport summary: ImportSummary) {
        finished?(summary)
    }

    private func advance(_ event: String) {
        done += 1
        guard showsProgress else { return }
        if onTerminal {
            let width = 30
            let filled = total == 0 ? width : done * width / total
            let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
            showsProgress = StandardStreams.error("\r[\(bar)] \(done)/\(total)")
        } else {
            showsProgress = StandardStreams.error("\(done)/\(total) \(event)\n")
        }
    }

    /// A failure as the summary lists it: the file's path, then what went wrong, the path said
    /// once. The error's own description starts with the file's name or path where it names the
    /// file, so that name is widened to the path instead of the path put in front of it.
    static func failure(of url: URL, _ error: DocumentError) -> String {
        let text = error.description
        if text.hasPrefix(url.path) { return text }
        let name = url.lastPathComponent
        if text.hasPrefix(name) { return url.path + text.dropFirst(name.count) }
        return "\(url.path): \(text)"
    }

    func finishProgress() {
        if onTerminal, showsProgress { StandardStreams.error("\n") }
    }
}
