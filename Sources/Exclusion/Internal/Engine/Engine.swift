import Dispatch
import ExclusionShims
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
/// The rooms, by job: this file is the engine and what an instance is (its storage, how it is made
/// and torn down, its names) and the checks before an access; `Engine+Access.swift` takes and
/// releases the state; `Engine+Waiting.swift` is the one wait for the lock, who observes a wait,
/// and backing off for a granted waiter; `Flags.swift` the words an access and a release read;
/// `Checks/CurrentThread.swift` the thread's record. `Internal/README.md` follows one access
/// through the engine, step by step, for each way it can go: uncontended, contended, timed,
/// awaited, profiled and explored.
///
/// **One object.** Users make an instance per object they share, so an instance costs what a lock
/// does: one allocation, the public object itself. `Exclusive` and `ReadersWriter` declare no
/// stored property; they are made by `make` with tail-allocated storage (`ManagedBufferPointer`
/// over their class) that holds, as its header, the instance's words, the label if one was given,
/// where the last watched access entered, and the lock (`Lock.Storage`), and the state as its one
/// element. The words and the lock are a cache line apart, so that threads waiting on the instance
/// don't take the line the holder writes (`exclusion_exclusive_storage`). The engine is a view of
/// that storage. What only some instances need (the backlog of submitted work, the wait list, a
/// profile's notes) is in side structures (`_EngineSide`), made the first time something needs
/// them. The storage never moves while the instance lives, so the engine hands out its
/// addresses, to the lock and to the accessors' closures.
///
/// Work that waits holds the instance strongly only while it is set up or runs: an iterator of
/// `values` waits without it, so that an instance nobody else holds goes away and ends it.
@usableFromInline
struct _Engine<State, Lock: _EngineLock>: @unchecked Sendable {
    // @unchecked: the state is only read with the lock held (shared or exclusively) and only
    // changed with it held exclusively; the words are atomic; the label never changes after the
    // instance is made; the side structures guard themselves. The public types decide which states
    // may cross threads (`Exclusive` through `sending`, `ReadersWriter` by requiring `Sendable` for
    // its asynchronous accessors).

    /// A plain asynchronous body, applied to the state without wrapping it in another closure.
    @usableFromInline typealias Plain = @Sendable (inout sending State) -> Void

    /// An instance's storage, with its lock, words and label as the header and the state as the one
    /// element.
    @usableFromInline typealias Storage = ManagedBufferPointer<_EngineHeader<Lock.Storage>, State>

    /// The instance, not retained: the engine is a view for the time of a call on the instance,
    /// which holds it. Work that outlives the call (a drain, a report) holds `_instance` instead.
    @usableFromInline unowned(unsafe) let _object: AnyObject

    /// The engine of `instance`, which `make` made.
    @inlinable init(of instance: AnyObject) {
        _object = instance
    }

