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
func eventually(timeout: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}

/// Spins on a real thread until `condition` holds or `timeout` passes; returns whether it held.
func spin(until condition: () -> Bool, timeout: Duration = .seconds(10)) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        sched_yield()
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
    func wait(timeout: Duration = .seconds(10)) -> Bool { spin(until: { isRaised }, timeout: timeout) }
}

/// Collects values from many threads (a test-side helper; it is itself guarded by a lock).
final class Recorder<Value: Sendable>: Sendable {
    private let _values = Mutex<[Value]>([])
    func record(_ value: Value) { _values.withLock { $0.append(value) } }
    var values: [Value] { _values.withLock { $0 } }
}

/// Completes when `count` calls of `arrive()` have happened; await it with `wait()`.
final class Countdown: Sendable {
    private let _state: Mutex<(remaining: Int, waiter: CheckedContinuation<Void, Never>?)>
    init(_ count: Int) { _state = Mutex((count, nil)) }
    func arrive() {
        let waiter: CheckedContinuation<Void, Never>? = _state.withLock { state in
            state.remaining -= 1
            guard state.remaining == 0 else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }
    func wait() async {
        await withCheckedContinuation { continuation in
            let done = _state.withLock { state in
                if state.remaining <= 0 { return true }
                state.waiter = continuation
                return false
            }
            if done { continuation.resume() }
        }
    }
}

import Exclusion

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
