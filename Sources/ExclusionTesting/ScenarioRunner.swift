import Foundation
import Synchronization

/// Runs an object from several threads at once, many times over, and checks that every recorded
/// history is linearizable.
///
/// Each *history* starts from a fresh object. Every thread gets its own generated list of
/// operations; the threads wait at a barrier so they start together, run their lists while a
/// ``HistoryRecorder`` notes each call and return, and meet again at the end. The history is then
/// checked against the model, and the next one starts, until enough histories are checked, the
/// time limit is up, or a history is found that no sequential order explains.
///
/// ```swift
/// let runner = ScenarioRunner(model: CounterModel())
/// let report = await runner.run(
///     setUp: { Counter() },
///     inputs: { generator in Bool.random(using: &generator) ? .increment : .read },
///     perform: { counter, input in
///         switch input {
///         case .increment: counter.increment()
///         case .read: counter.value
///         }
///     })
/// #expect(report.passed, "\(report)")
/// ```
///
/// Operations are generated from ``seed``, so a failing history's operations can be generated
/// again; the interleaving, chosen by the scheduler, can't. Between operations the threads pause
/// for a few generated moments, so that over many histories they meet in many different ways.
///
/// - Warning: The runner starts its own threads and never blocks the caller's, so it is safe to
///   await from a test. `perform` runs on those threads: it must be synchronous and must return.
public struct ScenarioRunner<Model: SequentialModel>: Sendable {
    /// The sequential specification the histories are checked against.
    public var model: Model
    /// How many threads run operations at the same time.
    public var threads: Int
    /// How many operations each thread runs in one history, chosen at random from this range.
    public var operationsPerThread: ClosedRange<Int>
    /// How many histories to run and check, unless the time limit comes first.
    public var histories: Int
    /// When the run stops starting new histories, however many were asked for.
    public var timeLimit: Duration
    /// How many search steps one history's check may take; see ``LinearizabilityChecker/budget``.
    public var budget: Int
    /// Where the generated operations come from.
    public var seed: UInt64

    /// Creates a runner; the defaults suit an object whose operations take microseconds or less.
    public init(
        model: Model, threads: Int = 3, operationsPerThread: ClosedRange<Int> = 3...10, histories: Int = 1_000,
        timeLimit: Duration = .seconds(30), budget: Int = 100_000, seed: UInt64 = .random(in: .min ... .max)
    ) {
        precondition(threads >= 1, "a scenario needs at least one thread")
        precondition(operationsPerThread.lowerBound >= 0, "a thread can't run a negative number of operations")
        self.model = model
        self.threads = threads
        self.operationsPerThread = operationsPerThread
        self.histories = histories
        self.timeLimit = timeLimit
        self.budget = budget
        self.seed = seed
    }

    /// Runs the histories and checks each; returns what was found.
    ///
    /// - Parameters:
    ///   - setUp: Makes the object for one history, in the model's initial state.
    ///   - inputs: Generates one operation. ``ScenarioGenerator/thread`` says which thread will
    ///     run it, for objects whose threads play different parts.
    ///   - perform: Applies one operation to the object and returns what the model would call its
    ///     output.
    /// - Returns: A report; it holds the first violation found, if any.
    public func run<Object: Sendable>(
        setUp: @escaping @Sendable () -> Object,
        inputs: @escaping @Sendable (inout ScenarioGenerator) -> Model.Input,
        perform: @escaping @Sendable (Object, Model.Input) -> Model.Output
    ) async -> ScenarioReport<Model.Input, Model.Output> {
        let run = ScenarioRun(runner: self, setUp: setUp, inputs: inputs, perform: perform)
        return await withCheckedContinuation { continuation in
            for thread in 0..<threads {
                let worker = Thread {
                    if let report = run.work(as: thread) { continuation.resume(returning: report) }
                }
                worker.name = "scenario thread \(thread)"
                worker.start()
            }
        }
    }
}

extension ScenarioRunner {
    /// Runs the histories with operations that are `async`, such as an actor's methods; otherwise
    /// as the synchronous `run` does.
    ///
    /// Each operation runs in a task of its own while the thread that made the call waits for it,
    /// so an operation's call and return still bracket it on that thread's timeline.
    public func run<Object: Sendable>(
        setUp: @escaping @Sendable () -> Object,
        inputs: @escaping @Sendable (inout ScenarioGenerator) -> Model.Input,
        perform: @escaping @Sendable (Object, Model.Input) async -> Model.Output
    ) async -> ScenarioReport<Model.Input, Model.Output> {
        await run(setUp: setUp, inputs: inputs) { (object: Object, input: Model.Input) -> Model.Output in
            let outcome = Outcome<Model.Output>()
            Task { outcome.deliver(await perform(object, input)) }
            return outcome.wait()
        }
    }

    /// The seed one history's operations are generated from.
    func seed(ofHistory history: Int) -> UInt64 {
        var generator = ScenarioGenerator(seed: seed &+ UInt64(history), thread: -1)
        return generator.next()
    }
}

