// Lost wake-ups in the real exclusion_lock, on real threads: the stress half of what
// Verification/ checks (the model is the other). See README.md here.
//
// Each round, a holder takes the lock, a waiter asks for it, and the holder gives it back at a
// random moment close to the end of the waiter's spin, where the waiter counts itself and fences
// (or, in the symmetric protocol, where the release's exchange matters); how long the spin lasts
// is measured first, on the machine it runs on. Just before it lets go, the holder writes to
// memory no cache holds, as a critical section that updates shared state does: the release's
// store then waits behind those writes in the processor's store buffer, which is the window a
// missing fence leaves open. (Without them the window is a few nanoseconds, and the planted bugs
// showed up by luck; README.md here has the figures.) The holder then gives
// the waiter a generous while to get in. A waiter asleep in the kernel while the lock is free,
// with no wake-up on its way, is a lost wake-up: counted, then ended by a real release. Between
// rounds the holder takes and gives back the lock alone until the contention episode ends, so
// that every round's waiter starts an episode of its own.
//
// Usage: stress [--fallback] [--until-lost] [--seconds S] ROUNDS
//   --fallback    the symmetric protocol, chosen before any lock is used
//   --until-lost  stop at the first lost wake-up
//   --seconds S   stop after S seconds (default 120), so a busy machine ends the run too
// Prints the protocol, the rounds run and the lost wake-ups; exits 0 unless the harness failed.
// stress.sh builds it as shipped and with planted bugs, and checks what each must find.
#define _GNU_SOURCE
#include "ExclusionShims.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static exclusion_lock lock;
static volatile uint32_t go, started, got;
static volatile pid_t waiter_id;

/// Memory the holder writes before each release: more than any cache holds, so every write misses.
enum { DIRTY_LINES = 32, LINE = 64 };
static unsigned char *cold;
static size_t cold_lines = ((size_t)256 << 20) / LINE, next_line;

/// Writes DIRTY_LINES lines of `cold`, a page and a line apart, each one not written for a while.
/// Stores only: a read as well would keep the release's read of `sleepers` from retiring early, and
/// the processor replays a read that another core's write overtakes before it retires.
static void dirty_memory(uint32_t round) {
    for (int i = 0; i < DIRTY_LINES; i++) {
        cold[next_line * LINE] = (unsigned char)round;
        next_line = (next_line + 4096 / LINE + 1) % cold_lines;  // coprime with the line count
    }
}

static void pause_for(uint64_t ns) {
    uint64_t until = exclusion_monotonic_now() + ns;
    while (exclusion_monotonic_now() < until) exclusion_spin_hint();
}

/// Whether this process's threads run ahead of the rest of a busy machine's: a lost wake-up needs
/// the holder and the waiter running at once, on two processors.
static int raised = 1;

/// Raises the calling thread's priority as far as this process may (Linux keeps one per thread).
static void raise_priority(void) {
    if (setpriority(PRIO_PROCESS, 0, -20) != 0) __atomic_store_n(&raised, 0, __ATOMIC_RELAXED);
}

static void *waiter(void *unused) {
    waiter_id = (pid_t)syscall(SYS_gettid);
    raise_priority();
    uint32_t round = 0;
    for (;;) {
        while (__atomic_load_n(&go, __ATOMIC_SEQ_CST) == round) exclusion_spin_hint();
        round = __atomic_load_n(&go, __ATOMIC_SEQ_CST);
        if (round == UINT32_MAX) return unused;
        __atomic_store_n(&started, round, __ATOMIC_SEQ_CST);
        exclusion_lock_lock(&lock);
        exclusion_lock_unlock(&lock);
        __atomic_store_n(&got, round, __ATOMIC_SEQ_CST);
    }
}

static int arrived(uint32_t round, uint64_t patience_ns) {
    uint64_t until = exclusion_monotonic_now() + patience_ns;
    while (__atomic_load_n(&got, __ATOMIC_SEQ_CST) != round) {
        if (exclusion_monotonic_now() > until) return 0;
        exclusion_spin_hint();
    }
    return 1;
}

/// Whether the waiter is in a futex call on `lock.waking` now (Linux's record of a thread's current
/// system call); -1 if this process can't read it.
static int asleep_in_kernel(void) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)waiter_id);
    FILE *file = fopen(path, "r");
    if (file == NULL) return -1;
    int read = fgets(line, sizeof line, file) != NULL;
    fclose(file);
    if (!read) return -1;
    unsigned long long address = 0;
    long number = -1;
    if (sscanf(line, "%ld %llx", &number, &address) != 2) return 0;
    return number == SYS_futex && address == (unsigned long long)(uintptr_t)&lock.waking;
}

/// Whether the waiter looks asleep for good: the lock free, the waiter counted, no wake-up on its
/// way, and the waiter asleep in the kernel (1), or somewhere this process can't see (-1). Counted
/// but not asleep is not stranded: a waiter preempted before its look at the lock, a busy
/// machine's way, gets in once it runs again.
static int stranded(void) {
    int counted = __atomic_load_n(&lock.word, __ATOMIC_SEQ_CST) == 0
        && (__atomic_load_n(&lock.sleepers, __ATOMIC_SEQ_CST) & ~EXCLUSION_LOCK_EPISODE) != 0
        && __atomic_load_n(&lock.waking, __ATOMIC_SEQ_CST) == 0;
    return counted ? asleep_in_kernel() : 0;
}

