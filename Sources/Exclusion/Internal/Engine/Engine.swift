import Dispatch
import Synchronization

/// The access engine behind `Exclusive` and `ReadersWriter`, written once for both.
///
/// It owns the state and keeps every promise the two types make: work one thread submits runs in
/// the order it submitted it (synchronous, asynchronous and awaited alike), deliveries leave in
/// the order the state was held and never while it is held, an awaited access suspends instead of
/// blocking, a timed access gives up at its deadline whatever it waits for, and a re-entrant or
/// badly nested access stops the process with a message instead of deadlocking. The two types
/// differ only in their `Lock`: `Exclusive` has no shared access, so its engine never runs work
/// shared. Inside the engine, access is *exclusive* or *shared*; "read" and "write" are words of
/// the public types only.
///
/// `README.md` beside this file follows one access through the engine, step by step, for each
/// way it can go: uncontended, contended, timed, awaited and profiled.
///
/// The engine is the instance as far as thread tracking and the lock-order check are concerned;
/// each public instance owns exactly one.
@usableFromInline
final class _Engine<State, Lock: _EngineLock>: @unchecked Sendable {
    // @unchecked: _state is only read with _lock held (shared or exclusively) and only changed
    // with it held exclusively; everything else is immutable or guards itself. The public types
    // decide which states may cross threads (`Exclusive` through `sending`, `ReadersWriter` by
    // requiring `Sendable` for its asynchronous accessors).

    /// A plain asynchronous body, applied to the state without wrapping it in another closure.
    @usableFromInline typealias Plain = @Sendable (inout sending State) -> Void

    @usableFromInline let label: String
    /// The public type's name without its generic argument, such as `"Exclusive"`.
    private let _kind: StaticString
    @usableFromInline let _state: UnsafeMutablePointer<State>
    @usableFromInline let _backlog = _Backlog<Plain>()
    @usableFromInline let _waitList: _WaitList<State>
    /// What an exclusive release has to do besides unlocking; the wait list's, held here too so that
    /// a release reaches it in one step.
    @usableFromInline let _releaseWork: _ReleaseWork
    /// Whether blocking waits on this instance are watched and reported (`_StuckWait`); decided
    /// when it is created, so that an unwatched access pays one predictable branch.
    @usableFromInline let _watchesWaits: Bool
    /// Where the last watched access entered: the file's UTF-8 start and length, and the line.
    @usableFromInline let _entryFile = Atomic<UInt>(0)
    @usableFromInline let _entryFileLength = Atomic<Int>(0)
    @usableFromInline let _entryLine = Atomic<UInt>(0)

    /// Last, so that the fields above have offsets known at compile time whatever the lock is.
    @usableFromInline let _lock = Lock()

    init(_ initialState: sending State, kind: StaticString, label: String) {
        self.label = label
        _waitList = _WaitList()
        _releaseWork = _waitList.releaseWork
        _watchesWaits = _StuckWait.threshold != nil
        _kind = kind
        _state = .allocate(capacity: 1)
        _state.initialize(to: initialState)
        _ = ContentionProfile.fromEnvironment  // starts the run's profile, if one is asked for
    }

    deinit {
        // Only work submitted with a condition can still wait here: nobody is left to change the
        // state, so its condition will never hold. It must still hear back exactly once.
        _waitList.endAll()
        _LockOrder.forget(self)
        _state.deinitialize(count: 1)
        _state.deallocate()
        _lock.destroy()
    }

    /// The public type's full name, as messages show it: `Exclusive<Ledger>`.
    @usableFromInline var _typeName: String { "\(_kind)<\(State.self)>" }

    /// Whether the calling thread is inside an access of this instance right now.
    var isAccessing: Bool { _CurrentThread().mode(in: self) != nil }
}

extension _Engine: _LockOrderNamed {}

// MARK: - Checks before an access

/// How an access takes its instance, for the checks before it and a schedule explorer.
@usableFromInline
enum _AccessWay: UInt8 {
    /// Waits for the instance while another access holds it: a synchronous access.
    case waiting
    /// Suspends its task instead of waiting: an awaited access.
    case awaited
    /// Gives up instead of waiting: an `...IfAvailable` access.
    case trying
    /// Submits work to run later, and returns at once.
    case submitting
}

extension _Engine {
    /// Before blocking for this instance: stops on re-entrancy, and checks the lock order against
    /// the other instances this thread is inside. Costs one comparison when it is inside none.
    /// `shared`: the access asks to share the instance (a plain read).
    @inlinable @inline(__always)
    func checkNesting(
        _ thread: _CurrentThread, attempting attempted: String, shared: Bool = false, file: StaticString, line: UInt
    ) {
        if thread.isInsideAny { _checkNested(thread, attempting: attempted, shared: shared, file: file, line: line) }
    }

    /// Out of line, so that the accesses that hold nothing else stay small enough to inline.
    @usableFromInline
    func _checkNested(
        _ thread: _CurrentThread, attempting attempted: String, shared: Bool, file: StaticString, line: UInt
    ) {
        if thread._isScheduled {  // schedule seam
            return _scheduledAccess(thread, .waiting, shared: shared, attempted, at: _Site(file, line))
        }
        checkNotInside(thread, attempting: attempted)
        _LockOrder.willAcquire(self, holding: thread, file: file, line: line)
    }

    /// Before an access that never waits for the lock (it suspends, gives up or submits instead):
    /// stops on re-entrancy, where an access would deadlock. One comparison when the thread is
    /// inside no instance.
    @inlinable @inline(__always)
    func checkBeforeNotWaiting(
        _ thread: _CurrentThread, _ way: _AccessWay, shared: Bool, attempting attempted: String,
        at site: _Site = .none
    ) {
        if thread.isInsideAny { _checkNestedNotWaiting(thread, way, shared: shared, attempting: attempted, at: site) }
    }

    /// Out of line, as `_checkNested`.
    @usableFromInline
    func _checkNestedNotWaiting(
        _ thread: _CurrentThread, _ way: _AccessWay, shared: Bool, attempting attempted: String, at site: _Site
    ) {
        if thread._isScheduled { return _scheduledAccess(thread, way, shared: shared, attempted, at: site) }  // seam
        // Submitting to the instance it is inside waits for nothing: the work runs after.
        if way != .submitting { checkNotInside(thread, attempting: attempted) }
    }

    /// Stops the process if this thread is inside this instance: waiting would never end.
    @inlinable
    func checkNotInside(_ thread: _CurrentThread, attempting attempted: String) {
        guard let mode = thread.mode(in: self) else { return }
        _reentrantAccess(type: _typeName, label: label, attempted: attempted, holding: Lock.describe(mode))
    }
}
