/*
 * exclusion_lock on Apple platforms (Sources/ExclusionShims/ExclusionOwnedLock.{h,c}) as a Promela
 * model, for Spin: the system's lock (os_unfair_lock), assumed correct, with timed waiters that
 * sleep on a word of their own beside it.
 *
 * Three threads take the lock three times each: thread 0 without a deadline (it waits inside the
 * system lock, which wakes it itself), thread 1 with a deadline that never passes (so that a lost
 * wake-up strands it), thread 2 with a deadline that may pass at any moment it sleeps. Memory is
 * x86-TSO: the only plain store any variant makes is the system lock's release in
 * PLAIN_STORE_UNLOCK, which goes into the releasing thread's buffer; a load of the lock word sees
 * the thread's own buffered store; the Flusher moves it to memory at any moment; every other write
 * is a locked instruction or a sequentially consistent store, which drains the buffer first. A
 * sleep on `waking` compares and blocks in one step (the kernel's futex, os_sync_wait_on_address);
 * a wake unblocks one sleeper, or nobody.
 *
 * Checked: mutual exclusion (the assertion) and no lost wake-up: thread 1 asleep for good while
 * every other thread has finished is an invalid end state. `check.sh` runs the protocol as written
 * and each broken variant below, which must fail.
 *
 *   PLAIN_STORE_UNLOCK         broken: the system lock is given back with a plain store, whose
 *                              read of `timed` can pass it (os_unfair_lock's is an exchange)
 *   READ_TIMED_BEFORE_UNLOCK   broken: the release reads `timed` before it gives the lock back
 *   COUNT_AFTER_TRY            broken: a timed waiter counts itself after its try, not before
 *   NO_CLEAR_BEFORE_TRY        broken: a timed waiter clears `waking` only before its first try
 *   CLEAR_ON_EXIT              broken: a timed waiter clears `waking` again as it leaves
 *   LEAVE_WITHOUT_TRY          broken: a woken waiter whose deadline passed leaves without a try
 */

#define N 3
#define K 3

byte lockword;                  /* the system lock in memory: 0 free, 1 held */
bit pending[N];                 /* thread i's buffer holds `lockword = 0` (PLAIN_STORE_UNLOCK) */
byte timed;
bit waking;
bit asleep[N];                  /* thread i sleeps on `waking` */
byte inside;

inline drain(i) {
    if
    :: pending[i] -> lockword = 0; pending[i] = 0
    :: else -> skip
    fi
}

/* exclusion_lock_try: the system lock's compare-and-swap, a locked instruction. */
inline try_lock(i, ok) {
    atomic {
        drain(i);
        if
        :: lockword == 0 -> lockword = 1; ok = 1
        :: else -> ok = 0
        fi
    }
}

/* exclusion_lock_lock: inside the system lock until it is free; its own wake-ups are assumed right. */
inline lock_untimed(i) {
    atomic { drain(i); lockword == 0 -> lockword = 1 }
}

/* exclusion_unpark_one */
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

/* exclusion_lock_wake */
inline wake(i, ok) {
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
        :: ok -> futex_wake()
        :: else -> skip
        fi
    :: else -> skip
    fi
}

/* exclusion_lock_unlock */
inline unlock(i, t, ok) {
#ifdef READ_TIMED_BEFORE_UNLOCK
    t = timed;
#endif
#ifdef PLAIN_STORE_UNLOCK
    pending[i] = 1;
#else
    atomic { drain(i); lockword = 0 };
#endif
#ifndef READ_TIMED_BEFORE_UNLOCK
    t = timed;
#endif
    if
    :: t != 0 -> wake(i, ok)
    :: else -> skip
    fi
}

/* exclusion_lock_sleep_until, by a thread whose deadline may pass (`expires`) or not. */
inline lock_timed(i, expires, took, ok, timedout, counted) {
    try_lock(i, took);
    if
    :: !took ->
#ifndef COUNT_AFTER_TRY
        atomic { drain(i); timed++ };
#endif
#ifdef NO_CLEAR_BEFORE_TRY
        atomic { drain(i); waking = 0 };
#endif
        do
        ::
#ifndef NO_CLEAR_BEFORE_TRY
            atomic { drain(i); waking = 0 };
#endif
            try_lock(i, ok);
#ifdef COUNT_AFTER_TRY
            if
            :: !ok && !counted -> atomic { drain(i); timed++ }; counted = 1
            :: else -> skip
            fi;
#endif
            if
            :: ok -> took = 1; break
            :: !ok && timedout -> took = 0; break
            :: !ok ->
                /* futex: compares and blocks in one step */
                atomic {
                    if
                    :: waking == 0 -> asleep[i] = 1
                    :: else -> skip
                    fi
                };
                if
                :: asleep[i] == 0 ->                    /* woken, or never slept */
#ifdef LEAVE_WITHOUT_TRY
                    if
                    :: expires -> took = 0; break
                    :: true -> skip
                    fi
#else
                    skip
#endif
                :: atomic { expires && asleep[i] == 1 -> asleep[i] = 0; timedout = 1 }
                fi
            fi
        od;
#ifdef COUNT_AFTER_TRY
        if
        :: counted -> atomic { drain(i); timed-- }
        :: else -> skip
        fi;
#else
        atomic { drain(i); timed-- };
#endif
#ifdef CLEAR_ON_EXIT
        atomic { drain(i); waking = 0 };
#endif
    :: else -> skip
    fi
}

proctype Thread(byte i; bit deadline; bit expires) {
    byte n = 0;
    byte t;
    bit ok;
    bit took;
    bit timedout;
    bit counted;
    do
    :: n < K ->
        if
        :: deadline -> lock_timed(i, expires, took, ok, timedout, counted)
        :: else -> lock_untimed(i); took = 1
        fi;
        if
        :: took ->
            atomic { inside++; assert(inside == 1) };
            inside--;
            unlock(i, t, ok)
        :: else -> skip
        fi;
        atomic { n++; t = 0; ok = 0; took = 0; timedout = 0; counted = 0 }
    :: else -> break
    od
}

active proctype Flusher() {
end:
    do
    :: atomic { pending[0] -> lockword = 0; pending[0] = 0 }
    :: atomic { pending[1] -> lockword = 0; pending[1] = 0 }
    :: atomic { pending[2] -> lockword = 0; pending[2] = 0 }
    od
}

init {
    atomic {
        run Thread(0, 0, 0);
        run Thread(1, 1, 0);
        run Thread(2, 1, 1)
    }
}
