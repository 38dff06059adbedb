import Dispatch
import ExclusionShims

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What the wait line carries for a blocked thread: its condition, and what wakes it.
///
/// Not generic over the state: the condition takes the state's address. So the wait line, which
/// carries sleepers and jobs, is one concrete type that the compiler specializes, rather than code
/// generic over every instance's state that looks up type metadata at each step, which made a
/// sleeping waiter's wake-up measurably slower (Benchmarks/README.md, "Waiting").
struct _Sleeper: @unchecked Sendable {
    // @unchecked: `condition` is called only by the thread holding the state, under the wait
    // list's lock; the word is only touched through its atomic functions; `thread` is an
    // identifier.

    /// The condition, on the state at the address it is given.
    let condition: (UnsafeMutableRawPointer) -> Bool
    /// What the thread parks on, in its own record: it stays there, and so valid, until it has
    /// seen the wake-up (a thread whose wait timed out with a wake-up on its way waits for it).
    let word: UnsafeMutablePointer<UInt32>
    /// The thread, which accesses that back off for its grant lend their priority to.
    let thread: pthread_t

    /// The calling thread's, waiting for `condition` on a `State`.
    init<State>(waitingFor condition: @escaping @Sendable (State) -> Bool) {
        self.condition = _atAddress(condition)
        word = exclusion_prepare_to_be_woken(exclusion_current_thread())
        thread = pthread_self()
    }

    /// Clears the word of a thread that was woken and will wait again: call on the thread, before
    /// it is back in line, where it can be woken again.
    func rearm() {
        _ = exclusion_prepare_to_be_woken(exclusion_current_thread())
    }

    /// Parks the calling thread, whose sleeper this is, until it is woken, or `deadline` passes
    /// (for ever if nil); whether it was woken.
    func sleep(until deadline: _Deadline?) -> Bool {
        exclusion_wait_woken(word, deadline?.nanoseconds ?? 0) != 0
    }
}

/// What wakes a sleeper, apart from its condition: the releasing thread carries it until it has let
/// go of the state, while the woken thread may already be returning from the frame the condition
/// belongs to.
struct _Wakeup: @unchecked Sendable {
    // @unchecked: the word is only touched through its atomic functions.
    let word: UnsafeMutablePointer<UInt32>

    init(_ word: UnsafeMutablePointer<UInt32>) { self.word = word }

    /// Wakes the thread; call once the state is let go of, so that it doesn't wake only to wait.
    func wake() {
        exclusion_wake(word)
    }
}

/// What the wait line carries for an awaited or submitted access: its condition, what it runs
/// once its condition holds, what it delivers if it fails instead, and the timer of its limit.
/// Like `_Sleeper`, not generic: its closures take the state's address.
struct _WaitingJob: Sendable {
    /// What the access runs with the state (at the address it is given) held, posting what it
    /// delivers.
    typealias Run = @Sendable (UnsafeMutableRawPointer, inout Outbox) -> Void

    let condition: @Sendable (UnsafeMutableRawPointer) -> Bool
    let run: Run
    let fail: @Sendable (any Error) -> Void
    /// Ends the access with a `TimeoutError` when its limit passes; stopped when it leaves.
    let timer: _JobTimer?

    init<State>(
        condition: @escaping @Sendable (State) -> Bool,
        run: @escaping @Sendable (inout sending State, inout Outbox) -> Void,
        fail: @escaping @Sendable (any Error) -> Void, timer: _JobTimer?
    ) {
        self.condition = _atAddress(condition)
        self.run = { address, deliveries in
            // The state is the engine's, held exclusively by the thread that runs this: sent to
            // the body as the engine's own accesses send it.
            let state = _HeldState(address.assumingMemoryBound(to: State.self))
            run(&state.pointer.pointee, &deliveries)
        }
        self.fail = fail
        self.timer = timer
    }
}

/// `condition`, made to take the address of the state it looks at.
private func _atAddress<State>(
    _ condition: @escaping @Sendable (State) -> Bool
) -> @Sendable (UnsafeMutableRawPointer) -> Bool {
    { state in condition(state.assumingMemoryBound(to: State.self).pointee) }
}

/// The address of an engine's state, held exclusively by the thread that has it.
private struct _HeldState<State>: @unchecked Sendable {
    // @unchecked: made only by the thread that holds the state exclusively, for the body it runs.
    let pointer: UnsafeMutablePointer<State>

    init(_ pointer: UnsafeMutablePointer<State>) { self.pointer = pointer }
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
