import ExclusionTestSupport
import Foundation
import Testing

@Suite("Tests on threads of their own", .onThreadsOfItsOwn)
struct ThreadsOfItsOwnTests {
    @Test func aTestAndTheTasksItStartsRunOffTheSharedPool() async throws {
        let threads = try #require(executorOfThisThread())
        async let child = executorOfThisThread()
        #expect(await child === threads)
        await withTaskGroup(of: DedicatedThread?.self) { group in
            for _ in 0..<4 { group.addTask { executorOfThisThread() } }
            for await executor in group { #expect(executor === threads) }
        }
        // What the trait doesn't reach: unstructured tasks run on the shared pool.
        #expect(await Task { executorOfThisThread() }.value == nil)
        #expect(await Task.detached { executorOfThisThread() }.value == nil)
    }

    @Test(arguments: [1, 2])
    func eachCaseOfATestHasThreadsOfItsOwn(_ argument: Int) {
        #expect(executorOfThisThread() != nil)
    }
}

@Suite("Tests on the shared pool")
struct SharedPoolTests {
    @Test func aTestWithoutTheTraitRunsOnTheSharedPool() async {
        #expect(executorOfThisThread() == nil)
    }
}

private func executorOfThisThread() -> DedicatedThread? {
    DedicatedThread.current
}
