import Dispatch
import Exclusion
import Foundation
import Synchronization

/// Runs `body(index)` on `count` new threads that start together, and returns when all are done.
///
/// Real threads, not tasks: races that hide on a two-core cooperative pool show up here. The
/// caller awaits a continuation, so no test thread is ever blocked.
public func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
    let ready = Atomic<Int>(0)
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let finished = Atomic<Int>(0)
        for index in 0..<count {
            let thread = Thread {
                ready.add(1, ordering: .sequentiallyConsistent)
                while ready.load(ordering: .sequentiallyConsistent) < count { sched_yield() }
                body(index)
                if finished.add(1, ordering: .sequentiallyConsistent).newValue == count {
                    continuation.resume()
                }
            }
            thread.start()
        }
    }
}

/// Starts `body` on a new thread and returns at once.
public func onNewThread(_ body: @escaping @Sendable () -> Void) {
    Thread { body() }.start()
}

/// Runs `body`, which may block, on a new thread; the caller awaits its result without blocking a
/// test thread.
public func onItsOwnThread<R: Sendable>(_ body: @escaping @Sendable () -> R) async -> R {
    await withCheckedContinuation { continuation in
        onNewThread { continuation.resume(returning: body()) }
    }
}

/// Waits (without blocking a test thread for long) until `condition` holds; false after `timeout`.
/// It polls: use it for conditions nothing announces, and assert what it returns.
nonisolated(nonsending) public func eventually(timeout: Duration = .seconds(300), _ condition: () -> Bool) async -> Bool
{
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}

/// Waits on a real thread until `condition` holds or `timeout` passes; returns whether it held.
///
/// The timeouts are generous on purpose: under ThreadSanitizer, with the whole suite running on two
/// cores, a thread can wait seconds for its turn.
public func spin(until condition: () -> Bool, timeout: Duration = .seconds(300)) -> Bool {
    let deadline = ContinuousClock.now + timeout
    var rounds = 0
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        rounds += 1
        if rounds < 100 { sched_yield() } else { usleep(100) }
    }
    return true
}

/// A one-shot signal between threads.
public final class Flag: Sendable {
    private let _value = Atomic<Bool>(false)
    public init() {}
    public func raise() { _value.store(true, ordering: .sequentiallyConsistent) }
    public var isRaised: Bool { _value.load(ordering: .sequentiallyConsistent) }
    /// Spins until raised; returns false after `timeout`.
    @discardableResult
    public func wait(timeout: Duration = .seconds(300)) -> Bool { spin(until: { isRaised }, timeout: timeout) }
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
    private var _waiter: CheckedContinuation<Void, Never>?
    public init(_ count: Int) { _remaining = count }
    public func arrive() {
        let waiter: CheckedContinuation<Void, Never>? = _lock.withLock {
            _remaining -= 1
            guard _remaining == 0 else { return nil }
            defer { _waiter = nil }
            return _waiter
        }
        waiter?.resume()
    }
    public func wait() async {
        await withCheckedContinuation { continuation in
            let done = _lock.withLock {
                if _remaining <= 0 { return true }
                _waiter = continuation
                return false
            }
            if done { continuation.resume() }
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
    await onThreads(2) { _ in
        read {
            if inside.add(1, ordering: .sequentiallyConsistent).newValue == 2 { overlapped.raise() }
            overlapped.wait(timeout: patience)
            inside.subtract(1, ordering: .sequentiallyConsistent)
        }
    }
    return overlapped.isRaised
}

/// Runs everything already submitted to `queue`, then returns: a barrier for counting what was
/// delivered there, instead of a sleep. `queue` must be serial.
public func drain(_ queue: DispatchQueue) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        queue.async { continuation.resume() }
    }
}

/// Whether an awaited access suspends its task instead of blocking its thread.
///
/// Another thread holds the state through `hold`; the main actor then awaits `awaitAccess`. The
/// holder lets go only once another main-actor task has run, which it can do only while the
/// awaiting task is suspended: if `awaitAccess` blocks the main actor's thread, that task can't run
/// until the holder gives up after `patience`, and the answer is false.
@MainActor
public func awaitSuspends(
    patience: Duration = .seconds(30), hold: @escaping @Sendable (_ inside: () -> Void) -> Void,
    awaitAccess: @MainActor () async -> Void
) async -> Bool {
    let inside = Flag()
    let otherTaskRan = Flag()
    let holderSawIt = Flag()
    onNewThread {
        hold {
            inside.raise()
            if otherTaskRan.wait(timeout: patience) { holderSawIt.raise() }
        }
    }
    inside.wait()
    Task { @MainActor in otherTaskRan.raise() }
    await awaitAccess()
    return holderSawIt.isRaised
}
