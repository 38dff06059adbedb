// `exclusion_rwlock` (`ExclusionReadersWriterLock.h`): the table of visible readers every lock
// shares, readers through the read bias or the underlying lock, and writers that take the
// underlying lock, withdraw the bias and wait for the readers inside, asleep.

#include "ExclusionReadersWriterLock.h"
#include "ExclusionShims.h"

#include <errno.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "A writer sleeps on a slot's low half, where the reader's state is: little-endian only."
#endif

/// Each slot on its own 8 bytes, the table on its own cache lines.
__attribute__((aligned(128))) uintptr_t exclusion_visible_readers[EXCLUSION_VISIBLE_READERS];

/// The half of a slot a writer sleeps on: the low one, which holds the reader's state, and which a
/// reader's exit changes (its state is never 0).
static uint32_t *sleep_word(uintptr_t *slot) {
    return (uint32_t *)slot;
}

/// Turns the bias back on if enough time has passed since it was withdrawn; call holding
/// `writers`, so that no writer is inside.
static void restore_bias_if_due(exclusion_rwlock *lock) {
    if (__atomic_load_n(&lock->bias, __ATOMIC_RELAXED) || !exclusion_rwlock_bias_allowed()) return;
    if (exclusion_monotonic_now() >= __atomic_load_n(&lock->bias_inhibited_until, __ATOMIC_RELAXED)) {
        __atomic_store_n(&lock->bias, 1, __ATOMIC_RELEASE);
    }
}

// MARK: - Readers

/// `writers` by `deadline` (0: as long as it takes).
static int take_writers(exclusion_rwlock *lock, uint64_t deadline) {
    return exclusion_lock_try(&lock->writers) || exclusion_lock_sleep_until(&lock->writers, deadline);
}

/// A slow-path reader counts itself in while it holds `writers`, which no writer then holds; by
/// `deadline` (0: as long as it takes), or only if that needs no waiting (`trying`).
static int read_underlying(exclusion_rwlock *lock, uint64_t deadline, int trying) {
    if (trying ? !exclusion_lock_try(&lock->writers) : !take_writers(lock, deadline)) return 0;
    __atomic_fetch_add(&lock->readers, 1, __ATOMIC_RELAXED);
    restore_bias_if_due(lock);
    exclusion_lock_unlock(&lock->writers);
    return 1;
}

int exclusion_rwlock_read_until(exclusion_rwlock *lock, uint32_t thread, uint64_t deadline) {
    int ticket = exclusion_rwlock_read_quickly(lock, thread);
    if (ticket >= 0) return ticket;
    return read_underlying(lock, deadline, 0) ? EXCLUSION_READ_SLOW : -1;
}

int exclusion_rwlock_try_read(exclusion_rwlock *lock, uint32_t thread) {
    int ticket = exclusion_rwlock_read_quickly(lock, thread);
    if (ticket >= 0) return ticket;
    return read_underlying(lock, 0, 1) ? EXCLUSION_READ_SLOW : -1;
}

void exclusion_rwlock_read_unlock_slowly(exclusion_rwlock *lock) {
    // The last reader out while a writer waits wakes it: the writer sleeps on `readers` itself, so
    // a wake-up can't fall between its look and its sleep.
    if (__atomic_fetch_sub(&lock->readers, 1, __ATOMIC_RELEASE) == (EXCLUSION_READERS_WRITER_WAITS | 1)) {
        exclusion_unpark_one(&lock->readers);
    }
}

void exclusion_rwlock_wake_writer(uintptr_t *slot) {
    // Where the reader wrote its slot with a plain store, the writer, once woken, must see it:
    // woken before the store is, it would find the old value and sleep on it again, and the store
    // would land with nobody to wake it (`Verification/fenced-readers.pml`, NO_FENCE_BEFORE_WAKE).
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    exclusion_unpark_one(sleep_word(slot));
}

// MARK: - Writers

