import Foundation
import Testing

/// The map of the engine (`Sources/Exclusion/Internal/README.md`) names, for each path an access
/// takes, the files it reads and the functions it goes through there. Each of those names must
/// still be declared in the file beside it, or the map has gone stale.
@Suite("The engine's map")
struct EngineMapTests {
    static let module = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/Exclusion")

    /// Every `| `file` | `name`, `name` |` row of the map's tables.
    static func rows(of map: String) -> [(file: String, names: [String])] {
        map.split(separator: "\n").compactMap { line in
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard cells.count == 4, cells[1].hasPrefix("`"), cells[1].hasSuffix("`"), cells[2].hasPrefix("`")
            else { return nil }
            let file = String(cells[1].dropFirst().dropLast())
            guard file.hasSuffix(".swift") || file.hasSuffix(".c") || file.hasSuffix(".h") else { return nil }
            let names = cells[2].split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            }
            return (file, names)
        }
    }

    /// Whether `source` declares `name`: a Swift function, property or type, or a C function.
    static func declares(_ source: String, _ name: String, c: Bool) -> Bool {
        let escaped = NSRegularExpression.escapedPattern(for: name)
        let pattern =
            c
            ? "\\b\(escaped)\\s*\\([^;]*\\)\\s*\\{"
            : "\\b(func|var|let|struct|class|enum|typealias|actor)\\s+\(escaped)\\b"
        return source.range(of: pattern, options: .regularExpression) != nil
    }

    @Test func everyNameTheMapGivesIsDeclaredInItsFile() throws {
        let map = try String(
            contentsOf: Self.module.appendingPathComponent("Internal/README.md"), encoding: .utf8)
        let rows = Self.rows(of: map)
        #expect(rows.count >= 30, "the map's tables weren't read: \(rows.count) rows")
        for (file, names) in rows {
            let url = Self.module.appendingPathComponent(file)
            guard let source = try? String(contentsOf: url, encoding: .utf8) else {
                Issue.record("the map names \(file), which isn't there")
                continue
            }
            for name in names where !Self.declares(source, name, c: !file.hasSuffix(".swift")) {
                Issue.record("the map says \(file) has \(name), which it doesn't declare")
            }
        }
    }

    /// The files of the first table under each `## ` heading whose title starts with one of
    /// `headings`.
    static func files(of map: String, under headings: [String]) -> Set<String> {
        var files = Set<String>()
        for section in map.components(separatedBy: "\n## ").dropFirst()
        where headings.contains(where: { section.hasPrefix($0) }) {
            // The first table: rows up to the first line that isn't one.
            let lines = section.split(separator: "\n", omittingEmptySubsequences: false)
            guard let first = lines.firstIndex(where: { $0.hasPrefix("| File") }) else { continue }
            let table = lines[first...].prefix { $0.hasPrefix("|") }.joined(separator: "\n")
            files.formUnion(rows(of: table).map(\.file))
        }
        return files
    }

    @Test func theLastTableHoldsEveryFileOfThePathsItTakes() throws {
        let map = try String(
            contentsOf: Self.module.appendingPathComponent("Internal/README.md"), encoding: .utf8)
        let listed = Self.files(of: map, under: ["Every file of a contended, profiled, timed access"])
        // What the paths it takes list, each in its own section: the summary must hold all of them.
        let taken = Self.files(of: map, under: ["Uncontended", "Contended", "Timed", "Profiled"])
        #expect(taken.count >= 8, "the paths' tables weren't read: \(taken.sorted())")
        #expect(taken.isSubset(of: listed), "the summary leaves out \(taken.subtracting(listed).sorted())")
    }

    /// The rooms are split by job: a file that grows past this holds more than one.
    static let longestFile = 600

    @Test func noSwiftFileOfTheModuleIsLongerThanOneJob() throws {
        let files = try #require(FileManager.default.enumerator(at: Self.module, includingPropertiesForKeys: nil))
        var read = 0
        for case let url as URL in files where url.pathExtension == "swift" {
            let lines = try String(contentsOf: url, encoding: .utf8).split(
                separator: "\n", omittingEmptySubsequences: false)
            read += 1
            #expect(
                lines.count <= Self.longestFile,
                "\(url.lastPathComponent) has \(lines.count) lines: split it by job")
        }
        #expect(read >= 30, "the module's files weren't read: \(read)")
    }

    @Test func theCheckRejectsANameThatMovedAndAFileThatIsGone() {
        let swift = "extension _Engine {\n    func takeExclusively(_ thread: _CurrentThread) {}\n}"
        #expect(Self.declares(swift, "takeExclusively", c: false))
        #expect(!Self.declares(swift, "_takeExclusively", c: false))
        #expect(!Self.declares("let x = takeExclusively(thread)", "takeExclusively", c: false))
        let c = "static inline int exclusion_lock_try(exclusion_lock *lock) {\n    return 0;\n}"
        #expect(Self.declares(c, "exclusion_lock_try", c: true))
        #expect(!Self.declares("    exclusion_lock_try(lock);", "exclusion_lock_try", c: true))
        let rows = Self.rows(of: "| File | Names |\n|---|---|\n| `Gone.swift` | `nothing` |\n| `a` | b |")
        #expect(rows.count == 1 && rows[0].file == "Gone.swift" && rows[0].names == ["nothing"])
        let table = { (file: String) in "| File | Names |\n|---|---|\n| `\(file)` | `x` |\n" }
        let map = "x\n## Timed\n\n" + table("A.swift") + "\n" + table("B.swift") + "## Other\n\n" + table("C.swift")
        #expect(Self.files(of: map, under: ["Timed"]) == ["A.swift"])
    }
}