/// What a ``ScenarioRunner`` found.
public struct ScenarioReport<Input: Sendable, Output: Sendable>: Sendable, CustomStringConvertible {
    /// A history that no sequential order explains.
    public struct Violation: Sendable {
        /// Which history it was, counting from 0.
        public let history: Int
        /// The seed that generates this history's operations again.
        public let seed: UInt64
        /// Every operation of the history, in call order.
        public let operations: [HistoryOperation<Input, Output>]
        /// The operations the checker could not order: the one that blocked it and those
        /// overlapping it.
        public let excerpt: [HistoryOperation<Input, Output>]
    }

    /// The seed the run generated its operations from.
    public let seed: UInt64
    /// How many histories ran and were checked.
    public let historiesChecked: Int
    /// How many operations those histories held.
    public let operationsChecked: Int
    /// How many histories the checker could not decide within its budget.
    public let unknown: Int
    /// Whether the time limit stopped the run before all histories ran.
    public let stoppedByTimeLimit: Bool
    /// The whole run, from the first history to the last check.
    public let elapsed: Duration
    /// The part of ``elapsed`` spent checking.
    public let checkingTime: Duration
    /// The first history found not linearizable, if any. The run stops there.
    public let violation: Violation?

    /// True when every history checked was shown linearizable: no violation, and no check ran out
    /// of budget.
    public var passed: Bool { violation == nil && unknown == 0 && historiesChecked > 0 }

    /// The checker's time per history.
    public var checkingTimePerHistory: Duration {
        historiesChecked == 0 ? .zero : checkingTime / historiesChecked
    }

    public var description: String {
        var lines = [
            "\(historiesChecked) histories (\(operationsChecked) operations) checked in \(Self.format(elapsed)), "
                + "\(Self.format(checkingTimePerHistory)) of checking per history; seed \(seed)"
        ]
        if stoppedByTimeLimit { lines.append("stopped by the time limit") }
        if unknown > 0 { lines.append("\(unknown) histories undecided: the checker's budget ran out") }
        if let violation {
            lines.append(
                "history \(violation.history) (seed \(violation.seed)) is not linearizable; "
                    + "these operations can't be put in any order the model explains:")
            lines += violation.excerpt.map { "  \(Self.describe($0))" }
            lines.append("the whole history:")
            lines += violation.operations.map { "  \(Self.describe($0))" }
        }
        return lines.joined(separator: "\n")
    }

    private static func format(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let microseconds = Double(seconds) * 1e6 + Double(attoseconds) / 1e12
        return switch microseconds {
        case ..<1_000: "\(Int(microseconds.rounded())) µs"
        case ..<1_000_000: "\(Int((microseconds / 1_000).rounded())) ms"
        default: String(format: "%.2f s", microseconds / 1e6)
        }
    }

    private static func describe(_ operation: HistoryOperation<Input, Output>) -> String {
        "thread \(operation.thread): \(operation.input) -> \(operation.output)   "
            + "[called at \(operation.call), returned at \(operation.return)]"
    }
}

/// The random source operations are generated from: SplitMix64, so a seed always gives the same
/// operations.
public struct ScenarioGenerator: RandomNumberGenerator, Sendable {
    /// The thread the operation being generated will run on.
    public let thread: Int
    private var state: UInt64

    init(seed: UInt64, thread: Int) {
        self.state = seed
        self.thread = thread
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}

// MARK: - The run

/// One run's shared state. Thread 0 leads: between the barriers, while the others wait, it sets
/// up each history and checks the one before.
private final class ScenarioRun<Model: SequentialModel, Object: Sendable>: @unchecked Sendable {
    // @unchecked: `object`, `programs`, `recorder`, `finished` and the tallies are written only by
    // thread 0 while the other threads wait at `barrier`, and read by them only after it; the
    // barrier's atomics order those accesses.
    typealias Program = [(input: Model.Input, pause: Int)]

    let runner: ScenarioRunner<Model>
    let setUp: @Sendable () -> Object
    let inputs: @Sendable (inout ScenarioGenerator) -> Model.Input
    let perform: @Sendable (Object, Model.Input) -> Model.Output
    let barrier: SpinBarrier

    var object: Object?
    var programs: [Program] = []
    var recorder: HistoryRecorder<Model.Input, Model.Output>
    var finished: Bool

    init(
        runner: ScenarioRunner<Model>, setUp: @escaping @Sendable () -> Object,
        inputs: @escaping @Sendable (inout ScenarioGenerator) -> Model.Input,
        perform: @escaping @Sendable (Object, Model.Input) -> Model.Output
    ) {
        self.runner = runner
        self.setUp = setUp
        self.inputs = inputs
        self.perform = perform
        self.barrier = SpinBarrier(parties: runner.threads)
        self.recorder = HistoryRecorder(threads: runner.threads)
        self.finished = runner.histories <= 0
    }

