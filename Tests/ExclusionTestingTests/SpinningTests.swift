import Exclusion
import ExclusionTestSupport
import ExclusionTesting
import Testing

// Threads that spin on `...IfAvailable`: a try that gives up, or that polls again what it polled
// last, yields to the other threads, as a spinning thread does on a real machine. A spin that ends
// once another thread gets on passes; threads that only ever spin are a livelock, reported at once
// with their loops.

/// Explores `body` at `bound`, for at most a workload's patience.
private func explore(
    bound: Int = 2, _ body: @escaping @Sendable (ScheduleThreads) -> Void
) async throws -> ScheduleReport<AnyHistory.Input, AnyHistory.Output> {
    try await within(workloadPatience, "the exploration to end") {
        await ScheduleExplorer.explore(preemptionBound: bound, seed: 7, body)
    }
}

private struct Wrong: Error {}

@Suite("ScheduleExplorer and threads that spin", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
struct SpinningTests {
    @Test func aThreadThatSpinsUntilItGetsAnInstancePasses() async throws {
        let report = try await explore { threads in
            let count = Exclusive(0, label: "count")
            let log = Exclusive(0, label: "log")
            // Holds "count" across a switch point of its own: a try can find it held.
            threads.spawn {
                count.access { count in
                    count += 1
                    log.access { $0 += 1 }
                }
            }
            threads.spawn { while count.accessIfAvailable({ $0 += 1 }) == nil {} }
            threads.finally { if count.access({ $0 }) != 2 { throw Wrong() } }
        }
        #expect(report.passed && report.isExhaustive, "\(report)")
    }

    @Test func aThreadThatPollsUntilItLikesWhatItReadsPasses() async throws {
        let report = try await explore { threads in
            let flag = Exclusive(false, label: "flag")
            threads.spawn { flag.access { $0 = true } }
            threads.spawn { while flag.accessIfAvailable({ $0 }) != true {} }
        }
        #expect(report.passed && report.isExhaustive, "\(report)")
    }

    @Test func threadsThatOnlySpinAreALivelockNamedByTheirLoops() async throws {
        let report = try await explore(bound: 1) { threads in
            let a = Exclusive(0, label: "a")
            let b = Exclusive(0, label: "b")
            threads.spawn { a.access { _ in while b.accessIfAvailable({ _ in }) == nil {} } }
            threads.spawn { b.access { _ in while a.accessIfAvailable({ _ in }) == nil {} } }
        }
        let failure = try #require(report.failure, "\(report)")
        #expect(failure.kind == .stuck, "\(report)")
        #expect(failure.message.hasPrefix("a livelock: thread 0 retries "), "\(failure.message)")
        #expect(failure.message.contains("\"b\", at SpinningTests.swift:"), "\(failure.message)")
        #expect(failure.message.contains("thread 1 retries "), "\(failure.message)")
        #expect(failure.message.contains("\"a\", at SpinningTests.swift:"), "\(failure.message)")
        #expect(failure.schedule.preemptions == 1, "\(report)")
    }
}
