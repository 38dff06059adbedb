import ArgumentParser
import Documents
import Foundation
import ToolSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Docs {
    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import files, or every file in folders, recursively.",
            discussion: """
                Hidden files and folders (names starting with a dot) are skipped and counted; a link to \
                a file imports the file it points to, a link to a folder is skipped.
                """)

        @ParentCommand var docs: Docs
        @OptionGroup var store: StoreOptions

        @Argument(help: "Files or folders to import.")
        var paths: [String]

        @OptionGroup var contentionProfile: ContentionProfileOption

        func validate() throws {
            guard !paths.isEmpty else { throw ValidationError("name at least one file or folder to import.") }
        }

        func run() async throws {
            let manager = try store.open(parent: docs.store, ifMissing: .create)
            var found = FoundFiles()
            for path in paths { found.add(URL(fileURLWithPath: path)) }
            let files = found.files
            let report = ImportReport(onTerminal: isatty(STDERR_FILENO) == 1, total: files.count)
            let profile = contentionProfile.start()
            let summary = await withCheckedContinuation { continuation in
                report.finished = { continuation.resume(returning: $0) }
                manager.importDocuments(at: files, deliverOn: .main, delegate: report)
            }
            report.finishProgress()
            try contentionProfile.finish(profile)
            var lines = "Imported \(summary.imported), failed \(summary.failed), cancelled \(summary.cancelled).\n"
            if found.skipped > 0 {
                lines +=
                    "Skipped \(found.skipped) hidden \(found.skipped == 1 ? "entry" : "entries") or links to folders.\n"
            }
            for failure in report.failures { lines += "failed: \(printable(failure))\n" }
            try StandardStreams.output(lines)
            if summary.failed > 0 || summary.cancelled > 0 { throw ExitCode.failure }
        }
    }
}
