import Dispatch
import ExclusionLockTesting
import ExclusionTestSupport
import Foundation
import Synchronization
import Testing

@testable import Exclusion

// Every timed form gives up at its timeout, whatever it waits for: another access holding the
// state (or, for a write, reads still inside), or its condition. Each case below asks while another
// thread holds the state and stays; the holder leaves only once the waiter has given up, or after
// `patience`. On the engine before timeouts bounded the wait for the state, the synchronous forms
// waited for the holder to leave, and the awaited and submitted forms gave up seconds late when
// several ran at once (their drains, blocked on the state, held threads that tasks needed): shown,
// every case failed.

/// How long a holder stays if the waiter doesn't give up. Long: with the whole suite running on two
/// cores, a test's task can wait seconds for its turn between two steps, and a holder that left
/// early would let a late waiter in. A regression fails when it runs out.
private let patience: Duration = .seconds(300)

private let timeout: Duration = .milliseconds(50)

/// One timed form of one instance, with what can hold the state against it.
private struct TimedCase: Sendable {
    let name: String
    /// Takes the state and calls `inside` from within, so that it is held meanwhile.
    let hold: @Sendable (_ inside: () -> Void) -> Void
    /// Asks for the state with `condition` and `timeout`; raises `ran` if its body runs, and
    /// returns what it threw (nil if it didn't throw).
    let ask:
        @Sendable (_ condition: @escaping @Sendable (Int) -> Bool, _ timeout: Duration, _ ran: Flag) async throws -> (
            any Error
        )?
    /// Whether nothing is left behind: no waiter in line, no thread counted on the lock, the state
    /// free.
    let leftNothing: @Sendable () -> Bool
    /// The state as a plain access sees it afterwards.
    let value: @Sendable () -> Int
}

private func error(of body: () throws -> Void) -> (any Error)? {
    do {
        try body()
        return nil
    } catch {
        return error
    }
}

/// The cases, each on an instance of its own, made anew for each test.
private func exclusiveCases() -> [TimedCase] {
    let box = Exclusive(0, label: "box")
    let hold: @Sendable (_ inside: () -> Void) -> Void = { inside in
        box.access { value in
            value += 1
            inside()
        }
    }
    let leftNothing: @Sendable () -> Bool = {
        guard exclusion_lock_testing_waiters(box._engine._lock._handle) == 0 else { return false }
        return box._engine._waitList.waiting == 0 && box._engine._waitList.threadsAsleep == 0
    }
    let value: @Sendable () -> Int = { syncAccess(box) { $0 } }
    return [
        TimedCase(
            name: "Exclusive, blocking", hold: hold,
            ask: { condition, timeout, ran in
                try await onItsOwnThread {
                    error { try box.access(when: condition, timeout: timeout) { _ in ran.raise() } }
                }
            }, leftNothing: leftNothing, value: value),
        TimedCase(
            name: "Exclusive, awaited", hold: hold,
            ask: { condition, timeout, ran in
                do {
                    try await box.access(when: condition, timeout: timeout) { _ in ran.raise() }
                    return nil
                } catch { return error }
            }, leftNothing: leftNothing, value: value),
        TimedCase(
            name: "Exclusive, submitted", hold: hold,
            ask: { condition, timeout, ran in
                await withCheckedContinuation { continuation in
                    box.accessAsync(when: condition, timeout: timeout, { _ in ran.raise() }, deliverOn: .global()) {
                        result in
                        if case .failure(let error) = result {
                            continuation.resume(returning: error)
                        } else {
                            continuation.resume(returning: nil)
                        }
                    }
                }
            }, leftNothing: leftNothing, value: value),
    ]
}

