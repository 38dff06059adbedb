import Dispatch
import ExclusionLockTesting
import ExclusionTestSupport
import Foundation
import Synchronization
import Testing

@testable import Exclusion

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

private struct Failure: Error, Equatable {
    let code: Int
}

/// What the writer-starvation scenario needs from a readers-writer implementation.
private protocol ReadWriteLockLike: Sendable {
    func read(_ body: () -> Void)
    func write(_ body: () -> Void)
    /// Whether a writer has started waiting, as far as the lock lets anyone see.
    var writerIsWaiting: Bool { get }
}

private struct RealReadersWriter: ReadWriteLockLike {
    let instance = ReadersWriter(0)
    func read(_ body: () -> Void) { instance.read { _ in body() } }
    func write(_ body: () -> Void) { instance.write { _ in body() } }
    // A waiting writer has withdrawn the readers' fast path (nothing else has on a fresh instance).
    var writerIsWaiting: Bool { exclusion_rwlock_testing_is_biased(instance._engine._lock._handle) == 0 }
}

/// A deliberately broken variant for the starvation test: the textbook reader-preferring lock
/// (as glibc's default `pthread_rwlock_t` is), which lets new readers in while a writer waits.
/// Written here, on `NSCondition`, so that the test can see the writer waiting.
private final class ReaderPreferringLock: ReadWriteLockLike, @unchecked Sendable {
    // @unchecked: readers, writing and waitingWriters are only touched while condition is locked.
    private let condition = NSCondition()
    private var readers = 0
    private var writing = false
    private var waitingWriters = 0

    func read(_ body: () -> Void) {
        condition.withLock {
            while writing { condition.wait() }  // a waiting writer doesn't stop a reader
            readers += 1
        }
        body()
        condition.withLock {
            readers -= 1
            condition.broadcast()
        }
    }

    func write(_ body: () -> Void) {
        condition.withLock {
            waitingWriters += 1
            while writing || readers > 0 { condition.wait() }
            waitingWriters -= 1
            writing = true
        }
        body()
        condition.withLock {
            writing = false
            condition.broadcast()
        }
    }

    var writerIsWaiting: Bool { condition.withLock { waitingWriters > 0 } }
}

/// Reader 1 is inside; a writer arrives and waits; reader 2 arrives after the writer. Returns the
/// order in which the writer and reader 2 got in.
private func starvationScenario(_ lock: some ReadWriteLockLike) async -> [String] {
    let order = Recorder<String>()
    let firstReaderInside = Flag()
    let releaseFirstReader = Flag()
    let writerDone = Flag()
    let secondReaderDone = Flag()
    // Held until the scenario lets go, on every path out, however late a starved test task gets
    // to look: the test's time limit bounds the whole.
    defer { releaseFirstReader.raise() }
    onNewThread {
        lock.read {
            firstReaderInside.raise()
            releaseFirstReader.waitUntilRaised()
        }
    }
    firstReaderInside.wait()
    onNewThread {
        lock.write { order.record("writer") }
        writerDone.raise()
    }
    #expect(await eventually { lock.writerIsWaiting }, "the writer never started waiting")
    onNewThread {
        lock.read { order.record("second reader") }
        secondReaderDone.raise()
    }
    // A lock that lets the second reader in does so while the first still reads; give it a second
    // to. (A lock that keeps it out can only be shown to by waiting; the order below says which.)
    _ = await holds(within: .seconds(1)) { secondReaderDone.isRaised }
    releaseFirstReader.raise()
    #expect(await eventually { writerDone.isRaised && secondReaderDone.isRaised }, "a thread never got in")
    return order.values
}

@Suite("ReadersWriter", .patientTimeLimit(minutes: 10))
struct ReadersWriterTests {
    // MARK: - Basics

    @Test func readsSeeWhatWritesDid() {
        let names = ReadersWriter([String]())
        names.write { $0.append("a") }
        #expect(names.read { $0 } == ["a"])
        #expect(names.label == "ReadersWriter<Array<String>>")
        #expect(ReadersWriter(0, label: "index").label == "index")
    }

