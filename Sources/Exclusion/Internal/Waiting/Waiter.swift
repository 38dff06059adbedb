import Dispatch

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What the wait line carries for a blocked thread: its condition, and what wakes it.
struct _Sleeper<State>: @unchecked Sendable {
    // @unchecked: `condition` is called only by the thread holding the state, under the wait
    // list's lock; the semaphore is thread-safe; `thread` is an identifier.

    let condition: (State) -> Bool
    let semaphore: DispatchSemaphore
    /// The thread, which accesses that back off for its grant lend their priority to.
    let thread: pthread_t

    /// The calling thread's.
    init(waitingFor condition: @escaping @Sendable (State) -> Bool) {
        self.condition = condition
        semaphore = DispatchSemaphore(value: 0)
        thread = pthread_self()
    }
}

/// What the wait line carries for an awaited or submitted access: its condition, what it runs
/// once its condition holds, what it delivers if it fails instead, and the timer of its limit.
struct _WaitingJob<State>: Sendable {
    /// What the access runs with the state held, posting what it delivers.
    typealias Run = @Sendable (inout sending State, inout Outbox) -> Void

    let condition: @Sendable (State) -> Bool
    let run: Run
    let fail: @Sendable (any Error) -> Void
    /// Ends the access with a `TimeoutError` when its limit passes; stopped when it leaves.
    let timer: _JobTimer?
}

/// An access's time limit: the timer that ends the access when it passes, and what its
/// `TimeoutError` says.
struct _JobTimer: @unchecked Sendable {
    // @unchecked: the source is only cancelled, which libdispatch allows from any thread.

    let source: any DispatchSourceTimer
    let limit: _TimeLimit
    let label: String

    func cancel() { source.cancel() }
}
