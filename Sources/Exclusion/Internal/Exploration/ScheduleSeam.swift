import ExclusionShims

// The seam through which a schedule explorer (`ScheduleExplorer`, in ExclusionTesting) takes over
// the threads it runs: everything the engine knows of it is in this file, and the engine calls it
// from five places, each marked `// schedule seam`:
//
// 1. `_checkNested` (Engine.swift), from `checkNesting`: every synchronous access begins there,
//    before it takes the lock: `access`, `read`, `write`, their timed and conditional forms. The
//    form for an access with a time limit throws its `TimeoutError` if the explorer has it give up.
// 2. `_checkNested` too, from `checkBeforeNotWaiting`: every access that never waits for the lock
//    begins there: awaited accesses (plain, timed, conditional, a `values` iterator's),
//    `...IfAvailable` accesses, and work submitted (`accessAsync`, `readAsync`, `writeAsync`, their
//    conditional forms).
// 3. `_waitForCondition` (Engine+Conditions.swift): a conditional access found its condition
//    false.
// 4. `_enqueue` (Engine+Submitting.swift): submitted work needs a drain.
// 5. `_scheduledTaskWait` (here), called where an awaited access, an awaited condition or a
//    `values` iterator suspends its task in the instance's line: so the explorer knows that the
//    task waits for one of its own threads, not for something outside it (a sleep, a callback).
//
// Why it costs nothing when no explorer runs: an explored thread is marked in Exclusion's own
// thread record, which every access reads anyway. The explorer enters two entries there before
// the thread runs anything: `_scheduleSeamMarker`, an address no object has, and then a box with
// the thread's controller. So an explored thread is always "inside" something, and every access it
// makes takes the branch that nested accesses take already (`checkNesting` and
// `checkBeforeNotWaiting`: `isInsideAny`), out of line, where the seam is asked first. An access
// that holds nothing, on any other thread, runs the instructions it ran before. A nested access
// pays one load and one comparison; a conditional wait and a drain's dispatch, which wait or cost
// microseconds, pay the same. The tests in the out-of-line checks (`_isScheduled`, and the call
// behind it) use only what the module exports for inlining, so that cross-module optimization
// still inlines the checks into callers as it did before: when it couldn't, the callers' fast
// paths came out a few instructions different (Benchmarks/InstructionCounts).
//
// Reads needed no branch of their own for the same reason: every read begins in a check, and the
// explorer decides there, before the read touches the lock, whether it may go on. The explorer
// lets a thread that would wait go on only when the lock is free for it, so nothing an explored
// thread does afterwards waits: taking the lock, entering, releasing, all run unchanged. An access
// that never waits may go on at any time: it takes the instance if it is free, and otherwise
// suspends its task, gives up or submits, as it would anywhere.

/// How an explored access takes its instance: what a schedule explorer needs to know to decide
/// when it may go on, and to show it.
@_spi(ScheduleExploration)
public struct ScheduledAccess: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// Waits for the instance while another access holds it: a synchronous access, timed or
        /// conditional or not.
        case waiting
        /// Suspends its task instead of waiting: an awaited access.
        case awaited
        /// Gives up instead of waiting: an `...IfAvailable` access.
        case trying
        /// Submits work to run later with the instance held, and returns at once.
        case submitting
    }

    public let kind: Kind
    /// Whether it asks to share the instance (a read), rather than hold it alone.
    public let shared: Bool
    /// The accessor as its caller named it: `"access"`, `"await read"`, `"writeIfAvailable"`...
    public let name: String
    /// Whether it waits for the lock at most until a time limit (`access(when:timeout:)` with a
    /// timeout): then it may give up while another access holds the instance.
    public let hasTimeLimit: Bool

    /// Whether it can wait for the lock: only then must the explorer hold it back until the lock is
    /// free for it.
    public var waits: Bool { kind == .waiting }
}

/// Runs a thread one step at a time for a schedule explorer: called on that thread at each of
/// Exclusion's synchronization points, and returns when the explorer lets it go on.
@_spi(ScheduleExploration)
public protocol ScheduleController: AnyObject, Sendable {
    /// The thread is about to take `instance` in `access`, called at `site` (`File.swift:12`, or
    /// empty where the accessor takes no call site). Return once it may go on: for an access that
    /// waits, once the lock is free for it; or, for one with a time limit (`access.hasTimeLimit`),
    /// return true while another access holds the instance for it to give up, as it would if the
    /// limit passed first, with a `TimeoutError`.
    func willAcquire(_ instance: ScheduledInstance, _ access: ScheduledAccess, site: String) -> Bool