/// Ends the contention episode a round started: releases that find nobody counted.
static void end_episode(void) {
    for (int i = 0; i < 2 * EXCLUSION_LOCK_QUIET_RELEASES; i++) {
        exclusion_lock_lock(&lock);
        exclusion_lock_unlock(&lock);
    }
}

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/// How long the waiter's spin lasts on this machine, from its start to where it counts itself: the
/// median of `samples` spins timed on this thread, at a lock it holds itself. The rounds aim their
/// releases around that moment, since the spin's length in time depends on the processor (a spin
/// hint costs from a few to over a hundred cycles). Timed on one thread, so that a busy machine,
/// which may run the waiter and the holder by turns on one processor, can't skew it.
static uint64_t spin_length(int samples) {
    uint64_t lengths[samples];
    exclusion_lock_lock(&lock);
    for (int sample = 0; sample < samples; sample++) {
        uint64_t start = exclusion_monotonic_now();
        (void)exclusion_lock_spin(&lock);
        lengths[sample] = exclusion_monotonic_now() - start;
    }
    exclusion_lock_unlock(&lock);
    qsort(lengths, (size_t)samples, sizeof lengths[0], by_value);
    return lengths[samples / 2];
}

/// Waits up to a minute for the waiter to get the lock in `round`, and ends a lost wake-up it finds
/// on the way with a real release: 1 if it found one, -1 if the waiter never got in.
static int finish_round(uint32_t round) {
    uint64_t deadline = exclusion_monotonic_now() + 60000000000u;
    int lost = 0, unseen = 0;
    while (!arrived(round, 50000000)) {
        int asleep = stranded();
        // Where the kernel's record can't be read: stranded for a second on end.
        unseen = asleep < 0 ? unseen + 1 : 0;
        if (!lost && (asleep > 0 || unseen >= 20)) {
            lost = 1;
            exclusion_lock_lock(&lock);  // a real release, which sees the waiter and wakes it
            exclusion_lock_unlock(&lock);
        }
        if (exclusion_monotonic_now() > deadline) return -1;
    }
    return lost;
}

int main(int argc, char **argv) {
    int fallback = 0, until_lost = 0;
    double seconds = 120;
    long rounds = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--fallback") == 0) {
            fallback = 1;
        } else if (strcmp(argv[i], "--until-lost") == 0) {
            until_lost = 1;
        } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            seconds = atof(argv[++i]);
        } else {
            rounds = atol(argv[i]);
        }
    }
    if (rounds <= 0 || seconds <= 0) {
        fprintf(stderr, "usage: stress [--fallback] [--until-lost] [--seconds S] ROUNDS\n");
        return 2;
    }
    if (fallback) exclusion_lock_fenced = 0;  // before any lock is used, as the library requires
    raise_priority();
    exclusion_lock_init(&lock);
    cold = malloc(cold_lines * LINE);
    if (cold == NULL) {
        fprintf(stderr, "no memory for the holder to write\n");
        return 1;
    }
    // Written through now, so no write of a round faults (a fault drains the store buffer). Not
    // zeros, which a compiler may turn, with the malloc, into a calloc that leaves pages unmapped.
    memset(cold, 1, cold_lines * LINE);
    uint64_t fences_before = exclusion_lock_fences();
    pthread_t thread;
    pthread_create(&thread, NULL, waiter, NULL);
    unsigned seed = 12345;
    long lost = 0, run = 0;
    uint32_t round = 0;
    // The waiter spins EXCLUSION_BACKOFF_SPINS looks, then counts itself: each round releases
    // within a microsecond either side of that moment (from the spin's start if it is shorter).
    uint64_t spin = spin_length(201);
    uint64_t earliest = spin > 1000 ? spin - 1000 : 0;
    uint64_t spread = spin + 1000 - earliest;
    uint64_t stop = exclusion_monotonic_now() + (uint64_t)(seconds * 1e9);
    while (run < rounds && exclusion_monotonic_now() < stop && !(until_lost && lost > 0)) {
        round += 1;
        run += 1;
        exclusion_lock_lock(&lock);
        __atomic_store_n(&go, round, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) != round) exclusion_spin_hint();
        pause_for(earliest + (uint64_t)rand_r(&seed) % spread);
        dirty_memory(round);
        exclusion_lock_unlock(&lock);
        int found = finish_round(round);
        if (found < 0) {
            fprintf(stderr, "round %u: the waiter never got the lock\n", round);
            return 1;
        }
        lost += found;
        end_episode();
    }
    __atomic_store_n(&go, UINT32_MAX, __ATOMIC_SEQ_CST);
    pthread_join(thread, NULL);
    uint64_t fences = exclusion_lock_fences() - fences_before;
    printf("protocol %s, rounds %ld%s, spin %llu ns, fences %llu, %s, lost wake-ups %ld\n",
           exclusion_lock_fenced ? "fenced" : "symmetric", run,
           run < rounds && !(until_lost && lost > 0) ? " (out of time)" : "", (unsigned long long)spin,
           (unsigned long long)fences, raised ? "priority raised" : "priority as started", lost);
    if (fallback && (exclusion_lock_fenced || fences != 0)) {
        fprintf(stderr, "the symmetric protocol was asked for, but the lock fenced\n");
        return 1;
    }
    return 0;
}
