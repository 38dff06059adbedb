import Exclusion
import ExclusionTestSupport
import ExclusionTesting
import Foundation
import Testing

/// A register: writes replace the value, reads return it.
struct Register: SequentialModel {
    enum Input: Sendable {
        case write(Int)
        case read
    }

    var initialState: Int { 0 }

    func step(_ state: Int, _ input: Input) -> (output: Int?, state: Int) {
        switch input {
        case .write(let value): (nil, value)
        case .read: (state, state)
        }
    }
}

/// A counter: increments return the new value.
struct Counter: SequentialModel {
    var initialState: Int { 0 }

    func step(_ state: Int, _ input: Void) -> (output: Int, state: Int) { (state + 1, state + 1) }
}

private typealias RegisterOperation = HistoryOperation<Register.Input, Int?>

private func op(
    _ thread: Int, _ input: Register.Input, _ output: Int?, _ call: UInt64, _ returned: UInt64
)
    -> RegisterOperation
{
    HistoryOperation(thread: thread, input: input, output: output, call: call, return: returned)
}

@Suite("Linearizability checker", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
struct LinearizabilityCheckerTests {
    let checker = LinearizabilityChecker(model: Register())

    @Test func aReadOverlappingAWriteMaySeeEitherValue() {
        for seen in [0, 1] {
            let history = [op(0, .write(1), nil, 1, 4), op(1, .read, seen, 2, 3)]
            #expect(checker.check(history).isLinearizable, "read saw \(seen)")
        }
    }

    @Test func aReadAfterACompletedWriteMustSeeIt() {
        let history = [op(0, .write(1), nil, 1, 2), op(1, .read, 0, 3, 4)]
        guard case .notLinearizable(let excerpt) = checker.check(history) else {
            Issue.record("a stale read was accepted")
            return
        }
        // The stale read, and the write it should have seen.
        #expect(excerpt.map(\.thread) == [0, 1])
    }

    @Test func readsMayNotSeeValuesGoBackInTime() {
        // Two writes in sequence; one reader sees 2 and then, later, 1: impossible.
        let history = [
            op(0, .write(1), nil, 1, 2), op(0, .write(2), nil, 3, 10),
            op(1, .read, 2, 4, 5), op(1, .read, 1, 6, 7),
        ]
        #expect(!checker.check(history).isLinearizable)
    }

    @Test func aValueNobodyWroteIsRejected() {
        #expect(!checker.check([op(0, .write(1), nil, 1, 3), op(1, .read, 7, 2, 4)]).isLinearizable)
    }

    @Test func manyOverlappingOperationsAreOrderedWhenPossible() {
        // Three writers and two readers all overlapping: each read saw some written value.
        let history = [
            op(0, .write(1), nil, 1, 20), op(1, .write(2), nil, 2, 21), op(2, .write(3), nil, 3, 22),
            op(3, .read, 2, 4, 23), op(4, .read, 3, 5, 24),
        ]
        #expect(checker.check(history).isLinearizable)
    }

    @Test func aTinyBudgetAnswersUnknownInsteadOfHanging() {
        var history: [RegisterOperation] = []
        for index in 0..<12 { history.append(op(index, .write(index), nil, UInt64(index + 1), 100)) }
        history.append(op(12, .read, 99, 50, 101))  // never written: the full search must try every order
        guard case .unknown = LinearizabilityChecker(model: Register(), budget: 50).check(history) else {
            Issue.record("expected the budget to run out")
            return
        }
    }

    @Test func lostIncrementsAreCaught() {
        // Two overlapping increments both returned 1: one was lost.
        let counter = LinearizabilityChecker(model: Counter())
        let lost = [
            HistoryOperation(thread: 0, input: (), output: 1, call: 1, return: 3),
            HistoryOperation(thread: 1, input: (), output: 1, call: 2, return: 4),
        ]
        #expect(!counter.check(lost).isLinearizable)
        let fine = [
            HistoryOperation(thread: 0, input: (), output: 2, call: 1, return: 3),
            HistoryOperation(thread: 1, input: (), output: 1, call: 2, return: 4),
        ]
        #expect(counter.check(fine).isLinearizable)
    }

    // MARK: - Recorded histories of real objects

    @Test func anExclusiveCounterIsLinearizable() async {
        for _ in 0..<200 {
            let value = Exclusive(0)
            let history = await recordCounter(threads: 3, operations: 10) {
                value.access { state in
                    state += 1
                    return state
                }
            }
            #expect(LinearizabilityChecker(model: Counter()).check(history).isLinearizable)
        }
    }

    @Test func aCounterThatReadsAndWritesInTwoAccessesIsCaught() async {
        // The deliberately broken variant: read in one access, write in another.
        var caught = 0
        for _ in 0..<200 where caught == 0 {
            let value = Exclusive(0)
            let history = await recordCounter(threads: 3, operations: 10) {
                let seen = value.access { $0 }
                sched_yield()
                return value.access { state in
                    state = seen + 1
                    return state
                }
            }
            if !LinearizabilityChecker(model: Counter()).check(history).isLinearizable { caught += 1 }
        }
        #expect(caught > 0)
    }

    /// Records `operations` increments on each of `threads` real threads started together.
    private func recordCounter(
        threads: Int, operations: Int, _ increment: @escaping @Sendable () -> Int
    ) async -> [HistoryOperation<Void, Int>] {
        let recorder = HistoryRecorder<Void, Int>(threads: threads)
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<threads {
                group.addTask {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        Thread {
                            for _ in 0..<operations { recorder.record(thread: thread, ()) { increment() } }
                            continuation.resume()
                        }.start()
                    }
                }
            }
        }
        return recorder.history
    }
}
