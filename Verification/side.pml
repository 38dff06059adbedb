/*
 * How an instance's side object is made, used and let go (Sources/Exclusion/Internal/Engine/
 * Engine+Side.swift, with `_EngineSide` and the backlog it extends) as a Promela model, for Spin.
 * The side object holds the backlog of submitted jobs, under a short lock of its own, and the
 * delivery lock. It is made the first time something needs it and published with a
 * compare-and-swap from nil (the loser frees its own and takes the winner's); a drain that ends
 * with the instance quiet retires it (frees it), so that a quiet instance stops paying for it. The
 * instance's flags count the side's announced users and hold `kept`, `retiring` and `jobs`.
 *
 * Three kinds of user keep the side alive:
 * - an announced user (a submitter; a releaser that hands out deliveries) adds itself to `users`,
 *   waits if `retiring` was set in what it added to, loads the side (making one if it is nil), uses
 *   it and takes itself off. A submitter that schedules a drain hands its announcement to the
 *   drain instead. A look at the flags that finds `kept` set and `retiring` clear skips all that:
 *   the side stays for good, and a drain scheduled then has nothing to hand on or let go;
 * - a kept user (a wait list, a profile's notes, the stuck-wait report) sets `kept` unless that
 *   same look says it is set, waits if `retiring` was set in what it set it in, and uses the side
 *   for good;
 * - a holder of the state runs the backlog's jobs and touches the side once more before it lets
 *   go, without announcing: a retire holds the state.
 * A drain takes the state and runs the jobs until, under the backlog's lock, it finds none and
 * marks itself ended; between batches, one that holds an announcement may keep the side, as a busy
 * one does (`_keepSide`: it sets `kept` without the look first), and still holds its count. Then,
 * if it holds an announcement, it tries the state without waiting (and runs any jobs it finds, as
 * every access does); holding it, it reads the flags and, if it is the only user and nothing is
 * kept, retiring or waiting in the backlog, swaps its user for `retiring` with a compare-and-swap
 * of the whole word, stores nil in the side pointer, clears `retiring`, lets the state go and frees
 * the side. Otherwise it lets the state go and takes itself off.
 *
 * Two submitters submit two jobs and one job; a holder takes the state once, runs what it finds,
 * lets go, and then keeps the side (a waiter making its wait list); a kept user keeps it and uses
 * it; a releaser announces while it holds the state (no retire can be under way then), loads the
 * side, lets the state go and hands out its deliveries. Each drain is a process of its own. Side
 * objects are slots, never handed out twice, so a freed one and a new one differ. The state and
 * the backlog's and delivery locks are assumed correct; each atomic block touching a backlog stands
 * for its lock. Sequentially consistent: every operation here is an atomic read-modify-write or an
 * acquire or release access, and the model treats them as sequentially consistent.
 *
 * Checked: no use after free (every touch of a side object asserts it is not freed), no double
 * free, and no lost job: no side is freed with jobs in its backlog, no job runs twice, and once
 * everyone is done every job submitted has run. Also, at the end, that every side made is freed or
 * still published, and that `users` is back to 0; and no invalid end state. `check.sh` runs it as
 * written and each broken variant below, which must fail, and `RETIRE_IGNORES_JOBS`, which holds.
 *
 *   NO_ANNOUNCE                 broken: a submitter loads the side without announcing (it counts
 *                               only the drain it schedules), and the side is freed under it
 *   IGNORE_RETIRING             broken: an announced user doesn't wait for `retiring` to clear,
 *                               and loads the side the retirer is about to free
 *   FAST_PATH_IGNORES_RETIRING  broken: an announced user skips announcing when it sees `kept`,
 *                               whatever `retiring` says: a kept user may have set `kept` during
 *                               a retire, and be waiting for it to end
 *   KEPT_LOOK_IGNORES_RETIRING  broken: likewise, a kept user takes `kept` set by another one,
 *                               which waits for a retire to end, for a side kept for good
 *   RETIRE_WITHOUT_STATE        broken: the retire attempt doesn't take the state, so a holder's
 *                               last touch finds the side freed
 *   RETIRE_IGNORES_JOBS         holds: the retire attempt doesn't look at `jobs`. A job in the
 *                               backlog always has a drain scheduled for it, which holds an
 *                               announcement and isn't the retiring one (that one found the
 *                               backlog empty as it ended), so `users` is above 1
 *   KEPT_WITHOUT_RETIRING_WAIT  broken: a kept user that set `kept` during a retire doesn't wait
 *                               for it to end
 *   DRAIN_DROPS_ANNOUNCEMENT    broken: the submitter that schedules a drain takes itself off
 *                               instead of handing its announcement on, so a running drain
 *                               isn't counted
 *   DELIVERY_UNANNOUNCED        broken: the releaser doesn't announce, and uses the delivery lock
 *                               after letting the state go
 *   BUSY_DRAIN_RETIRES_ANYWAY   broken: a drain that kept the side retires it at its end as if it
 *                               had not, taking that `kept` for its own: a submitter that skipped
 *                               counting itself on it may still be using the side
 */

