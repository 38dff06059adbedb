import Synchronization

/// Records the operations that several threads make on an object under test.
///
/// Each thread appends to a buffer of its own, so recording takes no lock. Call and return times
/// come from one atomic counter: a logical clock whose order is consistent with real time, which
/// is all linearizability needs.
///
/// ```swift
/// let recorder = HistoryRecorder<Counter.Input, Int>(threads: 2)
/// // on thread t:
/// recorder.record(thread: t, .increment) { counter.increment() }
/// // after all threads are done:
/// let history = recorder.history
/// ```
public final class HistoryRecorder<Input: Sendable, Output: Sendable>: @unchecked Sendable {
    // @unchecked: thread `t` only touches `buffers[t]`; `history` is read after the threads are
    // done (the caller joins them), and the clock is atomic.
    private final class Buffer {
        var operations: [HistoryOperation<Input, Output>] = []
    }

    private let clock = Atomic<UInt64>(0)
    private let buffers: [Buffer]

    /// Creates a recorder for threads numbered `0..<threads`.
    public init(threads: Int) {
        buffers = (0..<threads).map { _ in Buffer() }
    }

    /// Runs `operation` for `thread` and records its input, output and times.
    ///
    /// Call it only from the thread numbered `thread`.
    @discardableResult
    public func record(thread: Int, _ input: Input, _ operation: () -> Output) -> Output {
        let call = clock.add(1, ordering: .sequentiallyConsistent).newValue
        let output = operation()
        let returned = clock.add(1, ordering: .sequentiallyConsistent).newValue
        buffers[thread].operations.append(
            HistoryOperation(thread: thread, input: input, output: output, call: call, return: returned))
        return output
    }

    /// Every recorded operation, ordered by call time. Read it after all threads are done.
    public var history: [HistoryOperation<Input, Output>] {
        buffers.flatMap(\.operations).sorted { $0.call < $1.call }
    }
}
