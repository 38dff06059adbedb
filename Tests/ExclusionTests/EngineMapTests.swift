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
    }
}
