/*
 * exclusion_lock (Sources/ExclusionShims/ExclusionLock.c) as a Promela model, for Spin.
 *
 * Three threads take the lock three times each; thread 2 waits with a timeout and may give up.
 * Memory is x86-TSO: each thread has a store buffer, which here only ever holds a fenced-mode
 * release's plain store `word = 0` (every other write in the protocol is a locked instruction or a
 * sequentially consistent store, both of which drain the buffer first); a load of `word` sees the
 * thread's own buffered store; the Flusher process moves a buffered store to memory at any moment.
 * `membarrier` drains every thread's buffer at once. A futex wait compares and blocks in one step,
 * as the kernel does under its own lock; a futex wake unblocks one sleeper, or nobody.
 *
 * Checked: mutual exclusion (the assertion) and no lost wake-up: a thread left asleep while every
 * other thread has finished is an invalid end state. `check.sh` runs the protocol as written, in
 * both modes, and each broken variant below, which must fail.
 *
 *   FALLBACK                      the symmetric protocol (no membarrier; the release exchanges)
 *   MEMBARRIER_CAN_FAIL           a waiter's membarrier may fail; it then polls
 *   NO_MEMBARRIER                 broken: the waiter that starts an episode doesn't fence
 *   NO_COMPILER_FENCE             broken: the release reads `sleepers` before its store
 *   NO_RELEASE_FENCE              broken: the slow release reads `waking` without fencing first
 *   RELEASE_IGNORES_EPISODE       broken: the release takes its slow path only for counted waiters
 *   NO_CLEAR_BEFORE_LOOK          broken: a waiter clears `waking` only before its first look
 *   CLEAR_ON_EXIT                 broken: a waiter clears `waking` again as it leaves
 *   SLEEP_ON_COUNTER              broken: sleepers sleep on a wake-up counter, which wraps around
 *   PLAIN_STORE_FALLBACK          broken (with FALLBACK): the symmetric release uses a plain store
 *   NO_FENCE_WHILE_COUNTED        broken (with MEMBARRIER_CAN_FAIL): a waiter skips the fence
 *                                 whenever another waiter is counted, marked episode or not
 *
 * And a change that is not a bug (it holds; README.md says why):
 *   MARK_BEFORE_FENCE             the episode is marked before its fence
 */

#define N 3
#define K 3
#define EPISODE 8               /* EXCLUSION_LOCK_EPISODE; counts stay below it */
#define COUNT 7

byte word;                      /* memory */
byte sleepers;
bit waking;
#ifdef SLEEP_ON_COUNTER
bit wakeups;                    /* one bit wide, so that it wraps after two wake-ups */
#endif
bit pending[N];                 /* thread i's buffer holds `word = 0` */
bit asleep[N];                  /* thread i sleeps in the futex */
byte inside;                    /* threads holding the lock, by their own account */
#ifdef FALLBACK
bit fenced = 0;
#else
bit fenced = 1;
#endif

inline drain(i) {
    if
    :: pending[i] -> word = 0; pending[i] = 0
    :: else -> skip
    fi
}

inline membarrier() {
    atomic { drain(0); drain(1); drain(2) }
}

inline futex_wake() {
    atomic {
        if
        :: asleep[0] -> asleep[0] = 0
        :: asleep[1] -> asleep[1] = 0
        :: asleep[2] -> asleep[2] = 0
        :: else -> skip
        fi
    }
}

/* exclusion_lock_try: a compare-and-swap, a locked instruction. */
inline try_lock(i, ok) {
    atomic {
        drain(i);
        if
        :: word == 0 -> word = 1; ok = 1
        :: else -> ok = 0
        fi
    }
}

/* exclusion_lock_wake */
inline wake(i, s, ok) {
#ifndef NO_RELEASE_FENCE
    atomic { drain(i) };
#endif
    s = sleepers;
    if
    :: (s & COUNT) == 0 ->
        /* Nobody counted: maybe end the episode (the quiet count, over-approximated: any time). */
        if
        :: atomic { sleepers == EPISODE -> sleepers = 0 }
        :: true -> skip
        fi
    :: else ->
        if
        :: waking == 0 ->
            atomic {
                drain(i);
                if
                :: waking == 0 -> waking = 1; ok = 1
                :: else -> ok = 0
                fi
            };
            if
            :: ok ->
#ifdef SLEEP_ON_COUNTER
                atomic { drain(i); wakeups = wakeups + 1 };
#endif
                futex_wake()
            :: else -> skip
            fi
        :: else -> skip
        fi
    fi
}

