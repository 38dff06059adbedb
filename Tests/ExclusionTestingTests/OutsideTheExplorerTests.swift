import Dispatch
import Exclusion
import ExclusionTestSupport
import ExclusionTesting
import Testing

// Tasks that wait for what the explorer doesn't run: a sleep, a callback on a dispatch queue, a
// continuation that nothing resumes. What resumes them is held until no explored thread can go
// on, so that a schedule takes the same steps every time it runs; and a task that nothing resumes
// fails its schedule, named, instead of passing or being taken for a deadlock.

/// Explores `body` at `bound`, for at most a workload's patience, as `ScheduleExplorer.explore`.
private func explore(
    bound: Int = 2, outsideWaitLimit: Duration = .seconds(10), _ body: @escaping @Sendable (ScheduleThreads) -> Void
) async throws -> ScheduleReport<AnyHistory.Input, AnyHistory.Output> {
    try await within(workloadPatience, "the exploration to end") {
        await ScheduleExplorer.explore(preemptionBound: bound, seed: 7, outsideWaitLimit: outsideWaitLimit, body)
    }
}

/// A count that a task reads, then waits for a callback that a dispatch queue makes, then writes;
/// another thread adds 1 meanwhile. With `fixed`, the task adds in one access after the callback.
private func countAcrossACallback(fixed: Bool, _ threads: ScheduleThreads) {
    let count = Exclusive(0, label: "count")
    threads.spawn {
        let seen = fixed ? 0 : await count.access { $0 }
        await withCheckedContinuation { continuation in
            // Later, as a reply is: a callback that came before the task even suspended would
            // let it go on with no switch point, which no explorer can hold back.
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100)) { continuation.resume() }
        }
        if fixed {
            await count.access { $0 += 1 }
        } else {
            await count.access { $0 = seen + 1 }
        }
    }
    threads.spawn { await count.access { $0 += 1 } }
    threads.finally {
        let total = count.access { $0 }
        if total != 2 { throw Lost(total: total) }
    }
}

private struct WokeOutOfOrder: Error, CustomStringConvertible {
    let order: [Int]
    var description: String { "the threads woke in the order \(order), not [1, 2, 0]" }
}

#if !canImport(Darwin)
/// Three threads that sleep 3, 1 and 2 hours and then note that they woke; the schedule fails
/// unless they woke in the order of their deadlines.
private func threeSleepers(_ threads: ScheduleThreads) {
    let woke = Exclusive([Int](), label: "woke")
    for (thread, hours) in [3, 1, 2].enumerated() {
        threads.spawn {
            try await Task.sleep(for: .seconds(3_600 * hours))
            await woke.access { $0.append(thread) }
        }
    }
    threads.finally {
        let order = woke.access { $0 }
        if order != [1, 2, 0] { throw WokeOutOfOrder(order: order) }
    }
}
#endif

private struct Lost: Error, CustomStringConvertible {
    let total: Int
    var expected = 2
    var description: String { "counted \(total), not \(expected)" }
}

