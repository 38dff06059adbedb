import Exclusion
import ExclusionTestSupport
import SplitMix
import Synchronization
import Testing

@testable import ExclusionTesting

/// An operation of the reduction's scenarios: a read or a write of one of a few instances.
private enum Touch: Sendable, CustomStringConvertible {
    case read(Int)
    case write(Int)

    var description: String {
        switch self {
        case .read(let instance): "read \(instance)"
        case .write(let instance): "write \(instance)"
        }
    }
}

/// The partial-order reduction skips schedules that only reorder independent steps of schedules
/// that ran. It is sound if it skips no execution: every way the scenario can go, told apart by
/// each instance's order of writes and what every read saw, still runs. Checked by running each
/// scenario with the reduction and without it, for scenarios that share reads and writes over two
/// or three instances, on two or three threads, at bounds 1 and 2.
@Suite("ScheduleExplorer's reduction", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
struct ScheduleReductionTests {
    /// The scenarios: made from a seed, so that they are the same every run.
    private static func scenarios() -> [(threads: [[Touch]], instances: Int)] {
        var random = SplitMix64(seed: 11)
        return (0..<12).map { index in
            let instances = 2 + index % 2
            let threads = 2 + (index / 2) % 2
            let programs = (0..<threads).map { _ in
                (0..<2).map { _ -> Touch in
                    let instance = Int.random(in: 0..<instances, using: &random)
                    return Bool.random(using: &random) ? .read(instance) : .write(instance)
                }
            }
            return (programs, instances)
        }
    }

    private static func executions(
        _ programs: [[Touch]], instances: Int, bound: Int, reducing: Bool
    ) -> [ExecutionOutcome<AnyHistory.Input, AnyHistory.Output>] {
        let explorer = ScheduleExplorer(model: AnyHistory(), threads: programs.count, preemptionBound: bound, seed: 1)
        let exploration = explorer.exploration(
            setUp: { (0..<instances).map { ReadersWriter(0, label: "\($0)") } },
            perform: { (shared: [ReadersWriter<Int>], input: AnyHistory.Input) in
                // The input names the thread; each thread runs its whole program as one operation.
                for touch in programs[input.thread] {
                    switch touch {
                    case .read(let instance): _ = shared[instance].read { $0 }
                    case .write(let instance): shared[instance].write { $0 += 1 }
                    }
                }
                return AnyHistory.Output()
            })
        let inputs = programs.indices.map { [AnyHistory.Input(thread: $0)] }
        return exploration.executions(inputs, bound: bound, reducing: reducing)
    }

    @Test(arguments: [1, 2])
    func skipsNoExecution(bound: Int) async throws {
        let scenarios = Self.scenarios()
        // On a thread of its own: the explorations block it.
        let results = try await onItsOwnThread(limit: workloadPatience) {
            scenarios.map { programs, instances in
                let reduced = Self.executions(programs, instances: instances, bound: bound, reducing: true)
                let full = Self.executions(programs, instances: instances, bound: bound, reducing: false)
                let missing = Set(full.map(\.signature)).subtracting(reduced.map(\.signature))
                return (programs: "\(programs)", missing: missing.count, skipped: reduced.count < full.count)
            }
        }
        for result in results {
            #expect(result.missing == 0, "\(result.programs): \(result.missing) executions never ran")
        }
        // Or the check would hold of no reduction at all.
        #expect(results.contains { $0.skipped }, "the reduction skipped nothing in any scenario")
    }

    /// The scenarios with what tasks do: awaited reads and writes, a write that waits for a
    /// condition, work submitted to a drain, a child task's write beside its parent's.
    private static func awaitedScenarios() -> [[[Work]]] {
        var random = SplitMix64(seed: 5)
        return (0..<16).map { _ in
            (0..<2).map { _ in
                (0..<2).map { _ in
                    let instance = Int.random(in: 0..<2, using: &random)
                    return switch Int.random(in: 0..<7, using: &random) {
                    case 0: .read(instance)
                    case 1: .write(instance)
                    case 2: .awaitedRead(instance)
                    case 3: .awaitedWrite(instance)
                    case 4: .writeOnceWritten(instance)
                    case 5: .submit(instance)
                    default: .writeBesideAChild(instance)
                    }
                }
            }
        }
    }

    /// What every execution of `programs` within `bound` did, told apart by values alone: the
    /// order in which each instance's (or actor's) writes ran and what every read saw, as the
    /// operations logged them (not as the explorer's steps say), and how the execution ended.
    private static func executions<Scene: LoggingScene>(
        of _: Scene.Type, _ programs: [[Scene.Operation]], bound: Int, reducing: Bool
    ) -> [String] {
        var explorer = ScheduleExplorer(model: AnyHistory(), threads: programs.count, preemptionBound: bound, seed: 1)
        // Nothing outside the explorer resumes these tasks: a deadlock needn't wait for it.
        explorer.outsideWaitLimit = .zero
        let latest = Mutex<Scene?>(nil)
        let exploration = explorer.exploration(
            setUp: {
                let scene = Scene()
                latest.withLock { $0 = scene }
                return scene
            },
            performAsync: { (scene: Scene, input: AnyHistory.Input) in
                for (index, work) in programs[input.thread].enumerated() {
                    await scene.run(work, named: "\(input.thread).\(index)")
                }
                return AnyHistory.Output()
            })
        let inputs = programs.indices.map { [AnyHistory.Input(thread: $0)] }
        var signatures: [String] = []
        _ = exploration.executions(inputs, bound: bound, reducing: reducing) { outcome in
            let log = latest.withLock { $0!.log.all }
            signatures.append("\(log.sorted()) \(outcome.failure.map { "\($0.kind)" } ?? "passed")")
        }
        return signatures
    }

    /// Scenarios of two threads of two operations each, over actors, the main actor, and
    /// instances written from tasks of their own. A task of its own beside a call across an await
    /// takes thousands of schedules without the reduction: such scenarios are left out, so that the
    /// test stays quick on a busy machine.
    private static func actorScenarios() -> [[[ActorWork]]] {
        var random = SplitMix64(seed: 11)
        var scenarios: [[[ActorWork]]] = []
        while scenarios.count < 10 {
            let scenario: [[ActorWork]] = (0..<2).map { _ in
                (0..<2).map { _ in
                    let index = Int.random(in: 0..<2, using: &random)
                    return switch Int.random(in: 0..<6, using: &random) {
                    case 0: .write(index)
                    case 1: .writeAcrossAnAwait(index)
                    case 2: .mainActorWrite
                    case 3: .mainActorWriteAroundActor(index)
                    case 4: .instanceWrite(index)
                    default: .unstructuredWrite(index)
                    }
                }
            }
            let works = scenario.joined()
            let heavy =
                works.contains { if case .unstructuredWrite = $0 { true } else { false } }
                && works.contains { if case .writeAcrossAnAwait = $0 { true } else { false } }
            if !heavy { scenarios.append(scenario) }
        }
        return scenarios
    }

    /// Actors, the main actor and tasks started with `Task { }` are explored: a turn in an actor
    /// touches every actor, and a step that may put a task in an actor's queue does too.
    @Test(arguments: [1, 2])
    func skipsNoExecutionOfActors(bound: Int) async throws {
        let scenarios = Self.actorScenarios()
        let results = try await onItsOwnThread(limit: workloadPatience) {
            scenarios.map { programs in
                let reduced = Self.executions(of: Stage.self, programs, bound: bound, reducing: true)
                let full = Self.executions(of: Stage.self, programs, bound: bound, reducing: false)
                let missing = Set(full).subtracting(reduced)
                let failed = full.filter { !$0.hasSuffix(" passed") }
                return (
                    programs: "\(programs)", missing: missing.sorted(), skipped: reduced.count < full.count,
                    failed: failed, distinct: Set(full).count
                )
            }
        }
        for result in results {
            #expect(result.missing.isEmpty, "\(result.programs): these executions never ran: \(result.missing)")
            #expect(result.failed.isEmpty, "\(result.programs): \(result.failed)")
        }
        #expect(results.contains { $0.skipped }, "the reduction skipped nothing in any scenario")
        // The actors' turns are explored: some scenarios go more than one way.
        #expect(results.contains { $0.distinct > 1 }, "every scenario went one way only")
    }

    @Test(arguments: [1, 2])
    func skipsNoExecutionOfTasks(bound: Int) async throws {
        let scenarios = Self.awaitedScenarios()
        let results = try await onItsOwnThread(limit: workloadPatience) {
            scenarios.map { programs in
                let reduced = Self.executions(of: World.self, programs, bound: bound, reducing: true)
                let full = Self.executions(of: World.self, programs, bound: bound, reducing: false)
                let missing = Set(full).subtracting(reduced)
                return (programs: "\(programs)", missing: missing.sorted(), skipped: reduced.count < full.count)
            }
        }
        for result in results {
            #expect(result.missing.isEmpty, "\(result.programs): these executions never ran: \(result.missing)")
        }
        #expect(results.contains { $0.skipped }, "the reduction skipped nothing in any scenario")
    }
}

/// An operation of the scenarios with actors: on one of two actors, on the main actor, or on an
/// instance from a task of its own.
private enum ActorWork: Sendable, CustomStringConvertible {
    /// A write in an actor.
    case write(Int)
    /// A write in an actor, from what it read before it called the other actor (an await, in
    /// which the actor runs others).
    case writeAcrossAnAwait(Int)
    /// A write on the main actor.
    case mainActorWrite
    /// A write on the main actor, from what it read before it called an actor.
    case mainActorWriteAroundActor(Int)
    /// An awaited write of an instance.
    case instanceWrite(Int)
    /// An awaited write of an instance, in a task started with `Task { }`, awaited.
    case unstructuredWrite(Int)

    var description: String {
        switch self {
        case .write(let actor): "write actor \(actor)"
        case .writeAcrossAnAwait(let actor): "write actor \(actor) across an await"
        case .mainActorWrite: "write the main actor"
        case .mainActorWriteAroundActor(let actor): "write the main actor around actor \(actor)"
        case .instanceWrite(let instance): "await write \(instance)"
        case .unstructuredWrite(let instance): "await write \(instance) in a task"
        }
    }
}

/// What the reduction's scenarios with tasks run on: made afresh for each execution, it runs each
/// operation and logs what it did, outside the explorer's sight.
private protocol LoggingScene: Sendable {
    associatedtype Operation: Sendable
    init()
    var log: Lines { get }
    func run(_ work: Operation, named name: String) async
}

/// Lines that operations write, in the order they write them, kept outside the explorer's sight.
private final class Lines: Sendable {
    private let lines = Mutex<[String]>([])

    func append(_ line: String) { lines.withLock { $0.append(line) } }

    var all: [String] { lines.withLock { $0 } }
}

/// An actor whose state is the names of the writes that ran in it; it logs each write.
private actor Tally {
    let number: Int
    let log: Lines
    private var writes: [String] = []

    init(_ number: Int, log: Lines) {
        self.number = number
        self.log = log
    }

    /// Writes `name`; `across` another actor, calls it between reading and writing.
    func write(_ name: String, across other: Tally? = nil) async {
        let before = writes.last ?? "none"
        if let other { _ = await other.last() }
        log.append("actor \(number): \(name) after \(before)")
        writes.append(name)
    }

    func last() -> String { writes.last ?? "none" }
}

/// State on the main actor, which logs each write.
@MainActor private final class Screen {
    let log: Lines
    private var writes: [String] = []

    nonisolated init(log: Lines) {
        self.log = log
    }

    func write(_ name: String, around tally: Tally?) async {
        let before = writes.last ?? "none"
        if let tally {
            let seen = await tally.last()
            log.append("\(name) saw actor \(tally.number) at \(seen)")
        }
        log.append("main: \(name) after \(before)")
        writes.append(name)
    }
}

/// Two actors, the main actor's state and two instances, and a log of what every operation did.
private final class Stage: LoggingScene {
    let log = Lines()
    let tallies: [Tally]
    let screen: Screen
    let instances = [Exclusive([String](), label: "0"), Exclusive([String](), label: "1")]

    init() {
        tallies = [Tally(0, log: log), Tally(1, log: log)]
        screen = Screen(log: log)
    }

    func run(_ work: ActorWork, named name: String) async {
        switch work {
        case .write(let actor): await tallies[actor].write(name)
        case .writeAcrossAnAwait(let actor): await tallies[actor].write(name, across: tallies[1 - actor])
        case .mainActorWrite: await screen.write(name, around: nil)
        case .mainActorWriteAroundActor(let actor): await screen.write(name, around: tallies[actor])
        case .instanceWrite(let index): await write(index, name)
        case .unstructuredWrite(let index): await Task { await self.write(index, name) }.value
        }
    }

    private func write(_ index: Int, _ name: String) async {
        await instances[index].access { writes in
            log.append("\(index): \(name) after \(writes.last ?? "none")")
            writes.append(name)
        }
    }
}

/// An operation of the scenarios with tasks, on one of two instances.
private enum Work: Sendable, CustomStringConvertible {
    case read(Int)
    case write(Int)
    case awaitedRead(Int)
    case awaitedWrite(Int)
    /// An awaited write once the instance has been written.
    case writeOnceWritten(Int)
    /// A write submitted to the instance's drain, not awaited.
    case submit(Int)
    /// A write in a child task (`async let`), beside an awaited write of its parent's.
    case writeBesideAChild(Int)

    var description: String {
        switch self {
        case .read(let instance): "read \(instance)"
        case .write(let instance): "write \(instance)"
        case .awaitedRead(let instance): "await read \(instance)"
        case .awaitedWrite(let instance): "await write \(instance)"
        case .writeOnceWritten(let instance): "await write \(instance) once written"
        case .submit(let instance): "submit to \(instance)"
        case .writeBesideAChild(let instance): "write \(instance) beside a child"
        }
    }
}

/// Two instances whose states are the names of the writes that ran on them, and a log of what
/// every operation did, kept outside the explorer's sight: each line is written while the
/// instance is held, so each instance's lines come in the order its writes ran.
private final class World: LoggingScene {
    let instances = [ReadersWriter([String](), label: "0"), ReadersWriter([String](), label: "1")]
    let log = Lines()

    func run(_ work: Work, named name: String) async {
        switch work {
        case .read(let index):
            readBlocking(index, name)
        case .write(let index):
            writeBlocking(index, name)
        case .awaitedRead(let index):
            await instances[index].read { self.saw($0, index, name) }
        case .awaitedWrite(let index):
            await instances[index].write { self.wrote(&$0, index, name) }
        case .writeOnceWritten(let index):
            _ = try? await instances[index].write(when: { !$0.isEmpty }) { self.wrote(&$0, index, name) }
        case .submit(let index):
            instances[index].writeAsync { self.wrote(&$0, index, name) }
        case .writeBesideAChild(let index):
            async let child: Void = instances[index].write { self.wrote(&$0, index, name + "c") }
            await instances[index].write { self.wrote(&$0, index, name + "p") }
            await child
        }
    }

    // Synchronous: in an `async` function, `read` and `write` resolve to the awaited forms.
    private func readBlocking(_ index: Int, _ name: String) {
        instances[index].read { saw($0, index, name) }
    }

    private func writeBlocking(_ index: Int, _ name: String) {
        instances[index].write { wrote(&$0, index, name) }
    }

    private func saw(_ writes: [String], _ index: Int, _ name: String) {
        log.append("\(name) read \(index), saw \(writes.last ?? "none")")
    }

    private func wrote(_ writes: inout [String], _ index: Int, _ name: String) {
        log.append("\(index): \(name) after \(writes.last ?? "none")")
        writes.append(name)
    }
}
