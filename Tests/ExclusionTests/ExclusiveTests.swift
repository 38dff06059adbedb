import Dispatch
import Exclusion
import ExclusionTestSupport
import Foundation
import Synchronization
import Testing

/// Whether the calling code runs on the main queue, which is the main actor's executor here.
/// (`Thread.isMainThread` can't tell under Swift Testing.)
private func isOnMainQueue() -> Bool {
    DispatchQueue.getSpecific(key: mainQueueKey) == true
}
private let mainQueueKey: DispatchSpecificKey<Bool> = {
    let key = DispatchSpecificKey<Bool>()
    DispatchQueue.main.setSpecific(key: key, value: true)
    return key
}()

private struct Failure: Error, Equatable {
    let code: Int
}

@Suite("Exclusive", .patientTimeLimit(minutes: 10))
struct ExclusiveTests {
    // MARK: - Basics

    @Test func accessReadsAndChangesTheState() {
        let value = Exclusive(1)
        value.access { $0 += 41 }
        #expect(value.access { $0 } == 42)
    }

    @Test func labelDefaultsToTheTypeAndCanBeNamed() {
        #expect(Exclusive(Ledger()).label == "Exclusive<Ledger>")
        #expect(Exclusive(0, label: "hits").label == "hits")
    }

    @Test func isAccessingIsTrueOnlyInsideAnAccessOnThatThread() async {
        let value = Exclusive(0)
        let other = Exclusive(0)
        #expect(!value.isAccessing)
        syncAccess(value) { _ in
            #expect(value.isAccessing)
            #expect(!other.isAccessing)
        }
        #expect(!value.isAccessing)
        let seenInside = Flag()
        let seenOutside = Flag()
        let release = Flag()
        onNewThread {
            value.access { _ in
                seenInside.raise()
                release.wait()
            }
        }
        #expect(seenInside.wait())
        if !value.isAccessing { seenOutside.raise() }  // held by another thread, not this one
        release.raise()
        #expect(seenOutside.isRaised)
        await withCheckedContinuation { continuation in
            value.accessAsync(deliverOn: .global(), { _ in value.isAccessing }) { result in
                #expect((try? result.get()) == true)
                continuation.resume()
            }
        }
    }

    // MARK: - Errors

