/// The main actor, as the threads of an execution see it: a serial executor whose jobs the
/// explorer runs, each on the entity of its task, one turn at a time, in the order the schedule
/// grants them.
///
/// Swift finds the main actor's executor by asking the runtime for the main executor, which asks
/// a hook first if one is set: on a thread the explorer runs, the hook answers with the
/// execution's `ScenarioMainActor` (see `RuntimeHooks`).
///
/// Code isolated to the main actor runs on the explorer's threads, not on the main thread: a check
/// of the thread (`Thread.isMainThread`, `dispatchPrecondition(condition: .onQueue(.main))`) fails
/// there, while Swift's checks of isolation (`MainActor.assumeIsolated`) pass.
final class ScenarioMainActor: SerialExecutor {
    private unowned let tasks: ScenarioTaskExecutor

    init(_ tasks: ScenarioTaskExecutor) {
        self.tasks = tasks
    }

    func enqueue(_ job: consuming ExecutorJob) {
        tasks.enqueue(UnownedJob(job), onMainActor: true)
    }
}
