import Dispatch
@_spi(ScheduleExploration) import Exclusion
import Foundation
import Synchronization

/// One run of a scenario under one schedule: its entities (the scenario's threads, and drains of
/// submitted work), what each waits to do, and the handshake that lets exactly one of them run at
/// a time.
///
/// An entity runs one step, up to its next switch point, and there makes the next decision
/// (`ScheduleDriver`): it runs on, or grants the step to another entity, wakes it and waits. The
/// coordinator (the explorer's own thread) grants the first step, and watches until the
/// execution ends, a thread traps, or a step outruns `stepLimit`. The explorer models who holds
/// which instance from what each entity's thread record says at its switch points, and lets an
/// entity take an instance only when the lock is free for it, so no entity ever waits inside
/// Exclusion: an entity that would is simply not enabled.
final class ScheduledExecution: @unchecked Sendable {
    // @unchecked: every var is only touched while `lock` is held: by the coordinator, or by the
    // one entity that runs (all others wait on their semaphores).
    let lock = NSLock()
    /// Signalled when the execution is over, or a thread traps.
    let coordinator = DispatchSemaphore(value: 0)
    let stepLimit: Duration
    /// How long to wait, once nothing can go on, for a job from outside.
    let outsideWaitLimit: Duration
    let checksLockOrder: Bool

    var entities: [ScheduledEntity] = []
    /// Instances by the order in which the execution met them, with their labels.
    var numbers: [ObjectIdentifier: Int] = [:]
    var labels: [String] = []
    /// For each instance, how many exclusive accesses ended (and so may have changed it): a
    /// conditional wait goes on once it grew.
    var versions: [Int] = []
    /// For the lock-order check: each nesting seen, outer → inner, with where it was first seen, in
    /// the order seen.
    var nestings: [Int: [(inner: Int, site: String)]] = [:]
    var steps: [ScheduleStep] = []
    var events: [ScheduleEvent] = []
    /// The history's clock: every call and return, in the order they happened.
    var clock: UInt64 = 0
    /// What stopped the execution.
    var failure: ExecutionFailure?
    /// What an operation threw; the execution runs to its end all the same.
    var thrown: String?
    /// Whether a step used what the explorer can't see; the report says so.
    var usedUnseen = false
    /// Whether a task was resumed from outside the explorer; the report says so.
    var resumedFromOutside = false
    /// How long the last wait for an arrival lasted, for the stuck report: a step's time for a
    /// sleeper the explorer woke, `outsideWaitLimit` otherwise (`awaitArrival`).
    private var arrivalWait: Duration?
    /// The entity running now, or that ran last.
    var running = 0
    /// The tries that yielded in a row (gave up, or polled again), with no step of any other kind
    /// between them, and where each entity's last one was made: threads that only ever try, and
    /// never get what they wait for, are in a livelock.
    var failedTriesInARow = 0
    var retrySites: [Int: String] = [:]
    /// The key of the first `keyedSteps` steps.
    var lastKey = TraceKey.empty
    var keyedSteps = 0
    /// When the step running now was granted.
    var grantedAt = DispatchTime.now()
    /// What makes the decisions once the threads have started, on the thread at the switch point.
    var driver: (any SwitchPointDriver)?
    /// Whether an entity's thread is making the next decision: only the thread that reads it sets
    /// it, and only that thread may run then.
    let isDeciding = Atomic(false)

    // What a thread that traps leaves, without a lock (see `trapped`).
    /// The trap: `(entity + 1) << 8 | signal`, or 0.
    let trap = Atomic<Int>(0)
    /// The runtime's fatal-error messages as they stood when the running step was granted: a
    /// trap whose thread reported no message since finds them unchanged.
    let messagesBeforeStep = Atomic<UnsafePointer<CChar>?>(nil)
    /// The message of the trap, as the runtime reported it, if it did: C text, filled in by the
    /// trapping thread before it stores `trap`.
    let trapMessage = UnsafeMutablePointer<CChar>.allocate(capacity: trapMessageCapacity)
    static let trapMessageCapacity = 1_024

    init(stepLimit: Duration, outsideWaitLimit: Duration, checksLockOrder: Bool) {
        self.stepLimit = stepLimit
        self.outsideWaitLimit = outsideWaitLimit
        self.checksLockOrder = checksLockOrder
        trapMessage.initialize(to: 0)
    }

