import Dispatch
import ExclusionShims

// The lock every access takes, what the engine asks of a lock, and the deadlines a timed wait
// takes to it: what a wait for the lock reads on the Swift side, before the C.

// MARK: - The lock

/// A plain mutual-exclusion lock at a stable address: `exclusion_lock` from ExclusionShims.
///
/// The fast path of every access goes through this lock, so it is the cheapest one each platform
/// can have. On Linux it is Exclusion's own (`ExclusionLock.h` says how it gives the lock back with
/// a plain store, and why sleepers are still never missed); on Apple platforms it is
/// `os_unfair_lock`, which lends a waiter's priority to the holder, with a timed wait beside it
/// that sleeps instead of polling (`ExclusionOwnedLock.h`). `ExclusionPlatform.h` says which.
///
/// A view of a lock that lives elsewhere: an instance's lock is in the instance itself
/// (`_Engine`); a lock beside one is made with `standalone()`.
@usableFromInline
struct _Lock: @unchecked Sendable {
    // @unchecked: the pointee is only touched through the lock's own functions.
    @usableFromInline let _handle: UnsafeMutablePointer<exclusion_lock>

    @inlinable
    init(_ handle: UnsafeMutablePointer<exclusion_lock>) {
        _handle = handle
    }

    /// A lock of its own, free; `deallocate()` it once no thread can reach it any more: not merely
    /// when it is free, but when every thread that called into it has returned.
    static func standalone() -> _Lock {
        let handle = UnsafeMutablePointer<exclusion_lock>.allocate(capacity: 1)
        exclusion_lock_init(handle)
        return _Lock(handle)
    }

    func deallocate() {
        _handle.deallocate()
    }

    /// Takes the lock, spinning and then sleeping, as long as it takes: for the locks beside an
    /// instance's (the wait list's, the backlog's). An instance's own lock is waited for in steps
    /// (`spin`, then `sleep(until:)`), so that the engine can watch and profile the wait.
    @inlinable
    func lock() {
        exclusion_lock_lock(_handle)
    }

    @inlinable
    func tryLock() -> Bool {
        exclusion_lock_try(_handle) != 0
    }

    /// Takes the lock if it comes free within the spin a wait starts with (one try where nothing
    /// spins); whether it did.
    @usableFromInline
    func spin() -> Bool {
        exclusion_lock_spin(_handle) != 0
    }

    /// Sleeps until the lock is free and takes it, without spinning first: until `deadline` at the
    /// latest, or as long as it takes if nil; whether it got it.
    @usableFromInline
    func sleep(until deadline: _Deadline?) -> Bool {
        exclusion_lock_sleep_until(_handle, deadline?.nanoseconds ?? 0) != 0
    }

    @inlinable
    func unlock() {
        exclusion_lock_unlock(_handle)
    }
}

// MARK: - What the engine asks of a lock

/// What the access engine needs from a lock: exclusive access, and shared access if the lock has
/// any. This is the one thing `Exclusive` and `ReadersWriter` do differently.
///
/// A conforming type is a view of a lock that lives in the instance: its `Storage`, kept inline
/// with the instance's words (`exclusion_engine_words`) in the engine object.
@usableFromInline
protocol _EngineLock: Sendable {
    /// What an instance keeps inline: the lock and the instance's words, as a C struct.
    associatedtype Storage
    /// What a thread keeps while it holds the lock shared, to give it back.
    associatedtype SharedTicket

    /// Whether threads can hold the lock shared at the same time. If not, the engine never batches
    /// shared work.
    static var sharesAccess: Bool { get }

    /// The public type's name without its generic argument, such as `"Exclusive"`.
    static var kind: StaticString { get }

    /// How a thread inside an instance in `mode` is described in re-entrancy messages.
    static func describe(_ mode: _CurrentThread.Mode) -> String

    /// Storage as a new instance is made with, before `prepare` runs on it in place.
    static var unprepared: Storage { get }
    /// Prepares the lock and the words (with `flags`) at `storage`, where they will stay.
    static func prepare(_ storage: UnsafeMutablePointer<Storage>, flags: UInt64)
    /// Frees what the lock holds besides its storage; called once, from the engine's `deinit`.
    static func destroy(_ storage: UnsafeMutablePointer<Storage>)
    /// The instance's words in `storage`.
    static func words(_ storage: UnsafeMutablePointer<Storage>) -> UnsafeMutablePointer<exclusion_engine_words>
    /// The size and alignment of an instance's header with this lock's storage
    /// (`_EngineHeader<Storage>`): constants in each lock's conformance, so that code the compiler
    /// didn't specialize for a state (the backlog's, the drains') finds the state without asking
    /// the runtime for the header's generic type on every call.
    static var _headerLayout: (size: Int, alignment: Int) { get }

