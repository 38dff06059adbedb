import ExclusionTestSupport
import Foundation
import Testing

/// `RunTime`, which the tests' limits on waits for the shared pool count with: time in which the
/// pool's threads are all held must not count, or a busy pool fails tests that are only waiting
/// for it.
@Suite("Time in which the pool ran")
struct RunTimeTests {
    // In a process of its own: it holds every thread of the pool.
    #if CHILD_PROCESSES
    @Test func thePoolsTimeStandsStillWhileEveryThreadOfItIsHeld() async {
        await offTheSharedPool {
            await #expect(processExitsWith: .success) {
                stopIfStuck()
                let stoodStill = (try? await onItsOwnThread { poolTimeStandsStillWhileHeld() }) ?? false
                exit(stoodStill ? EXIT_SUCCESS : EXIT_FAILURE)
            }
        }
    }
    #endif
}

/// Holds every thread of the shared pool with tasks that block for two seconds, and says whether
/// the pool's `RunTime` counted at most one beat meanwhile, and counts again once they let go.
/// Dispatch's global queue, measured the same way, keeps counting on Linux: dispatch gives it a
/// thread of its own (printed, not checked: that is dispatch's business).
private func poolTimeStandsStillWhileHeld() -> Bool {
    let pool = RunTime(ofThePoolAt: .medium)
    let global = RunTime(of: .global())
    guard spin(until: { pool.elapsed > .zero && global.elapsed > .zero }) else { return false }

    let threads = ProcessInfo.processInfo.activeProcessorCount
    let holding = Recorder<Int>()
    let letGo = Flag()
    for _ in 0..<threads {
        Task.detached(priority: .medium) {
            holding.record(1)
            letGo.waitUntilRaised()
        }
    }
    guard spin(until: { holding.count == threads }) else { return false }
    let (poolBefore, globalBefore) = (pool.elapsed, global.elapsed)
    // How long the threads are held, not an order of events: long enough for a beat to be due
    // many times over, and for dispatch to notice its global queue's threads are stuck.
    Thread.sleep(forTimeInterval: 2)
    let (poolHeld, globalHeld) = (pool.elapsed - poolBefore, global.elapsed - globalBefore)
    letGo.raise()

    let countsAgain = spin(until: { pool.elapsed - poolBefore > poolHeld })
    print("While the pool was held: the pool counted \(poolHeld), the global queue \(globalHeld)")
    return poolHeld <= RunTime.interval && countsAgain
}
