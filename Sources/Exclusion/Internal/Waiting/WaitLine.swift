import Dispatch

/// The wait list's state, as a value: the waiters in the order they began to wait, the one the
/// state is promised to, and whether observations have ended. Each transition changes it and
/// returns what else has to change (`_WaitEffects`), which `_WaitList` carries out while it still
/// holds its lock; nothing here locks, sleeps or calls out.
///
/// A waiter's `status` moves pending → waiting → woken or granted → done (a blocked thread starts
/// at waiting; a woken one may go back to waiting). `sleepers` counts the waiting ones, and the
/// grant is made and ended here only, by `grant(_:)` and `endGrant()`.
struct _WaitLine<State> {
    private(set) var waiters: [_Waiter<State>] = []
    private(set) var grantee: _Waiter<State>?
    private(set) var observationsEnded = false

    /// How many times a blocked thread may be woken and find its condition false again before it
    /// is granted the state.
    static var lossesBeforeGrant: Int { 2 }

    /// A waiter starts waiting: a blocked thread that found its condition false, or an awaited or
    /// asynchronous access whose turn came with its condition false.
    mutating func join(_ waiter: _Waiter<State>) -> _WaitEffects {
        waiter.status = .waiting
        waiters.append(waiter)
        return _WaitEffects(sleepers: 1)
    }

    /// A woken thread found its condition false again: it waits again in its place.
    mutating func waitAgain(_ waiter: _Waiter<State>) -> _WaitEffects {
        waiter.losses += 1
        waiter.status = .waiting
        return _WaitEffects(sleepers: 1)
    }

    /// A waiter leaves, whatever it was doing: it ran, gave up, timed out or was abandoned. A grant
    /// it held ends with it.
    mutating func remove(_ waiter: _Waiter<State>) -> _WaitEffects {
        var effects = _WaitEffects()
        if waiter.status == .granted, grantee === waiter { effects = endGrant() }
        if waiter.status == .waiting { effects.sleepers -= 1 }
        waiter.status = .done
        waiter.clear()
        if let index = waiters.firstIndex(where: { $0 === waiter }) { waiters.remove(at: index) }
        return effects
    }

    /// A pending awaited or asynchronous access looks at the state, held exclusively: if its
    /// condition holds, it is done and its body is returned to run now; otherwise it joins.
    mutating func check(_ waiter: _Waiter<State>, _ state: State) -> (run: _Waiter<State>.Job?, _WaitEffects) {
        guard waiter.status == .pending, let condition = waiter.condition else { return (nil, _WaitEffects()) }
        guard condition(state) else { return (nil, join(waiter)) }
        let run = waiter.run
        waiter.status = .done
        waiter.clear()
        return (run, _WaitEffects())
    }

    /// The next waiter to serve after an exclusive access, checked in order with the state held:
    /// the body of the first awaited or asynchronous access whose condition holds (removed, to run
    /// now), or the first blocked thread whose condition holds, woken, or granted the state if it
    /// lost it too often; blocked threads only if `mayWake` (one is woken per release). `skipping`
    /// a thread that has just joined: looking at it again in the same release would be wasted.
    mutating func nextReady(
        _ state: State, mayWake: Bool, skipping joiner: _Waiter<State>?
    ) -> (_Served<State>, _WaitEffects) {
        for waiter in waiters where waiter.status == .waiting && waiter !== joiner {
            guard mayWake || !waiter.isThread, let condition = waiter.condition, condition(state) else { continue }
            guard let semaphore = waiter.semaphore else { return (.run(waiter.run), remove(waiter)) }
            if waiter.losses >= Self.lossesBeforeGrant { return (.wake(semaphore, granted: true), grant(waiter)) }
            waiter.status = .woken
            return (.wake(semaphore, granted: false), _WaitEffects(sleepers: -1))
        }
        return (.nothing, _WaitEffects())
    }

    /// Promises the state to `waiter`, a woken thread: nothing else may change the state before it
    /// runs.
    private mutating func grant(_ waiter: _Waiter<State>) -> _WaitEffects {
        waiter.status = .granted
        grantee = waiter
        return _WaitEffects(sleepers: -1, grant: .made)
    }

    /// The grant ends: the grantee took the state up, or left.
    mutating func endGrant() -> _WaitEffects {
        grantee = nil
        return _WaitEffects(grant: .ended)
    }

    /// The public instance went away: the observers in the list, which are to end.
    mutating func endObservations() -> [_Waiter<State>] {
        observationsEnded = true
        return waiters.filter(\.isObserver)
    }
}

/// What `_WaitLine.nextReady` found to serve.
enum _Served<State> {
    case nothing
    /// An awaited or asynchronous access's body, to run now with the state held.
    case run(_Waiter<State>.Job?)
    /// A blocked thread to wake once the state is released; `granted` if it was promised the state.
    case wake(DispatchSemaphore, granted: Bool)
}

/// What a transition of `_WaitLine` changes outside it: the count of sleepers that releases read
/// (`_ReleaseWork`), and the grant flag and count that accesses backing off read.
struct _WaitEffects {
    var sleepers = 0
    var grant: Grant?

    enum Grant {
        case made
        case ended
    }
}
