#include "ExclusionShims.h"

#if !EXCLUSION_OWNED_LOCK

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

int exclusion_lock_fenced = 0;

static uint64_t fences = 0;


/// Runs when the library is loaded, before any lock can exist: registering is what lets
/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED` be used later, and the way releasers give a lock back must
/// not change while anyone holds one. Only on x86-64, where the protocol's argument is checked.
__attribute__((constructor)) static void exclusion_lock_setup(void) {
#if defined(__x86_64__)
    long commands = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    // A failed query or registration (an old kernel, a seccomp filter) leaves the symmetric
    // protocol, which needs no fence.
    if (commands > 0 && (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0
        && syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0) {
        exclusion_lock_fenced = 1;
    }
#endif
}

uint64_t exclusion_lock_fences(void) {
    return __atomic_load_n(&fences, __ATOMIC_RELAXED);
}

int exclusion_lock_fence(void) {
    // Registered by the constructor, so it can only fail if a filter installed since forbids it;
    // then the waiter polls instead of trusting releasers to see it.
    if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
        return 0;
    }
    __atomic_fetch_add(&fences, 1, __ATOMIC_RELAXED);
    return 1;
}

/// The first part of a wait: `EXCLUSION_BACKOFF_SPINS` looks at `lock`, a spin hint apart; 1 once
/// it holds it, 0 if the spin ended first.
static int spin(exclusion_lock *lock) {
    exclusion_backoff backoff = {0};
    while (exclusion_backoff_spin(&backoff)) {
        if (__atomic_load_n(&lock->word, __ATOMIC_RELAXED) == 0 && exclusion_lock_try(lock)) {
            return 1;
        }
    }
    return 0;
}

/// Waits for `lock` until `deadline` (CLOCK_MONOTONIC nanoseconds; 0 for no deadline); 1 once it
/// holds it, 0 if the deadline passed first. With `spinning`, it spins before it sleeps.
static int wait_until(exclusion_lock *lock, uint64_t deadline, int spinning) {
    if (spinning && spin(lock)) {
        return 1;
    }
    // Counted from here on: every release sees `sleepers` non-zero and takes the slow path.
    uint32_t before = __atomic_fetch_add(&lock->sleepers, 1, __ATOMIC_SEQ_CST);
    int polling = 0;
    if (__atomic_load_n(&exclusion_lock_fenced, __ATOMIC_RELAXED) && (before & EXCLUSION_LOCK_EPISODE) == 0) {
        if (exclusion_lock_fence()) {
            __atomic_fetch_or(&lock->sleepers, EXCLUSION_LOCK_EPISODE, __ATOMIC_SEQ_CST);
        } else {
            polling = 1;  // a releaser might miss this waiter: look again every EXCLUSION_LOCK_POLL_NS
        }
    }
    int took = 0;
    for (;;) {
        // Before each look: a wake-up sent after this sets `waking` again, so the sleep below
        // returns at once instead of missing it.
        __atomic_store_n(&lock->waking, 0, __ATOMIC_SEQ_CST);
        if (exclusion_lock_try(lock)) {
            took = 1;
            break;
        }
        uint64_t now = deadline != 0 || polling ? exclusion_monotonic_now() : 0;
        if (deadline != 0 && now >= deadline) {
            break;
        }
        uint64_t until = deadline;
        if (polling && (until == 0 || until > now + EXCLUSION_LOCK_POLL_NS)) {
            until = now + EXCLUSION_LOCK_POLL_NS;
        }
        // Woken, a wake-up already there, the time up, a signal, or a spurious return: each sends
        // the waiter back to look at the lock, which is always safe.
        (void)exclusion_park(&lock->waking, 0, until);
    }
    __atomic_fetch_sub(&lock->sleepers, 1, __ATOMIC_SEQ_CST);
    return took;
}

int exclusion_lock_spin(exclusion_lock *lock) {
    return spin(lock);
}

void exclusion_lock_wait(exclusion_lock *lock) {
    (void)wait_until(lock, 0, 1);
}

int exclusion_lock_sleep_until(exclusion_lock *lock, uint64_t deadline) {
    return exclusion_lock_try(lock) || wait_until(lock, deadline, 0);
}

void exclusion_lock_wake(exclusion_lock *lock) {
    // Orders this release's store to `word` before the reads below. A waiter clears `waking` and
    // then tries `word`, each a locked instruction: either its try finds the lock free, or this
    // release finds it counted with `waking` clear, and wakes it.
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    uint32_t sleepers = __atomic_load_n(&lock->sleepers, __ATOMIC_SEQ_CST);
    if ((sleepers & ~EXCLUSION_LOCK_EPISODE) == 0) {
        // Nobody waits. A waiter that counts itself after this read finds the lock free, since the
        // store above is visible. Enough such releases in a row end the episode; the exchange
        // fails, and the episode goes on, if a waiter came meanwhile.
        if (sleepers == EXCLUSION_LOCK_EPISODE
            && __atomic_add_fetch(&lock->quiet, 1, __ATOMIC_RELAXED) >= EXCLUSION_LOCK_QUIET_RELEASES) {
            uint32_t expected = EXCLUSION_LOCK_EPISODE;
            __atomic_compare_exchange_n(&lock->sleepers, &expected, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
            __atomic_store_n(&lock->quiet, 0, __ATOMIC_RELAXED);
        }
        return;
    }
    if (__atomic_load_n(&lock->quiet, __ATOMIC_RELAXED) != 0) {
        __atomic_store_n(&lock->quiet, 0, __ATOMIC_RELAXED);
    }
    uint32_t idle = 0;
    if (__atomic_load_n(&lock->waking, __ATOMIC_RELAXED) == 0
        && __atomic_compare_exchange_n(&lock->waking, &idle, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
        // Wakes nobody if the sleeper hasn't gone to sleep yet: then `waking` set stops it from
        // sleeping.
        exclusion_unpark_one(&lock->waking);
    }
}

#endif
