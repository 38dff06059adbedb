import Exclusion
import ExclusionTestSupport
import ExclusionTesting
import Foundation
import Testing

/// How often `ScenarioRunner` finds the planted bugs in the time the explorer takes to find them,
/// and in a second: a measurement, run by hand and not by CI (it takes minutes and its numbers
/// depend on the machine):
///
///     EXCLUSION_MEASURE_SCENARIO_RUNNER=1 EXCLUSION_LOCK_ORDER=0 \
///         swift test -c release -Xswiftc -enable-testing --filter ScenarioRunnerComparison
///
/// `EXCLUSION_LOCK_ORDER=0`: the nesting bug must be allowed to deadlock on real threads (its inner
/// access gives up after 100 ms, which makes the deadlock a wrong output), instead of stopping the
/// process at the first nesting in the opposite order.
@Suite(
    "ScenarioRunner against ScheduleExplorer on the planted bugs (a measurement)",
    .enabled(if: ProcessInfo.processInfo.environment["EXCLUSION_MEASURE_SCENARIO_RUNNER"] != nil),
    .serialized, .onThreadsOfItsOwn, .patientTimeLimit(minutes: 30))
struct ScenarioRunnerComparisonTests {
    private static let trials = 20

    @Test func aTransferInTwoAccesses() async throws {
        try await compare(
            "(a) transfer in two accesses", TransferModel(), { Ledger(checksInItsOwnAccess: true) },
            TransferModel.generate, { $0.apply($1) })
    }

    @Test func lazyCreationCheckThenAct() async throws {
        try await compare(
            "(b) lazy creation, check then act", IncrementModel(), { LazyCounter(checksThenActs: true) },
            { _ in .increment }, { counter, _ in counter.increment() })
    }

    @Test func aTotalSummedOneAtATime() async throws {
        try await compare(
            "(c) total summed one instance at a time", TotalModel(), { Accounts(sumsOneAtATime: true) },
            TotalModel.generate, { $0.apply($1) })
    }

    @Test func nestingInOppositeOrders() async throws {
        try await compare(
            "(d) nesting in opposite orders", SwapModel(),
            { Pair(nestsSourceFirst: true, innerLimit: .milliseconds(100)) },
            SwapModel.generate, { $0.apply($1) }, lockOrder: .never)
    }

    /// Times the explorer to the bug (median of five), then runs `ScenarioRunner` `trials` times
    /// for as long, and `trials` times for a second, and prints how many runs found it.
    private func compare<Model: SequentialModel, Object: Sendable>(
        _ bug: String, _ model: Model, _ setUp: @escaping @Sendable () -> Object,
        _ inputs: @escaping @Sendable (inout ScenarioGenerator) -> Model.Input,
        _ perform: @escaping @Sendable (Object, Model.Input) -> Model.Output,
        lockOrder: ScheduleExplorer<Model>.LockOrderChecking = .asExclusionDoes
    ) async throws {
        var explorer = plantedBugExplorer(model)
        explorer.lockOrder = lockOrder
        var times: [Duration] = []
        var schedules = 0
        for _ in 0..<5 {
            let report = try await explore(explorer, setUp: setUp, inputs: inputs, perform: perform)
            #expect(report.failure != nil)
            times.append(report.elapsed)
            schedules = report.schedulesExplored
        }
        let explorerTime = times.sorted()[2]
        var lines = ["\(bug): the explorer finds it in \(explorerTime) (\(schedules) schedules, median of 5)"]
        for limit in [explorerTime, .seconds(1)] {
            var found = 0
            var histories = 0
            for trial in 0..<Self.trials {
                let runner = ScenarioRunner(
                    model: model, threads: 2, operationsPerThread: 1...2, histories: .max, timeLimit: limit,
                    seed: UInt64(trial))
                let report = await runner.run(setUp: setUp, inputs: inputs, perform: perform)
                if report.failure != nil { found += 1 }
                histories += report.historiesChecked
            }
            lines.append(
                "  ScenarioRunner for \(limit): found it in \(found) of \(Self.trials) runs "
                    + "(\(histories / Self.trials) histories a run)")
        }
        print(lines.joined(separator: "\n"))
    }
}
