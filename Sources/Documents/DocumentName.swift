/// Checks that `name` is a plain file name that stays inside the store's folder.
///
/// Names are not paths: a valid name has no `/`, isn't `.` or `..`, doesn't start with `.` (no
/// hidden files), isn't empty, is at most 255 UTF-8 bytes (the usual file-name limit), and has no
/// control character (NUL, tab, newline, escape, DEL, C1 controls), so no name can forge a line or
/// a column of the `docs` tool's output, or move a terminal's cursor.
func validateDocumentName(_ name: String) throws(DocumentError) {
    let bytes = name.utf8
    guard !bytes.isEmpty, bytes.count <= 255, bytes.first != UInt8(ascii: "."),
        !bytes.contains(UInt8(ascii: "/")),
        !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
    else { throw .invalidName(name) }
}
