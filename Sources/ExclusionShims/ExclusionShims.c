#include "ExclusionShims.h"

#include <sched.h>
#include <time.h>

_Thread_local exclusion_thread_record exclusion_thread __attribute__((tls_model("initial-exec")));

static uint32_t next_thread_index = 0;

exclusion_short_waits exclusion_short_wait_places[EXCLUSION_SHORT_WAIT_PLACES];

exclusion_thread_record *exclusion_current_thread_slow(void) {
    exclusion_thread_record *record = &exclusion_thread;
    record->index = __atomic_add_fetch(&next_thread_index, 1, __ATOMIC_RELAXED);
    if (record->index == 0) {
        // After 2^32 threads the counter wraps; 0 means "unassigned", so skip it.
        record->index = __atomic_add_fetch(&next_thread_index, 1, __ATOMIC_RELAXED);
    }
    return record;
}

uint64_t exclusion_monotonic_now(void) {
    struct timespec now;
    // Can't fail: the clock exists on every platform Exclusion builds for, and `now` is valid.
    (void)clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

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
    struct timespec interval = {(time_t)(sleep_ns / 1000000000u), (long)(sleep_ns % 1000000000u)};
    // A signal may cut the sleep short (EINTR): the caller looks again sooner, which is harmless.
    (void)nanosleep(&interval, NULL);
}
