#ifndef EXCLUSION_READERS_WRITER_LOCK_H
#define EXCLUSION_READERS_WRITER_LOCK_H

#include "ExclusionLock.h"
#include "ExclusionOwnedLock.h"
#include "ExclusionPlatform.h"

/// A readers-writer lock whose readers scale across cores and whose writers don't starve, in 40
/// bytes of the instance.
///
/// A lock that counts its readers in one shared word makes two threads reading at once fight over
/// one cache line, and together they read *slower* than one thread alone. This lock adds a fast
/// path for readers after the design known as BRAVO (Dice and Kogan, "BRAVO: Biased Locking for
/// Reader-Writer Locks", USENIX ATC 2019), with its table of visible readers shared by every lock,
/// as BRAVO has it, so that a lock adds a few words to the instance, not a slot per core:
///
/// - While the lock is *read-biased*, a reader announces itself in a slot of the shared table
///   (`exclusion_visible_readers`), chosen by the lock's address and the reader's thread, by
///   writing the lock's address there; then checks that the bias still holds. Readers on different
///   threads write different cache lines, so they don't slow each other down. A slot that another
///   reader holds (of this lock or another) sends the reader to the slow path: a collision costs
///   speed, never correctness.
/// - A writer takes the underlying lock, withdraws the bias, and waits until no slot of the table
///   names this lock; it looks only at the slots this lock's readers can take, one per thread index
///   modulo `EXCLUSION_VISIBLE_READERS_PER_LOCK`, and only those of thread indices handed out so
///   far (`exclusion_thread_index_limit`: an exited thread's index is handed out again, so there
///   are as many as threads alive at once), not at the whole table. Readers that arrive after that
///   find no bias and queue on the underlying lock behind the writer.
/// - The underlying lock prefers writers, so a write waits only for the reads that started before
///   it, like a dispatch barrier: `writers`, which a writer holds, and which a slow-path reader
///   holds only while it counts itself in `readers`. A reader that waits for a writer so lends it
///   its priority on Apple platforms.
/// - A writer that waits for readers to leave sleeps on what it waits for (a slot, or `readers`),
///   and the reader that leaves it wakes the writer. Nothing spins or polls. How the reader learns
///   that a writer waits depends on the platform (`EXCLUSION_RWLOCK_FENCED`): on Linux on x86-64 a
///   reader writes its slot with plain stores, as the lock there gives itself back with one
///   (`ExclusionLock.h`), and looks at `waiting` after each, which the writer sets before a
///   `membarrier` and its look at the slots (as the lock's waiter counts itself in before its
///   fence), so that either the writer sees the reader's store or the reader sees `waiting`;
///   elsewhere, and on Apple platforms, a writer marks the slot itself
///   (`EXCLUSION_READ_SLOT_WRITER_WAITS`) with a locked instruction, and a reader changes its slot
///   with locked instructions that see the mark. Where the kernel refuses `membarrier` when the
///   library loads, the bias stays off on x86-64 (`exclusion_rwlock_bias_allowed`), so that no
///   writer waits for a slot it can't be woken from. Only a fence that fails after that (a seccomp
///   filter installed later could make it) leaves a writer unsure that a reader sees `waiting`: it
///   then looks at the slots again every `EXCLUSION_LOCK_POLL_NS` while it sleeps, as the lock's
///   waiters do, the one wait in Exclusion that polls.
/// - A reader on the slow path turns the bias back on, but only once enough time has passed since
///   the last withdrawal (nine times what the withdrawal cost), which bounds what frequent writers
///   pay for scanning the table.
/// - A writer with a deadline that passes while readers are still inside puts the bias back and
///   lets go, as if it had never come.
///
/// `Verification/bias.pml` models the bias protocol over the shared table (announce, check,
/// withdraw, wait, with another lock's reader in the slot) under x86-TSO store buffers, and
/// `Verification/owned-readers.pml` the sleeping writers; Spin checks that no read overlaps a write
/// and that no writer sleeps through the last reader's exit, and catches each broken variant
/// listed there.
typedef struct {
    /// 1 while the lock is read-biased.
    uint32_t bias;
    /// 1 while a withdrawal that gave up waiting for the readers is to go on: only touched by the
    /// writer holding `writers`.
    uint32_t revoking;
    /// Before this moment (`exclusion_monotonic_now`), readers leave the bias off.
    uint64_t bias_inhibited_until;
    /// Held by a writer, and by a slow-path reader while it counts itself in.
    exclusion_lock writers;
    /// Slow-path readers inside, plus EXCLUSION_READERS_WRITER_WAITS while a writer waits for them.
    uint32_t readers;
    /// Where this lock's readers start in the shared table, from its address: made once, with the
    /// lock, so that a read doesn't hash.
    uint32_t slots;
    /// 1 while a writer waits for a slot, where readers write their slots with plain stores
    /// (`EXCLUSION_RWLOCK_FENCED`): a reader that changed its slot wakes the writer. Only written
    /// by the writer holding `writers`.
    uint32_t waiting;
} exclusion_rwlock;

