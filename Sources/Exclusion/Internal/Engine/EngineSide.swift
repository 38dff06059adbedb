import ExclusionShims
import Synchronization

/// What only some instances need, made the first time one of them does (`_Engine._side`): the
/// backlog of submitted work (which this object extends, so that the two are one allocation), the
/// wait list of conditions and awaited turns, and a contention profile's notes.
///
/// An instance that is only ever accessed synchronously, one thread at a time, never makes it.
/// Within it, the wait list is made the first time something waits for a condition or its turn
/// (`waitList`), so that an instance that only submits work never makes one. An instance that only
/// submits work lets it go when a drain ends with nothing else using it (`Engine+Side.swift`);
/// one that made a wait list or a profile's notes keeps it until the instance goes.
/// Everything here reaches the instance's words through the engine, which outlives it: the engine
/// releases it in its `deinit` or when a drain lets it go, and nothing else holds it.
final class _EngineSide<State>: _Backlog<@Sendable (inout sending State) -> Void>, @unchecked Sendable {
    // @unchecked: `_profile` and its notes are only made and changed with the instance's state held
    // exclusively (read with it held shared too); everything else guards itself or is atomic.

    /// The backlog of submitted work: the side structures' first part.
    var backlog: _Backlog<@Sendable (inout sending State) -> Void> { self }
    /// The wait list, retained, once made; published once, like the side structures themselves.
    private let _waitList = Atomic<UnsafeRawPointer?>(nil)
    /// A contention profile's notes on this instance's waits (`Profiling/`), made the first time a
    /// profiled access notes something: most instances are never profiled.
    private var _profile: UnsafeMutablePointer<_ProfileNotes>?

    init(words: UnsafeMutablePointer<exclusion_engine_words>) {
        super.init(_ReleaseWork(words))
    }

    deinit {
        if let notes = _profile {
            notes.deinitialize(count: 1)
            notes.deallocate()
        }
        if let list = _waitList.load(ordering: .acquiring) { Unmanaged<_WaitList<State>>.fromOpaque(list).release() }
    }

    /// A contention profile's notes, made now if they aren't yet; with the state held exclusively.
    var profile: UnsafeMutablePointer<_ProfileNotes> {
        if let notes = _profile { return notes }
        let notes = UnsafeMutablePointer<_ProfileNotes>.allocate(capacity: 1)
        notes.initialize(to: _ProfileNotes())
        _profile = notes
        return notes
    }

    /// A contention profile's notes, if a profiled access noted something; with the state held.
    var existingProfile: UnsafeMutablePointer<_ProfileNotes>? { _profile }

    /// The wait list, made now if it isn't yet.
    var waitList: _WaitList<State> { existingWaitList ?? _makeWaitList() }

    /// The wait list, if something has waited for a condition or its turn.
    var existingWaitList: _WaitList<State>? {
        guard let list = _waitList.load(ordering: .acquiring) else { return nil }
        return Unmanaged<_WaitList<State>>.fromOpaque(list).takeUnretainedValue()
    }

    /// Runs `body` with the wait list, made now if it isn't yet, without retaining it: the side
    /// structures hold it as long as they live, and so does the caller's instance.
    func withWaitList<R>(_ body: (_WaitList<State>) -> R) -> R {
        guard let list = _waitList.load(ordering: .acquiring) else { return body(_makeWaitList()) }
        return Unmanaged<_WaitList<State>>.fromOpaque(list)._withUnsafeGuaranteedRef(body)
    }

    /// Out of line: made once, it keeps the steps of every wait that reaches the list short.
    @inline(never)
    private func _makeWaitList() -> _WaitList<State> {
        let made = _WaitList<State>(_releaseWork)
        let retained = Unmanaged.passRetained(made)
        let (exchanged, _) = _waitList.compareExchange(
            expected: nil, desired: UnsafeRawPointer(retained.toOpaque()), ordering: .acquiringAndReleasing)
        if exchanged { return made }
        retained.release()  // another thread's came first
        return existingWaitList!
    }
}
