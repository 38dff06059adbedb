import Dispatch
import ExclusionTestSupport
import Foundation
import Synchronization
import Testing

@testable import Exclusion

// Conditional access: a waiter runs once its condition holds, checked after every access that
// could have changed the state, and nobody signals. Each property has a checker below that is run
// against the real engine and against the engine with the matching bug planted in its wait list
// (`WaitFaults`, in Support/), where it must fail.

/// How many accesses wait for a condition on `instance` right now.
private func waiting<State>(_ instance: Exclusive<State>) -> Int {
    instance._engine._waitList.waiting
}

private func waiting<State>(_ instance: ReadersWriter<State>) -> Int {
    instance._engine._waitList.waiting
}

/// How long a waiter under test may wait: long enough that on a busy machine it never times out
/// before the test made its condition true (the test's own waits fail first, in `patience`).
/// Broken variants are caught with a second's patience.
private let progress: Duration = patience * 3

// MARK: - Checkers

/// Whether waiters wake up when plain accesses (which signal nothing) make their conditions true:
/// two blocked threads, one awaiting task and one submitted access wait for an item each, then
/// four plain accesses add one item each.
///
/// From the waiters' start to the last wake-up nothing waits for the shared pool, which a busy
/// suite can hold for longer than a waiter's `patience`: the awaiting task has a thread of its own,
/// the submitted access delivers on a queue of its own, and a thread adds the items as soon as
/// all four are in line.
private func everyWaiterWakes(_ items: Exclusive<Int>, patience: Duration) async -> Bool {
    let finished = Atomic<Int>(0)
    let timedOut = Atomic<Int>(0)
    let tally: @Sendable (Bool) -> Void = { succeeded in
        if succeeded {
            finished.add(1, ordering: .sequentiallyConsistent)
        } else {
            timedOut.add(1, ordering: .sequentiallyConsistent)
        }
    }
    for _ in 0..<2 {
        onNewThread { tally((try? items.access(when: { $0 > 0 }, timeout: patience) { $0 -= 1 }) != nil) }
    }
    onADedicatedThread { tally((try? await items.access(when: { $0 > 0 }, timeout: patience) { $0 -= 1 }) != nil) }
    items.accessAsync(
        when: { $0 > 0 }, timeout: patience, { $0 -= 1 }, deliverOn: DispatchQueue(label: "tally")
    ) { tally($0.isSuccess) }
    // All four in line (a wait that already timed out has failed anyway), then the items.
    let supplier = BlockingCall { () -> Bool in
        let inLine = spin(
            until: {
                waiting(items) == 4 || timedOut.load(ordering: .sequentiallyConsistent) > 0
            }, timeout: patience)
        guard inLine else { return false }
        for _ in 0..<4 { items.access { $0 += 1 } }
        return true
    }
    guard (try? await supplier.value(limit: patience * 2)) == true else { return false }
    _ = await holds(within: patience * 2) {
        finished.load(ordering: .sequentiallyConsistent) + timedOut.load(ordering: .sequentiallyConsistent) == 4
    }
    return finished.load(ordering: .sequentiallyConsistent) == 4 && syncAccess(items, { $0 }) == 0
}

/// Whether a waiter's body only ever runs while its condition holds: the waiter waits for 1; an
/// access sets 2, which must not run it; then an access sets 1, which must.
private func bodiesRunOnlyWhenTheirConditionHolds(_ value: Exclusive<Int>) async -> Bool {
    let sawWrongValue = Atomic<Bool>(false)
    let waiter = BlockingCall {
        _ = try? value.access(when: { $0 == 1 }) { state in
            if state != 1 { sawWrongValue.store(true, ordering: .sequentiallyConsistent) }
            state = 100
        }
    }
    let inLine = await eventually {
        waiting(value) == 1 || sawWrongValue.load(ordering: .sequentiallyConsistent)
    }
    guard inLine, !sawWrongValue.load(ordering: .sequentiallyConsistent) else {
        _ = try? await waiter.value()
        return false
    }
    await onItsOwnThread { value.access { $0 = 2 } }
    await onItsOwnThread { value.access { $0 = $0 == 2 ? 1 : $0 } }
    guard (try? await waiter.value()) != nil else { return false }
    return !sawWrongValue.load(ordering: .sequentiallyConsistent) && syncAccess(value, { $0 }) == 100
}

