import Foundation
import Testing
import ToolTesting

/// End-to-end: the built `docs` executable on generated files, broken ones included.
@Suite("docs tool")
struct DocsToolTests {
    private func docs(_ arguments: [String]) throws -> ToolRun { try runTool("docs", arguments) }

    @Test func importListShowAndRemove() throws {
        let input = TemporaryFolder("docs-input")
        defer { input.remove() }
        let store = TemporaryFolder("docs-store")
        defer { store.remove() }
        input.file("a.xml", "<doc><title>Alpha</title>one two</doc>")
        input.file("nested/deeper/b.json", #"{"title": "Beta", "text": "three"}"#)
        input.file("c.md", "four five six")

        let imported = try docs(["import", "--store", store.url.path, input.url.path])
        #expect(imported.status == 0, "\(imported.errors)")
        #expect(imported.output.contains("Imported 3, failed 0, cancelled 0."))
        #expect(imported.errors.contains("3/3"))  // plain progress lines: not a terminal

        let list = try docs(["list", "--store", store.url.path])
        #expect(list.status == 0)
        #expect(
            list.output.split(separator: "\n").map { $0.split(separator: "\t")[0] }.sorted() == [
                "a.xml", "b.json", "c.md",
            ])

        let show = try docs(["show", "--store", store.url.path, "b.json"])
        #expect(show.output.contains("title: Beta"))
        #expect(show.output.contains("format: json"))
        let contents = try docs(["show", "--store", store.url.path, "c.md", "--contents"])
        #expect(contents.output == "four five six")

        let removed = try docs(["remove", "--store", store.url.path, "a.xml"])
        #expect(removed.status == 0)
        #expect(try docs(["list", "--store", store.url.path]).output.contains("a.xml") == false)
        #expect(try docs(["show", "--store", store.url.path, "a.xml"]).status == 1)
        #expect(try docs(["remove", "--store", store.url.path, "a.xml"]).status == 1)
    }

    @Test func brokenFilesFailAloneWithOneLineEachAndExitOne() throws {
        let input = TemporaryFolder("docs-input")
        defer { input.remove() }
        let store = TemporaryFolder("docs-store")
        defer { store.remove() }
        input.file("good.txt", "fine words")
        input.file("cut.xml", "<doc><p>unfinished")
        input.file("tail.json", #"{"a": 1} extra"#)
        input.file("empty.txt", bytes: Data())
        input.file("photo.jpg", "jpeg")

        let run = try docs(["import", "--store", store.url.path, input.url.path])
        #expect(run.status == 1)
        #expect(run.output.contains("Imported 1, failed 4, cancelled 0."))
        let failures = run.output.split(separator: "\n").filter { $0.hasPrefix("failed: ") }
        #expect(failures.count == 4)
        #expect(failures.contains { $0.contains("cut.xml") && $0.contains("malformed") })
        #expect(failures.contains { $0.contains("photo.jpg") && $0.contains("unsupported format") })
        #expect(try docs(["list", "--store", store.url.path]).output.hasPrefix("good.txt"))
    }

    @Test(arguments: [["import", "--store", "/tmp/x"], ["frobnicate"], ["show"], ["list", "--bogus"]])
    func badArgumentsExit64(arguments: [String]) throws {
        let run = try docs(arguments)
        #expect(run.status == 64, "\(arguments): \(run.errors)")
        #expect(run.errors.contains("Error") || run.errors.contains("Usage"))
    }
}
