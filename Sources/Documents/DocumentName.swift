/// Checks that `name` is a plain file name that stays inside the store's folder.
///
/// Names are not paths: a valid name has no `/`, no NUL, isn't `.` or `..`, doesn't start with
/// `.` (no hidden files, and no way to reach the store's own bookkeeping files), isn't empty, and
/// is at most 255 UTF-8 bytes (the usual file-name limit).
func validateDocumentName(_ name: String) throws(DocumentError) {
    let bytes = name.utf8
    guard !bytes.isEmpty, bytes.count <= 255, bytes.first != UInt8(ascii: "."),
        !bytes.contains(UInt8(ascii: "/")), !bytes.contains(0)
    else { throw .invalidName(name) }
}
