import ArgumentParser
import Documents
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@main
struct DocsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "docs",
        abstract: "Keep documents in a store folder: import, list, show, remove.",
        discussion: "Exits 0 on success, 1 when an import had failures or a document is missing, 64 for bad arguments.",
        subcommands: [Import.self, List.self, Show.self, Remove.self]
    )
}

struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: "The store folder.")
    var store = "./.documents"

    func open() throws -> DocumentManager {
        do {
            return try DocumentManager(directory: URL(fileURLWithPath: store))
        } catch {
            throw ValidationError("cannot open the store: \(error)")
        }
    }
}

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Import files, or every file in folders, recursively.")

    @OptionGroup var options: StoreOptions

    @Argument(help: "Files or folders to import.")
    var paths: [String]

    func validate() throws {
        guard !paths.isEmpty else { throw ValidationError("name at least one file or folder to import.") }
    }

    func run() async throws {
        let manager = try options.open()
        let files = paths.flatMap { expand(URL(fileURLWithPath: $0)) }
        let report = ImportReport(onTerminal: isatty(STDERR_FILENO) == 1, total: files.count)
        let summary = await withCheckedContinuation { continuation in
            report.finished = { continuation.resume(returning: $0) }
            manager.importDocuments(at: files, deliverOn: .main, delegate: report)
        }
        report.finishProgress()
        print("Imported \(summary.imported), failed \(summary.failed), cancelled \(summary.cancelled).")
        for failure in report.failures { print("failed: \(failure)") }
        if summary.failed > 0 || summary.cancelled > 0 { throw ExitCode.failure }
    }

    /// A folder's files, recursively, in a stable order; anything else as it is.
    private func expand(_ url: URL) -> [URL] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue,
            let enumerator = FileManager.default.enumerator(at: url, includingPropertiesForKeys: [.isRegularFileKey])
        else { return [url] }
        return enumerator.compactMap { $0 as? URL }
            .filter { (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true }
            .sorted { $0.path < $1.path }
    }
}

/// Hears the import on the main queue: progress on standard error, failures for the summary.
final class ImportReport: DocumentImportDelegate, @unchecked Sendable {
    // @unchecked: every method runs on the main queue (the import's delivery queue).
    private let onTerminal: Bool
    private let total: Int
    private var done = 0
    private(set) var failures: [String] = []
    var finished: (@Sendable (ImportSummary) -> Void)?

    init(onTerminal: Bool, total: Int) {
        self.onTerminal = onTerminal
        self.total = total
    }

    func documentManager(_ manager: DocumentManager, didImport info: DocumentInfo) {
        advance("imported \(info.name)")
    }

    func documentManager(_ manager: DocumentManager, didFailToImport url: URL, error: DocumentError) {
        failures.append("\(url.path): \(error)")
        advance("failed \(url.lastPathComponent)")
    }

    func documentManager(_ manager: DocumentManager, didFinishImport summary: ImportSummary) {
        finished?(summary)
    }

    private func advance(_ event: String) {
        done += 1
        if onTerminal {
            let width = 30
            let filled = total == 0 ? width : done * width / total
            write(
                "\r[\(String(repeating: "#", count: filled))\(String(repeating: " ", count: width - filled))] \(done)/\(total)"
            )
        } else {
            write("\(done)/\(total) \(event)\n")
        }
    }

    func finishProgress() {
        if onTerminal { write("\n") }
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the documents, in the order added.")

    @OptionGroup var options: StoreOptions

    func run() async throws {
        let manager = try options.open()
        for name in manager.allDocs {
            guard let info = manager.info(for: name) else {
                print(name)
                continue
            }
            print("\(name)\t\(info.format.rawValue)\t\(info.byteCount) bytes\t\(info.wordCount) words")
        }
    }
}

struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show what is known about a document.")

    @OptionGroup var options: StoreOptions

    @Argument(help: "The document's name.")
    var name: String

    @Flag(help: "Print the document's bytes instead.")
    var contents = false

    func run() async throws {
        let manager = try options.open()
        if contents {
            do {
                FileHandle.standardOutput.write(try await manager.contents(of: name))
            } catch {
                throw failure(error)
            }
            return
        }
        guard let info = manager.info(for: name) else { throw failure(.notFound(name)) }
        print("name: \(info.name)")
        print("format: \(info.format.rawValue)")
        print("bytes: \(info.byteCount)")
        print("title: \(info.title ?? "(none)")")
        print("words: \(info.wordCount)")
    }
}

struct Remove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Remove a document.")

    @OptionGroup var options: StoreOptions

    @Argument(help: "The document's name.")
    var name: String

    func run() async throws {
        let manager = try options.open()
        do {
            try await manager.remove(name)
        } catch {
            throw failure(error)
        }
        print("removed \(name)")
    }
}

/// Reports `error` on standard error; the command then exits with 1.
func failure(_ error: DocumentError) -> ExitCode {
    FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
    return .failure
}