    deinit {
        trapMessage.deallocate()
    }

    /// The instance's number, met now if it wasn't before. Call with `lock` held.
    func number(of instance: ScheduledInstance) -> Int {
        if let number = numbers[instance.id] { return number }
        numbers[instance.id] = labels.count
        labels.append(instance.label)
        versions.append(0)
        return labels.count - 1
    }

    /// Adds an event to the running step. Call with `lock` held.
    func note(
        _ entity: ScheduledEntity, _ text: String, preempted: Bool = false, describing value: (any Sendable)? = nil
    ) {
        events.append(
            ScheduleEvent(step: steps.count, entity: entity.number, said: text, value: value, preempted: preempted))
    }
}

// MARK: - What a decision looks at

extension ScheduledExecution {
    /// The entities whose next step can go on now, and how: those that may proceed, and those
    /// whose waits for the lock may give up at their time limits, since another entity holds the
    /// instance; or if none of these, those whose conditional waits may give up at theirs.
    func choices() -> [(entity: Int, grant: ScheduledEntity.Grant)] {
        lock.withLock {
            let ready = entities.compactMap { entity -> (Int, ScheduledEntity.Grant)? in
                if canGoOn(entity) { return (entity.number, .proceed) }
                return waitsForTheLockWithATimeLimit(entity) ? (entity.number, .timeOut) : nil
            }
            guard ready.isEmpty else { return ready }
            return entities.compactMap { entity in
                guard case .recheck(_, _, canTimeOut: true) = entity.pending else { return nil }
                return (entity.number, .timeOut)
            }
        }
    }

    /// What stopped the execution, if anything did.
    var stopped: ExecutionFailure? { lock.withLock { failure } }

    /// Ends an execution whose schedule asks, at switch point `index`, for an entity that can't go on.
    func mismatch(at index: Int, enabled: [Int]) {
        lock.withLock {
            let names = enabled.map { entities[$0].name }.joined(separator: ", ")
            failure = .scheduleMismatch(
                "the schedule doesn't fit this scenario: at switch point \(index + 1) only \(names) could go on")
        }
    }

    /// How many steps ran so far.
    var stepCount: Int { lock.withLock { steps.count } }

    /// Whether `entity`'s last step gave up a try, or polled again: it yields to the others.
    func hasYielded(_ entity: Int) -> Bool { lock.withLock { entities[entity].yielded } }

    /// How many tries in a row, with nothing else done between them, make a livelock: more than
    /// a loop that retries a few times before it does something else makes, with every thread
    /// that can go on taking turns at it.
    static let livelockTries = 200

    /// Ends the execution if its threads are in a livelock: each only tries instances, giving up
    /// or polling again, and they have done nothing else for `livelockTries` tries.
    var isLivelocked: Bool {
        lock.withLock {
            guard failedTriesInARow >= Self.livelockTries else { return false }
            let loops = retrySites.sorted { $0.key < $1.key }.map { "\(entities[$0.key].name) retries \($0.value)" }
            failure = .stuck(
                "a livelock: " + loops.joined(separator: "; ") + "; every thread that can go on only tries "
                    + "instances again and again, giving up or polling (\(failedTriesInARow) tries in a row, and "
                    + "nothing else)")
            return true
        }
    }

    /// Ends an execution that went on for `steps` switch points without ending.
    func endLivelock(after steps: Int) {
        lock.withLock {
            failure = .stuck("the execution didn't end within \(steps) switch points: its threads take turns for ever")
        }
    }

    /// The number a task's entity has among the things steps touch: the instances count from 0,
    /// the tasks from -1 down. The step that gives a task its job and the step that runs it touch it.
    static func task(of entity: Int) -> Int { -1 - entity }

    /// The number of the actors among the things steps touch: all of them as one, since the
    /// explorer doesn't see which actor a task joins. Steps that run in actors, and those that may
    /// have put a task in an actor's queue, touch it exclusively: their order decides in what
    /// order tasks take turns in an actor.
    static let actors = Int.min

    /// Whether everything has finished: the scenario's threads and the drains. A child task's
    /// entity has finished too if it has no job left: its task ended, or waits on a task that did.
    var isFinished: Bool { lock.withLock { entities.allSatisfy { $0.isDone || hasEnded($0) } } }