#define USER 1
#define USERS 7         /* the count's bits */
#define JOBS 8
#define KEPT 16
#define RETIRING 32

#define SLOTS 6         /* at most one made per job, the releaser, the holder and the kept user */
#define ALL_JOBS 7      /* jobs 0 and 1 from submitter 0, job 2 from submitter 1 */

#ifdef DRAIN_DROPS_ANNOUNCEMENT
#define DRAIN_USERS 0   /* what a drain's announcement counts for in `users` */
#else
#define DRAIN_USERS 1
#endif

#ifdef BUSY_DRAIN_RETIRES_ANYWAY
#define OWN_KEPT (busy * KEPT)  /* what a drain's retire attempt overlooks in `kept` */
#else
#define OWN_KEPT 0
#endif

byte flags;
byte side;                      /* 0: nil; otherwise a slot */
byte made;                      /* slots handed out so far */
bit freed[SLOTS + 1];
byte backlog[SLOTS + 1];        /* the jobs waiting, one bit each */
bit draining[SLOTS + 1];        /* a drain is scheduled */
bit state;                      /* the state's lock, exclusive */
byte ran;                       /* the jobs run, one bit each */

inline touch(p) {
    assert(p != 0 && !freed[p])
}

inline free(p) {
    atomic {
        touch(p);               /* no double free */
        assert(backlog[p] == 0);  /* no job freed with its side */
        freed[p] = 1
    }
}

/* Loads the side, and makes and publishes one if it is nil. A loser would free its own, which
   nobody else has seen: here it makes none. */
inline getSide(p) {
    p = side;
    if
    :: p == 0 ->
        atomic {
            if
            :: side == 0 -> made++; assert(made <= SLOTS); side = made
            :: else -> skip
            fi;
            p = side
        }
    :: else -> skip
    fi
}

/* Announces, unless the side is kept for good; waits if a retire came first. */
inline announce(announced, old) {
    if
#ifdef FAST_PATH_IGNORES_RETIRING
    :: (flags & KEPT) != 0 -> announced = 0
#else
    :: (flags & (KEPT | RETIRING)) == KEPT -> announced = 0
#endif
    :: else ->
        atomic { old = flags; flags = flags + USER; announced = 1 };
#ifndef IGNORE_RETIRING
        if
        :: (old & RETIRING) != 0 -> (flags & RETIRING) == 0
        :: else -> skip
        fi;
#endif
        old = 0
    fi
}

inline withdraw(count) {
    atomic { assert((flags & USERS) >= (count)); flags = flags - (count) }
}

/* Sets `kept`; waits if a retire came first. */
inline setKept(old) {
    atomic { old = flags; flags = flags | KEPT };
#ifndef KEPT_WITHOUT_RETIRING_WAIT
    if
    :: (old & RETIRING) != 0 -> (flags & RETIRING) == 0
    :: else -> skip
    fi;
#endif
    old = 0
}

/* Sets `kept`, unless it is set and no retire is under way. */
inline keep(old) {
    if
#ifdef KEPT_LOOK_IGNORES_RETIRING
    :: (flags & KEPT) != 0 -> skip
#else
    :: (flags & (KEPT | RETIRING)) == KEPT -> skip
#endif
    :: else -> setKept(old)
    fi
}

/* With the state held: takes every job waiting and runs it, then touches the side once more. */
inline runJobs(p) {
    if
    :: (flags & JOBS) != 0 ->
        p = side;
        atomic {
            touch(p);
            assert((ran & backlog[p]) == 0);  /* no job runs twice */
            ran = ran | backlog[p];
            backlog[p] = 0;
            flags = flags & ~JOBS
        };
        touch(p);               /* the cleanup after the batch */
        p = 0
    :: else -> skip
    fi
}

/* `announced`: the submission that scheduled it handed it its announcement; otherwise the side is
   kept, and there is nothing to let go. */
