#include "ExclusionShims.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <time.h>

_Thread_local exclusion_thread_record exclusion_thread __attribute__((tls_model("initial-exec")));

static uint32_t next_thread_index = 0;

exclusion_thread_record *exclusion_current_thread_slow(void) {
    exclusion_thread_record *record = &exclusion_thread;
    record->index = __atomic_add_fetch(&next_thread_index, 1, __ATOMIC_RELAXED);
    if (record->index == 0) {
        // After 2^32 threads the counter wraps; 0 means "unassigned", so skip it.
        record->index = __atomic_add_fetch(&next_thread_index, 1, __ATOMIC_RELAXED);
    }
    return record;
}

#if !EXCLUSION_OWNED_LOCK

void exclusion_backoff_wait(exclusion_backoff *backoff) {
    if (exclusion_backoff_spin(backoff)) {
        return;
    }
    if (backoff->rounds < EXCLUSION_BACKOFF_SPINS + EXCLUSION_BACKOFF_YIELDS) {
        backoff->rounds += 1;
        // Returns at once when nothing else is runnable here; otherwise what runs may be the very
        // thread this one waits for. Its result says nothing worth acting on.
        (void)sched_yield();
        return;
    }
    uint32_t doublings = backoff->rounds - EXCLUSION_BACKOFF_SPINS - EXCLUSION_BACKOFF_YIELDS;
    uint64_t sleep_ns = EXCLUSION_BACKOFF_LONGEST_SLEEP_NS;
    if (doublings < 16) {
        uint64_t grown = (uint64_t)EXCLUSION_BACKOFF_FIRST_SLEEP_NS << doublings;
        if (grown < sleep_ns) {
            sleep_ns = grown;
            backoff->rounds += 1;
        }
    }
    struct timespec interval = exclusion_timespec(sleep_ns);
    // A signal may cut the sleep short (EINTR): the caller looks again sooner, which is harmless.
    (void)nanosleep(&interval, NULL);
}

void exclusion_short_lock_wait(exclusion_short_lock *lock) {
    do {
        exclusion_backoff backoff = {0};
        while (__atomic_load_n(&lock->locked, __ATOMIC_RELAXED) != 0) exclusion_backoff_wait(&backoff);
    } while (__atomic_exchange_n(&lock->locked, 1, __ATOMIC_ACQUIRE) != 0);
}

int exclusion_wait_for_change(uint32_t *word, uint32_t seen, uint64_t deadline) {
    exclusion_backoff backoff = {0};
    while (__atomic_load_n(word, __ATOMIC_SEQ_CST) == seen) {
        if (deadline != 0 && exclusion_monotonic_now() >= deadline) return 0;
        exclusion_backoff_wait(&backoff);
    }
    return 1;
}

#else

int exclusion_wait_for_change(uint32_t *word, uint32_t seen, uint64_t deadline) {
    while (__atomic_load_n(word, __ATOMIC_SEQ_CST) == seen) {
        if (exclusion_sleep_on(word, seen, deadline) == ETIMEDOUT && __atomic_load_n(word, __ATOMIC_SEQ_CST) == seen) {
            return 0;
        }
    }
    return 1;
}

#endif
