import Foundation
import SplitMix

/// One call of ``ScheduleExplorer/run(setUp:inputs:perform:)`` or of `replay`: the scenarios, the
/// search through each one's schedules, and the report. It runs on the explorer's own thread.
final class ScheduleExploration<Model: SequentialModel, Object: Sendable>: Sendable {
    typealias Report = ScheduleReport<Model.Input, Model.Output>
    typealias Outcome = ExecutionOutcome<Model.Input, Model.Output>

    let explorer: ScheduleExplorer<Model>
    let setUp: @Sendable () -> Object
    let inputs: @Sendable (inout ScenarioGenerator) -> Model.Input
    let operation: ScenarioOperation<Object, Model.Input, Model.Output>
    /// Runs once every thread has finished, as a thread of its own: a throw fails the schedule. For
    /// explorations without a model (``ScheduleExplorer/explore(preemptionBound:seed:search:_:)``),
    /// which record no history either.
    let finally: (@Sendable (Object) throws -> Void)?

    init(
        _ explorer: ScheduleExplorer<Model>, _ setUp: @escaping @Sendable () -> Object,
        _ inputs: @escaping @Sendable (inout ScenarioGenerator) -> Model.Input,
        _ operation: ScenarioOperation<Object, Model.Input, Model.Output>,
        finally: (@Sendable (Object) throws -> Void)? = nil
    ) {
        self.explorer = explorer
        self.setUp = setUp
        self.inputs = inputs
        self.operation = operation
        self.finally = finally
    }

    /// Whether the operations' calls and returns are recorded and checked against the model.
    var recordsHistory: Bool { finally == nil }

    /// What the exploration has done so far.
    private struct Tally {
        let start = ContinuousClock.now
        var scenarios = 0
        var schedules = 0
        var undecided = 0
        var isExhaustive = true
        var skipped = 0
        var usedUnseen = false
        var resumedFromOutside = false

        mutating func add(_ outcome: Outcome) {
            schedules += 1
            usedUnseen = usedUnseen || outcome.usedUnseen
            resumedFromOutside = resumedFromOutside || outcome.resumedFromOutside
            if outcome.undecided { undecided += 1 }
        }

        /// Adds what the exploration of another scenario did.
        mutating func add(_ other: Tally) {
            scenarios += other.scenarios
            schedules += other.schedules
            undecided += other.undecided
            isExhaustive = isExhaustive && other.isExhaustive
            skipped += other.skipped
            usedUnseen = usedUnseen || other.usedUnseen
            resumedFromOutside = resumedFromOutside || other.resumedFromOutside
        }
    }

    /// One scenario's search: what it did, and the schedule that failed, if one did.
    private struct Explored {
        var tally = Tally()
        var failing: Outcome?
    }

    /// Explores every scenario, until one fails: one after the other, or as many at once as the
    /// explorer says, with the same report.
    func run() -> Report {
        var tally = Tally()
        let width = min(explorer.scenariosAtOnce, explorer.scenarios)
        let explored = width > 1 ? exploredAtOnce(width) : exploredInTurn()
        for (scenario, scenarioExplored) in explored.enumerated() {
            tally.add(scenarioExplored.tally)
            if let failing = scenarioExplored.failing {
                let programs = programs(explorer.seed, scenario)
                let schedule = Schedule(seed: explorer.seed, scenario: scenario, failing)
                return report(tally, explained(failing, programs, schedule), schedule)
            }
        }
        return report(tally, nil, nil)
    }

    /// The scenarios explored one after the other, up to the first that fails.
    private func exploredInTurn() -> [Explored] {
        var explored: [Explored] = []
        for scenario in 0..<explorer.scenarios {
            explored.append(explore(scenario, stopping: { false }))
            if explored[scenario].failing != nil { break }
        }
        return explored
    }

    /// The scenarios explored `width` at once, on as many threads, up to the first that fails:
    /// each thread takes the next scenario not taken, until one fails; a scenario after the
    /// failing one stops at its next schedule.
    private func exploredAtOnce(_ width: Int) -> [Explored] {
        let shared = ScenariosAtOnce(count: explorer.scenarios)
        let finished = DispatchGroup()
        for _ in 0..<width {
            finished.enter()
            Thread { [self] in
                while let scenario = shared.take() {
                    shared.finish(scenario, explore(scenario, stopping: { shared.isPast(scenario) }))
                }
                finished.leave()
            }.start()
        }
        finished.wait()
        return shared.explored
    }

