/// One awaited access waiting its turn: it runs the caller's closure, then resumes the caller
/// after the state is released.
final class _Turn<State, R: Sendable, E: Error>: @unchecked Sendable {
    // @unchecked: `run` is called once, by the one thread holding the state; the caller's task is
    // suspended until the continuation resumes, so nothing else touches `body` meanwhile.
    private var body: (@Sendable (inout sending State) throws(E) -> R)?
    private let continuation: UnsafeContinuation<Result<R, E>, Never>

    init(
        body: @escaping @Sendable (inout sending State) throws(E) -> R,
        continuation: UnsafeContinuation<Result<R, E>, Never>
    ) {
        self.body = body
        self.continuation = continuation
    }

    func run(_ state: inout sending State, _ deliveries: inout Outbox) {
        let result: Result<R, E>
        do throws(E) { result = .success(try body!(&state)) } catch { result = .failure(error) }
        // The caller's closure must not outlive its call (it never escaped), so drop it first.
        body = nil
        let continuation = self.continuation
        deliveries.runAfterRelease { continuation.resume(returning: result) }
    }
}
