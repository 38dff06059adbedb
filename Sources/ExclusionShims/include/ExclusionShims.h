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

#endif
