#ifndef EXCLUSION_SHIMS_H
#define EXCLUSION_SHIMS_H

#include "ExclusionPlatform.h"

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

// MARK: - Backing off

#if !EXCLUSION_OWNED_LOCK

/// How many times a waiter looks again, a spin hint apart, before it stops spinning.
#define EXCLUSION_BACKOFF_SPINS 64
/// How many times a waiter that can't sleep in the kernel then yields the processor, looking again
/// after each, before it sleeps.
#define EXCLUSION_BACKOFF_YIELDS 32
/// The first sleep after the yields, and the longest: sleeps double from one to the other.
#define EXCLUSION_BACKOFF_FIRST_SLEEP_NS 50000
#define EXCLUSION_BACKOFF_LONGEST_SLEEP_NS 1000000

#else

/// Nothing spins where the locks lend priority (`EXCLUSION_OWNED_LOCK`): a thread that spins for
/// another lends it nothing, and on a busy processor keeps it from running. Every wait there sleeps
/// until the thread it waits for wakes it, so nothing there yields or sleeps a while either, and
/// `exclusion_backoff_wait` doesn't exist.
#define EXCLUSION_BACKOFF_SPINS 0

#endif

/// The one back-off policy of every wait in Exclusion that looks at something again and again: the
/// lock's spin before it sleeps in the kernel, a conditional access's spin before it joins the wait
/// list, and the loops that wait for another thread with nothing to sleep on (a granted waiter, a
/// read announcing itself, a spin lock's holder), all on Linux.
///
/// First it spins: `EXCLUSION_BACKOFF_SPINS` looks, a spin hint apart. Spin hints, not
/// `sched_yield`: a yield gives the core away when anything else is runnable, and Linux then runs
/// the thread again later than one that spun. What a waiter waits for is usually a few
/// instructions away on another core, and a sleep in the kernel costs more than the whole spin.
/// Waits that end there (the lock sleeps in the kernel next) use only this part. The others yield
/// next, `EXCLUSION_BACKOFF_YIELDS` times: by then what they wait for is most likely a thread that
/// isn't running (a woken waiter not yet scheduled), and a yield lends it this core. Then they
/// sleep for growing intervals, so that a long wait doesn't burn a core. Start with a zeroed value
/// (`exclusion_backoff()` in Swift).
typedef struct {
    uint32_t rounds;
} exclusion_backoff;

/// One look of the spin: gives a spin hint and returns 1 while the spin lasts; returns 0, without
/// spinning, once `EXCLUSION_BACKOFF_SPINS` looks have passed (at once where nothing spins).
static inline int exclusion_backoff_spin(exclusion_backoff *backoff) {
    if (backoff->rounds >= EXCLUSION_BACKOFF_SPINS) {
        return 0;
    }
    backoff->rounds += 1;
    exclusion_spin_hint();
    return 1;
}

/// Up to `hints` looks of the spin at once, for a caller whose look is costly: returns 1 if any
/// was left, 0 once the spin is over.
static inline int exclusion_backoff_spin_hints(exclusion_backoff *backoff, uint32_t hints) {
    int spun = 0;
    for (uint32_t hint = 0; hint < hints && exclusion_backoff_spin(backoff); hint++) {
        spun = 1;
    }
    return spun;
}

#if !EXCLUSION_OWNED_LOCK
/// Waits before the caller looks again: a spin hint during the spin, then a yield, then a sleep
/// that doubles each time, from `EXCLUSION_BACKOFF_FIRST_SLEEP_NS` up to
/// `EXCLUSION_BACKOFF_LONGEST_SLEEP_NS`.
void exclusion_backoff_wait(exclusion_backoff *backoff);
#endif

// MARK: - A lock for a few instructions

#if !EXCLUSION_OWNED_LOCK

/// A lock held for a few instructions at a time (a queue's append, a swap): a waiter backs off
/// (`exclusion_backoff`) instead of going to sleep in the kernel, as a mutex would.
typedef struct {
    uint32_t locked;
} exclusion_short_lock;

/// Waits for `lock` and takes it: the slow half of `exclusion_short_lock_lock`.
void exclusion_short_lock_wait(exclusion_short_lock *lock);

static inline void exclusion_short_lock_init(exclusion_short_lock *lock) {
    lock->locked = 0;
}

static inline void exclusion_short_lock_lock(exclusion_short_lock *lock) {
    if (__builtin_expect(__atomic_exchange_n(&lock->locked, 1, __ATOMIC_ACQUIRE) != 0, 0)) {
        exclusion_short_lock_wait(lock);
    }
}

static inline void exclusion_short_lock_unlock(exclusion_short_lock *lock) {
    __atomic_store_n(&lock->locked, 0, __ATOMIC_RELEASE);
}

#else

/// Where locks lend priority, a short lock is the system's lock: its holder may be preempted, and
/// a waiter must lend it priority rather than spin.
typedef exclusion_system_lock exclusion_short_lock;

static inline void exclusion_short_lock_init(exclusion_short_lock *lock) {
    exclusion_system_lock_init(lock);
}

static inline void exclusion_short_lock_lock(exclusion_short_lock *lock) {
    exclusion_system_lock_lock(lock);
}

static inline void exclusion_short_lock_unlock(exclusion_short_lock *lock) {
    exclusion_system_lock_unlock(lock);
}

#endif

// MARK: - Waiting for another thread's turn

/// Waits while `*word` is `seen`, until `deadline` (0: none); 1 once it changed, 0 if the deadline
/// passed first. For a wait on a thread that has been woken and must take its turn before others
/// may (a granted waiter): on Linux it looks again with the back-off; where locks lend priority it
/// sleeps on the word, and the caller lends its priority to that thread meanwhile
/// (`exclusion_lend_priority`). Whoever changes the word calls `exclusion_word_changed`.
int exclusion_wait_for_change(uint32_t *word, uint32_t seen, uint64_t deadline);

/// Wakes every thread in `exclusion_wait_for_change` on `word`, after the caller changed it.
static inline void exclusion_word_changed(uint32_t *word) {
#if EXCLUSION_OWNED_LOCK
    exclusion_wake_all(word);
#else
    (void)word;  // Linux's waiters look again on their own
#endif
}

#include "ExclusionEngine.h"
#include "ExclusionZlib.h"

#endif