/// Whether readers write their slots with plain stores: Linux on x86-64, whose memory model the
/// fence's argument assumes (`Verification/fenced-readers.pml`). Decided when the library is built,
/// so that a read doesn't ask.
#if !EXCLUSION_OWNED_LOCK && defined(__x86_64__)
#define EXCLUSION_RWLOCK_FENCED 1
#else
#define EXCLUSION_RWLOCK_FENCED 0
#endif

#define EXCLUSION_READERS_WRITER_WAITS 0x80000000u

/// How many slots the shared table has: a power of two.
#define EXCLUSION_VISIBLE_READERS 4096

/// The table of visible readers every lock shares: 0 where nobody reads, otherwise the address of
/// the lock a reader reads, with the reader's state in the low bits (a lock's address is a multiple
/// of 8).
extern uintptr_t exclusion_visible_readers[EXCLUSION_VISIBLE_READERS];

/// A reader's ticket when it holds the underlying lock instead of a slot; a slot's index otherwise.
#define EXCLUSION_READ_SLOW EXCLUSION_VISIBLE_READERS

/// A slot's state bits, beside the lock's address: ANNOUNCING from a reader's announcement until
/// it has seen the bias hold; READING from then until it leaves. A writer that waits for the slot
/// adds WRITER_WAITS, and the reader that leaves it wakes the writer.
#define EXCLUSION_READ_SLOT_ANNOUNCING 1u
#define EXCLUSION_READ_SLOT_READING 2u
#define EXCLUSION_READ_SLOT_WRITER_WAITS 4u
#define EXCLUSION_READ_SLOT_STATE 7u

/// Whether readers may go through the read bias. Where they write their slots with plain stores,
/// only if the kernel let the library fence when it loaded (`exclusion_lock_fenced`, decided before
/// any lock exists): without the fence a writer couldn't know that a reader sees `waiting`, and
/// would have to look at the slots again and again while it sleeps. Reads then take the underlying
/// lock, which wakes its writers, and don't scale: the price of a kernel without `membarrier`.
static inline int exclusion_rwlock_bias_allowed(void) {
#if EXCLUSION_RWLOCK_FENCED
    return __atomic_load_n(&exclusion_lock_fenced, __ATOMIC_RELAXED);
#else
    return 1;
#endif
}

/// Prepares `lock`, free and read-biased if readers may use the bias, where it will stay.
static inline void exclusion_rwlock_init(exclusion_rwlock *lock) {
    lock->bias = exclusion_rwlock_bias_allowed();
    lock->revoking = 0;
    lock->bias_inhibited_until = 0;
    exclusion_lock_init(&lock->writers);
    lock->readers = 0;
    lock->waiting = 0;
    // Fibonacci hashing of the address, so that locks a few bytes or pages apart spread out.
    lock->slots = (uint32_t)(((uint64_t)((uintptr_t)lock >> 3) * 0x9E3779B97F4A7C15ull) >> 52);
}

/// How far apart a lock's readers on consecutive threads are, in slots: two cache lines, so that
/// adjacent-line prefetching doesn't couple the readers of one lock.
#define EXCLUSION_VISIBLE_READER_STRIDE 16

/// How many slots of the table a lock's readers can take: every thread maps to one of these, and a
/// writer looks at these only, not at the whole table.
#define EXCLUSION_VISIBLE_READERS_PER_LOCK (EXCLUSION_VISIBLE_READERS / EXCLUSION_VISIBLE_READER_STRIDE)

/// The slot a reader on `thread` (its index, `exclusion_current_thread`) takes for `lock`: spread by
/// the lock's address, and by thread a stride apart.
static inline uint32_t exclusion_visible_reader_slot(const exclusion_rwlock *lock, uint32_t thread) {
    return (lock->slots + thread * EXCLUSION_VISIBLE_READER_STRIDE) & (EXCLUSION_VISIBLE_READERS - 1);
}

// MARK: - Readers

/// Wakes a writer that sleeps on `slot`.
void exclusion_rwlock_wake_writer(uintptr_t *slot);

