#include "ExclusionLockTesting.h"

#if defined(__linux__)

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

#endif
