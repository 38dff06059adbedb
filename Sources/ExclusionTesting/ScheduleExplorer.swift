@_spi(ScheduleExploration) import Exclusion
import Foundation

// Weakly: an executable that runs an explorer (a benchmark) must start where Swift Testing isn't
// installed (on Apple platforms it ships with Xcode, not the system).
#if canImport(Testing)
@_weakLinked import Testing
#endif

/// Runs a scenario's threads one step at a time, in every order that matters, and checks each
/// history: the interleaving a test run by the scheduler would miss, found, printed and replayable.
///
/// Most tests need no model: threads, and a check of what must hold once they have finished
/// (``explore(preemptionBound:seed:search:_:)``):
///
/// ```swift
/// let report = await ScheduleExplorer.explore(preemptionBound: 2, seed: 7) { threads in
///     let seats = Seats()                       // made afresh for every schedule
///     threads.spawn { _ = try seats.reserve(1) }
///     threads.spawn { _ = try await seats.reserveAsync(1) }
///     threads.finally { guard seats.count == 1 else { throw Overbooked() } }
/// }
/// #expect(report.passed, "\(report)")
/// ```
///
/// With a model, the explorer generates *scenarios* like ``ScenarioRunner`` (a list of operations
/// for each thread) from ``seed``, runs them on a fresh object, and checks every history against
/// the model:
///
/// ```swift
/// let explorer = ScheduleExplorer(
///     model: TransferModel(), threads: 2, operationsPerThread: 1...2, preemptionBound: 2, seed: 7)
/// let report = await explorer.run(
///     setUp: { Ledger() },
///     inputs: TransferModel.generate,
///     perform: { ledger, input in ledger.apply(input) })
/// #expect(report.passed, "\(report)")
/// ```
///
/// Either way the explorer decides who runs. Each thread is a real thread (a task's steps run on
/// an executor the explorer owns), but only one runs at a time, and it stops at each of
/// Exclusion's synchronization points until the explorer picks who goes on: every access about to
/// take an instance, synchronous or awaited, conditional, timed or `...IfAvailable`; a condition
/// found false; a submission and the drain that runs it; a task's turn in an actor, or on the main
/// actor. Child tasks (`async let`, task groups) and tasks started with `Task { }` or
/// `Task.detached` are threads of their own, and so is the job that runs an actor's queue. A thread whose access would wait for the lock simply
/// isn't picked; when no thread can go on and some haven't finished, that is a deadlock, reported
/// with the schedule that led there.
///
/// By default (``Search/systematic``) it runs every schedule with at most ``preemptionBound``
/// preemptions, fewest first, so a failure comes with the fewest preemptions that make the
/// scenario fail; schedules that only reorder steps on different instances run once. A failure
/// stops the run: its report holds the history, a table of the schedule with a column per thread,
/// and the ``Schedule`` itself, which ``replay(_:setUp:inputs:perform:)-4ojlz`` runs again exactly.
///
/// What counts as a failure: a history the model can't explain, or a check that throws; an
/// operation that throws; a deadlock; a re-entrant access, and a lock-order inversion where
/// Exclusion checks the lock order: misuse that would stop the process is reported instead; and a
/// trap in an explored thread (a failed precondition, a force unwrap of nil): its schedule and
/// table go to standard error before anything else, and the run goes on with a failure of kind
/// `crashed` that holds the runtime's message (a stack overflow, or a debugger that stops at the
/// trap, still ends the process).
///
/// An access's end is no switch point of its own: what a thread does between letting go of an
/// instance and its next synchronization point touches nothing another thread can see, so
/// switching there or at that next point gives the same executions. The table shows the ends.
///
/// - Warning: Only instances of `Exclusive` and `ReadersWriter` made afresh for each schedule, used
///   only by the scenario's threads, are explored. The explorer sees nothing else that threads
///   share (make everything shared such an instance). A thread that blocks on anything else (a
///   semaphore, another library's lock) stalls its schedule, which is reported as stuck after
///   ``stepTimeLimit``. A `Task.sleep` ends in virtual time, once no thread can go on; a task that
///   awaits something the explorer doesn't run (a callback on a queue) is resumed then too, or
///   reported stuck after ``outsideWaitLimit``. Operations must be deterministic: the explorer
///   replays each schedule from the start. To run the main actor and tasks started with `Task { }`,
///   the explorer sets two hooks of Swift's runtime for the rest of the process, which answer only
///   on its own threads (see "Exploring schedules", Actors).
public struct ScheduleExplorer<Model: SequentialModel>: Sendable {
    /// How schedules are chosen.
    public enum Search: Sendable, Equatable {
        /// Every schedule within the preemption bound, fewest preemptions first.
        case systematic
        /// `schedules` random schedules of each scenario, for scenarios too large to explore
        /// exhaustively: PCT (probabilistic concurrency testing), which finds a bug that needs
        /// `depth` ordering constraints with a probability it guarantees. A failure found is then
        /// minimized by a systematic search with fewer preemptions.
        case randomized(schedules: Int, depth: Int = 3)
    }

