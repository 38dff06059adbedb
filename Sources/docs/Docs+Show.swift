import ArgumentParser
import Documents
import Foundation
import ToolSupport

extension Docs {
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show what is known about a document.")

        @ParentCommand var docs: Docs
        @OptionGroup var store: StoreOptions

        @Argument(help: "The document's name.")
        var name: String

        @Flag(help: "Print the document's bytes instead.")
        var contents = false

        func run() async throws {
            let manager = try store.open(parent: docs.store, ifMissing: .fail)
            do {
                if contents {
                    try StandardStreams.output(bytes: try await manager.contents(of: name))
                    return
                }
                try DocumentManager.checkName(name)
                guard let info = manager.info(for: name) else { throw DocumentError.notFound(name) }
                try StandardStreams.output(
                    """
                    name: \(printable(info.name))
                    format: \(info.format.displayName)\(fileExtension(of: info.name))
                    bytes: \(info.byteCount)
                    title: \(info.title.map(printable) ?? "(none)")
                    words: \(info.wordCount)

                    """)
            } catch let error as DocumentError {
                throw ToolFailure("\(error)")
            }
        }

        /// The extension that chose the format, as the name has it: ` (.xhtml)`.
        private func fileExtension(of name: String) -> String {
            DocumentFormat.nameExtension(of: name).map { " (.\(printable(String($0))))" } ?? ""
        }
    }
}
