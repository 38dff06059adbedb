import Foundation

/// The formats the document manager reads, chosen by a name's extension, whatever its case.
///
/// XML is kept under many names, and every one of ``DocumentFormat/xml``'s
/// ``DocumentFormat/extensions`` goes through the same XML 1.0 parser: what differs between an
/// `.svg`, a `.gpx` and an `.xhtml` page is their vocabulary, not their syntax. Compressed forms
/// (`.svgz`, `.kmz`) and binary property lists are not XML, and are refused.
///
/// ```swift
/// let info = try DocumentInfo(parsing: Data("<svg><title>Logo</title></svg>".utf8), name: "logo.SVG")
/// print(info.format, info.title ?? "")   // xml Logo
/// ```
public enum DocumentFormat: String, Sendable, Codable, CaseIterable {
    case xml, json, text

    /// The extensions read as this format, lowercase and without their dot.
    ///
    /// XML: plain `.xml`; web pages and graphics (`.xhtml`, `.xht`, `.svg`); stylesheets and schemas
    /// (`.xsl`, `.xslt`, `.xsd`); feeds and outlines (`.rss`, `.atom`, `.rdf`, `.opml`); places and
    /// tracks (`.gpx`, `.kml`); property lists (`.plist`); translations (`.xlf`, `.xliff`); and
    /// DocBook (`.dbk`).
    public var extensions: [String] {
        switch self {
        case .xml:
            [
                "xml", "xhtml", "xht", "svg", "xsl", "xslt", "xsd", "rss", "atom", "rdf", "opml", "gpx", "kml",
                "plist", "xlf", "xliff", "dbk",
            ]
        case .json: ["json"]
        case .text: ["txt", "md", "text"]
        }
    }

    /// How the tools name the format: `XML`, `JSON` or `text`.
    public var displayName: String {
        switch self {
        case .xml: "XML"
        case .json: "JSON"
        case .text: "text"
        }
    }

    /// The extension of `name`, after its last dot, as written; nil if it has no dot.
    public static func nameExtension(of name: String) -> Substring? {
        name.utf8.lastIndex(of: UInt8(ascii: ".")).map { name[name.index(after: $0)...] }
    }

    private static let byExtension: [String: DocumentFormat] = Dictionary(
        uniqueKeysWithValues: allCases.flatMap { format in format.extensions.map { ($0, format) } })

    /// The format for `name`'s extension, one of some format's ``extensions`` in any case.
    init(forName name: String) throws(DocumentError) {
        guard let format = Self.nameExtension(of: name).flatMap({ Self.byExtension[$0.lowercased()] }) else {
            throw .unsupportedFormat(name)
        }
        self = format
    }

    /// What a name must end with, as ``DocumentError/unsupportedFormat(_:)`` tells the user: each
    /// format and its extensions.
    static var accepted: String {
        allCases.map { "\($0.displayName): " + $0.extensions.map { ".\($0)" }.joined(separator: " ") }
            .joined(separator: "; ")
    }
}
