/// The sequential specification of an object: what each operation returns, one at a time.
///
/// A history of concurrent operations is *linearizable* if the operations can be put in one
/// order that respects real time (an operation that returned before another was called comes
/// first) and in which every output is what this model says.
///
/// ```swift
/// struct Register: SequentialModel {
///     enum Input: Sendable { case write(Int), read }
///     var initialState: Int { 0 }
///     func step(_ state: Int, _ input: Input) -> (output: Int?, state: Int) {
///         switch input {
///         case .write(let value): (nil, value)
///         case .read: (state, state)
///         }
///     }
/// }
/// ```
public protocol SequentialModel: Sendable {
    associatedtype State: Hashable & Sendable
    associatedtype Input: Sendable
    associatedtype Output: Equatable & Sendable

    /// The state before any operation.
    var initialState: State { get }

    /// What `input` returns when applied to `state`, and the state after it.
    func step(_ state: State, _ input: Input) -> (output: Output, state: State)
}
