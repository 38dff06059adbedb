#include "ExclusionPlatform.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__APPLE__)
#include <os/clock.h>
#include <os/os_sync_wait_on_address.h>
#elif defined(__linux__)
#include <execinfo.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

void exclusion_fail(const char *message) {
    ssize_t written = write(2, message, strlen(message));
    (void)written;  // nothing more can be done if standard error is gone too
    abort();
}

// MARK: - Time

uint64_t exclusion_monotonic_now(void) {
    struct timespec now;
    // Can't fail: the clock exists on every platform Exclusion builds for, and `now` is valid.
    (void)clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

uint64_t exclusion_nanoseconds_until(uint64_t deadline) {
    uint64_t now = exclusion_monotonic_now();
    return deadline > now ? deadline - now : 0;
}

// Here rather than inline in the header: a sleep enters this file anyway, so a reader of the path
// finds the conversion where the sleep is.
struct timespec exclusion_timespec(uint64_t nanoseconds) {
    struct timespec time = {(time_t)(nanoseconds / 1000000000u), (long)(nanoseconds % 1000000000u)};
    return time;
}

uint64_t exclusion_sleep_timeout(uint64_t deadline, uint64_t now, int *shortened) {
    uint64_t remaining = deadline > now ? deadline - now : 0;
    *shortened = remaining > EXCLUSION_LONGEST_SLEEP_NANOSECONDS;
    return *shortened ? EXCLUSION_LONGEST_SLEEP_NANOSECONDS : remaining;
}

// MARK: - Sleeping on a word

#if defined(__APPLE__)

int exclusion_park(uint32_t *word, uint32_t expected, uint64_t deadline) {
    int result;
    if (deadline == 0) {
        result = os_sync_wait_on_address(word, expected, sizeof *word, OS_SYNC_WAIT_ON_ADDRESS_NONE);
    } else {
        // A timeout of 0 is invalid: a deadline that has passed ends the wait here.
        int shortened;
        uint64_t timeout = exclusion_sleep_timeout(deadline, exclusion_monotonic_now(), &shortened);
        if (timeout == 0) return ETIMEDOUT;
        result = os_sync_wait_on_address_with_timeout(
            word, expected, sizeof *word, OS_SYNC_WAIT_ON_ADDRESS_NONE, OS_CLOCK_MACH_ABSOLUTE_TIME, timeout);
        // A sleep cut short of the deadline ends in a look, as a spurious wake-up does.
        if (result < 0 && errno == ETIMEDOUT && shortened) return 0;
    }
    if (result >= 0) return 0;
    switch (errno) {
    case ETIMEDOUT: return ETIMEDOUT;
    // Interrupted, out of kernel memory, or a fault the documentation calls transient: the caller
    // looks again, and sleeps again if it must.
    case EINTR:
    case ENOMEM:
    case EFAULT: return 0;
    default: exclusion_fail("Exclusion: the system refused to wait on a lock (os_sync_wait_on_address); stopping.\n");
    }
}

void exclusion_unpark_one(uint32_t *word) {
    // ENOENT: nobody was asleep, which is fine. Anything else is a misuse of the call.
    if (os_sync_wake_by_address_any(word, sizeof *word, OS_SYNC_WAKE_BY_ADDRESS_NONE) != 0 && errno != ENOENT) {
        exclusion_fail("Exclusion: the system refused to wake a thread waiting on a lock; stopping.\n");
    }
}

void exclusion_unpark_all(uint32_t *word) {
    if (os_sync_wake_by_address_all(word, sizeof *word, OS_SYNC_WAKE_BY_ADDRESS_NONE) != 0 && errno != ENOENT) {
        exclusion_fail("Exclusion: the system refused to wake threads waiting on a lock; stopping.\n");
    }
}

#else

int exclusion_park(uint32_t *word, uint32_t expected, uint64_t deadline) {
    struct timespec until = exclusion_timespec(deadline);
    // FUTEX_WAIT_BITSET takes an absolute moment on CLOCK_MONOTONIC, the clock of every deadline.
    long result = syscall(SYS_futex, word, FUTEX_WAIT_BITSET_PRIVATE, expected, deadline != 0 ? &until : NULL,
                          NULL, FUTEX_BITSET_MATCH_ANY);
    if (result == 0) return 0;
    switch (errno) {
    case ETIMEDOUT: return ETIMEDOUT;
    // The word had changed already (EAGAIN), or a signal came (EINTR): the caller looks again.
    case EAGAIN:
    case EINTR: return 0;
    default: exclusion_fail("Exclusion: the kernel refused to wait on a lock (futex); stopping instead of spinning.\n");
    }
}

void exclusion_unpark_one(uint32_t *word) {
    // Returns how many it woke; only an invalid address or operation makes it fail.
    if (syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) < 0) {
        exclusion_fail("Exclusion: the kernel refused to wake a thread waiting on a lock (futex); stopping.\n");
    }
}

