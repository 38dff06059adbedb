import Dispatch
@_spi(ScheduleExploration) import Exclusion
import Foundation
import Synchronization

#if !canImport(Darwin)
@_spi(ExperimentalScheduling) import _Concurrency
#endif

/// Where the tasks of a scenario's asynchronous operations run: each task on the entity it belongs
/// to, one job at a time, so that the explorer sees a suspended task as an entity waiting to go on.
///
/// An operation's task belongs to the scenario thread that runs the operation. A task that an
/// operation's task starts and that runs here too (as `async let` and task-group children do, which
/// inherit the executor their parent prefers) is a child task: it gets an entity of its own, so
/// that its steps interleave with its parent's, and with everyone else's, as a thread's would.
/// Tasks are told apart by their ids, which a job's description carries (`UnownedJob(id: 7)`).
///
/// Actors (those with no executor of their own) run here too: a task that prefers an executor
/// takes it to the actors it calls. A hop onto an actor is never run in place on a task executor:
/// the task waits in the actor's queue, and the actor, if it was idle, is scheduled with a job of
/// no task (`UnownedJob(id: nil)`) that runs its queue. That job gets an entity of its own, whose
/// steps are the tasks' turns in the actor; a task that leaves the actor is enqueued here again,
/// on its own entity.
///
/// The main actor runs here too, through ``mainActor``, which stands in for the main executor on
/// the execution's threads (`ScenarioMainActor`): a task's turn on the main actor is a job of its
/// own entity, which begins a step of its own, once the main actor is free. The tasks that wait
/// for it take their turns in the order the schedule grants them, as if each had joined the main
/// actor's queue at that moment: a task that hops onto the main actor may always be slower to
/// get there than another, and nothing it did depends on when it got there.
final class ScenarioTaskExecutor: TaskExecutor {
    /// A job waiting to run, and whether it runs on the main actor.
    fileprivate struct Queued {
        let job: UnownedJob
        let onMainActor: Bool
    }