    /// The lock at `storage`.
    init(at storage: UnsafeMutablePointer<Storage>)

    /// Exclusive access if no other thread holds the lock, and false, holding nothing, if one does:
    /// the engine's quick path, which sends a contended acquisition out of line. Unlike
    /// `tryLockExclusive` it may wait out readers on their way in or out, as a wait would.
    func lockExclusiveIfFree() -> Bool
    func tryLockExclusive() -> Bool
    /// Exclusive access if it comes within the lock's own spin (one try, for a lock that doesn't
    /// spin before it sleeps); false, holding nothing, otherwise.
    func spinExclusive() -> Bool
    /// Sleeps for exclusive access, without spinning first: until `deadline` at the latest (false,
    /// holding nothing, once it passed), or as long as it takes if nil.
    func sleepExclusive(until deadline: _Deadline?) -> Bool
    func unlockExclusive()

    /// Shared access if the lock's quickest path gives it (it may fail even when `tryLockShared`
    /// would succeed); the first step of a read.
    func lockSharedQuickly(thread: UInt32) -> SharedTicket?
    func tryLockShared(thread: UInt32) -> SharedTicket?
    /// Shared access if it comes within the lock's own spin; as `spinExclusive`.
    func spinShared(thread: UInt32) -> SharedTicket?
    /// Sleeps for shared access, as `sleepExclusive`: nil once `deadline` passed.
    func sleepShared(thread: UInt32, until deadline: _Deadline?) -> SharedTicket?
    func unlockShared(_ ticket: SharedTicket)
}

/// `Exclusive`'s lock: every access is exclusive.
extension _Lock: _EngineLock {
    @usableFromInline typealias Storage = exclusion_exclusive_storage

    @usableFromInline static var sharesAccess: Bool { false }
    @usableFromInline static var kind: StaticString { "Exclusive" }

    @usableFromInline static func describe(_ mode: _CurrentThread.Mode) -> String { "an access" }

    @inlinable static var unprepared: Storage { Storage() }

    @inlinable static func prepare(_ storage: UnsafeMutablePointer<Storage>, flags: UInt64) {
        exclusion_engine_words_init(exclusion_exclusive_words(storage), flags)
        exclusion_lock_init(exclusion_exclusive_lock(storage))
    }

    @usableFromInline static func destroy(_ storage: UnsafeMutablePointer<Storage>) {}

    @inlinable static func words(
        _ storage: UnsafeMutablePointer<Storage>
    ) -> UnsafeMutablePointer<exclusion_engine_words> {
        exclusion_exclusive_words(storage)
    }

    @inlinable static var _headerLayout: (size: Int, alignment: Int) {
        (MemoryLayout<_EngineHeader<Storage>>.size, MemoryLayout<_EngineHeader<Storage>>.alignment)
    }

    @inlinable init(at storage: UnsafeMutablePointer<Storage>) {
        self.init(exclusion_exclusive_lock(storage))
    }

    @inlinable func lockExclusiveIfFree() -> Bool { tryLock() }
    @inlinable func tryLockExclusive() -> Bool { tryLock() }
    @usableFromInline func spinExclusive() -> Bool { spin() }
    @usableFromInline func sleepExclusive(until deadline: _Deadline?) -> Bool { sleep(until: deadline) }
    @inlinable func unlockExclusive() { unlock() }

    @inlinable func lockSharedQuickly(thread: UInt32) -> Void? { tryLock() ? () : nil }
    @inlinable func tryLockShared(thread: UInt32) -> Void? { tryLock() ? () : nil }
    @usableFromInline func spinShared(thread: UInt32) -> Void? { spin() ? () : nil }
    @usableFromInline func sleepShared(thread: UInt32, until deadline: _Deadline?) -> Void? {
        sleep(until: deadline) ? () : nil
    }
    @inlinable func unlockShared(_ ticket: Void) { unlock() }
}