    /// A conditional access found its condition false and let go of `instance`. Return once
    /// another access may have changed the state and the thread may take it again, or return true
    /// for a wait with a time limit to end in a `TimeoutError` instead.
    func conditionUnmet(on instance: ScheduledInstance, canTimeOut: Bool) -> Bool

    /// Work submitted to `instance` needs a drain, which the explorer runs as a thread of its
    /// own: `drain` runs everything submitted and returns.
    func drainScheduled(for instance: ScheduledInstance, _ drain: @escaping @Sendable () -> Void)

    /// The thread's task is about to suspend in `instance`'s line: for its turn, for a condition,
    /// or for a `values` iterator's next change. A step of another thread will resume it, unless
    /// (`canTimeOut`) its time limit passes first, which a timer outside the explorer tells it.
    func taskWillWait(in instance: ScheduledInstance, canTimeOut: Bool)

    /// The thread trapped (a failed precondition, a force unwrap of nil, an index out of range):
    /// called from the signal handler, on that thread, which never goes on. It must not allocate,
    /// nor wait for anything the trapping thread may hold.
    func trapped(signal: Int32)
}

/// An instance of `Exclusive` or `ReadersWriter`, as a schedule explorer sees it.
@_spi(ScheduleExploration)
public struct ScheduledInstance: Sendable {
    /// Tells the instance apart from every other alive.
    public let id: ObjectIdentifier
    /// The label it was created with.
    public let label: String
    /// Its type, such as `Exclusive<Int>`.
    public let typeName: String
    private let _hasPendingWork: @Sendable () -> Bool

    init(id: ObjectIdentifier, label: String, typeName: String, hasPendingWork: @escaping @Sendable () -> Bool) {
        self.id = id
        self.label = label
        self.typeName = typeName
        _hasPendingWork = hasPendingWork
    }

    /// Whether submitted work waits: a read then takes the state exclusively, after that work.
    public var hasPendingWork: Bool { _hasPendingWork() }
}

/// What a schedule explorer does to the threads it runs.
@_spi(ScheduleExploration)
public enum ScheduleSeam {
    /// Hands the calling thread to `controller` until `releaseCurrentThread()`. Call it before the
    /// thread touches any instance, outside every access.
    public static func controlCurrentThread(with controller: some ScheduleController) {
        let thread = _CurrentThread()
        precondition(thread.depth == 0, "a thread is handed to a schedule explorer outside every access")
        exclusion_thread_enter(thread._record, _scheduleSeamMarker, 0)
        exclusion_thread_enter(thread._record, Unmanaged.passRetained(_ScheduleSeamBox(controller)).toOpaque(), 0)
    }

    /// Takes the calling thread back from its controller; call it outside every access.
    public static func releaseCurrentThread() {
        let thread = _CurrentThread()
        guard thread.depth == 2, let box = thread.held(at: 1), thread._scheduleController != nil else {
            preconditionFailure("a thread is taken back from a schedule explorer outside every access")
        }
        thread.leave()
        thread.leave()
        // A leave keeps the slot (`exclusion_thread_leave`), and the marker must not: only an
        // explored thread's record holds it, at any depth.
        thread._record.pointee.held.0 = nil
        Unmanaged<_ScheduleSeamBox>.fromOpaque(box).release()
    }

    /// The instances the calling thread is inside, outermost first, and whether shared.
    public static func instancesHeldByCurrentThread() -> [(instance: ScheduledInstance, shared: Bool)] {
        let thread = _CurrentThread()
        let first: UInt32 = thread._scheduleController == nil ? 0 : 2
        guard thread.depth > first else { return [] }
        return (first..<min(thread.depth, UInt32(EXCLUSION_TRACKED_DEPTH))).compactMap { level in
            // Alive: the thread is inside it. Only engines are ever entered, but for the marks.
            guard let address = thread.held(at: level),
                let instance = Unmanaged<AnyObject>.fromOpaque(address).takeUnretainedValue() as? any _EngineInstance
            else { return nil }
            return (instance._scheduledInstance, thread.mode(in: address) == .shared)
        }
    }

    /// The controller of the calling thread, if a schedule explorer runs it; nil otherwise. Reads
    /// the thread's record only: safe in a signal handler.
    public static var currentController: (any ScheduleController)? { _CurrentThread()._scheduleController }

