#ifndef EXCLUSION_OWNED_LOCK_H
#define EXCLUSION_OWNED_LOCK_H

#include "ExclusionPlatform.h"

#if EXCLUSION_OWNED_LOCK

/// Exclusion's mutual-exclusion lock on Apple platforms: the system's lock, which an untimed wait
/// sleeps in, with a way beside it for a wait that has a deadline.
///
/// Why: on Apple platforms a thread that waits for a lock must lend its priority to the thread
/// holding it, or a user-interactive thread can wait behind a background one that never gets to
/// run. `os_unfair_lock` does that, and nothing in user space can. But it has no timed wait, and
/// polling it (try, sleep, try again) burns processor time and wakes late. So a timed waiter
/// sleeps on a word of its own, and a release that finds timed waiters counted wakes one.
///
/// **The protocol.**
/// - Taking, untimed: the system lock, as it is (`exclusion_system_lock_lock`).
/// - Taking by a deadline: try the system lock; if it is held, count in `timed`, then, until it
///   holds the lock or the deadline passes: clear `waking`, try again, and sleep while `waking` is
///   still 0. A waiter looks at its deadline only after a try failed, so a waiter that a release
///   woke never leaves with the lock free: whoever took it will wake the next one.
/// - Giving back: give the system lock back, then read `timed`; if anyone is counted, set
///   `waking` to 1 (only if it was 0, so that a wake-up on its way isn't sent again) and wake one
///   timed waiter.
/// - Why no waiter sleeps through a release: the waiter's count and try are sequentially
///   consistent, and the release gives the system lock back with an atomic exchange (an atomic
///   read-modify-write with releasing order, in libplatform and in the portable build's stand-in)
///   that the sequentially consistent read of `timed` can't pass, on x86-64 (a locked instruction)
///   and on Arm (a releasing write before an acquiring read stays in order). So either the waiter's
///   try finds the lock free, or the release finds the waiter counted; and since the waiter clears
///   `waking` before it tries, a wake-up that comes after the try finds `waking` clear.
/// - Nothing spins, yields or polls: a waiter either sleeps inside the system lock or on `waking`.
///
/// `Verification/owned-lock.pml` is this protocol as a model, checked with Spin, with the broken
/// variants it catches.
///
/// **Lifetime.** As for Linux's lock: a release touches `timed` and `waking` after it gave the
/// system lock back, so a lock is freed only once no thread can be inside any of its functions.
typedef struct {
    /// The system's lock: `os_unfair_lock`, or its stand-in in the portable build.
    exclusion_system_lock system;
    /// How many threads wait for the lock with a deadline.
    uint32_t timed;
    /// 1 while a wake-up is on its way to the timed waiters; the word they sleep on.
    uint32_t waking;
} exclusion_lock;

/// Prepares `lock`, free.
static inline void exclusion_lock_init(exclusion_lock *lock) {
    exclusion_system_lock_init(&lock->system);
    lock->timed = 0;
    lock->waking = 0;
}

/// Wakes a timed waiter: the slow half of `exclusion_lock_unlock`, once it found one counted.
void exclusion_lock_wake(exclusion_lock *lock);

/// As on Linux: sleeps until `lock` is free and takes it, until `deadline` at the latest (0: as
/// long as it takes, in the system's lock, which lends this thread's priority to the holder);
/// 1 if it took it, 0 if the deadline passed first.
int exclusion_lock_sleep_until(exclusion_lock *lock, uint64_t deadline);

/// Takes `lock` if it is free; 1 if it did.
static inline int exclusion_lock_try(exclusion_lock *lock) {
    return exclusion_system_lock_try(&lock->system);
}

/// As on Linux, for the same callers: nothing spins here, so one try.
static inline int exclusion_lock_spin(exclusion_lock *lock) {
    return exclusion_lock_try(lock);
}

/// Takes `lock`, waiting for it as long as it takes, lending this thread's priority to its holder.
static inline void exclusion_lock_lock(exclusion_lock *lock) {
    exclusion_system_lock_lock(&lock->system);
}

/// Gives `lock` back, and wakes a timed waiter if there is one.
static inline void exclusion_lock_unlock(exclusion_lock *lock) {
    exclusion_system_lock_unlock(&lock->system);
    if (__builtin_expect(__atomic_load_n(&lock->timed, __ATOMIC_SEQ_CST) != 0, 0)) {
        exclusion_lock_wake(lock);
    }
}

#endif

#endif
