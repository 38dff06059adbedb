import Dispatch
import Exclusion
import Foundation
import Synchronization
import Testing

/// Runs `body(index)` on `count` new threads that start together, and returns when all are done,
/// or records an issue and returns after `limit` if some aren't.
///
/// Real threads, not tasks: races that hide on a two-core cooperative pool show up here. The
/// caller awaits a continuation, so no test thread is ever blocked. What the threads run is a
/// workload: its limit is `workloadPatience`. A workload of rounds is limited by its progress
/// instead: see `onThreads(_:rounds:stall:_:)`.
public func onThreads(
    _ count: Int, limit: Duration = workloadPatience, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @Sendable (Int) -> Void
) async {
    let ready = Atomic<Int>(0)
    let finished = Atomic<Int>(0)
    do {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let resumption = OneResumption(continuation)
            resumption.giveUp(after: limit, "\(count) threads to finish", sourceLocation)
            for index in 0..<count {
                let thread = Thread {
                    ready.add(1, ordering: .sequentiallyConsistent)
                    while ready.load(ordering: .sequentiallyConsistent) < count { sched_yield() }
                    body(index)
                    if finished.add(1, ordering: .sequentiallyConsistent).newValue == count {
                        resumption.resume(with: .success(()))
                    }
                }
                thread.start()
            }
        }
    } catch {
        Issue.record("\(error) (\(finished.load(ordering: .relaxed)) finished)", sourceLocation: sourceLocation)
    }
}

/// Runs `body(thread, round)` for `rounds` rounds on each of `count` new threads that start
/// together, and returns when all are done, or records an issue and returns once no round has
/// ended anywhere for `stall`.
///
/// The limit is on progress, not on the whole: a workload beside other work runs as many times
/// slower as the machine is busy (each round that hands the state over waits for a processor), and
/// no fixed limit is right for every machine, but a hang stops every round, and is failed after
/// `stall` whatever the load. A round is one event, so `stall` is the suite's patience for one.
/// Where rounds wait for work that goes on elsewhere (a drain that runs what other rounds
/// submitted), `progress` counts that work too.
public func onThreads(
    _ count: Int, rounds: Int, stall: Duration = patience, progress: @escaping @Sendable () -> Int = { 0 },
    sourceLocation: SourceLocation = #_sourceLocation, _ body: @escaping @Sendable (_ thread: Int, _ round: Int) -> Void
) async {
    let ready = Atomic<Int>(0)
    let ended = Atomic<Int>(0)
    let finished = Atomic<Int>(0)
    do {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let resumption = OneResumption(continuation)
            resumption.giveUp(
                whenStalledFor: stall, progress: { ended.load(ordering: .relaxed) + progress() },
                "a round of \(count) threads' \(rounds) to end", sourceLocation)
            for index in 0..<count {
                let thread = Thread {
                    ready.add(1, ordering: .sequentiallyConsistent)
                    while ready.load(ordering: .sequentiallyConsistent) < count { sched_yield() }
                    for round in 0..<rounds {
                        body(index, round)
                        ended.add(1, ordering: .relaxed)
                    }
                    if finished.add(1, ordering: .sequentiallyConsistent).newValue == count {
                        resumption.resume(with: .success(()))
                    }
                }
                thread.start()
            }
        }
    } catch {
        Issue.record(
            "\(error) (\(ended.load(ordering: .relaxed)) of \(count * rounds) rounds ended)",
            sourceLocation: sourceLocation)
    }
}

/// Starts `body` on a new thread and returns at once.
public func onNewThread(_ body: @escaping @Sendable () -> Void) {
    Thread { body() }.start()
}

/// Runs `body`, which may block, on a new thread; the caller awaits its result without blocking a
/// test thread. Throws `GaveUp` if `body` hasn't returned after `limit` (its thread is left to it).
public func onItsOwnThread<R: Sendable>(
    limit: Duration = patience, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @Sendable () -> R
) async throws -> R {
    try await withCheckedThrowingContinuation { continuation in
        let resumption = OneResumption(continuation)
        resumption.giveUp(after: limit, "a blocking call to return", sourceLocation)
        onNewThread { resumption.resume(with: .success(body())) }
    }
}

