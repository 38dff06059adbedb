#include "ExclusionLockTesting.h"

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

int exclusion_rwlock_testing_is_biased(exclusion_rwlock *lock) {
    return __atomic_load_n(&lock->bias, __ATOMIC_SEQ_CST) != 0;
}

void exclusion_rwlock_testing_announce(exclusion_rwlock *lock, int index) {
    __atomic_store_n(&lock->slots[index].value, EXCLUSION_READ_SLOT_ANNOUNCING, __ATOMIC_SEQ_CST);
}

void exclusion_rwlock_testing_leave(exclusion_rwlock *lock, int index) {
    exclusion_read_slot_leave(&lock->slots[index]);
}
