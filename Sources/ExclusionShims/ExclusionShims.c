#include "ExclusionShims.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>

_Thread_local exclusion_thread_record exclusion_thread __attribute__((tls_model("initial-exec")));

// Thread indices are given back when their threads exit and handed out again, lowest first, so
// that they stay as few as the threads alive at once: a readers-writer lock's writer looks at one
// slot of the table of visible readers per index handed out (`exclusion_thread_index_limit`), and
// a program whose threads come and go (dispatch's workers do) would otherwise soon make every
// writer look at all of them. Taken once per thread, at its first access and at its exit: never
// on an access's path, so a plain mutex does.
static pthread_mutex_t indices_lock = PTHREAD_MUTEX_INITIALIZER;
/// Indices of exited threads, a heap with the lowest on top; under `indices_lock`.
static uint32_t *free_indices = NULL;
static uint32_t free_count = 0;
static uint32_t free_capacity = 0;

uint32_t exclusion_thread_index_limit = 0;

static pthread_key_t index_key;
/// 1 once `index_key` exists; 0 where it couldn't be made, and indices aren't given back.
static int index_key_made = 0;
static pthread_once_t index_key_once = PTHREAD_ONCE_INIT;

static void sift_down(uint32_t at) {
    for (;;) {
        uint32_t lowest = at, left = 2 * at + 1, right = left + 1;
        if (left < free_count && free_indices[left] < free_indices[lowest]) lowest = left;
        if (right < free_count && free_indices[right] < free_indices[lowest]) lowest = right;
        if (lowest == at) return;
        uint32_t swapped = free_indices[at];
        free_indices[at] = free_indices[lowest];
        free_indices[lowest] = swapped;
        at = lowest;
    }
}

/// Runs when a thread that was given an index exits: the index goes back to be handed out again.
/// A thread inside an access can't exit, so the index holds no slot of the table.
static void give_back_index(void *value) {
    uint32_t index = (uint32_t)(uintptr_t)value;
    // Should a later destructor of this thread make an access, it gets an index again.
    exclusion_thread.index = 0;
    pthread_mutex_lock(&indices_lock);
    if (free_count == free_capacity) {
        uint32_t capacity = free_capacity == 0 ? 64 : free_capacity * 2;
        uint32_t *grown = realloc(free_indices, capacity * sizeof *grown);
        if (grown == NULL) {
            pthread_mutex_unlock(&indices_lock);
            return;  // not given back: an index less to hand out again, nothing worse
        }
        free_indices = grown;
        free_capacity = capacity;
    }
    uint32_t at = free_count++;
    free_indices[at] = index;
    while (at > 0 && free_indices[(at - 1) / 2] > free_indices[at]) {
        uint32_t parent = (at - 1) / 2;
        free_indices[at] = free_indices[parent];
        free_indices[parent] = index;
        at = parent;
    }
    pthread_mutex_unlock(&indices_lock);
}

static void make_index_key(void) {
    index_key_made = pthread_key_create(&index_key, give_back_index) == 0;
}

exclusion_thread_record *exclusion_current_thread_slow(void) {
    exclusion_thread_record *record = &exclusion_thread;
    pthread_once(&index_key_once, make_index_key);
    uint32_t index;
    pthread_mutex_lock(&indices_lock);
    if (free_count > 0) {
        index = free_indices[0];
        free_indices[0] = free_indices[--free_count];
        sift_down(0);
    } else {
        // A new index, above every one handed out. Published before this thread can use it, and
        // sequentially consistent: a writer that withdraws a bias and then reads the limit sees
        // every reader that announced itself before the withdrawal (`Verification/bias.pml`).
        index = exclusion_thread_index_limit + 1;
        if (index == 0) index = 1;  // after 2^32 - 1 threads alive at once; never in practice
        __atomic_store_n(&exclusion_thread_index_limit, index, __ATOMIC_SEQ_CST);
    }
    pthread_mutex_unlock(&indices_lock);
    record->index = index;
    if (index_key_made) (void)pthread_setspecific(index_key, (void *)(uintptr_t)index);
    return record;
}