/// Holding `writers`: waits by `deadline` (0: none) for the slow-path readers inside to leave.
static int wait_for_readers(exclusion_rwlock *lock, uint64_t deadline) {
    if (__atomic_load_n(&lock->readers, __ATOMIC_ACQUIRE) == 0) return 1;
    __atomic_fetch_or(&lock->readers, EXCLUSION_READERS_WRITER_WAITS, __ATOMIC_SEQ_CST);
    uint32_t readers;
    while ((readers = __atomic_load_n(&lock->readers, __ATOMIC_ACQUIRE)) != EXCLUSION_READERS_WRITER_WAITS) {
        if (exclusion_park(&lock->readers, readers, deadline) == ETIMEDOUT
            && __atomic_load_n(&lock->readers, __ATOMIC_ACQUIRE) != EXCLUSION_READERS_WRITER_WAITS) {
            __atomic_fetch_and(&lock->readers, ~EXCLUSION_READERS_WRITER_WAITS, __ATOMIC_RELAXED);
            return 0;
        }
    }
    // No reader can come in meanwhile: a slow-path reader needs `writers`.
    __atomic_store_n(&lock->readers, 0, __ATOMIC_RELAXED);
    return 1;
}

/// `writers`, and the slow-path readers inside gone, by `deadline` (0: none); 1 if it has both, 0
/// holding nothing.
static int write_begin(exclusion_rwlock *lock, uint64_t deadline) {
    if (!take_writers(lock, deadline)) return 0;
    if (wait_for_readers(lock, deadline)) return 1;
    exclusion_lock_unlock(&lock->writers);
    return 0;  // only with a deadline: without one the wait ends only when the readers are gone
}

/// Whether `value`, a slot's, names a reader of `lock`.
static int names(uintptr_t value, const exclusion_rwlock *lock) {
    return (value & ~(uintptr_t)EXCLUSION_READ_SLOT_STATE) == (uintptr_t)lock;
}

/// How many of a lock's slots a writer that has withdrawn the bias looks at: one per thread index
/// handed out so far, up to all the slots a lock's readers can take. Read after the withdrawal: a
/// reader's index is published before it announces itself, so a reader the writer must wait for
/// has an index the writer counts (`Verification/bias.pml`).
static uint32_t slots_to_look_at(void) {
    uint32_t limit = __atomic_load_n(&exclusion_thread_index_limit, __ATOMIC_SEQ_CST);
    return limit >= EXCLUSION_VISIBLE_READERS_PER_LOCK ? EXCLUSION_VISIBLE_READERS_PER_LOCK : limit + 1;
}

/// How a writer holding `writers` waits for readers in slots, over one withdrawal of the bias.
typedef struct {
    /// Where readers write their slots with plain stores: `waiting` is set and fenced, so that a
    /// reader that changes its slot wakes this writer.
    int announced;
    /// The fence failed after the library could fence when it loaded: a reader might not see
    /// `waiting`, so the writer looks again now and then.
    int polling;
} slot_wait;

