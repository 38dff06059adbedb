/*
 * The read bias of exclusion_rwlock (Sources/ExclusionShims/ExclusionReadersWriterLock.{h,c}) as a
 * Promela model, for Spin: the BRAVO protocol on top of a readers-writer lock that is assumed
 * correct (modelled as two counters changed atomically), with the table of visible readers that
 * every lock shares.
 *
 * Two readers, each with a slot of its own, read twice (with COLLIDE, both readers' threads map to
 * the same slot of the shared table, as threads 256 apart do, and a reader that finds the slot
 * taken goes the slow way; and a reader of another lock takes slot 1 now and then, which this
 * lock's writer must not wait for); one writer writes twice, each time either
 * waiting as long as it takes, with a timeout (it may give up at any point, undoing the revoked
 * bias), or as a try (it gives up if a reader is inside). Memory is x86-TSO: every thread has a
 * store buffer of three entries; plain stores (a slot's `reading` and `0`, the bias restored) go
 * into it, and compare-and-swaps and sequentially consistent stores (a slot's announcement, the
 * bias withdrawn) drain it first; the Flusher moves the oldest buffered store to memory at any
 * moment.
 *
 * A writer looks only at the slots of thread indices handed out so far (`exclusion_thread_index_limit`,
 * LIMIT here): reader 0's index was handed out before the model starts, reader 1's is handed out
 * (a sequentially consistent store) just before its first read, and the writer reads the limit
 * after withdrawing the bias, looking at slot 1 only if it counts reader 1.
 *
 * Checked: no read runs while a write does (the assertions). `check.sh` runs it as written and
 * each broken variant below, which must fail.
 *
 *   READER_NO_RECHECK            broken: a reader doesn't look at the bias again after announcing
 *   READER_PLAIN_ANNOUNCE        broken: a reader announces itself with a plain store
 *   WRITER_PLAIN_REVOKE          broken: the writer withdraws the bias with a plain store
 *   WRITER_IGNORES_ANNOUNCING    broken: the writer treats an announcing slot as free
 *   READER_CLEARS_TAKEN_SLOT     broken (with COLLIDE): a reader that found its slot taken clears
 *                                it on its way to the slow path, erasing the reader that holds it
 *   LIMIT_BEFORE_WITHDRAW        broken: the writer reads the limit before withdrawing the bias, so
 *                                a thread that gets its index in between reads unseen
 */
#define B 3            /* store-buffer entries per thread */
#define T 3            /* threads: 0, 1 readers; 2 the writer */
#define BIAS 0         /* addresses */
#define SLOT0 1
#define SLOT1 2
#define ANNOUNCING 1
#define READING 2
#define LIMIT 3        /* the highest thread index handed out: 1 for reader 0, 2 for reader 1 */
#define FOREIGN 5      /* a slot naming another lock's reader */

byte mem[4];
byte ba[T * B];
byte bv[T * B];
byte bl[T];
byte rd;               /* the underlying rwlock, assumed correct: readers inside, writer inside */
bit wr;
byte reading;          /* threads in a read section */
bit writing;

inline flush_one(i) {
    mem[ba[i * B]] = bv[i * B];
    ba[i * B] = ba[i * B + 1]; bv[i * B] = bv[i * B + 1];
    ba[i * B + 1] = ba[i * B + 2]; bv[i * B + 1] = bv[i * B + 2];
    ba[i * B + 2] = 0; bv[i * B + 2] = 0;
    bl[i]--
}

inline drain(i) {
    do
    :: bl[i] > 0 -> flush_one(i)
    :: else -> break
    od
}

inline load(i, a, v) {
    atomic {
        if
        :: bl[i] >= 3 && ba[i * B + 2] == a -> v = bv[i * B + 2]
        :: else ->
            if
            :: bl[i] >= 2 && ba[i * B + 1] == a -> v = bv[i * B + 1]
            :: else ->
                if
                :: bl[i] >= 1 && ba[i * B] == a -> v = bv[i * B]
                :: else -> v = mem[a]
                fi
            fi
        fi
    }
}

/* A plain store: into the buffer. */
inline store(i, a, v) {
    atomic { bl[i] < B -> ba[i * B + bl[i]] = a; bv[i * B + bl[i]] = v; bl[i]++ }
}

/* A sequentially consistent store or a locked instruction: drains the buffer first. */
inline store_sc(i, a, v) {
    atomic { drain(i); mem[a] = v }
}

