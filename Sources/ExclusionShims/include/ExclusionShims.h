#ifndef EXCLUSION_SHIMS_H
#define EXCLUSION_SHIMS_H

#include <stdint.h>

/// How many instances one thread can be inside at once and still be tracked. Deeper nesting is
/// counted but not recorded: re-entrancy checks for the untracked levels are skipped, never wrong.
#define EXCLUSION_TRACKED_DEPTH 32

/// What Exclusion remembers about the current thread. Swift has no thread-local storage of its
/// own, so it lives here as a C11 `_Thread_local`, which costs a register-relative load instead of
/// a `pthread_getspecific` call.
typedef struct {
    /// A small number unique to this thread while it lives (1, 2, 3, ...); 0 until first asked for.
    uint32_t index;
    /// How many instances this thread is inside right now.
    uint32_t depth;
    /// The instances this thread is inside, innermost last (the first EXCLUSION_TRACKED_DEPTH).
    const void *held[EXCLUSION_TRACKED_DEPTH];
} exclusion_thread_record;

exclusion_thread_record *exclusion_current_thread_slow(void);

// initial-exec: one register-relative load on every access, instead of a call to __tls_get_addr.
extern _Thread_local exclusion_thread_record exclusion_thread __attribute__((tls_model("initial-exec")));

/// The record of the calling thread, with its index assigned.
static inline exclusion_thread_record *exclusion_current_thread(void) {
    exclusion_thread_record *record = &exclusion_thread;
    if (__builtin_expect(record->index == 0, 0)) {
        return exclusion_current_thread_slow();
    }
    return record;
}

/// How the calling thread is inside `instance`: 0 not at all (as far as the tracked depth tells),
/// otherwise the `mode` it entered with plus one.
static inline int exclusion_thread_holds(const exclusion_thread_record *record, const void *instance) {
    uint32_t depth = record->depth < EXCLUSION_TRACKED_DEPTH ? record->depth : EXCLUSION_TRACKED_DEPTH;
    for (uint32_t level = 0; level < depth; level++) {
        uintptr_t entry = (uintptr_t)record->held[level];
        if ((entry & ~(uintptr_t)1) == (uintptr_t)instance) {
            return (int)(entry & 1) + 1;
        }
    }
    return 0;
}

/// Records that the calling thread is now inside `instance`, exclusively (mode 0) or shared (1).
/// Instances are objects, aligned to at least 2 bytes, so the mode fits in the pointer's low bit.
static inline void exclusion_thread_enter(exclusion_thread_record *record, const void *instance, int mode) {
    if (record->depth < EXCLUSION_TRACKED_DEPTH) {
        record->held[record->depth] = (const void *)((uintptr_t)instance | (uintptr_t)(mode & 1));
    }
    record->depth += 1;
}

/// The instance the thread entered at `level` (0 is the outermost), without its mode bit; NULL past
/// the tracked depth.
static inline const void *exclusion_thread_held_at(const exclusion_thread_record *record, uint32_t level) {
    if (level >= record->depth || level >= EXCLUSION_TRACKED_DEPTH) {
        return 0;
    }
    return (const void *)((uintptr_t)record->held[level] & ~(uintptr_t)1);
}

/// Records that the calling thread left the instance it entered last.
static inline void exclusion_thread_leave(exclusion_thread_record *record) {
    record->depth -= 1;
    if (record->depth < EXCLUSION_TRACKED_DEPTH) {
        record->held[record->depth] = 0;
    }
}

/// Tells the processor that this thread is spinning (`pause` on x86, `yield` on Arm): cheaper for
/// the core's other hardware thread and for power than an empty loop, and no system call.
static inline void exclusion_spin_hint(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#endif
}

// MARK: - The lock

#if defined(__linux__)

/// Exclusion's mutual-exclusion lock on Linux: one compare-and-swap to take it, a plain store to
/// give it back.
///
/// Why not `pthread_mutex_t`: glibc takes *and* gives back its mutex with an atomic
/// read-modify-write, and on the machines we measure each costs about 5 ns, together 80 % of an
/// uncontended `await access`. No library here gives a lock back with a plain store, because a
/// store alone can miss a thread that has just gone to sleep. This lock closes that gap from the
/// sleeper's side, with the asymmetric fence of Linux's `membarrier` system call (the technique
/// of liburcu and of folly's `asymmetric_thread_fence_heavy`):
///
/// - A thread that finds the lock taken spins briefly, then counts itself in `sleepers`, then
///   calls `membarrier`, which runs a full memory barrier on every other running thread of the
///   process. What a releaser did before that barrier is visible to the sleeper afterwards; what
///   a releaser does after it sees the sleeper counted.
/// - So a releaser that stores 0 and then reads `sleepers` as 0 stored before the barrier, and
///   the sleeper, which looks at `word` after the barrier, finds the lock free instead of
///   sleeping. A releaser that reads `sleepers` after the barrier sees it, and wakes a sleeper.
/// - A sleeper stays counted until it holds the lock, so it fences once per wait, not once per
///   wake-up. The fence costs a few microseconds, on top of the sleep it precedes.
///
/// Where `membarrier` is not available (an old kernel, a seccomp filter), the lock falls back to
/// the symmetric protocol: releasers exchange instead of storing, and both sides use sequentially
/// consistent operations. The choice is made once, when the library is loaded, before any lock
/// can be used.
typedef struct {
    /// 0 when free, 1 when held.
    uint32_t word;
    /// How many threads wait for the lock in the kernel, or are about to.
    uint32_t sleepers;
    /// 1 while a wake-up is on its way to a sleeper that hasn't run yet: releasers meanwhile don't
    /// send another, which would cost each of them a system call.
    uint32_t waking;
    /// Counts the wake-ups sent; sleepers sleep on it, so a wake-up sent while a thread is about to
    /// sleep makes it look again instead.
    uint32_t wakeups;
} exclusion_lock;

/// Whether waiters fence with `membarrier`, so that releasers may give the lock back with a store.
extern int exclusion_lock_fenced;

/// Waits for `lock` and takes it: the slow half of `exclusion_lock_lock`.
void exclusion_lock_wait(exclusion_lock *lock);
/// Waits for `lock` at most `timeout_ns` nanoseconds; 1 if it took it, 0 if the time ran out.
int exclusion_lock_wait_at_most(exclusion_lock *lock, int64_t timeout_ns);
/// Wakes one thread sleeping on `lock`: the slow half of `exclusion_lock_unlock`.
void exclusion_lock_wake(exclusion_lock *lock);

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
        // Keeps the compiler from reading `sleepers` before the store: the sleeper's barrier
        // orders the two only in this order.
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

/// How many threads are counted as waiting for `lock` right now.
static inline uint32_t exclusion_lock_sleepers(exclusion_lock *lock) {
    return __atomic_load_n(&lock->sleepers, __ATOMIC_SEQ_CST);
}

/// For tests only: gives `lock` back without waking anyone, the broken variant the lost-wake-up
/// test must catch.
void exclusion_lock_test_release_silently(exclusion_lock *lock);

/// For tests only, in a process of their own: switches every lock to the protocol without
/// `membarrier`. Call it before any lock is used.
void exclusion_lock_test_use_fallback(void);

#endif

#endif
