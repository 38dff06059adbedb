import ArgumentParser
import Documents
import Foundation
import ToolSupport

/// `--store DIR`, given before the subcommand or after it.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: "The store folder (default: ./.documents).")
    var store: String?

    static let defaultStore = "./.documents"

    /// Opens the store named here, or else by the parent command, or the default one.
    ///
    /// - Parameter ifMissing: `.fail` for commands that only read: they create nothing.
    func open(parent: StoreOptions, ifMissing: DocumentManager.MissingStore) throws -> DocumentManager {
        let path = store ?? parent.store ?? Self.defaultStore
        do {
            return try DocumentManager(directory: URL(fileURLWithPath: path), ifMissing: ifMissing)
        } catch {
            throw ToolFailure("cannot open the store: \(error)")
        }
    }
}