/// Awaits `body`, an asynchronous call that is meant to end on its own, for at most `limit`:
/// throws `GaveUp` naming `what` past it (the call is left to run).
public func within<R: Sendable>(
    _ limit: Duration = workloadPatience, _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @Sendable () async -> R
) async throws -> R {
    try await withCheckedThrowingContinuation { continuation in
        let resumption = OneResumption(continuation)
        resumption.giveUp(after: limit, what, sourceLocation)
        // Off the shared pool, which a busy suite can keep from starting the body for longer than
        // it may take.
        Task(executorPreference: ThreadPerJob.shared) { resumption.resume(with: .success(await body())) }
    }
}

/// `onItsOwnThread` for a body that returns nothing: records an issue instead of throwing if it
/// hasn't returned after `limit`.
public func onItsOwnThread(
    limit: Duration = patience, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @Sendable () -> Void
) async {
    do {
        _ = try await onItsOwnThread(limit: limit, sourceLocation: sourceLocation) { () -> Bool in
            body()
            return true
        }
    } catch {
        Issue.record("\(error)", sourceLocation: sourceLocation)
    }
}

/// Waits until `condition` holds, and returns true; or records an issue naming what was awaited and
/// returns false once `limit` has passed. It polls, a few milliseconds apart, on the watchdog's queue, off
/// the tasks' thread pool: use it for conditions nothing announces, and assert what it returns.
public func eventually(
    for what: String = "its condition to hold", limit: Duration = patience,
    sourceLocation: SourceLocation = #_sourceLocation, _ condition: @escaping @Sendable () -> Bool
) async -> Bool {
    do {
        return try await withCheckedThrowingContinuation { continuation in
            let resumption = OneResumption(continuation)
            resumption.giveUp(after: limit, what, sourceLocation)
            // A millisecond apart at first, then up to twenty: a suite has dozens of these at once,
            // all on the one watchdog queue.
            @Sendable func poll(every interval: Int) {
                if condition() {
                    resumption.resume(with: .success(true))
                } else if resumption.isPending {
                    watchdog.asyncAfter(deadline: .now() + .milliseconds(interval)) {
                        poll(every: min(interval + 1, 20))
                    }
                }
            }
            watchdog.async { poll(every: 1) }
        }
    } catch {
        Issue.record("\(error)", sourceLocation: sourceLocation)
        return false
    }
}

/// `eventually` for a condition on main-actor state: polled on the main actor, a few milliseconds
/// apart, until it holds or the main actor has looked for `limit`. Only the pauses between looks
/// count: time in which the main actor got no thread (see `RunTime`) is no time it looked.
@MainActor
public func eventuallyOnTheMainActor(
    for what: String = "its condition to hold", limit: Duration = patience,
    sourceLocation: SourceLocation = #_sourceLocation, _ condition: @MainActor () -> Bool
) async -> Bool {
    var looked = Duration.zero
    var interval = 1
    while !condition() {
        guard looked < limit else {
            Issue.record(
                "\(GaveUp(what: what, sourceLocation: sourceLocation, limit: limit))", sourceLocation: sourceLocation)
            return false
        }
        await pause(.milliseconds(interval))
        looked += .milliseconds(interval)
        interval = min(interval + 1, 20)
    }
    return true
}

/// Suspends the calling task for `duration`, and resumes it on its own actor or executor without a
/// thread of the shared pool: `Task.sleep` resumes a task there first, even a main-actor task, and
/// a busy suite can keep every thread of the pool for seconds.
public func pause(_ duration: Duration) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        watchdog.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds(duration)))) { continuation.resume() }
    }
}

/// Whether `condition` comes to hold within `limit`, for a test that must show something does *not*
/// happen: returns false, recording nothing, once `limit` has passed. Polls like `eventually`.
public func holds(within limit: Duration, _ condition: @escaping @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + limit
    return await eventually(limit: limit + patience) {
        condition() || ContinuousClock.now > deadline
    } && condition()
}

