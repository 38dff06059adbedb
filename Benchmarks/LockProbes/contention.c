// Threads that take a lock around `inside` nanoseconds of work and do `outside` nanoseconds
// between, as fast as they can for a fixed time: pthread_mutex_t against Exclusion's
// exclusion_lock, in alternating runs. Prints the wall-clock time per lock taken (the median over
// the runs, and the median of the per-run ratios), the longest single wait for the lock seen in any
// run, and how many contention episodes exclusion_lock fenced per 1,000 locks taken.
//
// Built with -DEXCLUSION_PORTABLE_LOCK (`run.sh --portable`), exclusion_lock is the Apple design's
// owned lock over the portable build's stand-in for os_unfair_lock, and its peer is that stand-in
// alone: what the owned lock adds to the system lock it rests on, whose hand-offs all sleep.
//
// Usage: contention THREADS INSIDE_NS OUTSIDE_NS [RUNS [SECONDS]]
//        contention --matrix [RUNS [SECONDS]]   (threads 2, 4, 8, 16 x the four workloads below)
// See README.md here.
#include "ExclusionShims.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

enum { maxThreads = 16, maxRuns = 15 };

// Ticks for timing single waits: the time-stamp counter where there is one (a few nanoseconds
// to read), the monotonic clock elsewhere.
static uint64_t ticks(void) {
#if defined(__x86_64__)
    return __rdtsc();
#else
    return exclusion_monotonic_now();
#endif
}

static double nsPerRound, ticksPerNs;
static void calibrate(void) {
    double best = 1e9;
    uint64_t startTicks = ticks(), startNs = exclusion_monotonic_now();
    for (int attempt = 0; attempt < 5; attempt++) {
        uint64_t before = exclusion_monotonic_now();
        for (volatile uint64_t i = 0; i < 20000000; i++) {}
        double each = (double)(exclusion_monotonic_now() - before) / 20000000;
        if (each < best) best = each;
    }
    nsPerRound = best;
    ticksPerNs = (double)(ticks() - startTicks) / (double)(exclusion_monotonic_now() - startNs);
}

static void work(uint64_t ns) {
    uint64_t rounds = (uint64_t)((double)ns / nsPerRound);
    for (volatile uint64_t i = 0; i < rounds; i++) {}
}

typedef struct {
    uint64_t taken, longestWait;
    char padding[48];
} Tally;

static int design;  // 0: the peer (pthread_mutex_t, or the stand-in for os_unfair_lock), 1: exclusion_lock
static uint64_t inside, outside;
static volatile int stop;
#if EXCLUSION_OWNED_LOCK
static exclusion_system_lock peer;
static void peerLock(void) { exclusion_system_lock_lock(&peer); }
static void peerUnlock(void) { exclusion_system_lock_unlock(&peer); }
static const char peerName[] = "os_unfair_lock stand-in";
// The owned lock fences nothing.
static uint64_t fencesSoFar(void) { return 0; }
static const char design1Notes[] = "the owned lock (the Apple design), portable build";
#else
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static void peerLock(void) { pthread_mutex_lock(&mutex); }
static void peerUnlock(void) { pthread_mutex_unlock(&mutex); }
static const char peerName[] = "pthread_mutex_t";
static uint64_t fencesSoFar(void) { return exclusion_lock_fences(); }
#endif
static exclusion_lock lock;
static Tally tallies[maxThreads];

static void *run(void *argument) {
    Tally *tally = argument;
    while (!stop) {
        uint64_t before = ticks();
        if (design == 0) peerLock(); else exclusion_lock_lock(&lock);
        uint64_t waited = ticks() - before;
        if (waited > tally->longestWait) tally->longestWait = waited;
        work(inside);
        if (design == 0) peerUnlock(); else exclusion_lock_unlock(&lock);
        tally->taken++;
        work(outside);
    }
    return NULL;
}