    /// Whether `entity` runs a child task that has no job: it ended, or waits on one that did.
    /// Call with `lock` held.
    private func hasEnded(_ entity: ScheduledEntity) -> Bool {
        entity.isChildTask && !canGoOn(entity) && !(entity.executor?.hasJobs(for: entity.number) ?? false)
    }

    /// Ends the threads of child tasks that wait for a job: the execution is over.
    func endChildTasks() {
        let waiting = lock.withLock {
            entities.filter { entity in
                guard entity.isChildTask, case .resume = entity.pending else { return false }
                entity.pending = .finished
                entity.grant = .end
                return true
            }
        }
        for entity in waiting { entity.wake.signal() }
    }

    /// The state the search is in: the steps so far up to reordering independent ones, and who ran last.
    func key(current: Int?) -> TraceKey {
        lock.withLock {
            // Built a step at a time: a step is final once the next begins.
            while keyedSteps < steps.count {
                lastKey = lastKey.appending(steps[keyedSteps], to: steps[..<keyedSteps], current: nil)
                keyedSteps += 1
            }
            return lastKey.with(current: current)
        }
    }

    /// Records a step of `number` and sets it going as `grant` says, without waking its thread;
    /// nil if the execution stopped meanwhile (a step outran the step limit).
    func prepareGrant(_ number: Int, _ grant: ScheduledEntity.Grant, preempting: Bool) -> ScheduledEntity? {
        let entity = lock.withLock { () -> ScheduledEntity? in
            guard failure == nil else { return nil }
            let entity = entities[number]
            steps.append(ScheduleStep(entity: number))
            if entity.runsActorJobs || runsOnTheMainActor(entity) {
                steps[steps.count - 1].touch(Self.actors, exclusively: true)
            }
            begin(entity, grant, preempting: preempting)
            running = number
            entity.pending = .running
            entity.grant = grant
            grantedAt = .now()
            return entity
        }
        messagesBeforeStep.store(TrapContainment.currentFatalErrorMessages, ordering: .relaxed)
        return entity
    }

    /// When the step running now outruns the step limit.
    var stepDeadline: DispatchTime { lock.withLock { grantedAt + .nanoseconds(nanoseconds(stepLimit)) } }

    /// Ends the execution as stuck if the step granted last is still running, and was granted
    /// before `deadline` less the step limit: it ran for longer than the limit. On the coordinator.
    func outranStepLimit(since deadline: DispatchTime) -> Bool {
        lock.withLock {
            guard failure == nil else { return true }
            guard grantedAt + .nanoseconds(nanoseconds(stepLimit)) <= deadline,
                case .running = entities[running].pending
            else { return false }
            failure = .stuck(
                "\(entities[running].name) didn't reach its next switch point within \(stepLimit): it waits for "
                    + "something Exclusion doesn't see (a semaphore, a thread's sleep, another library's lock), or "
                    + "for an instance that a thread the explorer doesn't run holds")
            return true
        }
    }

    /// `entity`'s step is over: it stands at a switch point, or (not `standing`) has finished.
    /// Makes the next decision on this thread, and runs on if it grants `entity` the next step;
    /// otherwise wakes the entity granted it, or the coordinator if the execution is over, and
    /// waits. Returns how `entity` goes on once granted a step again.
    func stepEnded(_ entity: ScheduledEntity, standing: Bool = true) -> ScheduledEntity.Grant {
        isDeciding.store(true, ordering: .relaxed)
        let next = lock.withLock { driver }?.next()
        isDeciding.store(false, ordering: .relaxed)
        switch next {
        case let next? where next === entity: return lock.withLock { entity.grant }
        case let next?: next.wake.signal()
        case nil: coordinator.signal()
        }
        return standing ? awaitGrant(entity) : .end
    }

    /// Whether `entity`'s step will run its task's turn on the main actor. Call with `lock` held.
    private func runsOnTheMainActor(_ entity: ScheduledEntity) -> Bool {
        guard case .resume = entity.pending, let executor = entity.executor else { return false }
        return executor.nextJobIsOnTheMainActor(of: entity.number)
    }