    fileprivate struct Queues {
        var jobs: [Int: [Queued]] = [:]
        var owners: [UInt64: Int] = [:]
        /// The entity the next new task belongs to: a scenario thread starting an operation's task.
        var adopting: Int?
        /// Jobs that came from outside the explorer (a timer, a dispatch queue, another executor),
        /// in the order they came, not yet handed to their entities.
        var arrivals: [(owner: Int, job: Queued)] = []
        /// The entity whose turn on the main actor runs now.
        var mainActorHolder: Int?
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

    /// Where the main actor's jobs go, on the execution's threads; made at first use.
    var mainActor: ScenarioMainActor {
        madeMainActor.withLock { made in
            if let made { return made }
            let mainActor = ScenarioMainActor(self)
            made = mainActor
            return mainActor
        }
    }

    private let madeMainActor = Mutex<ScenarioMainActor?>(nil)

    init(_ execution: ScheduledExecution) {
        self.execution = execution
        RuntimeHooks.install()
    }

    /// Queues a job: at once if one of the execution's threads enqueues it in its step (a release
    /// that resumes a waiting task, a child task that starts or ends); from outside, it waits
    /// until the coordinator hands it over (`awaitArrival`), at a point of the schedule that is
    /// the same every time it runs.
    func enqueue(_ job: consuming ExecutorJob) {
        enqueue(UnownedJob(job), onMainActor: false)
    }

    /// Queues a job, as `enqueue(_:)` does; one for the main actor takes its turn there. A task
    /// that isn't the explorer's yet, enqueued here by the main actor or the global executor, was
    /// started with `Task { }` or `Task.detached`, not as a child task (which would prefer this
    /// executor).
    func enqueue(_ job: UnownedJob, onMainActor: Bool, global: Bool = false) {
        guard let execution else { return }  // Over: nothing will run it.
        let task = Self.taskID(of: job)
        let fromInside = isCalledFromInside
        let newcomer = queues.withLock { queues -> Newcomer? in
            guard fromInside else { return nil }
            guard let task else { return queues.adopting == nil ? .actorJobs : nil }
            guard queues.owners[task] == nil else { return nil }
            if let entity = queues.adopting {
                queues.owners[task] = entity
                queues.adopting = nil
                return nil
            }
            return .childTask
        }
        // A new entity, made outside the lock: the execution takes its own.
        let newOwner: Int? =
            switch newcomer {
            case .childTask: execution.childTaskStarted(unstructured: onMainActor || global)
            case .actorJobs: execution.actorJobsScheduled()
            case nil: nil
            }
        let running = execution.runningEntity
        let owner = queues.withLock { queues in
            if let task, let newOwner { queues.owners[task] = newOwner }
            let owner = newOwner ?? task.flatMap { queues.owners[$0] } ?? queues.adopting ?? running
            if fromInside {
                queues.jobs[owner, default: []].append(Queued(job: job, onMainActor: onMainActor))
            } else {
                queues.arrivals.append((owner, Queued(job: job, onMainActor: onMainActor)))
            }
            return owner
        }
        if fromInside {
            execution.noteEnabled(owner)
        } else {
            arrived.signal()
        }
    }

    /// Queues a job for the global executor: a task started with `Task { }` or `Task.detached` by
    /// one of the execution's threads, and its jobs after (`RuntimeHooks`).
    func enqueueGlobal(_ job: UnownedJob) {
        let fromInside = isCalledFromInside
        if fromInside, let task = Self.taskID(of: job), queues.withLock({ $0.owners[task] == nil }) {
            RuntimeHooks.startedGlobally(task, on: self)
        }
        enqueue(job, onMainActor: false, global: true)
    }

    /// Whether the calling thread is one of the execution's.
    private var isCalledFromInside: Bool {
        EntityController.current?.execution === execution
    }

    /// What a job enqueued by a step, of no entity yet, starts.
    private enum Newcomer {
        /// A task: a child task of the running one.
        case childTask
        /// An actor's jobs: it was idle, and a task hopped onto it.
        case actorJobs
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

    /// Whether `entity`'s task has a job, runnable now or not.
    func hasJobs(for entity: Int) -> Bool { queues.withLock { !($0.jobs[entity] ?? []).isEmpty } }

    /// Whether `entity`'s task has a job it can run now: one off the main actor, or one on it
    /// while no other task's turn runs there.
    func canRunNextJob(for entity: Int) -> Bool {
        queues.withLock { queues in queues.jobs[entity]?.first.map { queues.mayRun($0) } ?? false }
    }

    /// Whether `entity`'s next job is a turn on the main actor.
    func nextJobIsOnTheMainActor(of entity: Int) -> Bool {
        queues.withLock { $0.jobs[entity]?.first?.onMainActor ?? false }
    }

    /// The entity whose turn on the main actor runs now, if `entity`'s next job waits for it.
    func mainActorHolder(keeping entity: Int) -> Int? {
        queues.withLock { queues in
            guard let next = queues.jobs[entity]?.first, !queues.mayRun(next) else { return nil }
            return queues.mainActorHolder
        }
    }

    /// The next task started (on this executor, from `entity`'s thread) belongs to `entity`.
    func adoptNextTask(for entity: Int) {
        queues.withLock { $0.adopting = entity }
    }

    /// Runs `entity`'s oldest job on the calling thread, on the main actor if it is to run there;
    /// returns what it ran, or nil if it had none it could run. A turn on the main actor begins
    /// only in a step of its own, `granted` for it: the order of turns is the order of the steps
    /// that take them.
    @discardableResult
    func runNextJob(for entity: Int, granted: Bool = true) -> RanJob? {
        guard
            let next = queues.withLock({ queues -> Queued? in
                guard var jobs = queues.jobs[entity], let first = jobs.first, queues.mayRun(first),
                    granted || !first.onMainActor
                else { return nil }
                jobs.removeFirst()
                queues.jobs[entity] = jobs
                if first.onMainActor { queues.mainActorHolder = entity }
                return first
            })
        else { return nil }
        if next.onMainActor {
            // Its turn ends when the job does: the task suspends, or leaves the main actor.
            next.job.runSynchronously(
                isolatedTo: mainActor.asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
            queues.withLock { $0.mainActorHolder = nil }
        } else {
            next.job.runSynchronously(on: asUnownedTaskExecutor())
        }
        return next.onMainActor ? .onTheMainActor : .elsewhere
    }

    /// Where a job ran.
    enum RanJob {
        case elsewhere
        /// A turn on the main actor: what the task does after it begins a step of its own, as
        /// it may come after other tasks' steps (a hop onto an actor, say).
        case onTheMainActor
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

extension ScenarioTaskExecutor.Queues {
    /// Whether `job` may run now: off the main actor, or on it while no turn runs there.
    func mayRun(_ job: ScenarioTaskExecutor.Queued) -> Bool {
        !job.onMainActor || mainActorHolder == nil
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
