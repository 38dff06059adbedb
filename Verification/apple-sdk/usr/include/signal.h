// A stand-in for the SDK's <signal.h> (see os/lock.h here): what the tests' thread pausing uses
// (Tests/ExclusionLockTesting), with Darwin's types and values.
#pragma once
#include <pthread.h>
#include <stdint.h>

typedef uint32_t sigset_t;

union __sigaction_u {
    void (*__sa_handler)(int);
    void (*__sa_sigaction)(int, void *, void *);
};

struct sigaction {
    union __sigaction_u __sigaction_u;
    sigset_t sa_mask;
    int sa_flags;
};

#define sa_handler __sigaction_u.__sa_handler
#define SIGUSR2 31
#define SA_RESTART 0x0002
#define SIG_UNBLOCK 2

int sigaction(int signal, const struct sigaction *action, struct sigaction *old);
int sigemptyset(sigset_t *set);
int sigaddset(sigset_t *set, int signal);
int pthread_kill(pthread_t thread, int signal);
int pthread_sigmask(int how, const sigset_t *set, sigset_t *old);