    /// What granting a step does to the model, before the entity runs. Call with `lock` held.
    private func begin(_ entity: ScheduledEntity, _ grant: ScheduledEntity.Grant, preempting: Bool) {
        entity.yielded = false
        defer {
            if !entity.yielded {
                failedTriesInARow = 0
                retrySites = [:]
            }
        }
        switch entity.pending {
        case .begin(let instance, let access, let site) where grant == .timeOut:
            // Ordered against every access of the instance: one of them holds it now.
            let number = number(of: instance)
            steps[steps.count - 1].touch(number, exclusively: true)
            let at = site.isEmpty ? "" : ", at \(site)"
            note(
                entity, "\(access.name) gives up waiting for \"\(labels[number])\": time limit\(at)",
                preempted: preempting)
        case .begin(let instance, let access, let site):
            let exclusive = !access.shared || instance.hasPendingWork
            let at = site.isEmpty ? "" : ", at \(site)"
            let free = isFree(instance, exclusively: exclusive, for: entity)
            noteTry(entity, access.kind == .trying ? "\(access.name) \"\(instance.label)\"\(at)" : nil, gaveUp: !free)
            if access.kind == .submitting {
                // Into the instance's line of work: ordered against every other access of it.
                let number = number(of: instance)
                steps[steps.count - 1].touch(number, exclusively: true)
                note(entity, "\(access.name): submits work to \"\(labels[number])\"\(at)", preempted: preempting)
            } else if access.waits || free {
                let number = take(instance, by: entity, exclusively: exclusive)
                let how = access.shared && exclusive ? " (exclusively: submitted work waits)" : ""
                note(entity, "\(access.name) \"\(labels[number])\" begins\(how)\(at)", preempted: preempting)
            } else {
                // Held: an awaited access puts its turn in the instance's line, a try gives up.
                let number = number(of: instance)
                steps[steps.count - 1].touch(number, exclusively: true)
                let outcome = access.kind == .awaited ? "its task will wait its turn" : "gives up"
                note(entity, "\(access.name) \"\(labels[number])\": held, \(outcome)\(at)", preempted: preempting)
            }
        case .recheck(let instance, _, _) where grant == .timeOut:
            note(entity, "gives up waiting on \"\(instance.label)\": time limit", preempted: preempting)
        case .recheck(let instance, _, _):
            take(instance, by: entity, exclusively: true)
            note(entity, "takes \"\(instance.label)\" again to check its condition", preempted: preempting)
        case .drain(let instance):
            take(instance, by: entity, exclusively: true)
            note(entity, "runs the work submitted to \"\(instance.label)\"", preempted: preempting)
        case .resume:
            // Ordered after the step that gave the task its job (`noteEnabled`).
            steps[steps.count - 1].touch(Self.task(of: entity.number), exclusively: true)
            entity.executor?.forgetSleeps(of: entity.number)
            entity.taskWaitsIn = nil
            let what =
                if entity.runsActorJobs {
                    "runs the actor's queue: each task in it takes its turn"
                } else if runsOnTheMainActor(entity) {
                    "resumes its task, on the main actor"
                } else {
                    "resumes its task"
                }
            note(entity, what, preempted: preempting)
        case .start, .running, .finished, .abandoned:
            break
        }
    }

    /// Notes a try (`...IfAvailable`) that `entity` begins, named `try` (nil for any other
    /// step): one that gives up, or that repeats the entity's last try (a loop that polls until
    /// it likes what it reads), yields. Call with `lock` held.
    private func noteTry(_ entity: ScheduledEntity, _ try: String?, gaveUp: Bool) {
        defer { entity.lastTry = `try` }
        guard let `try`, gaveUp || entity.lastTry == `try` else { return }
        entity.yielded = true
        failedTriesInARow += 1
        retrySites[entity.number] = `try`
    }

    /// The entity is about to take `instance`. Call with `lock` held.
    @discardableResult
    private func take(_ instance: ScheduledInstance, by entity: ScheduledEntity, exclusively: Bool) -> Int {
        let number = number(of: instance)
        steps[steps.count - 1].touch(number, exclusively: exclusively)
        entity.held.append(.init(instance: instance, number: number, shared: !exclusively))
        return number
    }

