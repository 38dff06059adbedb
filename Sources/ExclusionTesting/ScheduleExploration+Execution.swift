@_spi(ScheduleExploration) import Exclusion
import Synchronization

/// How a scenario applies one operation to its object.
enum ScenarioOperation<Object, Input, Output>: Sendable {
    case synchronous(@Sendable (Object, Input) throws -> Output)
    case asynchronous(@Sendable (Object, Input) async throws -> Output)
    /// Each input one way or the other: synchronously if `synchronously` gives a body for it.
    case either(
        synchronously: @Sendable (Object, Input) -> (() throws -> Output)?,
        asynchronously: @Sendable (Object, Input) async throws -> Output)
}

/// What one execution did, and whether it failed.
struct ExecutionOutcome<Input: Sendable, Output: Sendable> {
    typealias Failure = ScheduleReport<Input, Output>.Failure

    var decisions: [Decision] = []
    var steps: [ScheduleStep] = []
    var failure: (kind: Failure.Kind, message: String)?
    var excerpt: [HistoryOperation<Input, Output>] = []
    var history: [HistoryOperation<Input, Output>] = []
    var table = ""
    /// The checker's budget ran out on its history.
    var undecided = false
    /// An instance was taken with no switch point before it.
    var usedUnseen = false
    /// A task was resumed from outside the explorer.
    var resumedFromOutside = false
    /// For a trap, what the runtime said before it, as the trapping thread found it in the
    /// runtime's record of fatal errors; nil where the runtime keeps no such record.
    var trapMessage: TrapMessage?

    enum TrapMessage {
        case said(String)
        /// The runtime reported nothing (a release build's `precondition` traps without a word).
        case nothing
    }

    var choices: [Int] { decisions.map(\.chosen) }
    var preemptions: Int { decisions.filter { $0.preempts(for: $0.chosen) }.count }
}

extension ScheduleExploration {
    /// Runs `programs` on a fresh object, one step at a time as `chooser` picks, and checks the
    /// history.
    func execute(_ programs: [[Model.Input]], _ chooser: inout some ScheduleChooser) -> Outcome {
        let lockOrder = explorer.lockOrder
        let execution = ScheduledExecution(
            stepLimit: explorer.stepTimeLimit, outsideWaitLimit: explorer.outsideWaitLimit,
            checksLockOrder: lockOrder == .always || (lockOrder == .asExclusionDoes && ScheduleSeam.checksLockOrder))
        let object = setUp()
        let history = Mutex<[HistoryOperation<Model.Input, Model.Output>]>([])
        let isAsynchronous = if case .synchronous = operation { false } else { true }
        let executor = isAsynchronous ? ScenarioTaskExecutor(execution) : nil
        let threads = programs.indices.map { thread in
            ScheduledEntity(number: thread, name: "thread \(thread)", executor: executor)
        }
        // The checks that run once every thread has finished, as one more entity.
        let checks = finally.map { _ in
            ScheduledEntity(number: programs.count, name: "finally", executor: executor, final: true)
        }
        execution.lock.withLock { execution.entities = threads + (checks.map { [$0] } ?? []) }
        let recordsHistory = self.recordsHistory
        for (thread, program) in programs.enumerated() {
            let operation = self.operation
            threads[thread].start(in: execution) {
                for input in program {
                    let call = recordsHistory ? execution.noteCall(threads[thread], input) : 0
                    switch Self.apply(operation, object, input, on: threads[thread], execution) {
                    case .success(let output) where recordsHistory:
                        let returned = execution.noteReturn(threads[thread], output)
                        let done = HistoryOperation(
                            thread: thread, input: input, output: output, call: call, return: returned)
                        history.withLock { $0.append(done) }
                    case .success:
                        break
                    case .failure(let error):
                        execution.noteThrow(threads[thread], "\(input)", error)
                    }
                }
            }
        }
        if let checks, let finally {
            checks.start(in: execution) {
                do { try finally(object) } catch { execution.noteThrow(checks, "its check", error) }
            }
        }
        var outcome = Outcome()
        // Each step is granted on the thread that ends the one before: see `ScheduleDriver`.
        let driver = ScheduleDriver(execution, chooser, starting: programs.indices)
        execution.lock.withLock { execution.driver = driver }
        driver.run()
        execution.lock.withLock { execution.driver = nil }  // Each holds the other.
        (outcome.decisions, chooser) = driver.results
        execution.endChildTasks()
        if let executor { RuntimeHooks.forget(tasksOf: executor) }
        execution.noteTrap()
        outcome.steps = execution.lock.withLock { execution.steps }
        outcome.history = history.withLock { $0 }.sorted { $0.call < $1.call }
        (outcome.usedUnseen, outcome.resumedFromOutside) = execution.lock.withLock {
            (execution.usedUnseen, execution.resumedFromOutside)
        }
        judge(execution, &outcome)
        if outcome.failure != nil {  // only a failure's table is shown
            outcome.table = execution.lock.withLock {
                ScheduleTable.render(columns: execution.entities.map(\.name), events: execution.events)
            }
        }
        return outcome
    }

