import Exclusion
import ExclusionTestSupport
import SplitMix
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
}
