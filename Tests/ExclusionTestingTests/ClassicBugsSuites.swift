import Exclusion
import ExclusionTestSupport
import ExclusionTesting
import Foundation
import Testing

// The classic bugs (`classicBugs`, in ClassicBugsTests.swift), each explored as the article
// "Exploring schedules" says.

/// Explores `bug`'s program at `bound`, for at most a workload's patience.
func explore(
    _ bug: ClassicBug, fixed: Bool, awaited: Bool, bound: Int
) async throws
    -> ScheduleReport<AnyHistory.Input, AnyHistory.Output>
{
    try await within(workloadPatience, "the exploration to end") {
        await ScheduleExplorer.explore(
            preemptionBound: bound, seed: 7, lockOrder: bug.lockOrder, outsideWaitLimit: bug.outsideWaitLimit
        ) { threads in
            bug.program(fixed, awaited, threads)
        }
    }
}

@Suite("ScheduleExplorer on the classic bugs", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
struct ClassicBugsTests {
    @Test(arguments: classicBugs)
    func eachIsFoundAtTheSmallestBoundThatShowsIt(bug: ClassicBug) async throws {
        for awaited in bug.forms {
            let form = awaited ? "awaited" : "synchronous"
            if bug.bound > 0 {
                let below = try await explore(bug, fixed: false, awaited: awaited, bound: bug.bound - 1)
                #expect(below.passed && below.isExhaustive, "\(form), bound \(bug.bound - 1): \(below)")
            }
            let report = try await explore(bug, fixed: false, awaited: awaited, bound: bug.bound)
            let failure = try #require(report.failure, "\(form): \(report)")
            #expect(failure.kind == bug.kind, "\(form): \(report)")
            #expect(failure.schedule.preemptions == bug.bound, "\(form): \(report)\n\(failure.table)")
            #expect(report.notes.isEmpty, "\(form): \(report)")
            if bug.kind == .crashed {
                // The process went on, and the report has what the runtime said before the trap.
                #expect(failure.message.contains("trapped"), "\(failure.message)")
                #if DEBUG
                #expect(failure.message.contains("Fatal error"), "\(failure.message)")
                #endif
            }
        }
    }

    @Test func aCrashReplaysInTheSameProcess() async throws {
        let crash = try #require(classicBugs.first { $0.kind == .crashed })
        for awaited in [false, true] {
            let found = try #require(try await explore(crash, fixed: false, awaited: awaited, bound: 1).failure)
            let again = try await within(workloadPatience, "the replay to end") {
                await ScheduleExplorer.replay(found.schedule, preemptionBound: 1, seed: 7) { threads in
                    crash.program(false, awaited, threads)
                }
            }
            let replayed = try #require(again.failure, "\(again)")
            #expect(replayed.kind == .crashed)
            #expect(replayed.message == found.message)
            #expect(replayed.table == found.table)
        }
    }

    @Test func aDeadlocksReportShowsItsCycle() async throws {
        let deadlock = try #require(
            classicBugs.first { $0.name == "two instances nested in opposite orders, a deadlock" })
        for awaited in [false, true] {
            let found = try #require(try await explore(deadlock, fixed: false, awaited: awaited, bound: 1).failure)
            #expect(found.kind == .deadlock)
            #expect(found.message.contains("; the cycle: thread "), "\(found.message)")
            #expect(found.message.contains(" waits for \"a\", which thread "), "\(found.message)")
            #expect(found.message.contains(" waits for \"b\", which thread "), "\(found.message)")
        }
        let handshake = try #require(classicBugs.first { $0.name == "two tasks that each wait for the other first" })
        let found = try #require(try await explore(handshake, fixed: false, awaited: true, bound: 0).failure)
        // Tasks waiting for conditions no one holds wait for no thread: no cycle, and each wait.
        #expect(!found.message.contains("the cycle"), "\(found.message)")
        #expect(found.message.contains("its condition on \"left ready\""), "\(found.message)")
    }

    @Test(arguments: classicBugs)
    func eachFixPassesEveryScheduleAtThatBound(bug: ClassicBug) async throws {
        for awaited in bug.forms {
            let report = try await explore(bug, fixed: true, awaited: awaited, bound: max(bug.bound, 1))
            #expect(report.passed && report.isExhaustive, "\(awaited ? "awaited" : "synchronous"): \(report)")
        }
    }
}

/// The article's table of the classic bugs: for each form, the schedules run until the first
/// failure at bounds 0, 1 and 2 ("passes, N" where all N pass), and the schedules every one of
/// which the fix passes at bound 2.
@Suite("The article's table of classic bugs", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
struct ClassicBugsTableTests {
    static let article = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/ExclusionTesting/ExclusionTesting.docc/ExploringSchedules.md")

    static func row(_ bug: ClassicBug, awaited: Bool) async throws -> String {
        var cells = [bug.name, awaited ? "awaited" : "synchronous"]
        for bound in 0...2 {
            let report = try await explore(bug, fixed: false, awaited: awaited, bound: bound)
            cells.append(report.passed ? "passes, \(report.schedulesExplored)" : "\(report.schedulesExplored)")
        }
        let fixed = try await explore(bug, fixed: true, awaited: awaited, bound: 2)
        #expect(fixed.passed && fixed.isExhaustive, "\(bug.name), fixed: \(fixed)")
        cells.append("\(fixed.schedulesExplored)")
        return "| " + cells.joined(separator: " | ") + " |"
    }

    @Test func theArticlesTableIsWhatTheExplorerFinds() async throws {
        var rows: [String] = []
        for bug in classicBugs {
            for awaited in bug.forms { rows.append(try await Self.row(bug, awaited: awaited)) }
        }
        let text = try String(contentsOf: Self.article, encoding: .utf8)
        let missing = rows.filter { !text.contains($0) }
        #expect(missing.isEmpty, "rows the article should have:\n\(rows.joined(separator: "\n"))")
    }
}
