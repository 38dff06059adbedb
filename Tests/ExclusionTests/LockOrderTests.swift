// Each test runs in a process of its own, which the check stops: only where a test can start one.
#if CHILD_PROCESSES
import Dispatch
import Exclusion
import ExclusionTestSupport
import Foundation
import Testing

// Two instances nested in both orders can deadlock two threads; the lock-order check stops the
// process the first time it sees the second order, even when this run didn't deadlock. Each
// mistake runs in a child process. The children turn the check on explicitly, so the tests also
// hold in release builds, where it is off by default.

private func turnLockOrderCheck(on: Bool) {
    setenv("EXCLUSION_LOCK_ORDER", on ? "1" : "0", 1)
}

/// Runs `body` on a thread of its own and waits for it: nestings seen on other threads count too.
private func onAnotherThread(_ body: @escaping @Sendable () -> Void) {
    let done = DispatchSemaphore(value: 0)
    Thread {
        body()
        done.signal()
    }.start()
    done.wait()
}

private func nestInBothOrders() {
    let checking = Exclusive(0, label: "checking")
    let savings = Exclusive(0, label: "savings")
    onAnotherThread {
        checking.access { _ in savings.access { $0 += 1 } }
    }
    savings.access { _ in checking.access { $0 += 1 } }
}

private func closeACycleOfThree() {
    let ledger = Exclusive(0, label: "ledger")
    let audit = Exclusive([String](), label: "audit log")
    let index = ReadersWriter([String](), label: "document index")
    onAnotherThread { ledger.access { _ in audit.access { $0.append("a") } } }
    onAnotherThread { audit.access { _ in index.write { $0.append("b") } } }
    _ = index.read { _ in ledger.access { $0 } }
}

private func nestAReadInsideAnAccessBothWays() {
    let ledger = Exclusive(0, label: "ledger")
    let index = ReadersWriter([String](), label: "document index")
    _ = index.read { _ in ledger.access { $0 } }
    ledger.access { _ in index.write { $0.append("x") } }
}

private func waitForAConditionInsideAnotherBothWays() {
    let queue = Exclusive([Int](), label: "queue")
    let statistics = Exclusive(0, label: "statistics")
    onAnotherThread { queue.access { _ in statistics.access { $0 += 1 } } }
    statistics.access { _ in _ = try? queue.access(when: { _ in true }) { $0.count } }
}

private func expectInversionMessage(
    _ result: ExitTest.Result?, naming labels: [String], sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let result else {
        Issue.record("the child process did not run", sourceLocation: sourceLocation)
        return
    }
    let message = String(decoding: result.standardErrorContent, as: UTF8.self)
    let expected = ["lock-order inversion", "first seen at", "take them in one order everywhere"]
    for part in expected + labels.map({ "\"\($0)\"" }) {
        #expect(message.contains(part), "stderr lacks \(part): \(message)", sourceLocation: sourceLocation)
    }
    // Both orders, each with where it happened.
    let locations = message.components(separatedBy: "LockOrderTests.swift:").count - 1
    #expect(locations >= labels.count, "stderr lacks the locations: \(message)", sourceLocation: sourceLocation)
}

@Suite("Lock order", .serialized, .patientTimeLimit(minutes: 10))
struct LockOrderTests {
    @Test func twoInstancesNestedInBothOrdersStopTheProcess() async {
        let result = await offTheSharedPool {
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                stopIfStuck()
                turnLockOrderCheck(on: true)
                nestInBothOrders()
            }
        }
        expectInversionMessage(result, naming: ["checking", "savings"])
    }

    @Test func aCycleThroughThreeInstancesStopsTheProcess() async {
        let result = await offTheSharedPool {
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                stopIfStuck()
                turnLockOrderCheck(on: true)
                closeACycleOfThree()
            }
        }
        expectInversionMessage(result, naming: ["ledger", "audit log", "document index"])
    }

    @Test func readsCountAsWellAsWrites() async {
        // A read waits behind a waiting writer, so it can be part of a deadlock too.
        let result = await offTheSharedPool {
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                stopIfStuck()
                turnLockOrderCheck(on: true)
                nestAReadInsideAnAccessBothWays()
            }
        }
        expectInversionMessage(result, naming: ["ledger", "document index"])
    }

    @Test func waitingForAConditionCountsAsNesting() async {
        let result = await offTheSharedPool {
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                stopIfStuck()
                turnLockOrderCheck(on: true)
                waitForAConditionInsideAnotherBothWays()
            }
        }
        expectInversionMessage(result, naming: ["queue", "statistics"])
    }

    @Test func theEnvironmentCanTurnTheCheckOff() async {
        await offTheSharedPool {
            await #expect(processExitsWith: .success) {
                stopIfStuck()
                turnLockOrderCheck(on: false)
                nestInBothOrders()
            }
        }
    }

    @Test func oneOrderFromManyThreadsIsFine() async {
        await offTheSharedPool {
            await #expect(processExitsWith: .success) {
                stopIfStuck()
                turnLockOrderCheck(on: true)
                let outer = Exclusive(0, label: "outer")
                let inner = ReadersWriter(0, label: "inner")
                DispatchQueue.concurrentPerform(iterations: 4) { _ in
                    for _ in 0..<1_000 {
                        outer.access { _ in inner.write { $0 += 1 } }
                        _ = inner.read { $0 }  // alone, not nested: no order
                    }
                }
            }
        }
    }

    @Test func aFreedInstanceTakesItsOrderWithIt() async {
        // Freed instances' addresses are reused; orders recorded for the old ones must not
        // be held against the new ones.
        await offTheSharedPool {
            await #expect(processExitsWith: .success) {
                stopIfStuck()
                turnLockOrderCheck(on: true)
                for round in 0..<2_000 {
                    let first = Exclusive(0, label: "first")
                    let second = Exclusive(0, label: "second")
                    if round.isMultiple(of: 2) {
                        first.access { _ in second.access { $0 += 1 } }
                    } else {
                        second.access { _ in first.access { $0 += 1 } }
                    }
                }
            }
        }
    }
}
#endif
