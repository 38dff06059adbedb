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
/// This file is what every access reads, in the order it reads it: the engine, the thread's
/// record, the checks before an access, taking and releasing the state, the one wait for the lock,
/// backing off for a granted waiter, and the words an access and a release read. `Internal/README.md`
/// follows one access through the engine, step by step, for each way it can go: uncontended,
/// contended, timed, awaited, profiled and explored.
///
/// **One object.** Users make an instance per object they share, so an instance costs what a lock
/// does: one allocation, the public object itself. `Exclusive` and `ReadersWriter` declare no
/// stored property; they are made by `make` with tail-allocated storage (`ManagedBufferPointer`
/// over their class) that holds, as its header, the lock and the instance's words (`Lock.Storage`)
/// and the label if one was given, and the state as its one element. The engine is a view of that
/// storage. What only some instances need (the backlog of submitted work, the wait list, a
/// profile's notes, where a watched access entered) is in side structures (`_EngineSide`), made
/// the first time something needs them. The storage never moves while the instance lives, so the
/// engine hands out its addresses, to the lock and to the accessors' closures.
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
            _EngineHeader(storage: Lock.unprepared, label: label)
        }
        storage.withUnsafeMutablePointers { header, state in
            let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(storage.buffer).toOpaque())
            assert(
                UnsafeMutableRawPointer(header) == base + _headerOffset
                    && UnsafeMutableRawPointer(state) == base + _stateOffset)
            assert(MemoryLayout<_EngineHeader<Lock.Storage>>.offset(of: \.storage) == 0)
            Lock.prepare(
                UnsafeMutableRawPointer(header).assumingMemoryBound(to: Lock.Storage.self), flags: _newInstanceFlags)
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
        if let side = _existingSide {
            // Nothing can reach the state any more, so no value will change: iterators of `values`
            // end. Work submitted with a condition can still wait: nobody is left to change the
            // state, so its condition will never hold. It must still hear back exactly once.
            side.waitList.endObservations()
            side.waitList.endAll()
            side.waitList.detach()  // a timer firing late may still reach the list, but not the words
            Unmanaged.passUnretained(side).release()
        }
        _LockOrder.forget(_identity)
        Lock.destroy(_storage)
        // The storage's class must destroy what it holds (`ManagedBufferPointer`).
        _state.deinitialize(count: 1)
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
        _roundUp(2 * MemoryLayout<UnsafeRawPointer>.size, to: MemoryLayout<_EngineHeader<Lock.Storage>>.alignment)
    }

    @inlinable static var _stateOffset: Int {
        _roundUp(_headerOffset + MemoryLayout<_EngineHeader<Lock.Storage>>.size, to: MemoryLayout<State>.alignment)
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

    /// What an access and a release look at besides the lock.
    @inlinable var _words: UnsafeMutablePointer<exclusion_engine_words> { Lock.words(_storage) }

    @inlinable var _flags: UInt64 { exclusion_engine_flags(_words) }

    /// What a release has to do besides unlocking: the words' view.
    @inlinable var _releaseWork: _ReleaseWork { _ReleaseWork(_words) }

    /// The side structures, made now if they aren't yet.
    var _side: _EngineSide<State> { _existingSide ?? _makeSide() }

    /// The side structures, if something has needed them.
    var _existingSide: _EngineSide<State>? {
        exclusion_engine_side(_words).map { Unmanaged<_EngineSide<State>>.fromOpaque($0).takeUnretainedValue() }
    }

    private func _makeSide() -> _EngineSide<State> {
        let made = _EngineSide<State>(words: _words)
        let retained = Unmanaged.passRetained(made)
        if exclusion_engine_publish_side(_words, retained.toOpaque()) != 0 { return made }
        retained.release()  // another thread's came first
        return _existingSide!
    }

    var _backlog: _Backlog<Plain> { _side.backlog }
    var _waitList: _WaitList<State> { _side.waitList }

    // MARK: - Names

    /// The name messages show: the one it was made with, or the default.
    @usableFromInline var label: String {
        _header.pointee.label ?? _typeName
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

/// What an instance keeps in its storage's header: its lock and words, then the label it was given.
@usableFromInline
struct _EngineHeader<Storage> {
    @usableFromInline var storage: Storage
    @usableFromInline var label: String?

    @inlinable init(storage: Storage, label: String?) {
        self.storage = storage
        self.label = label
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

/// What the lock-order check and a schedule explorer ask of an instance they find in a thread's
/// record, by its address: `Exclusive` and `ReadersWriter` answer for their engines.
protocol _EngineInstance: AnyObject {
    var _lockOrderName: String { get }
    var _scheduledInstance: ScheduledInstance { get }
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
        _LockOrder.willAcquire(_identity, named: { _lockOrderName }, holding: thread, file: file, line: line)
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
        guard let mode = thread.mode(in: _identity) else { return }
        _reentrantAccess(type: _typeName, label: label, attempted: attempted, holding: Lock.describe(mode))
    }
}

// MARK: - The thread's record

/// The calling thread as Exclusion tracks it: which instances it is inside right now.
///
/// This is what turns a re-entrant access, which would deadlock or corrupt state, into a clear
/// stop. It is plain thread-local memory, so asking costs a few instructions.
@usableFromInline
struct _CurrentThread {
    /// How a thread is inside an instance.
    @usableFromInline
    enum Mode: Int32 {
        case exclusive = 0
        case shared = 1
    }

    @usableFromInline let _record: UnsafeMutablePointer<exclusion_thread_record>

    @inlinable @inline(__always)
    init() {
        _record = exclusion_current_thread()
    }

    /// How this thread is inside an access of the instance at `instance`, or nil if it is not.
    @inlinable @inline(__always)
    func mode(in instance: UnsafeRawPointer) -> Mode? {
        let held = exclusion_thread_holds(_record, instance)
        return held == 0 ? nil : Mode(rawValue: held - 1)
    }

    /// Call right after this thread gained access to the instance at `instance`.
    @inlinable @inline(__always)
    func enter(_ instance: UnsafeRawPointer, _ mode: Mode) {
        exclusion_thread_enter(_record, instance, mode.rawValue)
    }

    /// Call right before this thread gives up the access it entered last.
    @inlinable @inline(__always)
    func leave() {
        exclusion_thread_leave(_record)
    }

    /// Whether this thread is inside any instance at all.
    @inlinable @inline(__always)
    var isInsideAny: Bool { _record.pointee.depth > 0 }

    /// How many instances this thread is inside.
    var depth: UInt32 { _record.pointee.depth }

    /// The instance this thread entered at `level`, 0 being the outermost; nil past the tracked depth.
    func held(at level: UInt32) -> UnsafeRawPointer? { exclusion_thread_held_at(_record, level) }

    /// A number that tells this thread apart from every other thread alive.
    @inlinable var index: UInt32 { _record.pointee.index }
}

// MARK: - Taking and releasing the state

extension _Engine {
    /// Takes the state exclusively, on this thread, and runs everything submitted earlier; returns
    /// the outbox for the rest of the access. Pair with `releaseExclusively`; the caller's body runs
    /// in between (the public types call it, because only they know whether their bodies take the
    /// state as `sending`).
    ///
    /// `profiled` is false for the engine's own drains: a profile counts the work they run where
    /// it waited (an awaited access as a task's wait), not the drain's own wait for the lock.
    @inlinable @inline(__always)
    func takeExclusively(
        _ thread: _CurrentThread, file: StaticString = "(asynchronous work)", line: UInt = 0,
        notingEntry: Bool = true, profiled: Bool = true
    ) -> Outbox {
        if !_lock.lockExclusiveIfFree() {
            _ = _waitExclusively(before: nil, file: file, line: line, observers: profiled ? .access : .watch)
        }
        if _flags & (_Flags.watched | _Flags.reserved) != 0 {
            _enteringWatchedOrReserved(file: file, line: line, notingEntry: notingEntry)
        }
        return _enteredExclusively(thread)
    }

    /// Past the lock, where waits are watched or the state is promised to a granted waiter: notes
    /// where this access entered, and lets go until the grantee has run.
    @usableFromInline @inline(never)
    func _enteringWatchedOrReserved(file: StaticString, line: UInt, notingEntry: Bool) {
        if _watchesWaits, notingEntry { _noteEntry(file: file, line: line) }
        if _releaseWork.isReserved { _ = _backOffForGrantee(before: nil) }
    }

    /// Whether blocking waits on this instance are watched and reported (`_StuckWait`); decided
    /// when it is made.
    @inlinable var _watchesWaits: Bool { _flags & _Flags.watched != 0 }

    /// Takes the state exclusively by `deadline` (as long as it takes if nil), and runs everything
    /// submitted earlier; nil, not holding it, if the deadline passed first. The entry isn't
    /// noted: a conditional access notes it once its condition holds.
    @usableFromInline
    func takeExclusively(
        _ thread: _CurrentThread, before deadline: _Deadline?, file: StaticString, line: UInt
    ) -> Outbox? {
        guard let deadline else { return takeExclusively(thread, file: file, line: line, notingEntry: false) }
        guard _lock.tryLockExclusive() || _waitExclusively(before: deadline, file: file, line: line, observers: .access)
        else { return nil }
        if _releaseWork.isReserved, !_backOffForGrantee(before: deadline) { return nil }
        return _enteredExclusively(thread)
    }

    /// Takes the state exclusively once `condition` holds, blocking the thread until then, and
    /// returns the outbox for the access. Throws `TimeoutError` past `limit`, not holding it,
    /// whatever it was waiting for: the lock, a granted waiter, or the condition.
    @inlinable
    func waitExclusively(
        _ thread: _CurrentThread, until condition: @Sendable (State) -> Bool, limit: _TimeLimit?,
        file: StaticString, line: UInt
    ) throws(TimeoutError) -> Outbox {
        // The entry is noted once the condition holds: until then, this access holds nothing.
        let held: Outbox?
        if let limit {
            held = takeExclusively(thread, before: limit.deadline, file: file, line: line)
        } else {
            held = takeExclusively(thread, file: file, line: line, notingEntry: false)
        }
        guard let outbox = held else { throw limit!.error(on: label, waitingFor: .stateHeld) }
        if condition(_state.pointee) {
            if _watchesWaits { _noteEntry(file: file, line: line) }
            return outbox
        }
        return try _waitForCondition(thread, until: condition, limit: limit, file: file, line: line, outbox)
    }

    /// Takes the state exclusively if that needs no waiting, and runs what was submitted earlier;
    /// nil if another access holds it or it is promised to a waiter.
    @inlinable @inline(__always)
    func tryTakeExclusively(_ thread: _CurrentThread) -> Outbox? {
        guard _lock.tryLockExclusive() else { return nil }
        if _releaseWork.isReserved {
            _lock.unlockExclusive()
            return nil
        }
        return _enteredExclusively(thread)
    }

    /// Gives up exclusive access, then hands out what the accesses delivered, in the order they ran.
    /// `file` and `line` are the access's call site, which a contention profile notes when others
    /// wait for this release.
    @inlinable @inline(__always)
    func releaseExclusively(
        _ thread: _CurrentThread, _ deliveries: borrowing Outbox, file: StaticString = "", line: UInt = 0
    ) {
        if _releaseWork.isDue {
            _releaseWhenDue(thread, deliveries, file: file, line: line)
        } else {
            _leaveAndUnlock(thread, deliveries)
        }
    }

    /// A release with something to do. When all it has to do is note its call site for a profiled
    /// waiter, it does that and lets go as a release with nothing to do would, specialized and
    /// inlined: a holder may let go many times while one waiter sleeps.
    @inlinable @inline(__always)
    func _releaseWhenDue(
        _ thread: _CurrentThread, _ deliveries: borrowing Outbox, file: StaticString, line: UInt
    ) {
        if _releaseWork.onlyProfiledWaiters {
            _noteHolder(file: file, line: line)
            _leaveAndUnlock(thread, deliveries)
        } else {
            _serveWaitersAndUnlock(thread, copy deliveries, file: file, line: line)
        }
    }

    /// The end of every exclusive access: this thread leaves, the lock is released, and what the
    /// access delivered is handed out.
    @inlinable @inline(__always)
    func _leaveAndUnlock(_ thread: _CurrentThread, _ deliveries: borrowing Outbox) {
        thread.leave()
        if deliveries.isEmpty {
            _lock.unlockExclusive()
        } else {
            _releaseExclusiveDelivering(copy deliveries)
        }
    }

    /// Runs `body` with the state held shared, alongside other shared accesses, on this thread.
    ///
    /// If anything submitted earlier is waiting, it goes first, and it may need the state
    /// exclusively: then the whole lot, `body` included, runs under exclusive access.
    @inlinable @inline(__always)
    func shared<R, E: Error>(
        _ thread: _CurrentThread, file: StaticString, line: UInt, _ body: (State) throws(E) -> R
    ) throws(E) -> R {
        if _releaseWork.hasJobs {
            let outbox = takeExclusively(thread, file: file, line: line)
            defer { releaseExclusively(thread, outbox, file: file, line: line) }
            return try body(_state.pointee)
        }
        // The lock's quick path first, exactly as an unwatched shared access takes it; watching
        // only slows down one that has to wait anyway.
        let ticket =
            _lock.lockSharedQuickly(thread: thread.index) ?? _takeSharedContended(thread, file: file, line: line)
        return try _runShared(thread, holding: ticket, body)
    }

    /// A shared access's wait for the lock, once its quick path failed; its entry is noted if
    /// waits are watched.
    @usableFromInline @inline(never)
    func _takeSharedContended(_ thread: _CurrentThread, file: StaticString, line: UInt) -> Lock.SharedTicket {
        // Without a deadline the wait ends only with the lock.
        let ticket = _waitShared(thread, before: nil, file: file, line: line)!
        if _watchesWaits { _noteEntry(file: file, line: line) }
        return ticket
    }

    /// Runs `body` on the state, which this thread holds shared with `ticket`, then lets go of it.
    @inlinable @inline(__always)
    func _runShared<R, E: Error>(
        _ thread: _CurrentThread, holding ticket: Lock.SharedTicket, _ body: (State) throws(E) -> R
    ) throws(E) -> R {
        thread.enter(_identity, .shared)
        defer {
            thread.leave()
            _lock.unlockShared(ticket)
        }
        return try body(_state.pointee)
    }

    /// Call right after taking the lock exclusively: marks the thread as inside, then runs whatever
    /// was submitted earlier, so it goes first. Returns the outbox for the rest of the access.
    @inlinable @inline(__always)
    func _enteredExclusively(_ thread: _CurrentThread) -> Outbox {
        thread.enter(_identity, .exclusive)
        var outbox = Outbox()
        if _releaseWork.hasJobs {
            _runJobs(&outbox)
        }
        return outbox
    }

    /// Runs everything submitted so far, with the state held exclusively.
    @usableFromInline @inline(never)
    func _runJobs(_ outbox: inout Outbox) {
        _backlog.runAll(&outbox, apply: _apply)
    }

    /// Applies a plain asynchronous body; call with the state held exclusively.
    @usableFromInline
    func _apply(_ body: Plain) {
        body(&_state.pointee)
    }

    /// The release after an exclusive access while accesses wait for conditions: checks them
    /// first, with the state still held.
    @usableFromInline
    func _serveWaitersAndUnlock(
        _ thread: _CurrentThread, _ deliveries: consuming Outbox, skipping joiner: _WaiterID? = nil,
        file: StaticString = "", line: UInt = 0
    ) {
        let pending = _takePendingWait()
        if _releaseWork.hasProfiledWaiters { _noteHolder(file: file, line: line) }
        var deliveries = deliveries
        var woken: _Wakeup?
        serving: while _releaseWork.hasSleepers {
            switch _waitList.nextReady(_state, mayWake: woken == nil, skipping: joiner) {
            case .nothing:
                break serving
            case .run(let run):
                run(_state, &deliveries)
            case .wake(let sleeper, let granted):
                woken = sleeper
                if granted { break serving }  // promised: nothing else may change the state first
            }
        }
        _leaveAndUnlock(thread, deliveries)
        woken?.wake()
        if let pending { _record(pending) }
    }

    @usableFromInline
    func _releaseExclusiveDelivering(_ deliveries: consuming Outbox) {
        _backlog.release(handingOut: deliveries) { _lock.unlockExclusive() }
    }

    func _releaseShared(_ ticket: Lock.SharedTicket, _ deliveries: consuming Outbox) {
        if deliveries.isEmpty {
            _lock.unlockShared(ticket)
        } else {
            _backlog.release(handingOut: deliveries) { _lock.unlockShared(ticket) }
        }
    }
}

// MARK: - Waiting for the lock

/// Who may observe a wait for an instance's lock: the stuck-wait report (`Checks/`) and the
/// contention profile (`Profiling/`). Each is asked once per wait whether it is on.
@usableFromInline
struct _WaitObservers: OptionSet, Sendable {
    @usableFromInline let rawValue: UInt8
    @inlinable init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Reported once, if it lasts past the stuck-wait threshold.
    @usableFromInline static var watch: Self { Self(rawValue: 1) }
    /// Timed and recorded, while a contention profile runs.
    @usableFromInline static var profile: Self { Self(rawValue: 2) }
    /// What an access's own wait has: both.
    @usableFromInline static var access: Self { [.watch, .profile] }
}

extension _Engine {
    /// The one way an access waits for the lock once its quick path failed, exclusively: spins
    /// once (in the lock), then sleeps until `deadline` (for ever if nil), watched and profiled as
    /// `observers` allow. False, holding nothing, if the deadline passed first. The caller backs
    /// off for a granted waiter afterwards, if the state is promised to one.
    @usableFromInline @inline(never)
    func _waitExclusively(
        before deadline: _Deadline?, file: StaticString, line: UInt, observers: _WaitObservers
    ) -> Bool {
        _waitForLock(
            exclusively: true, before: deadline, file: file, line: line, observers: observers,
            spin: { _lock.spinExclusive() ? () : nil },
            sleep: { _lock.sleepExclusive(until: $0) ? () : nil }) != nil
    }

    /// `_waitExclusively` for shared access: a ticket, or nil once `deadline` passed.
    @usableFromInline @inline(never)
    func _waitShared(
        _ thread: _CurrentThread, before deadline: _Deadline?, file: StaticString, line: UInt,
        observers: _WaitObservers = .access
    ) -> Lock.SharedTicket? {
        _waitForLock(
            exclusively: false, before: deadline, file: file, line: line, observers: observers,
            spin: { _lock.spinShared(thread: thread.index) },
            sleep: { _lock.sleepShared(thread: thread.index, until: $0) })
    }

    /// The wait itself, in its steps.
    private func _waitForLock<Held>(
        exclusively: Bool, before deadline: _Deadline?, file: StaticString, line: UInt,
        observers: _WaitObservers, spin: () -> Held?, sleep: (_Deadline?) -> Held?
    ) -> Held? {
        // 1. The spin: a wait that ends in it is too short to report or to be worth timing.
        if let held = spin() { return held }

        // 2. Who observes this wait: asked once (`_observeWait`).
        let observed = _observeWait(exclusively ? .exclusiveLock : .sharedLock, at: _Site(file, line), observers)
        let watched = observed.watched
        let profiled = observed.isProfiled ? _lockWaitBegins(at: _Site(file, line)) : nil

        // 3. The sleep, until the deadline (for ever if there is none).
        let held = sleep(deadline)

        // 4. The end, with the lock or without it.
        watched?.end()
        if let profiled {
            _profiledLockWaitEnds(at: _Site(file, line), since: profiled, took: held != nil, exclusively: exclusively)
        }
        return held
    }
}

// MARK: - Who observes a wait

/// A wait an access makes, as the observers of waits tell them apart.
enum _ObservedWait {
    /// A thread's wait for the lock.
    case exclusiveLock, sharedLock
    /// A thread's wait for its condition to hold.
    case condition
    /// A task's wait for its turn at the state, or for its condition.
    case suspendedTask

    /// What the stuck-wait report says the thread waits for, if it is a thread's wait.
    var stuckWaitReport: String? {
        switch self {
        case .exclusiveLock: "to take"
        case .sharedLock: "to read"
        case .condition: "for its condition to hold, on"
        case .suspendedTask: nil  // a task that waits blocks no thread
        }
    }
}

/// Who observes one wait: the stuck-wait watch, if it watches it, and whether a contention profile
/// times it.
struct _WaitObservation {
    var watched: _WatchedWait?
    var isProfiled = false
}

extension _Engine {
    /// Who observes a wait that begins now at `site`, among `observers`: the one place every wait
    /// an access makes (for the lock, for a condition, for a task's turn) asks the stuck-wait watch
    /// (`Checks/`), which reports a thread's wait that lasts too long from a timer of its own, so
    /// that the wait sleeps as an unwatched one does, and a contention profile (`Profiling/`), which
    /// the caller then tells of the wait, as its kind requires. End the watch when the wait ends.
    func _observeWait(_ wait: _ObservedWait, at site: _Site, _ observers: _WaitObservers) -> _WaitObservation {
        var observation = _WaitObservation()
        if observers.contains(.watch), _watchesWaits, let waitingFor = wait.stuckWaitReport {
            observation.watched = _watchWait(waitingFor: waitingFor, at: site)
        }
        observation.isProfiled = observers.contains(.profile) && _Contention.isOn
        return observation
    }
}

// MARK: - Backing off for a granted waiter

extension _Engine {
    /// Called with the lock just taken while the state is promised to a granted waiter: lets go
    /// until that waiter has run, then takes the lock again. The waiter was woken already, so this
    /// lasts a thread wake-up; meanwhile this thread lends the waiter its priority where locks
    /// lend priority (`lendPriorityToGrantee`). Returns false, not holding the lock, if `deadline`
    /// passed first.
    @usableFromInline
    func _backOffForGrantee(before deadline: _Deadline?) -> Bool {
        repeat {
            let ended = _waitList.grantToWaitFor()
            let loan = EXCLUSION_OWNED_LOCK != 0 && ended != nil ? _waitList.lendPriorityToGrantee() : nil
            // Waited for without the lock, so that the grantee finds the lock free.
            _lock.unlockExclusive()
            if let ended {
                let changed = exclusion_wait_for_change(_waitList._grantsWord, ended, deadline?.nanoseconds ?? 0)
                exclusion_end_loan(loan)
                guard changed != 0 else { return false }
            }
            guard _lock.tryLockExclusive() || _waitExclusively(before: deadline, file: "", line: 0, observers: [])
            else { return false }
        } while _releaseWork.isReserved
        return true
    }
}

// MARK: - What an access looks at besides the lock

/// The bits of an instance's flags (`exclusion_engine_words`), which an access reads once it holds
/// the lock and a release reads before it lets go, one load each:
///
/// - bits 0 to 23 count the wait list's sleepers, whose conditions a release checks;
/// - `jobs`: the backlog holds submitted work, which an access runs first;
/// - `reserved`: the state is promised to a granted waiter, which an access backs off for;
/// - `watched`: waits on this instance are watched (`Checks/`), so an access notes where it
///   entered, for the report;
/// - `pendingWait` and, from bit 32, the count of a contention profile's waiters for the lock, who
///   want the releaser's call site (the holder they waited for); `pendingWait` says that the
///   access holding the state waited while profiled, and its wait is to be recorded once it lets
///   go (`Profiling/`).
@usableFromInline
enum _Flags {
    @usableFromInline static var sleepers: UInt64 { (1 << 24) - 1 }
    @usableFromInline static var jobs: UInt64 { 1 << 24 }
    @usableFromInline static var reserved: UInt64 { 1 << 25 }
    @usableFromInline static var watched: UInt64 { 1 << 26 }
    @usableFromInline static var pendingWait: UInt64 { 1 << 27 }
    @usableFromInline static var profiledWaiter: UInt64 { 1 << 32 }
    @usableFromInline static var profiledWaiters: UInt64 { ~(profiledWaiter - 1) }

    /// What an access that has just taken the lock must do something about.
    @usableFromInline static var onEntry: UInt64 { jobs | reserved | watched }
    /// What a release must do something about.
    @usableFromInline static var onRelease: UInt64 { sleepers | pendingWait | profiledWaiters }
}

/// What an exclusive access has to look at besides the lock, in the instance's words: whether the
/// state is promised to a granted waiter (read once the lock is taken), and what its release has
/// to do besides giving the lock back (`_Flags`). The wait list changes the sleepers' count and
/// the grant (`_WaitList._mutate`); a profile its own bits (`Profiling/`).
@usableFromInline
struct _ReleaseWork: @unchecked Sendable {
    // @unchecked: the words are only touched through their atomic functions.

    @usableFromInline let words: UnsafeMutablePointer<exclusion_engine_words>

    @inlinable init(_ words: UnsafeMutablePointer<exclusion_engine_words>) {
        self.words = words
    }

    @inlinable var flags: UInt64 { exclusion_engine_flags(words) }

    /// Whether the state is promised to a granted thread; read with the state held exclusively.
    @inlinable var isReserved: Bool { flags & _Flags.reserved != 0 }

    /// Whether the release has anything to do; exact for sleepers with the state held exclusively
    /// (a waiter only starts sleeping with it held).
    @inlinable var isDue: Bool { flags & _Flags.onRelease != 0 }

    // MARK: - The wait list's sleepers and grant

    var sleepers: Int { Int(exclusion_engine_flags_ordered(words) & _Flags.sleepers) }
    var hasSleepers: Bool { flags & _Flags.sleepers != 0 }
    func sleepersArrive(_ count: Int) { exclusion_engine_flags_add(words, UInt64(count)) }
    func sleepersLeave(_ count: Int) { exclusion_engine_flags_subtract(words, UInt64(count)) }

    /// Whether the state is promised, ordered with the grant's end (`_WaitList.grantToWaitFor`).
    var isReservedOrdered: Bool { exclusion_engine_flags_ordered(words) & _Flags.reserved != 0 }
    func reserve() { exclusion_engine_flags_set(words, _Flags.reserved) }
    /// Ends the promise, ordered before the grant's end is counted.
    func endReservation() { exclusion_engine_flags_clear(words, _Flags.reserved) }

    // MARK: - The backlog's jobs

    /// Whether the backlog holds jobs. A thread always sees the jobs it submitted itself: only a
    /// consumer clears this, and a consumer holds the state until it has run what it took.
    @inlinable var hasJobs: Bool { flags & _Flags.jobs != 0 }
    func jobsArrive() { if !hasJobs { exclusion_engine_flags_set(words, _Flags.jobs) } }
    func jobsTaken() { exclusion_engine_flags_clear(words, _Flags.jobs) }
}
