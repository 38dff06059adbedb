#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE  // glibc's pthread_rwlock_clock*lock
#endif

// The underlying lock of `exclusion_rwlock`, for each design (`ExclusionReadersWriterLock.h`): a
// slow-path reader takes it (turning the bias back on when due) and gives it back, a writer takes
// it and gives it back, and a writer waits for the slots to empty. The read bias around it is in
// ExclusionReadersWriterLock.c.

#include "ExclusionReadersWriterUnderlying.h"
#include "ExclusionShims.h"

#include <errno.h>
#include <time.h>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#include <sanitizer/tsan_interface.h>
#define EXCLUSION_TSAN 1
#endif
#endif

/// Turns the bias back on if enough time has passed since it was withdrawn; call holding the
/// underlying lock (shared, or on Apple platforms `writers`), so that no writer is inside.
static void restore_bias_if_due(exclusion_rwlock *lock) {
    if (__atomic_load_n(&lock->bias, __ATOMIC_RELAXED)) return;
    if (exclusion_monotonic_now() >= __atomic_load_n(&lock->bias_inhibited_until, __ATOMIC_RELAXED)) {
        __atomic_store_n(&lock->bias, 1, __ATOMIC_RELEASE);
    }
}

#if EXCLUSION_OWNED_LOCK

/// `writers` by `deadline` (0: as long as it takes).
static int take_writers(exclusion_rwlock *lock, uint64_t deadline) {
    return exclusion_lock_try(&lock->writers) || exclusion_lock_sleep_until(&lock->writers, deadline);
}

/// A slow-path reader counts itself in while it holds `writers`, which no writer then holds.
int exclusion_rwlock_read_underlying(exclusion_rwlock *lock, uint64_t deadline, int trying) {
    if (trying ? !exclusion_lock_try(&lock->writers) : !take_writers(lock, deadline)) return 0;
    __atomic_fetch_add(&lock->readers, 1, __ATOMIC_RELAXED);
    restore_bias_if_due(lock);
    exclusion_lock_unlock(&lock->writers);
    return 1;
}

void exclusion_rwlock_read_unlock_slowly(exclusion_rwlock *lock) {
    // The last reader out while a writer waits wakes it: the writer sleeps on `readers` itself, so
    // a wake-up can't fall between its look and its sleep.
    if (__atomic_fetch_sub(&lock->readers, 1, __ATOMIC_RELEASE) == (EXCLUSION_READERS_WRITER_WAITS | 1)) {
        exclusion_wake_one(&lock->readers);
    }
}

/// Holding `writers`: waits by `deadline` (0: none) for the slow-path readers inside to leave.
static int wait_for_readers(exclusion_rwlock *lock, uint64_t deadline) {
    if (__atomic_load_n(&lock->readers, __ATOMIC_ACQUIRE) == 0) return 1;
    __atomic_fetch_or(&lock->readers, EXCLUSION_READERS_WRITER_WAITS, __ATOMIC_SEQ_CST);
    uint32_t readers;
    while ((readers = __atomic_load_n(&lock->readers, __ATOMIC_ACQUIRE)) != EXCLUSION_READERS_WRITER_WAITS) {
        if (exclusion_sleep_on(&lock->readers, readers, deadline) == ETIMEDOUT
            && __atomic_load_n(&lock->readers, __ATOMIC_ACQUIRE) != EXCLUSION_READERS_WRITER_WAITS) {
            __atomic_fetch_and(&lock->readers, ~EXCLUSION_READERS_WRITER_WAITS, __ATOMIC_RELAXED);
            return 0;
        }
    }
    // No reader can come in meanwhile: a slow-path reader needs `writers`.
    __atomic_store_n(&lock->readers, 0, __ATOMIC_RELAXED);
    return 1;
}

int exclusion_rwlock_write_begin(exclusion_rwlock *lock, uint64_t deadline) {
    if (!take_writers(lock, deadline)) return 0;
    if (wait_for_readers(lock, deadline)) return 1;
    if (deadline != 0) {
        exclusion_lock_unlock(&lock->writers);
        return 0;
    }
    return 1;  // not reached: without a deadline the wait ends only when the readers are gone
}

void exclusion_rwlock_unlock_write_underlying(exclusion_rwlock *lock) {
    exclusion_lock_unlock(&lock->writers);
}

void exclusion_rwlock_wake_writer(exclusion_read_slot *slot) {
    exclusion_wake_one(&slot->value);
}

