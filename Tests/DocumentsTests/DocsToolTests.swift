// Runs the tool in a process of its own: only where a test can start one.
#if CHILD_PROCESSES
import ExclusionTestSupport
import Foundation
import Testing
import ToolTesting

/// End-to-end: the built `docs` executable on generated files, broken ones included.
@Suite("docs tool", .patientTimeLimit(minutes: 5))
struct DocsToolTests {
    private func docs(_ arguments: [String]) async throws -> ToolRun { try await runTool("docs", arguments) }
    private func shell(_ script: String) async throws -> ToolRun { try await runToolInShell("docs", script) }

    @Test func importCanWriteAContentionProfile() async throws {
        let input = TemporaryFolder("docs-input")
        defer { input.remove() }
        let store = TemporaryFolder("docs-store")
        defer { store.remove() }
        for index in 0..<50 { input.file("doc\(index).xml", "<doc><title>\(index)</title>words</doc>") }
        let file = store.url.appendingPathComponent("contention.pb.gz")
        let imported = try await docs([
            "import", "--store", store.url.path, "--contention-profile", file.path, input.url.path,
        ])
        #expect(imported.status == 0, "\(imported.errors)")
        #expect(imported.output.contains("Imported 50, failed 0, cancelled 0."))
        #expect(imported.errors.contains("Contention profile written to \(file.path)."))
        // Read back with the tests' own decoder: Go's profile types, and every sample labelled.
        let profile = try Pprof(gzipped: Data(contentsOf: file))
        #expect(profile.sampleTypes == [["contentions", "count"], ["delay", "nanoseconds"]])
        for sample in profile.samples {
            #expect(sample.labels["label"].map { !$0.isEmpty } == true)
            #expect(sample.labels["type"].map { $0.hasPrefix("Exclusive<") || $0.hasPrefix("ReadersWriter<") } == true)
            #expect(["blocked thread", "suspended task"].contains(sample.labels["wait"]))
            #expect(sample.values.count == 2 && sample.values[0] > 0)
        }
    }

    @Test func importListShowAndRemove() async throws {
        let input = TemporaryFolder("docs-input")
        defer { input.remove() }
        let store = TemporaryFolder("docs-store")
        defer { store.remove() }
        input.file("a.xml", "<doc><title>Alpha</title>one two</doc>")
        input.file("nested/deeper/b.json", #"{"title": "Beta", "text": "three"}"#)
        input.file("c.md", "four five six")

        let imported = try await docs(["import", "--store", store.url.path, input.url.path])
        #expect(imported.status == 0, "\(imported.errors)")
        #expect(imported.output.contains("Imported 3, failed 0, cancelled 0."))
        #expect(imported.errors.contains("3/3"))  // plain progress lines: not a terminal

        // --store before or after the subcommand.
        for list in [
            try await docs(["list", "--store", store.url.path]), try await docs(["--store", store.url.path, "list"]),
        ] {
            #expect(list.status == 0)
            #expect(
                list.output.split(separator: "\n").map { $0.split(separator: "\t")[0] } == ["a.xml", "c.md", "b.json"])
        }

        let show = try await docs(["--store", store.url.path, "show", "b.json"])
        #expect(show.output.contains("title: Beta"))
        #expect(show.output.contains("format: JSON (.json)\n"))
        let contents = try await docs(["show", "--store", store.url.path, "c.md", "--contents"])
        #expect(contents.output == "four five six")

        let removed = try await docs(["remove", "--store", store.url.path, "a.xml"])
        #expect(removed.status == 0)
        #expect(try await docs(["list", "--store", store.url.path]).output.contains("a.xml") == false)
        #expect(try await docs(["show", "--store", store.url.path, "a.xml"]).status == 1)
        #expect(try await docs(["remove", "--store", store.url.path, "a.xml"]).status == 1)
    }

