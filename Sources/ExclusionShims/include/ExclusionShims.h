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
    /// An exited thread's index is handed out again, lowest first, so indices stay as few as the
    /// threads alive at once.
    uint32_t index;
    /// How many instances this thread is inside right now.
    uint32_t depth;
    /// The instances this thread is inside, innermost last (the first EXCLUSION_TRACKED_DEPTH);
    /// slots from `depth` on are stale.
    const void *held[EXCLUSION_TRACKED_DEPTH];
    /// What the thread parks on while it waits for a condition: `EXCLUSION_WOKEN` once a release
    /// has woken it (`exclusion_wait_woken`).
    uint32_t woken;
    /// How long the thread's last wait for a condition took, in nanoseconds: whether its next one
    /// spins first (`exclusion_wait_woken`). Only where waits spin.
    uint64_t last_wait_ns;
} exclusion_thread_record;

exclusion_thread_record *exclusion_current_thread_slow(void);

/// The highest thread index handed out so far (stored sequentially consistent before its thread
/// gets it): no thread alive has a higher one.
extern uint32_t exclusion_thread_index_limit;

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

/// Records that the calling thread left the instance it entered last. Its slot in `held` keeps the
/// instance: everything that reads `held` reads only below `depth`, and the next `enter` at that
/// level writes the slot again. Clearing it would be one more store on every access, and a store
/// the lock's next `lock cmpxchg` waits for (Benchmarks/README.md, "Issue 44").
static inline void exclusion_thread_leave(exclusion_thread_record *record) {
    record->depth -= 1;
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

// MARK: - Spinning before parking

#if !EXCLUSION_OWNED_LOCK
/// How many times a waiter looks again, a spin hint apart, before it parks.
#define EXCLUSION_BACKOFF_SPINS 64
#else
/// Nothing spins where the locks lend priority (`EXCLUSION_OWNED_LOCK`): a thread that spins for
/// another lends it nothing, and on a busy processor keeps it from running. Every wait there parks
/// at once until the thread it waits for unparks it.
#define EXCLUSION_BACKOFF_SPINS 0
#endif

/// The one spin of every wait in Exclusion before it parks (`exclusion_park`): the lock's, a
/// conditional access's before it joins the wait list and again for its wake-up once it has
/// (`exclusion_wait_woken`), a drain's before it ends, a wait for a granted waiter's turn. `EXCLUSION_BACKOFF_SPINS` looks, a spin hint apart. Spin hints, not
/// `sched_yield`: a yield gives the core away when anything else is runnable, and Linux then runs
/// the thread again later than one that spun. What a waiter waits for is usually a few instructions
/// away on another core, and parking costs more than the whole spin. Nothing sleeps a while and
/// looks again: past the spin, a waiter parks until the thread it waits for unparks it. Start with
/// a zeroed value (`exclusion_backoff()` in Swift).
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

// MARK: - Waiting to be woken

/// A thread's word for being woken: `EXCLUSION_WAITING` until it is woken, `EXCLUSION_PARKED` once
/// it is about to park, `EXCLUSION_WOKEN` once woken. A wake-up makes a system call only for a
/// thread that parked: one still spinning, or on its way to park, finds the word changed instead
/// (`Verification/woken.pml`).
#define EXCLUSION_WAITING 0u
#define EXCLUSION_WOKEN 1u
#define EXCLUSION_PARKED 2u

/// The calling thread's word for `exclusion_wait_woken`, cleared: call before it can be woken.
static inline uint32_t *exclusion_prepare_to_be_woken(exclusion_thread_record *record) {
    __atomic_store_n(&record->woken, EXCLUSION_WAITING, __ATOMIC_RELAXED);
    return &record->woken;
}

/// A thread whose last wait for a condition took longer than this doesn't spin before its next
/// one parks (`exclusion_wait_woken`): several times what parking and being woken cost, so that
/// only waits that were no hand-off count (Benchmarks/README.md, "Issue 44", has the figures).
#define EXCLUSION_LONG_WAIT_NS 50000u

/// Spins (`exclusion_backoff`) unless the thread's last wait was long (`EXCLUSION_LONG_WAIT_NS`),
/// then parks, until `exclusion_wake(word)` has been called, or `deadline` (0: none) passes; 1 once
/// woken, 0 if the deadline passed first. `word` is the calling thread's
/// (`exclusion_prepare_to_be_woken`).
int exclusion_wait_woken(uint32_t *word, uint64_t deadline);

/// Wakes the thread whose word `word` is. That thread still waits, or is about to: its word stays
/// valid until it has seen the wake-up.
static inline void exclusion_wake(uint32_t *word) {
    if (__atomic_exchange_n(word, EXCLUSION_WOKEN, __ATOMIC_ACQ_REL) == EXCLUSION_PARKED) {
        exclusion_unpark_one(word);
    }
}

// MARK: - Waiting for another thread's turn

/// A count that threads wait to see change (`exclusion_wait_for_change`), with how many of them are
/// parked on it, so that a change nobody sleeps through costs one atomic addition, not a system
/// call.
typedef struct {
    uint32_t value;
    uint32_t parked;
} exclusion_change_word;

static inline uint32_t exclusion_change_word_load(exclusion_change_word *word) {
    return __atomic_load_n(&word->value, __ATOMIC_SEQ_CST);
}

/// Adds one to `word`, and unparks every thread parked on it. A waiter counts itself in `parked`
/// before its last look at `value`; this adds to `value` before it looks at `parked`: either the
/// waiter sees the change, or this sees the waiter (`Verification/grant.pml`).
static inline void exclusion_change_word_bump(exclusion_change_word *word) {
    __atomic_fetch_add(&word->value, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&word->parked, __ATOMIC_SEQ_CST) != 0) {
        exclusion_unpark_all(&word->value);
    }
}

/// Waits while `word` is `seen`, until `deadline` (0: none); 1 once it changed, 0 if the deadline
/// passed first. For a wait on a thread that has been woken and must take its turn before others
/// may (a granted waiter): it spins, then parks on the word; where locks lend priority, the caller
/// lends its priority to that thread meanwhile (`exclusion_lend_priority`). Whoever changes the
/// word calls `exclusion_change_word_bump`.
int exclusion_wait_for_change(exclusion_change_word *word, uint32_t seen, uint64_t deadline);

#include "ExclusionEngine.h"
#include "ExclusionZlib.h"

#endif
