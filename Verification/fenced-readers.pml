/*
 * How a writer of exclusion_rwlock sleeps until the fast-path readers ahead of it have left, where
 * readers write their slots with plain stores (Sources/ExclusionShims/ExclusionReadersWriterLock.{h,c},
 * `EXCLUSION_RWLOCK_FENCED`: Linux on x86-64), as a Promela model, for Spin. `bias.pml`
 * checks the read bias itself (announce, check, withdraw) and `owned-readers.pml` the protocol where
 * readers change their slots with locked instructions; this model is about the sleeps and wake-ups
 * of the fenced one.
 *
 * Two readers, each with a slot of its own in the shared table, read twice through the bias: a
 * compare-and-swap announces the reader, which then looks at the bias and writes READING (or 0, if
 * the bias was withdrawn) with a plain store, and writes 0 with a plain store when it leaves; after
 * each plain store it looks at `waiting`, and if it is set, fences (so that the store is seen) and
 * wakes a writer sleeping on its slot.
 * One writer withdraws the bias, sets `waiting`, fences (membarrier), and then, for each slot,
 * sleeps on it while it names a reader. Memory is x86-TSO: each reader has a store buffer of two
 * entries for its slot's plain stores, and a load of the slot sees the reader's own buffered store;
 * the Flusher moves the oldest buffered store to memory at any moment; `membarrier` drains every
 * buffer at once. A futex wait compares and blocks in one step, as the kernel does under its own
 * lock; a wake unblocks the writer if it sleeps on that slot.
 *
 * Checked: no lost wake-up (the writer asleep for good while both readers have finished is an
 * invalid end state), and the writer finishes only once no reader reads (the assertion).
 * `check.sh` runs it as written and each broken variant below, which must fail.
 *
 *   NO_MEMBARRIER              broken: the writer sets `waiting` and looks at the slots unfenced
 *   READER_DOES_NOT_LOOK       broken: a reader leaves its slot without looking at `waiting`
 *   LOOK_BEFORE_STORE          broken: a reader looks at `waiting` before its store (the compiler
 *                              or the processor reading it first)
 *   FENCE_BEFORE_WAITING       broken: the writer fences before it sets `waiting`
 *   NO_FENCE_BEFORE_WAKE       broken: a reader that saw `waiting` wakes the writer without
 *                              fencing first: the writer, woken, may still see the old value and
 *                              sleep again on it, and the store lands with nobody to wake it
 */

#define ANNOUNCING 1
#define READING 2

byte slot[2];                   /* memory */
bit bias = 1;
bit waiting;
byte pending[4];                /* reader i's buffered values for its slot, oldest first: 0 none */
byte pendingCount[2];
bit asleep;                     /* the writer sleeps on `sleepingOn` */
byte sleepingOn;
byte reading;                   /* readers in a read section */
bit done;                       /* the writer saw every slot free */

/* The buffer holds values to store, each + 1 (0 means an empty entry). */
inline flush_one(i) {
    slot[i] = pending[i * 2] - 1;
    pending[i * 2] = pending[i * 2 + 1];
    pending[i * 2 + 1] = 0;
    pendingCount[i]--
}

inline drain(i) {
    do
    :: pendingCount[i] > 0 -> flush_one(i)
    :: else -> break
    od
}

inline membarrier() {
    atomic { drain(0); drain(1) }
}

/* A plain store of `v` to reader i's slot. */
inline store_slot(i, v) {
    atomic { pendingCount[i] < 2 -> pending[i * 2 + pendingCount[i]] = v + 1; pendingCount[i]++ }
}

/* The writer's load of slot i: memory (its own buffer holds nothing of the slots). */
inline load_slot(i, v) {
    v = slot[i]
}

/* exclusion_rwlock_wake_writer */
inline wake(i) {
    atomic {
        if
        :: asleep && sleepingOn == i -> asleep = 0
        :: else -> skip
        fi
    }
}

/* exclusion_read_slot_write: the plain store, then the look at `waiting`. */
inline write_slot(i, v) {
#ifdef LOOK_BEFORE_STORE
    if
    :: waiting -> store_slot(i, v); wake(i)
    :: else -> store_slot(i, v)
    fi
#else
    store_slot(i, v);
#ifndef READER_DOES_NOT_LOOK
    if
    :: waiting ->
#ifndef NO_FENCE_BEFORE_WAKE
        atomic { drain(i) };
#endif
        wake(i)
    :: else -> skip
    fi
#endif
#endif
}

proctype Reader(byte i) {
    byte n = 0;
    bit announced;
    do
    :: n < 2 ->
        /* exclusion_rwlock_read_quickly: the compare-and-swap drains the buffer first. */
        atomic {
            drain(i);
            if
            :: bias && slot[i] == 0 -> slot[i] = ANNOUNCING; announced = 1
            :: else -> announced = 0
            fi
        };
        if
        :: announced && bias ->
            write_slot(i, READING);
            atomic { reading++; assert(!done) };
            reading--;
            write_slot(i, 0)
        :: announced && !bias ->
            write_slot(i, 0)
        :: else -> skip         /* the slow path: not this model's */
        fi;
        atomic { n++; announced = 0 }
    :: else -> break
    od
}

/* Sleeps on slot i while it names a reader: the compare and the block are one step. */
inline wait_for_slot(i, v) {
    do
    :: load_slot(i, v);
       if
       :: v == 0 -> break
       :: else ->
           atomic {
               if
               :: slot[i] == v -> asleep = 1; sleepingOn = i
               :: else -> skip
               fi
           };
           !asleep
       fi
    od
}

proctype Writer() {
    byte v;
    bias = 0;                   /* a sequentially consistent store: its buffer holds nothing */
#ifdef FENCE_BEFORE_WAITING
    membarrier();
    waiting = 1;
#else
    waiting = 1;
#ifndef NO_MEMBARRIER
    membarrier();
#endif
#endif
    wait_for_slot(0, v);
    wait_for_slot(1, v);
    atomic { done = 1; assert(reading == 0) };
    waiting = 0
}

active proctype Flusher() {
end:
    do
    :: atomic { pendingCount[0] > 0 -> flush_one(0) }
    :: atomic { pendingCount[1] > 0 -> flush_one(1) }
    od
}

init {
    atomic {
        run Reader(0);
        run Reader(1);
        run Writer()
    }
}
