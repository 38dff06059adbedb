import Foundation

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
///   await from a test. `perform` runs on those threads, and must return.
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
    /// - Returns: A report; it holds the first failure found, if any.
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
