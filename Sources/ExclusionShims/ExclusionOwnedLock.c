#include "ExclusionOwnedLock.h"

#if EXCLUSION_OWNED_LOCK

#include <errno.h>

int exclusion_lock_sleep_until(exclusion_lock *lock, uint64_t deadline) {
    if (deadline == 0) {
        exclusion_system_lock_lock(&lock->system);
        return 1;
    }
    if (exclusion_lock_try(lock)) {
        return 1;
    }
    // Counted from here on: every release looks for a timed waiter to wake.
    __atomic_fetch_add(&lock->timed, 1, __ATOMIC_SEQ_CST);
    int took = 0;
    int timed_out = 0;
    for (;;) {
        // Before each try: a wake-up sent after it sets `waking` again, so the sleep below returns
        // at once instead of missing it.
        __atomic_store_n(&lock->waking, 0, __ATOMIC_SEQ_CST);
        if (exclusion_lock_try(lock)) {
            took = 1;
            break;
        }
        // Only after a failed try, even past the deadline: a woken waiter never leaves while the
        // lock is free, and one that leaves finds it held, by a thread whose release wakes the next.
        if (timed_out) {
            break;
        }
        timed_out = exclusion_park(&lock->waking, 0, deadline) == ETIMEDOUT;
    }
    __atomic_fetch_sub(&lock->timed, 1, __ATOMIC_SEQ_CST);
    return took;
}

void exclusion_lock_wake(exclusion_lock *lock) {
    uint32_t idle = 0;
    if (__atomic_load_n(&lock->waking, __ATOMIC_SEQ_CST) == 0
        && __atomic_compare_exchange_n(&lock->waking, &idle, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
        exclusion_unpark_one(&lock->waking);
    }
}

#endif
