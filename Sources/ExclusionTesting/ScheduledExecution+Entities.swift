import Dispatch
@_spi(ScheduleExploration) import Exclusion
import Foundation

// MARK: - What the running entity tells the execution, on its own thread

extension ScheduledExecution {
    /// Waits until `entity` is granted a step, and returns how it goes on.
    ///
    /// An entity may stand at a switch point as long as the others run, so the wait has no limit
    /// of its own (the steps have). An abandoned entity (stopped at a failure) stays
    /// here for good: it can't go on without stopping the process, and nothing waits for it.
    func awaitGrant(_ entity: ScheduledEntity) -> ScheduledEntity.Grant {
        entity.wake.wait()
        return lock.withLock { entity.grant }
    }

    /// `entity` is about to begin `access` of `instance`: checks the nesting as Exclusion would,
    /// then stands until its step is granted (for an access that waits, once the lock is free for it).
    /// Returns true if the access, which has a time limit, is to give up instead: another entity
    /// holds the instance, and the schedule lets the limit pass first.
    func willAcquire(
        _ entity: ScheduledEntity, _ instance: ScheduledInstance, _ access: ScheduledAccess, site: String
    ) -> Bool {
        let held = ScheduleSeam.instancesHeldByCurrentThread()
        let misuse = lock.withLock { () -> ExecutionFailure? in
            noteHeld(entity, held)
            // Only an access that waits deadlocks, or inverts an order: submitting work, trying and
            // suspending never wait for the lock (the awaited forms' re-entrancy is a wait all the same).
            if access.kind != .submitting, access.kind != .trying,
                let misuse = nestingMisuse(
                    entity, instance, attempting: access.name, site: site, ordering: access.waits)
            {
                return misuse
            }
            entity.pending = .begin(instance, access, site: site)
            return nil
        }
        if let misuse { abandon(entity, misuse) }
        return stepEnded(entity) == .timeOut
    }

    /// `entity`'s condition on `instance` was false and it let go: it stands until another step
    /// may have changed the state. Returns true if its wait is to give up at its time limit.
    func conditionUnmet(_ entity: ScheduledEntity, _ instance: ScheduledInstance, canTimeOut: Bool) -> Bool {
        let held = ScheduleSeam.instancesHeldByCurrentThread()
        lock.withLock {
            // The access let go of the instance having only checked the condition: no change.
            noteHeld(entity, held, unchanged: instance)
            let number = number(of: instance)
            note(entity, "finds its condition on \"\(instance.label)\" false: waits")
            entity.pending = .recheck(instance, since: versions[number], canTimeOut: canTimeOut)
        }
        return stepEnded(entity) == .timeOut
    }

    /// `entity`'s task is suspended (or, for a child task, suspended or ended), or waits for its
    /// turn on the main actor: it stands until its task has a job it can run. Returns how it goes
    /// on: `.end` for a child task once the execution is over.
    @discardableResult
    func suspend(_ entity: ScheduledEntity, starting: Bool = false) -> ScheduledEntity.Grant {
        let held = ScheduleSeam.instancesHeldByCurrentThread()
        let hasJob = entity.executor?.hasJobs(for: entity.number) ?? false
        let toTheMainActor = entity.executor?.nextJobIsOnTheMainActor(of: entity.number) ?? false
        lock.withLock {
            noteHeld(entity, held)
            if starting {
                note(entity, "starts its task")
            } else if toTheMainActor {
                note(entity, "its task hops to the main actor: its turn there is a step of its own")
            } else if hasJob {
                note(entity, "its task leaves the main actor")
            } else {
                note(entity, entity.isChildTask ? "its task suspends, or ends" : "suspends its task")
                // With no wait in an instance's line to explain it, it may have joined an actor's
                // queue, if an actor has been scheduled: a queue it joins then wasn't idle.
                if entity.taskWaitsIn == nil, entities.contains(where: \.runsActorJobs) {
                    steps[steps.count - 1].touch(Self.actors, exclusively: true)
                }
            }
            entity.pending = .resume
        }
        return stepEnded(entity)
    }