    /// What the execution's end says: a failure it stopped at, a throw, or the history's verdict.
    private func judge(_ execution: ScheduledExecution, _ outcome: inout Outcome) {
        let (stopped, thrown) = execution.lock.withLock { (execution.failure, execution.thrown) }
        switch stopped {
        case .crashed(let entity, let signal, let said):
            let name = execution.lock.withLock { execution.entities[entity].name }
            outcome.failure = (.crashed, "\(name) trapped (\(TrapContainment.name(of: signal)))")
            outcome.trapMessage =
                said.map { .said($0.trimmingCharacters(in: .whitespaces)) }
                ?? (TrapContainment.fatalErrorMessages == nil ? nil : .nothing)
        case .reentrant(let message): outcome.failure = (.reentrantAccess, message)
        case .lockOrderInversion(let message): outcome.failure = (.lockOrderInversion, message)
        case .deadlock(let message): outcome.failure = (.deadlock, message)
        case .stuck(let message): outcome.failure = (.stuck, message)
        case .scheduleMismatch(let message): outcome.failure = (.scheduleMismatch, message)
        case nil:
            if let thrown { return outcome.failure = (.threw, thrown) }
            guard recordsHistory else { return }
            switch LinearizabilityChecker(model: explorer.model, budget: explorer.budget).check(outcome.history) {
            case .linearizable: break
            case .unknown: outcome.undecided = true
            case .notLinearizable(let excerpt):
                outcome.excerpt = excerpt
                outcome.failure = (
                    .notLinearizable,
                    "the history is not linearizable: no order of its operations "
                        + "explains their outputs"
                )
            }
        }
    }

    /// Applies one operation on the calling scenario thread: an asynchronous one in a task that
    /// runs on the thread itself, which stands at a switch point whenever the task is suspended.
    private static func apply(
        _ operation: ScenarioOperation<Object, Model.Input, Model.Output>, _ object: Object, _ input: Model.Input,
        on entity: ScheduledEntity, _ execution: ScheduledExecution
    ) -> Result<Model.Output, any Error> {
        switch operation {
        case .synchronous(let perform):
            return Result { try perform(object, input) }
        case .either(let synchronously, _) where synchronously(object, input) != nil:
            return Result { try synchronously(object, input)!() }
        case .asynchronous(let perform), .either(_, let perform):
            let executor = entity.executor!
            let result = Mutex<Result<Model.Output, any Error>?>(nil)
            executor.adoptNextTask(for: entity.number)
            Task(executorPreference: executor) {
                let outcome: Result<Model.Output, any Error>
                do { outcome = .success(try await perform(object, input)) } catch { outcome = .failure(error) }
                result.withLock { $0 = outcome }
            }
            // The task's first job runs in a step of its own, which may come after other threads'
            // steps: the first thing it does may be to join an actor's queue, or to take a turn
            // on the main actor. After that, a job the task enqueues for itself (a yield, a hop
            // off an actor) runs on in the same step: what the task does between its last switch
            // point and its next touches nothing another thread sees, so a switch there would
            // only repeat executions. A turn on the main actor begins a step, and ends one.
            execution.suspend(entity, starting: true)
            var granted = true
            while true {
                if let done = result.withLock({ $0 }) { return done }
                switch executor.runNextJob(for: entity.number, granted: granted) {
                case .elsewhere:
                    granted = false
                case .onTheMainActor, nil:
                    if let done = result.withLock({ $0 }) { return done }
                    execution.suspend(entity)
                    granted = true
                }
            }
        }
    }
}
