// `exclusion_rwlock` (`ExclusionReadersWriterLock.h`) over its underlying lock: making one, readers
// through the read bias or the underlying lock, and writers that withdraw the bias and wait for the
// slots. The underlying lock, for each design, is in ExclusionReadersWriterUnderlying.c.

#include "ExclusionReadersWriterLock.h"
#include "ExclusionReadersWriterUnderlying.h"
#include "ExclusionShims.h"

#include <stdlib.h>

exclusion_rwlock *exclusion_rwlock_create(void) {
    void *memory = NULL;
    if (posix_memalign(&memory, sizeof(exclusion_read_slot), sizeof(exclusion_rwlock)) != 0) {
        exclusion_fail("Exclusion: out of memory for a readers-writer lock.\n");
    }
    exclusion_rwlock *lock = memory;
    for (int index = 0; index < EXCLUSION_READ_SLOTS; index++) lock->slots[index].value = 0;
    lock->bias = 1;
    lock->bias_inhibited_until = 0;
    lock->revoking = 0;
#if EXCLUSION_OWNED_LOCK
    exclusion_lock_init(&lock->writers);
    lock->readers = 0;
#else
    // glibc prefers readers by default, which lets a stream of readers starve a writer.
    pthread_rwlockattr_t attributes;
    pthread_rwlockattr_init(&attributes);
#if defined(__GLIBC__)
    pthread_rwlockattr_setkind_np(&attributes, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
    int status = pthread_rwlock_init(&lock->underlying, &attributes);
    pthread_rwlockattr_destroy(&attributes);
    if (status != 0) exclusion_fail("Exclusion: pthread_rwlock_init failed.\n");
#endif
    return lock;
}

void exclusion_rwlock_destroy(exclusion_rwlock *lock) {
#if !EXCLUSION_OWNED_LOCK
    pthread_rwlock_destroy(&lock->underlying);
#endif
    free(lock);
}

// MARK: - Readers

int exclusion_rwlock_read_until(exclusion_rwlock *lock, uint32_t thread, uint64_t deadline) {
    int ticket = exclusion_rwlock_read_quickly(lock, thread);
    if (ticket >= 0) return ticket;
    return exclusion_rwlock_read_underlying(lock, deadline, 0) ? EXCLUSION_READ_SLOW : -1;
}

int exclusion_rwlock_try_read(exclusion_rwlock *lock, uint32_t thread) {
    int ticket = exclusion_rwlock_read_quickly(lock, thread);
    if (ticket >= 0) return ticket;
    return exclusion_rwlock_read_underlying(lock, 0, 1) ? EXCLUSION_READ_SLOW : -1;
}

// MARK: - Writers

int exclusion_rwlock_write_revoke(exclusion_rwlock *lock, uint64_t deadline) {
    uint64_t start = 0;
    if (__atomic_load_n(&lock->bias, __ATOMIC_RELAXED)) {
        start = exclusion_monotonic_now();
        __atomic_store_n(&lock->bias, 0, __ATOMIC_SEQ_CST);
    } else if (!lock->revoking) {
        return 1;  // readers that find no bias only pass through the slots, reading nothing
    }
    for (int index = 0; index < EXCLUSION_READ_SLOTS; index++) {
        if (!exclusion_rwlock_wait_for_slot(lock, index, deadline)) {
            // Still withdrawn: the caller lets go (a timed write) or waits on (a watched one).
            lock->revoking = 1;
            return 0;
        }
    }
    lock->revoking = 0;
    if (start != 0) {
        uint64_t end = exclusion_monotonic_now();
        __atomic_store_n(&lock->bias_inhibited_until, end + (end - start) * 9, __ATOMIC_RELAXED);
    }
    return 1;
}

int exclusion_rwlock_try_write(exclusion_rwlock *lock) {
    if (!exclusion_rwlock_try_write_underlying(lock)) return 0;
    if (!__atomic_load_n(&lock->bias, __ATOMIC_RELAXED)) return 1;
    __atomic_store_n(&lock->bias, 0, __ATOMIC_SEQ_CST);
    for (int index = 0; index < EXCLUSION_READ_SLOTS; index++) {
        if (!exclusion_rwlock_slot_is_free(lock, index)) {
            // A fast-path reader is inside: undo, as if the lock had been busy.
            __atomic_store_n(&lock->bias, 1, __ATOMIC_RELEASE);
            exclusion_rwlock_unlock_write_underlying(lock);
            return 0;
        }
    }
    return 1;
}

int exclusion_rwlock_write_until(exclusion_rwlock *lock, uint64_t deadline) {
    if (!exclusion_rwlock_write_begin(lock, deadline)) return 0;
    if (exclusion_rwlock_write_revoke(lock, deadline)) return 1;
    // Readers that saw the bias withdrawn wait on the underlying lock, which is given up right
    // after; readers inside carry on.
    lock->revoking = 0;
    __atomic_store_n(&lock->bias, 1, __ATOMIC_RELEASE);
    exclusion_rwlock_unlock_write_underlying(lock);
    return 0;
}
