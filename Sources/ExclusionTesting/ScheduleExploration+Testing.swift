// For the explorer's own tests (`@testable import`): every execution of a scenario within a bound,
// with or without the partial-order reduction, to check that the reduction loses none.

extension ScheduleExploration {
    /// Every execution the systematic search runs for `programs` within `bound` preemptions;
    /// `after` sees each as it ends.
    func executions(
        _ programs: [[Model.Input]], bound: Int, reducing: Bool, after: (Outcome) -> Void = { _ in }
    ) -> [Outcome] {
        var search = SystematicSearch(bound: bound)
        search.reducing = reducing
        var outcomes: [Outcome] = []
        while let prefix = search.next() {
            var chooser = PrefixChooser(prefix: prefix)
            let outcome = execute(programs, &chooser)
            after(outcome)
            outcomes.append(outcome)
            search.explored(prefix, outcome.decisions, outcome.steps)
        }
        return outcomes
    }
}

extension ScheduleExplorer {
    /// An exploration of synchronous operations, for `ScheduleExploration.executions`.
    func exploration<Object: Sendable>(
        setUp: @escaping @Sendable () -> Object,
        perform: @escaping @Sendable (Object, Model.Input) throws -> Model.Output
    ) -> ScheduleExploration<Model, Object> {
        ScheduleExploration(self, setUp, { _ in fatalError("the tests give the programs") }, .synchronous(perform))
    }

    /// An exploration of asynchronous operations, for `ScheduleExploration.executions`.
    func exploration<Object: Sendable>(
        setUp: @escaping @Sendable () -> Object,
        performAsync perform: @escaping @Sendable (Object, Model.Input) async throws -> Model.Output
    ) -> ScheduleExploration<Model, Object> {
        ScheduleExploration(self, setUp, { _ in fatalError("the tests give the programs") }, .asynchronous(perform))
    }
}

extension ExecutionOutcome {
    /// What the execution did, up to the order of independent steps: for each instance, the order
    /// of the steps that changed it, and for each step that only read it, the change it saw. A step
    /// is named by its entity and its place among that entity's steps. Two executions that differ
    /// only in the order of independent steps have the same signature.
    var signature: [String] {
        var made: [Int: Int] = [:]
        var writes: [Int: [String]] = [:]
        var reads: [Int: [String]] = [:]
        for step in steps {
            made[step.entity, default: 0] += 1
            let name = "\(step.entity).\(made[step.entity]!)"
            for (instance, exclusively) in step.touched {
                if exclusively {
                    writes[instance, default: []].append(name)
                } else {
                    reads[instance, default: []].append("\(name) saw \(writes[instance]?.last ?? "none")")
                }
            }
        }
        return Set(writes.keys).union(reads.keys).sorted().map { instance in
            "\(instance): writes \(writes[instance] ?? []), reads \((reads[instance] ?? []).sorted())"
        }
    }
}