/// Whether slot `index` holds no reader that must be waited for. A reader announces itself before
/// it checks the bias, and only then reads; one caught in between is waited out, since it may yet
/// see the bias withdrawn and leave, and failing for it would be a spurious failure. The slot is
/// marked, and whichever way the reader goes on, it wakes this writer.
int exclusion_rwlock_slot_is_free(exclusion_rwlock *lock, int index) {
    uint32_t *value = &lock->slots[index].value;
    for (;;) {
        uint32_t seen = __atomic_load_n(value, __ATOMIC_SEQ_CST);
        if (seen == 0) return 1;
        if ((seen & ~EXCLUSION_READ_SLOT_WRITER_WAITS) == EXCLUSION_READ_SLOT_READING) return 0;
        uint32_t marked = seen | EXCLUSION_READ_SLOT_WRITER_WAITS;
        if (seen == marked || __atomic_compare_exchange_n(value, &seen, marked, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
            (void)exclusion_sleep_on(value, marked, 0);
        }
    }
}

/// Waits by `deadline` (0: none) for slot `index` to empty: marks it, and sleeps on it until the
/// reader's exit wakes it.
int exclusion_rwlock_wait_for_slot(exclusion_rwlock *lock, int index, uint64_t deadline) {
    uint32_t *value = &lock->slots[index].value;
    uint32_t seen;
    while ((seen = __atomic_load_n(value, __ATOMIC_ACQUIRE)) != 0) {
        uint32_t marked = seen | EXCLUSION_READ_SLOT_WRITER_WAITS;
        if (seen != marked
            && !__atomic_compare_exchange_n(value, &seen, marked, 0, __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE)) {
            continue;  // the reader moved on meanwhile: look again
        }
        if (exclusion_sleep_on(value, marked, deadline) == ETIMEDOUT && __atomic_load_n(value, __ATOMIC_ACQUIRE) != 0) {
            return 0;
        }
    }
    return 1;
}

#else

/// The moment `deadline` as the POSIX timed waits take it: on CLOCK_MONOTONIC where glibc has the
/// clock-taking calls, on CLOCK_REALTIME elsewhere.
static struct timespec timespec_for(uint64_t deadline) {
#if defined(__GLIBC__)
    return exclusion_timespec(deadline);
#else
    struct timespec now;
    (void)clock_gettime(CLOCK_REALTIME, &now);
    uint64_t realtime = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    return exclusion_timespec(realtime + exclusion_nanoseconds_until(deadline));
#endif
}

/// The underlying lock, shared (`reading`) or not, by `deadline` (not 0): 0 if it has it.
static int lock_underlying_until(exclusion_rwlock *lock, uint64_t deadline, int reading) {
    struct timespec at = timespec_for(deadline);
#if defined(__GLIBC__)
#if EXCLUSION_TSAN
    // ThreadSanitizer intercepts the timed calls but not glibc's clock-taking ones: told nothing,
    // it would miss these acquisitions and report the accesses they order as races.
    unsigned flags = __tsan_mutex_try_lock | (reading ? __tsan_mutex_read_lock : 0);
    __tsan_mutex_pre_lock(&lock->underlying, flags);
#endif
    int status = reading ? pthread_rwlock_clockrdlock(&lock->underlying, CLOCK_MONOTONIC, &at)
                         : pthread_rwlock_clockwrlock(&lock->underlying, CLOCK_MONOTONIC, &at);
#if EXCLUSION_TSAN
    __tsan_mutex_post_lock(&lock->underlying, flags | (status != 0 ? __tsan_mutex_try_lock_failed : 0), 0);
#endif
    return status;
#else
    return reading ? pthread_rwlock_timedrdlock(&lock->underlying, &at)
                   : pthread_rwlock_timedwrlock(&lock->underlying, &at);
#endif
}

int exclusion_rwlock_read_underlying(exclusion_rwlock *lock, uint64_t deadline, int trying) {
    int status;
    if (trying) {
        status = pthread_rwlock_tryrdlock(&lock->underlying);
    } else if (deadline == 0) {
        status = pthread_rwlock_rdlock(&lock->underlying);
    } else {
        status = lock_underlying_until(lock, deadline, 1);
    }
    if (status != 0) return 0;
    restore_bias_if_due(lock);
    return 1;
}

void exclusion_rwlock_read_unlock_slowly(exclusion_rwlock *lock) {
    pthread_rwlock_unlock(&lock->underlying);
}

int exclusion_rwlock_write_begin(exclusion_rwlock *lock, uint64_t deadline) {
    if (deadline == 0) return pthread_rwlock_wrlock(&lock->underlying) == 0;
    return lock_underlying_until(lock, deadline, 0) == 0;
}

void exclusion_rwlock_unlock_write_underlying(exclusion_rwlock *lock) {
    pthread_rwlock_unlock(&lock->underlying);
}

void exclusion_rwlock_wake_writer(exclusion_read_slot *slot) {
    (void)slot;  // Linux's writers don't sleep on slots
}

/// Whether slot `index` holds no reader that must be waited for. A reader announces itself before
/// it checks the bias, and only then reads; one caught in between is waited out (a few
/// instructions), since it may yet see the bias withdrawn and leave, and failing for it would be a
/// spurious failure.
int exclusion_rwlock_slot_is_free(exclusion_rwlock *lock, int index) {
    exclusion_backoff backoff = {0};
    for (;;) {
        switch (__atomic_load_n(&lock->slots[index].value, __ATOMIC_SEQ_CST)) {
        case 0: return 1;
        case EXCLUSION_READ_SLOT_READING: return 0;
        default: exclusion_backoff_wait(&backoff);
        }
    }
}

/// Waits by `deadline` (0: none) for slot `index` to empty, looking again with the back-off: a
/// fast-path read is short.
int exclusion_rwlock_wait_for_slot(exclusion_rwlock *lock, int index, uint64_t deadline) {
    exclusion_backoff backoff = {0};
    while (__atomic_load_n(&lock->slots[index].value, __ATOMIC_SEQ_CST) != 0) {
        if (deadline != 0 && exclusion_monotonic_now() >= deadline) return 0;
        exclusion_backoff_wait(&backoff);
    }
    return 1;
}

#endif
