/*
 * exclusion_rwlock where readers change their slots with locked instructions (Apple platforms, and
 * Linux on other processors than x86-64: Sources/ExclusionShims/ExclusionReadersWriterLock.{h,c},
 * `EXCLUSION_RWLOCK_FENCED` 0) as a Promela model, for Spin: how
 * writers sleep until the readers ahead of them have left. `bias.pml` checks the read bias itself
 * (announce, check, withdraw) under x86-TSO, and `fenced-readers.pml` the wake-ups where readers
 * write their slots with plain stores; this model is about the sleeps and wake-ups of the other
 * protocol, and runs sequentially consistent: every write in them is a locked instruction (a
 * compare-and-swap, an exchange, an atomic addition) or, for the writer's `readers = 0`, made while
 * it holds `writers` and published by that lock's release. (Each slot here is the reader's own; in
 * the table every lock shares, a slot may hold another lock's reader, which `bias.pml` checks.)
 *
 * Two readers, each with a slot of its own, read twice, each time through the bias if it holds and
 * the slow path (count in `readers` holding `writers`) otherwise, and may turn the bias back on
 * there; one writer writes twice, the first time as a try (it waits out a reader caught
 * announcing), the second as a plain write. `writers` is the lock, assumed correct (`lock.pml`,
 * `owned-lock.pml`). A sleep compares and blocks in one step; a wake unblocks every thread asleep
 * on that word, or nobody (one writer sleeps at a time, so `wake_one` and `wake_all` agree).
 *
 * Checked: no read runs while a write does (the assertions), and no lost wake-up: the writer
 * asleep for good while the readers have finished is an invalid end state. `check.sh` runs it as
 * written and each broken variant below, which must fail.
 *
 *   READER_LEAVES_WITH_STORE     broken: a reader leaves its slot with a store, not an exchange,
 *                                so it never sees the writer's mark
 *   READER_OVERWRITES_MARK       broken: a reader that saw the bias stores READING over its
 *                                announcement instead of exchanging it, erasing the mark unseen
 *   WRITER_SLEEPS_UNMARKED       broken: the writer sleeps on a slot without marking it
 *   LAST_READER_DOES_NOT_WAKE    broken: a slow-path reader leaves without looking for the writer
 *   WRITER_SKIPS_SLOW_READERS    broken: the writer doesn't wait for slow-path readers
 */

#define ANNOUNCING 1
#define READING 2
#define MARK 4
#define WAITS 8                 /* EXCLUSION_READERS_WRITER_WAITS, scaled down */

byte slot[2];
bit bias = 1;
byte readers;                   /* slow-path readers, plus WAITS */
bit writers;                    /* the owned lock, held by the writer or a counting reader */
bit asleep;                     /* the writer sleeps on `sleepingOn` */
byte sleepingOn;                /* 0, 1: a slot; 2: `readers` */
byte reading;
bit writing;

/* exclusion_unpark_one on a slot (0, 1) or on `readers` (2). */
inline wake(word) {
    atomic {
        if
        :: asleep && sleepingOn == word -> asleep = 0
        :: else -> skip
        fi
    }
}

inline read_section() {
    atomic { reading++; assert(!writing) };
    reading--
}

/* exclusion_read_slot_write(lock, slot, 0) */
inline leave_slot(i, old) {
#ifdef READER_LEAVES_WITH_STORE
    atomic { slot[i] = 0 };
#else
    atomic { old = slot[i]; slot[i] = 0 };
    if
    :: old & MARK -> wake(i)
    :: else -> skip
    fi
#endif
}

proctype Reader(byte i) {
    byte n = 0;
    byte old;
    bit fast;
    do
    :: n < 2 ->
        /* exclusion_rwlock_read_quickly */
        fast = 0;
        if
        :: bias ->
            atomic {
                if
                :: slot[i] == 0 -> slot[i] = ANNOUNCING; fast = 1
                :: else -> skip
                fi
            };
            if
            :: fast && bias ->
#ifdef READER_OVERWRITES_MARK
                atomic { slot[i] = READING }
#else
                /* exclusion_read_slot_write(lock, slot, READING): an exchange, which sees a mark */
                atomic { old = slot[i]; slot[i] = READING };
                if
                :: old & MARK -> wake(i)
                :: else -> skip
                fi
#endif
            :: fast && !bias -> leave_slot(i, old); fast = 0
            :: !fast -> skip
            fi
        :: else -> skip
        fi;
        if
        :: fast ->
            read_section();
            leave_slot(i, old)
        :: else ->
            /* the slow path: count in while holding `writers` */
            atomic { writers == 0 -> writers = 1 };
            readers++;
            if
            :: bias = 1                                 /* the bias restored, if due */
            :: skip
            fi;
            writers = 0;
            read_section();
            atomic { old = readers; readers-- };
#ifndef LAST_READER_DOES_NOT_WAKE
            if
            :: old == (WAITS | 1) -> wake(2)
            :: else -> skip
            fi
#endif
        fi;
        n++
    :: else -> break
    od
}

