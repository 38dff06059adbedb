import Dispatch
import Exclusion
import ExclusionTestSupport
import Foundation
import Testing

// Every re-entrant shape must stop the process with a message that names the instance and the fix,
// never hang. Each such test runs the mistake in a child process and reads its standard error, so it
// runs only where a test can start one; what is allowed (async work started inside) runs everywhere.

struct Ledger: Sendable {
    var balance = 0
}

private func startTaskInsideAccess(_ ledger: Exclusive<Ledger>) -> Task<Int, Never> {
    ledger.access { state in
        state.balance = 1
        return Task { await ledger.access { $0.balance } }
    }
}

private func submitInsideAccess(_ ledger: Exclusive<Ledger>) {
    ledger.access { _ in ledger.accessAsync { $0.balance += 1 } }
}

private func startTaskInsideWrite(_ index: ReadersWriter<[String]>) -> Task<Int, Never> {
    index.write { state in
        state.append("a")
        return Task { await index.read { $0.count } }
    }
}

@Suite("Re-entrancy", .serialized, .patientTimeLimit(minutes: 10))
struct ReentrancyTests {
    @Test func awaitedAccessFromATaskStartedInsideIsNotReentrant() async {
        // Starting async work from inside an access is allowed: it runs after the access.
        let ledger = Exclusive(Ledger())
        #expect(await startTaskInsideAccess(ledger).value == 1)
        submitInsideAccess(ledger)
        #expect(await ledger.access { $0.balance } == 2)
    }

    @Test func awaitedReadStartedInsideAWriteRunsAfterIt() async {
        // A synchronous body can't await; a task it starts awaits its own turn after the write.
        #expect(await startTaskInsideWrite(ReadersWriter([String]())).value == 1)
    }
}

#if CHILD_PROCESSES
// The mistakes, as a synchronous caller makes them (in async code the accessors await instead).

private func accessInAccess() {
    let ledger = Exclusive(Ledger(), label: "bank ledger")
    ledger.access { _ in ledger.access { $0.balance += 1 } }
}

private func accessInAccessAsync() {
    let ledger = Exclusive(Ledger(), label: "bank ledger")
    ledger.accessAsync { _ in ledger.access { $0.balance += 1 } }
}

private func accessInAccessAsyncWithCompletion() {
    let ledger = Exclusive(Ledger(), label: "bank ledger")
    ledger.accessAsync(deliverOn: .global(), { _ in ledger.access { $0.balance } }) { _ in }
}

private func writeInRead() {
    let index = ReadersWriter([String](), label: "document index")
    index.read { _ in index.write { $0.append("x") } }
}

private func readInWrite() {
    let index = ReadersWriter([String](), label: "document index")
    index.write { _ in _ = index.read { $0.count } }
}

private func readInRead() {
    let index = ReadersWriter([String](), label: "document index")
    index.read { _ in _ = index.read { $0.count } }
}

private func writeInWrite() {
    let index = ReadersWriter([String](), label: "document index")
    index.write { _ in index.write { $0.append("x") } }
}

private func readInWriteAsync() {
    let index = ReadersWriter([String](), label: "document index")
    index.writeAsync { _ in _ = index.read { $0.count } }
}

private func writeInReadAsync() {
    let index = ReadersWriter([String](), label: "document index")
    index.readAsync(deliverOn: .global(), { _ in index.write { $0.append("x") } }) { _ in }
}

private func expectReentrancyMessage(
    _ result: ExitTest.Result?, type: String, label: String, attempted: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let result else {
        Issue.record("the child process did not run", sourceLocation: sourceLocation)
        return
    }
    let message = String(decoding: result.standardErrorContent, as: UTF8.self)
    for part in ["re-entrant access", type, "\"\(label)\"", attempted, "use the state passed to your closure"] {
        #expect(message.contains(part), "stderr lacks \(part): \(message)", sourceLocation: sourceLocation)
    }
}

extension ReentrancyTests {
    @Test func accessInsideAccess() async {
        let result = await offTheSharedPool {
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                stopIfStuck()
                accessInAccess()
            }
        }
        expectReentrancyMessage(result, type: "Exclusive<Ledger>", label: "bank ledger", attempted: "access")
    }

    @Test func accessInsideAnAsyncAccessBody() async {
        let result = await offTheSharedPool {
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                stopIfStuck()
                accessInAccessAsync()
                try await Task.sleep(for: .seconds(120))  // the access stops the process long before
            }
        }
        expectReentrancyMessage(result, type: "Exclusive<Ledger>", label: "bank ledger", attempted: "access")
    }

    @Test func accessInsideAnAsyncAccessWithCompletion() async {
        let result = await offTheSharedPool {
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                stopIfStuck()
                accessInAccessAsyncWithCompletion()
                try await Task.sleep(for: .seconds(120))  // the access stops the process long before
            }
        }
        expectReentrancyMessage(result, type: "Exclusive<Ledger>", label: "bank ledger", attempted: "access")
    }

    @Test func writeInsideRead() async {
        let result = await offTheSharedPool {
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                stopIfStuck()
                writeInRead()
            }
        }
        expectReentrancyMessage(
            result, type: "ReadersWriter<Array<String>>", label: "document index", attempted: "write")
    }

    @Test func readInsideWrite() async {
        let result = await offTheSharedPool {
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                stopIfStuck()
                readInWrite()
            }
        }
        expectReentrancyMessage(
            result, type: "ReadersWriter<Array<String>>", label: "document index", attempted: "read")
    }

    @Test func readInsideRead() async {
        let result = await offTheSharedPool {
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                stopIfStuck()
                readInRead()
            }
        }
        expectReentrancyMessage(
            result, type: "ReadersWriter<Array<String>>", label: "document index", attempted: "read")
    }

    @Test func writeInsideWrite() async {
        let result = await offTheSharedPool {
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                stopIfStuck()
                writeInWrite()
            }
        }
        expectReentrancyMessage(
            result, type: "ReadersWriter<Array<String>>", label: "document index", attempted: "write")
    }

    @Test func readInsideAnAsyncWriteBody() async {
        let result = await offTheSharedPool {
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                stopIfStuck()
                readInWriteAsync()
                try await Task.sleep(for: .seconds(120))  // the access stops the process long before
            }
        }
        expectReentrancyMessage(
            result, type: "ReadersWriter<Array<String>>", label: "document index", attempted: "read")
    }

    @Test func writeInsideAnAsyncReadBody() async {
        let result = await offTheSharedPool {
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                stopIfStuck()
                writeInReadAsync()
                try await Task.sleep(for: .seconds(120))  // the access stops the process long before
            }
        }
        expectReentrancyMessage(
            result, type: "ReadersWriter<Array<String>>", label: "document index", attempted: "write")
    }
}
#endif
