#ifndef EXCLUSION_READERS_WRITER_LOCK_H
#define EXCLUSION_READERS_WRITER_LOCK_H

#include "ExclusionOwnedLock.h"
#include "ExclusionPlatform.h"

/// A readers-writer lock whose readers scale across cores and whose writers don't starve.
///
/// A plain `pthread_rwlock_t` counts readers in one shared word, so two threads reading at once
/// fight over one cache line and together read *slower* than one thread alone. This lock adds a
/// fast path for readers after the design known as BRAVO (Dice and Kogan, "BRAVO: Biased Locking
/// for Reader-Writer Locks", USENIX ATC 2019):
///
/// - While the lock is *read-biased*, a reader announces itself in one of the slots, each on its
///   own cache lines and chosen by thread, then checks that the bias still holds. Readers on
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
/// **The underlying lock, by design** (`ExclusionPlatform.h`):
/// - Linux: `pthread_rwlock_t`, preferring writers; a writer waits for a slot to empty with the
///   back-off (`ExclusionShims.h`): a fast-path read is short.
/// - Apple platforms: `exclusion_lock` (`ExclusionOwnedLock.h`), which writers hold, and which a
///   slow-path reader holds only while it counts itself in `readers`. A reader that waits for a
///   writer so lends it its priority; Darwin has no timed readers-writer lock, and this one has
///   timed waits that sleep. A writer that waits for readers to leave marks what it waits on (a
///   slot, or `readers`) and sleeps on it; the last reader out wakes it. Nothing spins or polls.
///
/// `Verification/bias.pml` models the bias protocol (announce, check, withdraw, wait) under x86-TSO
/// store buffers, and `Verification/owned-readers.pml` the Apple design's sleeping writers; Spin
/// checks that no read overlaps a write and that no writer sleeps through the last reader's exit,
/// and catches each broken variant listed there.
typedef struct exclusion_rwlock exclusion_rwlock;

/// How many slots fast-path readers announce themselves in.
#define EXCLUSION_READ_SLOTS 16

/// A reader's ticket when it holds the underlying lock instead of a slot; a slot's index otherwise.
#define EXCLUSION_READ_SLOW EXCLUSION_READ_SLOTS

/// A slot's values: 0 when free; ANNOUNCING from a reader's announcement until it has seen the
/// bias hold; READING from then until it leaves. On Apple platforms a writer that waits for the
/// slot adds WRITER_WAITS, and the reader that leaves wakes it.
#define EXCLUSION_READ_SLOT_ANNOUNCING 1u
#define EXCLUSION_READ_SLOT_READING 2u
#define EXCLUSION_READ_SLOT_WRITER_WAITS 4u

/// One slot, alone on two cache lines, so that adjacent-line prefetching can't couple two slots.
typedef struct {
    uint32_t value;
} __attribute__((aligned(128))) exclusion_read_slot;

struct exclusion_rwlock {
    exclusion_read_slot slots[EXCLUSION_READ_SLOTS];
    /// 1 while the lock is read-biased.
    uint32_t bias;
    /// Before this moment (`exclusion_monotonic_now`), readers leave the bias off.
    uint64_t bias_inhibited_until;
    /// 1 while a withdrawal that gave up waiting for the slots is to go on: only touched by the
    /// writer holding the underlying lock.
    uint32_t revoking;
#if EXCLUSION_OWNED_LOCK
    /// Held by a writer, and by a slow-path reader while it counts itself in.
    exclusion_lock writers;
    /// Slow-path readers inside, plus EXCLUSION_READERS_WRITER_WAITS while a writer waits for them.
    uint32_t readers;
#else
    pthread_rwlock_t underlying;
#endif
};

#define EXCLUSION_READERS_WRITER_WAITS 0x80000000u

/// A new lock, read-biased; free it with `exclusion_rwlock_destroy`.
exclusion_rwlock *exclusion_rwlock_create(void);

void exclusion_rwlock_destroy(exclusion_rwlock *lock);

// MARK: - Readers

/// The slot a reader leaves: empty, and a writer waiting for it woken (Apple platforms).
void exclusion_rwlock_wake_writer(exclusion_read_slot *slot);

static inline void exclusion_read_slot_leave(exclusion_read_slot *slot) {
#if EXCLUSION_OWNED_LOCK
    if (__atomic_exchange_n(&slot->value, 0, __ATOMIC_RELEASE) & EXCLUSION_READ_SLOT_WRITER_WAITS) {
        exclusion_rwlock_wake_writer(slot);
    }
#else
    __atomic_store_n(&slot->value, 0, __ATOMIC_RELEASE);
#endif
}

