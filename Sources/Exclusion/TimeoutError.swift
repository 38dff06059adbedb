/// The error a waiting access throws when its condition didn't hold in time.
///
/// A conditional access such as ``Exclusive/access(when:timeout:_:file:line:)`` waits for its
/// condition for at most its `timeout`; past that it throws this error instead of running its body,
/// and the state is as if it had never asked.
///
/// ```swift
/// do {
///     let job = try jobs.access(when: { !$0.isEmpty }, timeout: .milliseconds(200)) { $0.removeFirst() }
///     run(job)
/// } catch let error as TimeoutError {
///     print(error)   // Exclusion: waited 0.2 seconds on "jobs", and its condition never held.
/// }
/// ```
public struct TimeoutError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The label of the instance that was waited on.
    public let label: String
    /// How long the access waited.
    public let timeout: Duration

    /// Creates the error for a wait on the instance labelled `label` that gave up after `timeout`.
    public init(label: String, timeout: Duration) {
        self.label = label
        self.timeout = timeout
    }

    public var description: String {
        "Exclusion: waited \(timeout) on \"\(label)\", and its condition never held."
    }
}
