import Dispatch
import ExclusionLockTesting
import ExclusionShims
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

/// A deadline for timed waits that must not give up: a day away. A test that waits for such a
/// waiter can be kept from running for minutes on a busy machine (under ThreadSanitizer, beside
/// other work), and a waiter that gave up meanwhile would fail it; the suite's time limit ends a
/// wait that never does.
private let farAway: Duration = .seconds(24 * 3600)

/// The lock under every `Exclusive`, `exclusion_lock`, in the design the platform uses (Linux's
/// own, or on Apple platforms the system's lock with a timed wait beside it; the portable build
/// runs the Apple design here): it lets one thread in at a time, it never leaves a thread asleep
/// while the lock is free, whether it waits with a deadline or not, its timed wait gives up cleanly
/// and sleeps until the lock is given back instead of polling, and on Linux it fences once per
/// contention episode. Each property is shown to fail on a broken variant. The protocols' models,
/// and a stress test timed to the race Linux's fence exists for, are in `Verification/`, where the
/// planted bugs these tests can't see are caught.
@Suite("Lock", .patientTimeLimit(minutes: 5))
struct LockTests {
    @Test func aSleepTowardAFarDeadlineIsCutIntoSleepsTheSystemTakes() {
        // Apple's timed wait takes a timeout and refuses one it can't add to its clock: a deadline
        // of "never, really" is slept toward a day at a time, each end only a time to look again.
        var shortened: Int32 = 0
        let now: UInt64 = 1_000_000_000
        #expect(exclusion_sleep_timeout(.max, now, &shortened) == EXCLUSION_LONGEST_SLEEP_NANOSECONDS)
        #expect(shortened == 1)
        #expect(exclusion_sleep_timeout(now + 5_000, now, &shortened) == 5_000)
        #expect(shortened == 0)
        #expect(
            exclusion_sleep_timeout(now + EXCLUSION_LONGEST_SLEEP_NANOSECONDS, now, &shortened)
                == EXCLUSION_LONGEST_SLEEP_NANOSECONDS)
        #expect(shortened == 0)
        #expect(exclusion_sleep_timeout(now - 1, now, &shortened) == 0)  // passed: no sleep at all
        #expect(shortened == 0)
    }

    @Test func oneThreadAtATimeHoldsTheLock() async {
        #expect(await lostUpdates(taking: takeWaiting, releasing: { $0.unlock() }) == 0)
    }

    @Test func aVariantThatDoesNotWaitLetsTwoThreadsIn() async {
        // It gives the lock back only if it took it: on Apple platforms giving back a lock another
        // thread holds stops the process.
        await withKnownIssue("a thread that finds the lock taken goes in anyway") {
            #expect(await lostUpdates(taking: { $0.tryLock() }, releasing: { $0.unlock() }) == 0)
        }
    }

    @Test func aReleaseWakesTheThreadThatSleepsOnTheLock() async {
        #expect(await sleepersWake(releasing: { $0.unlock() }, patience: .seconds(30)))
    }

    @Test func aReleaseWakesTheThreadThatSleepsWithADeadline() async {
        #expect(await sleepersWake(withDeadline: true, releasing: { $0.unlock() }, patience: .seconds(30)))
    }

    @Test func aVariantThatReleasesWithoutWakingLeavesASleeperAsleep() async {
        // A waiter with a deadline: on Apple platforms one without sleeps inside the system's lock,
        // which wakes it itself.
        await withKnownIssue("the sleeper is never woken while nobody takes the lock again") {
            #expect(
                await sleepersWake(
                    withDeadline: true, releasing: { exclusion_lock_testing_release_silently($0._handle) },
                    patience: .milliseconds(200)))
        }
    }

    @Test func threadsThatSleepOnTheLockOverAndOverAllFinish() async {
        // Four threads on two cores, holding the lock for microseconds: they go to sleep on it
        // and are woken thousands of times, two of them with a deadline they never reach. A lost
        // wake-up leaves one asleep for good.
        let lock = _Lock.standalone()
        defer { lock.deallocate() }
        let finished = Atomic<Int>(0)
        for thread in 0..<4 {
            onNewThread {
                for _ in 0..<2_000 {
                    if thread < 2 {
                        lock.lock()
                    } else {
                        precondition(lock.sleep(until: _Deadline(after: farAway)))
                    }
                    let until = DispatchTime.now().uptimeNanoseconds + 2_000
                    while DispatchTime.now().uptimeNanoseconds < until { exclusion_spin_hint() }
                    lock.unlock()
                }
                finished.add(1, ordering: .sequentiallyConsistent)
            }
        }
        #expect(await eventually { finished.load(ordering: .sequentiallyConsistent) == 4 })
    }

    @Test func aTimedWaitGivesUpAndLeavesNoSleeperBehind() async throws {
        let lock = _Lock.standalone()
        defer { lock.deallocate() }
        let holder = await Holder(lock)
        let took = try await onItsOwnThread { lock.sleep(until: _Deadline(after: .milliseconds(20))) }
        #expect(!took)
        #expect(exclusion_lock_testing_waiters(lock._handle) == 0)
        await holder.release()
        // The lock is free, and nobody else holds it.
        #expect(
            try await onItsOwnThread {
                guard lock.tryLock() else { return false }
                lock.unlock()
                return true
            })
    }

    @Test func aTimedWaitTakesTheLockWhenItIsGivenBackInTime() async {
        let lock = _Lock.standalone()
        defer { lock.deallocate() }
        let holder = await Holder(lock)
        let result = Recorder<Bool>()
        let finished = Countdown(1)
        onNewThread {
            let took = lock.sleep(until: _Deadline(after: farAway))
            if took { lock.unlock() }
            result.record(took)
            finished.arrive()
        }
        // Released once the waiter sleeps on the lock (it counts itself first), so the wake-up is tested.
        #expect(await eventually { exclusion_lock_testing_waiters(lock._handle) == 1 })
        await holder.release()
        await finished.wait()
        #expect(result.values == [true])
        #expect(exclusion_lock_testing_waiters(lock._handle) == 0)
    }

    #if os(Linux)
    @Test func aTimedWaitSleepsUntilTheLockIsGivenBack() async throws {
        // A waiter with a deadline far away, while the lock stays held for a while: asleep, it
        // switches away from the processor once or twice; polling (try, sleep a millisecond, try
        // again) would switch hundreds of times.
        let switches = try #require(
            await switchesOfATimedWaiter { lock in lock.sleep(until: _Deadline(after: farAway)) })
        #expect(switches <= 3, "\(switches) context switches")
    }

    @Test func theSleepCheckCatchesAWaiterThatPolls() async throws {
        let switches = try #require(
            await switchesOfATimedWaiter(counted: false) { lock in
                while !lock.tryLock() { usleep(1_000) }
                return true
            })
        withKnownIssue("a waiter that polls switches away at every poll") {
            #expect(switches <= 3, "\(switches) context switches")
        }
    }
    #endif

    #if CHILD_PROCESSES && (EXCLUSION_PORTABLE_LOCK || canImport(Darwin))
    @Test func aLockGivenBackByAThreadThatDoesNotHoldItStopsTheProcess() async {
        // As `os_unfair_lock` does on Apple platforms, and its stand-in in the portable build: so
        // that the portable build catches code that would crash there.
        await offTheSharedPool {
            await #expect(processExitsWith: .failure) {
                stopIfStuck()
                let lock = _Lock.standalone()
                await onItsOwnThread { lock.lock() }
                lock.unlock()
            }
        }
    }
    #endif

    // Linux's own lock only: its contention episodes.
    #if os(Linux) && !EXCLUSION_PORTABLE_LOCK
    // In processes of their own: only where a test can start one.
    #if CHILD_PROCESSES
    @Test func aContentionEpisodeIsFencedOnceAndEndsWhenTheLockIsQuiet() async throws {
        try #require(exclusion_lock_testing_is_fenced() != 0, "membarrier is not used on this machine")
        // In a process of its own, so that no other test's lock fences meanwhile.
        await offTheSharedPool {
            await #expect(processExitsWith: .success) {
                stopIfStuck()
                let lock = _Lock.standalone()
                let holder = await Holder(lock)
                let finished = Countdown(2)
                let fencesBefore = exclusion_lock_fences()
                var sleeping = true
                for sleepers in 1...2 {
                    onNewThread {
                        lock.lock()
                        lock.unlock()
                        finished.arrive()
                    }
                    sleeping = await eventually { exclusion_lock_testing_waiters(lock._handle) == sleepers } && sleeping
                }
                let fencedOnce = exclusion_lock_fences() - fencesBefore == 1
                await holder.release()
                await finished.wait()
                // Releases take the slow path until enough of them found nobody waiting.
                let lasts = exclusion_lock_testing_in_episode(lock._handle) != 0
                for _ in 0..<EXCLUSION_LOCK_QUIET_RELEASES {
                    lock.lock()
                    lock.unlock()
                }
                let ends = exclusion_lock_testing_in_episode(lock._handle) == 0
                exit(sleeping && fencedOnce && lasts && ends ? EXIT_SUCCESS : EXIT_FAILURE)
            }
        }
    }

    @Test func withoutMembarrierTheLockStillExcludesAndWakes() async {
        // The symmetric protocol, for kernels or sandboxes without `membarrier` and for processors
        // other than x86-64, in a process of its own: the switch has to happen before any lock is
        // used. That the symmetric protocol is the one running is checked: no lock fences.
        await offTheSharedPool {
            await #expect(processExitsWith: .success) {
                stopIfStuck()
                exclusion_lock_testing_use_symmetric_protocol()
                let fencesBefore = exclusion_lock_fences()
                let excludes = await lostUpdates(taking: takeWaiting, releasing: { $0.unlock() }) == 0
                let wakes = await sleepersWake(releasing: { $0.unlock() }, patience: .seconds(30))
                let symmetric = exclusion_lock_testing_is_fenced() == 0 && exclusion_lock_fences() == fencesBefore
                exit(excludes && wakes && symmetric ? EXIT_SUCCESS : EXIT_FAILURE)
            }
        }
    }
    #endif
    #endif
}

