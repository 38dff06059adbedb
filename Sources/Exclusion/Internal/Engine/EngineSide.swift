import ExclusionShims
import Synchronization

/// What only some instances need, made the first time one of them does (`_Engine._side`) and kept
/// until the instance goes: the backlog of submitted work, the wait list of conditions and awaited
/// turns, a contention profile's notes, and where the last watched access entered.
///
/// An instance that is only ever accessed synchronously, one thread at a time, never makes it.
/// Everything here reaches the instance's words through the engine, which outlives it: the engine
/// releases it in its `deinit`, and nothing else holds it.
final class _EngineSide<State>: @unchecked Sendable {
    // @unchecked: `profile` is only touched with the instance's state held exclusively (its holder
    // read with it held shared too); everything else guards itself or is atomic.

    let backlog: _Backlog<@Sendable (inout sending State) -> Void>
    let waitList: _WaitList<State>
    /// A contention profile's notes on this instance's waits (`Profiling/`).
    var profile = _ProfileNotes()
    /// Where the last watched access entered: the file's UTF-8 start and length, and the line
    /// (`Checks/`).
    let entryFile = Atomic<UInt>(0)
    let entryFileLength = Atomic<Int>(0)
    let entryLine = Atomic<UInt>(0)

    init(words: UnsafeMutablePointer<exclusion_engine_words>) {
        backlog = _Backlog(_ReleaseWork(words))
        waitList = _WaitList(_ReleaseWork(words))
    }
}
