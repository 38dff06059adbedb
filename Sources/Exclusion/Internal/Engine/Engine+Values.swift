import Synchronization

// MARK: - Values

extension _Engine {
    /// The next value of `transform` for an iterator of `values` that last delivered `last`: the
    /// value now if it delivered none yet; otherwise the value at the end of the first exclusive
    /// access after which it differs from `last`. Nil once the public instance has gone away, or
    /// when the task is cancelled.
    ///
    /// An iterator that waits is an awaited conditional access, checked by every exclusive release
    /// with the state held, like any other (`Engine+AwaitingConditions.swift`): `transform` runs with the state
    /// held, at the end of an access, so a value is never torn, and no wake-up can be lost. Between
    /// two calls the iterator is nowhere: a consumer that is busy, or has stopped, costs the
    /// accesses nothing, and what it missed meanwhile is only ever the latest value.
    nonisolated(nonsending) func nextValue<Value: Sendable & Equatable>(
        after last: Value?, _ transform: @escaping @Sendable (State) -> Value
    ) async -> Value? {
        if _waitList.observationsEnded || Task.isCancelled { return nil }
        guard let last else {
            return await awaitShared(attempting: "the values of", transform)
        }
        checkBeforeNotWaiting(_CurrentThread(), .awaited, shared: false, attempting: "the values of")
        // What the condition saw is what the access delivers: both run in one release, with the
        // state held, and nothing can change it between them.
        let seen = _Seen<Value>()
        do {
            return try await _awaitCondition(
                { state in
                    let value = transform(state)
                    guard value != last else { return false }
                    seen.value = value
                    return true
                }, nil, observer: true
            ) { _ in seen.value! }
        } catch {
            return nil
        }
    }

    /// Ends every iterator of `values` waiting now or later: the public instance went away.
    func endObservations() {
        _waitList.endObservations()
    }
}

/// Hands a value from an observer's condition to its body, which run one after the other on the
/// thread that holds the state.
final class _Seen<Value: Sendable>: @unchecked Sendable {
    // @unchecked: written by the condition and read by the body, both with the state held, on the
    // one thread that holds it; never touched elsewhere.
    var value: Value?
}

/// The sequence `values(_:)` returns: an iterator asks the engine for each next value.
struct _Values<State, Lock: _EngineLock, Value: Sendable & Equatable>: AsyncSequence, Sendable {
    typealias Element = Value
    typealias Failure = Never

    let engine: _Engine<State, Lock>
    let transform: @Sendable (State) -> Value

    func makeAsyncIterator() -> Iterator {
        Iterator(engine: engine, transform: transform)
    }

    struct Iterator: AsyncIteratorProtocol {
        typealias Element = Value
        typealias Failure = Never

        let engine: _Engine<State, Lock>
        let transform: @Sendable (State) -> Value
        var last: Value?

        init(engine: _Engine<State, Lock>, transform: @escaping @Sendable (State) -> Value) {
            self.engine = engine
            self.transform = transform
        }

        mutating func next(isolation actor: isolated (any Actor)?) async -> Value? {
            guard let value = await engine.nextValue(after: last, transform) else { return nil }
            last = value
            return value
        }

        nonisolated(nonsending) mutating func next() async -> Value? {
            guard let value = await engine.nextValue(after: last, transform) else { return nil }
            last = value
            return value
        }
    }
}