    /// Runs one thread's part of every history; thread 0 returns the report, the others nil.
    func work(as thread: Int) -> ScenarioReport<Model.Input, Model.Output>? {
        var lead = thread == 0 ? Leader() : nil
        while true {
            if lead != nil { prepare(history: lead!.started) }
            barrier.wait()
            if finished { return lead?.report(runner) }
            for step in programs[thread] {
                pause(step.pause)
                let object = object!
                recorder.record(thread: thread, step.input) { perform(object, step.input) }
            }
            barrier.wait()
            lead?.check(recorder.history, using: runner)
            if let leader = lead, !leader.shouldContinue(runner) { finished = true }
        }
    }

    private func prepare(history: Int) {
        guard !finished else { return }
        let seed = runner.seed(ofHistory: history)
        var picker = ScenarioGenerator(seed: seed, thread: -1)
        programs = (0..<runner.threads).map { thread in
            var generator = ScenarioGenerator(seed: seed &+ UInt64(thread + 1) &* 0x2545_F491_4F6C_DD1D, thread: thread)
            let count = Int.random(in: runner.operationsPerThread, using: &picker)
            return (0..<count).map { _ in
                let input = inputs(&generator)
                // Mostly back to back, sometimes a short spin, now and then a yield.
                let pause = [0, 0, 0, 0, 0, 8, 64, -1].randomElement(using: &picker)!
                return (input, pause)
            }
        }
        object = setUp()
        recorder = HistoryRecorder(threads: runner.threads)
    }

    private func pause(_ amount: Int) {
        if amount < 0 {
            sched_yield()
        } else if amount > 0 {
            for _ in 0..<amount { _ = spinSink.load(ordering: .relaxed) }
        }
    }

    /// Thread 0's bookkeeping: what has run, what was found, and when to stop.
    private struct Leader {
        let clock = ContinuousClock()
        let start: ContinuousClock.Instant
        var started = 0
        var checked = 0
        var operations = 0
        var unknown = 0
        var checking = Duration.zero
        var violation: ScenarioReport<Model.Input, Model.Output>.Violation?

        init() {
            start = clock.now
        }

        mutating func check(
            _ history: [HistoryOperation<Model.Input, Model.Output>], using runner: ScenarioRunner<Model>
        ) {
            let checker = LinearizabilityChecker(model: runner.model, budget: runner.budget)
            let began = clock.now
            let verdict = checker.check(history)
            checking += clock.now - began
            switch verdict {
            case .linearizable: break
            case .unknown: unknown += 1
            case .notLinearizable(let excerpt):
                violation = .init(
                    history: started, seed: runner.seed(ofHistory: started), operations: history, excerpt: excerpt)
            }
            checked += 1
            operations += history.count
            started += 1
        }

        func shouldContinue(_ runner: ScenarioRunner<Model>) -> Bool {
            violation == nil && started < runner.histories && !timeIsUp(runner)
        }

        func timeIsUp(_ runner: ScenarioRunner<Model>) -> Bool { clock.now - start >= runner.timeLimit }

        func report(_ runner: ScenarioRunner<Model>) -> ScenarioReport<Model.Input, Model.Output> {
            ScenarioReport(
                seed: runner.seed, historiesChecked: checked, operationsChecked: operations, unknown: unknown,
                stoppedByTimeLimit: violation == nil && started < runner.histories, elapsed: clock.now - start,
                checkingTime: checking, violation: violation)
        }
    }
}

/// One async operation's output, handed from its task to the scenario thread waiting for it.
private final class Outcome<Output: Sendable>: @unchecked Sendable {
    // @unchecked: `output` is only touched while `condition` is locked.
    private let condition = NSCondition()
    private var output: Output?

    func deliver(_ value: Output) {
        condition.lock()
        output = value
        condition.signal()
        condition.unlock()
    }

    func wait() -> Output {
        condition.lock()
        defer { condition.unlock() }
        while output == nil { condition.wait() }
        return output!
    }
}

/// Something for a pause's spin to read, so the loop is not optimized away.
private let spinSink = Atomic<Int>(0)

/// Makes a fixed number of threads wait for each other, again and again, spinning (and yielding)
/// rather than sleeping so that they leave the barrier together.
final class SpinBarrier: Sendable {
    private let parties: Int
    private let arrived = Atomic<Int>(0)
    private let generation = Atomic<Int>(0)

    init(parties: Int) {
        self.parties = parties
    }

    func wait() {
        let current = generation.load(ordering: .acquiring)
        if arrived.add(1, ordering: .acquiringAndReleasing).newValue == parties {
            arrived.store(0, ordering: .relaxed)
            generation.add(1, ordering: .releasing)
        } else {
            // Spin first, so that the threads that are running leave together, within nanoseconds
            // of each other; yield after a while, so a thread waiting for a core gets one.
            var spins = 0
            while generation.load(ordering: .acquiring) == current {
                spins += 1
                if spins > 20_000 { sched_yield() }
            }
        }
    }
}