    /// Whether `entity`'s next step can go on now. Call with `lock` held.
    private func canGoOn(_ entity: ScheduledEntity) -> Bool {
        switch entity.pending {
        case .start where entity.isFinal:
            entities.allSatisfy { $0 === entity || $0.isDone || hasEnded($0) }
        case .start: true
        case .begin(let instance, let access, _):
            !access.waits || isFree(instance, exclusively: !access.shared || instance.hasPendingWork, for: entity)
        case .recheck(let instance, let since, _):
            (numbers[instance.id].map { versions[$0] > since } ?? true)
                && isFree(instance, exclusively: true, for: entity)
        case .drain(let instance): isFree(instance, exclusively: true, for: entity)
        case .resume: entity.executor?.canRunNextJob(for: entity.number) ?? false
        case .running, .finished, .abandoned: false
        }
    }

    /// Whether `entity` stands before a wait for the lock with a time limit: if it can't go on,
    /// another entity holds the instance, and its limit may pass first. Call with `lock` held.
    private func waitsForTheLockWithATimeLimit(_ entity: ScheduledEntity) -> Bool {
        guard case .begin(_, let access, _) = entity.pending else { return false }
        return access.waits && access.hasTimeLimit
    }

    /// Whether no other entity holds `instance` in a way that keeps `entity` out.
    private func isFree(_ instance: ScheduledInstance, exclusively: Bool, for entity: ScheduledEntity) -> Bool {
        !entities.contains { other in
            other !== entity && other.held.contains { $0.instance.id == instance.id && (exclusively || !$0.shared) }
        }
    }

    /// No entity can go on: if a task may wait for something from outside the explorer, waits up
    /// to `outsideWaitLimit` for a job from outside and hands it over; returns whether one came. The
    /// schedule takes it here, where nothing else can run, the same way every time it runs.
    ///
    /// A task asleep comes first, if no job waits: virtual time moves on to the end of the
    /// earliest sleep, whose task goes on, as if every step took no time at all. Its task comes
    /// back through the shared pool, which a busy machine can keep waiting; it is sure to come, so
    /// it gets a step's time (`stepLimit`), not the wait for what may never come.
    func awaitArrival() -> Bool {
        let (executor, mayWaitOutside) = lock.withLock {
            (entities.lazy.compactMap(\.executor).first, entities.contains { self.mayWaitOutside($0) })
        }
        guard let executor else { return false }
        let slept = !executor.hasArrivals && executor.wakeNextSleeper()
        let limit = executor.hasArrivals ? .zero : slept ? max(stepLimit, outsideWaitLimit) : outsideWaitLimit
        lock.withLock { arrivalWait = limit }
        guard mayWaitOutside || slept || executor.hasArrivals, let owner = executor.awaitArrival(within: limit)
        else { return false }
        lock.withLock {
            if slept {
                note(entities[owner], "its sleep ends")
            } else {
                resumedFromOutside = true
                note(entities[owner], "its task is resumed from outside the explorer")
            }
        }
        return true
    }

    /// Whether `entity`'s task is suspended with no job and may wait for something outside the
    /// explorer: no turn or condition of an instance (a step resumes those), or one whose time
    /// limit a timer ends. A child task with no job may also have ended. Call with `lock` held.
    private func mayWaitOutside(_ entity: ScheduledEntity) -> Bool {
        guard case .resume = entity.pending, !canGoOn(entity), !(entity.executor?.hasJobs(for: entity.number) ?? false)
        else { return false }
        return entity.taskWaitsIn?.canTimeOut ?? true
    }

    /// Ends an execution in which no entity can go on, nor came anything from outside: every one
    /// left waits for another, or for what never came.
    func deadlock() {
        lock.withLock {
            let waiting = entities.filter { !$0.isDone }
            for entity in waiting { note(entity, "deadlocked: \(waitsFor(entity))") }
            let lines =
                waiting.map { "\($0.name) \(waitsFor($0))" }.joined(separator: "; ")
                + (waitCycle().map { "; the cycle: " + $0 } ?? "")
            let outside = waiting.filter { !$0.isChildTask && mayWaitOutside($0) }
            guard outside.isEmpty else {
                let names = outside.map(\.name).joined(separator: " and ")
                failure = .stuck(
                    "no thread can go on, and nothing came within \(arrivalWait ?? outsideWaitLimit) to resume the task of \(names), "
                        + "which waits for something the explorer doesn't run (a continuation never resumed, a "
                        + "callback, another executor): " + lines)
                return
            }
            failure = .deadlock("every thread left waits for another: " + lines)
        }
    }

