import ExclusionTestSupport
import Foundation
import Testing

@testable import Documents

/// Which names are read as which format: XML under each of its usual names, in any case, and
/// nothing else.
@Suite("Document formats", .patientTimeLimit(minutes: 5))
struct DocumentFormatTests {
    /// XML's names as the documentation lists them, written out here so that a name dropped from
    /// the code fails a test.
    private static let xmlExtensions = [
        "xml", "xhtml", "xht", "svg", "xsl", "xslt", "xsd", "rss", "atom", "rdf", "opml", "gpx", "kml", "plist",
        "xlf", "xliff", "dbk",
    ]

    @Test func xmlHasTheNamesTheDocumentationLists() {
        #expect(DocumentFormat.xml.extensions == Self.xmlExtensions)
    }

    /// An extension in every casing a name can give it that matters: as listed, in capitals,
    /// capitalized, and with every other letter a capital, starting from the first and from the second.
    static func casings(of fileExtension: String) -> [String] {
        let alternating = { (start: Int) in
            String(
                fileExtension.enumerated().map {
                    $0.offset % 2 == start ? Character($0.element.uppercased()) : $0.element
                })
        }
        return [
            fileExtension, fileExtension.uppercased(), fileExtension.prefix(1).uppercased() + fileExtension.dropFirst(),
            alternating(0), alternating(1),
        ]
    }

    @Test(arguments: xmlExtensions)
    func everyXMLNameIsReadAsXMLInAnyCase(fileExtension: String) throws {
        let document = Data("<doc><title>Plan</title>one two</doc>".utf8)
        let names =
            Self.casings(of: fileExtension).flatMap { ["plan.\($0)", "PLAN.\($0)"] } + ["p.l.a.n.\(fileExtension)"]
        for name in names {
            let info = try DocumentInfo(parsing: document, name: name)
            #expect(info.format == .xml, "\(name)")
            #expect(info.title == "Plan", "\(name)")
            #expect(info.wordCount == 3, "\(name)")
        }
    }

    @Test func theOtherFormatsKeepTheirNamesInAnyCase() throws {
        for format in [DocumentFormat.json, .text] {
            for fileExtension in format.extensions {
                for casing in Self.casings(of: fileExtension) {
                    #expect(try DocumentFormat(forName: "a.\(casing)") == format, "a.\(casing)")
                }
            }
        }
    }

    @Test(arguments: [
        "photo.jpg", "logo.svgz", "places.kmz", "page.html", "page.xhtml~", "noextension", "xml", "trailing.",
        "a.xml.gz",
    ])
    func otherNamesAreRefused(name: String) {
        #expect(throws: DocumentError.unsupportedFormat(name)) { try DocumentFormat(forName: name) }
    }

    @Test func theRefusalListsWhatIsAccepted() {
        let message = DocumentError.unsupportedFormat("photo.jpg").description
        for format in DocumentFormat.allCases {
            #expect(message.contains("\(format.displayName): "), "\(message)")
            for fileExtension in format.extensions {
                #expect(
                    message.contains(".\(fileExtension) ") || message.contains(".\(fileExtension);")
                        || message.contains(".\(fileExtension))"), "\(fileExtension): \(message)")
            }
        }
        #expect(message.hasPrefix("photo.jpg: unsupported format (use XML: .xml .xhtml"), "\(message)")
    }

    @Test func eachExtensionBelongsToOneFormat() {
        let all = DocumentFormat.allCases.flatMap(\.extensions)
        #expect(Set(all).count == all.count)
        #expect(all.allSatisfy { $0 == $0.lowercased() && !$0.contains(".") })
    }

    // MARK: - Real documents under their own names

    /// An XHTML page as Debian's documentation ships them: the Strict DOCTYPE, its system identifier
    /// on w3.org (never fetched: the entities are built in), and HTML entities.
    @Test func anXHTMLPageWithItsDoctypeImportsUnderItsOwnName() async throws {
        let page = Data(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">
            <html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en" lang="en">
            <head><meta http-equiv="Content-Type" content="text/html; charset=UTF-8" /><title>R&eacute;sum&eacute;</title></head>
            <body><h1>Release notes</h1><p>One&nbsp;&mdash; two<br />three</p></body>
            </html>
            """.utf8)
        let manager = DocumentManager()
        for name in ["notes.xhtml", "NOTES.XHTML", "notes.xht"] {
            let info = try await manager.save(page, as: name)
            #expect(info.format == .xml)
            #expect(info.title == "Résumé")
            #expect(info.wordCount == 7)  // Résumé Release notes One — two three
        }
        #expect(manager.allDocs == ["notes.xhtml", "NOTES.XHTML", "notes.xht"])
    }

    /// The system identifier of a well-known DTD is never read, not even a file next door: were it
    /// read, its entity would count a word.
    @Test func theXHTMLDoctypesSystemIdentifierIsNeverRead() throws {
        let folder = TemporaryFolder("xhtml-dtd")
        defer { folder.remove() }
        let dtd = folder.file("xhtml1-strict.dtd", "<!ENTITY secret \"SECRETWORD\">")
        for systemID in [dtd.absoluteString, dtd.path] {
            let info = try DocumentInfo(
                parsing: Data(
                    """
                    <!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "\(systemID)">
                    <html><title>Page</title><p>&secret;&eacute;</p></html>
                    """.utf8), name: "page.xhtml")
            #expect(info.title == "Page")
            #expect(info.wordCount == 2, "\(systemID)")  // Page é: the secret is left out
        }
    }

    @Test func anXMLPropertyListImportsAndABinaryOneIsRefusedAsBinary() throws {
        let list: [String: Any] = ["title": "Settings", "names": ["alpha", "beta"]]
        let xml = try PropertyListSerialization.data(fromPropertyList: list, format: .xml, options: 0)
        #expect(String(decoding: xml, as: UTF8.self).contains("<!DOCTYPE plist"))
        let info = try DocumentInfo(parsing: xml, name: "Settings.plist")
        #expect(info.format == .xml)
        #expect(info.wordCount == 5)  // names alpha beta title Settings

        let binary = try PropertyListSerialization.data(fromPropertyList: list, format: .binary, options: 0)
        #expect(binary.starts(with: "bplist".utf8))
        for casing in Self.casings(of: "plist") {
            let error = try #require(throws: DocumentError.self) {
                try DocumentInfo(parsing: binary, name: "Settings.\(casing)")
            }
            guard case .malformed(let name, let reason) = error else {
                Issue.record("not malformed: \(error)")
                continue
            }
            #expect(name == "Settings.\(casing)")
            #expect(reason.hasPrefix("a binary property list, not XML"), "\(casing): \(reason)")
        }
    }

    @Test func theDocumentationExampleRunsAsWritten() throws {
        let info = try DocumentInfo(parsing: Data("<svg><title>Logo</title></svg>".utf8), name: "logo.SVG")
        #expect("\(info.format) \(info.title ?? "")" == "xml Logo")
    }
}
