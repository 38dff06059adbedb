#!/usr/bin/env python3
"""Plants small, realistic bugs in the code that `values`, `Bank.changes`, waiting, the contention
profile and the reference systems' reports rest on, one at a time, in a scratch copy of the package, and runs the suites that cover each: every
planted bug must make them fail, within a minute. Prints a table of what was caught, by which tests,
and how long the run took. See README.md here.

Usage, from anywhere: python3 Verification/audit.py [PLANT...]   (default: every plant)
                      python3 Verification/audit.py --texts     (only: is every plant's text there once?)

The copy is made from the files git knows (committed or not) into a temporary folder, built once,
then rebuilt after each plant; the original is never touched. A plant whose text is no longer in
the source fails the audit too: the code moved, and the plant must move with it.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIMIT = 60  # seconds a covering run may take to catch its bug

# name: (what it breaks, file, text as it is, text planted, the suites that must catch it)
PLANTS = {
    "values-lost-wake-up": (
        "releases never look at waiting `values` iterators: a change doesn't wake the loop",
        "Sources/Exclusion/Internal/Waiting/WaitLine.swift",
        "            case .job: true\n",
        "            case .job(_, let observer): !observer\n",
        ["ValuesTests"],
    ),
    "values-skip-first": (
        "the first element is the next change, not the value now",
        "Sources/Exclusion/Internal/Engine/Engine+Values.swift",
        'let value = await _Engine(of: object).awaitShared(attempting: "the values of", transform)\n',
        'let value = await nextValue(\n                of: instance, after: await _Engine(of: object).awaitShared(attempting: "the values of", transform),\n                transform)\n',
        ["ValuesTests"],
    ),
    "values-repeat": (
        "equal values are delivered again: no de-duplication",
        "Sources/Exclusion/Internal/Engine/Engine+Values.swift",
        "guard value != last else { return false }",
        "_ = last",
        ["ValuesTests"],
    ),
    "changes-drop": (
        "a batch cut short by the limit skips the change after it",
        "Sources/Banking/ChangeLog.swift",
        "cursors[number] = base + last",
        "cursors[number] = base + last + (last < changes.count ? 1 : 0)",
        ["BankChangesTests"],
    ),
    "profile-awaited-condition": (
        "an awaited access's wait for its condition is recorded as a task's wait for the lock",
        "Sources/Exclusion/Internal/Waiting/Engine+AwaitingConditions.swift",
        "self._record(.condition, at: .none, since: since)",
        "self._record(.suspendedTask, at: .none, since: since)",
        ["ContentionProfileTests"],
    ),
    "pprof-type-label": (
        "the pprof `type` label carries the instance's label",
        "Sources/Exclusion/Profiling/ContentionReport+pprof.swift",
        '("type", row.type)',
        '("type", row.label)',
        ["ContentionProfileTests"],
    ),
    "pprof-condition-rows": (
        "condition waits are written into the pprof file",
        "Sources/Exclusion/Profiling/ContentionReport+pprof.swift",
        "for row in rows where row.kind != .condition {",
        "for row in rows {",
        ["ContentionProfileTests"],
    ),
    "wait-signal-only": (
        "releases never check conditions: a waiter needs a signal nobody sends (a lost wake-up)",
        "Sources/Exclusion/Internal/Engine/Engine+Access.swift",
        "serving: while _releaseWork.hasSleepers {",
        "serving: while false, _releaseWork.hasSleepers {",
        ["WaitingTests"],
    ),
    "wait-spin-no-recheck": (
        "a conditional wait's spin runs the body without checking the condition again",
        "Sources/Exclusion/Internal/Waiting/Engine+Conditions.swift",
        "            if condition(_state.pointee) { return (outbox, true) }",
        "            if true || condition(_state.pointee) { return (outbox, true) }",
        # Not the whole suite: with this plant, a consumer takes from an empty queue and waits for ever.
        ["aBodyRunsOnlyWhileItsConditionHolds", "aConditionThatTurnsTrueWhileTheThreadSpinsRunsWithoutSleeping"],
    ),
    "wait-no-recheck": (
        "a woken thread runs its body without checking its condition again",
        "Sources/Exclusion/Internal/Waiting/Engine+Conditions.swift",
        "            if condition(_state.pointee) {\n                _withWaitList { $0.leave(waiter) }",
        "            if true || condition(_state.pointee) {\n                _withWaitList { $0.leave(waiter) }",
        ["WaitingTests"],
    ),
    "wait-forget-cancelled": (
        "a cancelled awaited access stays in line",
        "Sources/Exclusion/Internal/Waiting/Engine+AwaitingConditions.swift",
        "_withWaitList { $0.end(waiter, .cancelled) }",
        "_ = waiter",
        ["WaitingTests"],
    ),
    "wait-no-grant": (
        "a blocked thread is never granted the state, however often it loses it",
        "Sources/Exclusion/Internal/Waiting/WaitLine.swift",
        "static var lossesBeforeGrant: Int { 2 }",
        "static var lossesBeforeGrant: Int { .max }",
        ["WaitingTests"],
    ),
    "waitline-grant-outlives-grantee": (
        "a granted thread that gives up leaves the state promised to nobody in line",
        "Sources/Exclusion/Internal/Waiting/WaitLine.swift",
        "        if grantee == id { grantee = nil }\n",
        "        if grantee == id { _ = grantee }\n",
        ["WaitLineTests"],
    ),
    "waitline-wake-twice": (
        "a woken thread stays asleep in the line's eyes: the next release wakes it again",
        "Sources/Exclusion/Internal/Waiting/WaitLine.swift",
        "entries[index].entry = .thread(sleeper, woken: true, losses: losses)",
        "entries[index].entry = .thread(sleeper, woken: false, losses: losses)",
        ["WaitLineTests"],
    ),
    "waitline-lost-wake-up": (
        "a thread that sleeps again stays woken in the line's eyes: no release looks at it again",
        "Sources/Exclusion/Internal/Waiting/WaitLine.swift",
        "entries[index].entry = .thread(sleeper, woken: false, losses: losses + 1)",
        "entries[index].entry = .thread(sleeper, woken: true, losses: losses + 1)",
        ["WaitLineTests"],
    ),
    "waitline-last-first": (
        "releases look at the line from its end: the last to come is served first",
        "Sources/Exclusion/Internal/Waiting/WaitLine.swift",
        "entries.lazy.filter { waiter in",
        "entries.reversed().lazy.filter { waiter in",
        ["WaitLineTests"],
    ),
    "simulation-most-open": (
        "the simulation's report takes the largest branch's most open accounts, not their sum",
        "Sources/Banking/Simulation/Simulation.swift",
        "        mostOpen += other.mostOpen",
        "        mostOpen = max(mostOpen, other.mostOpen)",
        ["SimulationTests"],
    ),
    "plist-case": (
        "a binary property list is recognized only under a lowercase `.plist`",
        "Sources/Documents/Parsing/DocumentParser.swift",
        'guard !data.starts(with: "bplist".utf8) else {',
        'guard !(name.hasSuffix(".plist") && data.starts(with: "bplist".utf8)) else {',
        ["DocumentFormatTests"],
    ),
    "pprof-id-zero": (
        "pprof location and function ids start at 0, which profile.proto reserves",
        "Sources/Exclusion/Profiling/ContentionReport+pprof.swift",
        "let id = Int64(locationIDs.count + 1)",
        "let id = Int64(locationIDs.count)",
        ["ContentionProfileTests"],
    ),
    "wait-give-up-strands": (
        "a woken thread that gives up leaves the other waiters unchecked",
        "Sources/Exclusion/Internal/Waiting/Engine+Conditions.swift",
        "        _enqueue(.plain { _ in })",
        "        _ = 0",
        ["GivingUpTests"],
    ),
    "explorer-reduction-unsound": (
        "the explorer's reduction takes a read and a write of one instance as independent: it skips executions",
        "Sources/ExclusionTesting/ScheduleStep.swift",
        "if let theirs = other.touched[instance], exclusively || theirs { return true }",
        "if let theirs = other.touched[instance], exclusively && theirs { return true }",
        ["ScheduleReductionTests"],
    ),
    "explorer-reduction-awaited-write-shared": (
        "the explorer's reduction takes an awaited write that finds the instance free as a read: it skips executions of tasks",
        "Sources/ExclusionTesting/ScheduledExecution.swift",
        "            let exclusive = !access.shared || instance.hasPendingWork\n",
        "            let exclusive = access.kind != .awaited && (!access.shared || instance.hasPendingWork)\n",
        ["ScheduleReductionTests"],
    ),
    "explorer-replay-seed": (
        "a replay rebuilds the scenario from the explorer's seed instead of the schedule's",
        "Sources/ExclusionTesting/ScheduleExploration.swift",
        "let outcome = execute(programs(schedule.seed, schedule.scenario), &chooser)",
        "let outcome = execute(programs(explorer.seed, schedule.scenario), &chooser)",
        ["ScheduleTests"],
    ),
    "rwlock-scan-too-few": (
        "a writer looks only at the slot of thread index 0, not at those of every index handed out",
        "Sources/ExclusionShims/ExclusionReadersWriterLock.c",
        "EXCLUSION_VISIBLE_READERS_PER_LOCK : limit + 1;",
        "EXCLUSION_VISIBLE_READERS_PER_LOCK : 1;",
        ["ReadersWriterTests"],
    ),
    "thread-index-kept": (
        "an exited thread's index is never handed out again, so writers come to look at every slot",
        "Sources/ExclusionShims/ExclusionShims.c",
        "    exclusion_thread.index = 0;\n    pthread_mutex_lock(&indices_lock);\n",
        "    exclusion_thread.index = 0;\n    return;\n    pthread_mutex_lock(&indices_lock);\n",
        ["ReadersWriterTests"],
    ),
    "drain-queue-kept": (
        "a drain that ends keeps its queue where the side structures aren't kept: a quiet instance holds one",
        "Sources/Exclusion/Internal/Engine/Backlog.swift",
        "        if !_releaseWork.keepsSide { _drainQueue = nil }\n        return true\n",
        "        return true\n",
        ["EngineStorageTests"],
    ),
    "backlog-room-kept": (
        "a drain that ends keeps the room its last batches used, so a quiet instance holds it",
        "Sources/Exclusion/Internal/Engine/Backlog.swift",
        "        _jobs = []\n        _releaseWork.drainEnds()\n",
        "        _releaseWork.drainEnds()\n",
        ["EngineStorageTests"],
    ),
    "spare-room-kept": (
        "a batch that ran keeps its array's room although nothing more is coming",
        "Sources/Exclusion/Internal/Engine/Backlog.swift",
        "removeAll(keepingCapacity: hasPending && _spare.capacity",
        "removeAll(keepingCapacity: _spare.capacity",
        ["EngineStorageTests"],
    ),
    "profile-notes-made-eagerly": (
        "the side structures make a profile's notes at once, although most instances are never profiled",
        "Sources/Exclusion/Internal/Engine/EngineSide.swift",
        "        super.init(_ReleaseWork(words))\n    }\n",
        "        super.init(_ReleaseWork(words))\n        _ = profile\n    }\n",
        ["EngineStorageTests"],
    ),
    "wait-list-made-eagerly": (
        "the side structures make a wait list at once, although submitted work never waits in one",
        "Sources/Exclusion/Internal/Engine/EngineSide.swift",
        "        super.init(_ReleaseWork(words))\n    }\n",
        "        super.init(_ReleaseWork(words))\n        _ = waitList\n    }\n",
        ["EngineStorageTests"],
    ),
    "side-structures-grow": (
        "the side structures keep two words more, which take their object past the allocator's 80-byte size",
        "Sources/Exclusion/Internal/Engine/EngineSide.swift",
        "    private var _profile: UnsafeMutablePointer<_ProfileNotes>?\n",
        "    private var _profile: UnsafeMutablePointer<_ProfileNotes>?\n    let spareWords = Atomic<UInt>(0), moreSpareWords = Atomic<UInt>(0)\n",
        ["EngineStorageTests"],
    ),
    "kept-side-drops-drain-queue": (
        "a drain that ends lets its queue go even where the side structures are kept, so every drain of a values loop's turn makes a queue",
        "Sources/Exclusion/Internal/Engine/Backlog.swift",
        "        if !_releaseWork.keepsSide { _drainQueue = nil }\n",
        "        _drainQueue = nil\n",
        ["EngineStorageTests"],
    ),
    "side-retired-under-users": (
        "a drain that ends lets the side structures go while other threads count themselves as their users",
        "Sources/Exclusion/Internal/Engine/Engine+Side.swift",
        "        guard flags & _Flags.sideUsers == _Flags.sideUser, flags & _Flags.keepingSide == 0,\n",
        "        guard flags & _Flags.keepingSide == 0,\n",
        ["SideRetirementTests"],
    ),
    "side-not-kept": (
        "a wait list is made in side structures that aren't kept, which a drain that ends then lets go",
        "Sources/Exclusion/Internal/Engine/Engine+Side.swift",
        "        if exclusion_engine_flags_acquire(words) & (_Flags.kept | _Flags.retiring) != _Flags.kept { _keepSide() }\n",
        "",
        ["SideRetirementTests"],
    ),
    "busy-drain-not-kept": (
        "a drain busy with submitted work never keeps the side structures: every submission counts itself in and out",
        "Sources/Exclusion/Internal/Engine/Engine+Submitting.swift",
        "            if announced, batches == _Flags.batchesOfABusyDrain { _keepSide() }\n",
        "",
        ["SideRetirementTests"],
    ),
    "pct-change-points-collide": (
        "PCT draws its change points with repeats, and two drawn alike count as one",
        "Sources/ExclusionTesting/ScheduleSearch.swift",
        "        while changes.count < count {\n            let point = Int.random(in: 0..<max(steps, 1), using: &random)\n            if changes[point] == nil { changes[point] = changes.count + 1 }\n        }\n",
        "        for level in 0..<count { changes[Int.random(in: 0..<max(steps, 1), using: &random)] = level + 1 }\n",
        ["PriorityChooserTests"],
    ),
    "pct-change-skipped": (
        "a PCT change point whose switch point finds the last thread unable to go on is skipped",
        "Sources/ExclusionTesting/ScheduleSearch.swift",
        "        guard let level = changes[index] else { return first }\n        priorities[first] = level\n",
        "        guard let level = changes[index], let current, enabled.contains(current) else { return first }\n        priorities[current] = level\n",
        ["PriorityChooserTests"],
    ),
    "outside-deadlock-at-once": (
        "a task that waits for a sleep or a callback is taken for deadlocked as soon as no explored thread can go on",
        "Sources/ExclusionTesting/ScheduleDriver.swift",
        "                if execution.awaitArrival() { continue }\n",
        "",
        ["OutsideTheExplorerTests"],
    ),
    "outside-job-runs-at-once": (
        "a job from outside the explorer is queued when it comes, at a moment that differs from run to run",
        "Sources/ExclusionTesting/ScenarioTaskExecutor.swift",
        "        EntityController.current?.execution === execution\n",
        "        true\n",
        # One test: with this plant every test here waits out its 10-s limit for what came already.
        ["aCallbackThatResumesATaskIsPartOfItsSchedule"],
    ),
    "deadlock-leaves-child-tasks-out": (
        "a deadlock's or a lost task's report leaves child tasks out",
        "Sources/ExclusionTesting/ScheduledExecution.swift",
        "let waiting = entities.filter { !$0.isDone }",
        "let waiting = entities.filter { !$0.isDone && !$0.isChildTask }",
        ["OutsideTheExplorerTests"],
    ),
    "explorer-marker-kept": (
        "a thread taken back from a schedule explorer keeps its marker, since a leave keeps the slot: it still looks explored",
        "Sources/Exclusion/Internal/Exploration/ScheduleSeam.swift",
        "        thread._record.pointee.held.0 = nil\n",
        "",
        ["ThreadRecordTests"],
    ),
    "thread-record-read-past-depth": (
        "the re-entrancy check reads every slot of the thread's record, the stale ones past its depth too",
        "Sources/ExclusionShims/include/ExclusionShims.h",
        "    uint32_t depth = record->depth < EXCLUSION_TRACKED_DEPTH ? record->depth : EXCLUSION_TRACKED_DEPTH;\n",
        "    uint32_t depth = EXCLUSION_TRACKED_DEPTH;\n",
        ["ThreadRecordTests"],
    ),
    "task-wait-unseen": (
        "the explorer isn't told that a task waits in an instance's line: a deadlock of tasks waits for something outside",
        "Sources/Exclusion/Internal/Exploration/ScheduleSeam.swift",
        "_CurrentThread()._scheduleController?.taskWillWait(in: _scheduledInstance, canTimeOut: canTimeOut)",
        "_ = canTimeOut",
        ["OutsideTheExplorerTests"],
    ),
    "trap-message-from-standard-error": (
        "a trap's message is taken from the whole process's standard error: another thread's line can be taken",
        "Sources/ExclusionTesting/ScheduleExploration+Execution.swift",
        "            outcome.trapMessage =\n                said.map { .said($0.trimmingCharacters(in: .whitespaces)) }\n                ?? (TrapContainment.fatalErrorMessages == nil ? nil : .nothing)",
        "            outcome.trapMessage = nil",
        ["TrapMessageTests"],
    ),
    "trap-handler-takes-lock": (
        "the trap handler takes the execution's lock: a thread that traps holding it hangs the run",
        "Sources/ExclusionTesting/ScheduledExecution+Entities.swift",
        "        let messages = TrapContainment.currentFatalErrorMessages\n",
        "        lock.lock()\n        lock.unlock()\n        let messages = TrapContainment.currentFatalErrorMessages\n",
        ["TrapMessageTests"],
    ),
    "poll-never-yields": (
        "a thread that polls an instance with `...IfAvailable` until it likes what it reads never yields: it spins for ever",
        "Sources/ExclusionTesting/ScheduledExecution.swift",
        "gaveUp || entity.lastTry == `try`",
        "gaveUp",
        ["SpinningTests"],
    ),
    "yielder-runs-again": (
        "a schedule runs a thread that just gave up a try again, before the others: a spin that would end never does",
        "Sources/ExclusionTesting/ScheduleSearch.swift",
        "if let current, enabled.contains(current), !yielded { return current }",
        "if let current, enabled.contains(current) { return current }",
        ["SpinningTests"],
    ),
    "trace-key-incremental-misplaced": (
        "a trace key built a step at a time puts the new step before the last step it depends on",
        "Sources/ExclusionTesting/ScheduleStep.swift",
        "if steps[index].depends(on: step) { afterLastPredecessor = place + 1 }",
        "if steps[index].depends(on: step) { afterLastPredecessor = place }",
        ["TraceKeyTests"],
    ),
    "sleep-ends-at-once": (
        "a task's sleep ends as soon as it begins, not in virtual time: sleeps end in the order they began",
        "Sources/ExclusionTesting/ScenarioTaskExecutor.swift",
        "        sleep(UnownedJob(job), for: clock.now.duration(to: instant) as? Duration ?? .zero)\n",
        "        enqueue(job)\n",
        ["OutsideTheExplorerTests"],
    ),
    "deadlock-without-cycle": (
        "a deadlock's report lists who waits for what, but not the cycle of threads waiting for each other",
        "Sources/ExclusionTesting/ScheduledExecution.swift",
        "                + (waitCycle().map { \"; the cycle: \" + $0 } ?? \"\")\n",
        "",
        ["ClassicBugsTests"],
    ),
    "timed-lock-wait-never-gives-up": (
        "under exploration a wait for the lock with a time limit always waits, so the code that handles its TimeoutError is never explored",
        "Sources/ExclusionTesting/ScheduledExecution.swift",
        "                return waitsForTheLockWithATimeLimit(entity) ? (entity.number, .timeOut) : nil\n",
        "                return nil\n",
        ["ClassicBugsTests"],
    ),
    "schedule-parse-lenient": (
        "a pasted schedule with more text after it is read as if the text weren't there",
        "Sources/ExclusionTesting/Schedule.swift",
        " reader.isAtEnd,",
        " true,",
        ["ScheduleTests"],
    ),
    "actor-first-job-in-start": (
        "an operation's first job runs in its thread's start, which runs in a fixed order: a task that joins an actor's queue first always does",
        "Sources/ExclusionTesting/ScheduleExploration+Execution.swift",
        "            execution.suspend(entity, starting: true)\n            var granted = true\n",
        "            var granted = true\n",
        ["ActorsTests"],
    ),
    "main-actor-turn-in-place": (
        "a task's turn on the main actor begins in the step that hopped there, not in a step of its own: turns come in the order of the hops",
        "Sources/ExclusionTesting/ScenarioTaskExecutor.swift",
        "                    granted || !first.onMainActor\n",
        "                    granted || first.onMainActor || !first.onMainActor\n",
        ["ActorsTests"],
    ),
    "actor-jobs-run-by-enqueuer": (
        "the job that runs an actor's queue runs on the thread whose task joined it, which then runs other tasks' turns as its own",
        "Sources/ExclusionTesting/ScenarioTaskExecutor.swift",
        "            guard let task else { return queues.adopting == nil ? .actorJobs : nil }\n",
        "            guard let task else { return nil }\n",
        ["ActorsTests"],
    ),
    "main-executor-not-taken": (
        "the main executor isn't stood in for: main-actor code runs on the main thread, outside the explorer",
        "Sources/ExclusionTesting/RuntimeHooks.swift",
        'runtimeVariable("swift_task_getMainExecutor_hook")',
        'runtimeVariable("swift_task_getMainExecutor_hook_planted")',
        ["ActorsTests"],
    ),
    "global-jobs-not-taken": (
        "jobs for the global executor aren't taken: a task started with Task { } runs in Swift's pool, outside the explorer",
        "Sources/ExclusionTesting/RuntimeHooks.swift",
        'runtimeVariable("swift_task_enqueueGlobal_hook")',
        'runtimeVariable("swift_task_enqueueGlobal_hook_planted")',
        ["ActorsTests"],
    ),
    "decider-counted-inside": (
        "a thread that makes the next decision counts as running its entity: a sleep it ends comes back as that entity's new task",
        "Sources/ExclusionTesting/ScheduledEntity.swift",
        "            !controller.execution.isDeciding.load(ordering: .relaxed)\n",
        "            true\n",
        ["OutsideTheExplorerTests"],
    ),
    "self-granted-step-never-stuck": (
        "the coordinator sees a step outrun its limit only while the threads start: a step a thread grants itself runs on unwatched",
        "Sources/ExclusionTesting/ScheduleDriver.swift",
        "                guard !woke, execution.outranStepLimit(since: deadline) else { return false }\n",
        "                guard !woke, decisions.isEmpty, execution.outranStepLimit(since: deadline) else { return false }\n",
        ["aThreadThatWaitsForSomethingTheExplorerCannotSeeIsReportedStuck"],
    ),
    "entity-threads-not-kept": (
        "a thread whose entity finished ends: every entity of every schedule gets a new thread",
        "Sources/ExclusionTesting/EntityThreads.swift",
        "                guard idle.count < mostIdle else { return false }\n",
        "                guard idle.count < 0 else { return false }\n",
        ["EntityThreadsTests"],
    ),
    "scenarios-at-once-drop-failing": (
        "scenarios explored at once are reported up to the first failing one, without it: the failure is lost",
        "Sources/ExclusionTesting/ScheduleExploration.swift",
        "results.prefix(min(firstFailing + 1, count))",
        "results.prefix(min(firstFailing, count))",
        ["scenariosExploredAtOnceReportWhatOneAtATimeReports"],
    ),
    "runtime-measures-global-queue": (
        "the tests' measure of the pool's time beats on dispatch's global queue, which runs while the pool is held",
        "Tests/ExclusionTestSupport/Patience.swift",
        "self.init { beat in Task.detached(priority: priority) { beat() } }",
        "self.init { beat in DispatchQueue.global().async(execute: beat) }",
        ["RunTimeTests"],
    ),
}


def copy_package(destination):
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True,
        check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        source = os.path.join(ROOT, name)
        if not os.path.isfile(source):
            continue  # deleted in the work tree
        target = os.path.join(destination, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(source, target)


def build(package):
    result = subprocess.run(["swift", "build", "--build-tests"], cwd=package, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("the scratch copy doesn't build:\n" + "\n".join(result.stdout.splitlines()[-30:]))


def run_suites(package, suites):
    """Runs the suites; returns (passed, seconds, the failing tests' names)."""
    started = time.monotonic()
    result = subprocess.run(
        ["swift", "test", "--skip-build", "--filter", "|".join(suites)], cwd=package, capture_output=True, text=True)
    seconds = time.monotonic() - started
    output = result.stdout + result.stderr
    failed = sorted(set(re.findall(r"✘ Test (\w+)\(", output)))
    if result.returncode != 0 and not failed:
        failed = ["(the run crashed or didn't finish)"]
        # What it printed last says why: a crash's signal and backtrace, or a build error.
        print("\n".join(output.splitlines()[-25:]), file=sys.stderr)
    if seconds > LIMIT:
        slow = re.findall(r"Test (\w+)\(.*\) (?:passed|failed) after ([0-9.]+) seconds", output)
        slow = sorted(((float(time), name) for name, time in slow), reverse=True)[:5]
        print("slowest: " + ", ".join(f"{name} {time:.0f} s" for time, name in slow), file=sys.stderr)
    return result.returncode == 0, seconds, failed


def missing_texts(names, root):
    """The plants whose text isn't in their file exactly once, as table rows."""
    rows = []
    for name in names:
        what, path, original = PLANTS[name][:3]
        file = os.path.join(root, path)
        if not os.path.isfile(file) or open(file).read().count(original) != 1:
            rows.append(f"| {name} | {what} | - | - | WRONG: the plant's text is not in {path} once |")
    return rows


def main():
    if sys.argv[1:] == ["--texts"]:
        # Seconds, not the audit's minutes: a file split or a rename that a plant didn't follow
        # shows up before the long steps run.
        rows = missing_texts(list(PLANTS), ROOT)
        print("\n".join(rows) or f"every plant's text is in its file once ({len(PLANTS)} plants)")
        sys.exit(1 if rows else 0)
    names = sys.argv[1:] or list(PLANTS)
    unknown = [name for name in names if name not in PLANTS]
    if unknown:
        sys.exit(f"no such plant: {', '.join(unknown)} (there are: {', '.join(PLANTS)})")
    work = tempfile.mkdtemp(prefix="exclusion-audit-")
    failures = 0
    try:
        copy_package(work)
        build(work)
        print("| plant | what it breaks | caught by | time | verdict |")
        print("|---|---|---|---:|---|")
        suites = sorted({suite for name in names for suite in PLANTS[name][4]})
        passed, seconds, failed = run_suites(work, suites)
        verdict = "ok" if passed else "WRONG: the covering suites fail without a plant"
        failures += 0 if passed else 1
        print(f"| (none) | nothing: the covering suites as they are | {', '.join(failed) or '-'} | {seconds:.0f} s | {verdict} |")
        for name in names:
            what, path, original, planted, covering = PLANTS[name][:5]
            limit = PLANTS[name][5] if len(PLANTS[name]) > 5 else LIMIT
            missing = missing_texts([name], work)
            if missing:
                print(missing[0])
                failures += 1
                continue
            file = os.path.join(work, path)
            text = open(file).read()
            open(file, "w").write(text.replace(original, planted))
            try:
                build(work)
                passed, seconds, failed = run_suites(work, covering)
            finally:
                open(file, "w").write(text)
            if passed:
                verdict = "WRONG: missed"
            elif seconds > limit:
                verdict = f"WRONG: caught after more than {limit} s"
            else:
                verdict = "caught"
            failures += 0 if verdict == "caught" else 1
            print(f"| {name} | {what} | {', '.join(failed) or '-'} | {seconds:.0f} s | {verdict} |", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        sys.exit(f"{failures} plant(s) not caught as they must be")


if __name__ == "__main__":
    main()
