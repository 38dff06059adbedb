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
/// backing off for a granted waiter, and the word a release reads. `Internal/README.md` follows
/// one access through the engine, step by step, for each way it can go: uncontended, contended,
/// timed, awaited, profiled and explored.
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

    /// How this thread is inside an access of `instance`, or nil if it is not.
    @inlinable @inline(__always)
    func mode(in instance: AnyObject) -> Mode? {
        let held = exclusion_thread_holds(_record, Unmanaged.passUnretained(instance).toOpaque())
        return held == 0 ? nil : Mode(rawValue: held - 1)
    }

    /// Call right after this thread gained access to `instance`.
    @inlinable @inline(__always)
    func enter(_ instance: AnyObject, _ mode: Mode) {
        exclusion_thread_enter(_record, Unmanaged.passUnretained(instance).toOpaque(), mode.rawValue)
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
        if _watchesWaits, notingEntry { _noteEntry(file: file, line: line) }
        if _releaseWork.isReserved { _ = _backOffForGrantee(before: nil) }
        return _enteredExclusively(thread)
    }

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
            _releaseWork.noteHolder(file: file, line: line)
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
        if _backlog.hasPending {
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
        thread.enter(self, .shared)
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
        thread.enter(self, .exclusive)
        var outbox = Outbox()
        if _backlog.hasPending {
            _backlog.runAll(&outbox, apply: _apply)
        }
        return outbox
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
        let pending = _releaseWork.takePendingWait()
        if _releaseWork.hasProfiledWaiters { _releaseWork.noteHolder(file: file, line: line) }
        var deliveries = deliveries
        var woken: DispatchSemaphore?
        serving: while _releaseWork.hasSleepers {
            switch _waitList.nextReady(_state, mayWake: woken == nil, skipping: joiner) {
            case .nothing:
                break serving
            case .run(let run):
                run(_state, &deliveries)
            case .wake(let semaphore, let granted):
                woken = semaphore
                if granted { break serving }  // promised: nothing else may change the state first
            }
        }
        _leaveAndUnlock(thread, deliveries)
        woken?.signal()
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

        // 2. Who observes this wait: asked here, once. The watch reports it if it lasts too long
        // (`Checks/`), from a timer of its own, so that the sleep is the same whether it watches or
        // not; the profile times it and counts it in (`Profiling/`).
        let watched =
            observers.contains(.watch) && _watchesWaits
            ? _watchWait(waitingFor: exclusively ? "to take" : "to read", file: file, line: line) : nil
        let profiled = observers.contains(.profile) && _Contention.isOn ? _lockWaitBegins(at: _Site(file, line)) : nil

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

/// What an exclusive access has to look at besides the lock: whether the state is promised to a
/// granted waiter (read once the lock is taken), and what its release has to do besides giving
/// the lock back, in one word that every release reads, so that a release with nothing to do
/// pays one load:
///
/// - the low 32 bits count the wait list's sleepers, whose conditions the release checks;
/// - from bit 32, a contention profile's waiters for the lock, who want the releaser's call site
///   (the holder they waited for);
/// - bit 62 says that the access holding the state waited while profiled, and its wait is to be
///   recorded once the state is released.
///
/// One object per instance, apart from the engine, so that waiters changing the word don't take
/// away the cache line that every access of the instance reads; the wait list publishes both here
/// (`_WaitList._mutate`).
@usableFromInline
final class _ReleaseWork: @unchecked Sendable {
    // @unchecked: `profile` is only touched with the instance's state held exclusively (its
    // holder read with it held shared too); the word and the flag are atomic.

    @usableFromInline let word = Atomic<Int>(0)
    /// Whether the state is promised to a granted thread. Set with the state held exclusively, so
    /// a thread holding it reads it right; cleared when the grantee takes the state up, or leaves.
    @usableFromInline let reserved = Atomic<Bool>(false)
    /// A contention profile's notes on this instance's waits (`Profiling/`).
    var profile = _ProfileNotes()

    /// The word's layout. The bits from 32 up are the profile's (`Profiling/`).
    @usableFromInline static var profiledWaiter: Int { 1 << 32 }
    @usableFromInline static var pendingFlag: Int { 1 << 62 }

    init() {}

    /// Whether the state is promised to a granted thread; read with the state held exclusively.
    @inlinable var isReserved: Bool { reserved.load(ordering: .relaxed) }

    /// Whether the release has anything to do; exact for sleepers with the state held exclusively
    /// (a waiter only starts sleeping with it held).
    @inlinable var isDue: Bool { word.load(ordering: .relaxed) != 0 }

    // MARK: - The wait list's sleepers

    var sleepers: Int { word.load(ordering: .sequentiallyConsistent) & (Self.profiledWaiter - 1) }
    var hasSleepers: Bool { word.load(ordering: .relaxed) & (Self.profiledWaiter - 1) != 0 }
    func sleepersArrive(_ count: Int) { word.add(count, ordering: .relaxed) }
    func sleepersLeave(_ count: Int) { word.subtract(count, ordering: .relaxed) }
}