/// Waits on a real thread until `condition` holds or `timeout` passes; returns whether it held.
///
/// For a helper thread's waits (a holder that stays until told to leave), not for a test's: those
/// are bounded by what the test awaits. The default is long, so that on a busy machine a helper
/// never gives up before the test does, which would change what the test sees.
///
/// It looks again at once a few times, then sleeps between looks, longer and longer up to a
/// millisecond: a thread that looks every hundred microseconds for seconds is one more runnable
/// thread for the scheduler, and a suite has dozens of them.
public func spin(until condition: () -> Bool, timeout: Duration = workloadPatience) -> Bool {
    let deadline = ContinuousClock.now + timeout
    var rounds = 0
    var pause: UInt32 = 10
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        rounds += 1
        if rounds < 20 {
            sched_yield()
        } else {
            usleep(pause)
            pause = min(pause * 2, 1_000)
        }
    }
    return true
}

/// A one-shot signal between threads. A thread that waits for it sleeps until it is raised.
public final class Flag: @unchecked Sendable {
    // @unchecked: _raised is atomic; _condition guards nothing but the sleep and the wake-up.
    private let _raised = Atomic<Bool>(false)
    private let _condition = NSCondition()
    public init() {}
    public func raise() {
        _condition.lock()
        _raised.store(true, ordering: .sequentiallyConsistent)
        _condition.broadcast()
        _condition.unlock()
    }
    public var isRaised: Bool { _raised.load(ordering: .sequentiallyConsistent) }
    /// Sleeps until raised; returns false once `time` has counted `limit` without it: for a helper
    /// thread that waits for a test's task, which a busy pool can keep from running for minutes.
    @discardableResult
    public func wait(until time: RunTime, counts limit: Duration) -> Bool {
        while !wait(timeout: RunTime.interval) {
            guard time.elapsed < limit else { return false }
        }
        return true
    }

    /// Sleeps until raised, however long: for a helper thread that holds something until the test
    /// lets go, where the test raises the flag on every path out (`defer`) and its time limit
    /// bounds the whole. A limit here would run while the test's task waits for a thread, which a
    /// busy machine can keep from it for many minutes.
    public func waitUntilRaised() {
        _condition.lock()
        defer { _condition.unlock() }
        while !isRaised { _condition.wait() }
    }

    /// Sleeps until raised; returns false after `timeout` (long: see `spin(until:timeout:)`).
    @discardableResult
    public func wait(timeout: Duration = workloadPatience) -> Bool {
        if isRaised { return true }
        let deadline = Date(timeIntervalSinceNow: Double(nanoseconds(timeout)) / 1e9)
        _condition.lock()
        defer { _condition.unlock() }
        while !isRaised {
            if !_condition.wait(until: deadline) { return isRaised }
        }
        return true
    }
}

// Test-side helpers guard their state with NSLock, not `Synchronization.Mutex`: on Linux the
// Mutex's lock lives in the prebuilt standard library, where ThreadSanitizer can't see it, so it
// reports races that aren't there.

/// Collects values from many threads.
public final class Recorder<Value: Sendable>: @unchecked Sendable {
    // @unchecked: _values is only touched while _lock is held.
    private let _lock = NSLock()
    private var _values: [Value] = []
    public init() {}
    public func record(_ value: Value) { _lock.withLock { _values.append(value) } }
    public var values: [Value] { _lock.withLock { _values } }
    public var count: Int { _lock.withLock { _values.count } }
}

/// Completes when `count` calls of `arrive()` have happened; await it with `wait()`.
public final class Countdown: @unchecked Sendable {
    // @unchecked: _remaining and _waiter are only touched while _lock is held.
    private let _lock = NSLock()
    private var _remaining: Int
    private let _count: Int
    private var _waiter: OneResumption<Void>?
    public init(_ count: Int) {
        _remaining = count
        _count = count
    }
    public func arrive() {
        let waiter: OneResumption<Void>? = _lock.withLock {
            _remaining -= 1
            guard _remaining == 0 else { return nil }
            defer { _waiter = nil }
            return _waiter
        }
        waiter?.resume(with: .success(()))
    }
    /// Returns once every arrival happened, or records an issue and returns once none has
    /// happened for `stall`: arrivals that keep coming on a busy machine are progress, however
    /// slow, and a lost one stops them. `progress` counts other work the arrivals wait for.
    public func wait(
        stall: Duration = patience, progress: @escaping @Sendable () -> Int = { 0 },
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        do {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumption = OneResumption(continuation)
                let done = _lock.withLock {
                    if _remaining <= 0 { return true }
                    _waiter = resumption
                    return false
                }
                if done {
                    resumption.resume(with: .success(()))
                } else {
                    resumption.giveUp(
                        whenStalledFor: stall, progress: { self._lock.withLock { -self._remaining } + progress() },
                        "the next of \(_count) arrivals", sourceLocation)
                }
            }
        } catch {
            let arrived = _lock.withLock { _count - _remaining }
            Issue.record("\(error) (\(arrived) arrived)", sourceLocation: sourceLocation)
        }
    }
}

