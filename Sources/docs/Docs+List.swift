import ArgumentParser
import Documents
import ToolSupport

extension Docs {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the documents, in the order added: name, format, bytes and words, separated by tabs.")

        @ParentCommand var docs: Docs
        @OptionGroup var store: StoreOptions

        func run() async throws {
            let manager = try store.open(parent: docs.store, ifMissing: .fail)
            var lines = ""
            for name in manager.allDocs {
                if let info = manager.info(for: name) {
                    lines +=
                        "\(printable(name))\t\(info.format.rawValue)\t\(info.byteCount) bytes\t\(info.wordCount) words\n"
                } else {
                    lines += "\(printable(name))\n"
                }
            }
            try StandardStreams.output(lines)
        }
    }
}
