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

#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int exclusion_lock_fenced = 0;

/// How often a waiter looks at the lock, with a spin hint in between, before it sleeps: together
/// about a microsecond, less than the fence and the sleep would cost.
#define EXCLUSION_LOCK_SPINS 64

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

void exclusion_lock_test_release_silently(exclusion_lock *lock) {
    __atomic_store_n(&lock->word, 0, __ATOMIC_SEQ_CST);
}

void exclusion_lock_test_use_fallback(void) {
    __atomic_store_n(&exclusion_lock_fenced, 0, __ATOMIC_SEQ_CST);
}

static uint64_t monotonic_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/// Runs after a waiter counted itself in `sleepers`, before it looks at the lock again and
/// sleeps; whether releasers are now sure to see it counted.
static int fence_for_sleeping(void) {
    if (!__atomic_load_n(&exclusion_lock_fenced, __ATOMIC_RELAXED)) {
        return 1;  // releasers exchange and read with sequential consistency: nothing to add
    }
    return syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/// Looks at the lock `EXCLUSION_LOCK_SPINS` times, with a spin hint in between, and takes it if it
/// is free; 1 if it did.
static int spin_for(exclusion_lock *lock) {
    for (int spin = 0; spin < EXCLUSION_LOCK_SPINS; spin++) {
        if (__atomic_load_n(&lock->word, __ATOMIC_RELAXED) == 0 && exclusion_lock_try(lock)) {
            return 1;
        }
        exclusion_spin_hint();
    }
    return 0;
}

/// Waits for `lock` at most `timeout_ns` (forever if negative); 1 once it holds it.
static int wait_for(exclusion_lock *lock, int64_t timeout_ns) {
    if (spin_for(lock)) {
        return 1;
    }
    uint64_t deadline = timeout_ns >= 0 ? monotonic_now() + (uint64_t)timeout_ns : 0;
    // Counted once, fenced once: every release from here on sees this thread counted, and takes
    // the slow path that checks `waking` behind a fence of its own.
    __atomic_fetch_add(&lock->sleepers, 1, __ATOMIC_SEQ_CST);
    // If the fence failed, releasers might miss this sleeper: then it sleeps at most a millisecond
    // at a time and looks again, slower but never stuck.
    int fenced = fence_for_sleeping();
    int took = 0;
    for (;;) {
        // Read before `waking` is cleared: a wake-up that a releaser sends after seeing it cleared
        // changes `wakeups`, so the sleep below returns at once even if nobody was asleep to wake.
        uint32_t wakeups = __atomic_load_n(&lock->wakeups, __ATOMIC_SEQ_CST);
        // The last wake-up has arrived or missed: from here on releasers must wake this thread.
        __atomic_store_n(&lock->waking, 0, __ATOMIC_SEQ_CST);
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
        // Returns at once if a wake-up was sent since `wakeups` was read (the kernel compares
        // under its own lock), when woken, or at the timeout.
        syscall(SYS_futex, &lock->wakeups, FUTEX_WAIT_PRIVATE, wakeups, timeout, NULL, 0);
    }
    __atomic_fetch_sub(&lock->sleepers, 1, __ATOMIC_SEQ_CST);
    // A wake-up may have been meant for this thread: let the next release send another.
    __atomic_store_n(&lock->waking, 0, __ATOMIC_SEQ_CST);
    return took;
}

void exclusion_lock_wait(exclusion_lock *lock) {
    (void)wait_for(lock, -1);
}

int exclusion_lock_wait_at_most(exclusion_lock *lock, int64_t timeout_ns) {
    return wait_for(lock, timeout_ns < 0 ? 0 : timeout_ns);
}

void exclusion_lock_wake(exclusion_lock *lock) {
    // A counted sleeper fenced once, when it was counted, not each time it clears `waking`: this
    // fence orders the release's store before the read of `waking` instead.
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    uint32_t idle = 0;
    if (__atomic_load_n(&lock->waking, __ATOMIC_RELAXED) == 0
        && __atomic_compare_exchange_n(&lock->waking, &idle, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
        __atomic_fetch_add(&lock->wakeups, 1, __ATOMIC_SEQ_CST);
        syscall(SYS_futex, &lock->wakeups, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
}

#endif