    @Test func isAccessingInsideReadsAndWritesOnly() {
        let value = ReadersWriter(0)
        #expect(!value.isAccessing)
        value.read { _ in #expect(value.isAccessing) }
        value.write { _ in #expect(value.isAccessing) }
        #expect(!value.isAccessing)
    }

    @Test func errorsReachTheCallerAndEarlierChangesStay() {
        let value = ReadersWriter(0)
        #expect(throws: Failure(code: 1)) {
            try value.write { (state: inout Int) throws(Failure) in
                state = 2
                throw Failure(code: 1)
            }
        }
        #expect(throws: Failure(code: 3)) {
            try value.read { (_: Int) throws(Failure) in throw Failure(code: 3) }
        }
        #expect(value.read { $0 } == 2)
    }

    // MARK: - Sharing and exclusion

    @Test func twoReadsAreInsideAtOnce() async {
        let value = ReadersWriter(0)
        #expect(await readsOverlap { inside in value.read { _ in inside() } })
    }

    #if CHILD_PROCESSES && os(Linux) && arch(x86_64) && !EXCLUSION_PORTABLE_LOCK
    @Test func withoutMembarrierReadsShareTheUnderlyingLockAndNoWriterWaitsForASlot() async {
        // Where the kernel refuses `membarrier` when the library loads, a writer couldn't be woken
        // by a reader that writes its slot with a plain store: the bias stays off, so no writer
        // waits for a slot, and reads share the underlying lock. In a process of its own: the
        // switch has to happen before any lock is used.
        await offTheSharedPool {
            await #expect(processExitsWith: .success) {
                stopIfStuck()
                exclusion_lock_testing_use_symmetric_protocol()
                let value = ReadersWriter(0)
                let overlap = await readsOverlap { inside in value.read { _ in inside() } }
                await value.write { $0 += 1 }
                // A slow-path read after a write is where the bias would come back.
                let read = await value.read { $0 }
                let unbiased = exclusion_rwlock_testing_is_biased(value._engine._lock._handle) == 0
                exit(overlap && read == 1 && unbiased ? EXIT_SUCCESS : EXIT_FAILURE)
            }
        }
    }
    #endif

    @Test func theOverlapTestCatchesReadsThatTakeTurns() async {
        let value = ReadersWriter(0)
        await withKnownIssue("reads done as writes take turns") {
            #expect(await readsOverlap(patience: .seconds(2)) { inside in value.write { _ in inside() } })
        }
    }

    @Test func writesOverlapNothing() async {
        let value = ReadersWriter(())
        let writes = ExclusionProbe()
        let readersDuringWrites = Atomic<Int>(0)
        let readsInside = Atomic<Int>(0)
        let writersInside = Atomic<Int>(0)
        await onThreads(4, rounds: 10_000) { index, _ in
            if index < 2 {
                value.write { _ in
                    writersInside.add(1, ordering: .sequentiallyConsistent)
                    if readsInside.load(ordering: .sequentiallyConsistent) != 0 {
                        readersDuringWrites.add(1, ordering: .relaxed)
                    }
                    writes.body()
                    writersInside.subtract(1, ordering: .sequentiallyConsistent)
                }
            } else {
                value.read { _ in
                    readsInside.add(1, ordering: .sequentiallyConsistent)
                    if writersInside.load(ordering: .sequentiallyConsistent) != 0 {
                        readersDuringWrites.add(1, ordering: .relaxed)
                    }
                    readsInside.subtract(1, ordering: .sequentiallyConsistent)
                }
            }
        }
        #expect(writes.mostInside == 1)
        #expect(writes.count == 20_000)
        #expect(readersDuringWrites.load(ordering: .relaxed) == 0)
    }

    @Test func readsAndWritesFromManyThreadsNeverSeeATornState() async {
        // Writers keep the two halves equal; a read that overlapped a write would see them differ.
        let pair = ReadersWriter((left: 0, right: 0))
        let torn = Atomic<Int>(0)
        await onThreads(4, rounds: 20_000) { index, step in
            if index == 0 || step % 10 == 0 {
                pair.write { state in
                    state.left += 1
                    state.right += 1
                }
            } else {
                pair.read { state in
                    if state.left != state.right { torn.add(1, ordering: .relaxed) }
                }
            }
        }
        #expect(torn.load(ordering: .relaxed) == 0)
    }

    // MARK: - Writers don't starve

    @Test func aWriteWaitsForEarlierReadsButNotForLaterOnes() async {
        #expect(await starvationScenario(RealReadersWriter()) == ["writer", "second reader"])
    }

    #if CHILD_PROCESSES
    @Test func aWriteWhoseLongWaitIsReportedKeepsItsPlace() async {
        // The stuck-wait report comes while the writer waits for the first read; the writer must
        // not let go of its place to report it, or the second read gets in first. In a process of
        // its own, which reads the threshold when it makes its first instance.
        await offTheSharedPool {
            await #expect(processExitsWith: .success) {
                stopIfStuck()
                setenv("EXCLUSION_STUCK_WAIT_SECONDS", "0.01", 1)
                let order = await starvationScenario(RealReadersWriter())
                exit(order == ["writer", "second reader"] ? EXIT_SUCCESS : EXIT_FAILURE)
            }
        }
    }
    #endif

    @Test func theStarvationTestCatchesAReaderPreferringLock() async {
        #expect(await starvationScenario(ReaderPreferringLock()) == ["second reader", "writer"])
    }

    // MARK: - Per-submitter order

    @Test func aThreadsReadSeesItsEarlierAsyncWrite() async {
        let value = ReadersWriter([Int](repeating: 0, count: 4))
        let stale = Atomic<Int>(0)
        await onThreads(4, rounds: 2_000) { index, step in
            let round = step + 1
            value.writeAsync { $0[index] = round }
            if value.read({ $0[index] }) != round { stale.add(1, ordering: .relaxed) }
        }
        #expect(stale.load(ordering: .relaxed) == 0)
    }

    @Test func oneThreadsWorkRunsInSubmissionOrder() async {
        let log = ReadersWriter([Int]())
        let reads = Recorder<Int>()
        let done = Countdown(100)
        for step in 0..<300 {
            switch step % 3 {
            case 0: log.writeAsync { $0.append(step) }
            case 1: syncWrite(log) { $0.append(step) }
            default: await log.write { $0.append(step) }
            }
            log.readAsync(deliverOn: .global(), { $0.count }) { count in
                if step % 3 == 0 { reads.record((try? count.get()) ?? -1) }
                if step % 3 == 0 { done.arrive() }
            }
        }
        await done.wait()
        #expect(await log.read { $0 } == Array(0..<300))
        // Each async read saw exactly the writes submitted before it.
        #expect(reads.values.sorted() == stride(from: 1, through: 298, by: 3).map { $0 })
    }

    @Test func noSubmissionIsLostWhileDrainsStartAndStop() async {
        // Small bursts of reads and writes from several threads keep the drain starting and
        // stopping: a lost submission shows up as a completion that never arrives.
        let value = ReadersWriter(0)
        let done = Countdown(4 * 3_000)
        await onThreads(4, rounds: 3_000) { thread, round in
            if (thread + round) % 3 == 0 {
                value.readAsync(deliverOn: .global(), { $0 }) { _ in done.arrive() }
            } else {
                value.writeAsync(deliverOn: .global(), { $0 += 1 }) { _ in done.arrive() }
            }
            if round % 64 == 0 { usleep(50) }
        }
        await done.wait()
        #expect(await value.read { $0 } == 8_000)
    }

    // MARK: - Delivery

    @Test func completionsRunOnceOnTheGivenQueueInOrder() async {
        let queue = DispatchQueue(label: "delivery")
        let value = ReadersWriter(0)
        let delivered = Recorder<Int>()
        let done = Countdown(600)
        for step in 1...300 {
            value.writeAsync(
                deliverOn: queue,
                { state -> Int in
                    state += 1
                    return state
                },
                completion: { result in
                    dispatchPrecondition(condition: .onQueue(queue))
                    #expect(!value.isAccessing)
                    delivered.record((try? result.get()) ?? -1)
                    done.arrive()
                })
            value.readAsync(deliverOn: queue, { $0 }) { result in
                dispatchPrecondition(condition: .onQueue(queue))
                delivered.record((try? result.get()) ?? -1)
                done.arrive()
            }
            _ = step
        }
        await done.wait()
        #expect(delivered.values == (1...300).flatMap { [$0, $0] })
    }

    @Test func completionsGoToTheMainQueueByDefault() async {
        let value = ReadersWriter(0)
        await withCheckedContinuation { continuation in
            value.readAsync({ $0 }) { _ in
                dispatchPrecondition(condition: .onQueue(.main))
                value.writeAsync({ $0 += 1 }) { _ in
                    dispatchPrecondition(condition: .onQueue(.main))
                    continuation.resume()
                }
            }
        }
        #expect(await value.read { $0 } == 1)
    }

    @Test func asyncErrorsReachTheCompletion() async {
        let value = ReadersWriter(0)
        let result: Result<Int, any Error> = await withCheckedContinuation { continuation in
            value.writeAsync(
                deliverOn: .global(),
                { state in
                    state = 8
                    throw Failure(code: 2)
                }, completion: { continuation.resume(returning: $0) })
        }
        #expect(throws: Failure(code: 2)) { try result.get() }
        let readResult: Result<Int, any Error> = await withCheckedContinuation { continuation in
            value.readAsync(deliverOn: .global(), { _ in throw Failure(code: 5) }) {
                continuation.resume(returning: $0)
            }
        }
        #expect(throws: Failure(code: 5)) { try readResult.get() }
        #expect(await value.read { $0 } == 8)
    }

    // MARK: - Swift concurrency

    @Test func awaitedReadsAndWritesFromManyTasks() async {
        let value = ReadersWriter(0)
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for _ in 0..<1_000 {
                        if task % 2 == 0 {
                            await value.write { $0 += 1 }
                        } else {
                            _ = await value.read { $0 }
                        }
                    }
                }
            }
        }
        #expect(await value.read { $0 } == 4_000)
    }

    @Test @MainActor func awaitedWriteSuspendsWhileAReadHoldsTheState() async {
        let value = ReadersWriter(0)
        let suspended = await awaitSuspends(hold: { inside in value.read { _ in inside() } }) {
            await value.write { $0 += 1 }
        }
        #expect(suspended)
        #expect(await value.read { $0 } == 1)
    }

    @Test @MainActor func awaitedReadSuspendsWhileAWriteHoldsTheState() async {
        let value = ReadersWriter(0)
        let suspended = await awaitSuspends(hold: { inside in value.write { _ in inside() } }) {
            _ = await value.read { $0 }
        }
        #expect(suspended)
    }

    @Test func aTryDoesNotFailForAReaderThatIsOnlyAnnouncingItself() async throws {
        // A fast reader announces itself in its slot, then checks the bias. One caught in between
        // holds nothing yet: here it sees the bias withdrawn and leaves, as a real one would, and a
        // write try must wait that out and succeed instead of failing spuriously.
        let owner = ReadersWriter(0)
        let lock = owner._engine._lock
        // On thread index 0, which no thread has and whose slot a writer always looks at; on 1 if
        // another lock's reader holds that slot right now.
        let stopped = try #require(
            (UInt32(0)...1).first { exclusion_rwlock_testing_announce(lock._handle, $0) != 0 })
        onNewThread {
            _ = spin(until: { exclusion_rwlock_testing_is_biased(lock._handle) == 0 })
            exclusion_rwlock_testing_leave(lock._handle, stopped)
        }
        // Given back on the thread that took it: the system's lock on Apple platforms stops a
        // process that gives a lock back from another thread.
        let locked = try await onItsOwnThread {
            let locked = lock.tryLockExclusive()
            if locked { lock.unlockExclusive() }
            return locked
        }
        #expect(locked)
        withExtendedLifetime(owner) {}  // the lock lives in it
    }

    @Test func threadsThatComeAndGoHandTheirIndicesOn() async {
        // A writer looks at one slot of the readers' table per thread index handed out, so an
        // exited thread's index must be handed out again: a program whose threads come and go
        // would otherwise soon make every writer look at all 256.
        let value = ReadersWriter(0)
        let before = exclusion_testing_thread_index_limit()
        for _ in 0..<1_000 {
            await onItsOwnThread { _ = value.read { $0 } }
        }
        // One after another, each starting as the last one ends: a few alive at once, with the
        // threads of the tests running beside this one.
        #expect(exclusion_testing_thread_index_limit() - before < 500)
    }

    @Test func awaitedErrorsReachTheCaller() async {
        let value = ReadersWriter(0)
        await #expect(throws: Failure(code: 6)) {
            try await value.write { (state: inout Int) throws(Failure) in
                state = 1
                throw Failure(code: 6)
            }
        }
        await #expect(throws: Failure(code: 7)) {
            try await value.read { (_: Int) throws(Failure) -> Int in throw Failure(code: 7) }
        }
        #expect(await value.read { $0 } == 1)
    }
}