private func readersWriterCases() -> [TimedCase] {
    let index = ReadersWriter(0, label: "index")
    let holdRead: @Sendable (_ inside: () -> Void) -> Void = { inside in index.read { _ in inside() } }
    let holdWrite: @Sendable (_ inside: () -> Void) -> Void = { inside in
        index.write { value in
            value += 1
            inside()
        }
    }
    let leftNothing: @Sendable () -> Bool = {
        index._engine._waitList.waiting == 0 && index._engine._waitList.threadsAsleep == 0
            && index.writeIfAvailable({ _ in }) != nil
    }
    let value: @Sendable () -> Int = { syncRead(index) { $0 } }
    let blockingWrite:
        @Sendable (_ condition: @escaping @Sendable (Int) -> Bool, _ timeout: Duration, _ ran: Flag) async throws
            -> (any Error)? = { condition, timeout, ran in
                try await onItsOwnThread {
                    error { try index.write(when: condition, timeout: timeout) { _ in ran.raise() } }
                }
            }
    let awaitedWrite:
        @Sendable (_ condition: @escaping @Sendable (Int) -> Bool, _ timeout: Duration, _ ran: Flag) async throws
            -> (any Error)? = { condition, timeout, ran in
                do {
                    try await index.write(when: condition, timeout: timeout) { _ in ran.raise() }
                    return nil
                } catch { return error }
            }
    return [
        TimedCase(
            name: "ReadersWriter, blocking write under a read", hold: holdRead, ask: blockingWrite,
            leftNothing: leftNothing, value: value),
        TimedCase(
            name: "ReadersWriter, blocking write under a write", hold: holdWrite, ask: blockingWrite,
            leftNothing: leftNothing, value: value),
        TimedCase(
            name: "ReadersWriter, awaited write under a read", hold: holdRead, ask: awaitedWrite,
            leftNothing: leftNothing, value: value),
        TimedCase(
            name: "ReadersWriter, awaited write under a write", hold: holdWrite, ask: awaitedWrite,
            leftNothing: leftNothing, value: value),
        TimedCase(
            name: "ReadersWriter, blocking read under a write", hold: holdWrite,
            ask: { condition, timeout, ran in
                try await onItsOwnThread {
                    error { _ = try index.read(when: condition, timeout: timeout) { _ in ran.raise() } }
                }
            }, leftNothing: leftNothing, value: value),
        TimedCase(
            name: "ReadersWriter, awaited read under a write", hold: holdWrite,
            ask: { condition, timeout, ran in
                do {
                    _ = try await index.read(when: condition, timeout: timeout) { _ in ran.raise() }
                    return nil
                } catch { return error }
            }, leftNothing: leftNothing, value: value),
    ]
}

private func allCases() -> [TimedCase] { exclusiveCases() + readersWriterCases() }

/// The cases' names, as the tests' arguments; each test makes its case anew from the name.
private let caseNames = allCases().map(\.name)

private func timedCase(_ name: String) -> TimedCase { allCases().first { $0.name == name }! }

@Suite("Timeouts bound every wait", .patientTimeLimit(minutes: 10))
struct TimeoutTests {
    @Test(arguments: caseNames)
    func aTimedAccessGivesUpWhileAnotherHoldsTheState(_ name: String) async throws {
        let timed = timedCase(name)
        let before = timed.value()
        let entered = Flag()
        let waiterDone = Flag()
        let holderLeft = Countdown(1)
        defer { waiterDone.raise() }
        onNewThread {
            timed.hold {
                entered.raise()
                waiterDone.waitUntilRaised()  // until the waiter gave up, however long that takes
            }
            holderLeft.arrive()
        }
        #expect(await eventually { entered.isRaised })
        let ran = Flag()
        let started = ContinuousClock.now
        let thrown = try await timed.ask({ _ in true }, timeout, ran)
        let waited = ContinuousClock.now - started
        waiterDone.raise()
        await holderLeft.wait()

        #expect(waited >= timeout)
        let timeoutError = thrown as? TimeoutError
        #expect(timeoutError?.cause == .stateHeld)
        #expect(timeoutError?.timeout == timeout)
        #expect(timeoutError?.description.contains("other accesses held its state") == true)
        #expect(!ran.isRaised)
        // The holder's change stays, and nothing of the waiter's is left behind (the submitted
        // form's turn in line may run once the holder has left: it finds the waiter gone).
        #expect(timed.value() == before + (timed.name.contains("under a read") ? 0 : 1))
        #expect(await eventually { timed.leftNothing() })
    }

    @Test func aWriteThatGaveUpOnReadersInsidePutsTheReadBiasBack() async throws {
        // Reads inside on their fast path: the write withdrew the bias to wait for them, and must
        // put it back when it gives up, or every later read takes the slow path.
        let index = ReadersWriter(0, label: "index")
        let entered = Flag()
        let leave = Flag()
        let holderLeft = Countdown(1)
        defer { leave.raise() }
        onNewThread {
            index.read { _ in
                entered.raise()
                leave.waitUntilRaised()
            }
            holderLeft.arrive()
        }
        #expect(await eventually { entered.isRaised })
        let thrown = try await onItsOwnThread {
            error { try index.write(when: { _ in true }, timeout: timeout) { _ in } }
        }
        #expect((thrown as? TimeoutError)?.cause == .stateHeld)
        let biased = exclusion_rwlock_testing_is_biased(index._engine._lock._handle) != 0
        #expect(biased)
        leave.raise()
        await holderLeft.wait()
    }

