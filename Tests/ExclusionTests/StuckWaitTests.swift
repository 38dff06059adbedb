// Each test runs in a process of its own and reads what it printed: only where a test can start one.
#if CHILD_PROCESSES
import Dispatch
import Exclusion
import ExclusionTestSupport
import Foundation
import Testing

// A blocking wait that lasts past the threshold says so, once, on standard error: where it waits,
// on which instance, and where the access holding it entered. Each case runs in a child process
// with the threshold at 0.2 s.

private func watchWaits(after seconds: String = "0.2") {
    setenv("EXCLUSION_STUCK_WAIT_SECONDS", seconds, 1)
}

/// A thread takes `ledger` and never lets go; another blocks on it. The child ends after a second
/// (the report is due after 0.2 s), with the waiter still blocked.
private func blockOnAHeldInstance() {
    let ledger = Exclusive(0, label: "stuck ledger")
    let holding = DispatchSemaphore(value: 0)
    Thread {
        ledger.access { _ in  // LOCK HOLDER
            holding.signal()
            DispatchSemaphore(value: 0).wait()  // for ever
        }
    }.start()
    holding.wait()
    Thread { ledger.access { $0 += 1 } }.start()  // LOCK WAITER
    _ = DispatchSemaphore(value: 0).wait(timeout: .now() + 1)
    exit(0)
}

/// A condition nothing makes true: reported after 0.2 s, timed out after 1 s.
private func waitForAConditionNothingMakesTrue() {
    let jobs = Exclusive([String](), label: "stuck jobs")
    jobs.access { $0.removeAll() }  // LAST HOLDER
    do {
        _ = try jobs.access(when: { !$0.isEmpty }, timeout: .seconds(1)) { $0.removeFirst() }  // CONDITION WAITER
        exit(1)
    } catch {
        exit(error is TimeoutError ? 0 : 1)
    }
}

/// Where `marker` sits in this file, as `StuckWaitTests.swift:LINE`.
private func location(of marker: String) throws -> String {
    let source = try String(contentsOfFile: #filePath, encoding: .utf8)
    let lines = source.components(separatedBy: "\n")
    let index = try #require(lines.firstIndex { $0.contains("// \(marker)") && !$0.contains("location(of") })
    return "StuckWaitTests.swift:\(index + 1)"
}

private func expectReport(
    _ result: ExitTest.Result?, label: String, waiting: String, waiter: String, holder: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let result else {
        Issue.record("the child process did not run", sourceLocation: sourceLocation)
        return
    }
    let message = String(decoding: result.standardErrorContent, as: UTF8.self)
    for part in [
        "Exclusion: a thread has waited", waiting, "\"\(label)\"", waiter, holder, "EXCLUSION_STUCK_WAIT_SECONDS",
    ] {
        #expect(message.contains(part), "stderr lacks \(part): \(message)", sourceLocation: sourceLocation)
    }
    #expect(message.components(separatedBy: "has waited").count == 2, "reported more than once: \(message)")
}

@Suite("Stuck waits", .serialized, .patientTimeLimit(minutes: 10))
struct StuckWaitTests {
    @Test func aThreadBlockedOnAHeldInstanceIsReportedOnce() async throws {
        let result = await offTheSharedPool {
            await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
                stopIfStuck()
                watchWaits()
                blockOnAHeldInstance()
            }
        }
        expectReport(
            result, label: "stuck ledger", waiting: "to take Exclusive<Int>", waiter: try location(of: "LOCK WAITER"),
            holder: try location(of: "LOCK HOLDER"))
    }

    @Test func aConditionThatNeverHoldsIsReportedOnceBeforeItTimesOut() async throws {
        let result = await offTheSharedPool {
            await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
                stopIfStuck()
                watchWaits()
                waitForAConditionNothingMakesTrue()
            }
        }
        expectReport(
            result, label: "stuck jobs", waiting: "for its condition to hold, on Exclusive<Array<String>>",
            waiter: try location(of: "CONDITION WAITER"), holder: try location(of: "LAST HOLDER"))
    }

    @Test func zeroTurnsTheReportOff() async {
        let result = await offTheSharedPool {
            await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
                stopIfStuck()
                watchWaits(after: "0")
                waitForAConditionNothingMakesTrue()
            }
        }
        #expect(result.map { String(decoding: $0.standardErrorContent, as: UTF8.self).contains("has waited") } == false)
    }
}
#endif