void exclusion_unpark_all(uint32_t *word) {
    if (syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0) < 0) {
        exclusion_fail("Exclusion: the kernel refused to wake threads waiting on a lock (futex); stopping.\n");
    }
}

#endif

// MARK: - The portable build's stand-ins

#if EXCLUSION_OWNED_LOCK && !defined(__APPLE__)

_Thread_local uint32_t exclusion_system_thread_id __attribute__((tls_model("initial-exec")));

uint32_t exclusion_system_thread_id_slow(void) {
    exclusion_system_thread_id = (uint32_t)syscall(SYS_gettid);
    return exclusion_system_thread_id;
}

void exclusion_system_lock_wait(exclusion_system_lock *lock) {
    uint32_t self = exclusion_system_thread();
    uint32_t current = __atomic_load_n(&lock->owner, __ATOMIC_RELAXED);
    for (;;) {
        if (current == 0) {
            // Taken with the sleepers bit set, whether or not others still sleep: its release then
            // wakes the next, instead of stranding it (the bit can't tell one sleeper from many).
            if (__atomic_compare_exchange_n(&lock->owner, &current, self | EXCLUSION_SYSTEM_LOCK_SLEEPERS, 0,
                                            __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
                return;
            }
            continue;
        }
        if ((current & ~EXCLUSION_SYSTEM_LOCK_SLEEPERS) == self) {
            exclusion_fail("Exclusion: a thread waited for a lock it holds; stopping.\n");
        }
        if (!(current & EXCLUSION_SYSTEM_LOCK_SLEEPERS)) {
            uint32_t marked = current | EXCLUSION_SYSTEM_LOCK_SLEEPERS;
            if (!__atomic_compare_exchange_n(&lock->owner, &current, marked, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
                continue;
            }
            current = marked;
        }
        // Returns at once if the word changed since it was read (the lock was given back).
        (void)exclusion_park(&lock->owner, current, 0);
        current = __atomic_load_n(&lock->owner, __ATOMIC_RELAXED);
    }
}

void exclusion_system_lock_hand_over(exclusion_system_lock *lock) {
    uint32_t owner = __atomic_load_n(&lock->owner, __ATOMIC_RELAXED) & ~EXCLUSION_SYSTEM_LOCK_SLEEPERS;
    if (owner != exclusion_system_thread()) {
        // Where it happened, which the crash report of a process stopped by abort() may not show:
        // this is what the portable build exists to find.
        static const char message[] = "Exclusion: a lock was given back by a thread that does not hold it; stopping.\n";
        ssize_t written = write(2, message, sizeof message - 1);
        (void)written;
        void *frames[64];
        backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
        abort();
    }
    // The exchange, not a store: as `os_unfair_lock_unlock`, an atomic read-modify-write with
    // releasing order, which the owned lock's release relies on (`ExclusionOwnedLock.h`).
    (void)__atomic_exchange_n(&lock->owner, 0, __ATOMIC_RELEASE);
    exclusion_unpark_one(&lock->owner);
}

#endif

// MARK: - Lending priority

exclusion_priority_loan exclusion_lend_priority(pthread_t thread) {
#if defined(__APPLE__)
    qos_class_t own = qos_class_self();
    // A thread without a quality of service has none to lend.
    return own == QOS_CLASS_UNSPECIFIED ? NULL : pthread_override_qos_class_start_np(thread, own, 0);
#else
    (void)thread;
    return NULL;
#endif
}

void exclusion_end_loan(exclusion_priority_loan loan) {
#if defined(__APPLE__)
    // Fails only for a loan that doesn't exist, which this code never passes.
    if (loan != NULL) (void)pthread_override_qos_class_end_np(loan);
#else
    (void)loan;
#endif
}