/* Sleeps on `word` while it holds `seen`: compares and blocks in one step, then waits to be woken. */
inline sleep_on(word, value, seen) {
    atomic {
        if
        :: value == seen -> asleep = 1; sleepingOn = word
        :: else -> skip
        fi
    };
    asleep == 0
}

/* wait_for_slot(i): marks the slot and sleeps until it is empty. */
inline wait_for_slot(i, seen) {
    do
    :: atomic { slot[i] == 0 -> break }
    :: else ->
        seen = slot[i];
        if
        :: seen == 0 -> skip
#ifdef WRITER_SLEEPS_UNMARKED
        :: seen != 0 -> sleep_on(i, slot[i], seen)
#else
        :: seen != 0 && (seen & MARK) ->
            sleep_on(i, slot[i], seen)
        :: seen != 0 && !(seen & MARK) ->
            atomic {
                if
                :: slot[i] == seen -> slot[i] = seen | MARK; seen = seen | MARK
                :: else -> seen = 0
                fi
            };
            if
            :: seen != 0 -> sleep_on(i, slot[i], seen)
            :: else -> skip
            fi
#endif
        fi
    od
}

/* slot_is_free(i) for a try: waits out a reader caught announcing, then says whether one reads. */
inline slot_is_free(i, seen, free) {
    do
    :: atomic { slot[i] == 0 -> free = 1; break }
    :: atomic { slot[i] != 0 && (slot[i] & ~MARK) == READING -> free = 0; break }
    :: else ->
        seen = slot[i];
        if
        :: seen != 0 && (seen & ~MARK) == ANNOUNCING ->
            atomic {
                if
                :: slot[i] == seen -> slot[i] = seen | MARK; seen = seen | MARK
                :: else -> seen = 0
                fi
            };
            if
            :: seen != 0 -> sleep_on(i, slot[i], seen)
            :: else -> skip
            fi
        :: else -> skip
        fi
    od
}

proctype Writer() {
    byte seen;
    bit free;
    bit took;
    /* 1. exclusion_rwlock_try_write */
    atomic {
        if
        :: writers == 0 && readers == 0 -> writers = 1; took = 1
        :: else -> skip
        fi
    };
    if
    :: took ->
        if
        :: bias ->
            bias = 0;
            slot_is_free(0, seen, free);
            if
            :: free -> slot_is_free(1, seen, free)
            :: else -> skip
            fi;
            if
            :: free ->
                atomic { writing = 1; assert(reading == 0) };
                writing = 0
            :: else -> bias = 1
            fi
        :: else ->
            atomic { writing = 1; assert(reading == 0) };
            writing = 0
        fi;
        writers = 0
    :: else -> skip
    fi;
    /* 2. exclusion_rwlock_write */
    atomic { writers == 0 -> writers = 1 };
#ifndef WRITER_SKIPS_SLOW_READERS
    if
    :: readers != 0 ->
        readers = readers | WAITS;
        do
        :: atomic { readers == WAITS -> break }
        :: else ->
            seen = readers;
            if
            :: seen != WAITS -> sleep_on(2, readers, seen)
            :: else -> skip
            fi
        od;
        readers = 0
    :: else -> skip
    fi;
#endif
    if
    :: bias ->
        bias = 0;
        wait_for_slot(0, seen);
        wait_for_slot(1, seen)
    :: else -> skip
    fi;
    atomic { writing = 1; assert(reading == 0) };
    writing = 0;
    writers = 0
}

init {
    atomic {
        run Reader(0);
        run Reader(1);
        run Writer()
    }
}
