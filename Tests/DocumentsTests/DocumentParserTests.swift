import Foundation
import Testing

@testable import Documents

/// The parsers on inputs that must be accepted and inputs that must be refused: every input gives
/// a DocumentInfo or `.malformed`, never a crash.
@Suite("Document parsers", .timeLimit(.minutes(10)))
struct DocumentParserTests {
    private func parse(_ text: String, as name: String) throws(DocumentError) -> DocumentInfo {
        try DocumentParser.parse(Data(text.utf8), name: name)
    }

    private func isMalformed(_ text: String, as name: String) -> Bool {
        do {
            _ = try parse(text, as: name)
            return false
        } catch {
            if case .malformed = error { return true }
            return false
        }
    }

    // MARK: - XML

    @Test func xmlWithAnInternalSubsetAndItsEntities() throws {
        let info = try parse(
            """
            <?xml version="1.0"?>
            <!DOCTYPE doc [<!ATTLIST doc a1 CDATA #IMPLIED><!ENTITY who "Ada Lovelace">]>
            <doc a1="v1"><title>Notes of &who;</title><p>by &who; &amp; friends</p></doc>
            """, as: "a.xml")
        #expect(info.title == "Notes of Ada Lovelace")
        #expect(info.wordCount == 9)
    }

    @Test(arguments: [
        "<doc></doc>junk", "<doc></doc><doc></doc>", "<doc><p>cut short", "<doc>", "", "   ", "just text",
        "<a><b></a></b>", "<doc a='1' a='2'/>", "<?xml version='1.0'?>", "<doc>&undeclared;</doc>",
        "<!DOCTYPE doc [<!ENTITY e \"<open>\">]><doc>&e;</doc>",
    ])
    func malformedXMLIsRefused(text: String) {
        #expect(isMalformed(text, as: "x.xml"), "\(text.debugDescription)")
    }

    @Test func anExternalEntityIsNeverRead() throws {
        let folder = TemporaryFolder("xxe")
        defer { folder.remove() }
        let secret = folder.file("secret.txt", "SECRETWORD")
        for document in [
            "<!DOCTYPE doc [<!ENTITY x SYSTEM \"\(secret.absoluteString)\">]><doc>&x;</doc>",
            "<!DOCTYPE doc [<!ENTITY x SYSTEM \"\(secret.path)\">]><doc><title>&x;</title></doc>",
            "<!DOCTYPE doc [<!ENTITY % p SYSTEM \"\(secret.path)\"> %p;]><doc/>",
            "<!DOCTYPE doc SYSTEM \"\(secret.path)\"><doc>plain</doc>",
            "<!DOCTYPE doc [<!ENTITY x SYSTEM \"http://127.0.0.1:9/x\">]><doc>&x;</doc>",
        ] {
            do {
                let info = try parse(document, as: "x.xml")
                #expect(info.title != "SECRETWORD" && info.wordCount <= 1, "\(document)")
            } catch {
                guard case .malformed = error else {
                    Issue.record("\(document): \(error)")
                    continue
                }
            }
        }
    }

    @Test func anEntityExpansionBombIsRefused() {
        var entities = "<!ENTITY a0 \"lol lol lol lol lol lol lol lol lol lol\">"
        for level in 1...12 {
            let previous = String(repeating: "&a\(level - 1);", count: 10)
            entities += "<!ENTITY a\(level) \"\(previous)\">"
        }
        #expect(isMalformed("<!DOCTYPE doc [\(entities)]><doc>&a12;</doc>", as: "bomb.xml"))
    }

    @Test func deepNestingIsHandled() {
        let deep = String(repeating: "<a>", count: 100_000) + String(repeating: "</a>", count: 100_000)
        _ = try? parse(deep, as: "deep.xml")  // accepted or refused, but no crash
    }

    // MARK: - JSON

    @Test(arguments: [
        "[1,]", "{\"a\":1,}", "01", "[01]", "NaN", "[.5]", "[+1]", "{'a':1}", "\"\\x\"", "\"a\tb\"",
        "// c\n1", "1 2", "[1] x", "", " ", "[", "{\"a\"}", "{\"a\" 1}", "{1:2}", "[1e]", "[1.]", "-",
        "tru", "nul", "[true false]", "\"\\ud800\"", "\"\\udc00x\"", "\"\\u12\"", "{\"a\":1 \"b\":2}", "[,1]",
        "\"unterminated",
    ])
    func malformedJSONIsRefused(text: String) {
        #expect(isMalformed(text, as: "x.json"), "\(text.debugDescription)")
    }

    @Test(arguments: [
        "1", "-0", "[1e400]", "\"x\"", "[]", "{}", " [ ] ", "[1.5e-3, 2E+2, true, false, null]",
        "{\"a\":{\"b\":[{}]}}", "\"\\ud83d\\ude00\"", "\u{FEFF}[1]",
    ])
    func wellFormedJSONIsAccepted(text: String) throws {
        _ = try parse(text, as: "x.json")
    }

    @Test func jsonTitleAndWordsComeFromStringValues() throws {
        let info = try parse(#"{"title": "T\u00e9a", "body": ["x y", {"title": "inner", "n": 3}]}"#, as: "a.json")
        #expect(info.title == "Téa")
        #expect(info.wordCount == 4)
        #expect(try parse("[[[[\"deep\"]]]]", as: "d.json").wordCount == 1)
    }

    /// The inputs libFuzzer found worth keeping (Fuzz/corpus): each gives an info or `.malformed`.
    @Test func theFuzzCorpusParsesOrIsMalformed() throws {
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/corpus")
        let inputs = try FileManager.default.contentsOfDirectory(at: corpus, includingPropertiesForKeys: nil)
        #expect(inputs.count > 100)
        for input in inputs {
            let data = try Data(contentsOf: input)
            for name in ["fuzz.xml", "fuzz.json", "fuzz.txt"] {
                do {
                    _ = try DocumentParser.parse(data, name: name)
                } catch {
                    guard case .malformed = error else {
                        Issue.record("\(input.lastPathComponent) as \(name): \(error)")
                        continue
                    }
                }
            }
        }
    }

    @Test func veryDeepJSONDoesNotOverflowTheStack() throws {
        let deep = String(repeating: "[", count: 1_000_000) + String(repeating: "]", count: 1_000_000)
        _ = try parse(deep, as: "deep.json")
        #expect(isMalformed(String(repeating: "[", count: 1_000_000), as: "open.json"))
    }
}