    /// An operation's task, on the entity running, started a child task on the scenario's
    /// executor, or (`unstructured`) a task with `Task { }` or `Task.detached`: it gets an entity
    /// of its own, whose thread runs its jobs. Returns its number.
    func childTaskStarted(unstructured: Bool = false) -> Int {
        let child = lock.withLock { () -> ScheduledEntity in
            let (child, parent) = addEntity(named: { "task \($0) (of \(entities[running].name))" }, childTask: true)
            note(parent, "starts \(unstructured ? "a task" : "a child task"): \(child.name)")
            return child
        }
        EntityThreads.shared.run(named: "schedule explorer: \(child.name)") { [self] in
            ScheduleSeam.controlCurrentThread(with: EntityController(execution: self, entity: child))
            var grant = awaitGrant(child)
            while grant != .end {
                var granted = true
                while child.executor!.runNextJob(for: child.number, granted: granted) == .elsewhere { granted = false }
                grant = suspend(child)
            }
            ScheduleSeam.releaseCurrentThread()
        }
        return child.number
    }

    /// A task of the entity running hopped onto an idle actor, which was scheduled with a job that
    /// runs its queue: the job gets an entity of its own, whose thread runs it in one step after
    /// another (a step ends wherever a task in the actor reaches a switch point) and then ends.
    /// Returns its number.
    func actorJobsScheduled() -> Int {
        let jobs = lock.withLock { () -> ScheduledEntity in
            let (jobs, scheduler) = addEntity(named: { "actor jobs \($0)" }, actorJobs: true)
            steps[steps.count - 1].touch(Self.actors, exclusively: true)
            let who = scheduler.runsActorJobs ? "a task in it hops to" : "its task joins"
            note(scheduler, "\(who) an idle actor's queue: \(jobs.name) will run it")
            return jobs
        }
        jobs.start(in: self) { _ = jobs.executor!.runNextJob(for: jobs.number) }
        return jobs.number
    }

    /// Adds an entity, named for its number, that runs tasks on the running entity's executor;
    /// returns it, and the running entity. Call with `lock` held.
    private func addEntity(
        named name: (Int) -> String, childTask: Bool = false, actorJobs: Bool = false
    ) -> (added: ScheduledEntity, by: ScheduledEntity) {
        let by = entities[running]
        let added = ScheduledEntity(
            number: entities.count, name: name(entities.count), executor: by.executor, childTask: childTask,
            actorJobs: actorJobs)
        entities.append(added)
        return (added, by)
    }

    /// The entity running now.
    var runningEntity: Int { lock.withLock { running } }

    /// The running step gave `owner`'s task a job: the step that runs it comes after this one.
    func noteEnabled(_ owner: Int) {
        lock.withLock {
            steps[steps.count - 1].touch(Self.task(of: owner), exclusively: true)
            let runner = entities[running]
            if runner.runsActorJobs, owner != running {
                note(runner, "\(entities[owner].name)'s task leaves the actor")
            }
        }
    }

    /// `entity`'s task is about to suspend in `instance`'s line.
    func taskWillWait(_ entity: ScheduledEntity, in instance: ScheduledInstance, canTimeOut: Bool) {
        lock.withLock { entity.taskWaitsIn = (instance, canTimeOut) }
    }

    /// Work submitted by `entity` to `instance` needs a drain: a new entity, which runs it when
    /// granted a step, as a drain would on a queue.
    func drainScheduled(
        by entity: ScheduledEntity, _ instance: ScheduledInstance, _ drain: @escaping @Sendable () -> Void
    ) {
        let held = ScheduleSeam.instancesHeldByCurrentThread()
        let drainer = lock.withLock { () -> ScheduledEntity in
            noteHeld(entity, held)
            let number = number(of: instance)
            steps[steps.count - 1].touch(number, exclusively: true)
            let drainer = ScheduledEntity(
                number: entities.count, name: "drain \(entities.count) of \"\(instance.label)\"", drainOf: instance)
            entities.append(drainer)
            note(entity, "\(drainer.name) will run the work submitted to \"\(instance.label)\"")
            return drainer
        }
        drainer.start(in: self, drain)
    }

