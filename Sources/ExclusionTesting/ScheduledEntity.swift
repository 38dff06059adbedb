import Dispatch
@_spi(ScheduleExploration) import Exclusion
import Foundation
import Synchronization

/// One thing an execution runs a step at a time, on a thread of its own: a scenario thread, or a
/// drain of work submitted to an instance.
final class ScheduledEntity: @unchecked Sendable {
    // @unchecked: `pending`, `held` and `grant` are only touched while the execution's lock is
    // held; `wake` is a semaphore, and the rest is immutable.

    /// What an entity standing at a switch point waits to do.
    enum Pending {
        /// Run up to its first switch point (a scenario thread before its first operation).
        case start
        /// Take an instance, shared or exclusively, in an access named `attempting`, at `site`.
        case begin(ScheduledInstance, shared: Bool, attempting: String, site: String)
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
        /// A conditional wait with a time limit gives up.
        case timeOut
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
    /// The executor of a scenario thread whose operations are asynchronous.
    let executor: ScenarioTaskExecutor?
    let wake = DispatchSemaphore(value: 0)

    var pending = Pending.start
    var held: [Held] = []
    var grant = Grant.proceed

    init(number: Int, name: String, executor: ScenarioTaskExecutor? = nil, drainOf instance: ScheduledInstance? = nil) {
        self.number = number
        self.name = name
        isDrain = instance != nil
        if let instance { pending = .drain(instance) }
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
        let thread = Thread {
            ScheduleSeam.controlCurrentThread(with: EntityController(execution: execution, entity: self))
            _ = execution.awaitGrant(self)
            body()
            execution.finish(self)
            ScheduleSeam.releaseCurrentThread()
        }
        thread.name = "schedule explorer: \(name)"
        thread.start()
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

    func willAcquire(
        _ instance: ScheduledInstance, shared: Bool, attempting: String, file: StaticString, line: UInt
    ) {
        // The call site without its module: `Transfers.swift:12`.
        let site = "\(file)".split(separator: "/").last.map(String.init) ?? "\(file)"
        execution.willAcquire(entity, instance, shared: shared, attempting: attempting, site: "\(site):\(line)")
    }

    func conditionUnmet(on instance: ScheduledInstance, canTimeOut: Bool) -> Bool {
        execution.conditionUnmet(entity, instance, canTimeOut: canTimeOut)
    }

    func drainScheduled(for instance: ScheduledInstance, _ drain: @escaping @Sendable () -> Void) {
        execution.drainScheduled(by: entity, instance, drain)
    }
}

/// Where a scenario thread runs the tasks of its asynchronous operations: on itself, one job at a
/// time, so that the explorer sees a suspended task as a thread waiting to go on.
final class ScenarioTaskExecutor: TaskExecutor {
    private let jobs = Mutex<[UnownedJob]>([])

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
    }

    var hasJobs: Bool { jobs.withLock { !$0.isEmpty } }

    /// Runs the oldest job on the calling thread; false if there was none.
    func runNextJob() -> Bool {
        guard let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { return false }
        job.runSynchronously(on: asUnownedTaskExecutor())
        return true
    }
}
