// MARK: - Observing the state

// Observing runs `transform` alongside reads on other threads, so it needs a state that can be shared.
extension ReadersWriter where State: Sendable {
    /// The values of `transform` over the state, as writes change them: an asynchronous sequence
    /// that a `for await` loop keeps current.
    ///
    /// ```swift
    /// for await count in names.values({ $0.count }) {
    ///     print("\(count) documents")
    /// }
    /// ```
    ///
    /// The first element is the value now; after that, an element comes whenever a write (any
    /// exclusive access) ends with `transform` giving a value different from the last one
    /// delivered. Reads never change the state, so they never produce one. Everything else is as
    /// for ``Exclusive/values(_:)``: never torn, in order, the latest value for a slow consumer,
    /// over when the loop ends, its task is cancelled, or this instance goes away.
    ///
    /// - Parameter transform: What to observe. It runs with the state held, on whichever thread
    ///   holds it, so it must be quick and must not touch any instance of this library.
    /// - Returns: A sequence of the values, starting with the current one; it never throws.
    public func values<Value: Sendable & Equatable>(
        _ transform: @escaping @Sendable (State) -> Value
    ) -> some AsyncSequence<Value, Never> & Sendable {
        _Values(of: _engine, transform: transform)
    }
}