    /// A cycle in the graph of who waits for whom, in words, if there is one: an entity waits for
    /// every entity that holds the instance it waits to take, or in whose line its task waits.
    /// Call with `lock` held.
    private func waitCycle() -> String? {
        func waitsFor(_ entity: ScheduledEntity) -> [(holder: Int, instance: String)] {
            let instance: ScheduledInstance? =
                switch entity.pending {
                case .begin(let instance, _, _), .recheck(let instance, _, _), .drain(let instance): instance
                case .resume: entity.taskWaitsIn?.instance
                case .start, .running, .finished, .abandoned: nil
                }
            guard let instance else { return [] }
            return entities.filter { $0 !== entity && $0.held.contains { $0.instance.id == instance.id } }
                .map { ($0.number, instance.label) }
        }
        // Depth first from each entity, along the first edge out of each: a path that comes back
        // to an entity on it closes a cycle.
        for start in entities where !start.isDone {
            var path: [(entity: Int, instance: String)] = []
            var current = start.number
            while let next = waitsFor(entities[current]).first {
                path.append((current, next.instance))
                if let loop = path.firstIndex(where: { $0.entity == next.holder }) {
                    let links = path[loop...].map { link in
                        "\(entities[link.entity].name) waits for \"\(link.instance)\""
                    }
                    let holders = path[loop...].indices.map { index in
                        entities[index + 1 < path.endIndex ? path[index + 1].entity : next.holder].name
                    }
                    return zip(links, holders).map { "\($0), which \($1) holds" }.joined(separator: ", and ")
                }
                current = next.holder
            }
        }
        return nil
    }

    /// What `entity` waits for, in words. Call with `lock` held.
    private func waitsFor(_ entity: ScheduledEntity) -> String {
        switch entity.pending {
        case .begin(let instance, let access, _):
            let holders = entities.filter { $0.held.contains { $0.instance.id == instance.id } }.map(\.name)
            return "waits to \(access.name) \"\(instance.label)\", held by \(holders.joined(separator: " and "))"
        case .recheck(let instance, _, _): return "waits for its condition on \"\(instance.label)\" to hold"
        case .resume:
            if let holder = entity.executor?.mainActorHolder(keeping: entity.number) {
                return "waits for its turn on the main actor, where \(entities[holder].name)'s task runs"
            }
            if let (instance, _) = entity.taskWaitsIn {
                return "waits, suspended, for its turn or its condition on \"\(instance.label)\""
            }
            if entity.runsActorJobs { return "waits to run an actor's jobs" }
            return entity.isChildTask
                ? "has no job: its task ended, or waits for what nothing will do"
                : "waits for its task to be resumed"
        case .drain(let instance): return "waits to run the work submitted to \"\(instance.label)\""
        case .start, .running, .finished, .abandoned: return "waits"
        }
    }
}

/// What stopped an execution, in words.
enum ExecutionFailure: Sendable {
    /// An entity's thread trapped, with this signal, after the runtime reported `message`, if
    /// it reported one.
    case crashed(entity: Int, signal: Int32, message: String?)
    case reentrant(String)
    case lockOrderInversion(String)
    case deadlock(String)
    case stuck(String)
    /// A replayed schedule asked for a thread that couldn't go on.
    case scheduleMismatch(String)
}

/// One line of a schedule's table.
struct ScheduleEvent: Sendable {
    /// The step it happened in: steps are numbered from 1, the threads' starts included.
    let step: Int
    let entity: Int
    /// What it says, or the start of it, if it ends with `value`.
    let said: String
    /// An operation's input or output: described only if the table is shown (a failure's), as
    /// describing costs more than the step that did it.
    let value: (any Sendable)?
    /// Whether the step began by stopping a thread that could have gone on.
    let preempted: Bool

    var text: String { value.map { said + String(describing: $0) } ?? said }
}

/// `duration` in whole nanoseconds, saturating.
func nanoseconds(_ duration: Duration) -> Int {
    let (seconds, attoseconds) = duration.components
    let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    let total = overflow ? .max : scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    return Int(truncatingIfNeeded: total)
}
