/// One operation of a recorded history: what was asked, what came back, and when.
public struct HistoryOperation<Input: Sendable, Output: Sendable>: Sendable {
    /// The thread that made the call.
    public let thread: Int
    public let input: Input
    public let output: Output
    /// When the call started and when it returned, on one clock shared by all threads.
    public let call: UInt64
    public let `return`: UInt64

    public init(thread: Int, input: Input, output: Output, call: UInt64, return: UInt64) {
        precondition(call < `return`, "an operation returns after it is called")
        self.thread = thread
        self.input = input
        self.output = output
        self.call = call
        self.return = `return`
    }
}
