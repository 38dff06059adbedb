import Synchronization

// MARK: - Values

extension _Engine {
    /// The next value of `transform` for an iterator of `values` that last delivered `last`: the
    /// value now if it delivered none yet; otherwise the value at the end of the first exclusive
    /// access after which it differs from `last`. Nil once the instance has gone away, or when the
    /// task is cancelled.
    ///
    /// An iterator that waits is an awaited conditional access, checked by every exclusive release
    /// with the state held, like any other (`Engine+AwaitingConditions.swift`): `transform` runs
    /// with the state held, at the end of an access, so a value is never torn, and no wake-up can
    /// be lost. Between two calls the iterator is nowhere: a consumer that is busy, or has stopped,
    /// costs the accesses nothing, and what it missed meanwhile is only ever the latest value.
    ///
    /// The iterator holds the instance weakly, and holds it strongly only while it sets its wait
    /// up: an instance that only its iterators hold goes away, which ends them.
    nonisolated(nonsending) static func nextValue<Value: Sendable & Equatable>(
        of instance: _WeakInstance, after last: Value?, _ transform: @escaping @Sendable (State) -> Value
    ) async -> Value? {
        if Task.isCancelled { return nil }
        guard let last else {
            guard let object = instance.object else { return nil }
            let value = await _Engine(of: object).awaitShared(attempting: "the values of", transform)
            withExtendedLifetime(object) {}  // the engine is a view, which doesn't hold the instance
            return value
        }
        // Held from here until the wait is set up, then let go: the task waits without it. One load of
        // the weak reference, whose count sits on the instance's first cache line, beside its lock,
        // which every access takes. (`object` ends with its block, before the task waits.)
        let held: Unmanaged<AnyObject>
        let engine: _Engine
        let waiter: _WaiterID
        do {
            guard let object = instance.object else { return nil }
            held = Unmanaged.passRetained(object)
            engine = _Engine(of: object)
            waiter = engine._expectObserver()
        }
        // What the condition saw is what the access delivers: both run in one release, with the
        // state held, and nothing can change it between them.
        let seen = _Seen<Value>()
        let job = _WaitingJob(
            condition: { (state: State) in
                let value = transform(state)
                guard value != last else { return false }
                seen.value = value
                return true
            },
            run: { (_: inout State, deliveries: inout Outbox) in
                let value = seen.value!
                deliveries.runAfterRelease { seen.continuation?.resume(returning: value) }
            },
            fail: { _ in seen.continuation?.resume(returning: nil) }, timer: nil)
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Value?, Never>) in
                engine._scheduledTaskWait()  // schedule seam
                seen.continuation = continuation
                if engine._withWaitList({ $0.arrive(waiter, job) }) { engine._enqueueTurn(of: waiter) }
                held.release()
            }
        } onCancel: {
            instance.object.map { _Engine(of: $0)._withWaitList { $0.end(waiter, .cancelled) } }
        }
    }

    /// Names an iterator of `values` about to wait, after the checks an awaited access makes.
    private func _expectObserver() -> _WaiterID {
        checkBeforeNotWaiting(_CurrentThread(), .awaited, shared: false, attempting: "the values of")
        return _withWaitList { $0.expect(observer: true) }
    }
}

/// A weak reference to an instance, for what must not keep it alive.
final class _WeakInstance: @unchecked Sendable {
    // @unchecked: `object` is only set when this is made; loading a weak reference is thread-safe.
    weak var object: AnyObject?

    init(_ object: AnyObject) {
        self.object = object
    }
}

/// Hands a value from an observer's condition to its body, which run one after the other on the
/// thread that holds the state, and the continuation of the task that waits to both.
final class _Seen<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is written by the condition and read by the body, both with the state
    // held, on the one thread that holds it. `continuation` is written before the job is set up,
    // which publishes it (under the wait list's lock) to whoever runs or fails the job.
    var value: Value?
    var continuation: UnsafeContinuation<Value?, Never>?
}

/// The sequence `values(_:)` returns: an iterator asks the engine for each next value.
struct _Values<State, Lock: _EngineLock, Value: Sendable & Equatable>: AsyncSequence, Sendable {
    typealias Element = Value
    typealias Failure = Never

    let instance: _WeakInstance
    let transform: @Sendable (State) -> Value

    init(of engine: _Engine<State, Lock>, transform: @escaping @Sendable (State) -> Value) {
        instance = _WeakInstance(engine._instance)
        self.transform = transform
    }

    func makeAsyncIterator() -> Iterator {
        Iterator(instance: instance, transform: transform)
    }

    struct Iterator: AsyncIteratorProtocol {
        typealias Element = Value
        typealias Failure = Never

        let instance: _WeakInstance
        let transform: @Sendable (State) -> Value
        var last: Value?

        init(instance: _WeakInstance, transform: @escaping @Sendable (State) -> Value) {
            self.instance = instance
            self.transform = transform
        }

        mutating func next(isolation actor: isolated (any Actor)?) async -> Value? {
            guard let value = await _Engine<State, Lock>.nextValue(of: instance, after: last, transform) else {
                return nil
            }
            last = value
            return value
        }

        nonisolated(nonsending) mutating func next() async -> Value? {
            guard let value = await _Engine<State, Lock>.nextValue(of: instance, after: last, transform) else {
                return nil
            }
            last = value
            return value
        }
    }
}