    /// A new instance of `Instance` holding `initialState`: one allocation. `Instance` is a class that
    /// declares no stored property and whose `deinit` calls `tearDown()`. `label` nil is the default
    /// label, made only when a message needs it.
    @inlinable
    static func make<Instance: AnyObject>(
        _ initialState: sending State, label: String?, as instance: Instance.Type
    ) -> Instance {
        let storage = Storage(bufferClass: Instance.self, minimumCapacity: 1) { _, _ in
            _EngineHeader(storage: Lock.unprepared)
        }
        storage.withUnsafeMutablePointers { header, state in
            let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(storage.buffer).toOpaque())
            assert(
                UnsafeMutableRawPointer(header) == base + _headerOffset
                    && UnsafeMutableRawPointer(state) == base + _stateOffset)
            assert(MemoryLayout<_EngineHeader<Lock.Storage>>.offset(of: \.storage) == 0)
            assert(
                Lock._headerLayout.size == MemoryLayout<_EngineHeader<Lock.Storage>>.size
                    && Lock._headerLayout.alignment == MemoryLayout<_EngineHeader<Lock.Storage>>.alignment)
            assert(
                UnsafeMutableRawPointer(
                    Lock.words(UnsafeMutableRawPointer(header).assumingMemoryBound(to: Lock.Storage.self)))
                    == UnsafeMutableRawPointer(header))
            assert(
                MemoryLayout<String?>.size <= MemoryLayout<exclusion_label_room>.size
                    && MemoryLayout<String?>.alignment <= MemoryLayout<exclusion_label_room>.alignment
                    && MemoryLayout<Lock.Storage>.size
                        >= MemoryLayout<exclusion_engine_words>.size + MemoryLayout<exclusion_label_room>.size
                        + MemoryLayout<exclusion_entry_room>.size
            )
            Lock.prepare(
                UnsafeMutableRawPointer(header).assumingMemoryBound(to: Lock.Storage.self), flags: _newInstanceFlags)
            _labelRoom(UnsafeMutableRawPointer(header)).initialize(to: label)
            state.initialize(to: initialState)
        }
        // The storage is its object and nothing else (`ManagedBufferPointer` is a frozen struct of one
        // reference): cast, it hands its reference over without a retain and a release.
        return unsafeBitCast(consume storage, to: Instance.self)
    }

    /// The flags a new instance starts with; the first call starts the run's contention profile,
    /// if the environment asks for one.
    @inlinable static var _newInstanceFlags: UInt64 { _EngineStart.flags }

    /// Ends what waits and destroys what the instance holds; call once, from its `deinit`.
    @usableFromInline
    func tearDown() {
        if let side = _existingSide, let waitList = side.existingWaitList {
            // Nothing can reach the state any more, so no value will change: iterators of `values`
            // end. Work submitted with a condition can still wait: nobody is left to change the
            // state, so its condition will never hold. It must still hear back exactly once.
            waitList.endObservations()
            waitList.endAll()
            waitList.detach()  // a timer firing late may still reach the list, but not the words
        }
        if let side = _existingSide { Unmanaged.passUnretained(side).release() }
        _LockOrder.forget(_identity)
        Lock.destroy(_storage)
        // The storage's class must destroy what it holds (`ManagedBufferPointer`).
        _state.deinitialize(count: 1)
        _label.deinitialize(count: 1)
        _header.deinitialize(count: 1)
    }

    // MARK: - Where the engine keeps things

    /// The public instance.
    @inlinable var _instance: AnyObject { _object }

    /// The instance held, for work that outlives the call on it (a drain, a report), which makes
    /// its engine from it.
    var _held: _Held { _Held(instance: _object) }

    /// An instance held, which work that outlives a call on it carries.
    struct _Held: @unchecked Sendable {
        // @unchecked: the instance is an `Exclusive` or a `ReadersWriter`, made by `make`, whose
        // storage guards itself (see `_Engine`).
        let instance: AnyObject

        var engine: _Engine { _Engine(of: instance) }
    }

    /// What threads' records, the lock-order check and the contention profile know the instance by:
    /// its address.
    @inlinable var _identity: UnsafeRawPointer { UnsafeRawPointer(_base) }

    /// The instance's address, from which its storage is laid out.
    @inlinable var _base: UnsafeMutableRawPointer { Unmanaged.passUnretained(_object).toOpaque() }

    /// Where `ManagedBufferPointer` puts the header and the element in an object, which `make`
    /// checks: past the object's own header of two words, each at its alignment. Computed here so
    /// that a view of the storage needs no reference of its own (`ManagedBufferPointer` holds one,
    /// which every access would retain and release).
    @inlinable static var _headerOffset: Int {
        _roundUp(2 * MemoryLayout<UnsafeRawPointer>.size, to: Lock._headerLayout.alignment)
    }

    @inlinable static var _stateOffset: Int {
        _roundUp(_headerOffset + Lock._headerLayout.size, to: MemoryLayout<State>.alignment)
    }

    @inlinable static func _roundUp(_ offset: Int, to alignment: Int) -> Int {
        (offset + alignment - 1) & ~(alignment - 1)
    }

    @inlinable var _header: UnsafeMutablePointer<_EngineHeader<Lock.Storage>> {
        (_base + Self._headerOffset).assumingMemoryBound(to: _EngineHeader<Lock.Storage>.self)
    }

    /// The lock and the words, at the start of the header (checked when an instance is made).
    @inlinable var _storage: UnsafeMutablePointer<Lock.Storage> {
        (_base + Self._headerOffset).assumingMemoryBound(to: Lock.Storage.self)
    }

    /// The state, the storage's one element.
    @inlinable var _state: UnsafeMutablePointer<State> {
        (_base + Self._stateOffset).assumingMemoryBound(to: State.self)
    }

    /// The instance's lock.
    @inlinable var _lock: Lock { Lock(at: _storage) }

    /// What an access and a release look at besides the lock: at the start of the storage (checked
    /// when an instance is made), so that finding them asks nothing of the lock's type.
    @inlinable var _words: UnsafeMutablePointer<exclusion_engine_words> {
        (_base + Self._headerOffset).assumingMemoryBound(to: exclusion_engine_words.self)
    }

    @inlinable var _flags: UInt64 { exclusion_engine_flags(_words) }

    /// The label the instance was made with, in its room right after the words
    /// (`exclusion_label_room`), between them and the lock.
    var _label: UnsafeMutablePointer<String?> { Self._labelRoom(_base + Self._headerOffset) }

    /// The label's room in a header at `header`.
    @inlinable static func _labelRoom(_ header: UnsafeMutableRawPointer) -> UnsafeMutablePointer<String?> {
        (header + MemoryLayout<exclusion_engine_words>.size).assumingMemoryBound(to: String?.self)
    }

    /// Where the last watched access entered (`Checks/Engine+Watching.swift`), in its room right
    /// after the label's (`exclusion_entry_room`).
    var _entry: UnsafeMutablePointer<exclusion_entry_room> {
        (_base + Self._headerOffset + MemoryLayout<exclusion_engine_words>.size
            + MemoryLayout<exclusion_label_room>.size).assumingMemoryBound(to: exclusion_entry_room.self)
    }

    /// What a release has to do besides unlocking: the words' view.
    @inlinable var _releaseWork: _ReleaseWork { _ReleaseWork(_words) }

    /// The side structures, made now if they aren't yet; for a caller that holds the state, or
    /// knows no drain can let them go (tests).
    var _side: _EngineSide<State> { _existingSide ?? _makeSide() }

    /// The side structures, if something has needed them.
    var _existingSide: _EngineSide<State>? {
        // Not `Optional.map`, whose closure, in code not specialized for a state, would make the
        // runtime look up the side structures' generic type on every call.
        guard let side = exclusion_engine_side(_words) else { return nil }
        return Unmanaged<_EngineSide<State>>.fromOpaque(side).takeUnretainedValue()
    }

    /// Whether there are side structures now, looked at without touching them: a test's look,
    /// safe while a drain may let them go, where `_existingSide` would retain what is being freed.
    var _hasSide: Bool { exclusion_engine_side(_words) != nil }

    /// Makes the side structures if they aren't yet, and keeps them (`Engine+Side.swift`).
    func _makeSideIfNeeded() {
        _withKeptSide { _ in }
    }

    private func _makeSide() -> _EngineSide<State> {
        let made = _EngineSide<State>(words: _words)
        let retained = Unmanaged.passRetained(made)
        if exclusion_engine_publish_side(_words, retained.toOpaque()) != 0 { return made }
        retained.release()  // another thread's came first
        return _existingSide!
    }

    /// The backlog, retained: for tests. The engine's own paths call it through `_withSide`, since a
    /// retain and a release on every submission and batch fight over the side object's line.
    var _backlog: _Backlog<Plain> { _side.backlog }

    /// Runs `body` with the side structures, made now if they aren't yet, without retaining them:
    /// for a caller that holds the state, has announced itself or has kept them
    /// (`Engine+Side.swift`), so that they can't be let go meanwhile, and is a call on the
    /// instance, which holds them. What every submission, release or profiled wait does goes
    /// through here: a retain and a release of the side structures, which every thread of a busy
    /// instance would make, fight over one cache line.
    func _withSide<R>(_ body: (_EngineSide<State>) -> R) -> R {
        _withSide(at: _words, body)
    }

    /// `_withSide`, with the words found already: code not specialized for a state finds them
    /// through the lock's constants, a call each time.
    @inline(__always)
    func _withSide<R>(at words: UnsafeMutablePointer<exclusion_engine_words>, _ body: (_EngineSide<State>) -> R) -> R {
        guard let side = exclusion_engine_side(words) else { return body(_makeSide()) }
        return Unmanaged<_EngineSide<State>>.fromOpaque(side)._withUnsafeGuaranteedRef(body)
    }
    /// Runs `body` with the wait list, made now if it isn't yet, without retaining it or the side
    /// structures (`_withSide`): every step of a conditional wait goes through here, on the
    /// waiter's thread and on the releasing one.
    func _withWaitList<R>(_ body: (_WaitList<State>) -> R) -> R {
        _withKeptSide { $0.withWaitList(body) }
    }
    /// The wait list, retained: for what no busy instance does (tests, reports).
    var _waitList: _WaitList<State> { _withKeptSide { $0.waitList } }

    // MARK: - Names

    /// The name messages show: the one it was made with, or the default.
    @usableFromInline var label: String {
        _label.pointee ?? _typeName
    }

    /// The public type's full name, as messages show it: `Exclusive<Ledger>`.
    @usableFromInline var _typeName: String { "\(Lock.kind)<\(State.self)>" }

    /// Its type and label, as the lock-order check's messages show it: `Exclusive<Ledger> "bank ledger"`.
    var _lockOrderName: String { "\(_typeName) \"\(label)\"" }

    /// Whether the calling thread is inside an access of this instance right now.
    var isAccessing: Bool { _CurrentThread().mode(in: _identity) != nil }
}