    @Test func xmlUnderItsOtherNamesImportsAndShowSaysWhichNameChoseIt() async throws {
        let input = TemporaryFolder("docs-input")
        defer { input.remove() }
        let store = TemporaryFolder("docs-store")
        defer { store.remove() }
        input.file(
            "page.XHTML",
            """
            <!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">
            <html xmlns="http://www.w3.org/1999/xhtml"><head><title>Caf&eacute;</title></head><body/></html>
            """)
        input.file("track.gpx", "<gpx><trk><name>Morning run</name></trk></gpx>")
        input.file("binary.plist", bytes: Data("bplist00".utf8) + Data(repeating: 0, count: 40))

        let run = try await docs(["import", "--store", store.url.path, input.url.path])
        #expect(run.status == 1)
        #expect(run.output.contains("Imported 2, failed 1, cancelled 0."), "\(run.output)")
        #expect(run.output.contains("binary.plist is malformed: a binary property list, not XML"), "\(run.output)")
        let page = try await docs(["show", "--store", store.url.path, "page.XHTML"])
        #expect(page.output.contains("format: XML (.XHTML)\n"), "\(page.output)")
        #expect(page.output.contains("title: Café\n"), "\(page.output)")
        let track = try await docs(["show", "--store", store.url.path, "track.gpx"])
        #expect(track.output.contains("format: XML (.gpx)\n"), "\(track.output)")
    }

