import Exclusion
import ExclusionTestSupport
import ExclusionTesting
import Foundation
import Testing

/// A counter that can be incremented, added to and read.
struct CounterModel: SequentialModel {
    enum Input: Sendable, CustomStringConvertible {
        case increment
        case add(Int)
        case read

        var description: String {
            switch self {
            case .increment: "increment"
            case .add(let amount): "add(\(amount))"
            case .read: "read"
            }
        }
    }

    var initialState: Int { 0 }

    func step(_ state: Int, _ input: Input) -> (output: Int, state: Int) {
        switch input {
        case .increment: (state + 1, state + 1)
        case .add(let amount): (state + amount, state + amount)
        case .read: (state, state)
        }
    }

    static func generate(_ generator: inout ScenarioGenerator) -> Input {
        switch Int.random(in: 0..<4, using: &generator) {
        case 0: .read
        case 1: .add(Int.random(in: 1...5, using: &generator))
        default: .increment
        }
    }
}

/// A register whose swap writes a value and returns the one it replaced.
struct SwapRegisterModel: SequentialModel {
    enum Input: Sendable, CustomStringConvertible {
        case write(Int)
        case swap(Int)
        case read

        var description: String {
            switch self {
            case .write(let value): "write(\(value))"
            case .swap(let value): "swap(\(value))"
            case .read: "read"
            }
        }
    }

    var initialState: Int { 0 }

    func step(_ state: Int, _ input: Input) -> (output: Int?, state: Int) {
        switch input {
        case .write(let value): (nil, value)
        case .swap(let value): (state, value)
        case .read: (state, state)
        }
    }

    /// Mostly reads, as a readers-writer register is used.
    static func generate(_ generator: inout ScenarioGenerator) -> Input {
        let value = Int.random(in: 1...9, using: &generator)
        return switch Int.random(in: 0..<6, using: &generator) {
        case 0: .write(value)
        case 1: .swap(value)
        default: .read
        }
    }
}