// In async code `access`, `read` and `write` resolve to the awaiting overloads; these reach the
// synchronous ones, for tests about what a blocking caller sees.

public func syncAccess<State: Sendable, R: Sendable>(_ instance: Exclusive<State>, _ body: (inout State) -> R) -> R {
    instance.access { body(&$0) }
}

public func syncRead<State, R>(_ instance: ReadersWriter<State>, _ body: (State) -> R) -> R {
    instance.read(body)
}

public func syncWrite<State, R>(_ instance: ReadersWriter<State>, _ body: (inout State) -> R) -> R {
    instance.write(body)
}

/// Whether two reads on two threads were ever inside at the same moment.
///
/// `read` must run its argument inside one read of the instance under test. Each reader, once
/// inside, waits up to `patience` for the other to be inside too, then leaves. With reads that
/// really share, both are inside together at once; with reads that take turns, the first gives
/// up after `patience` and leaves before the second gets in, so the answer is false after about
/// twice `patience`: a broken variant fails fast, not after a minute.
public func readsOverlap(
    patience: Duration = .seconds(30), _ read: @escaping @Sendable (_ inside: () -> Void) -> Void
) async -> Bool {
    let inside = Atomic<Int>(0)
    let overlapped = Flag()
    await onThreads(2, limit: patience * 2 + ExclusionTestSupport.patience) { _ in
        read {
            if inside.add(1, ordering: .sequentiallyConsistent).newValue == 2 { overlapped.raise() }
            overlapped.wait(timeout: patience)
            inside.subtract(1, ordering: .sequentiallyConsistent)
        }
    }
    return overlapped.isRaised
}

/// Runs everything already submitted to `queue`, then returns: a barrier for counting what was
/// delivered there, instead of a sleep. `queue` must be serial. Records an issue and returns if
/// the queue hasn't got there after `limit`.
public func drain(
    _ queue: DispatchQueue, limit: Duration = patience, sourceLocation: SourceLocation = #_sourceLocation
)
    async
{
    do {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let resumption = OneResumption(continuation)
            resumption.giveUp(after: limit, "the queue \(queue.label) to run what was submitted", sourceLocation)
            queue.async { resumption.resume(with: .success(())) }
        }
    } catch {
        Issue.record("\(error)", sourceLocation: sourceLocation)
    }
}

/// Whether an awaited access suspends its task instead of blocking its thread.
///
/// Another thread holds the state through `hold`; the main actor then awaits `awaitAccess`. The
/// holder lets go only once another main-actor task has run, which it can do only while the
/// awaiting task is suspended: if `awaitAccess` blocks the main actor's thread, that task can't run
/// until the holder gives up after `patience`, and the answer is false.
///
/// The holder's `patience` counts time in which the shared pool ran tasks of the caller's priority
/// (`RunTime`): a pool that busy tests hold for minutes runs neither the awaiting task's access
/// nor the other task, and must not fail the test; a main actor blocked by the access leaves the
/// pool's threads free to count.
@MainActor
public func awaitSuspends(
    patience: Duration = ExclusionTestSupport.patience * 3, hold: @escaping @Sendable (_ inside: () -> Void) -> Void,
    awaitAccess: @MainActor () async -> Void
) async -> Bool {
    let inside = Flag()
    let otherTaskRan = Flag()
    let holderSawIt = Flag()
    let poolTime = RunTime(ofThePoolAt: Task.currentPriority)
    onNewThread {
        hold {
            inside.raise()
            if otherTaskRan.wait(until: poolTime, counts: patience) { holderSawIt.raise() }
        }
    }
    // Polled on the main actor, so that nothing has to hop back to it once the holder is inside.
    guard await eventuallyOnTheMainActor(for: "the holder to be inside", { inside.isRaised }) else { return false }
    Task { @MainActor in otherTaskRan.raise() }
    await awaitAccess()
    return holderSawIt.isRaised
}

