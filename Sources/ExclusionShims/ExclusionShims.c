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
    while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == 0) {
        if (exclusion_park(word, 0, deadline) == ETIMEDOUT && __atomic_load_n(word, __ATOMIC_ACQUIRE) == 0) {
            return 0;
        }
    }
    return 1;
}

int exclusion_wait_for_change(uint32_t *word, uint32_t seen, uint64_t deadline) {
    exclusion_backoff backoff = {0};
    while (__atomic_load_n(word, __ATOMIC_SEQ_CST) == seen) {
        if (exclusion_backoff_spin(&backoff)) continue;
        if (exclusion_park(word, seen, deadline) == ETIMEDOUT && __atomic_load_n(word, __ATOMIC_SEQ_CST) == seen) {
            return 0;
        }
    }
    return 1;
}