/// Sleeps until `slot` no longer holds `seen`, until `deadline` (0: none); ETIMEDOUT if it passed.
/// In the fenced protocol the first sleep of a withdrawal announces the writer first; in the
/// other, the slot is marked, and the sleep is skipped if the reader changed it meanwhile.
static int sleep_on_slot(exclusion_rwlock *lock, uintptr_t *slot, uintptr_t seen, uint64_t deadline, slot_wait *wait) {
#if EXCLUSION_RWLOCK_FENCED
    {
        if (!wait->announced) {
            __atomic_store_n(&lock->waiting, 1, __ATOMIC_SEQ_CST);
            // Readers are in slots only where the library could fence when it loaded. Should the
            // kernel refuse now (a filter installed since), a reader might not see `waiting`:
            // look again now and then.
            wait->polling = !exclusion_lock_fence();
            wait->announced = 1;
            return 0;  // look again, past the fence, before sleeping
        }
        uint64_t until = deadline;
        if (wait->polling) {
            uint64_t poll = exclusion_monotonic_now() + EXCLUSION_LOCK_POLL_NS;
            if (until == 0 || until > poll) until = poll;
        }
        int status = exclusion_park(sleep_word(slot), (uint32_t)seen, until);
        return status == ETIMEDOUT && until == deadline ? ETIMEDOUT : 0;
    }
#else
    (void)lock, (void)wait;
    uintptr_t marked = seen | EXCLUSION_READ_SLOT_WRITER_WAITS;
    if (seen != marked && !__atomic_compare_exchange_n(slot, &seen, marked, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
        return 0;  // the reader moved on meanwhile: look again
    }
    return exclusion_park(sleep_word(slot), (uint32_t)marked, deadline);
#endif
}

/// The withdrawal is over: readers need not look for this writer any more.
static void end_slot_wait(exclusion_rwlock *lock, slot_wait *wait) {
    if (wait->announced) __atomic_store_n(&lock->waiting, 0, __ATOMIC_RELAXED);
}

/// Whether `slot` holds no reader of `lock` that must be waited for. A reader announces itself
/// before it checks the bias, and only then reads; one caught in between is waited out, since it
/// may yet see the bias withdrawn and leave, and failing for it would be a spurious failure.
static int slot_is_free(exclusion_rwlock *lock, uintptr_t *slot, slot_wait *wait) {
    for (;;) {
        uintptr_t seen = __atomic_load_n(slot, __ATOMIC_SEQ_CST);
        if (!names(seen, lock)) return 1;
        if ((seen & EXCLUSION_READ_SLOT_STATE & ~(uintptr_t)EXCLUSION_READ_SLOT_WRITER_WAITS)
            == EXCLUSION_READ_SLOT_READING) {
            return 0;
        }
        (void)sleep_on_slot(lock, slot, seen, 0, wait);
    }
}

/// Waits by `deadline` (0: none) until `slot` no longer names a reader of `lock`.
static int wait_for_slot(exclusion_rwlock *lock, uintptr_t *slot, uint64_t deadline, slot_wait *wait) {
    uintptr_t seen;
    while (names(seen = __atomic_load_n(slot, __ATOMIC_SEQ_CST), lock)) {
        if (sleep_on_slot(lock, slot, seen, deadline, wait) == ETIMEDOUT
            && names(__atomic_load_n(slot, __ATOMIC_SEQ_CST), lock)) {
            return 0;
        }
    }
    return 1;
}

int exclusion_rwlock_write_revoke(exclusion_rwlock *lock, uint64_t deadline) {
    uint64_t start = 0;
    if (__atomic_load_n(&lock->bias, __ATOMIC_RELAXED)) {
        start = exclusion_monotonic_now();
        __atomic_store_n(&lock->bias, 0, __ATOMIC_SEQ_CST);
    } else if (!lock->revoking) {
        return 1;  // readers that find no bias only pass through the slots, reading nothing
    }
    slot_wait wait = {0, 0};
    uint32_t threads = slots_to_look_at();
    for (uint32_t thread = 0; thread < threads; thread++) {
        uintptr_t *slot = &exclusion_visible_readers[exclusion_visible_reader_slot(lock, thread)];
        if (!wait_for_slot(lock, slot, deadline, &wait)) {
            // Still withdrawn: the caller lets go (a timed write) or waits on.
            end_slot_wait(lock, &wait);
            lock->revoking = 1;
            return 0;
        }
    }
    end_slot_wait(lock, &wait);
    lock->revoking = 0;
    if (start != 0) {
        uint64_t end = exclusion_monotonic_now();
        __atomic_store_n(&lock->bias_inhibited_until, end + (end - start) * 9, __ATOMIC_RELAXED);
    }
    return 1;
}

int exclusion_rwlock_try_write(exclusion_rwlock *lock) {
    if (!exclusion_rwlock_try_write_underlying(lock)) return 0;
    if (!__atomic_load_n(&lock->bias, __ATOMIC_RELAXED)) return 1;
    __atomic_store_n(&lock->bias, 0, __ATOMIC_SEQ_CST);
    slot_wait wait = {0, 0};
    uint32_t threads = slots_to_look_at();
    for (uint32_t thread = 0; thread < threads; thread++) {
        if (!slot_is_free(lock, &exclusion_visible_readers[exclusion_visible_reader_slot(lock, thread)], &wait)) {
            // A fast-path reader is inside: undo, as if the lock had been busy.
            end_slot_wait(lock, &wait);
            __atomic_store_n(&lock->bias, 1, __ATOMIC_RELEASE);
            exclusion_lock_unlock(&lock->writers);
            return 0;
        }
    }
    end_slot_wait(lock, &wait);
    return 1;
}

int exclusion_rwlock_write_until(exclusion_rwlock *lock, uint64_t deadline) {
    if (!write_begin(lock, deadline)) return 0;
    if (exclusion_rwlock_write_revoke(lock, deadline)) return 1;
    // Readers that saw the bias withdrawn wait on `writers`, which is given up right after;
    // readers inside carry on.
    lock->revoking = 0;
    __atomic_store_n(&lock->bias, 1, __ATOMIC_RELEASE);
    exclusion_lock_unlock(&lock->writers);
    return 0;
}