/// Holds a lock on a thread of its own until released: the thread that takes a lock must give it
/// back (on Apple platforms giving back another thread's lock stops the process), and a test's task
/// may resume on another thread after every `await`.
private final class Holder: Sendable {
    private let released = Flag()
    private let finished = Countdown(1)

    /// Takes `lock` on a new thread; returns once it holds it.
    init(_ lock: _Lock) async {
        let taken = Countdown(1)
        onNewThread { [released, finished] in
            lock.lock()
            taken.arrive()
            released.wait()
            lock.unlock()
            finished.arrive()
        }
        await taken.wait()
    }

    /// Gives the lock back; returns once it has.
    func release() async {
        released.raise()
        await finished.wait()
    }
}

/// A counter that the threads of `lostUpdates` change by a load and, a little later, a store, not
/// atomically: two threads inside at once lose increments. Its atomics keep ThreadSanitizer quiet
/// about the broken variant, which races on purpose.
private final class Tally: Sendable {
    let value = Atomic<Int>(0)

    func increment() {
        let old = value.load(ordering: .relaxed)
        for _ in 0..<8 { exclusion_spin_hint() }  // widens the window a second thread would hit
        value.store(old + 1, ordering: .relaxed)
    }
}

/// Takes `lock`, as long as it takes: `lostUpdates`'s right way in.
private let takeWaiting: @Sendable (_Lock) -> Bool = { lock in
    lock.lock()
    return true
}

