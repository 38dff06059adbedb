import ExclusionTestSupport
import ExclusionTesting
import Testing

/// Runs `explorer` over a scenario whose operations are synchronous, for at most a workload's
/// patience: an exploration that hangs fails the test, saying so, instead of stalling the run.
func explore<Model: SequentialModel, Object: Sendable>(
    _ explorer: ScheduleExplorer<Model>, sourceLocation: SourceLocation = #_sourceLocation,
    setUp: @escaping @Sendable () -> Object, inputs: @escaping @Sendable (inout ScenarioGenerator) -> Model.Input,
    perform: @escaping @Sendable (Object, Model.Input) throws -> Model.Output
) async throws -> ScheduleReport<Model.Input, Model.Output> {
    try await within(workloadPatience, "the exploration to end", sourceLocation: sourceLocation) {
        await explorer.run(setUp: setUp, inputs: inputs, perform: perform)
    }
}

/// `explore` for operations that are `async`.
func explore<Model: SequentialModel, Object: Sendable>(
    _ explorer: ScheduleExplorer<Model>, sourceLocation: SourceLocation = #_sourceLocation,
    setUp: @escaping @Sendable () -> Object, inputs: @escaping @Sendable (inout ScenarioGenerator) -> Model.Input,
    performAsync perform: @escaping @Sendable (Object, Model.Input) async throws -> Model.Output
) async throws -> ScheduleReport<Model.Input, Model.Output> {
    try await within(workloadPatience, "the exploration to end", sourceLocation: sourceLocation) {
        await explorer.run(setUp: setUp, inputs: inputs, perform: perform)
    }
}

/// The explorer the planted bugs' tests use: two threads of one or two operations each, at most
/// two preemptions, seed 7.
func plantedBugExplorer<Model: SequentialModel>(_ model: Model) -> ScheduleExplorer<Model> {
    ScheduleExplorer(model: model, threads: 2, operationsPerThread: 1...2, preemptionBound: 2, seed: 7)
}

/// Replays `schedule` with `explorer`, for at most a workload's patience, as an exploration.
func replay<Model: SequentialModel, Object: Sendable>(
    _ schedule: Schedule, with explorer: ScheduleExplorer<Model>, sourceLocation: SourceLocation = #_sourceLocation,
    setUp: @escaping @Sendable () -> Object, inputs: @escaping @Sendable (inout ScenarioGenerator) -> Model.Input,
    perform: @escaping @Sendable (Object, Model.Input) throws -> Model.Output
) async throws -> ScheduleReport<Model.Input, Model.Output> {
    try await within(workloadPatience, "the replay to end", sourceLocation: sourceLocation) {
        await explorer.replay(schedule, setUp: setUp, inputs: inputs, perform: perform)
    }
}
