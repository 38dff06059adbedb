import Dispatch
import ExclusionTestSupport
import Foundation
import Testing

@testable import Banking

@Suite("Simulation", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
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
        #expect(report.checks.count == 7)
        #expect(report.summary.contains("All checks passed."))
    }

    @Test(arguments: [(1, 3), (2, 4), (3, 5), (4, 6)])
    func theOpenAccountsAddUpAcrossTheBranches(threads: Int, seed: UInt64) async {
        // Each branch keeps its own fewest and most; the report adds them up. Whatever the merge,
        // the bank never had fewer open than the fewest nor more than the most, and what opened
        // and closed explains the difference between the start and the end.
        let simulation = Simulation(
            configuration: .init(accounts: 40, threads: threads, operations: 6_000, seed: seed))
        let report = await simulation.run(notificationQueue: DispatchQueue(label: "simulation"))
        let start = simulation.configuration.accounts
        #expect(report.fewestOpenAccounts <= min(start, report.openAccounts), "\(report.summary)")
        #expect(max(start, report.openAccounts) <= report.mostOpenAccounts, "\(report.summary)")
        #expect(report.accountsOpened - report.accountsClosed == report.openAccounts - start)
        #expect(report.checks.contains { $0.name == "the open accounts add up" && $0.passed })
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

    @Test func theJSONReportCountsAccountsAndGivesEachRejectionAsACountAndAShare() async throws {
        let simulation = Simulation(configuration: .init(accounts: 20, threads: 2, operations: 40_000, seed: 3))
        let report = await simulation.run(notificationQueue: DispatchQueue(label: "simulation"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
        #expect(json["accountsOpened"] as? Int == report.accountsOpened)
        #expect(json["accountsClosed"] as? Int == report.accountsClosed)
        #expect(json["openAccounts"] as? Int == 20 + report.accountsOpened - report.accountsClosed)
        #expect(json["fewestOpenAccounts"] as? Int == report.fewestOpenAccounts)
        #expect(json["mostOpenAccounts"] as? Int == report.mostOpenAccounts)
        #expect(json["newAccountsTotal"] as? String == report.newAccountsTotal.description)
        let counts = try #require(json["rejections"] as? [String: Int])
        let shares = try #require(json["rejectionShares"] as? [String: Double])
        #expect(!counts.isEmpty)
        #expect(Set(counts.keys) == Set(shares.keys))
        for (reason, count) in counts {
            #expect(shares[reason] == Double(count) / 40_000, "\(reason)")
            #expect(
                report.summary.contains("\(count) (\(String(format: "%.2f", Double(count) / 400)) % of operations)"))
        }
    }

    /// A run as long as any a new user makes, on few accounts so that each is opened and closed many
    /// times over: the number open stays near the target, and closed accounts are the odd rejection.
    @Test func aLongRunKeepsAboutAsManyAccountsOpenAndRejectsWhatABankRejects() async throws {
        let operations = 2_000_000
        let simulation = Simulation(
            configuration: .init(accounts: 100, threads: 2, operations: operations, notifications: .batched, seed: 7))
        let report = await simulation.run(notificationQueue: DispatchQueue(label: "simulation"))
        #expect(report.passed, "\(report.summary)")
        // Closing alone would have closed the 100 accounts ten times over.
        #expect(report.accountsClosed > 1_000, "\(report.summary)")
        #expect((80...120).contains(report.openAccounts), "\(report.summary)")
        #expect(report.fewestOpenAccounts >= 50 && report.mostOpenAccounts <= 150, "\(report.summary)")
        #expect(Set(report.rejections.keys) == ["insufficientFunds", "accountClosed"], "\(report.summary)")
        let closed = try #require(report.rejectionShares["accountClosed"])
        #expect(closed > 0 && closed < 0.05, "\(report.summary)")
        let refused = report.rejections.values.reduce(0, +)
        #expect(Double(refused) / Double(operations) < 0.1, "\(report.summary)")
    }

    @Test func theSameSeedGivesTheSameReportButForItsTiming() async throws {
        func run(seed: UInt64) async throws -> NSDictionary {
            let simulation = Simulation(configuration: .init(accounts: 30, threads: 3, operations: 30_000, seed: seed))
            let report = await simulation.run(notificationQueue: DispatchQueue(label: "simulation"))
            #expect(report.passed, "\(report.summary)")
            var json = try #require(try JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
            json["seconds"] = nil
            json["operationsPerSecond"] = nil
            return json as NSDictionary
        }
        let first = try await run(seed: 11)
        #expect(try await run(seed: 11) == first)
        #expect(try await run(seed: 12) != first)
    }

    @Test func aFailedCheckFailsTheReport() async throws {
        // The checks are real: a bank whose money doesn't add up is reported as failed.
        let bank = Bank(notificationQueue: DispatchQueue(label: "simulation"))
        let account = try bank.openAccount(initialBalance: .amount("10.00"))
        var tally = Tally()
        tally.openAtEnd = 1
        tally.deposits = 1  // claims a deposit that never happened
        let report = Simulation.Report(
            configuration: .init(accounts: 1, threads: 1, operations: 0), bank: bank, accounts: [account],
            openingTotal: .amount("10.00"), tally: tally, notifications: 1, expectedNotifications: 1,
            totalsDelivered: 0, elapsed: .seconds(1))
        #expect(!report.passed)
        #expect(report.checks.first { !$0.passed }?.name == "money is conserved")
        #expect(report.summary.contains("[FAILED] money is conserved"))
    }

    @Test func anOpeningThatDidntHappenFailsTheReport() async throws {
        let bank = Bank(notificationQueue: DispatchQueue(label: "simulation"))
        let account = try bank.openAccount(initialBalance: .amount("10.00"))
        var tally = Tally()
        tally.opened = 1  // claims an account opened during the run, with nothing, that the bank doesn't have
        tally.openAtEnd = 2
        tally.fewestOpen = 1
        tally.mostOpen = 2
        tally.changes = 1
        let report = Simulation.Report(
            configuration: .init(accounts: 1, threads: 1, operations: 0), bank: bank, accounts: [account],
            openingTotal: .amount("10.00"), tally: tally, notifications: 2, expectedNotifications: 2,
            totalsDelivered: 0, elapsed: .seconds(1))
        #expect(report.checks.filter { !$0.passed }.map(\.name) == ["every opening and closing took effect"])
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