    /// Whether a lock-order inversion counts as a failure.
    public enum LockOrderChecking: Sendable, Equatable {
        /// As Exclusion does in this build: in debug builds, unless `EXCLUSION_LOCK_ORDER=0`.
        case asExclusionDoes
        case always
        /// Never: threads nest instances in any order, and a deadlock it causes is what fails.
        case never
    }

    /// The sequential specification the histories are checked against.
    public var model: Model
    /// How many threads run operations.
    public var threads: Int
    /// How many operations each thread runs in a scenario, chosen from this range.
    public var operationsPerThread: ClosedRange<Int>
    /// The most preemptions a schedule may have: switches away from a thread that could have gone
    /// on. Most bugs need one or two; each more multiplies the schedules.
    public var preemptionBound: Int
    /// How many scenarios to generate and explore.
    public var scenarios: Int
    /// How many scenarios are explored at once, each on threads of its own: up to the machine's
    /// cores (`ProcessInfo.processInfo.activeProcessorCount`) for a search spread over them.
    ///
    /// The report is the one exploring them one after the other gives, but for the time it took:
    /// the failure of the first scenario that fails, and the scenarios and schedules explored up
    /// to it. Each scenario's search doesn't depend on any other's, so it finds what it would
    /// alone; a scenario after the first failing one stops, and counts for nothing.
    public var scenariosAtOnce = 1
    /// How schedules are chosen.
    public var search: Search
    /// Where the generated operations come from.
    public var seed: UInt64
    /// The most schedules run for one scenario; a systematic search that reaches it stops that
    /// scenario, and the report isn't exhaustive.
    public var scheduleLimit = 100_000
    /// How many search steps one history's check may take; see ``LinearizabilityChecker/budget``.
    public var budget = 100_000
    /// How long a thread may run from one switch point to the next before its schedule is
    /// reported as stuck.
    public var stepTimeLimit: Duration = .seconds(10)
    /// How long, once no thread can go on, the explorer waits for something it doesn't run (a
    /// callback on a dispatch queue, another executor) to resume a suspended task, before it
    /// reports the schedule stuck. A sleep that virtual time ends is sure to come back, but the
    /// runtime resumes the sleeper through Swift's shared pool, which other work can keep busy:
    /// it gets ``stepTimeLimit`` instead, or this if that is longer. A task that nothing will
    /// ever resume (a continuation lost, or resumed by nobody) fails its schedule after this
    /// long. So does a deadlock in a schedule where a child task has ended: Swift tells an
    /// executor nothing when a task ends, so a child task with no job may be waiting. A task
    /// waiting in an instance's line, for its turn or a condition, is known to wait for the
    /// explored threads: a deadlock of such tasks is reported at once.
    public var outsideWaitLimit: Duration = .seconds(10)
    /// Whether a lock-order inversion counts as a failure.
    public var lockOrder = LockOrderChecking.asExclusionDoes

    /// Creates an explorer; the defaults suit operations that make a few accesses each.
    public init(
        model: Model, threads: Int = 2, operationsPerThread: ClosedRange<Int> = 1...3, preemptionBound: Int = 2,
        scenarios: Int = 10, search: Search = .systematic, seed: UInt64 = .random(in: .min ... .max)
    ) {
        precondition(threads >= 1, "a scenario needs at least one thread")
        precondition(operationsPerThread.lowerBound >= 0, "a thread can't run a negative number of operations")
        precondition(preemptionBound >= 0, "a preemption bound can't be negative")
        self.model = model
        self.threads = threads
        self.operationsPerThread = operationsPerThread
        self.preemptionBound = preemptionBound
        self.scenarios = scenarios
        self.search = search
        self.seed = seed
    }