/// What every new engine reads once per process: whether waits are watched, and the environment's
/// contention profile, started then.
@usableFromInline
enum _EngineStart {
    @usableFromInline static let flags: UInt64 = {
        _ = ContentionProfile.fromEnvironment
        return _StuckWait.threshold == nil ? 0 : _Flags.watched
    }()
}

/// What an instance keeps in its storage's header: its words, the room for its label and its lock,
/// in the order and at the distances the C struct `Storage` lays out (`exclusion_exclusive_storage`).
@usableFromInline
struct _EngineHeader<Storage> {
    @usableFromInline var storage: Storage

    @inlinable init(storage: Storage) {
        self.storage = storage
    }
}

/// Lets a public type's initializer be the instance `_Engine.make` made, which a class initializer
/// can't be on its own: in a protocol extension an initializer may assign `self`.
@usableFromInline
protocol _MadeByEngine {}

extension _MadeByEngine {
    @inlinable init(_made instance: Self) {
        self = instance
    }
}

/// What the nested check, the lock-order check and a schedule explorer ask of an instance they
/// know by its address (as `any _EngineInstance`): `Exclusive` and `ReadersWriter` answer with
/// their engines.
protocol _EngineInstance: AnyObject {
    associatedtype EngineState
    associatedtype EngineLock: _EngineLock
    var _engine: _Engine<EngineState, EngineLock> { get }
}

