import ExclusionTestSupport
import Foundation
import Testing

@testable import ExclusionTesting

// The threads entities run on are kept for the next entity, and let go once none comes: each
// test has a pool of its own, so that explorations running beside it take none of its threads.

@Suite("The explorer's threads", .patientTimeLimit(minutes: 10))
struct EntityThreadsTests {
    @Test func aThreadWhoseEntityFinishedRunsTheNextUnderItsName() async throws {
        let threads = EntityThreads(idleLimit: .seconds(3_600))
        let first = await whereItRuns(on: threads, named: "schedule explorer: thread 0")
        guard await eventually(for: "the thread to wait for its next entity", { threads.waiting == 1 }) else { return }
        let second = await whereItRuns(on: threads, named: "schedule explorer: thread 1")
        #expect(second.thread == first.thread, "a new thread ran the second entity")
        #if canImport(Darwin)  // Linux keeps 15 bytes of a thread's name
        #expect(first.name == "schedule explorer: thread 0")
        #expect(second.name == "schedule explorer: thread 1")
        #endif
    }

    @Test func entitiesThatRunAtOnceEachHaveAThread() async throws {
        let threads = EntityThreads(idleLimit: .seconds(3_600))
        let all = Barrier(4)
        let seen = await withTaskGroup(of: ObjectIdentifier.self) { group in
            for number in 0..<4 {
                group.addTask {
                    await whereItRuns(on: threads, named: "schedule explorer: thread \(number)") {
                        // Each stands until all four run: none of them waits for another's thread.
                        all.arriveAndWait()
                    }.thread
                }
            }
            return await group.reduce(into: Set()) { $0.insert($1) }
        }
        #expect(seen.count == 4)
        #expect(await eventually(for: "the four threads to wait", { threads.waiting == 4 }))
    }

    @Test func aThreadThatWaitsLongerThanItsLimitEnds() async throws {
        let threads = EntityThreads(idleLimit: .milliseconds(1))
        _ = await whereItRuns(on: threads, named: "schedule explorer: thread 0")
        // It waited, and gave up: a thread that stays would be counted for good.
        #expect(await eventually(for: "the thread to end", { threads.waiting == 0 }))
        // A new thread runs the next.
        _ = await whereItRuns(on: threads, named: "schedule explorer: thread 1")
    }

    @Test func noMoreThreadsWaitThanTheMost() async throws {
        let threads = EntityThreads(idleLimit: .seconds(3_600), mostIdle: 1)
        let both = Barrier(2)
        await withTaskGroup(of: Void.self) { group in
            for number in 0..<2 {
                group.addTask {
                    _ = await whereItRuns(on: threads, named: "schedule explorer: thread \(number)") {
                        both.arriveAndWait()
                    }
                }
            }
        }
        // One waits; the other, finding the most waiting, ended.
        #expect(await eventually(for: "a thread to wait", { threads.waiting == 1 }))
        #expect(await !holds(within: .milliseconds(500)) { threads.waiting > 1 })
    }
}

/// Runs `body` on one of `threads`, and says which thread ran it, and under what name.
private func whereItRuns(
    on threads: EntityThreads, named name: String, _ body: @escaping @Sendable () -> Void = {}
) async -> (thread: ObjectIdentifier, name: String?) {
    await withCheckedContinuation { continuation in
        threads.run(named: name) {
            body()
            continuation.resume(returning: (ObjectIdentifier(Thread.current), Thread.current.name))
        }
    }
}

/// Threads that each stand until all have come, or `patience` has passed.
private final class Barrier: @unchecked Sendable {
    // @unchecked: `remaining` is only touched with `condition` locked.
    private let condition = NSCondition()
    private var remaining: Int

    init(_ count: Int) { remaining = count }

    func arriveAndWait() {
        let deadline = Date(timeIntervalSinceNow: Double(patience.components.seconds))
        condition.lock()
        defer { condition.unlock() }
        remaining -= 1
        if remaining == 0 { condition.broadcast() }
        while remaining > 0, condition.wait(until: deadline) {}
    }
}
