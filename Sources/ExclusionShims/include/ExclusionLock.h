#ifndef EXCLUSION_LOCK_H
#define EXCLUSION_LOCK_H

#include "ExclusionPlatform.h"

#if !EXCLUSION_OWNED_LOCK

/// Exclusion's mutual-exclusion lock on Linux: one compare-and-swap to take it, and, while nobody
/// waits, a plain store to give it back.
///
/// Why not `pthread_mutex_t`: glibc takes *and* gives back its mutex with an atomic
/// read-modify-write, and on an uncontended access the second one is most of what the lock costs.
/// A plain store alone can miss a thread that has just gone to sleep; this lock closes that gap
/// from the sleeper's side, with the asymmetric fence of Linux's `membarrier` system call (the
/// technique of liburcu and of folly's `asymmetric_thread_fence_heavy`).
///
/// **The protocol.**
/// - Taking: compare-and-swap `word` from 0 to 1. A thread that finds it taken looks again for a
///   while (the back-off's spin, `ExclusionShims.h`), then counts itself in `sleepers` and sleeps.
/// - Giving back: store 0 to `word`, then read `sleepers`; if anyone is counted, wake one.
/// - A *contention episode* starts when a waiter counts itself where nobody was counted: that
///   waiter calls `membarrier`, which runs a full memory barrier on every other running thread of
///   the process, and then marks the episode (`EXCLUSION_LOCK_EPISODE` in `sleepers`). A releaser
///   whose read of `sleepers` came before that barrier had its store made visible by it, so the
///   waiter's next compare-and-swap finds the lock free; a releaser that reads after the barrier
///   sees `sleepers` non-zero and takes the slow path, which fences on the releaser's side.
/// - While the episode lasts, `sleepers` is never zero, so every release takes the slow path and
///   later waiters need no `membarrier` of their own: the lock pays one per episode, not one per
///   sleep. The episode ends when `EXCLUSION_LOCK_QUIET_RELEASES` releases in a row found nobody
///   counted; after that, releases are plain stores again.
/// - Sleepers sleep on `waking`, which a release sets to 1 (then wakes one thread) only if it was
///   0: while a wake-up is on its way, further releases don't make a system call each. A waiter
///   sets `waking` back to 0 before each look at `word`, so a wake-up that arrives while nobody
///   sleeps yet leaves `waking` at 1, and the sleep returns at once. Nothing counts wake-ups, so
///   nothing can wrap around.
///
/// `Verification/` holds a model of exactly this protocol, checked with Spin for mutual exclusion
/// and lost wake-ups under x86-TSO store buffers, and the broken variants it catches.
///
/// **Where the store is used.** Only on x86-64, whose memory model the argument and the model
/// assume. Elsewhere (Arm, whose orderings are weaker), or where the kernel or a seccomp filter
/// refuses `membarrier`, every lock uses the symmetric protocol instead: the release exchanges
/// `word` and both sides use sequentially consistent operations, so nothing relies on the fence.
/// The choice is made once, when the library is loaded, before any lock can be used.
///
/// **Lifetime.** A release touches `sleepers`, `waking` and `quiet` after it stored 0 to `word`,
/// when another thread may already hold the lock again. So a lock may be destroyed only once every
/// thread that called into it has returned, not merely once it is free: the owner of a lock frees
/// it in its own `deinit`, which can't run while any method of the owner is still on a stack.
typedef struct {
    /// 0 when free, 1 when held.
    uint32_t word;
    /// The waiters counted (the low bits), and `EXCLUSION_LOCK_EPISODE` while a fenced contention
    /// episode lasts.
    uint32_t sleepers;
    /// 1 while a wake-up is on its way to a sleeper; the word sleepers sleep on.
    uint32_t waking;
    /// How many releases in a row found the episode with nobody counted.
    uint32_t quiet;
} exclusion_lock;

/// The bit of `sleepers` that marks a fenced contention episode.
#define EXCLUSION_LOCK_EPISODE 0x80000000u

/// Releases in a row with nobody waiting that end a contention episode.
#define EXCLUSION_LOCK_QUIET_RELEASES 64

/// Whether releases may give the lock back with a plain store (x86-64 with `membarrier`).
extern int exclusion_lock_fenced;

/// Prepares `lock`, free.
static inline void exclusion_lock_init(exclusion_lock *lock) {
    lock->word = 0;
    lock->sleepers = 0;
    lock->waking = 0;
    lock->quiet = 0;
}

/// Waits for `lock` and takes it: the slow half of `exclusion_lock_lock`.
void exclusion_lock_wait(exclusion_lock *lock);

/// Takes `lock` if it comes free within the spin a wait starts with; 1 if it did, 0 if the spin
/// ended first, holding nothing.
int exclusion_lock_spin(exclusion_lock *lock);

/// Sleeps until `lock` is free and takes it, without spinning first (a caller that spins does
/// that with `exclusion_lock_spin`): until `deadline` (`exclusion_monotonic_now` nanoseconds) at
/// the latest, or as long as it takes if `deadline` is 0. 1 if it took it, 0 if the deadline
/// passed first, holding nothing.
int exclusion_lock_sleep_until(exclusion_lock *lock, uint64_t deadline);

/// The slow half of `exclusion_lock_unlock`, once it saw `sleepers` non-zero: wakes a sleeper if
/// one needs it, and ends a contention episode that has gone quiet.
void exclusion_lock_wake(exclusion_lock *lock);

/// The asymmetric fence, `membarrier`: 1 once every other running thread of the process has run a
/// full barrier, 0 if the kernel refused (a seccomp filter installed since the library loaded).
/// What a contention episode starts with, and what a readers-writer lock's writer runs before it
/// looks at readers who write their slots with plain stores.
int exclusion_lock_fence(void);

/// How long a thread that couldn't fence sleeps at a time before it looks again, having no other
/// way to be sure it hears of the change it waits for.
#define EXCLUSION_LOCK_POLL_NS 1000000

/// How many contention episodes this process's locks have fenced (`membarrier` calls, the
/// readers-writer locks' writers' among them), since it started: what the lock probes and
/// benchmarks count.
uint64_t exclusion_lock_fences(void);

/// Takes `lock` if it is free; 1 if it did.
static inline int exclusion_lock_try(exclusion_lock *lock) {
    uint32_t expected = 0;
    return __atomic_compare_exchange_n(&lock->word, &expected, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}

/// Takes `lock`, waiting for it as long as it takes.
static inline void exclusion_lock_lock(exclusion_lock *lock) {
    if (__builtin_expect(!exclusion_lock_try(lock), 0)) {
        exclusion_lock_wait(lock);
    }
}

/// Gives `lock` back, and wakes a sleeper if there is one.
static inline void exclusion_lock_unlock(exclusion_lock *lock) {
    if (__builtin_expect(__atomic_load_n(&exclusion_lock_fenced, __ATOMIC_RELAXED), 1)) {
        __atomic_store_n(&lock->word, 0, __ATOMIC_RELEASE);
        // Keeps the compiler from reading `sleepers` before the store: the episode's fence orders
        // the two only in this order.
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        if (__builtin_expect(__atomic_load_n(&lock->sleepers, __ATOMIC_RELAXED) != 0, 0)) {
            exclusion_lock_wake(lock);
        }
    } else {
        __atomic_exchange_n(&lock->word, 0, __ATOMIC_SEQ_CST);
        if (__builtin_expect(__atomic_load_n(&lock->sleepers, __ATOMIC_SEQ_CST) != 0, 0)) {
            exclusion_lock_wake(lock);
        }
    }
}

#endif

#endif