/// A reader writes `value` to its slot, and wakes a writer that waits for it.
static inline void exclusion_read_slot_write(exclusion_rwlock *lock, uintptr_t *slot, uintptr_t value) {
#if EXCLUSION_RWLOCK_FENCED
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    // Keeps the compiler from reading `waiting` before the store: the writer's fence orders the
    // two only in this order.
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (__builtin_expect(__atomic_load_n(&lock->waiting, __ATOMIC_RELAXED) != 0, 0)) {
        exclusion_rwlock_wake_writer(slot);
    }
#else
    (void)lock;
    // An exchange, which sees the mark of a writer that sleeps on the slot.
    if (__atomic_exchange_n(slot, value, __ATOMIC_RELEASE) & EXCLUSION_READ_SLOT_WRITER_WAITS) {
        exclusion_rwlock_wake_writer(slot);
    }
#endif
}

/// Shared access through the read bias, if it holds and the thread's slot is free: the slot's
/// index, or -1. May fail when `exclusion_rwlock_try_read` would succeed.
static inline int exclusion_rwlock_read_quickly(exclusion_rwlock *lock, uint32_t thread) {
    if (!__atomic_load_n(&lock->bias, __ATOMIC_RELAXED)) return -1;
    uint32_t index = exclusion_visible_reader_slot(lock, thread);
    uintptr_t *slot = &exclusion_visible_readers[index];
    // Announce, then check again: a writer withdraws the bias before it looks at the slots, so
    // either it sees this announcement or this reader sees the withdrawal (both sequentially
    // consistent, as in Dekker's algorithm).
    uintptr_t free = 0;
    if (!__atomic_compare_exchange_n(
            slot, &free, (uintptr_t)lock | EXCLUSION_READ_SLOT_ANNOUNCING, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
        return -1;
    }
    if (__atomic_load_n(&lock->bias, __ATOMIC_SEQ_CST)) {
        // Reading now: a writer that waits to see how this reader goes on hears of it.
        exclusion_read_slot_write(lock, slot, (uintptr_t)lock | EXCLUSION_READ_SLOT_READING);
        return (int)index;
    }
    exclusion_read_slot_write(lock, slot, 0);
    return -1;
}

/// Shared access by `deadline` (0: as long as it takes): a ticket for
/// `exclusion_rwlock_read_unlock`, or -1 if the deadline passed first.
int exclusion_rwlock_read_until(exclusion_rwlock *lock, uint32_t thread, uint64_t deadline);

/// Shared access if it can be had without waiting: a ticket, or -1.
int exclusion_rwlock_try_read(exclusion_rwlock *lock, uint32_t thread);

/// The slow half of `exclusion_rwlock_read_unlock`.
void exclusion_rwlock_read_unlock_slowly(exclusion_rwlock *lock);

static inline void exclusion_rwlock_read_unlock(exclusion_rwlock *lock, int ticket) {
    if (ticket == EXCLUSION_READ_SLOW) {
        exclusion_rwlock_read_unlock_slowly(lock);
    } else {
        exclusion_read_slot_write(lock, &exclusion_visible_readers[ticket], 0);
    }
}

// MARK: - Writers

/// Exclusive access if it can be had without waiting; 1 if it has it.
int exclusion_rwlock_try_write(exclusion_rwlock *lock);

/// Exclusive access by `deadline` (0: as long as it takes): waits for the readers inside to leave,
/// not for readers that come later. 1 if it has it, 0, holding nothing, if the deadline passed
/// first.
int exclusion_rwlock_write_until(exclusion_rwlock *lock, uint64_t deadline);

/// Holding `writers` with no slow-path reader inside: withdraws the bias if it holds, and waits by
/// `deadline` (0: none) until no slot names this lock; 1 once none does, 0 if the deadline passed
/// first, still holding `writers` with the bias withdrawn, so that later readers wait, until the
/// caller lets go.
int exclusion_rwlock_write_revoke(exclusion_rwlock *lock, uint64_t deadline);

/// `writers`, held by a writer alone, if it can be had without waiting; 1 if it has it.
static inline int exclusion_rwlock_try_write_underlying(exclusion_rwlock *lock) {
    if (!exclusion_lock_try(&lock->writers)) return 0;
    if (__atomic_load_n(&lock->readers, __ATOMIC_ACQUIRE) == 0) return 1;
    exclusion_lock_unlock(&lock->writers);
    return 0;
}

/// Exclusive access if no other thread holds the underlying lock (readers in slots are waited
/// out, as `exclusion_rwlock_write_until` does); 1 if it has it. Inline, as the first step of every
/// write: with the bias withdrawn already, it is one try of the underlying lock.
static inline int exclusion_rwlock_write_if_free(exclusion_rwlock *lock) {
    if (!exclusion_rwlock_try_write_underlying(lock)) return 0;
    if (__atomic_load_n(&lock->bias, __ATOMIC_RELAXED) || lock->revoking) {
        (void)exclusion_rwlock_write_revoke(lock, 0);
    }
    return 1;
}

static inline void exclusion_rwlock_write_unlock(exclusion_rwlock *lock) {
    exclusion_lock_unlock(&lock->writers);
}

#endif
