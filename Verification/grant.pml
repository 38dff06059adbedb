/*
 * Backing off for a granted waiter (Sources/Exclusion/Internal/Engine+Waiting.swift
 * `_backOffForGrantee`, WaitList.swift `grantToWaitFor` and `_endGrant`, and
 * `exclusion_wait_for_change` in ExclusionShims.c) as a Promela model, for Spin: where locks lend
 * priority (Apple platforms), an access that found the state promised to a woken waiter sleeps on
 * a count of ended grants until the grant ends, instead of looking again and again. It reads the
 * count, then whether the state is still promised, without a lock; a grant ends by clearing the
 * promise, then counting, then waking the sleepers if any counted themselves as parked: a sleeper
 * counts itself before its last look at the count (`exclusion_change_word` in ExclusionShims.h), so
 * that a grant's end with nobody asleep makes no system call.
 *
 * The state's lock and the wait list's lock are assumed correct. The grantee holds a grant, then
 * either takes the state and takes the grant up (with the state held), or gives up without the
 * state (its deadline passed); either way the grant ends under the wait list's lock, the count goes
 * up, and every sleeper is woken if the parked count isn't 0. Two other threads access the state twice each, backing off while
 * it is promised. Sequentially consistent: every write is made under a lock or is an atomic
 * addition; a sleep compares and blocks in one step; a wake unblocks every sleeper on the count.
 *
 * Checked: nobody changes the state while it is promised (the assertion), and no lost wake-up: a
 * thread asleep for good once the grantee is done is an invalid end state. `check.sh` runs it as
 * written and each broken variant below, which must fail.
 *
 *   WAKE_BEFORE_COUNT       broken: the grant's end wakes the sleepers before it counts
 *   COUNT_BEFORE_CLEAR      broken: the grant's end counts before it clears the promise
 *   PROMISE_READ_FIRST      broken: a thread reads the promise before the count
 *   NO_PROMISE_CHECK        broken: a thread waits for a change even when the grant has ended
 *   PARKED_READ_FIRST       broken: the grant's end reads the parked count before it counts
 *   PARKED_AFTER_LOOK       broken: a sleeper counts itself as parked after its last look
 */

bit state;                      /* the state's lock */
bit list;                       /* the wait list's lock */
bit reserved = 1;
byte ended;
bit sleeping[2];
byte parked;
byte changing;

inline end_grant(anyone) {
    atomic { list == 0 -> list = 1 };
#ifdef PARKED_READ_FIRST
    anyone = (parked != 0);
#endif
#ifdef COUNT_BEFORE_CLEAR
    ended++;
    reserved = 0;
#else
    reserved = 0;
#ifndef WAKE_BEFORE_COUNT
    ended++;
#endif
#endif
#ifndef PARKED_READ_FIRST
    anyone = (parked != 0);
#endif
    if
    :: anyone -> atomic { sleeping[0] = 0; sleeping[1] = 0 }
    :: else -> skip
    fi;
#ifdef WAKE_BEFORE_COUNT
    ended++;
#endif
    list = 0
}

proctype Grantee() {
    bit anyone;
    if
    :: atomic { state == 0 -> state = 1 };          /* takes the state, then the grant */
        end_grant(anyone);
        atomic { changing++; assert(changing == 1) };
        changing--;
        state = 0
    :: end_grant(anyone)                            /* gives up: its deadline passed */
    fi
}

proctype Other(byte i) {
    byte n = 0;
    byte seen;
    bit promised;
    do
    :: n < 2 ->
        atomic { state == 0 -> state = 1 };
        do
        :: reserved ->
            /* grantToWaitFor, with the state held, without the wait list's lock */
#ifdef PROMISE_READ_FIRST
            promised = reserved;
            seen = ended;
#else
            seen = ended;
            promised = reserved;
#endif
#ifdef NO_PROMISE_CHECK
            promised = 1;
#endif
            state = 0;
            if
            :: promised ->
                /* exclusion_wait_for_change: counts itself as parked, then sleeps while the count is
                   what it saw (the futex's look and sleep are one step) */
#ifdef PARKED_AFTER_LOOK
                atomic {
                    if
                    :: ended == seen -> sleeping[i] = 1
                    :: else -> skip
                    fi
                };
                parked++;
#else
                parked++;
                atomic {
                    if
                    :: ended == seen -> sleeping[i] = 1
                    :: else -> skip
                    fi
                };
#endif
                sleeping[i] == 0;
                parked--
            :: else -> skip
            fi;
            atomic { state == 0 -> state = 1 }
        :: else -> break
        od;
        atomic { changing++; assert(changing == 1 && !reserved) };
        changing--;
        state = 0;
        n++
    :: else -> break
    od
}

init {
    atomic {
        run Grantee();
        run Other(0);
        run Other(1)
    }
}
