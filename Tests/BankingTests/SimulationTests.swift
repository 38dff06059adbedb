import Dispatch
import Foundation
import Testing

@testable import Banking

@Suite("Simulation", .timeLimit(.minutes(10)))
struct SimulationTests {
    @Test(arguments: Simulation.ConcurrencyChoice.allCases, Bank.ChangeNotifications.allCases)
    func aSimulationPassesEveryCheck(
        concurrency: Simulation.ConcurrencyChoice, notifications: Bank.ChangeNotifications
    ) async throws {
        let simulation = Simulation(
            configuration: .init(
                accounts: 50, threads: 3, operations: 20_000, concurrency: concurrency, notifications: notifications,
                seed: 1))
        let report = await simulation.run(notificationQueue: DispatchQueue(label: "simulation"))
        #expect(report.passed, "\(report.summary)")
        #expect(report.counts.values.reduce(0, +) == 20_000)
        #expect(report.counts["transfer"]! > report.counts["deposit"]!)
        #expect(report.checks.count == 5)
        #expect(report.summary.contains("All checks passed."))
    }

    @Test(arguments: Simulation.ConcurrencyChoice.allCases)
    func aSimulationCountingThroughChangesChecksEveryChange(concurrency: Simulation.ConcurrencyChoice) async {
        let simulation = Simulation(
            configuration: .init(
                accounts: 50, threads: 3, operations: 20_000, concurrency: concurrency, countThrough: .changes,
                seed: 2))
        let report = await simulation.run(notificationQueue: DispatchQueue(label: "simulation"))
        #expect(report.passed, "\(report.summary)")
        #expect(report.checks.contains { $0.name == "every change given once, in order" && $0.passed })
        #expect(report.summary.contains("Changes taken from `changes`"))
    }

    @Test func reportsProgressUpToTheEnd() async {
        let seen = Recorder()
        let simulation = Simulation(configuration: .init(accounts: 10, threads: 2, operations: 5_000))
        _ = await simulation.run(notificationQueue: DispatchQueue(label: "simulation")) { done, total in
            _ = seen.begin(done, total)
            seen.end()
        }
        let last = seen.values.last
        #expect(last?.0 == 5_000 && last?.1 == 5_000)
        #expect(seen.values.map(\.0) == seen.values.map(\.0).sorted())
    }

    @Test func progressCallsComeOneAtATimeAndTheLastOneEndsThem() async {
        // The first call holds on until the last call comes, or 2 s. A last call made while an
        // earlier one still runs (the `bank` tool's display isn't made for that) shows as an overlap.
        let calls = Recorder()
        let lastCall = DispatchSemaphore(value: 0)
        let simulation = Simulation(configuration: .init(accounts: 10, threads: 2, operations: 20_000))
        _ = await simulation.run(notificationQueue: DispatchQueue(label: "simulation")) { done, total in
            let isFirst = calls.begin(done, total)
            if done == total {
                lastCall.signal()
            } else if isFirst {
                _ = lastCall.wait(timeout: .now() + .seconds(2))
            }
            calls.end()
        }
        #expect(!calls.overlapped)
        #expect(calls.values.last?.0 == 20_000)
    }

    @Test func theJSONReportDecodesAndSaysWhetherItPassed() async throws {
        let simulation = Simulation(configuration: .init(accounts: 5, threads: 2, operations: 1_000))
        let report = await simulation.run(notificationQueue: DispatchQueue(label: "simulation"))
        let json = try JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any]
        #expect(json?["passed"] as? Bool == true)
        let decoded = try JSONDecoder().decode(Simulation.Report.self, from: Data(report.json.utf8))
        #expect(decoded == report)
    }

    @Test func aFailedCheckFailsTheReport() async throws {
        // The checks are real: a bank whose money doesn't add up is reported as failed.
        let bank = Bank(notificationQueue: DispatchQueue(label: "simulation"))
        let account = try bank.openAccount(initialBalance: .amount("10.00"))
        var tally = Tally()
        tally.deposits = 1  // claims a deposit that never happened
        let report = Simulation.Report(
            configuration: .init(accounts: 1, threads: 1, operations: 0), bank: bank, accounts: [account],
            openingTotal: .amount("10.00"), tally: tally, notifications: 1, expectedNotifications: 1,
            totalsDelivered: 0, elapsed: .seconds(1))
        #expect(!report.passed)
        #expect(report.checks.first { !$0.passed }?.name == "money is conserved")
        #expect(report.summary.contains("[FAILED] money is conserved"))
    }
}

/// The progress calls a simulation made, and whether one began before the one before it ended.
private final class Recorder: @unchecked Sendable {
    // @unchecked: every stored property is only touched while `lock` is held.
    private let lock = NSLock()
    private var pairs: [(Int, Int)] = []
    private var inside = false
    private var sawOverlap = false

    /// Records a call that begins; returns whether it is the first.
    func begin(_ done: Int, _ total: Int) -> Bool {
        lock.withLock {
            if inside { sawOverlap = true }
            inside = true
            pairs.append((done, total))
            return pairs.count == 1
        }
    }

    func end() { lock.withLock { inside = false } }
    var values: [(Int, Int)] { lock.withLock { pairs } }
    var overlapped: Bool { lock.withLock { sawOverlap } }
}
