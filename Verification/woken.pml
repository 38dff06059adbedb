/*
 * How a thread that waits for its condition is woken (`exclusion_wait_woken` and `exclusion_wake`,
 * Sources/ExclusionShims/ExclusionShims.{c,h}) as a Promela model, for Spin: the waiting thread's
 * word is WAITING once it is set up, PARKED once the thread is about to park, WOKEN once a release
 * woke it. The waiter marks the word PARKED with a compare-and-swap from WAITING, which fails if
 * the wake-up came first, and parks while the word is PARKED; the waker exchanges WOKEN in and
 * makes the system call only if it found PARKED, so that waking a thread that is still on its way
 * to park costs no call. Before it marks the word, the waiter spins, looking at the word: a
 * wake-up within the spin costs no call on either side (the spin's length is any number of looks).
 *
 * One waiter waits for three rounds, setting its word up before it joins the line each round; the
 * waker takes it from the line and wakes it, once per round. Sequentially consistent: every
 * operation on the word is atomic; a park compares and blocks in one step, as the futex does; an
 * unpark unblocks the parked thread, or nobody.
 *
 * Checked: no lost wake-up (a waiter parked for good once the waker is done is an invalid end
 * state), and a waiter goes on only once woken (an assertion). `check.sh` runs it as written and
 * each broken variant below, which must fail.
 *
 *   WAKE_READS_FIRST    broken: the waker reads the word, then stores WOKEN, and unparks if it read
 *                       PARKED: a waiter that marks itself in between parks for good
 *   PLAIN_PARK_MARK     broken: the waiter marks the word PARKED with a plain store, which can
 *                       overwrite WOKEN
 *   SPIN_ENDS_WOKEN     broken: a spin that runs out goes on as if woken
 *   SPIN_REARMS         broken: a spin that runs out sets the word back to WAITING before it
 *                       marks it, which can overwrite WOKEN
 */
#define WAITING 0
#define WOKEN 1
#define PARKED 2

byte word = WOKEN;
bit parked;          /* the waiter is blocked in the kernel */
bit inLine;          /* the waiter is in the wait line, for the waker to find */

proctype Waiter() {
    byte round = 0;
    byte seen;
    do
    :: round < 3 ->
        word = WAITING;                         /* exclusion_prepare_to_be_woken */
        inLine = 1;                             /* joins the line, under the list's lock */
        do                                      /* the spin: looks until woken, or gives up */
        :: word == WOKEN -> break
        :: true -> skip
        :: true ->
#ifdef SPIN_ENDS_WOKEN
            goto woken;
#endif
#ifdef SPIN_REARMS
            word = WAITING;
#endif
            break
        od;
        do
        :: word == WOKEN -> break
        :: else ->
#ifdef PLAIN_PARK_MARK
            word = PARKED;
#else
            atomic {
                seen = word;
                if
                :: seen == WAITING -> word = PARKED
                :: else -> skip
                fi
            };
            if
            :: seen == WOKEN -> break
            :: else -> skip
            fi;
#endif
            /* exclusion_park(word, PARKED): blocks only if the word is still PARKED */
            atomic {
                if
                :: word == PARKED -> parked = 1
                :: else -> skip
                fi
            };
            parked == 0                         /* woken, or not parked at all */
        od;
woken:
        assert(word == WOKEN);                  /* goes on only once woken */
        round++
    :: else -> break
    od
}

proctype Waker() {
    byte round = 0;
    byte old;
    do
    :: round < 3 ->
        atomic { inLine -> inLine = 0 };        /* takes the waiter from the line */
#ifdef WAKE_READS_FIRST
        old = word;
        word = WOKEN;
#else
        atomic { old = word; word = WOKEN };
#endif
        if
        :: old == PARKED -> parked = 0          /* exclusion_unpark_one */
        :: else -> skip
        fi;
        round++
    :: else -> break
    od
}

init {
    atomic {
        run Waiter();
        run Waker()
    }
}
