import ExclusionShims
import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A readers-writer lock whose readers scale across cores and whose writers don't starve.
///
/// A plain `pthread_rwlock_t` counts readers in one shared word, so two threads reading at once
/// fight over one cache line and together read *slower* than one thread alone. This lock adds a
/// fast path for readers after the design known as BRAVO (Dice and Kogan, "BRAVO: Biased Locking
/// for Reader-Writer Locks", USENIX ATC 2019):
///
/// - While the lock is *read-biased*, a reader announces itself in one of `slotCount` slots, each on
///   its own cache line and chosen by thread, then checks that the bias still holds. Readers on
///   different threads write different cache lines, so they don't slow each other down.
/// - A writer takes the underlying lock, withdraws the bias, and waits until every slot is empty.
///   Readers that arrive after that find no bias and queue on the underlying lock behind the writer.
/// - The underlying lock prefers writers, so a write waits only for the reads that started before
///   it, like a dispatch barrier.
/// - A reader on the slow path turns the bias back on, but only once enough time has passed since
///   the last withdrawal (nine times what the withdrawal cost), which bounds what frequent writers
///   pay for scanning the slots.
/// - A writer with a deadline that passes while readers are still inside puts the bias back and
///   lets go, as if it had never come.
///
/// `Verification/bias.pml` models the bias protocol (announce, check, withdraw, wait) under x86-TSO
/// store buffers; Spin checks that no read overlaps a write, and catches each broken variant listed
/// there.
@usableFromInline
final class _ReadersWriterLock: @unchecked Sendable {
    // @unchecked: every field is either immutable, atomic, or only touched through pthread calls.

    /// A reader's ticket: the slot it announced itself in, or `slowPath` if it holds the
    /// underlying lock instead.
    @usableFromInline typealias SharedTicket = Int
    @usableFromInline static var slowPath: SharedTicket { -1 }

    @usableFromInline static var slotCount: Int { 16 }
    /// A slot's values: 0 when free; `announcing` from a reader's announcement until it has seen
    /// the bias hold; `reading` from then until it leaves.
    @usableFromInline static var announcing: Int { 1 }
    @usableFromInline static var reading: Int { 2 }
    @usableFromInline static var slotStride: Int { 128 }  // two cache lines: adjacent-line prefetch can't couple slots

    @usableFromInline let _underlying: UnsafeMutablePointer<pthread_rwlock_t>
    @usableFromInline let _slots: UnsafeMutableRawPointer
    @usableFromInline let _readBias = Atomic<Bool>(true)
    private let _biasInhibitedUntil = Atomic<UInt64>(0)

    @usableFromInline
    init() {
        _underlying = .allocate(capacity: 1)
        _underlying.initialize(to: pthread_rwlock_t())
        #if canImport(Glibc)
        // glibc prefers readers by default, which lets a stream of readers starve a writer.
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        let status = pthread_rwlock_init(_underlying, &attributes)
        pthread_rwlockattr_destroy(&attributes)
        #else
        let status = pthread_rwlock_init(_underlying, nil)
        #endif
        precondition(status == 0, "pthread_rwlock_init failed: \(status)")

        let size = Self.slotCount * Self.slotStride
        _slots = .allocate(byteCount: size, alignment: Self.slotStride)
        for index in 0..<Self.slotCount {
            (_slots + index * Self.slotStride).initializeMemory(as: Atomic<Int>.self, to: Atomic<Int>(0))
        }
    }

    deinit {
        pthread_rwlock_destroy(_underlying)
        _underlying.deinitialize(count: 1)
        _underlying.deallocate()
        _slots.deallocate()
    }

    @inlinable
    func _slot(_ index: Int) -> UnsafeMutablePointer<Atomic<Int>> {
        (_slots + index * Self.slotStride).assumingMemoryBound(to: Atomic<Int>.self)
    }

    // MARK: - Readers

    /// Waits for shared access; pass the ticket to `unlockShared`.
    @inlinable
    func lockShared(thread: UInt32) -> SharedTicket {
        if let ticket = _tryFastShared(thread: thread) { return ticket }
        return _lockSharedSlowly()
    }

    @usableFromInline
    func _lockSharedSlowly() -> SharedTicket {
        pthread_rwlock_rdlock(_underlying)
        _restoreBiasIfDue()
        return Self.slowPath
    }

    /// Shared access if it can be had without waiting.
    @usableFromInline
    func tryLockShared(thread: UInt32) -> SharedTicket? {
        if let ticket = _tryFastShared(thread: thread) { return ticket }
        guard pthread_rwlock_tryrdlock(_underlying) == 0 else { return nil }
        _restoreBiasIfDue()
        return Self.slowPath
    }

    @inlinable
    func unlockShared(_ ticket: SharedTicket) {
        if ticket == Self.slowPath {
            pthread_rwlock_unlock(_underlying)
        } else {
            _slot(ticket).pointee.store(0, ordering: .releasing)
        }
    }

    @inlinable
    func _tryFastShared(thread: UInt32) -> SharedTicket? {
        guard _readBias.load(ordering: .relaxed) else { return nil }
        let index = Int(thread) & (Self.slotCount - 1)
        let slot = _slot(index)
        // Announce, then re-check: a writer withdraws the bias before scanning the slots, so either
        // it sees this announcement or this reader sees the withdrawal (both orderings are
        // sequentially consistent, as in Dekker's algorithm).
        guard
            slot.pointee.compareExchange(expected: 0, desired: Self.announcing, ordering: .sequentiallyConsistent)
                .exchanged
        else { return nil }
        if _readBias.load(ordering: .sequentiallyConsistent) {
            slot.pointee.store(Self.reading, ordering: .relaxed)
            return index
        }
        slot.pointee.store(0, ordering: .releasing)
        return nil
    }