/* exclusion_lock_unlock */
inline unlock(i, s, ok) {
    if
    :: fenced ->
#ifdef NO_COMPILER_FENCE
        s = sleepers;
        pending[i] = 1;
#else
        pending[i] = 1;
        s = sleepers;
#endif
#ifdef RELEASE_IGNORES_EPISODE
        s = s & COUNT;
#endif
    :: else ->
#ifdef PLAIN_STORE_FALLBACK
        pending[i] = 1;
#else
        atomic { drain(i); word = 0 };
#endif
        s = sleepers
    fi;
    if
    :: s != 0 -> wake(i, s, ok)
    :: else -> skip
    fi
}

proctype Thread(byte i; bit timed) {
    byte n = 0;
    byte s;
    bit ok;
    bit took;
    bit polling;
#ifdef SLEEP_ON_COUNTER
    bit seen;
#endif
    do
    :: n < K ->
        /* The spin's looks are tries like this one; the model makes one. */
        try_lock(i, took);
        if
        :: !took ->
            atomic { drain(i); s = sleepers; sleepers = sleepers + 1 };
            if
#ifdef NO_FENCE_WHILE_COUNTED
            :: fenced && (s & COUNT) != 0 -> skip
#endif
            :: fenced && (s & EPISODE) == 0 ->
                if
                ::
#ifdef MARK_BEFORE_FENCE
                    atomic { drain(i); sleepers = sleepers | EPISODE };
#endif
#ifndef NO_MEMBARRIER
                    membarrier();
#endif
#ifndef MARK_BEFORE_FENCE
                    atomic { drain(i); sleepers = sleepers | EPISODE }
#else
                    skip
#endif
#ifdef MEMBARRIER_CAN_FAIL
                :: polling = 1
#endif
                fi
            :: else -> skip
            fi;
#ifdef NO_CLEAR_BEFORE_LOOK
            atomic { drain(i); waking = 0 };
#endif
            do
            ::
#ifdef SLEEP_ON_COUNTER
                seen = wakeups;
#endif
#ifndef NO_CLEAR_BEFORE_LOOK
                atomic { drain(i); waking = 0 };
#endif
                try_lock(i, ok);
                if
                :: ok -> took = 1; break
                :: !ok && timed -> break                    /* the deadline passed */
                :: !ok ->
                    atomic {
                        if
#ifdef SLEEP_ON_COUNTER
                        :: wakeups == seen -> asleep[i] = 1
#else
                        :: waking == 0 -> asleep[i] = 1
#endif
                        :: else -> skip
                        fi
                    };
                    if
                    :: asleep[i] == 0 -> skip               /* woken, or never slept */
                    :: atomic { (timed || polling) && asleep[i] == 1 -> asleep[i] = 0 }
                    fi
                fi
            od;
            atomic { drain(i); sleepers = sleepers - 1 };
#ifdef CLEAR_ON_EXIT
            atomic { drain(i); waking = 0 };
#endif
        :: else -> skip
        fi;
        if
        :: took ->
            atomic { inside++; assert(inside == 1) };
            inside--;
            unlock(i, s, ok)
        :: else -> skip
        fi;
        atomic { n++; s = 0; ok = 0; took = 0; polling = 0 }
    :: else -> break
    od
}

active proctype Flusher() {
end:
    do
    :: atomic { pending[0] -> word = 0; pending[0] = 0 }
    :: atomic { pending[1] -> word = 0; pending[1] = 0 }
    :: atomic { pending[2] -> word = 0; pending[2] = 0 }
    od
}

init {
    atomic {
        run Thread(0, 0);
        run Thread(1, 0);
        run Thread(2, 1)
    }
}