proctype Drain(byte p; bit announced) {
    byte q, f;
    bit held, won, busy;
    do
    :: atomic { state == 0 -> state = 1 };
        runJobs(q);
        state = 0;
        atomic {                /* under the backlog's lock */
            touch(p);
            if
            :: backlog[p] == 0 -> draining[p] = 0; break
            :: else -> skip
            fi
        };
        /* Busy (`batchesOfABusyDrain`, here any number): a counted drain keeps the side, so that
           submissions skip counting themselves; it still holds its count, and leaves it at its
           end, which finds `kept` and doesn't retire. */
        if
        :: announced && !busy -> setKept(f); busy = 1
        :: true -> skip
        fi
    od;
    if
    :: !announced -> goto done
    :: else -> skip
    fi;
    /* the retire attempt */
#ifdef RETIRE_WITHOUT_STATE
    held = 1;
#else
    atomic {
        if
        :: state == 0 -> state = 1; held = 1
        :: else -> held = 0
        fi
    };
#endif
    if
    :: held ->
#ifndef RETIRE_WITHOUT_STATE
        runJobs(q);             /* what was submitted since, as every access runs it */
#endif
        f = flags;
        if
#ifdef RETIRE_IGNORES_JOBS
        :: (f & USERS) == DRAIN_USERS && (f & (KEPT | RETIRING) & ~OWN_KEPT) == 0 ->
#else
        :: (f & USERS) == DRAIN_USERS && (f & (JOBS | KEPT | RETIRING) & ~OWN_KEPT) == 0 ->
#endif
            atomic {
                if
                :: flags == f -> flags = (f - DRAIN_USERS) | RETIRING; won = 1
                :: else -> won = 0
                fi
            }
        :: else -> won = 0
        fi;
        f = 0;
        if
        :: won ->
            side = 0;
            flags = flags & ~RETIRING;
#ifndef RETIRE_WITHOUT_STATE
            state = 0;
#endif
            free(p)
        :: else ->
#ifndef RETIRE_WITHOUT_STATE
            state = 0;
#endif
            withdraw(DRAIN_USERS)
        fi
    :: else -> withdraw(DRAIN_USERS)
    fi;
done:
    skip
}

proctype Submitter(byte first; byte count) {
    byte n, p, old;
    bit announced, start;
    do
    :: n < count ->
#ifndef NO_ANNOUNCE
        announce(announced, old);
#endif
        getSide(p);
        atomic {                /* under the backlog's lock */
            touch(p);
            backlog[p] = backlog[p] | (1 << (first + n));
            flags = flags | JOBS;
            start = !draining[p];
            draining[p] = 1
        };
        if
        :: start ->
#ifdef NO_ANNOUNCE
            atomic { flags = flags + USER; announced = 1 };  /* for the drain */
#endif
#ifdef DRAIN_DROPS_ANNOUNCEMENT
            if
            :: announced -> withdraw(USER)
            :: else -> skip
            fi;
#endif
            run Drain(p, announced)  /* hands its announcement on */
        :: else ->
            if
            :: announced -> withdraw(USER)
            :: else -> skip
            fi
        fi;
        p = 0;
        start = 0;
        announced = 0;
        n++
    :: else -> break
    od
}

/* A synchronous access, then a wait for a condition, which makes the wait list after letting go. */
proctype Holder() {
    byte p, old;
    atomic { state == 0 -> state = 1 };
    runJobs(p);
    state = 0;
    keep(old);
    getSide(p);
    touch(p)                    /* makes its wait list, and uses it for good */
}

proctype KeptUser() {
    byte p, old;
    keep(old);
    getSide(p);
    touch(p)                    /* uses the wait list */
}

/* Announces while it holds the state, takes the delivery lock, lets the state go, and hands out
   its deliveries. */
proctype Releaser() {
    byte p, old;
    bit announced;
    atomic { state == 0 -> state = 1 };
#ifndef DELIVERY_UNANNOUNCED
    announce(announced, old);
#endif
    getSide(p);                 /* and takes the delivery lock */
    state = 0;
    touch(p);                   /* hands out, and lets the delivery lock go */
    if
    :: announced -> withdraw(USER)
    :: else -> skip
    fi
}

init {
    byte i;
    atomic {
        run Submitter(0, 2);
        run Submitter(2, 1);
        run Holder();
        run KeptUser();
        run Releaser()
    };
    _nr_pr == 1;                /* everyone is done, drains too */
    assert(ran == ALL_JOBS);    /* every job submitted has run */
    assert((flags & USERS) == 0);
    i = 1;
    do
    :: i <= made -> assert(freed[i] || side == i); i++
    :: else -> break
    od
}
