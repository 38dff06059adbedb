import Documents
import ExclusionTestSupport
import Foundation
import PropertyBased
import Testing

/// Document names fuzzed from the characters that matter to paths. A name is refused as
/// `invalidName` exactly when it would not name one file directly inside the store: checked
/// against an independent reading that resolves the name as a path.
@Suite("Document name properties", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
struct DocumentNamePropertyTests {
    /// Short names over path-significant characters, and names around the 255-byte limit.
    static let names = {
        let pieces = ["a", "b", ".", ".", "/", "/", "\0", "é", " ", "\\", "~", ".txt", ".."]
        let short = Gen.int(in: 0...(pieces.count - 1)).map { pieces[$0] }.array(of: 0...8).map { $0.joined() }
        let long = zip(Gen.int(in: 250...258), Gen.bool).map { count, multiByte in
            String(repeating: multiByte ? "é" : "a", count: multiByte ? count / 2 : count)
        }
        return Gen<String>.frequency((weight: 9, gen: short), (weight: 1, gen: long))
    }()

    @Test func theValidatorAcceptsExactlyTheNamesThatStayInsideTheStore() async {
        await propertyCheck(count: 3_000, input: Self.names) { name in
            let refused = await Self.isRefusedAsInvalid(name)
            #expect(refused == !Self.namesOneFileInsideTheStore(name), "\(name.debugDescription)")
        }
    }

    @Test func theCheckCatchesAValidatorThatLetsSlashesThrough() async {
        // The same property against a validator that forgets "/": it must fail.
        await withKnownIssue("a validator that accepts slashes") {
            await propertyCheck(count: 3_000, input: Self.names) { name in
                let lenient = await Self.isRefusedAsInvalid(name.replacingOccurrences(of: "/", with: "x"))
                #expect(lenient == !Self.namesOneFileInsideTheStore(name), "\(name.debugDescription)")
            }
        }
    }

    /// Saving under `name` in memory fails with `invalidName`. Anything else (saved, or refused
    /// for its format) means the name itself was accepted.
    static func isRefusedAsInvalid(_ name: String) async -> Bool {
        do {
            _ = try await DocumentManager().save(Data("words".utf8), as: name)
            return false
        } catch {
            if case .invalidName = error { return true }
            return false
        }
    }

    /// The reference: resolve the name against a store folder as a path. It must come out as one
    /// entry directly inside the folder, spelled exactly as given, within the file system's 255
    /// bytes, with no NUL (which would end the path early). Hidden names would stay inside but
    /// are reserved for the store's own files.
    static func namesOneFileInsideTheStore(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 255, !name.utf8.contains(0), !name.hasPrefix(".") else {
            return false
        }
        let store = URL(fileURLWithPath: "/store", isDirectory: true)
        let resolved = store.appendingPathComponent(name).standardizedFileURL
        return resolved.deletingLastPathComponent().path == store.path && resolved.lastPathComponent == name
    }
}
