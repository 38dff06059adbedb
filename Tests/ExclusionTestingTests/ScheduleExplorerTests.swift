import Exclusion
import ExclusionTestSupport
import ExclusionTesting
import Testing

/// The four bugs of issue #32 that a scheduler rarely shows (`Support/PlantedBugs.swift`), each
/// found by the explorer, and each fix passing with every schedule within the bound explored.
///
/// The search's order is fixed, so "found within N schedules" is a fact about the code, not luck:
/// each bug is found in the first scenario of seed 7, by a schedule with one preemption (the
/// fewest that fail), within the number of schedules its test states.
@Suite("ScheduleExplorer finds the planted bugs", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
struct ScheduleExplorerTests {
    @Test func aTransferThatChecksTheBalanceInOneAccessAndMovesTheMoneyInAnotherIsFound() async throws {
        let report = try await explore(
            plantedBugExplorer(TransferModel()), setUp: { Ledger(checksInItsOwnAccess: true) },
            inputs: TransferModel.generate, perform: { $0.apply($1) })
        let failure = try #require(report.failure, "\(report)")
        #expect(failure.kind == .notLinearizable)
        #expect(report.schedulesExplored <= 5, "\(report)")
        #expect(failure.schedule.preemptions == 1)
        #expect(failure.table.contains("* the step preempted the thread that ran before it"))
        #expect(!failure.excerpt.isEmpty)
    }

    @Test func aTransferInOneAccessPassesEverySchedule() async throws {
        let report = try await explore(
            plantedBugExplorer(TransferModel()), setUp: { Ledger(checksInItsOwnAccess: false) },
            inputs: TransferModel.generate, perform: { $0.apply($1) })
        #expect(report.passed, "\(report)")
        #expect(report.isExhaustive)
        #expect(report.scenariosExplored == 10)
    }

    @Test func aSharedObjectCreatedLazilyWithCheckThenActIsFound() async throws {
        let report = try await explore(
            plantedBugExplorer(IncrementModel()), setUp: { LazyCounter(checksThenActs: true) },
            inputs: { _ in .increment }, perform: { counter, _ in counter.increment() })
        let failure = try #require(report.failure, "\(report)")
        #expect(failure.kind == .notLinearizable)
        #expect(report.schedulesExplored <= 5, "\(report)")
        #expect(failure.schedule.preemptions == 1)
    }

    @Test func aSharedObjectCreatedInOneAccessPassesEverySchedule() async throws {
        let report = try await explore(
            plantedBugExplorer(IncrementModel()), setUp: { LazyCounter(checksThenActs: false) },
            inputs: { _ in .increment }, perform: { counter, _ in counter.increment() })
        #expect(report.passed, "\(report)")
        #expect(report.isExhaustive)
    }

    @Test func aTotalSummedOverInstancesOneAtATimeIsFound() async throws {
        let report = try await explore(
            plantedBugExplorer(TotalModel()), setUp: { Accounts(sumsOneAtATime: true) },
            inputs: TotalModel.generate, perform: { $0.apply($1) })
        let failure = try #require(report.failure, "\(report)")
        #expect(failure.kind == .notLinearizable)
        #expect(report.schedulesExplored <= 5, "\(report)")
        #expect(failure.schedule.preemptions == 1)
    }

    @Test func aTotalThatHoldsEveryInstancePassesEverySchedule() async throws {
        var explorer = plantedBugExplorer(TotalModel())
        explorer.lockOrder = .always
        let report = try await explore(
            explorer, setUp: { Accounts(sumsOneAtATime: false) }, inputs: TotalModel.generate,
            perform: { $0.apply($1) })
        #expect(report.passed, "\(report)")
        #expect(report.isExhaustive)
    }

    @Test func twoInstancesNestedInOppositeOrdersDeadlockAndTheDeadlockIsReported() async throws {
        var explorer = plantedBugExplorer(SwapModel())
        explorer.lockOrder = .never
        let report = try await explore(
            explorer, setUp: { Pair(nestsSourceFirst: true) }, inputs: SwapModel.generate, perform: { $0.apply($1) })
        let failure = try #require(report.failure, "\(report)")
        #expect(failure.kind == .deadlock)
        #expect(report.schedulesExplored <= 5, "\(report)")
        #expect(failure.schedule.preemptions == 1)
        #expect(failure.message.contains("thread 0 waits to access \"B\", held by thread 1"))
        #expect(failure.table.contains("deadlocked"))
    }

    @Test func twoInstancesNestedInOppositeOrdersAreALockOrderInversionWhereExclusionChecksTheOrder() async throws {
        var explorer = plantedBugExplorer(SwapModel())
        explorer.lockOrder = .always
        let report = try await explore(
            explorer, setUp: { Pair(nestsSourceFirst: true) }, inputs: SwapModel.generate, perform: { $0.apply($1) })
        let failure = try #require(report.failure, "\(report)")
        // Exclusion stops the process at the second nesting, however the threads interleave: the
        // first schedule, which preempts nothing, already shows it.
        #expect(failure.kind == .lockOrderInversion)
        #expect(report.schedulesExplored == 1)
        #expect(failure.schedule.preemptions == 0)
    }

    @Test func twoInstancesNestedInOneOrderPassEverySchedule() async throws {
        var explorer = plantedBugExplorer(SwapModel())
        explorer.lockOrder = .always
        let report = try await explore(
            explorer, setUp: { Pair(nestsSourceFirst: false) }, inputs: SwapModel.generate, perform: { $0.apply($1) })
        #expect(report.passed, "\(report)")
        #expect(report.isExhaustive)
    }

    @Test func aRandomizedSearchFindsTheTransferAndMinimizesItsSchedule() async throws {
        var explorer = plantedBugExplorer(TransferModel())
        explorer.search = .randomized(schedules: 200)
        let report = try await explore(
            explorer, setUp: { Ledger(checksInItsOwnAccess: true) }, inputs: TransferModel.generate,
            perform: { $0.apply($1) })
        let failure = try #require(report.failure, "\(report)")
        #expect(failure.kind == .notLinearizable)
        #expect(failure.schedule.preemptions == 1)
        #expect(!report.isExhaustive)
    }

    // MARK: - The awaited twins

    /// The failure's preemptions when `perform` runs synchronously, then awaited.
    private func preemptions<Model: SequentialModel, Object: Sendable>(
        _ explorer: ScheduleExplorer<Model>, setUp: @escaping @Sendable () -> Object,
        inputs: @escaping @Sendable (inout ScenarioGenerator) -> Model.Input,
        perform: @escaping @Sendable (Object, Model.Input) -> Model.Output,
        performAwaited: @escaping @Sendable (Object, Model.Input) async -> Model.Output
    ) async throws -> (synchronous: Int?, awaited: Int?) {
        let synchronous = try await explore(explorer, setUp: setUp, inputs: inputs, perform: perform)
        let awaited = try await explore(explorer, setUp: setUp, inputs: inputs, performAsync: performAwaited)
        #expect(awaited.notes.isEmpty, "\(awaited)")
        return (synchronous.failure?.schedule.preemptions, awaited.failure?.schedule.preemptions)
    }

    @Test func theAwaitedTwinOfEachPlantedBugIsFoundWithAsManyPreemptions() async throws {
        let transfer = try await preemptions(
            plantedBugExplorer(TransferModel()), setUp: { Ledger(checksInItsOwnAccess: true) },
            inputs: TransferModel.generate, perform: { $0.apply($1) }, performAwaited: { await $0.applyAwaited($1) })
        #expect(transfer.synchronous == 1 && transfer.awaited == 1, "\(transfer)")

        let lazy = try await preemptions(
            plantedBugExplorer(IncrementModel()), setUp: { LazyCounter(checksThenActs: true) },
            inputs: { _ in .increment }, perform: { counter, _ in counter.increment() },
            performAwaited: { counter, _ in await counter.incrementAwaited() })
        #expect(lazy.synchronous == 1 && lazy.awaited == 1, "\(lazy)")

        let total = try await preemptions(
            plantedBugExplorer(TotalModel()), setUp: { Accounts(sumsOneAtATime: true) }, inputs: TotalModel.generate,
            perform: { $0.apply($1) }, performAwaited: { await $0.applyAwaited($1) })
        #expect(total.synchronous == 1 && total.awaited == 1, "\(total)")

        var swapping = plantedBugExplorer(SwapModel())
        swapping.lockOrder = .never
        let deadlock = try await preemptions(
            swapping, setUp: { Pair(nestsSourceFirst: true) }, inputs: SwapModel.generate,
            perform: { $0.apply($1) }, performAwaited: { await $0.applyAwaited($1) })
        #expect(deadlock.synchronous == 1 && deadlock.awaited == 1, "\(deadlock)")
    }

    @Test func theAwaitedTwinsFixesPassEverySchedule() async throws {
        let transfer = try await explore(
            plantedBugExplorer(TransferModel()), setUp: { Ledger(checksInItsOwnAccess: false) },
            inputs: TransferModel.generate, performAsync: { await $0.applyAwaited($1) })
        #expect(transfer.passed && transfer.isExhaustive, "\(transfer)")
        let lazy = try await explore(
            plantedBugExplorer(IncrementModel()), setUp: { LazyCounter(checksThenActs: false) },
            inputs: { _ in .increment }, performAsync: { counter, _ in await counter.incrementAwaited() })
        #expect(lazy.passed && lazy.isExhaustive, "\(lazy)")
    }
}