extension _EngineInstance {
    var _lockOrderName: String { _engine._lockOrderName }
    var _scheduledInstance: ScheduledInstance { _engine._scheduledInstance }

    func _scheduledAccess(
        _ thread: _CurrentThread, _ way: _AccessWay, shared: Bool, timed: Bool, _ name: String, at site: _Site
    ) -> Bool {
        _engine._scheduledAccess(thread, way, shared: shared, timed: timed, name, at: site)
    }

    func _stopReentrantAccess(attempting attempted: String, holding mode: _CurrentThread.Mode) -> Never {
        _engine._stopReentrantAccess(attempting: attempted, holding: mode)
    }
}

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
        if thread.isInsideAny {
            _checkNested(_identity, thread, .waiting, shared: shared, attempting: attempted, at: _Site(file, line))
        }
    }

    /// `checkNesting` before a wait for the lock that gives up at `limit`, if there is one: a schedule
    /// explorer may have it give up while another access holds the state, as it would if the limit
    /// passed first, and then it throws `TimeoutError` here.
    @inlinable @inline(__always)
    func checkNesting(
        _ thread: _CurrentThread, attempting attempted: String, limit: _TimeLimit?, file: StaticString, line: UInt
    ) throws(TimeoutError) {
        if thread.isInsideAny,
            _checkNested(
                _identity, thread, .waiting, shared: false, timed: limit != nil, attempting: attempted,
                at: _Site(file, line)),
            let limit
        {
            throw _givenUp(limit)
        }
    }

    /// The error of a timed access that a schedule explorer had give up.
    @usableFromInline
    func _givenUp(_ limit: _TimeLimit) -> TimeoutError {
        limit.error(on: label, waitingFor: .stateHeld)
    }

    /// Before an access that never waits for the lock (it suspends, gives up or submits instead):
    /// stops on re-entrancy, where an access would deadlock. One comparison when the thread is
    /// inside no instance.
    @inlinable @inline(__always)
    func checkBeforeNotWaiting(
        _ thread: _CurrentThread, _ way: _AccessWay, shared: Bool, attempting attempted: String,
        at site: _Site = .none
    ) {
        if thread.isInsideAny { _checkNested(_identity, thread, way, shared: shared, attempting: attempted, at: site) }
    }

    /// Stops the process: this thread, inside this instance in `mode`, attempted another access
    /// that would wait for itself.
    func _stopReentrantAccess(attempting attempted: String, holding mode: _CurrentThread.Mode) -> Never {
        _reentrantAccess(type: _typeName, label: label, attempted: attempted, holding: Lock.describe(mode))
    }
}

