import Banking
import Benchmark
import Dispatch
import ExclusionTesting

// Exhaustive schedule exploration of the Bank (issue #32: "seconds, not minutes"): two threads of
// two operations each, transfers and balances between two accounts, every schedule with at most
// two preemptions, in each of ten scenarios, one scenario at a time and two at once. One iteration
// is one whole exploration. Every schedule runs the scenario's threads anew (on threads the
// explorer keeps), and a switch from one to another is a wake-up, so the time is mostly threads
// waking each other. Notifications go to a private queue (nothing services the main queue here).

/// Two accounts of the Bank, one operation at a time.
struct TwoAccountsModel: SequentialModel {
    enum Input: Sendable, CustomStringConvertible {
        case transfer(Int64, from: Int, to: Int)
        case balance(Int)

        var description: String {
            switch self {
            case .transfer(let amount, let source, let destination):
                "transfer(\(amount) from \(source) to \(destination))"
            case .balance(let account): "balance(\(account))"
            }
        }
    }

    enum Output: Sendable, Equatable {
        case transferred
        case insufficientFunds
        case balance(Int64)
    }

    var initialState: [Int64] { [100, 100] }

    func step(_ balances: [Int64], _ input: Input) -> (output: Output, state: [Int64]) {
        switch input {
        case .transfer(let amount, let source, let destination):
            guard balances[source] >= amount else { return (.insufficientFunds, balances) }
            var after = balances
            after[source] -= amount
            after[destination] += amount
            return (.transferred, after)
        case .balance(let account):
            return (.balance(balances[account]), balances)
        }
    }

    static func generate(_ generator: inout ScenarioGenerator) -> Input {
        let source = Int.random(in: 0...1, using: &generator)
        return Int.random(in: 0..<3, using: &generator) == 0
            ? .balance(source) : .transfer([60, 120].randomElement(using: &generator)!, from: source, to: 1 - source)
    }

    static func perform(_ bank: Bank, _ input: Input) -> Output {
        let accounts = bank.accounts
        switch input {
        case .balance(let account):
            return .balance(accounts[account].balance.minorUnits)
        case .transfer(let amount, let source, let destination):
            do {
                try bank.transferMoneyAmount(
                    Money(minorUnits: amount), from: accounts[source], to: accounts[destination])
                return .transferred
            } catch {
                return .insufficientFunds
            }
        }
    }
}

let notifications = DispatchQueue(label: "notifications")

let benchmarks: @Sendable () -> Void = {
    for atOnce in [1, 2] {
        let name =
            "ScheduleExplorer: Bank, 2 threads × 2 operations, bound 2, 10 scenarios, exhaustive"
            + (atOnce == 1 ? "" : ", \(atOnce) at once")
        Benchmark(
            name,
            configuration: .init(
                metrics: [.wallClock], timeUnits: .milliseconds, scalingFactor: .one, maxDuration: .seconds(20),
                maxIterations: 10)
        ) { benchmark in
            var explorer = ScheduleExplorer(
                model: TwoAccountsModel(), threads: 2, operationsPerThread: 2...2, preemptionBound: 2, scenarios: 10,
                seed: 7)
            explorer.scenariosAtOnce = atOnce
            for _ in benchmark.scaledIterations {
                let report = await explorer.run(
                    setUp: {
                        let bank = Bank(notificationQueue: notifications)
                        for _ in 0..<2 { _ = try! bank.openAccount(initialBalance: Money(minorUnits: 100)) }
                        return bank
                    },
                    inputs: TwoAccountsModel.generate, perform: TwoAccountsModel.perform)
                // 260 schedules: the figure Benchmarks/README.md gives.
                precondition(report.passed && report.isExhaustive && report.schedulesExplored == 260, "\(report)")
                blackHole(report.schedulesExplored)
            }
        }
    }
}
