import Exclusion
import ExclusionTestSupport
import ExclusionTesting
import Foundation
import Testing

// The article "Exploring schedules", kept true: its example is the ledger of `Support/Ledger.swift`,
// run as the article runs it, and what the article shows it print is what it prints.

@Suite("Exploring schedules (the article's example)", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
struct ExploringSchedulesArticleTests {
    /// The article's explorer.
    private let explorer = ScheduleExplorer(
        model: TransferModel(), threads: 2, operationsPerThread: 1...2, preemptionBound: 2, seed: 7)

    /// The article, from the package's sources.
    private var articleText: String {
        get throws {
            let article = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent(
                    "Sources/ExclusionTesting/ExclusionTesting.docc/ExploringSchedules.md")
            return try String(contentsOf: article, encoding: .utf8)
        }
    }

    /// The code blocks of the article.
    private var articleBlocks: [String] {
        get throws {
            try articleText.components(separatedBy: "```").enumerated().filter { $0.offset % 2 == 1 }.map { block in
                // Without the language on the fence's line.
                block.element.drop { $0 != "\n" }.dropFirst().description
            }
        }
    }

    @Test func theTransferInTwoAccessesFailsWithTheTableTheArticleShows() async throws {
        let report = try await explore(
            explorer, setUp: { Ledger(checksInItsOwnAccess: true) }, inputs: TransferModel.generate,
            perform: { $0.apply($1) })
        let failure = try #require(report.failure, "\(report)")
        let shown = try articleBlocks.filter { $0.hasPrefix("step | thread 0") && $0.contains("ledger") }
        #expect(shown == [failure.table + "\n"])
        let head = "\(report.schedulesExplored) schedules of 1 scenario explored"
        #expect(try articleBlocks.contains { $0.hasPrefix(head) && $0.contains("\(failure.schedule)") })
    }

    /// The body of the article's first example.
    @Sendable private static func seats(_ threads: ScheduleThreads) {
        let seats = Seats()
        threads.spawn { _ = try seats.reserve(1) }
        threads.spawn { _ = try await seats.reserveAsync(1) }
        threads.finally { guard seats.count == 1 else { throw Overbooked() } }
    }

    /// The same, with the seats fixed.
    @Sendable private static func fixedSeats(_ threads: ScheduleThreads) {
        let seats = FixedSeats()
        threads.spawn { _ = try seats.reserve(1) }
        threads.spawn { _ = try await seats.reserveAsync(1) }
        threads.finally { guard seats.count == 1 else { throw Overbooked() } }
    }

    /// The article's first example, as it runs it.
    private static func exploreSeats(
        fixed: Bool, replaying schedule: Schedule? = nil
    ) async throws -> ScheduleReport<AnyHistory.Input, AnyHistory.Output> {
        try await within(workloadPatience, "the exploration to end") {
            let body: @Sendable (ScheduleThreads) -> Void = fixed ? Self.fixedSeats : Self.seats
            if let schedule {
                return await ScheduleExplorer.replay(schedule, preemptionBound: 2, seed: 7, body)
            }
            return await ScheduleExplorer.explore(preemptionBound: 2, seed: 7, body)
        }
    }

    @Test func theSeatsFailWithTheTableTheArticleShowsAndReplay() async throws {
        let report = try await Self.exploreSeats(fixed: false)
        let failure = try #require(report.failure, "\(report)")
        #expect(failure.schedule.preemptions == 1)
        let shown = try articleBlocks.filter { $0.hasPrefix("step | thread 0") && $0.contains("reservations") }
        #expect(shown == [failure.table + "\n"], "\(failure.table)")
        let head = "\(report.schedulesExplored) schedules of 1 scenario explored"
        #expect(
            try articleBlocks.contains { $0.hasPrefix(head) && $0.contains("\(failure.schedule)") },
            "\(report.description.prefix(400))")
        let again = try await Self.exploreSeats(fixed: false, replaying: failure.schedule)
        #expect(again.failure?.table == failure.table)
        let fixedReport = try await Self.exploreSeats(fixed: true)
        #expect(fixedReport.passed && fixedReport.isExhaustive, "\(fixedReport)")
        #expect(
            try articleText.contains("\(fixedReport.schedulesExplored) schedules of 1 scenario explored"),
            "\(fixedReport)")
    }

    /// The Actors section shows the re-entrant withdrawals' report as the explorer prints it.
    @Test func theActorsSectionShowsTheWithdrawalsReport() async throws {
        let wallet = try #require(classicBugs.first { $0.name == "an actor's check and act across an await" })
        let report = try await explore(wallet, fixed: false, awaited: true, bound: 1)
        let failure = try #require(report.failure, "\(report)")
        let lines = report.description.split(separator: "\n", omittingEmptySubsequences: false)
        // The first line says how long the search took; the rest is the same every run.
        let shown = try articleBlocks.filter { $0.hasPrefix("1 schedule of 1 scenario explored") }
        #expect(
            shown.contains { $0.hasSuffix(lines.dropFirst().joined(separator: "\n") + "\n") },
            "\(report)")
        #expect(failure.schedule.preemptions == 0)
    }

    @Test func theFixPassesEveryScheduleInTheNumberTheArticleSays() async throws {
        let report = try await explore(
            explorer, setUp: { Ledger(checksInItsOwnAccess: false) }, inputs: TransferModel.generate,
            perform: { $0.apply($1) })
        #expect(report.passed, "\(report)")
        #expect(report.isExhaustive)
        let summary = "\(report.schedulesExplored) schedules of \(report.scenariosExplored) scenarios explored"
        #expect(try articleBlocks.contains { $0.contains(summary) })
    }

    @Test func theBoundsTableCountsTheSchedulesOfTheFixedLedger() async throws {
        let article = try articleText
        for bound in 0...3 {
            var explorer = explorer
            explorer.preemptionBound = bound
            let broken = try await explore(
                explorer, setUp: { Ledger(checksInItsOwnAccess: true) }, inputs: TransferModel.generate,
                perform: { $0.apply($1) })
            #expect(broken.passed == (bound == 0), "bound \(bound): \(broken)")
            explorer.threads = 3
            explorer.operationsPerThread = 1...3
            let fixed = try await explore(
                explorer, setUp: { Ledger(checksInItsOwnAccess: false) }, inputs: TransferModel.generate,
                perform: { $0.apply($1) })
            #expect(fixed.passed && fixed.isExhaustive, "\(fixed)")
            #expect(article.contains("| \(bound) | \(fixed.schedulesExplored) |"), "bound \(bound): \(fixed)")
        }
    }

    @Test func theExplorersDocCommentExampleRuns() async throws {
        try await within(workloadPatience, "the example to run") {
            let explorer = ScheduleExplorer(
                model: TransferModel(), threads: 2, operationsPerThread: 1...2, preemptionBound: 2, seed: 7)
            let report = await explorer.run(
                setUp: { Ledger() },
                inputs: TransferModel.generate,
                perform: { ledger, input in ledger.apply(input) })
            #expect(report.passed, "\(report)")
        }
    }
}