proctype Reader(byte i; byte slot) {
    byte n = 0;
    byte v;
    bit fast;
    if
    :: i == 1 -> store_sc(i, LIMIT, 2)   /* its index, handed out at its first access */
    :: else -> skip
    fi;
    do
    :: n < 2 ->
        fast = 0;
        load(i, BIAS, v);
        if
        :: v ->
#ifdef READER_PLAIN_ANNOUNCE
            load(i, slot, v);
            if
            :: v == 0 -> store(i, slot, ANNOUNCING); v = 1
            :: else -> v = 0
            fi;
#else
            atomic { drain(i); if :: mem[slot] == 0 -> mem[slot] = ANNOUNCING; v = 1 :: else -> v = 0 fi };
#endif
#ifdef READER_CLEARS_TAKEN_SLOT
            if
            :: !v -> store(i, slot, 0)
            :: else -> skip
            fi;
#endif
            if
            :: v ->
#ifndef READER_NO_RECHECK
                load(i, BIAS, v);
#endif
                if
                :: v -> store(i, slot, READING); fast = 1
                :: else -> store(i, slot, 0)
                fi
            :: else -> skip
            fi
        :: else -> skip
        fi;
        if
        :: fast ->
            atomic { reading++; assert(!writing) };
            reading--;
            store(i, slot, 0)
        :: else ->
            atomic { drain(i); wr == 0 -> rd++ };
            if
            :: store(i, BIAS, 1)      /* the bias is due again */
            :: skip
            fi;
            atomic { reading++; assert(!writing) };
            reading--;
            atomic { drain(i); rd-- }
        fi;
        atomic { n++; v = 0; fast = 0 }
    :: else -> break
    od
}

/* Waits until `slot` names no reader of this lock; with `timed`, may give up instead (then
   entered = 0). With `trying`, a reader inside makes it give up, and an announcing one is waited
   out. */
inline wait_for_slot(w, slot, v, entered, timed, trying) {
    do
    :: load(w, slot, v);
       if
       :: v == 0 || v == FOREIGN -> break
#ifdef WRITER_IGNORES_ANNOUNCING
       :: v == ANNOUNCING -> break
#endif
       :: trying && v == READING -> entered = 0; break
       :: timed -> entered = 0; break
       :: else -> skip
       fi
    od
}

proctype Writer(byte w) {
    byte n = 0;
    byte v;
    byte limit;
    bit entered;
    bit timed;
    bit trying;
    do
    :: n < 2 ->
        if
        :: timed = 0; trying = 0
        :: timed = 1; trying = 0
        :: timed = 0; trying = 1
        fi;
        if
        :: atomic { drain(w); wr == 0 && rd == 0 -> wr = 1 }; entered = 1
        :: (timed || trying) -> entered = 0     /* the underlying lock was not had in time */
        fi;
        if
        :: entered ->
            load(w, BIAS, v);
            if
            :: v ->
#ifdef LIMIT_BEFORE_WITHDRAW
                load(w, LIMIT, limit);
#endif
#ifdef WRITER_PLAIN_REVOKE
                store(w, BIAS, 0);
#else
                store_sc(w, BIAS, 0);
#endif
#ifndef LIMIT_BEFORE_WITHDRAW
                load(w, LIMIT, limit);
#endif
                wait_for_slot(w, SLOT0, v, entered, timed, trying);
                if
                :: entered && limit >= 2 -> wait_for_slot(w, SLOT1, v, entered, timed, trying)
                :: else -> skip
                fi;
                if
                :: !entered -> store(w, BIAS, 1); atomic { drain(w); wr = 0 }   /* undo */
                :: else -> skip
                fi
            :: else -> skip
            fi
        :: else -> skip
        fi;
        if
        :: entered ->
            atomic { writing = 1; assert(reading == 0) };
            writing = 0;
            atomic { drain(w); wr = 0 }
        :: else -> skip
        fi;
        atomic { n++; v = 0; limit = 0; entered = 0; timed = 0; trying = 0 }
    :: else -> break
    od
}

/* A reader of another lock, in slot 1 of the shared table now and then. */
proctype Foreigner() {
    byte n = 0;
    do
    :: n < 2 ->
        atomic { mem[SLOT1] == 0 -> mem[SLOT1] = FOREIGN };
        atomic { mem[SLOT1] = 0; n++ }
    :: else -> break
    od
}

active proctype Flusher() {
end:
    do
    :: atomic { bl[0] > 0 -> flush_one(0) }
    :: atomic { bl[1] > 0 -> flush_one(1) }
    :: atomic { bl[2] > 0 -> flush_one(2) }
    od
}

init {
    atomic {
        mem[BIAS] = 1;
        mem[LIMIT] = 1;
        run Reader(0, SLOT0);
#ifdef COLLIDE
        run Reader(1, SLOT0);
#else
        run Reader(1, SLOT1);
        run Foreigner();
#endif
        run Writer(2)
    }
}
