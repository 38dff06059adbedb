// How much parallel work this machine's cores really give: the same busy loop on one thread, then
// on two at once. On two dedicated cores both take the same wall time (ratio 1.0); on cores that
// share one physical core, or a host that lends out its CPUs, two threads take longer, up to 2.0
// and beyond. Benchmarks that compare two threads with one (the document import) can't do better
// than this ratio allows.
//
// From Benchmarks/: cc -O1 -pthread cores.c -o /tmp/cores && /tmp/cores
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static void *spin(void *unused) {
    volatile unsigned long sum = 0;
    for (unsigned long i = 0; i < 400000000UL; i++) sum += i;
    return unused;
}

static double run(int threads) {
    pthread_t ids[2];
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int i = 0; i < threads; i++) pthread_create(&ids[i], 0, spin, 0);
    for (int i = 0; i < threads; i++) pthread_join(ids[i], 0);
    clock_gettime(CLOCK_MONOTONIC, &end);
    return (end.tv_sec - start.tv_sec) * 1e3 + (end.tv_nsec - start.tv_nsec) / 1e6;
}

int main(void) {
    for (int round = 0; round < 8; round++) {
        double one = run(1), two = run(2);
        printf("1 thread %4.0f ms, 2 threads %4.0f ms: ratio %.2f\n", one, two, two / one);
    }
    return 0;
}
