import Dispatch
@_spi(ScheduleExploration) import Exclusion
import Foundation
import Synchronization

#if !canImport(Darwin)
@_spi(ExperimentalScheduling) import _Concurrency
#endif

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
        childTask: Bool = false, final: Bool = false
    ) {
        self.number = number
        self.name = name
        isDrain = instance != nil
        isChildTask = childTask
        isFinal = final
        if let instance { pending = .drain(instance) }
        if childTask { pending = .resume }
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

/// Where the tasks of a scenario's asynchronous operations run: each task on the entity it belongs
/// to, one job at a time, so that the explorer sees a suspended task as an entity waiting to go on.
///
/// An operation's task belongs to the scenario thread that runs the operation. A task that an
/// operation's task starts and that runs here too (as `async let` and task-group children do, which
/// inherit the executor their parent prefers) is a child task: it gets an entity of its own, so
/// that its steps interleave with its parent's, and with everyone else's, as a thread's would.
/// Tasks are told apart by their ids, which a job's description carries (`UnownedJob(id: 7)`).
final class ScenarioTaskExecutor: TaskExecutor {
    private struct Queues {
        var jobs: [Int: [UnownedJob]] = [:]
        var owners: [UInt64: Int] = [:]
        /// The entity the next new task belongs to: a scenario thread starting an operation's task.
        var adopting: Int?
        /// Jobs that came from outside the explorer (a timer, a dispatch queue, another executor),
        /// in the order they came, not yet handed to their entities.
        var arrivals: [(owner: Int, job: UnownedJob)] = []
        /// The jobs that end sleeps, in virtual time: each with its deadline in milliseconds of
        /// virtual time, the order the sleeps began in, and the entity whose task sleeps.
        var sleepers: [(deadline: Int64, order: Int, owner: Int, job: UnownedJob)] = []
        var sleeps = 0
        /// Virtual time, in milliseconds: the latest deadline reached.
        var now: Int64 = 0
    }

    private let queues = Mutex(Queues())
    /// Signalled once for every arrival.
    private let arrived = DispatchSemaphore(value: 0)
    /// The execution whose entities run the tasks: it makes a child task's entity, and says who
    /// runs (a job of no task this executor knows belongs to the entity running). Weak: a job
    /// can come from outside after the execution is over.
    private weak let execution: ScheduledExecution?

    init(_ execution: ScheduledExecution) {
        self.execution = execution
    }

    /// Queues a job: at once if one of the execution's threads enqueues it in its step (a release
    /// that resumes a waiting task, a child task that starts or ends); from outside, it waits
    /// until the coordinator hands it over (`awaitArrival`), at a point of the schedule that is
    /// the same every time it runs.
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        guard let execution else { return }  // Over: nothing will run it.
        let task = Self.taskID(of: job)
        let fromInside = (ScheduleSeam.currentController as? EntityController)?.execution === execution
        let isNew = queues.withLock { queues in
            guard fromInside, let task, queues.owners[task] == nil else { return false }
            if let entity = queues.adopting {
                queues.owners[task] = entity
                queues.adopting = nil
                return false
            }
            return true
        }
        // A new child task's entity, made outside the lock: the execution takes its own.
        let newOwner = isNew ? execution.childTaskStarted() : nil
        let running = execution.runningEntity
        let owner = queues.withLock { queues in
            if let task, let newOwner { queues.owners[task] = newOwner }
            let owner = task.flatMap { queues.owners[$0] } ?? queues.adopting ?? running
            if fromInside {
                queues.jobs[owner, default: []].append(job)
            } else {
                queues.arrivals.append((owner, job))
            }
            return owner
        }
        if fromInside {
            execution.noteEnabled(owner)
        } else {
            arrived.signal()
        }
    }

    /// Waits up to `limit` for a job from outside, and hands the first that came to its entity;
    /// returns the entity, or nil if none came.
    func awaitArrival(within limit: Duration) -> Int? {
        guard arrived.wait(timeout: .now() + .nanoseconds(nanoseconds(limit))) == .success else { return nil }
        return queues.withLock { queues in
            let (owner, job) = queues.arrivals.removeFirst()
            queues.jobs[owner, default: []].append(job)
            return owner
        }
    }

    /// Whether a job came from outside and waits to be handed over.
    var hasArrivals: Bool { queues.withLock { !$0.arrivals.isEmpty } }

    /// A task begins a sleep of `delay`: the job that ends it waits for virtual time to reach
    /// its deadline. Deadlines are whole milliseconds, to the nearest: the delay comes back from
    /// the instant the sleep asked for, less the microseconds since it asked.
    func sleep(_ job: UnownedJob, for delay: Duration) {
        let (seconds, attoseconds) = max(delay, .zero).components
        let milliseconds = seconds * 1_000 + (attoseconds + 500_000_000_000_000) / 1_000_000_000_000_000
        let owner = execution?.runningEntity ?? 0
        queues.withLock { queues in
            queues.sleepers.append((queues.now + milliseconds, queues.sleeps, owner, job))
            queues.sleeps += 1
        }
    }

    /// `entity`'s task goes on: a sleep it began and that hasn't ended was cancelled, and ending
    /// it would resume nothing.
    func forgetSleeps(of entity: Int) {
        queues.withLock { $0.sleepers.removeAll { $0.owner == entity } }
    }

    /// Moves virtual time to the earliest deadline of a sleep and ends that sleep: its task comes
    /// back, through the shared pool, as an arrival (`awaitArrival`). False if no task sleeps.
    func wakeNextSleeper() -> Bool {
        let next = queues.withLock { queues -> UnownedJob? in
            let sleepers = queues.sleepers
            guard
                let first = sleepers.indices.min(by: {
                    (sleepers[$0].deadline, sleepers[$0].order) < (sleepers[$1].deadline, sleepers[$1].order)
                })
            else { return nil }
            let sleeper = queues.sleepers.remove(at: first)
            queues.now = max(queues.now, sleeper.deadline)
            return sleeper.job
        }
        guard let next else { return false }
        next.runSynchronously(on: asUnownedTaskExecutor())
        return true
    }

    /// The next task started (on this executor, from `entity`'s thread) belongs to `entity`.
    func adoptNextTask(for entity: Int) {
        queues.withLock { $0.adopting = entity }
    }

    func hasJobs(for entity: Int) -> Bool { queues.withLock { !($0.jobs[entity] ?? []).isEmpty } }

    /// Runs `entity`'s oldest job on the calling thread; false if it had none.
    func runNextJob(for entity: Int) -> Bool {
        guard
            let job = queues.withLock({ queues -> UnownedJob? in
                guard var jobs = queues.jobs[entity], !jobs.isEmpty else { return nil }
                defer { queues.jobs[entity] = jobs }
                return jobs.removeFirst()
            })
        else { return false }
        job.runSynchronously(on: asUnownedTaskExecutor())
        return true
    }

    /// The id of the task whose job `job` is, from its description; nil if the description says
    /// none (the job then runs on the entity that was running).
    static func taskID(of job: UnownedJob) -> UInt64? {
        let text = job.description
        guard let start = text.range(of: "id: "), let end = text[start.upperBound...].firstIndex(of: ")") else {
            return nil
        }
        return UInt64(text[start.upperBound..<end])
    }
}

// Sleeps in virtual time: `Task.sleep` in a task that prefers a `SchedulingExecutor` hands the job
// that ends the sleep to that executor. The protocol is experimental (`@_spi`), and on Apple's
// platforms only in the SDKs of macOS and iOS 26.4, which can't be checked here: there, a sleep
// ends on a timer, and comes back as a job from outside the explorer.
#if !canImport(Darwin)
extension ScenarioTaskExecutor: SchedulingExecutor {
    func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
        sleep(UnownedJob(job), for: clock.now.duration(to: instant) as? Duration ?? .zero)
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C) {
        sleep(UnownedJob(job), for: delay as? Duration ?? .zero)
    }
}
#endif