/// The time of the calling thread's wait that began at `start` (`exclusion_wait_woken`).
static int end_wait(uint64_t start, int woken) {
#if EXCLUSION_BACKOFF_SPINS > 0
    exclusion_thread.last_wait_ns = exclusion_monotonic_now() - start;
#else
    (void)start;
#endif
    return woken;
}

int exclusion_wait_woken(uint32_t *word, uint64_t deadline) {
    uint64_t start = 0;
#if EXCLUSION_BACKOFF_SPINS > 0
    // The one spin of every wait (nothing where locks lend priority): a wake-up that comes within
    // it costs neither thread a system call, and the woken thread is running already, where a
    // parked one must first be scheduled. The compare-and-swap below then finds the word woken.
    // Not after a long wait, which says that this thread's waits are not hand-offs: a thread that
    // spun before it parked is woken later than one that parked at once (Benchmarks/README.md,
    // "Issue 44"), and the spin would cost it that for nothing.
    start = exclusion_monotonic_now();
    if (exclusion_thread.last_wait_ns < EXCLUSION_LONG_WAIT_NS) {
        exclusion_backoff backoff = {0};
        while (__atomic_load_n(word, __ATOMIC_ACQUIRE) != EXCLUSION_WOKEN && exclusion_backoff_spin(&backoff)) {
        }
    }
#endif
    for (;;) {
        uint32_t seen = EXCLUSION_WAITING;
        // Says it parks, unless the wake-up came first: then a waker that finds the word parked
        // knows to unpark it, and one that came before this finds nothing to unpark.
        if (!__atomic_compare_exchange_n(word, &seen, EXCLUSION_PARKED, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
            && seen == EXCLUSION_WOKEN) {
            return end_wait(start, 1);
        }
        if (exclusion_park(word, EXCLUSION_PARKED, deadline) == ETIMEDOUT
            && __atomic_load_n(word, __ATOMIC_ACQUIRE) != EXCLUSION_WOKEN) {
            return end_wait(start, 0);  // still marked parked: a wake-up sent now makes a call that wakes nobody
        }
    }
}

int exclusion_wait_for_change(exclusion_change_word *word, uint32_t seen, uint64_t deadline) {
    exclusion_backoff backoff = {0};
    while (exclusion_change_word_load(word) == seen) {
        if (exclusion_backoff_spin(&backoff)) continue;
        // Counted before the last look, so that a change made after it sees this thread.
        __atomic_fetch_add(&word->parked, 1, __ATOMIC_SEQ_CST);
        int changed = 1;
        while (exclusion_change_word_load(word) == seen) {
            if (exclusion_park(&word->value, seen, deadline) == ETIMEDOUT && exclusion_change_word_load(word) == seen) {
                changed = 0;
                break;
            }
        }
        __atomic_fetch_sub(&word->parked, 1, __ATOMIC_SEQ_CST);
        return changed;
    }
    return 1;
}

// MARK: - Waiting for a flag of an instance's words (`ExclusionEngine.h`)

void exclusion_engine_flags_wait_until_clear(exclusion_engine_words *words, uint64_t bit, uint64_t waiter_bit) {
    exclusion_backoff backoff = {0};
    uint32_t *lower = (uint32_t *)(void *)&words->flags;
    for (;;) {
        if ((__atomic_load_n(&words->flags, __ATOMIC_ACQUIRE) & bit) == 0) {
            return;
        }
        if (exclusion_backoff_spin(&backoff)) {
            continue;
        }
        uint64_t before = __atomic_fetch_or(&words->flags, waiter_bit, __ATOMIC_SEQ_CST);
        if ((before & bit) == 0) {
            return;
        }
        // Returns at once if the lower half changed since (the bit cleared, or anything else), and
        // otherwise once the bit's end unparks the word: the compare and the sleep are one step.
        exclusion_park(lower, (uint32_t)(before | waiter_bit), 0);
    }
}

void exclusion_engine_flags_end(exclusion_engine_words *words, uint64_t bit, uint64_t waiter_bit) {
    uint64_t before = __atomic_fetch_and(&words->flags, ~(bit | waiter_bit), __ATOMIC_SEQ_CST);
    if ((before & waiter_bit) != 0) {
        exclusion_unpark_all((uint32_t *)(void *)&words->flags);
    }
}