/// The checks of an access that begins while its thread is inside an instance (or runs under a
/// schedule explorer), out of line: the seam first, then re-entrancy for an access that would wait
/// for itself, then the lock order for one that waits for the lock. Returns true if the explorer
/// has a timed access (`timed`) give up.
///
/// Not generic, and given the instance's address instead of its engine: a generic function takes
/// the state's and the lock's types as arguments, pushed on the stack, and the lock's `lock
/// cmpxchg` right after waits for those stores (Benchmarks/README.md, "Issue 44"). What needs the
/// types (a message, the seam) asks the instance (`_EngineInstance`).
@usableFromInline @discardableResult
func _checkNested(
    _ instance: UnsafeRawPointer, _ thread: _CurrentThread, _ way: _AccessWay, shared: Bool, timed: Bool = false,
    attempting attempted: String, at site: _Site
) -> Bool {
    if thread._isScheduled {  // schedule seam
        return _engineInstance(at: instance)._scheduledAccess(
            thread, way, shared: shared, timed: timed, attempted, at: site)
    }
    // Submitting to the instance it is inside waits for nothing: the work runs after.
    guard way != .submitting else { return false }
    if let mode = thread.mode(in: instance) {
        _engineInstance(at: instance)._stopReentrantAccess(attempting: attempted, holding: mode)
    }
    if way == .waiting {
        _LockOrder.willAcquire(
            instance, named: { _engineInstance(at: instance)._lockOrderName }, holding: thread, at: site)
    }
    return false
}

/// The instance at `address`, which a caller inside one of its accesses keeps alive. Every engine
/// is made for an `Exclusive` or a `ReadersWriter` (`make`), so the cast holds; only a test's
/// stand-in object could fail it, and none nests accesses.
func _engineInstance(at address: UnsafeRawPointer) -> any _EngineInstance {
    Unmanaged<AnyObject>.fromOpaque(address).takeUnretainedValue() as! any _EngineInstance
}