/// Whether a cancelled awaited wait leaves at once, throws `CancellationError`, leaves no record
/// and never runs: within `patience` of the cancellation.
private func cancelledWaitsLeave(_ value: Exclusive<Int>, patience: Duration) async -> Bool {
    let ran = Flag()
    let outcome = Recorder<String>()
    let task = onADedicatedThread {
        do {
            try await value.access(when: { $0 > 0 }) { _ in ran.raise() }
            outcome.record("ran")
        } catch is CancellationError {
            outcome.record("cancelled")
        } catch {
            outcome.record("\(error)")
        }
    }
    guard await eventually({ waiting(value) == 1 }) else { return false }
    task.cancel()
    let left = await holds(within: patience) { !outcome.values.isEmpty }
    let leftNothing = waiting(value) == 0
    await value.access { $0 = 1 }  // ends a wait that didn't leave, so the test can finish
    _ = await task.outcome()
    return left && leftNothing && outcome.values == ["cancelled"] && !ran.isRaised
}

/// How many times a blocked waiter's condition was found true before it got what it waited for,
/// while another access keeps taking the item first.
///
/// The rival is an awaiting task that waits for the same item, in line after the blocked thread.
/// Each round adds one item; the release that adds it wakes the thread and then, going down the
/// line, runs the rival's body, which takes the item before the thread can. Unless the state is
/// promised to the thread, it loses every round; the rounds stop after ten.
private func chancesBeforeAWaiterRuns(_ items: Exclusive<Int>) async -> Int {
    let chances = Atomic<Int>(0)
    let done = Flag()
    onNewThread {
        try? items.access(
            when: { count in
                if count > 0 { chances.add(1, ordering: .sequentiallyConsistent) }
                return count > 0
            }
        ) { $0 -= 1 }
        done.raise()
    }
    let waitList = items._engine._waitList
    guard await eventually({ waitList.threadsAsleep == 1 }) else { return .max }
    let rival = onADedicatedThread {
        while !Task.isCancelled { _ = try? await items.access(when: { $0 > 0 }) { $0 -= 1 } }
    }
    for _ in 0..<10 {
        // The waiter lost the last round and sleeps again, and the rival waits in line after it.
        let ready = await eventually {
            done.isRaised || (waitList.threadsAsleep == 1 && waiting(items) == 2)
        }
        guard ready, !done.isRaised else { break }
        await onItsOwnThread { items.access { $0 += 1 } }
    }
    rival.cancel()
    if !done.isRaised { await onItsOwnThread { items.access { $0 += 1 } } }
    _ = await eventually { done.isRaised }
    _ = await rival.outcome()
    return chances.load(ordering: .sequentiallyConsistent)
}

/// Whether a woken thread checks its condition again before its body runs. A blocked thread waits
/// for an item, and an awaiting task waits for one after it; then one item comes. The release that
/// adds it wakes the thread and, going down the line, runs the task's body, which takes the item:
/// the thread must find nothing when it holds the state again, and wait for the second item.
private func wokenThreadsCheckAgain(_ items: Exclusive<Int>) async -> Bool {
    let ranOnNothing = Flag()
    let done = Flag()
    onNewThread {
        try? items.access(when: { $0 > 0 }) { count in
            if count <= 0 { ranOnNothing.raise() }
            count -= 1
        }
        done.raise()
    }
    let waitList = items._engine._waitList
    guard await eventually({ waitList.threadsAsleep == 1 }) else { return false }
    let rival = onADedicatedThread { _ = try? await items.access(when: { $0 > 0 }) { $0 -= 1 } }
    guard await eventually({ waitList.waiting == 2 }) else { return false }
    await onItsOwnThread { items.access { $0 += 1 } }
    _ = await rival.outcome()
    await onItsOwnThread { items.access { $0 += 1 } }
    _ = await eventually { done.isRaised }
    return done.isRaised && !ranOnNothing.isRaised && syncAccess(items, { $0 }) == 0
}

/// Runs `check` while another thread is inside the access that `hold` makes (it calls `inside`
/// from within its body), then lets that thread leave.
private func whileAnotherThreadIsInside(
    _ hold: @escaping @Sendable (_ inside: () -> Void) -> Void, _ check: () async -> Void
) async {
    let entered = Flag()
    let leave = Flag()
    defer { leave.raise() }
    onNewThread {
        hold {
            entered.raise()
            leave.waitUntilRaised()  // until the check is done, however long that takes
        }
    }
    #expect(await eventually { entered.isRaised })
    await check()
}