    /// Whether Exclusion stops the process on a lock-order inversion in this build
    /// (`EXCLUSION_LOCK_ORDER`; on in debug builds).
    public static var checksLockOrder: Bool { _LockOrder.isEnabled }
}

/// The first entry an explored thread holds: an address no object can have, even, as the thread
/// record keeps a mode in the low bit.
@usableFromInline var _scheduleSeamMarker: UnsafeRawPointer {
    @inline(__always) get { UnsafeRawPointer(bitPattern: 0x5EA0)! }
}

/// The second entry: the thread's controller.
final class _ScheduleSeamBox {
    let controller: any ScheduleController

    init(_ controller: any ScheduleController) {
        self.controller = controller
    }
}

extension _CurrentThread {
    /// Whether a schedule explorer runs this thread: one load and one comparison, as an explored
    /// thread's outermost entry is the marker (and `releaseCurrentThread` clears it).
    @usableFromInline var _isScheduled: Bool { _record.pointee.held.0 == _scheduleSeamMarker }

    /// The controller of a thread a schedule explorer runs; nil on every other thread.
    var _scheduleController: (any ScheduleController)? {
        guard _isScheduled, let box = held(at: 1) else { return nil }
        return Unmanaged<_ScheduleSeamBox>.fromOpaque(box).takeUnretainedValue().controller
    }
}

extension _Engine {
    /// The instance as a schedule explorer sees it.
    var _scheduledInstance: ScheduledInstance {
        let held = _held
        return ScheduledInstance(
            id: ObjectIdentifier(_instance), label: label, typeName: _typeName,
            hasPendingWork: { held.engine._releaseWork.hasJobs })
    }

    /// Seams 1 and 2: an explored thread's access begins. The explorer checks nesting in
    /// Exclusion's place (re-entrancy, and the lock order as Exclusion would), to report misuse as a
    /// failed schedule instead of stopping the process. `shared` only for an instance whose lock
    /// shares: a conditional read may end up taking the state exclusively (after its condition was
    /// false), so only a plain read asks to share it. Returns true if an access with a time limit
    /// (`timed`) is to give up: another access holds the instance.
    @usableFromInline @discardableResult
    func _scheduledAccess(
        _ thread: _CurrentThread, _ way: _AccessWay, shared: Bool, timed: Bool = false, _ name: String, at site: _Site
    ) -> Bool {
        let kind: ScheduledAccess.Kind =
            switch way {
            case .waiting: .waiting
            case .awaited: .awaited
            case .trying: .trying
            case .submitting: .submitting
            }
        let access = ScheduledAccess(kind: kind, shared: Lock.sharesAccess && shared, name: name, hasTimeLimit: timed)
        // The call site without its module: `Transfers.swift:12`.
        let file = site.file?.split(separator: "/").last.map(String.init)
        return thread._scheduleController!.willAcquire(
            _scheduledInstance, access, site: file.map { "\($0):\(site.line)" } ?? "")
    }

    /// Seam 5: the calling task is about to suspend in this instance's line. Costs one load and
    /// one comparison on a thread no explorer runs, on a path that suspends a task anyway.
    func _scheduledTaskWait(canTimeOut: Bool = false) {
        _CurrentThread()._scheduleController?.taskWillWait(in: _scheduledInstance, canTimeOut: canTimeOut)
    }

    /// Seam 3: an explored thread's condition was false, with the state held. Instead of the wait
    /// list and its semaphores, it lets go and takes the state again each time the explorer says
    /// another access may have changed it, until the condition holds: the same promise (the
    /// condition is checked after every access that could have changed it), in steps the explorer
    /// schedules.
    func _waitScheduled(
        _ controller: any ScheduleController, _ thread: _CurrentThread, _ condition: (State) -> Bool,
        _ limit: _TimeLimit?, _ file: StaticString, _ line: UInt, _ outbox: Outbox
    ) throws(TimeoutError) -> Outbox {
        var outbox = outbox
        while true {
            releaseExclusively(thread, outbox, file: file, line: line)
            if controller.conditionUnmet(on: _scheduledInstance, canTimeOut: limit != nil), let limit {
                throw limit.error(on: label, waitingFor: .conditionFalse)
            }
            // The explorer lets the thread on only while nothing holds the state: this doesn't wait.
            outbox = takeExclusively(thread, file: file, line: line, notingEntry: false)
            if condition(_state.pointee) { return outbox }
        }
    }
}
