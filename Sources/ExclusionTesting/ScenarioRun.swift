import Foundation
import Synchronization

/// One run's shared state. Thread 0 leads: between the barriers, while the others wait, it sets
/// up each history and checks the one before.
final class ScenarioRun<Model: SequentialModel, Object: Sendable>: @unchecked Sendable {
    // @unchecked: `object`, `programs`, `recorder` and `finished` are written only by thread 0
    // while the other threads wait at `barrier`, and read by them only after it; the barrier's
    // atomics order those accesses.
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
            if let lead { prepare(history: lead.checked) }
            barrier.wait()
            if finished { return lead?.report(runner) }
            let object = object!
            for step in programs[thread] {
                pause(step.pause)
                recorder.record(thread: thread, step.input) { perform(object, step.input) }
            }
            barrier.wait()
            lead?.check(recorder.history, using: runner)
            if let leader = lead, !leader.shouldContinue(runner) { finished = true }
        }
    }

    private func prepare(history: Int) {
        guard !finished else { return }
        // The operations as ScheduleExplorer generates a scenario's (one generator for both), and
        // between them, from a generator of the history's own: mostly back to back, sometimes a
        // short spin, now and then a yield.
        let operations = ScenarioGenerator.programs(
            seed: runner.seed, scenario: history, threads: runner.threads, operations: runner.operationsPerThread,
            inputs)
        var pauses = ScenarioGenerator(seed: runner.seed &+ UInt64(history) &* 0x9E37_79B9_7F4A_7C15, thread: -1)
        programs = operations.map { inputs in
            inputs.map { input in (input, [0, 0, 0, 0, 0, 8, 64, -1].randomElement(using: &pauses)!) }
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
        /// How many histories ran and were checked; also the number of the next one.
        var checked = 0
        var operations = 0
        var undecided = 0
        var checking = Duration.zero
        var failure: ScenarioReport<Model.Input, Model.Output>.Failure?

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
            case .unknown: undecided += 1
            case .notLinearizable(let excerpt):
                failure = .init(history: checked, operations: history, excerpt: excerpt)
            }
            checked += 1
            operations += history.count
        }

        func shouldContinue(_ runner: ScenarioRunner<Model>) -> Bool {
            failure == nil && checked < runner.histories && clock.now - start < runner.timeLimit
        }

        func report(_ runner: ScenarioRunner<Model>) -> ScenarioReport<Model.Input, Model.Output> {
            ScenarioReport(
                seed: runner.seed, historiesChecked: checked, operationsChecked: operations, undecided: undecided,
                stoppedByTimeLimit: failure == nil && checked < runner.histories, elapsed: clock.now - start,
                checkingTime: checking, failure: failure)
        }
    }
}

/// Something for a pause's spin to read, so the loop is not optimized away.
private let spinSink = Atomic<Int>(0)

/// Makes a fixed number of threads wait for each other, again and again, spinning (and yielding)
/// rather than sleeping so that they leave the barrier together; a thread that has waited longer
/// than a spin lasts sleeps, since the others are plainly not running: on a busy machine, a
/// barrier that only spins keeps from running the very threads it waits for.
final class SpinBarrier: @unchecked Sendable {
    // @unchecked: the counters are atomic; `sleep` guards nothing but the sleep and the wake-up.
    private let parties: Int
    private let arrived = Atomic<Int>(0)
    private let generation = Atomic<Int>(0)
    private let sleepers = Atomic<Int>(0)
    private let sleep = NSCondition()

    init(parties: Int) {
        self.parties = parties
    }

    func wait() {
        let current = generation.load(ordering: .acquiring)
        if arrived.add(1, ordering: .acquiringAndReleasing).newValue == parties {
            arrived.store(0, ordering: .relaxed)
            // Counted, then looked for: a thread about to sleep counts itself, then looks at the
            // generation, so one of the two sees the other.
            generation.add(1, ordering: .sequentiallyConsistent)
            if sleepers.load(ordering: .sequentiallyConsistent) > 0 {
                sleep.lock()
                sleep.broadcast()
                sleep.unlock()
            }
            return
        }
        var spins = 0
        while generation.load(ordering: .acquiring) == current {
            spins += 1
            if spins > 20_000 { sched_yield() }
            if spins > 20_100 { break }
        }
        guard generation.load(ordering: .acquiring) == current else { return }
        sleep.lock()
        sleepers.add(1, ordering: .sequentiallyConsistent)
        while generation.load(ordering: .sequentiallyConsistent) == current { sleep.wait() }
        sleepers.subtract(1, ordering: .sequentiallyConsistent)
        sleep.unlock()
    }
}