extension Result {
    fileprivate var isSuccess: Bool {
        if case .success = self { true } else { false }
    }
}

// MARK: - Tests

@Suite("Waiting for state", .patientTimeLimit(minutes: 10))
struct WaitingTests {
    @Test func aBlockedWaiterRunsWhenAnAccessMakesItsConditionTrue() async throws {
        let jobs = Exclusive([String](), label: "jobs")
        let taken = BlockingCall { try? jobs.access(when: { !$0.isEmpty }) { $0.removeFirst() } }
        #expect(await eventually { waiting(jobs) == 1 })
        await jobs.access { $0.append("report") }
        #expect(try await taken.value() == "report")
        #expect(await jobs.access { $0.isEmpty })
        #expect(waiting(jobs) == 0)
    }

    @Test func aConditionThatHoldsRunsAtOnce() throws {
        let value = Exclusive(5)
        #expect(try value.access(when: { $0 > 0 }) { $0 * 2 } == 10)
        let index = ReadersWriter(5)
        #expect(try index.read(when: { $0 > 0 }) { $0 * 2 } == 10)
        #expect(
            try index.write(when: { $0 > 0 }) {
                $0 += 1; return $0
            } == 6)
    }

    @Test func aConditionThatTurnsTrueWhileTheThreadSpinsRunsWithoutSleeping() throws {
        // No other thread: the condition turns true on its second check, which the spin before
        // sleeping makes. Without the spin the thread joins the line instead, its own release
        // checks it a second time and wakes it, and it checks a third time (shown).
        let value = Exclusive(1, label: "value")
        let checks = Atomic<Int>(0)
        let result = try value.access(
            when: { _ in checks.add(1, ordering: .sequentiallyConsistent).newValue >= 2 }, timeout: .seconds(10)
        ) {
            $0 += 1
            return $0
        }
        #expect(result == 2)
        #expect(checks.load(ordering: .sequentiallyConsistent) == 2)
        #expect(waiting(value) == 0)
        #expect(!value.isAccessing)
        #expect(value.access { $0 } == 2)  // and the state was let go of
    }

    @Test func everyWaiterWakesWithoutASignal() async {
        #expect(await everyWaiterWakes(Exclusive(0, label: "items"), patience: progress))
    }

    @Test func aBodyRunsOnlyWhileItsConditionHolds() async {
        #expect(await bodiesRunOnlyWhenTheirConditionHolds(Exclusive(0, label: "value")))
    }

    @Test func aWokenThreadChecksItsConditionAgain() async {
        #expect(await wokenThreadsCheckAgain(Exclusive(0, label: "items")))
    }

    @Test func aCancelledAwaitLeavesAtOnceAndLeavesNothing() async {
        #expect(await cancelledWaitsLeave(Exclusive(0, label: "value"), patience: progress))
    }

    @Test func aWaiterWhoseConditionBecameTrueIsNotStarved() async {
        // Found true, then lost twice to the stream; the third time the state is promised to it.
        #expect(await chancesBeforeAWaiterRuns(Exclusive(0, label: "items")) <= 4)
    }

    @Test func anAwaitedWaiterRunsInTheAccessThatMadeItsConditionTrue() async throws {
        let items = Exclusive(0, label: "items")
        let chances = Atomic<Int>(0)
        let waiter = onADedicatedThread {
            try await items.access(when: { count in
                if count > 0 { chances.add(1, ordering: .sequentiallyConsistent) }
                return count > 0
            }) { $0 -= 1 }
        }
        #expect(await eventually { waiting(items) == 1 })
        await onItsOwnThread {
            items.access { $0 += 1 }
            items.access { if $0 > 0 { $0 -= 1 } }  // too late: the waiter took it in the access before
        }
        try await waiter.outcome()?.get()
        #expect(chances.load(ordering: .sequentiallyConsistent) == 1)
        #expect(await items.access { $0 } == 0)
    }

    @Test func aSynchronousWaitTimesOutWithoutRunning() throws {
        let jobs = Exclusive([String](), label: "jobs")
        var ran = false
        do {
            try jobs.access(when: { !$0.isEmpty }, timeout: .milliseconds(20)) { _ in ran = true }
            Issue.record("no timeout")
        } catch let error as TimeoutError {
            #expect(error.label == "jobs")
            #expect(error.timeout == .milliseconds(20))
            #expect(error.description.contains("\"jobs\""))
        }
        #expect(!ran)
        #expect(waiting(jobs) == 0)
        #expect(syncAccess(jobs, { $0 }) == [])
    }

    @Test func aLimitThatPassesWhileTheAccessIsSetUpIsATimeout() async {
        // The timer starts before the access has arrived in line; if it fires first, the access
        // learns it when it arrives, and hears a `TimeoutError` like any other.
        let owner = Exclusive(0)
        let list = owner._engine._waitList
        let waiter = list.expect()
        let timer = list.startTimer(for: waiter, _TimeLimit(.zero), label: "set up")
        let fired = await eventually {
            list._look { line in
                guard case .expected(_, endedWith: .some)? = line.arrivals[waiter] else { return false }
                return true
            }
        }
        let heard = Recorder<String>()
        let job = _WaitingJob(
            condition: { (_: Int) in true }, run: { (_: inout Int, _) in heard.record("ran") },
            fail: { error in heard.record((error as? TimeoutError).map { "timeout on \($0.label)" } ?? "\(error)") },
            timer: timer)
        #expect(fired)
        #expect(!list.arrive(waiter, job))
        #expect(heard.values == ["timeout on set up"])
        withExtendedLifetime(owner) {}  // the list counts its sleepers in the instance's words
    }

    @Test func anAwaitedWaitTimesOutWithoutRunning() async {
        let index = ReadersWriter([String](), label: "index")
        let ran = Flag()
        // Whether it gave up while its condition was false or before its turn came depends on how
        // busy the machine is; that it gave up, and on what, doesn't.
        let write = await #expect(throws: TimeoutError.self) {
            try await index.write(when: { !$0.isEmpty }, timeout: .milliseconds(20)) { _ in ran.raise() }
        }
        let read = await #expect(throws: TimeoutError.self) {
            try await index.read(when: { !$0.isEmpty }, timeout: .milliseconds(20)) { _ in ran.raise() }
        }
        for error in [write, read] {
            #expect(error?.label == "index")
            #expect(error?.timeout == .milliseconds(20))
        }
        #expect(!ran.isRaised)
        #expect(await eventually { waiting(index) == 0 })
    }

    @Test func aSubmittedWaitDeliversItsResultOnceOrItsTimeout() async {
        let jobs = Exclusive([String](), label: "jobs")
        let results = Recorder<String>()
        let delivered = Countdown(2)
        jobs.accessAsync(when: { !$0.isEmpty }, { $0.removeFirst() }, deliverOn: .global()) { result in
            results.record((try? result.get()) ?? "failed")
            delivered.arrive()
        }
        jobs.accessAsync(when: { $0.count > 5 }, timeout: .milliseconds(20), { $0.removeFirst() }, deliverOn: .global())
        {
            result in
            results.record((try? result.get()) ?? "timed out")
            delivered.arrive()
        }
        jobs.accessAsync { $0.append("email") }  // after both have looked and waited: same thread, later
        await delivered.wait()
        #expect(Set(results.values) == ["email", "timed out"])
    }

    @Test func aSubmittedWaitHearsBackWhenTheInstanceGoesAway() async {
        let delivered = Countdown(1)
        let outcome = Recorder<Bool>()
        do {
            let jobs = Exclusive([String](), label: "jobs")
            jobs.accessAsync(when: { !$0.isEmpty }, { $0.count }, deliverOn: .global()) { result in
                outcome.record((try? result.get()) == nil)
                delivered.arrive()
            }
            #expect(await eventually { waiting(jobs) == 1 })
        }
        await delivered.wait()
        #expect(outcome.values == [true])
    }

    @Test func workThatDoesNotWaitKeepsItsOrderPastAWaiter() async {
        let log = Exclusive([Int](), label: "log")
        log.accessAsync(when: { $0.count >= 3 }, { $0.append(99) }, deliverOn: .global()) { _ in }
        for number in 0..<3 { log.accessAsync { $0.append(number) } }
        #expect(await eventually { syncAccess(log, { $0.count }) == 4 })
        #expect(await log.access { $0 } == [0, 1, 2, 99])
    }

    @Test func readsNeverWakeWaiters() async throws {
        let index = ReadersWriter(0, label: "index")
        let checks = Atomic<Int>(0)
        let result = BlockingCall {
            try? index.read(when: { value in
                checks.add(1, ordering: .sequentiallyConsistent)
                return value > 0
            }) { $0 }
        }
        #expect(await eventually { waiting(index) == 1 })
        let before = checks.load(ordering: .sequentiallyConsistent)
        for _ in 0..<100 { _ = syncRead(index, { $0 }) }
        #expect(checks.load(ordering: .sequentiallyConsistent) == before)
        syncWrite(index) { $0 = 7 }
        #expect(try await result.value() == 7)
    }

    @Test func producersAndConsumersMoveEveryItemOnce() async {
        // A bounded queue on conditional access alone, from both kinds of caller at once. Every
        // wait has a limit, and a loop stops at its first timeout: a wake-up lost fails the test
        // in seconds instead of leaving the group waiting. The loops themselves are a workload,
        // bounded as one: thousands of hand-offs on a busy machine take longer than one event may.
        let queue = Exclusive([Int](), label: "queue")
        let capacity = 8
        let perProducer = 2_000
        let consumed = Recorder<Int>()
        await withTaskGroup(of: Void.self) { group in
            for producer in 0..<2 {
                group.addTask {
                    await onItsOwnThread(limit: workloadPatience) {
                        for item in 0..<perProducer {
                            let put: Void? = try? queue.access(when: { $0.count < capacity }, timeout: patience) {
                                $0.append(producer * perProducer + item)
                            }
                            if put == nil { break }
                        }
                    }
                }
            }
            group.addTask {
                await onItsOwnThread(limit: workloadPatience) {
                    for _ in 0..<perProducer {
                        guard
                            let item = try? queue.access(when: { !$0.isEmpty }, timeout: patience, { $0.removeFirst() })
                        else { break }
                        consumed.record(item)
                    }
                }
            }
            group.addTask {
                // A task on a thread of its own: each item resumes it, and on the shared pool a
                // busy suite (ThreadSanitizer's, say) could hold a resumption longer than the
                // producers' waits may last.
                _ = await onADedicatedThread {
                    for _ in 0..<perProducer {
                        guard
                            let item = try? await queue.access(
                                when: { !$0.isEmpty }, timeout: patience, { $0.removeFirst() })
                        else { break }
                        consumed.record(item)
                    }
                }.outcome(limit: workloadPatience)
            }
        }
        #expect(consumed.values.sorted() == Array(0..<(2 * perProducer)))
        #expect(waiting(queue) == 0)
    }

    @Test func tryFormsRunWhenNothingConflictsAndAreNilOtherwise() async {
        let value = Exclusive(1, label: "value")
        #expect(value.accessIfAvailable { $0 + 1 } == 2)
        await whileAnotherThreadIsInside({ inside in value.access { _ in inside() } }) {
            #expect(value.accessIfAvailable { $0 } == nil)
        }
        #expect(await eventually { value.accessIfAvailable { $0 } == 1 })

        let index = ReadersWriter(1, label: "index")
        #expect(index.readIfAvailable { $0 } == 1)
        #expect(index.writeIfAvailable { $0 &+ 1 } == 2)
        await whileAnotherThreadIsInside({ inside in index.read { _ in inside() } }) {
            #expect(index.readIfAvailable { $0 } == 1)  // reads share
            #expect(index.writeIfAvailable { $0 } == nil)
        }
        await whileAnotherThreadIsInside({ inside in index.write { _ in inside() } }) {
            #expect(index.readIfAvailable { $0 } == nil)
        }
        #expect(await eventually { index.writeIfAvailable { $0 } == 1 })
    }

    @Test func tryFormsNeverFailSpuriously() async {
        // Nothing else holds the state, so every try must succeed; readers on other threads share.
        let value = Exclusive(0)
        let index = ReadersWriter(0)
        let failures = Atomic<Int>(0)
        await onThreads(2, rounds: 20_000) { thread, _ in
            if thread == 0 {
                if value.accessIfAvailable({ $0 += 1 }) == nil { failures.add(1, ordering: .relaxed) }
                if index.readIfAvailable({ $0 }) == nil { failures.add(1, ordering: .relaxed) }
            } else {
                _ = index.readIfAvailable { $0 }  // shares, so it never stops the other's read
            }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
        #expect(syncAccess(value, { $0 }) == 20_000)
    }
}
