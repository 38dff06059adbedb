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

// MARK: - Backing off

/// How many times a waiter looks again, a spin hint apart, before it stops spinning.
#define EXCLUSION_BACKOFF_SPINS 64
/// How many times a waiter that can't sleep in the kernel then yields the processor, looking again
/// after each, before it sleeps.
#define EXCLUSION_BACKOFF_YIELDS 32
/// The first sleep after the yields, and the longest: sleeps double from one to the other.
#define EXCLUSION_BACKOFF_FIRST_SLEEP_NS 50000
#define EXCLUSION_BACKOFF_LONGEST_SLEEP_NS 1000000

/// The one back-off policy of every wait in Exclusion that looks at something again and again: the
/// lock's spin before it sleeps in the kernel, a conditional access's spin before it joins the wait
/// list, and the loops that wait for another thread with nothing to sleep on (a granted waiter, a
/// read announcing itself, a spin lock's holder).
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
/// spinning, once `EXCLUSION_BACKOFF_SPINS` looks have passed.
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

/// Waits before the caller looks again: a spin hint during the spin, then a yield, then a sleep
/// that doubles each time, from `EXCLUSION_BACKOFF_FIRST_SLEEP_NS` up to
/// `EXCLUSION_BACKOFF_LONGEST_SLEEP_NS`.
void exclusion_backoff_wait(exclusion_backoff *backoff);

// MARK: - Waits kept for a contention profile

/// How many places there are to keep a short wait until it is added to a contention profile's
/// table: one per thread index, modulo this.
#define EXCLUSION_KEPT_WAITS 256

/// A place for one wait: its profile's table (a serial number), the table's slot it goes to, and
/// how long it lasted.
typedef struct {
    /// 0 when empty; the keeping thread's index (non-zero) when a wait is kept; BUSY while a
    /// thread writes or takes one.
    uint32_t state;
    uint32_t unused;
    uint64_t table;
    uintptr_t slot;
    uint64_t nanoseconds;
} __attribute__((aligned(64))) exclusion_kept_wait;

#define EXCLUSION_KEPT_WAIT_BUSY 0xFFFFFFFFu

extern exclusion_kept_wait exclusion_kept_waits[EXCLUSION_KEPT_WAITS];

/// Keeps a wait in the place of the thread with index `thread`: 1 if kept, 0 if the place is
/// taken (another thread's wait is kept there, or one is being taken).
static inline int exclusion_keep_wait(uint32_t thread, uint64_t table, uintptr_t slot, uint64_t nanoseconds) {
    exclusion_kept_wait *kept = &exclusion_kept_waits[thread % EXCLUSION_KEPT_WAITS];
    uint32_t empty = 0;
    if (!__atomic_compare_exchange_n(
            &kept->state, &empty, EXCLUSION_KEPT_WAIT_BUSY, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        return 0;
    }
    kept->table = table;
    kept->slot = slot;
    kept->nanoseconds = nanoseconds;
    __atomic_store_n(&kept->state, thread, __ATOMIC_RELEASE);
    return 1;
}

/// Whether a wait kept by the thread with index `thread` (0: by any thread) is in `place`; cheap,
/// for a thread to look at its own place before it takes from it.
static inline int exclusion_has_kept_wait(uint32_t place, uint32_t thread) {
    uint32_t state = __atomic_load_n(&exclusion_kept_waits[place % EXCLUSION_KEPT_WAITS].state, __ATOMIC_RELAXED);
    return thread == 0 ? state != 0 && state != EXCLUSION_KEPT_WAIT_BUSY : state == thread;
}

/// Takes the wait kept in `place` by the thread with index `thread` (0: by any thread), if there is
/// one, leaving the place empty: 1 and its fields, or 0.
static inline int exclusion_take_kept_wait(
    uint32_t place, uint32_t thread, uint64_t *table, uintptr_t *slot, uint64_t *nanoseconds
) {
    exclusion_kept_wait *kept = &exclusion_kept_waits[place % EXCLUSION_KEPT_WAITS];
    uint32_t state = __atomic_load_n(&kept->state, __ATOMIC_RELAXED);
    if (state == 0 || state == EXCLUSION_KEPT_WAIT_BUSY || (thread != 0 && state != thread)
        || !__atomic_compare_exchange_n(
            &kept->state, &state, EXCLUSION_KEPT_WAIT_BUSY, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        return 0;
    }
    *table = kept->table;
    *slot = kept->slot;
    *nanoseconds = kept->nanoseconds;
    __atomic_store_n(&kept->state, 0, __ATOMIC_RELEASE);
    return 1;
}

// MARK: - Time

/// Nanoseconds on the monotonic clock (`CLOCK_MONOTONIC`): what every deadline in Exclusion is
/// measured against, the lock's included.
uint64_t exclusion_monotonic_now(void);

#include "ExclusionLock.h"

#endif