    @Test func errorsReachTheCallerAndEarlierChangesStay() {
        let value = Exclusive(0)
        #expect(throws: Failure(code: 7)) {
            try value.access { (state: inout Int) throws(Failure) in
                state = 5
                throw Failure(code: 7)
            }
        }
        #expect(value.access { $0 } == 5)
    }

    @Test func errorsReachTheCompletion() async {
        let value = Exclusive(0)
        let result: Result<Int, any Error> = await withCheckedContinuation { continuation in
            value.accessAsync(
                deliverOn: .global(),
                { state in
                    state = 3
                    throw Failure(code: 9)
                }, completion: { continuation.resume(returning: $0) })
        }
        #expect(throws: Failure(code: 9)) { try result.get() }
        #expect(await value.access { $0 } == 3)
    }

    @Test func errorsReachTheAwaitingCaller() async {
        let value = Exclusive(0)
        await #expect(throws: Failure(code: 4)) {
            try await value.access { (state: inout Int) throws(Failure) -> Int in
                state = 1
                throw Failure(code: 4)
            }
        }
        #expect(await value.access { $0 } == 1)
    }

    // MARK: - Exclusion

    @Test func accessesNeverOverlapOrLoseUpdates() async {
        let value = Exclusive(())
        let probe = await ExclusionProbe.stress { work in value.access { _ in work() } }
        #expect(probe.mostInside == 1)
        #expect(probe.count == 4 * 5_000)
    }

    @Test func theStressTestCatchesAnAccessorWithoutExclusion() async {
        // The same stress test, given an accessor that runs bodies without exclusion, must fail.
        let probe = await ExclusionProbe.stress { work in work() }
        #expect(probe.mostInside > 1)
        #expect(probe.count < 4 * 5_000)
    }

    @Test func mixedSyncAsyncAndAwaitedAccessesNeverOverlap() async {
        let value = Exclusive(0)
        let probe = ExclusionProbe()
        let done = Countdown(3 * 5_000)
        // The awaited accesses run on a thread of their own, not on the shared pool: another
        // test's work can keep every thread of the pool for seconds.
        let awaiting = DedicatedThread()
        defer { awaiting.finish() }
        // Thread 1's submissions pile up, and the drain runs them one after the other while
        // threads 0 and 2 wait: its bodies are progress too.
        await onThreads(3, rounds: 5_000, progress: { probe.count }) { index, _ in
            switch index {
            case 0: value.access { _ in probe.body() }
            case 1: value.accessAsync { _ in probe.body() }
            default:
                let group = DispatchGroup()
                group.enter()
                Task(executorPreference: awaiting) {
                    await value.access { _ in probe.body() }
                    group.leave()
                }
                group.wait()  // a real thread of this test, not a cooperative one
            }
            done.arrive()
        }
        await done.wait(progress: { probe.count })
        syncAccess(value) { _ in }  // runs after everything this thread can see submitted
        #expect(await eventually { probe.count == 15_000 })
        #expect(probe.mostInside == 1)
    }

    // MARK: - Per-submitter order

    @Test func aThreadsSyncAccessSeesItsEarlierAsyncAccess() async {
        let value = Exclusive(0)
        await onThreads(4, rounds: 2_000) { index, step in
            let round = step + 1
            value.accessAsync { $0 = index * 1_000_000 + round }
            let seen = value.access { $0 }
            // Nobody else can have run after this thread's async access and before its sync
            // access unless they wrote their own value: ours, or a later one from another thread.
            if seen / 1_000_000 == index { #expect(seen % 1_000_000 == round) }
        }
        let value2 = Exclusive(0)
        value2.accessAsync { $0 = 1 }
        #expect(syncAccess(value2) { $0 } == 1)
    }

    @Test func oneThreadsWorkRunsInSubmissionOrderAcrossAllKinds() async {
        let log = Exclusive([Int]())
        for step in 0..<300 {
            switch step % 3 {
            case 0: log.accessAsync { $0.append(step) }
            case 1: syncAccess(log) { $0.append(step) }
            default: await log.access { $0.append(step) }
            }
        }
        #expect(await log.access { $0 } == Array(0..<300))
    }

    @Test func eachThreadsAsyncWorkRunsInItsOrder() async {
        let log = Exclusive([[Int]](repeating: [], count: 4))
        await onThreads(4, rounds: 5_000) { index, step in
            log.accessAsync { $0[index].append(step) }
        }
        let all = await log.access { $0 }
        for perThread in all { #expect(perThread == Array(0..<5_000)) }
    }

    @Test func theOrderTestCatchesAsyncWorkThatSkipsTheQueue() async {
        // A naive "async" that hands the body to a global queue loses per-submitter order; the
        // same check as above must notice.
        let value = Exclusive(0)
        var misordered = 0
        for round in 1...2_000 {
            DispatchQueue.global().async { value.access { $0 = round } }
            if syncAccess(value, { $0 }) != round { misordered += 1 }
        }
        #expect(misordered > 0)
    }

    // MARK: - Delivery

    @Test func completionsRunOnceOnTheGivenQueueInOrderAndOutsideTheAccess() async {
        let queue = DispatchQueue(label: "delivery")
        let value = Exclusive(0)
        let delivered = Recorder<Int>()
        let done = Countdown(1_000)
        for expected in 1...1_000 {
            value.accessAsync(
                deliverOn: queue,
                { state -> Int in
                    state += 1
                    return state
                },
                completion: { result in
                    dispatchPrecondition(condition: .onQueue(queue))
                    #expect(!value.isAccessing)
                    #expect((try? result.get()) == expected)
                    delivered.record(expected)
                    done.arrive()
                })
        }
        await done.wait()
        #expect(delivered.values == Array(1...1_000))
    }

    @Test func completionsGoToTheMainQueueByDefault() async {
        let value = Exclusive(0)
        await withCheckedContinuation { continuation in
            value.accessAsync({ _ in 1 }) { _ in
                dispatchPrecondition(condition: .onQueue(.main))
                continuation.resume()
            }
        }
    }

    @Test func aCompletionCanCallBackIntoTheInstance() async {
        let value = Exclusive(0)
        let seen = await withCheckedContinuation { continuation in
            value.accessAsync(deliverOn: DispatchQueue(label: "observer"), { $0 += 1 }) { _ in
                // Synchronously, from the delivery queue: no deadlock, because the state was released.
                continuation.resume(returning: value.access { $0 })
            }
        }
        #expect(seen == 1)
    }

    @Test func completionsFromManyThreadsEachArriveExactlyOnce() async {
        let value = Exclusive(0)
        let delivered = Recorder<Int>()
        let done = Countdown(4 * 1_000)
        await onThreads(4, rounds: 1_000) { thread, step in
            value.accessAsync(deliverOn: .global(), { $0 += 1 }) { _ in
                delivered.record(thread * 1_000 + step)
                done.arrive()
            }
        }
        await done.wait()
        #expect(delivered.values.sorted() == Array(0..<4_000))
        #expect(await value.access { $0 } == 4_000)
    }

    @Test func noSubmissionIsLostWhileDrainsStartAndStop() async {
        // Small bursts from several threads keep the instance's drain starting and stopping, the
        // moment a submission could slip between "nothing pending" and "drain over".
        let value = Exclusive(0)
        let done = Countdown(4 * 3_000)
        await onThreads(4, rounds: 3_000) { _, round in
            value.accessAsync(deliverOn: .global(), { $0 += 1 }) { _ in done.arrive() }
            if round % 64 == 0 { usleep(50) }  // let the drain run dry now and then
        }
        await done.wait()
        #expect(await value.access { $0 } == 12_000)
    }

    // MARK: - Swift concurrency

    @Test @MainActor func awaitedAccessSuspendsWhileAnotherThreadHoldsTheState() async {
        let value = Exclusive(0)
        let suspended = await awaitSuspends(hold: { inside in value.access { _ in inside() } }) {
            _ = await value.access { $0 }
        }
        #expect(suspended)
    }

    // In a process of its own: the await it catches blocks the main actor until the holder gives
    // up, and every other test that needs the main actor would wait that long (under
    // ThreadSanitizer beside busy loops, minutes, and several of them failed).
    #if CHILD_PROCESSES
    @Test func theSuspensionTestCatchesAnAwaitThatBlocks() async {
        await offTheSharedPool {
            await #expect(processExitsWith: .success) {
                stopIfStuck()
                let value = Exclusive(0)
                // A synchronous access inside an async function blocks its thread.
                let suspended = await awaitSuspends(
                    patience: .seconds(2), hold: { inside in value.access { _ in inside() } }
                ) { @MainActor in
                    _ = syncAccess(value) { $0 }
                }
                exit(suspended ? EXIT_FAILURE : EXIT_SUCCESS)
            }
        }
    }
    #endif

    @Test @MainActor func anAwaitedAccessToFreeStateRunsOnTheCallersActor() async throws {
        let ledger = Exclusive(0)
        let shared = ReadersWriter(0)
        #expect(await ledger.access { _ in isOnMainQueue() })
        #expect(try await ledger.access(when: { _ in true }) { _ in isOnMainQueue() })
        #expect(await shared.read { _ in isOnMainQueue() })
        #expect(await shared.write { _ in isOnMainQueue() })
        #expect(try await shared.read(when: { _ in true }) { _ in isOnMainQueue() })
        #expect(try await shared.write(when: { _ in true }) { _ in isOnMainQueue() })
    }

    @Test func manyTasksIncrementWithoutLosingUpdates() async {
        let value = Exclusive(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { for _ in 0..<2_000 { await value.access { $0 += 1 } } }
            }
        }
        #expect(await value.access { $0 } == 16_000)
    }

    @Test func nonSendableStateStaysInside() {
        final class Box {
            var items: [Int] = []
        }
        let box = Exclusive(Box())
        box.access { $0.items.append(1) }
        #expect(box.access { $0.items.count } == 1)
    }
}
