// Each test kills a process of its own: only where a test can start one.
#if CHILD_PROCESSES
import Documents
import ExclusionTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the crashing child process keeps its store; the parent looks at it afterwards. Only this
/// suite uses it, one test at a time.
private let crashStore = FileManager.default.temporaryDirectory.appendingPathComponent("exclusion-crash-store")

/// Saves and removes documents as fast as it can until a timer kills the process with SIGKILL,
/// which no code can catch or clean up after: mid-transaction, mid-commit or between them.
private func saveUntilKilled() async {
    let manager = try! DocumentManager(directory: crashStore)
    var round = 0
    while true {
        round += 1
        if round == 2 {
            // Armed after the first save, so every round leaves something to check, however slow
            // the machine; the kill then lands at a random moment of the saves that follow.
            let delay = UInt32.random(in: 1_000...50_000)
            Thread {
                usleep(delay)
                kill(getpid(), SIGKILL)
            }.start()
        }
        let size = Int.random(in: 1...20_000)
        let words = (0..<size).map { "w\($0 % 97)" }.joined(separator: " ")
        _ = try? await manager.save(
            Data("<doc><title>r\(round)</title>\(words)</doc>".utf8), as: "doc-\(round % 7).xml")
        if round % 5 == 0 { try? await manager.remove("doc-\((round + 3) % 7).xml") }
    }
}

@Suite("Crash safety", .serialized, .patientTimeLimit(minutes: 10))
struct CrashSafetyTests {
    @Test(arguments: 0..<4)
    func aStoreKilledAtAnyMomentReopensWithWholeDocuments(round: Int) async throws {
        if round == 0 { try? FileManager.default.removeItem(at: crashStore) }
        await offTheSharedPool {
            await #expect(processExitsWith: .signal(SIGKILL)) {
                stopIfStuck()
                await saveUntilKilled()
            }
        }
        let reopened = try DocumentManager(directory: crashStore)
        for name in reopened.allDocs {
            let info = try #require(reopened.info(for: name))
            let data = try await reopened.contents(of: name)
            #expect(data.count == info.byteCount, "\(name) is not whole")
            #expect(String(decoding: data, as: UTF8.self).hasSuffix("</doc>"), "\(name) is cut short")
        }
        // Only the database and SQLite's files beside it.
        let files = try FileManager.default.contentsOfDirectory(atPath: crashStore.path)
        #expect(files.allSatisfy { $0.hasPrefix("documents.sqlite") }, "\(files)")
        if round == 3 { #expect(!reopened.allDocs.isEmpty, "the child never got to save anything") }
    }
}
#endif
