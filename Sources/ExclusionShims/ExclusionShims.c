#include "ExclusionShims.h"

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

// MARK: - The lock

#if defined(__linux__)

#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int exclusion_lock_fenced = 0;
static int skip_fence = 0;

/// How often a waiter looks at the lock, with a spin hint in between, before it sleeps: together
/// about a microsecond, less than the fence and the sleep would cost.
#ifndef EXCLUSION_LOCK_SPINS
#define EXCLUSION_LOCK_SPINS 64
#endif

/// Runs when the library is loaded, before any lock can exist: registering is what lets
/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED` be used later, and the way releasers give a lock back must
/// not change while anyone holds one.
__attribute__((constructor)) static void exclusion_lock_setup(void) {
    long commands = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (commands > 0 && (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0
        && syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0) {
        exclusion_lock_fenced = 1;
    }
}

void exclusion_lock_test_skip_fence(int skip) {
    __atomic_store_n(&skip_fence, skip, __ATOMIC_SEQ_CST);
}

static uint64_t monotonic_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/// Runs after the waiter counted itself in `sleepers`; whether releasers are now sure to see it.
static int fence_for_sleeping(void) {
    if (!exclusion_lock_fenced) {
        return 1;  // releasers exchange and read with sequential consistency: nothing to add
    }
    if (__atomic_load_n(&skip_fence, __ATOMIC_RELAXED)) {
        return 1;  // the broken variant, for the test that must catch it
    }
    return syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/// Waits for `lock` at most `timeout_ns` (forever if negative); 1 once it holds it.
static int wait_for(exclusion_lock *lock, int64_t timeout_ns) {
    for (int spin = 0; spin < EXCLUSION_LOCK_SPINS; spin++) {
        if (__atomic_load_n(&lock->word, __ATOMIC_RELAXED) == 0 && exclusion_lock_try(lock)) {
            return 1;
        }
        exclusion_spin_hint();
    }
    uint64_t deadline = timeout_ns >= 0 ? monotonic_now() + (uint64_t)timeout_ns : 0;
    __atomic_fetch_add(&lock->sleepers, 1, __ATOMIC_SEQ_CST);
    // If the fence failed, releasers might miss this sleeper: then it sleeps at most a millisecond
    // at a time and looks again, slower but never stuck.
    int fenced = fence_for_sleeping();
    int took = 0;
    for (;;) {
        if (exclusion_lock_try(lock)) {
            took = 1;
            break;
        }
        int64_t remaining = -1;
        if (timeout_ns >= 0) {
            remaining = (int64_t)(deadline - monotonic_now());
            if (remaining <= 0) {
                break;
            }
        }
        if (!fenced && (remaining < 0 || remaining > 1000000)) {
            remaining = 1000000;
        }
        struct timespec relative;
        struct timespec *timeout = NULL;
        if (remaining >= 0) {
            relative.tv_sec = remaining / 1000000000;
            relative.tv_nsec = remaining % 1000000000;
            timeout = &relative;
        }
        // Returns at once if the lock was given back since the try (the kernel compares `word`
        // with 1 under its own lock), when woken, or at the timeout; each way, look again.
        syscall(SYS_futex, &lock->word, FUTEX_WAIT_PRIVATE, 1, timeout, NULL, 0);
    }
    __atomic_fetch_sub(&lock->sleepers, 1, __ATOMIC_RELAXED);
    return took;
}

void exclusion_lock_wait(exclusion_lock *lock) {
    (void)wait_for(lock, -1);
}

int exclusion_lock_wait_at_most(exclusion_lock *lock, int64_t timeout_ns) {
    return wait_for(lock, timeout_ns < 0 ? 0 : timeout_ns);
}

void exclusion_lock_wake(exclusion_lock *lock) {
    syscall(SYS_futex, &lock->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

#endif
