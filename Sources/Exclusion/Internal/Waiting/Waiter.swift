import Dispatch

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One access waiting for a condition on the state.
@usableFromInline
final class _Waiter<State>: @unchecked Sendable {
    // @unchecked: every var is only touched while the wait list's lock is held, but for
    // `profiledSince`, touched only with the instance's state held exclusively; the closures taken
    // out of it are called by the one thread that took them.

    enum Status {
        /// An awaited or asynchronous access that hasn't looked at the state yet.
        case pending
        /// In the list; its condition is checked after every exclusive access.
        case waiting
        /// A thread woken because its condition held; it checks again once it holds the state.
        case woken
        /// A thread to which the state is promised: nobody else may take it exclusively first.
        case granted
        /// Ran, failed, timed out or was cancelled: nothing more will happen to it.
        case done
    }

    /// What an awaited or asynchronous access runs with the state held.
    typealias Job = @Sendable (inout sending State, inout Outbox) -> Void

    var status: Status
    var condition: (@Sendable (State) -> Bool)?
    /// For a blocked thread: what wakes it.
    let semaphore: DispatchSemaphore?
    /// For a blocked thread: the thread, which accesses that back off for its grant lend their
    /// priority to.
    let thread: pthread_t?
    /// For an awaited or asynchronous access: runs the body with the state held, posting what it
    /// delivers; or delivers an error without it.
    var run: Job?
    var fail: (@Sendable (any Error) -> Void)?
    /// The error it was abandoned with before it could be set up (a task cancelled early).
    var abandonedWith: (any Error)?
    /// For a blocked thread: how many times it was woken and found its condition false again.
    /// After two, it is handed the state directly the next time, so a stream of other accesses
    /// can't keep taking what it waits for.
    var losses = 0
    var timer: (any DispatchSourceTimer)?

    /// A blocked thread's record.
    init(thread condition: @escaping @Sendable (State) -> Bool) {
        status = .waiting
        self.condition = condition
        semaphore = DispatchSemaphore(value: 0)
        thread = pthread_self()
        isObserver = false
        looked = false
    }

    /// Whether this is an iterator of `values` waiting for the next value: it ends when the public
    /// instance goes away, while other waiters go on until the engine itself does.
    let isObserver: Bool

    /// An awaited or asynchronous access's record; `run` and `fail` are set before it is submitted.
    /// `looked`: the access held the state and found its condition false before it got in line.
    init(job condition: @escaping @Sendable (State) -> Bool, observer: Bool = false, looked: Bool = false) {
        status = .pending
        self.condition = condition
        semaphore = nil
        thread = nil
        isObserver = observer
        self.looked = looked
    }

    /// Whether the access has held the state and found its condition false: a time limit that
    /// runs out while it is still in line for its next look then ran out on the condition, not on
    /// others holding the state (a busy machine can keep the turn that looks again from running).
    let looked: Bool

    var isThread: Bool { semaphore != nil }

    /// While a contention profile runs: when an awaited access that found its condition false
    /// began to wait. Written and read with the state held exclusively.
    var profiledSince: UInt64?

    /// Forgets the closures (which may belong to a caller's frame) and stops the timer. Call under
    /// the list's lock when the waiter is done.
    func clear() {
        condition = nil
        run = nil
        fail = nil
        timer?.cancel()
        timer = nil
    }
}