/// Shared access through the read bias, if it holds and the thread's slot is free: the slot's
/// index, or -1. May fail when `exclusion_rwlock_try_read` would succeed.
static inline int exclusion_rwlock_read_quickly(exclusion_rwlock *lock, uint32_t thread) {
    if (!__atomic_load_n(&lock->bias, __ATOMIC_RELAXED)) return -1;
    uint32_t index = thread & (EXCLUSION_READ_SLOTS - 1);
    exclusion_read_slot *slot = &lock->slots[index];
    // Announce, then check again: a writer withdraws the bias before it looks at the slots, so
    // either it sees this announcement or this reader sees the withdrawal (both sequentially
    // consistent, as in Dekker's algorithm).
    uint32_t free = 0;
    if (!__atomic_compare_exchange_n(
            &slot->value, &free, EXCLUSION_READ_SLOT_ANNOUNCING, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
        return -1;
    }
    if (__atomic_load_n(&lock->bias, __ATOMIC_SEQ_CST)) {
#if EXCLUSION_OWNED_LOCK
        // An addition, which keeps the mark of a writer that waits to see how this reader goes on.
        uint32_t before = __atomic_fetch_add(
            &slot->value, EXCLUSION_READ_SLOT_READING - EXCLUSION_READ_SLOT_ANNOUNCING, __ATOMIC_RELAXED);
        if (before & EXCLUSION_READ_SLOT_WRITER_WAITS) exclusion_rwlock_wake_writer(slot);
#else
        __atomic_store_n(&slot->value, EXCLUSION_READ_SLOT_READING, __ATOMIC_RELAXED);
#endif
        return (int)index;
    }
    exclusion_read_slot_leave(slot);
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
        exclusion_read_slot_leave(&lock->slots[ticket]);
    }
}

// MARK: - Writers

/// Exclusive access if it can be had without waiting; 1 if it has it.
int exclusion_rwlock_try_write(exclusion_rwlock *lock);

/// Exclusive access by `deadline` (0: as long as it takes): waits for the readers inside to leave,
/// not for readers that come later. 1 if it has it, 0, holding nothing, if the deadline passed
/// first.
int exclusion_rwlock_write_until(exclusion_rwlock *lock, uint64_t deadline);

/// The two halves of a write (`exclusion_rwlock_write_until`, `exclusion_rwlock_write_if_free`), by
/// `deadline` (0: none): the underlying lock (1 if held by then), and then the readers in slots
/// gone (1 once they are; 0 if the deadline passed first, still holding the underlying lock with
/// the bias withdrawn, so that later readers wait, until the caller lets go).
int exclusion_rwlock_write_begin(exclusion_rwlock *lock, uint64_t deadline);
int exclusion_rwlock_write_revoke(exclusion_rwlock *lock, uint64_t deadline);

/// The underlying lock, held by a writer alone, if it can be had without waiting; 1 if it has it.
static inline int exclusion_rwlock_try_write_underlying(exclusion_rwlock *lock) {
#if EXCLUSION_OWNED_LOCK
    if (!exclusion_lock_try(&lock->writers)) return 0;
    if (__atomic_load_n(&lock->readers, __ATOMIC_ACQUIRE) == 0) return 1;
    exclusion_lock_unlock(&lock->writers);
    return 0;
#else
    return pthread_rwlock_trywrlock(&lock->underlying) == 0;
#endif
}

/// Exclusive access if no other thread holds the underlying lock (readers in slots are waited
/// out, as `exclusion_rwlock_write` does); 1 if it has it. Inline, as the first step of every
/// write: with the bias withdrawn already, it is one try of the underlying lock.
static inline int exclusion_rwlock_write_if_free(exclusion_rwlock *lock) {
    if (!exclusion_rwlock_try_write_underlying(lock)) return 0;
    if (__atomic_load_n(&lock->bias, __ATOMIC_RELAXED) || lock->revoking) {
        (void)exclusion_rwlock_write_revoke(lock, 0);
    }
    return 1;
}

static inline void exclusion_rwlock_write_unlock(exclusion_rwlock *lock) {
#if EXCLUSION_OWNED_LOCK
    exclusion_lock_unlock(&lock->writers);
#else
    pthread_rwlock_unlock(&lock->underlying);
#endif
}

#endif
