import Dispatch
import Exclusion
import ExclusionTestSupport
import Foundation
import Synchronization
import Testing

@testable import ExclusionTesting

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// A trap's report: the runtime's message is the trapping thread's own, whatever else the process
// writes to standard error meanwhile (Swift Testing runs tests in parallel), and the signal
// handler does nothing a signal handler may not: a thread that traps holding a lock can't hang it.

@Suite("ScheduleExplorer's report of a trap", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
struct TrapMessageTests {
    @Test(.enabled(if: TrapContainment.runtimeKeepsFatalErrorMessages))
    func theMessageIsTheTrappingThreadsOwnWhileOthersWriteFatalErrors() async throws {
        // Another thread of the process writes lines that read like a trap's, as a test that
        // traps beside this one would, all through the exploration.
        let stop = Atomic(false)
        let decoy = Thread {
            let line = "Fatal error: a decoy from another test\n"
            while !stop.load(ordering: .relaxed) {
                line.withCString { _ = write(2, $0, strlen($0)) }
                usleep(100)
            }
        }
        decoy.start()
        defer { stop.store(true, ordering: .relaxed) }
        // Ten times: a capture of standard error would take a decoy's line most times, not all.
        for _ in 0..<10 {
            let report = try await within(workloadPatience, "the exploration to end") {
                await ScheduleExplorer.explore(preemptionBound: 1, seed: 7) { threads in
                    let jobs = Exclusive(["send invoices"], label: "jobs")
                    for _ in 0..<2 {
                        threads.spawn {
                            guard jobs.access({ !$0.isEmpty }) else { return }
                            // `fatalError`: its message stays in a release build, where the
                            // standard library's preconditions trap without one.
                            _ = jobs.access { jobs in
                                if jobs.isEmpty { fatalError("the last job was taken twice") }
                                return jobs.removeFirst()
                            }
                        }
                    }
                }
            }
            let failure = try #require(report.failure, "\(report)")
            #expect(failure.kind == .crashed)
            #expect(
                failure.message.contains("Fatal error: the last job was taken twice"), "\(failure.message)")
            #expect(!failure.message.contains("decoy"), "\(failure.message)")
        }
    }

    @Test func theHandlerTakesNoLockTheTrappingThreadMayHold() async throws {
        let execution = ScheduledExecution(
            stepLimit: .seconds(10), outsideWaitLimit: .seconds(10), checksLockOrder: false)
        let entity = ScheduledEntity(number: 0, name: "thread 0")
        execution.lock.withLock { execution.entities = [entity] }
        // The trapping thread holds the execution's lock, as one that trapped in the explorer's
        // own code would: what its handler calls must return all the same. (If it doesn't, its
        // thread stands there holding the lock, and the wait gives up.)
        let told = try await onItsOwnThread(limit: patience) { () -> Bool in
            execution.lock.lock()
            execution.trapped(entity, signal: SIGILL)
            execution.lock.unlock()
            // The coordinator is told.
            return execution.coordinator.wait(timeout: .now()) == .success
        }
        #expect(told)
        execution.takeTrapIn()
        guard case .crashed(entity: 0, signal: SIGILL, _) = execution.stopped else {
            Issue.record("the trap wasn't taken in: \(String(describing: execution.stopped))")
            return
        }
    }
}
