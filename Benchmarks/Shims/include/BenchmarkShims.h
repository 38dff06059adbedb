#ifndef BENCHMARK_SHIMS_H
#define BENCHMARK_SHIMS_H

#include <stdint.h>
#include <time.h>

/// A tick count for timing single waits: the time-stamp counter on x86-64 (a few nanoseconds to
/// read, the same for every design measured), the monotonic clock in nanoseconds elsewhere.
static inline uint64_t benchmark_ticks(void) {
#if defined(__x86_64__)
    return __builtin_ia32_rdtsc();
#else
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
#endif
}

#endif
