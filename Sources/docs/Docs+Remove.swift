import ArgumentParser
import Documents
import ToolSupport

extension Docs {
    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a document.")

        @ParentCommand var docs: Docs
        @OptionGroup var store: StoreOptions

        @Argument(help: "The document's name.")
        var name: String

        func run() async throws {
            let manager = try store.open(parent: docs.store, ifMissing: .fail)
            do {
                try await manager.remove(name)
            } catch {
                throw ToolFailure("\(error)")
            }
            try StandardStreams.output("removed \(printable(name))\n")
        }
    }
}
