// Lost wake-ups in the real exclusion_lock, on real threads: the stress half of what
// Verification/ checks (the model is the other). See README.md here.
//
// Each round, a holder takes the lock, a waiter asks for it, and the holder gives it back at a
// random moment close to the end of the waiter's spin, where the waiter counts itself and fences
// (or, in the symmetric protocol, where the release's exchange matters); how long the spin lasts
// is measured first, on the machine it runs on. The holder then gives the
// waiter a generous while to get in. A waiter left asleep while the lock is free, with no wake-up on
// its way, is a lost wake-up: counted, then ended by a real release. Between rounds the holder
// takes and gives back the lock alone until the contention episode ends, so that every round's
// waiter starts an episode of its own.
//
// Usage: stress ROUNDS [fallback]   Prints the rounds run and the lost wake-ups; exits 0.
// stress.sh builds it as shipped and with planted bugs, and checks what each must find.
#include "ExclusionShims.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static exclusion_lock lock;
static volatile uint32_t go, started, got;

static void pause_for(uint64_t ns) {
    uint64_t until = exclusion_monotonic_now() + ns;
    while (exclusion_monotonic_now() < until) exclusion_spin_hint();
}

static void *waiter(void *unused) {
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

/// Whether the waiter is asleep for good: the lock free, the waiter counted, no wake-up on its way.
static int stranded(void) {
    return __atomic_load_n(&lock.word, __ATOMIC_SEQ_CST) == 0
        && (__atomic_load_n(&lock.sleepers, __ATOMIC_SEQ_CST) & ~EXCLUSION_LOCK_EPISODE) != 0
        && __atomic_load_n(&lock.waking, __ATOMIC_SEQ_CST) == 0;
}

static int arrived(uint32_t round, uint64_t patience_ns) {
    uint64_t until = exclusion_monotonic_now() + patience_ns;
    while (__atomic_load_n(&got, __ATOMIC_SEQ_CST) != round) {
        if (exclusion_monotonic_now() > until) return 0;
        exclusion_spin_hint();
    }
    return 1;
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
/// median of `samples` rounds in which the holder waits for the count before it lets go. The
/// rounds that follow aim their releases around that moment, since the spin's length in time
/// depends on the processor (a spin hint costs from a few to over a hundred cycles).
static uint64_t spin_length(uint32_t *round, int samples) {
    uint64_t lengths[samples];
    for (int sample = 0; sample < samples; sample++) {
        *round += 1;
        exclusion_lock_lock(&lock);
        __atomic_store_n(&go, *round, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) != *round) exclusion_spin_hint();
        uint64_t start = exclusion_monotonic_now();
        while ((__atomic_load_n(&lock.sleepers, __ATOMIC_SEQ_CST) & ~EXCLUSION_LOCK_EPISODE) == 0) {
            if (exclusion_monotonic_now() - start > 60000000000u) {
                fprintf(stderr, "calibration: the waiter never counted itself\n");
                exit(1);
            }
            exclusion_spin_hint();
        }
        lengths[sample] = exclusion_monotonic_now() - start;
        exclusion_lock_unlock(&lock);
        if (!arrived(*round, 60000000000u)) {
            fprintf(stderr, "calibration: the waiter never got the lock\n");
            exit(1);
        }
        end_episode();
    }
    qsort(lengths, (size_t)samples, sizeof lengths[0], by_value);
    return lengths[samples / 2];
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: stress ROUNDS [fallback]\n");
        return 2;
    }
    long rounds = atol(argv[1]);
    int fallback = argc > 2 && strcmp(argv[2], "fallback") == 0;
    if (fallback) exclusion_lock_fenced = 0;  // before any lock is used, as the library requires
    exclusion_lock_init(&lock);
    uint64_t fences_before = exclusion_lock_fences();
    pthread_t thread;
    pthread_create(&thread, NULL, waiter, NULL);
    unsigned seed = 12345;
    long lost = 0;
    uint32_t round = 0;
    // The waiter spins EXCLUSION_BACKOFF_SPINS looks, then counts itself: each round releases
    // within a microsecond either side of that moment (from the spin's start if it is shorter).
    uint64_t spin = spin_length(&round, 201);
    uint64_t earliest = spin > 1000 ? spin - 1000 : 0;
    uint64_t spread = spin + 1000 - earliest;
    for (long counted = 0; counted < rounds; counted++) {
        round += 1;
        exclusion_lock_lock(&lock);
        __atomic_store_n(&go, round, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) != round) exclusion_spin_hint();
        pause_for(earliest + (uint64_t)rand_r(&seed) % spread);
        exclusion_lock_unlock(&lock);
        if (!arrived(round, 50000000) && stranded()) {
            lost++;
            exclusion_lock_lock(&lock);  // a real release, which sees the waiter and wakes it
            exclusion_lock_unlock(&lock);
        }
        if (!arrived(round, 60000000000u)) {
            fprintf(stderr, "round %u: the waiter never got the lock\n", round);
            return 1;
        }
        end_episode();
    }
    __atomic_store_n(&go, UINT32_MAX, __ATOMIC_SEQ_CST);
    pthread_join(thread, NULL);
    uint64_t fences = exclusion_lock_fences() - fences_before;
    printf("protocol %s, rounds %ld, spin %llu ns, fences %llu, lost wake-ups %ld\n",
           exclusion_lock_fenced ? "fenced" : "symmetric", rounds, (unsigned long long)spin,
           (unsigned long long)fences, lost);
    if (fallback && (exclusion_lock_fenced || fences != 0)) {
        fprintf(stderr, "the symmetric protocol was asked for, but the lock fenced\n");
        return 1;
    }
    return 0;
}
