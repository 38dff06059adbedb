import Foundation

/// Hears how an import goes, on the delivery queue given to
/// ``DocumentManager/importDocuments(at:deliverOn:delegate:)``.
public protocol DocumentImportDelegate: AnyObject, Sendable {
    func documentManager(_ manager: DocumentManager, didImport info: DocumentInfo)
    func documentManager(_ manager: DocumentManager, didFailToImport url: URL, error: DocumentError)
    /// Called exactly once, after every file was imported, failed or was cancelled.
    func documentManager(_ manager: DocumentManager, didFinishImport summary: ImportSummary)
}