/// A call that blocks, started on a thread of its own at once, whose result is awaited later:
/// `async let x = onItsOwnThread { ... }` without the child task, which would need a thread of the
/// shared pool to start the call, and on a busy pool could start it seconds late.
public final class BlockingCall<R: Sendable>: @unchecked Sendable {
    // @unchecked: _result and _waiter are only touched while _lock is held.
    private let _lock = NSLock()
    private var _result: R?
    private var _waiter: OneResumption<R>?

    /// Starts `body` on a new thread.
    public init(_ body: @escaping @Sendable () -> R) {
        onNewThread { [self] in
            let result = body()
            let waiter: OneResumption<R>? = _lock.withLock {
                _result = result
                defer { _waiter = nil }
                return _waiter
            }
            waiter?.resume(with: .success(result))
        }
    }

    /// What the call returned; throws `GaveUp` if it hasn't returned after `limit`.
    public func value(limit: Duration = patience, sourceLocation: SourceLocation = #_sourceLocation) async throws -> R {
        try await withCheckedThrowingContinuation { continuation in
            let resumption = OneResumption(continuation)
            let result: R? = _lock.withLock {
                if _result == nil { _waiter = resumption }
                return _result
            }
            if let result {
                resumption.resume(with: .success(result))
            } else {
                resumption.giveUp(after: limit, "a blocking call to return", sourceLocation)
            }
        }
    }
}

extension Task {
    /// What the task returned or threw, awaited for `limit` at most: a task under test that never
    /// ends (a loop that a lost wake-up left waiting) fails the test that awaits it, instead of
    /// keeping it waiting. Records an issue naming where it waited, and returns nil, after `limit`.
    public func outcome(
        limit: Duration = patience, sourceLocation: SourceLocation = #_sourceLocation
    ) async -> Result<Success, Failure>? {
        do {
            return try await withCheckedThrowingContinuation { continuation in
                let resumption = OneResumption(continuation)
                resumption.giveUp(after: limit, "a task to end", sourceLocation)
                // Off the shared pool: the task under test may well have ended while every thread
                // of the pool was busy elsewhere, and that is no reason to fail it.
                Task<Void, Never>(executorPreference: ThreadPerJob.shared) {
                    resumption.resume(with: .success(await self.result))
                }
            }
        } catch {
            Issue.record("\(error)", sourceLocation: sourceLocation)
            return nil
        }
    }
}

/// Runs `body` in a task on the main actor, for a loop under test that must be given its elements
/// there, and awaits it for `limit` at most: past that, cancels it, records an issue and returns
/// nil.
///
/// The limit counts only time in which the main queue and the shared pool both ran: in a test
/// process on Linux the main thread parks in `dispatchMain()`, and the main queue is drained by
/// the threads of the shared pool, which the suite's CPU-bound tests can hold for minutes (under
/// ThreadSanitizer); and a loop on the main actor may await steps that run on the pool. A loop
/// that a lost wake-up left waiting still fails after `limit` of both free to run it.
public func onTheMainActor<R: Sendable>(
    limit: Duration = patience, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @MainActor @Sendable () async -> R
) async -> R? {
    let task = Task { @MainActor in await body() }
    let priority = Task.currentPriority
    do {
        let outcome = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<Result<R, Never>, any Error>) in
            let resumption = OneResumption(continuation)
            // Both: a loop on the main actor may await a sequence whose steps run on the pool.
            resumption.giveUp(
                afterEachRuns: [RunTime(of: .main), RunTime(ofThePoolAt: priority)], limit: limit,
                "a task on the main actor to end", sourceLocation)
            Task<Void, Never>(executorPreference: ThreadPerJob.shared) {
                resumption.resume(with: .success(await task.result))
            }
        }
        return outcome.get()
    } catch {
        task.cancel()
        Issue.record("\(error)", sourceLocation: sourceLocation)
        return nil
    }
}