    @Test(arguments: caseNames)
    func aTimedAccessWhoseConditionStaysFalseSaysSo(_ name: String) async throws {
        let timed = timedCase(name)
        let ran = Flag()
        let thrown = try await timed.ask({ _ in false }, timeout, ran)
        let timeoutError = thrown as? TimeoutError
        #expect(timeoutError?.cause == .conditionFalse)
        #expect(timeoutError?.description.contains("its condition was false") == true)
        #expect(!ran.isRaised)
        #expect(await eventually { timed.leftNothing() })
    }

    @Test func theDefaultCauseIsTheCondition() {
        #expect(TimeoutError(label: "jobs", timeout: .seconds(1)).cause == .conditionFalse)
        #expect(
            TimeoutError(label: "jobs", timeout: .seconds(1), cause: .stateHeld)
                != TimeoutError(label: "jobs", timeout: .seconds(1)))
    }
}

/// Whether the other waiters are still served when a woken thread gives up before it can take the
/// state back. Two threads wait for an item, the first with a timeout. A write adds one item; its
/// release wakes the first thread only, and a read takes the state before that thread can, and
/// stays until the thread has given up. Once the read leaves, the second thread must get the item,
/// with no further write to wake it.
///
/// The read must come between the write's release and the woken thread's retake, a moment no
/// scheduler can be counted on to offer: the first thread is paused where it sleeps
/// (`exclusion_testing_pause`) before the write, and resumed only once the read is inside, so the
/// moment comes every time. Returns nil if the interleaving couldn't be set up, with an issue
/// saying why.
///
/// It runs on a thread of its own and blocks: a test task can wait seconds for its turn when the
/// whole suite runs on two cores, longer than the first thread's timeout.
private func othersAreServedWhenAWokenThreadGivesUp(_ index: ReadersWriter<Int>, patience: Duration) -> Bool? {
    let waitList = index._engine._waitList
    let first = Recorder<String>()
    let firstThread = Recorder<ThreadHandle>()
    let secondRan = Flag()
    onNewThread {
        exclusion_testing_allow_pausing()
        firstThread.record(.current)
        do {
            // Its deadline must not pass before the second thread sleeps too and it is paused,
            // however busy the machine: it passes while the read holds the state, which the read
            // does for as long as it takes.
            try index.write(when: { $0 > 0 }, timeout: patience) { $0 -= 1 }
            first.record("ran")
        } catch let error as TimeoutError {
            first.record(error.cause == .stateHeld ? "gave up after a wake-up" : "timed out asleep")
        } catch {
            first.record("\(error)")
        }
    }
    guard spin(until: { waitList.threadsAsleep == 1 }, timeout: patience) else {
        Issue.record("the first thread never went to sleep: \(first.values)")
        return nil
    }
    onNewThread {
        try? index.write(when: { $0 > 0 }) { $0 -= 1 }
        secondRan.raise()
    }
    guard spin(until: { waitList.threadsAsleep == 2 }, timeout: patience) else {
        Issue.record("the second thread never went to sleep")
        return nil
    }
    defer { exclusion_testing_resume() }
    guard exclusion_testing_pause(firstThread.values[0].thread, patience / .seconds(1)) != 0 else {
        Issue.record("the first thread couldn't be paused")
        return nil
    }
    index.write { $0 += 1 }  // wakes the first thread, which can't run yet
    index.read { _ in
        exclusion_testing_resume()
        // Stays until the first thread is done, so that it can't take the state back: past the
        // first thread's deadline, which began only a moment before this read (and the same
        // limit from here would race it).
        _ = spin(until: { !first.values.isEmpty }, timeout: patience * 3)
    }
    guard first.values == ["gave up after a wake-up"] else {
        Issue.record("the first thread didn't give up behind the read: \(first.values)")
        return nil
    }
    return spin(until: { secondRan.isRaised }, timeout: patience)
}

@Suite("A woken waiter that gives up", .patientTimeLimit(minutes: 5))
struct GivingUpTests {
    @Test func leavesTheOtherWaitersServed() async throws {
        let index = ReadersWriter(0, label: "index")
        // Each step is a wait for an event: the suite's patience for one, not this file's.
        let served = try await onItsOwnThread(limit: ExclusionTestSupport.patience * 5) {
            othersAreServedWhenAWokenThreadGivesUp(index, patience: ExclusionTestSupport.patience)
        }
        #expect(served != false, "the second thread was left asleep with the item there")
    }
}
