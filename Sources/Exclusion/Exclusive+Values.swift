// MARK: - Observing the state

extension Exclusive {
    /// The values of `transform` over the state, as they change: an asynchronous sequence that a
    /// `for await` loop keeps current.
    ///
    /// ```swift
    /// let inventory = Exclusive(["apples": 3], label: "inventory")
    ///
    /// @MainActor func showCount() async {
    ///     for await count in inventory.values({ $0.values.reduce(0, +) }) {
    ///         countLabel = "\(count) items"   // on the main actor: a loop there stays there
    ///     }
    /// }
    /// ```
    ///
    /// - The first element is the value now. After that, an element comes whenever an access of
    ///   this instance ends with `transform` giving a value different from the last one delivered.
    /// - `transform` runs with the state held, at the end of the access, so a value is never torn
    ///   across two accesses, and values come in the order the accesses happened.
    /// - A consumer that is slower than the changes gets the latest value, not a backlog: nothing is
    ///   buffered, however fast the state changes, and a consumer that is busy costs the accesses
    ///   nothing.
    /// - Ending the loop, or cancelling its task, stops the observation at once; the sequence ends
    ///   when this instance goes away.
    /// - Elements arrive in the isolation of the loop: on the main actor for a loop there.
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