/// One run: `threads` threads for `seconds`; ns per lock taken; adds to `longest` (µs) and `taken`.
static double once(int threads, double seconds, double *longest, uint64_t *taken) {
    pthread_t started[maxThreads];
    memset(tallies, 0, sizeof tallies);
    stop = 0;
    uint64_t start = exclusion_monotonic_now();
    for (int i = 0; i < threads; i++) pthread_create(&started[i], NULL, run, &tallies[i]);
    usleep((useconds_t)(seconds * 1e6));
    stop = 1;
    for (int i = 0; i < threads; i++) pthread_join(started[i], NULL);
    uint64_t elapsed = exclusion_monotonic_now() - start, total = 0;
    for (int i = 0; i < threads; i++) {
        total += tallies[i].taken;
        double wait = (double)tallies[i].longestWait / ticksPerNs / 1000;
        if (wait > *longest) *longest = wait;
    }
    *taken += total;
    return (double)elapsed / (double)total;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *values, int count) {
    qsort(values, (size_t)count, sizeof *values, compare);
    return values[count / 2];
}

static void cell(int threads, uint64_t in, uint64_t out, int runs, double seconds) {
    inside = in;
    outside = out;
    double times[2][maxRuns], ratios[maxRuns], longest[2] = {0, 0};
    uint64_t taken = 0, unused = 0, fencesBefore = fencesSoFar();
    for (int r = 0; r < runs; r++) {
        for (design = 0; design < 2; design++) {
            times[design][r] = once(threads, seconds, &longest[design], design ? &taken : &unused);
        }
        ratios[r] = times[1][r] / times[0][r];
    }
    double fences = (double)(fencesSoFar() - fencesBefore) * 1000 / (double)taken;
    double low = ratios[0], high = ratios[0];
    for (int r = 1; r < runs; r++) {
        if (ratios[r] < low) low = ratios[r];
        if (ratios[r] > high) high = ratios[r];
    }
    printf("| %2d | %5.1f / %3.1f | %7.0f | %8.1f | %7.0f | %8.1f | %.2f× (%.2f–%.2f) | %.2f |\n", threads,
           (double)in / 1000, (double)out / 1000, median(times[0], runs), longest[0], median(times[1], runs),
           longest[1], median(ratios, runs), low, high, fences);
    fflush(stdout);
}

static void header(int runs, double seconds) {
#if EXCLUSION_OWNED_LOCK
    const char *notes = design1Notes;
#else
    const char *notes =
        exclusion_lock_fenced ? "with membarrier (plain-store release)" : "without membarrier (exchange release)";
#endif
    printf("exclusion_lock %s; %d alternating runs of %.2f s per cell; ns per lock taken (median), "
           "longest single wait in µs\n\n",
           notes, runs, seconds);
    printf("| threads | µs inside / outside | %s | longest | exclusion_lock | longest | "
           "ratio (range) | fences per 1,000 |\n", peerName);
    printf("|---:|---|---:|---:|---:|---:|---:|---:|\n");
}

int main(int argc, char **argv) {
    calibrate();
    int matrix = argc >= 2 && strcmp(argv[1], "--matrix") == 0;
    int first = matrix ? 2 : 4;
    if (!matrix && argc < 4) {
        fprintf(stderr, "usage: contention THREADS INSIDE_NS OUTSIDE_NS [RUNS [SECONDS]]\n"
                        "       contention --matrix [RUNS [SECONDS]]\n");
        return 2;
    }
    int runs = argc > first ? atoi(argv[first]) : 3;
    double seconds = argc > first + 1 ? atof(argv[first + 1]) : 0.3;
    if (runs < 1 || runs > maxRuns || seconds <= 0) return 2;
    exclusion_lock_init(&lock);
#if EXCLUSION_OWNED_LOCK
    exclusion_system_lock_init(&peer);
#endif
    header(runs, seconds);
    if (!matrix) {
        int threads = atoi(argv[1]);
        if (threads < 1 || threads > maxThreads) return 2;
        cell(threads, (uint64_t)atoll(argv[2]), (uint64_t)atoll(argv[3]), runs, seconds);
        return 0;
    }
    const uint64_t workloads[][2] = {{100, 100}, {1000, 0}, {1000, 1000}, {5000, 0}};
    for (int t = 2; t <= maxThreads; t *= 2) {
        for (int w = 0; w < 4; w++) cell(t, workloads[w][0], workloads[w][1], runs, seconds);
    }
    return 0;
}
