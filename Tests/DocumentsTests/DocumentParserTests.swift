import ExclusionTestSupport
import Foundation
import Testing

@testable import Documents

/// The parsers on inputs that must be accepted and inputs that must be refused: every input gives
/// a DocumentInfo or `.malformed`, never a crash.
@Suite("Document parsers", .patientTimeLimit(minutes: 10))
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
        // Undeclared entities stay errors without an external subset or parameter entity reference,
        // and in a standalone document even with one (XML 1.0, WFC: Entity Declared).
        "<!DOCTYPE doc [<!ENTITY a \"b\">]><doc>&a;&c;</doc>",
        "<?xml version='1.0' standalone='yes'?><!DOCTYPE doc SYSTEM 'doc.dtd'><doc>&c;</doc>",
        "<?xml version='1.0' standalone='yes'?><!DOCTYPE html PUBLIC '-//W3C//DTD XHTML 1.0 Strict//EN' "
            + "'xhtml1-strict.dtd'><html>&eacute;</html>",
        "<doc xmlns:a='urn:a' a:x='1' a:x='2'/>",
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

    @Test func xhtmlWithItsUsualDoctypeHasTheHTMLEntities() throws {
        let info = try parse(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">
            <html xmlns="http://www.w3.org/1999/xhtml"><head><title>Caf&eacute; menu</title></head>
            <body><p>Tea&nbsp;&mdash; &euro;3 &hearts;</p></body></html>
            """, as: "menu.xhtml")
        #expect(info.title == "Café menu")
        #expect(info.wordCount == 6)  // Café menu Tea — €3 ♥ (the no-break space joins "Tea" and nothing)
    }

    @Test(arguments: [
        "-//W3C//DTD XHTML 1.0 Transitional//EN", "-//W3C//DTD XHTML 1.0 Frameset//EN", "-//W3C//DTD XHTML 1.1//EN",
        "-//W3C//DTD XHTML Basic 1.1//EN", "-//W3C//DTD HTML 4.01//EN",
    ])
    func everyKnownPublicIDHasTheHTMLEntities(publicID: String) throws {
        let info = try parse(
            "<!DOCTYPE html PUBLIC \"\(publicID)\" \"x.dtd\"><html><title>&Auml;&szlig;&rarr;&lang;</title></html>",
            as: "x.xml")
        #expect(info.title == "Äß→〈")
    }

    @Test func anEntityOnlyAnUnreadDTDDeclaresIsLeftOut() throws {
        // DocBook's entity sets aren't built in: its DTD is never read, so `&mdash;` is skipped.
        let info = try parse(
            """
            <?xml version="1.0"?>
            <!DOCTYPE book PUBLIC "-//OASIS//DTD DocBook XML V4.5//EN"
              "http://www.oasis-open.org/docbook/xml/4.5/docbookx.dtd">
            <book><title>Before &mdash; after</title><para>text</para></book>
            """, as: "book.xml")
        #expect(info.title == "Before  after")
        #expect(info.wordCount == 3)
        // A document that names a DTD by its system identifier alone is the same.
        #expect(try parse("<!DOCTYPE doc SYSTEM \"doc.dtd\"><doc>a &b; c</doc>", as: "x.xml").wordCount == 2)
    }

    @Test func anExternalParameterEntityIsNeverReadAndItsEntitiesAreLeftOut() throws {
        let info = try parse(
            "<!DOCTYPE doc [<!ENTITY % chapters SYSTEM \"chapters.ent\"> %chapters; <!ENTITY me \"Ada\">]>"
                + "<doc><title>&me; and &you;</title></doc>", as: "x.xml")
        #expect(info.title == "Ada and")
    }

    @Test(arguments: [
        "<a:doc>an undeclared prefix</a:doc>", "<doc :='1'>an attribute named a colon</doc>",
        "<doc xmlns:a='urn:x' xmlns:b='urn:x' a:x='1' b:x='2'>one expanded name twice</doc>",
        "<doc xmlns:a=''>a prefix bound to nothing</doc>", "<x:y:z>two colons</x:y:z>",
    ])
    func namespaceErrorsAreNotMalformed(text: String) throws {
        #expect(try parse(text, as: "x.xml").wordCount >= 2)
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

    @Test func jsonStringsHoldAnyScalarUnescaped() throws {
        // Raw UTF-8 in long strings: bytes such as 0x80 (inside 😀) are no control characters,
        // wherever they fall in the reader's eight-byte steps.
        let text = #"{"title": "😀 Ĥéllo wörld 中文 €", "body": ["\#u{85}😀😀😀😀 x\#u{A0}y\#u{3000}z", "a\"😀\\b"]}"#
        let info = try parse(text, as: "u.json")
        #expect(info.title == "😀 Ĥéllo wörld 中文 €")
        #expect(info.wordCount == 5 + 4 + 1)
        #expect(isMalformed("[\"😀😀😀\u{01}\"]", as: "c.json"))
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