/// Each primitive, run through thousands of short concurrent histories; and for each, a broken
/// variant the same run must catch, which shows the run can fail.
@Suite("Linearizability of the primitives", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
struct PrimitiveLinearizabilityTests {
    @Test func exclusiveIsALinearizableCounter() async {
        let report = await ScenarioRunner(model: CounterModel(), histories: 2_000).run(
            setUp: { Exclusive(0, label: "counter") },
            inputs: CounterModel.generate,
            perform: { counter, input in
                counter.access { value in
                    switch input {
                    case .increment: value += 1
                    case .add(let amount): value += amount
                    case .read: break
                    }
                    return value
                }
            })
        expectLinearizable(report, "Exclusive as a counter")
        #expect(report.historiesChecked == 2_000 || report.stoppedByTimeLimit)
    }

    @Test func aCounterThatReadsAndWritesInTwoAccessesIsCaught() async {
        // The bug shows only when two changes both read before either writes. Left to the
        // scheduler, a busy machine seldom puts two of the runner's threads in that window at once
        // (Verification/README.md, "Under load"), so the first two changes of each history meet
        // there by a hand-off. Every operation changes the counter, so every thread's first
        // operation arrives and nobody waits for ever.
        let report = await bugCatchingRunner(CounterModel()).run(
            setUp: { (counter: Exclusive(0, label: "broken counter"), window: FirstTwoMeet()) },
            inputs: { generator in
                Bool.random(using: &generator) ? .increment : .add(Int.random(in: 2...9, using: &generator))
            },
            perform: { broken, input in
                let seen = broken.counter.access { $0 }
                broken.window.arrive()
                let new: Int
                switch input {
                case .increment: new = seen + 1
                case .add(let amount): new = seen + amount
                case .read: fatalError("only changes are generated")
                }
                broken.counter.access { $0 = new }
                return new
            })
        expectViolation(report, "counter reading and writing in two accesses")
        #expect(report.historiesChecked == 1, "the hand-off makes the first history lose a change")
    }

    @Test func exclusiveIsALinearizableRegister() async {
        let report = await ScenarioRunner(model: SwapRegisterModel(), histories: 2_000).run(
            setUp: { Exclusive(0, label: "register") },
            inputs: SwapRegisterModel.generate,
            perform: { register, input in
                register.access { (value: inout Int) -> Int? in
                    switch input {
                    case .write(let new):
                        value = new
                        return nil
                    case .swap(let new):
                        defer { value = new }
                        return value
                    case .read:
                        return value
                    }
                }
            })
        expectLinearizable(report, "Exclusive as a register")
    }

    @Test func readersWriterIsALinearizableRegisterWithSharedReads() async {
        let report = await ScenarioRunner(model: SwapRegisterModel(), histories: 2_000).run(
            setUp: { ReadersWriter(0, label: "register") },
            inputs: SwapRegisterModel.generate,
            perform: { register, input in
                switch input {
                case .write(let new):
                    register.write { $0 = new }
                    return nil
                case .swap(let new):
                    return register.write { value in
                        defer { value = new }
                        return value
                    }
                case .read:
                    return register.read { $0 }
                }
            })
        expectLinearizable(report, "ReadersWriter as a register")
    }

    @Test func aSwapThatReadsThenWritesIsCaught() async {
        // As the counter above: the first two swaps meet between their read and their write.
        let report = await bugCatchingRunner(SwapRegisterModel()).run(
            setUp: { (register: ReadersWriter(0, label: "broken register"), window: FirstTwoMeet()) },
            inputs: { generator in
                // Swaps only, so two of them can lose one's write between the read and the write.
                .swap(Int.random(in: 1...9, using: &generator))
            },
            perform: { broken, input in
                guard case .swap(let new) = input else { fatalError("only swaps are generated") }
                let old = broken.register.read { $0 }
                broken.window.arrive()
                broken.register.write { $0 = new }
                return old
            })
        expectViolation(report, "swap reading then writing")
        #expect(report.historiesChecked == 1, "the hand-off makes the first history lose a write")
    }

    @Test func theReportShowsTheOperationsThatCannotBeOrdered() async {
        let report = await bugCatchingRunner(CounterModel()).run(
            setUp: { (counter: Exclusive(0), window: FirstTwoMeet()) },
            inputs: { _ in .increment },
            perform: { broken, _ in
                let seen = broken.counter.access { $0 }
                broken.window.arrive()
                return broken.counter.access { value in
                    value = seen + 1
                    return value
                }
            })
        #expect(report.failure?.excerpt.isEmpty == false)
        #expect(!report.passed)
        #expect("\(report)".contains("is not linearizable"))
        #expect("\(report)".contains("increment"))
    }

    @Test func aRunStopsAtItsTimeLimit() async {
        let report = await ScenarioRunner(model: CounterModel(), histories: .max, timeLimit: .milliseconds(200)).run(
            setUp: { Exclusive(0) },
            inputs: { _ in .increment },
            perform: { counter, _ in
                counter.access { value in
                    value += 1
                    return value
                }
            })
        #expect(report.stoppedByTimeLimit)
        #expect(report.passed)
        #expect(report.elapsed < .seconds(30))
    }

    @Test func theSameSeedGeneratesTheSameOperations() async {
        func inputs(seed: UInt64) async -> [String] {
            let report = await ScenarioRunner(model: CounterModel(), threads: 1, histories: 1, seed: seed).run(
                setUp: { Exclusive(0) },
                inputs: CounterModel.generate,
                perform: { _, _ in -1 })  // every output wrong: the whole history is reported
            return report.failure?.operations.map { "\($0.input)" } ?? []
        }
        let first = await inputs(seed: 42)
        #expect(!first.isEmpty)
        #expect(await inputs(seed: 42) == first)
        #expect(await inputs(seed: 43) != first)
    }
}

/// Lets the first two threads that arrive leave together: the first waits until the second has
/// come, and every later one passes. A hand-off that puts two operations inside one window, however
/// the scheduler runs the threads.
private struct FirstTwoMeet: Sendable {
    private let arrivals = Exclusive(0, label: "arrivals")

    func arrive() {
        arrivals.access { $0 += 1 }
        // Without a timeout the wait ends only with its condition true: it can't throw.
        try? arrivals.access(when: { $0 >= 2 }) { _ in }
    }
}
