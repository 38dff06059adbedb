/// The error a timed access throws when it couldn't run within its timeout.
///
/// A conditional access such as ``Exclusive/access(when:timeout:_:file:line:)`` waits at most its
/// `timeout`, whatever it waits for: for other accesses to let go of the state, or for its
/// condition to hold. Past that it throws this error instead of running its body, and the state is
/// as if it had never asked. ``cause`` says what it was still waiting for.
///
/// ```swift
/// do {
///     let job = try jobs.access(when: { !$0.isEmpty }, timeout: .milliseconds(200)) { $0.removeFirst() }
///     run(job)
/// } catch let error as TimeoutError {
///     // Exclusion: waited 0.2 seconds on "jobs", and its condition was false each time it looked.
///     print(error)
/// }
/// ```
public struct TimeoutError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What a timed access was still waiting for when its time ran out.
    public enum Cause: Sendable, Hashable {
        /// Its condition: the access held the state and found the condition false each time it
        /// could look. An awaited access that looked and was in line to look again counts here
        /// too: its turn waits behind other accesses or for a thread to run it, and only a thread
        /// that tried to take the state knows that somebody held it.
        case conditionFalse
        /// The state: other accesses held it (or it was promised to another waiting access) until
        /// the time ran out, so the access couldn't look at its condition, or look again.
        case stateHeld
    }

    /// The label of the instance that was waited on.
    public let label: String
    /// How long the access waited.
    public let timeout: Duration
    /// What it was still waiting for.
    public let cause: Cause

    /// Creates the error for a wait on the instance labelled `label` that gave up after `timeout`,
    /// still waiting for what `cause` says.
    public init(label: String, timeout: Duration, cause: Cause = .conditionFalse) {
        self.label = label
        self.timeout = timeout
        self.cause = cause
    }

    public var description: String {
        switch cause {
        case .conditionFalse:
            "Exclusion: waited \(timeout) on \"\(label)\", and its condition was false each time it looked."
        case .stateHeld:
            "Exclusion: waited \(timeout) on \"\(label)\", and other accesses held its state all that time."
        }
    }
}