/// Four threads increment a counter 100,000 times each, inside `taking` and `releasing` (called only
/// if `taking` said it took the lock); how many increments got lost.
private func lostUpdates(
    taking: @escaping @Sendable (_Lock) -> Bool, releasing: @escaping @Sendable (_Lock) -> Void
) async -> Int {
    let lock = _Lock.standalone()
    defer { lock.deallocate() }
    let tally = Tally()
    let threads = 4
    let increments = 100_000
    await onThreads(threads, rounds: increments) { _, _ in
        let took = taking(lock)
        tally.increment()
        if took { releasing(lock) }
    }
    return threads * increments - tally.value.load(ordering: .relaxed)
}

/// Rounds in which a waiter thread blocks on a held lock and the holder gives it back after a
/// random delay of up to 50 µs (so the waiter may still be spinning, about to sleep, or asleep),
/// then waits up to `patience` for the waiter to get in without touching the lock again. Whether
/// every round's waiter got in; stops at the first that didn't, after waking it properly.
private func sleepersWake(
    withDeadline: Bool = false, releasing: @escaping @Sendable (_Lock) -> Void, patience: Duration
) async -> Bool {
    let lock = _Lock.standalone()
    defer { lock.deallocate() }
    let rounds = 300
    let started = Atomic<Int>(0)  // the round the waiter has started
    let got = Atomic<Int>(0)  // the round in which the waiter held the lock
    let go = Atomic<Int>(0)  // the round the holder has begun; -1 to stop
    let missed = Atomic<Bool>(false)
    await onThreads(2) { index in
        if index == 0 {
            var random = SystemRandomNumberGenerator()
            for round in 1...rounds {
                lock.lock()
                go.store(round, ordering: .sequentiallyConsistent)
                _ = spin(until: { started.load(ordering: .sequentiallyConsistent) == round })
                let until = DispatchTime.now().uptimeNanoseconds + UInt64.random(in: 0..<50_000, using: &random)
                while DispatchTime.now().uptimeNanoseconds < until { exclusion_spin_hint() }
                releasing(lock)
                if !spin(until: { got.load(ordering: .sequentiallyConsistent) == round }, timeout: patience) {
                    missed.store(true, ordering: .sequentiallyConsistent)
                    lock.lock()  // a real release wakes the waiter, so that its thread ends
                    lock.unlock()
                    _ = spin(until: { got.load(ordering: .sequentiallyConsistent) == round })
                    break
                }
            }
            go.store(-1, ordering: .sequentiallyConsistent)
        } else {
            var round = 0
            while true {
                _ = spin(until: { go.load(ordering: .sequentiallyConsistent) != round })
                round = go.load(ordering: .sequentiallyConsistent)
                if round < 0 { break }
                started.store(round, ordering: .sequentiallyConsistent)
                if withDeadline {
                    precondition(lock.sleep(until: _Deadline(after: farAway)))
                } else {
                    lock.lock()
                }
                lock.unlock()
                got.store(round, ordering: .sequentiallyConsistent)
            }
        }
    }
    return !missed.load(ordering: .sequentiallyConsistent)
}