    /// A scenario thread calls an operation; returns the call's time on the history's clock.
    func noteCall(_ entity: ScheduledEntity, _ operation: some Sendable) -> UInt64 {
        noteHistory(entity, "calls ", operation) { $0.calls = true }
    }

    /// The operation returned `output`; returns the return's time on the history's clock.
    func noteReturn(_ entity: ScheduledEntity, _ output: some Sendable) -> UInt64 {
        noteHistory(entity, "returns ", output) { $0.returns = true }
    }

    /// Notes a call or a return in the current step (`mark`) and the table; returns its time.
    private func noteHistory(
        _ entity: ScheduledEntity, _ event: String, _ value: any Sendable, mark: (inout ScheduleStep) -> Void
    ) -> UInt64 {
        let held = ScheduleSeam.instancesHeldByCurrentThread()
        return lock.withLock {
            noteHeld(entity, held)
            mark(&steps[steps.count - 1])
            note(entity, event, describing: value)
            clock += 1
            return clock
        }
    }

    /// The operation threw: a failure, reported once the execution has run to its end.
    func noteThrow(_ entity: ScheduledEntity, _ operation: String, _ error: any Error) {
        let held = ScheduleSeam.instancesHeldByCurrentThread()
        lock.withLock {
            noteHeld(entity, held)
            steps[steps.count - 1].returns = true
            note(entity, "throws \(error)")
            if thrown == nil { thrown = "\(entity.name): \(operation) threw \(error)" }
        }
    }

    /// `entity` has nothing left to do.
    func finish(_ entity: ScheduledEntity) {
        let held = ScheduleSeam.instancesHeldByCurrentThread()
        lock.withLock {
            noteHeld(entity, held)
            entity.pending = .finished
        }
        _ = stepEnded(entity, standing: false)
    }

    /// `entity`'s thread trapped: called from the signal handler, on that thread, which stands in
    /// it for good. Keeps the message the runtime reported in the step, if it reported one, and
    /// tells the coordinator, which takes the trap in (`takeTrapIn`). Async-signal-safe: it takes
    /// no lock (the thread may have trapped holding one) and allocates nothing; it copies bytes,
    /// stores atomics and signals a semaphore, whose signal takes no lock either.
    func trapped(_ entity: ScheduledEntity, signal: Int32) {
        let messages = TrapContainment.currentFatalErrorMessages
        if let messages, messages != messagesBeforeStep.load(ordering: .relaxed) {
            // Its own message is the last line: the text grows by one message per fatal error.
            let length = strlen(messages)
            let kept = min(length, Self.trapMessageCapacity - 1)
            memcpy(trapMessage, messages + (length - kept), kept)
            trapMessage[kept] = 0
        }
        let record = (entity.number + 1) << 8 | Int(signal & 0xFF)
        _ = trap.compareExchange(expected: 0, desired: record, ordering: .releasing)
        coordinator.signal()
    }

    /// Takes in a trap that a thread reported, if one did: the execution ends with it. On the
    /// coordinator, once the running entity has stopped.
    func takeTrapIn() {
        let record = trap.load(ordering: .acquiring)
        guard record != 0 else { return }
        let number = (record >> 8) - 1
        let signal = Int32(record & 0xFF)
        let said = String(cString: trapMessage).split(separator: "\n").last.map(String.init)
        lock.withLock {
            if failure == nil { failure = .crashed(entity: number, signal: signal, message: said) }
            entities[number].pending = .abandoned
        }
    }

    /// Adds the trap to the table, once the trapping thread stands still; on the coordinator.
    func noteTrap() {
        lock.withLock {
            guard case .crashed(let number, let signal, _) = failure else { return }
            note(entities[number], "traps (\(TrapContainment.name(of: signal)))")
        }
    }

