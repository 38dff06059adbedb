@_spi(ScheduleExploration) import Exclusion
import ExclusionTestSupport
import ExclusionTesting
import Foundation
import Synchronization
import Testing

// Actors, the main actor, and tasks started with `Task { }` or `Task.detached`, explored: every
// order in which tasks can take their turns in an actor runs, an actor's queue runs in a column of
// its own, main-actor code runs on the explorer's threads, one turn at a time, and tasks that a
// scenario starts run there too.

/// Explores `body` at `bound`, for at most a workload's patience.
private func explore(
    bound: Int = 2, _ body: @escaping @Sendable (ScheduleThreads) -> Void
) async throws -> ScheduleReport<AnyHistory.Input, AnyHistory.Output> {
    try await within(workloadPatience, "the exploration to end") {
        await ScheduleExplorer.explore(preemptionBound: bound, seed: 7, outsideWaitLimit: .seconds(1), body)
    }
}

/// An actor that keeps the order of the writes made in it.
private actor Journal {
    private var entries: [String] = []

    func write(_ entry: String) { entries.append(entry) }

    func all() -> [String] { entries }
}

/// The main actor's journal, and whether each entry was written on a thread the explorer runs.
@MainActor private final class Screen {
    private(set) var entries: [String] = []
    private(set) var explored: [Bool] = []

    nonisolated init() {}

    func write(_ entry: String) {
        entries.append(entry)
        explored.append(ScheduleSeam.currentController != nil)
    }
}

/// What the executions of a scenario ended with, gathered outside the explorer's sight.
private final class Outcomes: Sendable {
    private let seen = Mutex<Set<[String]>>([])

    func add(_ outcome: [String]) { seen.withLock { _ = $0.insert(outcome) } }

    var all: Set<[String]> { seen.withLock { $0 } }
}

@Suite("ScheduleExplorer on actors", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
struct ActorsTests {
    /// Two tasks write twice each in one actor: their turns can come in any of the 6 orders that
    /// keep each task's own order, and each of them runs. (A task's first hop onto the actor
    /// comes in a step of its own, not in its thread's start, which runs in a fixed order.)
    @Test func everyOrderOfTurnsInAnActorRuns() async throws {
        let outcomes = Outcomes()
        let report = try await explore { threads in
            let journal = Journal()
            for name in ["a", "b"] {
                threads.spawn {
                    await journal.write(name + "1")
                    await journal.write(name + "2")
                    // The last task to finish sees every entry.
                    outcomes.add(await journal.all())
                }
            }
        }
        #expect(report.passed && report.isExhaustive, "\(report)")
        let complete = outcomes.all.filter { $0.count == 4 }
        #expect(complete.count == 6, "\(complete.sorted { $0.lexicographicallyPrecedes($1) })")
    }

    /// The same on the main actor: each turn there is a step of its own.
    @Test func everyOrderOfTurnsOnTheMainActorRuns() async throws {
        let outcomes = Outcomes()
        let report = try await explore { threads in
            let screen = Screen()
            for name in ["a", "b"] {
                threads.spawn {
                    await screen.write(name + "1")
                    await screen.write(name + "2")
                    outcomes.add(await screen.entries)
                }
            }
        }
        #expect(report.passed && report.isExhaustive, "\(report)")
        let complete = outcomes.all.filter { $0.count == 4 }
        #expect(complete.count == 6, "\(complete.sorted { $0.lexicographicallyPrecedes($1) })")
    }

    /// Main-actor code runs on the threads the explorer runs, not on the main thread: the
    /// explorer stands in for the main executor there.
    @Test func mainActorCodeRunsOnTheExplorersThreads() async throws {
        let outcomes = Mutex<[Bool]>([])
        let report = try await explore(bound: 0) { threads in
            let screen = Screen()
            threads.spawn {
                await screen.write("a")
                let explored = await screen.explored
                outcomes.withLock { $0 += explored }
            }
        }
        #expect(report.passed, "\(report)")
        let explored = outcomes.withLock { $0 }
        #expect(explored == [true], "\(explored)")
    }

    /// An actor's queue runs in a column of its own, and a failure's table shows it.
    @Test func anActorsQueueRunsInAColumnOfItsOwn() async throws {
        let reentrancy = try #require(classicBugs.first { $0.name == "an actor's check and act across an await" })
        let failure = try #require(try await explore(reentrancy, fixed: false, awaited: true, bound: 0).failure)
        #expect(failure.table.contains("| actor jobs "), "\(failure.table)")
        #expect(failure.table.contains("runs the actor's queue"), "\(failure.table)")
        #expect(failure.table.contains("thread 0's task leaves the actor"), "\(failure.table)")
    }

    /// Tasks that a scenario starts with `Task { }` and `Task.detached` are threads of their own:
    /// the unstructured task's write comes before and after its starter's. Their sleeps end in
    /// virtual time, as the explorer's own tasks' do, once nothing else can go on: an hour's sleep
    /// in every schedule takes no time, and the detached task, which sleeps, writes last.
    @Test func tasksStartedInAScenarioAreExplored() async throws {
        let outcomes = Outcomes()
        let report = try await explore { threads in
            let log = Exclusive([String](), label: "log")
            threads.spawn {
                let unstructured = Task { await log.access { $0.append("unstructured") } }
                let detached = Task.detached {
                    try? await Task.sleep(for: .seconds(3_600))
                    await log.access { $0.append("detached") }
                }
                await log.access { $0.append("starter") }
                await unstructured.value
                await detached.value
                outcomes.add(await log.access { $0 })
            }
        }
        #expect(report.passed && report.isExhaustive, "\(report)")
        let expected: Set<[String]> = [
            ["unstructured", "starter", "detached"], ["starter", "unstructured", "detached"],
        ]
        #expect(outcomes.all == expected, "\(outcomes.all)")
    }
}
