// Threads that take a lock around `hold` rounds of a volatile loop and do `outside` rounds
// between: pthread_mutex_t, Exclusion's exclusion_lock, and the textbook futex mutex (the
// three-state lock of Drepper's "Futexes Are Tricky", which glibc's follows). Best of three runs,
// wall-clock time per lock taken. Usage: contention THREADS HOLD OUTSIDE. See README.md here.
#include "ExclusionShims.h"
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

enum { perThread = 100000 };
static int design, hold, outside;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static exclusion_lock lock;
static uint32_t textbook;

static void work(int rounds) {
    for (volatile int i = 0; i < rounds; i++) {}
}

static void textbookLock(void) {
    uint32_t expected = 0;
    if (__atomic_compare_exchange_n(&textbook, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return;
    while (__atomic_exchange_n(&textbook, 2, __ATOMIC_ACQUIRE) != 0) {
        syscall(SYS_futex, &textbook, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
    }
}

static void textbookUnlock(void) {
    if (__atomic_exchange_n(&textbook, 0, __ATOMIC_RELEASE) == 2) {
        syscall(SYS_futex, &textbook, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
}

static void *run(void *unused) {
    for (int i = 0; i < perThread; i++) {
        switch (design) {
        case 0: pthread_mutex_lock(&mutex); work(hold); pthread_mutex_unlock(&mutex); break;
        case 1: exclusion_lock_lock(&lock); work(hold); exclusion_lock_unlock(&lock); break;
        default: textbookLock(); work(hold); textbookUnlock(); break;
        }
        work(outside);
    }
    return unused;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: contention THREADS HOLD OUTSIDE\n");
        return 2;
    }
    int threads = atoi(argv[1]);
    hold = atoi(argv[2]);
    outside = atoi(argv[3]);
    if (threads < 1 || threads > 16) return 2;
    const char *names[] = {"pthread_mutex_t", "exclusion_lock", "textbook futex mutex"};
    printf("%d threads, %d rounds inside, %d outside:", threads, hold, outside);
    for (design = 0; design < 3; design++) {
        double best = 1e18;
        for (int attempt = 0; attempt < 3; attempt++) {
            pthread_t started[16];
            uint64_t start = now();
            for (int i = 0; i < threads; i++) pthread_create(&started[i], NULL, run, NULL);
            for (int i = 0; i < threads; i++) pthread_join(started[i], NULL);
            double each = (double)(now() - start) / ((double)threads * perThread);
            if (each < best) best = each;
        }
        printf("  %s %.0f ns", names[design], best);
    }
    printf("\n");
    return 0;
}