@Suite("ScheduleExplorer and what it doesn't run", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
struct OutsideTheExplorerTests {
    @Test func aTaskThatSleepsPassesTheSameWayEveryTime() async throws {
        @Sendable func program(_ threads: ScheduleThreads) {
            let count = Exclusive(0, label: "count")
            threads.spawn {
                try await Task.sleep(for: .milliseconds(1))
                await count.access { $0 += 1 }
            }
            threads.spawn {
                await count.access { $0 += 1 }
                await count.access { $0 += 1 }
            }
            threads.finally {
                let total = count.access { $0 }
                if total != 3 { throw Lost(total: total, expected: 3) }
            }
        }
        let first = try await explore(program)
        let second = try await explore(program)
        #expect(first.passed && first.isExhaustive, "\(first)")
        #expect(first.schedulesExplored == second.schedulesExplored, "\(first)\n\(second)")
        #if !canImport(Darwin)
        // In virtual time: nothing came from outside.
        #expect(first.notes.isEmpty, "\(first)")
        #endif
    }

    #if !canImport(Darwin)
    @Test func sleepsTakeNoTimeAndEndInTheOrderOfTheirDeadlines() async throws {
        let report = try await explore { threeSleepers($0) }
        #expect(report.passed && report.isExhaustive, "\(report)")
    }

    @Test func aSleepTheExplorerEndedIsWaitedForAsAStepIs() async throws {
        // The task of a sleep that the explorer ended comes back through the shared pool, which a
        // busy machine can keep waiting; it is sure to come, so the explorer gives it a step's time,
        // not the wait for what may never come. With no wait at all for that, the sleepers still
        // wake, and in order.
        let report = try await explore(outsideWaitLimit: .zero) { threeSleepers($0) }
        #expect(report.passed && report.isExhaustive, "\(report)")
    }

    @Test func aSleepThatEndsIsAStepOfTheSchedule() async throws {
        // A lost update across a sleep: the table shows where the sleep ended.
        let report = try await explore(bound: 1) { threads in
            let count = Exclusive(0, label: "count")
            threads.spawn {
                let seen = await count.access { $0 }
                try await Task.sleep(for: .seconds(1))
                await count.access { $0 = seen + 1 }
            }
            threads.spawn { await count.access { $0 += 1 } }
            threads.finally {
                let total = count.access { $0 }
                if total != 2 { throw Lost(total: total) }
            }
        }
        let failure = try #require(report.failure, "\(report)")
        #expect(failure.table.contains("its sleep ends"), "\(failure.table)")
        #expect(report.notes.isEmpty, "\(report)")
    }
    #endif

    @Test func aCallbackThatResumesATaskIsPartOfItsSchedule() async throws {
        let report = try await explore(bound: 1) { countAcrossACallback(fixed: false, $0) }
        let failure = try #require(report.failure, "\(report)")
        #expect(failure.kind == .threw, "\(report)")
        #expect(failure.table.contains("its task is resumed from outside the explorer"), "\(failure.table)")
        #expect(report.notes.contains { $0.contains("resumed from outside the explorer") }, "\(report)")
        // The same schedule, run again, takes the same steps.
        let again = try await within(workloadPatience, "the replay to end") {
            await ScheduleExplorer.replay(failure.schedule, preemptionBound: 1, seed: 7) {
                countAcrossACallback(fixed: false, $0)
            }
        }
        #expect(again.failure?.table == failure.table, "\(again)")
        let fixed = try await explore(bound: 2) { countAcrossACallback(fixed: true, $0) }
        #expect(fixed.passed && fixed.isExhaustive, "\(fixed)")
    }

    @Test func aContinuationThatNothingResumesFailsNamingItsThread() async throws {
        // The limit only bounds a wait for what never comes.
        let report = try await explore(outsideWaitLimit: .milliseconds(100)) { threads in
            let count = Exclusive(0, label: "count")
            threads.spawn { await withUnsafeContinuation { (_: UnsafeContinuation<Void, Never>) in } }
            threads.spawn { await count.access { $0 += 1 } }
        }
        let failure = try #require(report.failure, "\(report)")
        #expect(failure.kind == .stuck, "\(report)")
        #expect(failure.message.contains("to resume the task of thread 0"), "\(failure.message)")
    }

    @Test func aChildTaskThatNothingResumesIsNamed() async throws {
        let report = try await explore(outsideWaitLimit: .milliseconds(100)) { threads in
            threads.spawn {
                async let child: Void = withUnsafeContinuation { (_: UnsafeContinuation<Void, Never>) in }
                await child
            }
        }
        let failure = try #require(report.failure, "\(report)")
        #expect(failure.kind == .stuck, "\(report)")
        #expect(failure.message.contains("(of thread 0) has no job"), "\(failure.message)")
    }

    @Test func aDeadlockOfTasksInLinesIsReportedAtOnce() async throws {
        // Both tasks wait in instances' lines, which only the explored threads could end: a
        // deadlock, found without waiting for anything outside (the limit would fail the test).
        let report = try await explore(bound: 1, outsideWaitLimit: .seconds(20)) { threads in
            let a = Exclusive(0, label: "a")
            let b = Exclusive(0, label: "b")
            threads.spawn { try await a.access(when: { $0 > 0 }) { _ in } }
            threads.spawn { try await b.access(when: { $0 > 0 }) { _ in } }
        }
        let failure = try #require(report.failure, "\(report)")
        #expect(failure.kind == .deadlock, "\(report)")
        #expect(
            failure.message.contains("waits, suspended, for its turn or its condition on \"a\""), "\(failure.message)")
    }
}