    /// Stops `entity` for good at `failure`, which ends the execution.
    private func abandon(_ entity: ScheduledEntity, _ failure: ExecutionFailure) -> Never {
        lock.withLock {
            if self.failure == nil { self.failure = failure }
            entity.pending = .abandoned
        }
        _ = stepEnded(entity)
        while true { _ = awaitGrant(entity) }
    }

    /// What the thread record says `entity` holds now, against what it held at its last switch
    /// point: what it let go of since, and what it took without one. Call with `lock` held.
    private func noteHeld(
        _ entity: ScheduledEntity, _ now: [(instance: ScheduledInstance, shared: Bool)],
        unchanged: ScheduledInstance? = nil
    ) {
        var kept = 0
        while kept < min(entity.held.count, now.count), entity.held[kept].instance.id == now[kept].instance.id {
            kept += 1
        }
        for gone in entity.held[kept...].reversed() {
            steps[steps.count - 1].touch(gone.number, exclusively: !gone.shared)
            if !gone.shared, gone.instance.id != unchanged?.id { versions[gone.number] += 1 }
            note(entity, "\"\(gone.instance.label)\" released")
        }
        var held = Array(entity.held[..<kept])
        for unseen in now[kept...] {
            let number = number(of: unseen.instance)
            steps[steps.count - 1].touchesUnseen = true
            usedUnseen = true
            note(entity, "took \"\(unseen.instance.label)\" with no switch point (an awaited access that didn't wait)")
            held.append(.init(instance: unseen.instance, number: number, shared: unseen.shared))
        }
        entity.held = held
    }

    /// Re-entrancy, and the lock order as Exclusion checks it: what Exclusion would stop the
    /// process for, reported instead. Call with `lock` held.
    private func nestingMisuse(
        _ entity: ScheduledEntity, _ instance: ScheduledInstance, attempting: String, site: String, ordering: Bool
    ) -> ExecutionFailure? {
        let wanted = number(of: instance)
        let name = "\(instance.typeName) \"\(instance.label)\""
        if entity.held.contains(where: { $0.number == wanted }) {
            note(entity, "\(attempting) \"\(instance.label)\" at \(site), inside its own access: re-entrant")
            return .reentrant(
                "re-entrant access to \(name): \(attempting) at \(site) was called on \(entity.name), which is "
                    + "already inside it; Exclusion would stop the process here")
        }
        guard checksLockOrder, ordering else { return nil }
        for outer in entity.held where nestings[outer.number]?.contains(where: { $0.inner == wanted }) != true {
            if let earlier = path(from: wanted, to: outer.number) {
                let outerLabel = outer.instance.label
                note(
                    entity,
                    "\(attempting) \"\(instance.label)\" inside \"\(outerLabel)\" at \(site): lock-order inversion")
                return .lockOrderInversion(
                    "lock-order inversion between \"\(outerLabel)\" and \"\(instance.label)\": \(entity.name) holds "
                        + "\"\(outerLabel)\" and takes \"\(instance.label)\" at \(site), but before, \(earlier); "
                        + "Exclusion would stop the process here")
            }
            nestings[outer.number, default: []].append((wanted, "at \(site) (\(entity.name))"))
        }
        return nil
    }

    /// How `start` came to be nested around `end` before, if it was, in words.
    private func path(from start: Int, to end: Int) -> String? {
        var cameFrom: [Int: (Int, String)] = [:]
        var frontier = [start]
        while let current = frontier.popLast() {
            for (next, site) in nestings[current] ?? [] where next != start && cameFrom[next] == nil {
                cameFrom[next] = (current, site)
                if next == end {
                    var links: [String] = []
                    var node = end
                    while let (previous, site) = cameFrom[node] {
                        links.append("\"\(labels[node])\" was taken inside \"\(labels[previous])\" \(site)")
                        node = previous
                    }
                    return links.reversed().joined(separator: ", and ")
                }
                frontier.append(next)
            }
        }
        return nil
    }
}
