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

int exclusion_wait_woken(uint32_t *word, uint64_t deadline) {
    // The one spin of every wait (nothing where locks lend priority): a wake-up that comes within
    // it costs neither thread a system call, and the woken thread is running already, where a
    // parked one must first be scheduled. The compare-and-swap below then finds the word woken.
    exclusion_backoff backoff = {0};
    while (__atomic_load_n(word, __ATOMIC_ACQUIRE) != EXCLUSION_WOKEN && exclusion_backoff_spin(&backoff)) {
    }
    for (;;) {
        uint32_t seen = EXCLUSION_WAITING;
        // Says it parks, unless the wake-up came first: then a waker that finds the word parked
        // knows to unpark it, and one that came before this finds nothing to unpark.
        if (!__atomic_compare_exchange_n(word, &seen, EXCLUSION_PARKED, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
            && seen == EXCLUSION_WOKEN) {
            return 1;
        }
        if (exclusion_park(word, EXCLUSION_PARKED, deadline) == ETIMEDOUT
            && __atomic_load_n(word, __ATOMIC_ACQUIRE) != EXCLUSION_WOKEN) {
            return 0;  // still marked parked: a wake-up sent now makes a call that wakes nobody
        }
    }
}

int exclusion_wait_for_change(exclusion_change_word *word, uint32_t seen, uint64_t deadline) {
    exclusion_backoff backoff = {0};
    while (exclusion_change_word_load(word) == seen) {
        if (exclusion_backoff_spin(&backoff)) continue;
        // Counted before the last look, so that a change made after it sees this thread.
        __atomic_fetch_add(&word->parked, 1, __ATOMIC_SEQ_CST);
        int changed = 1;
        while (exclusion_change_word_load(word) == seen) {
            if (exclusion_park(&word->value, seen, deadline) == ETIMEDOUT && exclusion_change_word_load(word) == seen) {
                changed = 0;
                break;
            }
        }
        __atomic_fetch_sub(&word->parked, 1, __ATOMIC_SEQ_CST);
        return changed;
    }
    return 1;
}