    /// The scenarios, as the threads that explore them at once take them.
    private final class ScenariosAtOnce: @unchecked Sendable {
        // @unchecked: every var is only touched with `lock` held.
        private let lock = NSLock()
        private let count: Int
        private var next = 0
        /// The first scenario that failed so far, or `count`.
        private var firstFailing: Int
        private var results: [Explored?]

        init(count: Int) {
            self.count = count
            firstFailing = count
            results = Array(repeating: nil, count: count)
        }

        /// The next scenario to explore, unless every one before the first failing one is taken.
        func take() -> Int? {
            lock.withLock {
                guard next < firstFailing else { return nil }
                defer { next += 1 }
                return next
            }
        }

        /// Whether a scenario before `scenario` failed: it counts for nothing.
        func isPast(_ scenario: Int) -> Bool { lock.withLock { firstFailing < scenario } }

        func finish(_ scenario: Int, _ explored: Explored) {
            lock.withLock {
                results[scenario] = explored
                if explored.failing != nil { firstFailing = min(firstFailing, scenario) }
            }
        }

        /// What each scenario up to the first failing one found, in order: each was explored
        /// whole, or until it failed.
        var explored: [Explored] {
            lock.withLock { results.prefix(min(firstFailing + 1, count)).map { $0! } }
        }
    }

    /// One scenario's search, which gives up, counting for nothing, once `stopping` says so.
    private func explore(_ scenario: Int, stopping: () -> Bool) -> Explored {
        var explored = Explored()
        explored.tally.scenarios = 1
        let programs = programs(explorer.seed, scenario)
        switch explorer.search {
        case .systematic:
            explored.failing = systematic(
                programs, bound: explorer.preemptionBound, limit: explorer.scheduleLimit, &explored.tally,
                stopping: stopping)
        case .randomized(let schedules, let depth):
            explored.tally.isExhaustive = false
            explored.failing = randomized(
                programs, scenario, schedules: schedules, depth: depth, &explored.tally, stopping: stopping)
        }
        return explored
    }

    /// Runs `schedule` once.
    func replay(_ schedule: Schedule) -> Report {
        var tally = Tally()
        tally.scenarios = 1
        tally.isExhaustive = false
        var chooser = PrefixChooser(prefix: schedule.choices)
        let outcome = execute(programs(schedule.seed, schedule.scenario), &chooser)
        tally.add(outcome)
        guard outcome.failure != nil else { return report(tally, nil, nil) }
        let replayed = Schedule(seed: schedule.seed, scenario: schedule.scenario, outcome)
        return report(tally, explained(outcome, programs(schedule.seed, schedule.scenario), replayed), replayed)
    }

    /// A failure, with what a trap's report lacks: the schedule and its table go to standard error
    /// at once (if the process ends after all, they are there). The runtime's message is what the
    /// trapping thread found in the runtime's record of fatal errors; where the runtime keeps no
    /// such record (Apple's platforms, where it goes to the crash reporter), only standard error
    /// has it, and it is taken from a run of the same schedule under a capture of standard error,
    /// as the last line that reads like a trap's (another thread's writes may come last).
    private func explained(_ failing: Outcome, _ programs: [[Model.Input]], _ schedule: Schedule) -> Outcome {
        guard let failure = failing.failure, failure.kind == .crashed else { return failing }
        let notice = "ScheduleExplorer: \(failure.message); replay this schedule: \(schedule)\n\(failing.table)\n"
        notice.withCString { _ = write(2, $0, strlen($0)) }
        var explained = failing
        switch failing.trapMessage {
        case .said(let said):
            explained.failure!.message = "\(said) (\(failure.message))"
            return explained
        case .nothing:
            explained.failure!.message = Self.noMessage(failure.message)
            return explained
        case nil:
            break
        }
        var chooser = PrefixChooser(prefix: schedule.choices)
        let (_, written) = capturingStandardError { execute(programs, &chooser) }
        let said = written.split(separator: "\n").last { line in
            ["Fatal error", "Precondition failed", "Assertion failed"].contains { line.contains($0) }
        }
        explained.failure!.message =
            said.map { "\($0.trimmingCharacters(in: .whitespaces)) (\(failure.message))" }
            ?? Self.noMessage(failure.message)
        return explained
    }

