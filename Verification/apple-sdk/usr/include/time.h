#pragma once
typedef long time_t;
struct timespec {
    time_t tv_sec;
    long tv_nsec;
};
typedef enum {
    _CLOCK_REALTIME = 0,
    _CLOCK_MONOTONIC = 6,
} clockid_t;
#define CLOCK_REALTIME _CLOCK_REALTIME
#define CLOCK_MONOTONIC _CLOCK_MONOTONIC
int clock_gettime(clockid_t clock, struct timespec *now);
int nanosleep(const struct timespec *interval, struct timespec *remaining);
