import Dispatch
@_spi(ScheduleExploration) import Exclusion
import Foundation

/// One thing an execution runs a step at a time, on a thread of its own: a scenario thread, or a
/// drain of work submitted to an instance.
final class ScheduledEntity: @unchecked Sendable {
    // @unchecked: `pending`, `held` and `grant` are only touched while the execution's lock is
    // held; `wake` is a semaphore, and the rest is immutable.

    /// What an entity standing at a switch point waits to do.
    enum Pending {
        /// Run up to its first switch point (a scenario thread before its first operation).
        case start
        /// Begin `access` of an instance, at `site`: take it, shared or exclusively, or (for an
        /// access that never waits) suspend, give up or submit if it is held.
        case begin(ScheduledInstance, ScheduledAccess, site: String)
        /// Take an instance again to check a condition that was false when the instance's
        /// changes numbered `since`; with `canTimeOut`, give up instead once nothing else can run.
        case recheck(ScheduledInstance, since: Int, canTimeOut: Bool)
        /// Run its suspended task on, once the task's executor has a job.
        case resume
        /// Run the work submitted to an instance.
        case drain(ScheduledInstance)
        case running
        case finished
        /// Stopped for good at a failure: it can't go on without breaking the process.
        case abandoned
    }

    /// How an entity goes on.
    enum Grant {
        case proceed
        /// A wait with a time limit gives up: for the lock, while another entity holds the
        /// instance; for a condition, once nothing else can go on.
        case timeOut
        /// The execution is over: a child task's entity, waiting for a job that won't come, ends.
        case end
    }

    /// An instance the entity is inside, outermost first.
    struct Held {
        let instance: ScheduledInstance
        /// The instance's number in the execution, in the order it was first met.
        let number: Int
        let shared: Bool
    }

    /// Its column in the schedule's table, numbered from 0: scenario threads first, then drains.
    let number: Int
    let name: String
    /// Whether it runs the work submitted to an instance, rather than a scenario's operations.
    let isDrain: Bool
    /// Whether it runs a child task that an operation started (`async let`, a task group's child):
    /// it has nothing left to do when it has no job and the scenario's threads have finished.
    let isChildTask: Bool
    /// Whether it runs an actor's jobs: the job an actor gets scheduled with when a task hops onto
    /// it, which runs the tasks waiting in the actor's queue, one after another, in the actor.
    let runsActorJobs: Bool
    /// Whether it runs the checks of an exploration without a model: it starts once every other
    /// thread and drain has finished.
    let isFinal: Bool
    /// Where the tasks of asynchronous operations run, each on its entity, if they are asynchronous.
    let executor: ScenarioTaskExecutor?
    let wake = DispatchSemaphore(value: 0)

    var pending = Pending.start
    var held: [Held] = []
    var grant = Grant.proceed
    /// Whether its last step gave up a try (an `...IfAvailable` access found the instance held),
    /// or tried again what its last step tried: it yields to the others.
    var yielded = false
    /// What its last step tried, if it began an `...IfAvailable` access.
    var lastTry: String?
    /// The instance in whose line its task waits, since it last suspended there: a step of
    /// another entity resumes it, unless the wait can time out (a timer outside resumes it then).
    var taskWaitsIn: (instance: ScheduledInstance, canTimeOut: Bool)?

    init(
        number: Int, name: String, executor: ScenarioTaskExecutor? = nil, drainOf instance: ScheduledInstance? = nil,
        childTask: Bool = false, actorJobs: Bool = false, final: Bool = false
    ) {
        self.number = number
        self.name = name
        isDrain = instance != nil
        isChildTask = childTask
        runsActorJobs = actorJobs
        isFinal = final
        if let instance { pending = .drain(instance) }
        if childTask || actorJobs { pending = .resume }
        self.executor = executor
    }

    /// Whether it has nothing left to do, for good or because it was stopped.
    var isDone: Bool {
        switch pending {
        case .finished, .abandoned: true
        default: false
        }
    }

    /// Starts the entity's thread: handed to the explorer, it waits for its first step, runs
    /// `body`, and says it finished.
    func start(in execution: ScheduledExecution, _ body: @escaping @Sendable () -> Void) {
        EntityThreads.shared.run(named: "schedule explorer: \(name)") {
            ScheduleSeam.controlCurrentThread(with: EntityController(execution: execution, entity: self))
            _ = execution.awaitGrant(self)
            body()
            execution.finish(self)
            ScheduleSeam.releaseCurrentThread()
        }
    }
}

/// Runs an entity's thread for Exclusion's seam: each synchronization point becomes a switch
/// point of the execution.
final class EntityController: ScheduleController {
    let execution: ScheduledExecution
    let entity: ScheduledEntity

    init(execution: ScheduledExecution, entity: ScheduledEntity) {
        self.execution = execution
        self.entity = entity
    }

    /// The controller of the calling thread, if it is an entity's thread running the entity's
    /// code; nil on any other thread, and on an entity's thread while it makes the execution's next
    /// decision, which it does as the coordinator would (a sleep it ends there, say, comes back
    /// from outside, the way it does on the coordinator).
    static var current: EntityController? {
        guard let controller = ScheduleSeam.currentController as? EntityController,
            !controller.execution.isDeciding.load(ordering: .relaxed)
        else { return nil }
        return controller
    }

    func willAcquire(_ instance: ScheduledInstance, _ access: ScheduledAccess, site: String) -> Bool {
        execution.willAcquire(entity, instance, access, site: site)
    }

    func conditionUnmet(on instance: ScheduledInstance, canTimeOut: Bool) -> Bool {
        execution.conditionUnmet(entity, instance, canTimeOut: canTimeOut)
    }

    func drainScheduled(for instance: ScheduledInstance, _ drain: @escaping @Sendable () -> Void) {
        execution.drainScheduled(by: entity, instance, drain)
    }

    func taskWillWait(in instance: ScheduledInstance, canTimeOut: Bool) {
        execution.taskWillWait(entity, in: instance, canTimeOut: canTimeOut)
    }

    func trapped(signal: Int32) {
        execution.trapped(entity, signal: signal)
    }
}
