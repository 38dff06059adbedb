import Dispatch
import Exclusion
import ExclusionTestSupport
import ExclusionTesting
import Foundation
import Testing

/// Each of Exclusion's synchronization points, as the explorer sees it: conditional waits, reads,
/// submitted work, awaited accesses; and what fails a schedule besides a history.
@Suite("ScheduleExplorer at each synchronization point", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
struct ScheduleExplorerSynchronizationTests {
    @Test func aConditionalAccessWaitsForTheChangeThatMakesItsConditionHold() async throws {
        let explorer = ScheduleExplorer(model: QueueModel(), threads: 2, operationsPerThread: 1...2, seed: 3)
        let report = try await explore(
            explorer, setUp: { Exclusive([Int](), label: "queue") }, inputs: QueueModel.generate,
            perform: { queue, input in
                switch input {
                case .put(let item):
                    queue.access { $0.append(item) }
                    return nil
                case .take:
                    // A take that nothing can satisfy gives up at its limit: the explorer lets it
                    // time out once no other thread can go on.
                    return (try? queue.access(when: { !$0.isEmpty }, timeout: .seconds(60)) { $0.removeFirst() }) ?? 0
                }
            })
        #expect(report.passed, "\(report)")
        #expect(report.isExhaustive)
    }

    @Test func aConditionNothingWillMakeTrueIsADeadlockNotAHang() async throws {
        let explorer = ScheduleExplorer(model: QueueModel(), threads: 2, operationsPerThread: 1...1, seed: 3)
        let report = try await explore(
            explorer, setUp: { Exclusive([Int](), label: "queue") }, inputs: { _ in .take },
            perform: { queue, _ in try queue.access(when: { !$0.isEmpty }) { $0.removeFirst() } })
        let failure = try #require(report.failure, "\(report)")
        #expect(failure.kind == .deadlock)
        #expect(failure.message.contains("waits for its condition on \"queue\" to hold"))
        #expect(failure.table.contains("finds its condition on \"queue\" false: waits"))
    }

    @Test func readsOfAReadersWriterShareItAndAReadThenAWriteIsFound() async throws {
        for readsThenWrites in [false, true] {
            let explorer = ScheduleExplorer(model: SwapRegisterModel(), threads: 2, operationsPerThread: 1...2, seed: 5)
            let report = try await explore(
                explorer, setUp: { ReadersWriter(0, label: "register") },
                inputs: { generator in
                    // Swaps, and reads that see them.
                    Bool.random(using: &generator) ? .swap(Int.random(in: 1...9, using: &generator)) : .read
                },
                perform: { register, input in
                    switch input {
                    case .read: return register.read { $0 }
                    case .write(let new):
                        register.write { $0 = new }
                        return nil
                    case .swap(let new) where readsThenWrites:
                        let old = register.read { $0 }
                        register.write { $0 = new }
                        return old
                    case .swap(let new):
                        return register.write { value in
                            defer { value = new }
                            return value
                        }
                    }
                })
            #expect(report.passed == !readsThenWrites, "\(report)")
            if readsThenWrites { #expect(report.failure?.table.contains("read \"register\" begins") == true) }
        }
    }

    @Test func workSubmittedByOneThreadRunsInAnotherThreadsAccessOrItsOwnDrain() async throws {
        // An increment submitted with `accessAsync`, then read back in a second access: another
        // thread's submission can run in between, in its drain or at the start of the read.
        let explorer = ScheduleExplorer(model: IncrementModel(), threads: 2, operationsPerThread: 1...2, seed: 3)
        let report = try await explore(
            explorer, setUp: { Exclusive(0, label: "count") }, inputs: { _ in .increment },
            perform: { count, _ in
                count.accessAsync { $0 += 1 }
                return count.access { $0 }
            })
        let failure = try #require(report.failure, "\(report)")
        #expect(failure.kind == .notLinearizable)
        #expect(failure.table.contains("submits work to \"count\""))
    }

    @Test func anAwaitedAccessThatMustWaitSuspendsAndItsTurnIsScheduled() async throws {
        // Thread 0 holds "x" while it takes "y"; thread 1 awaits "x" after a first access of its
        // own. The awaited access that finds "x" held suspends its task, and runs in its turn: the
        // planted bug (a turn that returns a wrong value) shows only in schedules that interleave so.
        let explorer = ScheduleExplorer(model: RoleCountModel(), threads: 2, operationsPerThread: 1...1, seed: 3)
        let report = try await explore(
            explorer, setUp: { ["x", "y", "z"].map { Exclusive(0, label: $0) } },
            inputs: { generator in generator.thread },
            performAsync: { instances, thread in
                if thread == 0 {
                    return syncAccess(instances[0]) { count in
                        syncAccess(instances[1]) { _ in }
                        count += 1
                        return count
                    }
                }
                syncAccess(instances[2]) { _ in }
                let caller = ThreadHandle.current
                return await instances[0].access { count in
                    count += 1
                    return ThreadHandle.current == caller ? count : -1
                }
            })
        let failure = try #require(report.failure, "\(report)")
        #expect(failure.kind == .notLinearizable)
        #expect(failure.table.contains("suspends its task"))
        #expect(failure.table.contains("resumes its task"))
        // Every awaited access is a switch point now, whether it had to wait or not: nothing unseen.
        #expect(report.notes.isEmpty, "\(report)")
    }

    @Test func aReentrantAccessIsReportedInsteadOfStoppingTheProcess() async throws {
        let explorer = ScheduleExplorer(model: IncrementModel(), threads: 2, operationsPerThread: 1...1, seed: 3)
        let report = try await explore(
            explorer, setUp: { Exclusive(0, label: "count") }, inputs: { _ in .increment },
            perform: { count, _ in count.access { _ in count.access { $0 } } })
        let failure = try #require(report.failure, "\(report)")
        #expect(failure.kind == .reentrantAccess)
        #expect(failure.message.contains("re-entrant access to Exclusive<Int> \"count\""))
    }

    @Test func anOperationThatThrowsFailsItsSchedule() async throws {
        struct Refused: Error {}
        let explorer = ScheduleExplorer(model: IncrementModel(), threads: 2, operationsPerThread: 1...1, seed: 3)
        let report = try await explore(
            explorer, setUp: { Exclusive(0, label: "count") }, inputs: { _ in .increment },
            perform: { count, _ in try count.access { _ in throw Refused() } })
        #expect(report.failure?.kind == .threw, "\(report)")
        #expect(report.failure?.message.contains("threw Refused()") == true)
    }

    /// A thread that waits for something the explorer can't see: in its first step, which the
    /// coordinator grants, or in the step after its first access, which it grants itself at its
    /// switch point, waking no one; the coordinator alone can see that one outrun its limit.
    @Test(arguments: [true, false])
    func aThreadThatWaitsForSomethingTheExplorerCannotSeeIsReportedStuck(inItsFirstStep: Bool) async throws {
        var explorer = ScheduleExplorer(
            model: IncrementModel(), threads: 1, operationsPerThread: inItsFirstStep ? 1...1 : 2...2, scenarios: 1,
            seed: 3)
        explorer.stepTimeLimit = .milliseconds(100)
        // Far longer than the limit: a coordinator that a busy machine wakes late finds it waiting.
        @Sendable func waitUnseen() { _ = DispatchSemaphore(value: 0).wait(timeout: .now() + .seconds(5)) }
        let report = try await explore(
            explorer, setUp: { Exclusive(0, label: "count") }, inputs: { _ in .increment },
            perform: { count, _ in
                if inItsFirstStep { waitUnseen() }
                let counted = count.access { count in
                    count += 1
                    return count
                }
                if !inItsFirstStep, counted == 1 { waitUnseen() }
                return counted
            })
        #expect(report.failure?.kind == .stuck, "\(report)")
        #expect(report.failure?.message.contains("thread 0 didn't reach its next switch point") == true, "\(report)")
    }
}

/// A queue of items: a take from an empty queue gives 0.
struct QueueModel: SequentialModel {
    enum Input: Sendable, CustomStringConvertible {
        case put(Int)
        case take

        var description: String {
            switch self {
            case .put(let item): "put(\(item))"
            case .take: "take"
            }
        }
    }

    var initialState: [Int] { [] }

    func step(_ queue: [Int], _ input: Input) -> (output: Int?, state: [Int]) {
        switch input {
        case .put(let item): (nil, queue + [item])
        case .take: queue.isEmpty ? (0, queue) : (queue[0], Array(queue.dropFirst()))
        }
    }

    /// Thread 0 puts, the others take.
    static func generate(_ generator: inout ScenarioGenerator) -> Input {
        generator.thread == 0 ? .put(Int.random(in: 1...9, using: &generator)) : .take
    }
}

/// One count that every thread increments; the input is the thread's number.
struct RoleCountModel: SequentialModel {
    var initialState: Int { 0 }

    func step(_ count: Int, _ thread: Int) -> (output: Int, state: Int) { (count + 1, count + 1) }
}
