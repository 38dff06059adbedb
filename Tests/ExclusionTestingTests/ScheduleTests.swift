import Exclusion
import ExclusionTestSupport
import ExclusionTesting
import Foundation
import Testing

/// A failing schedule is a value that can be saved and replayed.
@Suite("Schedule: saved and replayed", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
struct ScheduleTests {
    private let explorer = plantedBugExplorer(TransferModel())

    private func brokenTransfers() async throws -> ScheduleReport<TransferModel.Input, TransferModel.Output> {
        try await explore(
            explorer, setUp: { Ledger(checksInItsOwnAccess: true) }, inputs: TransferModel.generate,
            perform: { $0.apply($1) })
    }

    @Test func aScheduleSurvivesEncodingAndDecoding() async throws {
        let schedule = try #require(try await brokenTransfers().failure).schedule
        let data = try JSONEncoder().encode(schedule)
        #expect(try JSONDecoder().decode(Schedule.self, from: data) == schedule)
        #expect(
            Schedule(seed: 7, scenario: 3, choices: [0, 1, 1], preemptions: 1).description
                == "scenario 3 of seed 7: [0 1 1], 1 preemption")
    }

    @Test func aPrintedScheduleReadsBackAsTheSameSchedule() async throws {
        let found = try #require(try await brokenTransfers().failure)
        // As the report prints it, pasted back: the line after "schedule: ".
        let line = try #require(
            "\(found)".split(separator: "\n").first { $0.hasPrefix("schedule: ") }?.dropFirst("schedule: ".count))
        let pasted = try #require(Schedule(String(line)), "\(line)")
        #expect(pasted == found.schedule)
        let report = try await replay(
            pasted, with: explorer, setUp: { Ledger(checksInItsOwnAccess: true) }, inputs: TransferModel.generate,
            perform: { $0.apply($1) })
        #expect(report.failure?.table == found.table, "\(report)")
        for schedule in [
            Schedule(seed: 0, scenario: 0, choices: [], preemptions: 0),
            Schedule(seed: .max, scenario: 12, choices: [3, 0, 10, 2], preemptions: 1),
            Schedule(seed: 7, scenario: 1, choices: [1, 0], preemptions: 2),
        ] {
            #expect(Schedule(schedule.description) == schedule, "\(schedule)")
            #expect(Schedule("  \(schedule)\n") == schedule, "surrounding whitespace: \(schedule)")
        }
    }

    @Test(arguments: [
        "",
        "scenario 0 of seed 7: [0 1], 1 preemption and more",
        "schedule: scenario 0 of seed 7: [0 1], 1 preemption",
        "scenario -1 of seed 7: [0], 0 preemptions",
        "scenario 0 of seed 7: [0  1], 0 preemptions",
        "scenario 0 of seed 7: [0,1], 0 preemptions",
        "scenario 0 of seed 7: [ 0 1], 0 preemptions",
        "scenario 0 of seed 7: [0 1 ], 0 preemptions",
        "scenario 0 of seed 7: [0 1, 0 preemptions",
        "scenario 0 of seed 18446744073709551616: [0], 0 preemptions",
        "scenario 0 of seed 7: [0], 2 preemptions",
        "scenario 0 of seed 7: [0 1], 1 preemptions",
        "scenario 0 of seed 7: [0 1], 2 preemption",
        "scenario 0 of seed 7: [0 x], 0 preemptions",
    ])
    func whatIsNotAPrintedScheduleIsRefused(text: String) {
        #expect(Schedule(text) == nil)
    }

    @Test func aSavedScheduleReplaysTheFailureExactly() async throws {
        let found = try #require(try await brokenTransfers().failure)
        let saved = try JSONEncoder().encode(found.schedule)
        let schedule = try JSONDecoder().decode(Schedule.self, from: saved)
        let report = try await replay(
            schedule, with: explorer, setUp: { Ledger(checksInItsOwnAccess: true) }, inputs: TransferModel.generate,
            perform: { $0.apply($1) })
        let replayed = try #require(report.failure, "\(report)")
        #expect(report.schedulesExplored == 1)
        #expect(replayed.kind == .notLinearizable)
        #expect(replayed.schedule == found.schedule)
        #expect(replayed.table == found.table)
        #expect(replayed.operations.map(\.output) == found.operations.map(\.output))
    }

    @Test(arguments: [1, 99, UInt64.max])
    func aScheduleReplaysTheScenarioItNamesWhateverTheExplorersSeed(seed: UInt64) async throws {
        // The schedule carries its scenario's seed: an explorer made with another one (a test that
        // saved a schedule and now runs with a seed of its own) replays the scenario that failed.
        let found = try #require(try await brokenTransfers().failure)
        var other = explorer
        other.seed = seed
        let report = try await replay(
            found.schedule, with: other, setUp: { Ledger(checksInItsOwnAccess: true) },
            inputs: TransferModel.generate, perform: { $0.apply($1) })
        let replayed = try #require(report.failure, "\(report)")
        #expect(replayed.kind == .notLinearizable)
        #expect(replayed.operations.map(\.input) == found.operations.map(\.input))
        #expect(replayed.table == found.table)
    }

    @Test func theFixedTransferPassesTheScheduleThatFailedBefore() async throws {
        let schedule = try #require(try await brokenTransfers().failure).schedule
        let report = try await replay(
            schedule, with: explorer, setUp: { Ledger(checksInItsOwnAccess: false) }, inputs: TransferModel.generate,
            perform: { $0.apply($1) })
        // The fix has fewer switch points, so the schedule may end early or not fit: it never
        // finds the history the broken transfer made.
        #expect(report.failure?.kind != .notLinearizable, "\(report)")
    }

    @Test func aScheduleThatDoesNotFitTheScenarioSaysSo() async throws {
        let report = try await replay(
            Schedule(seed: 7, scenario: 0, choices: [5], preemptions: 0), with: explorer,
            setUp: { Ledger(checksInItsOwnAccess: true) }, inputs: TransferModel.generate,
            perform: { $0.apply($1) })
        #expect(report.failure?.kind == .scheduleMismatch, "\(report)")
        #expect(report.failure?.message.contains("only thread 0, thread 1 could go on") == true)
    }
}
