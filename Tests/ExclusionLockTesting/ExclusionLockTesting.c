#include "ExclusionLockTesting.h"

#include <errno.h>
#if defined(__APPLE__)
#include <malloc/malloc.h>
#else
#include <malloc.h>
#endif
#include <sched.h>
#include <signal.h>
#include <string.h>

#if !EXCLUSION_OWNED_LOCK

uint32_t exclusion_lock_testing_waiters(exclusion_lock *lock) {
    return __atomic_load_n(&lock->sleepers, __ATOMIC_SEQ_CST) & ~EXCLUSION_LOCK_EPISODE;
}

int exclusion_lock_testing_in_episode(exclusion_lock *lock) {
    return (__atomic_load_n(&lock->sleepers, __ATOMIC_SEQ_CST) & EXCLUSION_LOCK_EPISODE) != 0;
}

void exclusion_lock_testing_release_silently(exclusion_lock *lock) {
    __atomic_store_n(&lock->word, 0, __ATOMIC_SEQ_CST);
}

void exclusion_lock_testing_use_symmetric_protocol(void) {
    __atomic_store_n(&exclusion_lock_fenced, 0, __ATOMIC_SEQ_CST);
}

int exclusion_lock_testing_is_fenced(void) {
    return __atomic_load_n(&exclusion_lock_fenced, __ATOMIC_SEQ_CST);
}

#else

uint32_t exclusion_lock_testing_waiters(exclusion_lock *lock) {
    return __atomic_load_n(&lock->timed, __ATOMIC_SEQ_CST);
}

void exclusion_lock_testing_release_silently(exclusion_lock *lock) {
    exclusion_system_lock_unlock(&lock->system);
}

#endif

uint32_t exclusion_testing_thread_index_limit(void) {
    return __atomic_load_n(&exclusion_thread_index_limit, __ATOMIC_SEQ_CST);
}

int exclusion_rwlock_testing_is_biased(exclusion_rwlock *lock) {
    return __atomic_load_n(&lock->bias, __ATOMIC_SEQ_CST) != 0;
}

int exclusion_rwlock_testing_announce(exclusion_rwlock *lock, uint32_t thread) {
    uintptr_t *slot = &exclusion_visible_readers[exclusion_visible_reader_slot(lock, thread)];
    uintptr_t free = 0;
    return __atomic_compare_exchange_n(
        slot, &free, (uintptr_t)lock | EXCLUSION_READ_SLOT_ANNOUNCING, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}

void exclusion_rwlock_testing_leave(exclusion_rwlock *lock, uint32_t thread) {
    exclusion_read_slot_write(lock, &exclusion_visible_readers[exclusion_visible_reader_slot(lock, thread)], 0);
}

// MARK: - Pausing a thread

static int exclusion_testing_paused;
static int exclusion_testing_released;

// Spins on an atomic only: nothing else is safe in a signal handler, and the pause lasts as long as
// the test takes to do what it must before resuming the thread.
static void exclusion_testing_hold(int signal) {
    (void)signal;
    int saved = errno;
    __atomic_store_n(&exclusion_testing_paused, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&exclusion_testing_released, __ATOMIC_SEQ_CST)) {
    }
    __atomic_store_n(&exclusion_testing_paused, 0, __ATOMIC_SEQ_CST);
    errno = saved;
}

int exclusion_testing_pause(pthread_t thread, double seconds) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = exclusion_testing_hold;
    // SA_RESTART: a system call the signal interrupts (the sleep a waiter is in) starts again.
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGUSR2, &action, NULL) != 0) return 0;
    __atomic_store_n(&exclusion_testing_released, 0, __ATOMIC_SEQ_CST);
    if (pthread_kill(thread, SIGUSR2) != 0) return 0;
    uint64_t deadline = exclusion_monotonic_now() + (uint64_t)(seconds * 1e9);
    while (!__atomic_load_n(&exclusion_testing_paused, __ATOMIC_SEQ_CST)) {
        if (exclusion_monotonic_now() > deadline) return 0;
        sched_yield();
    }
    return 1;
}

void exclusion_testing_allow_pausing(void) {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGUSR2);
    (void)pthread_sigmask(SIG_UNBLOCK, &signals, NULL);  // fails only for an invalid `how`
}

void exclusion_testing_resume(void) {
    __atomic_store_n(&exclusion_testing_released, 1, __ATOMIC_SEQ_CST);
}

size_t exclusion_testing_allocation_size(const void *pointer) {
#if defined(__APPLE__)
    return malloc_size(pointer);
#else
    return malloc_usable_size((void *)pointer);
#endif
}