    @Test func brokenFilesFailAloneWithOneLineEachAndExitOne() async throws {
        let input = TemporaryFolder("docs-input")
        defer { input.remove() }
        let store = TemporaryFolder("docs-store")
        defer { store.remove() }
        input.file("good.txt", "fine words")
        input.file("cut.xml", "<doc><p>unfinished")
        input.file("tail.json", #"{"a": 1} extra"#)
        input.file("empty.txt", bytes: Data())
        input.file("photo.jpg", "jpeg")

        let run = try await docs(["import", "--store", store.url.path, input.url.path])
        #expect(run.status == 1)
        #expect(run.output.contains("Imported 1, failed 4, cancelled 0."))
        let failures = run.output.split(separator: "\n").filter { $0.hasPrefix("failed: ") }
        #expect(failures.count == 4)
        #expect(failures.contains { $0.contains("cut.xml") && $0.contains("malformed") })
        #expect(failures.contains { $0.contains("photo.jpg") && $0.contains("unsupported format") })
        for name in ["cut.xml", "tail.json", "empty.txt", "photo.jpg"] {
            let failure = try #require(failures.first { $0.contains(name) })
            #expect(failure.hasPrefix("failed: \(input.url.path)/\(name)"), "\(failure)")
            #expect(failure.components(separatedBy: name).count == 2, "the file named once: \(failure)")
        }
        #expect(try await docs(["list", "--store", store.url.path]).output.hasPrefix("good.txt"))
    }

    @Test(arguments: [["import", "--store", "/tmp/x"], ["frobnicate"], ["show"], ["list", "--bogus"]])
    func badArgumentsExit64(arguments: [String]) async throws {
        let run = try await docs(arguments)
        #expect(run.status == 64, "\(arguments): \(run.errors)")
        #expect(run.errors.contains("Error") || run.errors.contains("Usage"))
    }

    @Test func aStoreThatCantBeOpenedExitsOneWithoutUsageAndReadersCreateNothing() async throws {
        let folder = TemporaryFolder("docs-store")
        defer { folder.remove() }
        let missing = folder.url.appendingPathComponent("missing").path
        for arguments in [["list"], ["show", "a.txt"], ["show", "a.txt", "--contents"], ["remove", "a.txt"]] {
            let run = try await docs(["--store", missing] + arguments)
            #expect(run.status == 1, "\(arguments)")
            #expect(run.errors.contains("cannot open the store"), "\(arguments): \(run.errors)")
            #expect(!run.errors.contains("Usage"))
        }
        let notAStore = folder.file("documents.sqlite", "hello")
        let run = try await docs(["--store", folder.url.path, "import", notAStore.path])
        #expect(run.status == 1)
        #expect(run.errors.contains("not a document store"), "\(run.errors)")
        #expect(folder.entries == ["documents.sqlite"])
        #expect(try String(contentsOf: notAStore, encoding: .utf8) == "hello")
    }

    @Test func outputThatCantBeWrittenExitsOneAndNeverCutsAnImportShort() async throws {
        let input = TemporaryFolder("docs-input")
        defer { input.remove() }
        let store = TemporaryFolder("docs-store")
        defer { store.remove() }
        for number in 0..<200 { input.file("doc-\(number).txt", "words \(number)") }
        let output = TemporaryFolder("docs-output")
        defer { output.remove() }
        let s = store.url.path
        let i = input.url.path

        // Output appended to a file already as large as the tool may make one (`ulimit -f`, in KiB),
        // which works on every platform: with SIGXFSZ ignored (which the tool inherits), each write
        // fails with EFBIG. The limit is far above what the store needs, whose writes go through.
        let atTheLimit = output.file("output", bytes: Data())
        let handle = try FileHandle(forWritingTo: atTheLimit)
        try handle.truncate(atOffset: 64 << 20)
        try handle.close()
        let o = atTheLimit.path
        let tooLarge = try await shell(
            #"trap '' XFSZ; ulimit -f 65536; "$TOOL" --store "\#(s)" import "\#(i)" >> "\#(o)""#)
        #expect(tooLarge.status == 1)
        #expect(tooLarge.errors.contains("cannot write the output: File too large"), "\(tooLarge.errors)")
        #expect(try await docs(["--store", s, "list"]).output.split(separator: "\n").count == 200)
        if FileManager.default.fileExists(atPath: "/dev/full") {  // Linux's device that is always full
            let full = try await shell(#""$TOOL" --store "\#(s)" import "\#(i)" > /dev/full"#)
            #expect(full.status == 1)
            #expect(full.errors.contains("No space left on device"))
        }
        // Progress into a pipe whose reader leaves after one line.
        let piped = try await shell(#""$TOOL" --store "\#(s)" import "\#(i)" 2>&1 | head -1; exit ${PIPESTATUS[0]}"#)
        // Its summary meets a closed pipe (so it exits 1); what counts is that all 200 are stored.
        #expect(piped.output.split(separator: "\n").count == 1)
        let closed = try await shell(#""$TOOL" --store "\#(s)" list >&-"#)
        #expect(closed.status == 1)
        #expect(closed.errors.contains("standard output is closed"))
        let quiet = try await shell(#""$TOOL" --store "\#(s)" import "\#(i)" 2>&-"#)
        #expect(quiet.status == 0)
        let list = try await docs(["--store", s, "list"])
        #expect(list.output.split(separator: "\n").count == 200)
    }

    @Test func aReaderThatLeavesEndsTheToolQuietly() async throws {
        let input = TemporaryFolder("docs-input")
        defer { input.remove() }
        let store = TemporaryFolder("docs-store")
        defer { store.remove() }
        // Larger than a pipe's buffer, so that the write meets the closed pipe whatever the timing.
        _ = input.file("big.txt", String(repeating: "word ", count: 100_000))
        for number in 0..<50 { input.file("doc-\(number).txt", "words \(number)") }
        let s = store.url.path
        let i = input.url.path
        let imported = try await shell(withItsReaderGone(#""$TOOL" --store "\#(s)" import "\#(i)" 2>/dev/null"#))
        #expect(imported.status == 1)
        #expect(imported.errors.isEmpty, "\(imported.errors)")
        #expect(try await docs(["--store", s, "list"]).output.split(separator: "\n").count == 51)  // all stored
        for script in [
            #""$TOOL" --store "\#(s)" show big.txt --contents | head -c 10; exit ${PIPESTATUS[0]}"#,
            withItsReaderGone(#""$TOOL" --store "\#(s)" list"#),
        ] {
            let run = try await shell(script)
            #expect(run.status != 0, "\(script)")
            #expect(run.errors.isEmpty, "\(script): \(run.errors)")
        }
    }

    @Test func namesAndTitlesCantForgeOutput() async throws {
        let input = TemporaryFolder("docs-input")
        defer { input.remove() }
        let store = TemporaryFolder("docs-store")
        defer { store.remove() }
        input.file("tab\tname.txt", "x")
        input.file("new\nline.txt", "x")
        input.file("title.json", #"{"title": "evil\nname: forged\u001b[2J"}"#)
        let run = try await docs(["--store", store.url.path, "import", input.url.path])
        #expect(run.status == 1)
        #expect(run.output.contains("Imported 1, failed 2"))
        #expect(run.output.split(separator: "\n").filter { $0.hasPrefix("failed: ") }.count == 2)
        let show = try await docs(["--store", store.url.path, "show", "title.json"])
        #expect(show.output.split(separator: "\n").count == 5, "\(show.output)")
        #expect(!show.output.contains("\u{1B}"))
        let invalid = try await docs(["--store", store.url.path, "show", "tab\tname.txt"])
        #expect(invalid.status == 1)
        #expect(invalid.errors.contains("invalid document name"))
    }

    @Test func hiddenEntriesAreSkippedAndCountedAndLinksToFilesFollowed() async throws {
        let input = TemporaryFolder("docs-input")
        defer { input.remove() }
        let store = TemporaryFolder("docs-store")
        defer { store.remove() }
        input.file("a.txt", "a")
        input.file(".hidden.txt", "h")
        input.file(".git/config.txt", "g")
        input.file("sub/b.txt", "b")
        let target = input.file("elsewhere/.c.txt", "c")
        try FileManager.default.createSymbolicLink(
            at: input.url.appendingPathComponent("sub/link.txt"), withDestinationURL: target)
        try FileManager.default.createSymbolicLink(
            at: input.url.appendingPathComponent("loop"), withDestinationURL: input.url)
        let run = try await docs(["--store", store.url.path, "import", input.url.path])
        #expect(run.status == 0, "\(run.output)\(run.errors)")
        #expect(run.output.contains("Imported 3, failed 0, cancelled 0."))
        #expect(run.output.contains("Skipped 4"))  // .hidden.txt, .git, loop, elsewhere/.c.txt
        let names = try await docs(["--store", store.url.path, "list"]).output.split(separator: "\n").map {
            $0.split(separator: "\t")[0]
        }
        #expect(names.sorted() == ["a.txt", "b.txt", "link.txt"])
    }

    @Test func twoFilesWithOneNameInOneImportFailTheSecondNamingBoth() async throws {
        let input = TemporaryFolder("docs-input")
        defer { input.remove() }
        let store = TemporaryFolder("docs-store")
        defer { store.remove() }
        let first = input.file("one/caf\u{E9}.txt", "first")
        let second = input.file("two/cafe\u{301}.txt", "second")
        let run = try await docs(["--store", store.url.path, "import", input.url.path])
        #expect(run.status == 1)
        let failure = run.output.split(separator: "\n").first { $0.hasPrefix("failed: ") }
        #expect(failure?.contains(first.path) == true && failure?.contains(second.path) == true, "\(run.output)")
        #expect(failure?.components(separatedBy: second.path).count == 2, "the path once: \(run.output)")
        #expect(try await docs(["--store", store.url.path, "show", "café.txt", "--contents"]).output == "first")
    }

    /// Two imports at once into one store, with a reader listing it beside them: nothing lost.
    @Test func twoProcessesImportingAtOnceLoseNothing() async throws {
        let store = TemporaryFolder("docs-store")
        defer { store.remove() }
        let inputs = [TemporaryFolder("docs-input"), TemporaryFolder("docs-input")]
        defer { inputs.forEach { $0.remove() } }
        for (side, input) in inputs.enumerated() {
            for number in 0..<150 {
                input.file("p\(side)-\(number).xml", "<doc><title>\(side) \(number)</title></doc>")
            }
        }
        _ = try await docs(["--store", store.url.path, "import", inputs[0].url.appendingPathComponent("p0-0.xml").path])
        let s = store.url.path
        let runs = try await shell(
            #"""
            "$TOOL" --store "\#(s)" import "\#(inputs[0].url.path)" > /tmp/exclusion-import-0.$$ 2>&1 & first=$!
            "$TOOL" --store "\#(s)" import "\#(inputs[1].url.path)" > /tmp/exclusion-import-1.$$ 2>&1 & second=$!
            lists=0
            while kill -0 $first 2>/dev/null || kill -0 $second 2>/dev/null; do
                "$TOOL" --store "\#(s)" list > /dev/null || { echo "list failed"; exit 2; }
                lists=$((lists + 1))
            done
            wait $first; a=$?; wait $second; b=$?
            cat /tmp/exclusion-import-0.$$ /tmp/exclusion-import-1.$$ | grep -E "^(Imported|failed)"
            rm -f /tmp/exclusion-import-0.$$ /tmp/exclusion-import-1.$$
            echo "statuses $a $b lists $lists"
            """#)
        #expect(runs.output.contains("statuses 0 0"), "\(runs.output)\(runs.errors)")
        let list = try await docs(["--store", s, "list"])
        let names = list.output.split(separator: "\n").map { String($0.split(separator: "\t")[0]) }
        #expect(names.count == 300)
        #expect(Set(names).count == 300)
        for name in ["p0-149.xml", "p1-0.xml", "p1-149.xml"] {
            #expect(try await docs(["--store", s, "show", name]).output.contains("title:"))
        }
        #expect(store.entries.allSatisfy { $0.hasPrefix("documents.sqlite") })
    }
}
#endif