    /// A trap's message, `trapped`, where the runtime reported none.
    private static func noMessage(_ trapped: String) -> String {
        "\(trapped): the runtime wrote no message (a release build's precondition traps without one)"
    }

    /// The scenario's operations.
    private func programs(_ seed: UInt64, _ scenario: Int) -> [[Model.Input]] {
        ScenarioGenerator.programs(
            seed: seed, scenario: scenario, threads: explorer.threads, operations: explorer.operationsPerThread, inputs)
    }

    /// Every schedule of the scenario within `bound` preemptions, fewest first, at most `limit`;
    /// the first that fails, which has the fewest preemptions of any failing one.
    private func systematic(
        _ programs: [[Model.Input]], bound: Int, limit: Int, _ tally: inout Tally, stopping: () -> Bool = { false }
    ) -> Outcome? {
        var search = SystematicSearch(bound: bound)
        var runs = 0
        while let prefix = search.next(), !stopping() {
            guard runs < limit else {
                tally.isExhaustive = false
                break
            }
            var chooser = PrefixChooser(prefix: prefix)
            let outcome = execute(programs, &chooser)
            runs += 1
            tally.add(outcome)
            if outcome.failure != nil {
                tally.skipped += search.skipped
                return outcome
            }
            search.explored(prefix, outcome.decisions, outcome.steps)
        }
        tally.skipped += search.skipped
        return nil
    }

    /// `schedules` PCT schedules of the scenario; the first that fails, minimized.
    private func randomized(
        _ programs: [[Model.Input]], _ scenario: Int, schedules: Int, depth: Int, _ tally: inout Tally,
        stopping: () -> Bool
    ) -> Outcome? {
        var random = SplitMix64(seed: explorer.seed &+ UInt64(scenario) &* 0x9E37_79B9_7F4A_7C15)
        var steps = programs.map(\.count).reduce(0, +) * 3
        for _ in 0..<schedules {
            if stopping() { break }
            var chooser = PriorityChooser(seed: random.next(), depth: depth, steps: steps)
            let outcome = execute(programs, &chooser)
            tally.add(outcome)
            steps = max(steps, outcome.decisions.count)
            if outcome.failure != nil { return minimized(outcome, programs) }
        }
        return nil
    }

    /// A failing schedule with fewer preemptions than `failing`'s, if a systematic search finds one.
    private func minimized(_ failing: Outcome, _ programs: [[Model.Input]]) -> Outcome {
        guard failing.preemptions > 0 else { return failing }
        var ignored = Tally()
        let bound = failing.preemptions - 1
        return systematic(programs, bound: bound, limit: explorer.scheduleLimit, &ignored) ?? failing
    }

    private func report(_ tally: Tally, _ failing: Outcome?, _ schedule: Schedule?) -> Report {
        var notes: [String] = []
        if tally.usedUnseen {
            notes.append(
                "an instance was taken with no switch point before it (by a thread the explorer doesn't run, or "
                    + "a task it doesn't see): no schedule preempted a thread just before one")
        }
        if tally.resumedFromOutside {
            notes.append(
                "a task was resumed from outside the explorer (a callback on a queue, another executor): "
                    + "it was resumed once no thread could go on, so no schedule resumed it earlier")
        }
        let failure = failing.flatMap { failing in
            schedule.map { schedule in
                Report.Failure(
                    kind: failing.failure!.kind, message: failing.failure!.message, schedule: schedule,
                    operations: failing.history, excerpt: failing.excerpt, table: failing.table)
            }
        }
        return Report(
            seed: explorer.seed, scenariosExplored: tally.scenarios, schedulesExplored: tally.schedules,
            reorderingsSkipped: tally.skipped,
            isExhaustive: tally.isExhaustive && failure == nil, undecided: tally.undecided, notes: notes,
            failure: failure, elapsed: ContinuousClock.now - tally.start)
    }
}

extension Schedule {
    init<Input, Output>(seed: UInt64, scenario: Int, _ outcome: ExecutionOutcome<Input, Output>) {
        self.init(seed: seed, scenario: scenario, choices: outcome.choices, preemptions: outcome.preemptions)
    }
}
