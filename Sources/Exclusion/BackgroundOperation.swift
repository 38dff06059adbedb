import Dispatch
import Foundation
import Synchronization

/// Work done in the background whose result comes back on a queue you pick, the main queue unless
/// you say otherwise.
///
/// This is the *main-thread gravity* pattern: what happens in the background is the operation's
/// private business. The caller creates the operation, adds it to an `OperationQueue`, and hears
/// back exactly once, on the delivery queue, when it is over. It never sees the background thread.
///
/// ```swift
/// let parse = BackgroundOperation(work: { _ in try Report(parsing: data) }) { result in
///     // On the main queue.
///     switch result {
///     case .success(let report): show(report)
///     case .failure(let error): present(error)
///     }
/// }
/// operationQueue.addOperation(parse)
/// ```
///
/// Long work can check `operation.isCancelled` (the operation is passed to `work`) and throw
/// `CancellationError` to stop early. An operation cancelled before it starts never runs `work`
/// and delivers `.failure(CancellationError())`.
public final class BackgroundOperation<Output: Sendable>: Operation, @unchecked Sendable {
    // @unchecked: the stored closures and queue are immutable; `_delivered` is atomic; everything
    // else is Operation's own state, which Foundation makes thread-safe.

    private let _queue: DispatchQueue
    private let _work: @Sendable (BackgroundOperation<Output>) throws -> Output
    private let _completion: @Sendable (Result<Output, any Error>) -> Void
    private let _delivered = Atomic<Bool>(false)

    /// Creates an operation that runs `work` when an operation queue starts it.
    ///
    /// - Parameters:
    ///   - queue: Where `completion` runs.
    ///   - work: The background work. It receives the operation, to check `isCancelled`.
    ///   - completion: Receives what `work` returned or threw, or `CancellationError` if the
    ///     operation was cancelled before it started. It runs exactly once, on `queue`.
    public init(
        deliverOn queue: DispatchQueue = .main,
        work: @escaping @Sendable (BackgroundOperation<Output>) throws -> Output,
        completion: @escaping @Sendable (Result<Output, any Error>) -> Void
    ) {
        _queue = queue
        _work = work
        _completion = completion
        super.init()
    }

    public override func start() {
        super.start()
        // `start` returns when the operation is finished. Foundation skips `main` for an operation
        // cancelled before it ran (it checks at a moment of its own choosing, so checking here
        // first would race with `cancel()`), but the caller still gets exactly one answer.
        _deliver(.failure(CancellationError()))
    }

    public override func main() {
        guard !isCancelled else {
            _deliver(.failure(CancellationError()))
            return
        }
        let result: Result<Output, any Error>
        do { result = .success(try _work(self)) } catch { result = .failure(error) }
        _deliver(result)
    }

    /// Delivers `result`, unless a result was delivered already.
    private func _deliver(_ result: Result<Output, any Error>) {
        guard !_delivered.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let completion = _completion
        _queue.async { completion(result) }
    }
}