    private func _restoreBiasIfDue() {
        guard !_readBias.load(ordering: .relaxed) else { return }
        if exclusion_monotonic_now() >= _biasInhibitedUntil.load(ordering: .relaxed) {
            // Holding the underlying lock shared, so no writer is inside.
            _readBias.store(true, ordering: .releasing)
        }
    }

    // MARK: - Writers

    /// Waits for exclusive access: for the readers inside to leave, not for readers that come later.
    @usableFromInline
    func lockExclusive() {
        pthread_rwlock_wrlock(_underlying)
        _revokeBias()
    }

    /// Exclusive access if no other thread holds the underlying lock; fast-path readers inside
    /// are waited out, as `lockExclusive` does.
    @usableFromInline
    func lockExclusiveIfFree() -> Bool {
        guard pthread_rwlock_trywrlock(_underlying) == 0 else { return false }
        _revokeBias()
        return true
    }

    /// Exclusive access if it can be had without waiting.
    @usableFromInline
    func tryLockExclusive() -> Bool {
        guard pthread_rwlock_trywrlock(_underlying) == 0 else { return false }
        guard _readBias.load(ordering: .relaxed) else { return true }
        _readBias.store(false, ordering: .sequentiallyConsistent)
        for index in 0..<Self.slotCount where !_slotIsFree(index) {
            // A fast-path reader is inside: undo, as if the lock had been busy.
            _readBias.store(true, ordering: .releasing)
            pthread_rwlock_unlock(_underlying)
            return false
        }
        return true
    }

    /// Whether no fast-path reader holds slot `index`. A reader announces itself before it checks
    /// the bias, and only then reads; one caught in between is waited out (a few instructions),
    /// since it may yet see the bias withdrawn and leave, and failing for it would be a spurious
    /// failure.
    private func _slotIsFree(_ index: Int) -> Bool {
        var backoff = exclusion_backoff()
        while true {
            switch _slot(index).pointee.load(ordering: .sequentiallyConsistent) {
            case 0: return true
            case Self.reading: return false
            default: exclusion_backoff_wait(&backoff)
            }
        }
    }

    /// Exclusive access by `deadline`, or false: the underlying lock, then the fast readers gone.
    @usableFromInline
    func lockExclusive(before deadline: _Deadline) -> Bool {
        guard _lockUnderlying(before: deadline, shared: false) else { return false }
        guard _revokeBias(before: deadline) else {
            pthread_rwlock_unlock(_underlying)
            return false
        }
        return true
    }

    /// Exclusive access, as long as it takes; calls `report` once if `deadline` passes first. Once
    /// it holds the underlying lock it never lets go of it, so reads that come later still wait
    /// behind it.
    @usableFromInline
    func lockExclusive(reportingAt deadline: _Deadline, _ report: () -> Void) {
        if _lockUnderlying(before: deadline, shared: false) {
            _ = withoutActuallyEscaping(report) { report in _revokeBias(before: deadline, orReport: report) }
        } else {
            report()
            pthread_rwlock_wrlock(_underlying)
            _revokeBias()
        }
    }

    /// Shared access by `deadline`, or nil.
    @usableFromInline
    func lockShared(thread: UInt32, before deadline: _Deadline) -> SharedTicket? {
        if let ticket = _tryFastShared(thread: thread) { return ticket }
        guard _lockUnderlying(before: deadline, shared: true) else { return nil }
        _restoreBiasIfDue()
        return Self.slowPath
    }

    /// The underlying lock by `deadline`: with the POSIX timed calls where the platform has them,
    /// by polling elsewhere (Apple platforms have no timed rwlock).
    private func _lockUnderlying(before deadline: _Deadline, shared: Bool) -> Bool {
        #if canImport(Darwin)
        return _poll(until: deadline) {
            (shared ? pthread_rwlock_tryrdlock(_underlying) : pthread_rwlock_trywrlock(_underlying)) == 0
        }
        #else
        var realtime = deadline.realtime
        return
            (shared
            ? pthread_rwlock_timedrdlock(_underlying, &realtime)
            : pthread_rwlock_timedwrlock(_underlying, &realtime)) == 0
        #endif
    }

    @usableFromInline
    func unlockExclusive() {
        pthread_rwlock_unlock(_underlying)
    }

    /// Withdraws the read bias and waits for the fast-path readers inside to leave, holding the
    /// underlying lock exclusively. With a `deadline` that passes first, puts the bias back and
    /// returns false; the caller lets go of the underlying lock. With `report`, calls it instead
    /// when the deadline passes, and goes on waiting.
    @discardableResult
    private func _revokeBias(before deadline: _Deadline? = nil, orReport report: (() -> Void)? = nil) -> Bool {
        guard _readBias.load(ordering: .relaxed) else { return true }
        let start = exclusion_monotonic_now()
        _readBias.store(false, ordering: .sequentiallyConsistent)
        var deadline = deadline
        for index in 0..<Self.slotCount {
            var backoff = exclusion_backoff()
            while _slot(index).pointee.load(ordering: .sequentiallyConsistent) != 0 {
                if let passed = deadline, passed.hasPassed {
                    if let report {
                        report()
                        deadline = nil
                    } else {
                        // Readers that saw the bias withdrawn wait on the underlying lock, which
                        // the caller gives up right after; readers inside carry on.
                        _readBias.store(true, ordering: .releasing)
                        return false
                    }
                }
                exclusion_backoff_wait(&backoff)
            }
        }
        let end = exclusion_monotonic_now()
        _biasInhibitedUntil.store(end &+ (end &- start) &* 9, ordering: .relaxed)
        return true
    }
}
