import Exclusion
import Foundation
import Synchronization

/// Runs `body(index)` on `count` new threads that start together, and returns when all are done.
///
/// Real threads, not tasks: races that hide on a two-core cooperative pool show up here. The
/// caller awaits a continuation, so no test thread is ever blocked.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
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
func onNewThread(_ body: @escaping @Sendable () -> Void) {
    Thread { body() }.start()
}

/// Waits (without blocking a test thread for long) until `condition` holds; false after `timeout`.
func eventually(timeout: Duration = .seconds(60), _ condition: () -> Bool) async -> Bool {
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
func spin(until condition: () -> Bool, timeout: Duration = .seconds(60)) -> Bool {
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
final class Flag: Sendable {
    private let _value = Atomic<Bool>(false)
    func raise() { _value.store(true, ordering: .sequentiallyConsistent) }
    var isRaised: Bool { _value.load(ordering: .sequentiallyConsistent) }
    /// Spins until raised; returns false after `timeout`.
    @discardableResult
    func wait(timeout: Duration = .seconds(60)) -> Bool { spin(until: { isRaised }, timeout: timeout) }
}

// Test-side helpers guard their state with NSLock, not `Synchronization.Mutex`: on Linux the
// Mutex's lock lives in the prebuilt standard library, where ThreadSanitizer can't see it, so it
// reports races that aren't there.

/// Collects values from many threads.
final class Recorder<Value: Sendable>: @unchecked Sendable {
    // @unchecked: _values is only touched while _lock is held.
    private let _lock = NSLock()
    private var _values: [Value] = []
    func record(_ value: Value) { _lock.withLock { _values.append(value) } }
    var values: [Value] { _lock.withLock { _values } }
}

/// Completes when `count` calls of `arrive()` have happened; await it with `wait()`.
final class Countdown: @unchecked Sendable {
    // @unchecked: _remaining and _waiter are only touched while _lock is held.
    private let _lock = NSLock()
    private var _remaining: Int
    private var _waiter: CheckedContinuation<Void, Never>?
    init(_ count: Int) { _remaining = count }
    func arrive() {
        let waiter: CheckedContinuation<Void, Never>? = _lock.withLock {
            _remaining -= 1
            guard _remaining == 0 else { return nil }
            defer { _waiter = nil }
            return _waiter
        }
        waiter?.resume()
    }
    func wait() async {
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

func syncAccess<State: Sendable, R: Sendable>(_ instance: Exclusive<State>, _ body: (inout State) -> R) -> R {
    instance.access { body(&$0) }
}

func syncRead<State, R>(_ instance: ReadersWriter<State>, _ body: (State) -> R) -> R {
    instance.read(body)
}

func syncWrite<State, R>(_ instance: ReadersWriter<State>, _ body: (inout State) -> R) -> R {
    instance.write(body)
}