/// `ReadersWriter`'s lock: reads share it, writes hold it alone.
extension _ReadersWriterLock: _EngineLock {
    @usableFromInline typealias Storage = exclusion_readers_writer_storage

    @usableFromInline static var sharesAccess: Bool { true }
    @usableFromInline static var kind: StaticString { "ReadersWriter" }

    @inlinable static var unprepared: Storage { Storage() }

    @inlinable static func prepare(_ storage: UnsafeMutablePointer<Storage>, flags: UInt64) {
        exclusion_engine_words_init(exclusion_readers_writer_words(storage), flags)
        exclusion_rwlock_init(exclusion_readers_writer_lock(storage))
    }

    @usableFromInline static func destroy(_ storage: UnsafeMutablePointer<Storage>) {}

    @inlinable static func words(
        _ storage: UnsafeMutablePointer<Storage>
    ) -> UnsafeMutablePointer<exclusion_engine_words> {
        exclusion_readers_writer_words(storage)
    }

    @inlinable static var _headerLayout: (size: Int, alignment: Int) {
        (MemoryLayout<_EngineHeader<Storage>>.size, MemoryLayout<_EngineHeader<Storage>>.alignment)
    }

    @inlinable init(at storage: UnsafeMutablePointer<Storage>) {
        self.init(exclusion_readers_writer_lock(storage))
    }

    @usableFromInline static func describe(_ mode: _CurrentThread.Mode) -> String {
        mode == .shared ? "a read" : "a write"
    }

    @inlinable func lockSharedQuickly(thread: UInt32) -> SharedTicket? { _tryFastShared(thread: thread) }

    /// No spin of its own: one try.
    @usableFromInline func spinExclusive() -> Bool { tryLockExclusive() }
    @usableFromInline func spinShared(thread: UInt32) -> SharedTicket? { tryLockShared(thread: thread) }
}

// MARK: - Deadlines

/// A moment on the monotonic clock that a wait must not pass.
///
/// Every timed wait in Exclusion measures against one of these, made once when the wait begins,
/// so that a wait in several steps (the lock, then the condition, then the lock again) gives up at
/// the same moment whatever each step took. This file is where Swift's `Duration` becomes
/// nanoseconds and a dispatch time; the C side turns nanoseconds into what each system call takes
/// (`ExclusionPlatform.c`).
@usableFromInline
struct _Deadline: Sendable, Comparable {
    /// Nanoseconds on `CLOCK_MONOTONIC` (`exclusion_monotonic_now`), as the lock takes them.
    @usableFromInline let nanoseconds: UInt64

    @usableFromInline
    init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    /// `duration` from now; a negative duration is now.
    @usableFromInline
    init(after duration: Duration) {
        let now = exclusion_monotonic_now()
        let (sum, overflow) = now.addingReportingOverflow(UInt64(max(_nanoseconds(duration), 0)))
        nanoseconds = overflow ? .max : sum
    }

    var hasPassed: Bool { exclusion_monotonic_now() >= nanoseconds }

    /// Nanoseconds left, 0 once passed.
    var remainingNanoseconds: Int64 {
        let now = exclusion_monotonic_now()
        return now >= nanoseconds ? 0 : Int64(clamping: nanoseconds - now)
    }

    /// The same moment for a dispatch wait (`DispatchSemaphore.wait(timeout:)`).
    var dispatchTime: DispatchTime { .now() + .nanoseconds(Int(clamping: remainingNanoseconds)) }

    @usableFromInline
    static func < (lhs: _Deadline, rhs: _Deadline) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
}

/// How long a timed access may wait, and until when: made once, when the access is asked for.
@usableFromInline
struct _TimeLimit: Sendable {
    /// As the caller gave it, for the error.
    @usableFromInline let timeout: Duration
    @usableFromInline let deadline: _Deadline

    @usableFromInline
    init(_ timeout: Duration) {
        self.timeout = timeout
        deadline = _Deadline(after: timeout)
    }

    /// The error for a wait that gave up at this limit.
    @usableFromInline
    func error(on label: String, waitingFor cause: TimeoutError.Cause) -> TimeoutError {
        TimeoutError(label: label, timeout: timeout, cause: cause)
    }
}

/// `duration` in whole nanoseconds, saturating.
func _nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    if overflow { return seconds < 0 ? .min : .max }
    return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
}
