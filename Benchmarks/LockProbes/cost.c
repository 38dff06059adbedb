// What a lock's fast path and a sleeper's fence cost on this machine, in a process that has
// started a thread (glibc takes shortcuts in a single-threaded one). See README.md here.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/membarrier.h>

static uint64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *idle(void *unused) { return unused; }

static volatile int stop;
static void *busy(void *unused) {
    while (!stop) {}
    return unused;
}

static uint32_t word, sleepers;
static volatile uint64_t counter;

int main(void) {
    pthread_t thread;
    pthread_create(&thread, NULL, idle, NULL);
    pthread_join(thread, NULL);

    const int n = 50000000;
    uint64_t start = now();
    for (int i = 0; i < n; i++) {
        uint32_t expected = 0;
        __atomic_compare_exchange_n(&word, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
        counter++;
        __atomic_exchange_n(&word, 0, __ATOMIC_RELEASE);
    }
    uint64_t middle = now();
    for (int i = 0; i < n; i++) {
        uint32_t expected = 0;
        __atomic_compare_exchange_n(&word, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
        counter++;
        __atomic_store_n(&word, 0, __ATOMIC_RELEASE);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        if (__atomic_load_n(&sleepers, __ATOMIC_RELAXED)) abort();
    }
    uint64_t end = now();
    printf("take and give back, compare-and-swap + exchange:     %5.2f ns\n", (double)(middle - start) / n);
    printf("take and give back, compare-and-swap + plain store:  %5.2f ns\n", (double)(end - middle) / n);

    if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0) {
        printf("membarrier: not available here\n");
        return 0;
    }
    for (int busyThreads = 0; busyThreads <= 3; busyThreads += busyThreads == 0 ? 1 : 2) {
        pthread_t threads[3];
        stop = 0;
        for (int i = 0; i < busyThreads; i++) pthread_create(&threads[i], NULL, busy, NULL);
        usleep(10000);
        const int calls = 20000;
        uint64_t before = now();
        for (int i = 0; i < calls; i++) syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
        uint64_t after = now();
        stop = 1;
        for (int i = 0; i < busyThreads; i++) pthread_join(threads[i], NULL);
        printf("membarrier with %d other busy thread(s):            %6.0f ns\n", busyThreads,
               (double)(after - before) / calls);
    }
    return 0;
}