#if os(Linux)
/// How many times a thread that waits for a held lock with `wait` switched away from the processor
/// while the lock stayed held for 200 ms, from its kernel counts (`/proc`); nil if they can't be
/// read. The hold is a length of time, not an ordering: it is what gives a waiter that polls the
/// chance to show it.
///
/// With `counted`, measuring starts once the lock counts the waiter (right before its first
/// sleep); a waiter of the test's own isn't counted, and it is measured from when it starts.
private func switchesOfATimedWaiter(counted: Bool = true, _ wait: @escaping @Sendable (_Lock) -> Bool) async -> Int? {
    let lock = _Lock.standalone()
    defer { lock.deallocate() }
    let holder = await Holder(lock)
    let waiter = Recorder<String>()
    let finished = Countdown(1)
    onNewThread {
        // /proc/thread-self links to PID/task/TID.
        waiter.record((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? "")
        if wait(lock) { lock.unlock() }
        finished.arrive()
    }
    guard await eventually({ !waiter.values.isEmpty }) else { return nil }
    let status = "/proc/\(waiter.values.first ?? "")/status"
    func switches() -> Int? {
        guard let text = try? String(contentsOfFile: status, encoding: .utf8) else { return nil }
        let line = text.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") }
        return line.flatMap { Int($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") }
    }
    if counted {
        guard await eventually({ exclusion_lock_testing_waiters(lock._handle) == 1 }) else { return nil }
    }
    let before = switches()
    usleep(200_000)
    let after = switches()
    await holder.release()
    await finished.wait()
    guard let before, let after else { return nil }
    return after - before
}
#endif