    /// Explores the scenarios' schedules and checks each history; returns what was found.
    ///
    /// - Parameters:
    ///   - setUp: Makes the object for one execution, in the model's initial state. It runs once
    ///     per schedule.
    ///   - inputs: Generates one operation. ``ScenarioGenerator/thread`` says which thread will run it.
    ///   - perform: Applies one operation to the object and returns what the model would call its
    ///     output. A throw is a failure.
    /// - Returns: A report; it holds the first failure found, if any. Under Swift Testing, a
    ///   failure's table is also attached to the test.
    public func run<Object: Sendable>(
        setUp: @escaping @Sendable () -> Object,
        inputs: @escaping @Sendable (inout ScenarioGenerator) -> Model.Input,
        perform: @escaping @Sendable (Object, Model.Input) throws -> Model.Output
    ) async -> ScheduleReport<Model.Input, Model.Output> {
        await explore(ScheduleExploration(self, setUp, inputs, .synchronous(perform))) { $0.run() }
    }

    /// Explores scenarios whose operations are `async`; otherwise as the synchronous `run` does.
    ///
    /// Each operation runs in a task whose executor is its scenario thread, so a suspended task is
    /// a thread waiting to go on: an awaited access that has to wait suspends, and the explorer
    /// schedules the step that runs it and resumes the task. An awaited access that doesn't have
    /// to wait is no switch point (Exclusion's fast path doesn't ask); the report says so.
    public func run<Object: Sendable>(
        setUp: @escaping @Sendable () -> Object,
        inputs: @escaping @Sendable (inout ScenarioGenerator) -> Model.Input,
        perform: @escaping @Sendable (Object, Model.Input) async throws -> Model.Output
    ) async -> ScheduleReport<Model.Input, Model.Output> {
        await explore(ScheduleExploration(self, setUp, inputs, .asynchronous(perform))) { $0.run() }
    }

    /// Runs exactly `schedule` again: a failure saved from an earlier report, with the same
    /// operations, object and explorer settings.
    ///
    /// - Returns: A report of one schedule, with the failure it ends in, if any; a failure of kind
    ///   ``ScheduleReport/Failure/Kind/scheduleMismatch`` if the schedule doesn't fit the scenario.
    public func replay<Object: Sendable>(
        _ schedule: Schedule,
        setUp: @escaping @Sendable () -> Object,
        inputs: @escaping @Sendable (inout ScenarioGenerator) -> Model.Input,
        perform: @escaping @Sendable (Object, Model.Input) throws -> Model.Output
    ) async -> ScheduleReport<Model.Input, Model.Output> {
        await explore(ScheduleExploration(self, setUp, inputs, .synchronous(perform))) { $0.replay(schedule) }
    }

    /// Replays a schedule of a scenario whose operations are `async`.
    public func replay<Object: Sendable>(
        _ schedule: Schedule,
        setUp: @escaping @Sendable () -> Object,
        inputs: @escaping @Sendable (inout ScenarioGenerator) -> Model.Input,
        perform: @escaping @Sendable (Object, Model.Input) async throws -> Model.Output
    ) async -> ScheduleReport<Model.Input, Model.Output> {
        await explore(ScheduleExploration(self, setUp, inputs, .asynchronous(perform))) { $0.replay(schedule) }
    }

    /// Runs `work` on a thread of its own (it blocks while the scenario's threads run), then
    /// attaches a failure's table to the current test, if there is one.
    func explore<Object>(
        _ exploration: ScheduleExploration<Model, Object>,
        _ work: @escaping @Sendable (ScheduleExploration<Model, Object>) -> ScheduleReport<Model.Input, Model.Output>
    ) async -> ScheduleReport<Model.Input, Model.Output> {
        let report = await withCheckedContinuation { continuation in
            let coordinator = Thread {
                TrapContainment.begin()
                defer { TrapContainment.end() }
                continuation.resume(returning: work(exploration))
            }
            coordinator.name = "schedule explorer"
            coordinator.start()
        }
        #if canImport(Testing)
        if #_hasSymbol(Test.self), let failure = report.failure, Test.current != nil {
            Attachment.record(failure.table, named: "schedule.txt")
        }
        #endif
        return report
    }
}
