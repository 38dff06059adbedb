import ArgumentParser
import ToolSupport

@main
struct Docs: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "docs",
        abstract: "Keep documents in a store: import, list, show, remove.",
        discussion: """
            The store is a SQLite database, documents.sqlite, in the store folder; nothing else there \
            is touched. Exits 0 on success; 1 when an import had failures, a document is missing, the \
            store can't be opened or the output can't be written; 64 for bad arguments.
            """,
        subcommands: [Import.self, List.self, Show.self, Remove.self]
    )

    @OptionGroup var store: StoreOptions

    static func main() async { await runAsTool() }
}
