import Dispatch
import Exclusion
import ExclusionTestSupport
import ExclusionTesting
import Testing

@testable import Banking

/// The Bank under `ScheduleExplorer`: every schedule of two threads of two operations, with at
/// most two preemptions, in both configurations; and the transfer in two accesses, found by a
/// schedule with one preemption (the `ScenarioRunner` test of it may need a minute of histories).
@Suite("Bank schedules", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
struct BankScheduleTests {
    private static let explorer = ScheduleExplorer(
        model: BankModel(), threads: 2, operationsPerThread: 2...2, preemptionBound: 2, seed: 7)

    /// The account of another bank that operations use, made before any schedule runs: made lazily
    /// by the first operation to use it, its bank's accesses would run inside that operation's
    /// step, and a thread of another schedule needing it would wait for the global's initializer,
    /// which the explorer can't see.
    private static let foreignAccount = BankLinearizabilityTests.foreignAccount

    @Test(arguments: [Bank.Concurrency.serial, .readersWriter])
    func everyOperationPassesEverySchedule(_ concurrency: Bank.Concurrency) async throws {
        _ = Self.foreignAccount
        let model = BankModel()
        let report = try await within(workloadPatience, "the exploration to end") {
            await Self.explorer.run(
                setUp: { model.makeBank(concurrency, notifyingOn: BankLinearizabilityTests.notifications) },
                inputs: BankLinearizabilityTests.generate,
                perform: { bank, input in
                    BankModel.perform(input, on: bank, foreignAccount: Self.foreignAccount)
                })
        }
        print("Bank (\(concurrency)): \(report.description.prefix { $0 != "\n" })")
        #expect(report.passed, "\(report)")
        #expect(report.isExhaustive)
    }

    @Test func aTransferInTwoAccessesIsFoundByOnePreemption() async throws {
        _ = Self.foreignAccount
        let model = BankModel()
        let report = try await within(workloadPatience, "the exploration to end") {
            await Self.explorer.run(
                setUp: { model.makeBank(.serial, notifyingOn: BankLinearizabilityTests.notifications) },
                inputs: { generator in
                    // Transfers, and totals that may fall between a transfer's two accesses.
                    generator.thread == 0 ? .transfer(0, 1, 60) : .total
                },
                perform: { bank, input in
                    BankModel.performTransferringInTwoAccesses(
                        input, on: bank, foreignAccount: Self.foreignAccount)
                })
        }
        let failure = try #require(report.failure, "\(report)")
        #expect(failure.kind == .notLinearizable)
        #expect(failure.schedule.preemptions == 1)
        #expect(report.schedulesExplored <= 10, "\(report)")
    }
}
