#ifndef EXCLUSION_ENGINE_H
#define EXCLUSION_ENGINE_H

#include "ExclusionLock.h"
#include "ExclusionOwnedLock.h"
#include "ExclusionReadersWriterLock.h"

#include <stdint.h>

// The nullability qualifiers tell Swift which pointers are optional; a C compiler without them
// (GCC, which builds Verification/stress.c) reads them as nothing.
#if !defined(__clang__)
#define _Nonnull
#define _Nullable
#endif

/// The words of an instance that threads change without holding its state, kept in the instance
/// beside its lock: what an access and a release must look at besides the lock (`flags`, whose
/// bits the engine defines, `Engine.swift`), and the instance's side structures, made the first
/// time something needs them (`side`, a retained object, NULL until then).
///
/// Swift reaches them only through the functions below, each with the ordering its caller needs.
typedef struct {
    uint64_t flags;
    void *_Nullable side;
} exclusion_engine_words;

static inline void exclusion_engine_words_init(exclusion_engine_words *_Nonnull words, uint64_t flags) {
    words->flags = flags;
    words->side = 0;
}

/// The flags, for a look whose result the lock or a later look confirms.
static inline uint64_t exclusion_engine_flags(const exclusion_engine_words *_Nonnull words) {
    return __atomic_load_n(&words->flags, __ATOMIC_RELAXED);
}

/// The flags, ordered with every other sequentially consistent operation.
static inline uint64_t exclusion_engine_flags_ordered(const exclusion_engine_words *_Nonnull words) {
    return __atomic_load_n(&words->flags, __ATOMIC_SEQ_CST);
}

static inline void exclusion_engine_flags_add(exclusion_engine_words *_Nonnull words, uint64_t amount) {
    __atomic_fetch_add(&words->flags, amount, __ATOMIC_RELAXED);
}

static inline void exclusion_engine_flags_subtract(exclusion_engine_words *_Nonnull words, uint64_t amount) {
    __atomic_fetch_sub(&words->flags, amount, __ATOMIC_RELAXED);
}

static inline void exclusion_engine_flags_set(exclusion_engine_words *_Nonnull words, uint64_t bits) {
    __atomic_fetch_or(&words->flags, bits, __ATOMIC_RELAXED);
}

/// Clears `bits`, ordered with every other sequentially consistent operation.
static inline void exclusion_engine_flags_clear(exclusion_engine_words *_Nonnull words, uint64_t bits) {
    __atomic_fetch_and(&words->flags, ~bits, __ATOMIC_SEQ_CST);
}

// MARK: - Letting the side structures go (`Engine+Side.swift`)

/// The flags, acquiring: what a thread that finds the side structures kept then loads from `side`
/// is what was published before they were kept.
static inline uint64_t exclusion_engine_flags_acquire(const exclusion_engine_words *_Nonnull words) {
    return __atomic_load_n(&words->flags, __ATOMIC_ACQUIRE);
}

/// Adds `amount` and returns the flags before: how a user of the side structures announces itself,
/// ordered before its load of `side`.
static inline uint64_t exclusion_engine_flags_fetch_add(exclusion_engine_words *_Nonnull words, uint64_t amount) {
    return __atomic_fetch_add(&words->flags, amount, __ATOMIC_SEQ_CST);
}

/// Subtracts `amount`, releasing: how an announced user leaves, after its last touch of the side
/// structures.
static inline void exclusion_engine_flags_release_subtract(exclusion_engine_words *_Nonnull words, uint64_t amount) {
    __atomic_fetch_sub(&words->flags, amount, __ATOMIC_RELEASE);
}

/// Sets `bits` and returns the flags before, ordered before the caller's load of `side`.
static inline uint64_t exclusion_engine_flags_fetch_or(exclusion_engine_words *_Nonnull words, uint64_t bits) {
    return __atomic_fetch_or(&words->flags, bits, __ATOMIC_SEQ_CST);
}

/// Replaces the flags with `desired` if they are `expected`; 1 if it did.
static inline int exclusion_engine_flags_exchange(exclusion_engine_words *_Nonnull words, uint64_t expected, uint64_t desired) {
    return __atomic_compare_exchange_n(&words->flags, &expected, desired, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}

/// Clears `bits`, releasing: what was stored before (`side` emptied) is seen by whoever sees them
/// clear.
static inline void exclusion_engine_flags_release_clear(exclusion_engine_words *_Nonnull words, uint64_t bits) {
    __atomic_fetch_and(&words->flags, ~bits, __ATOMIC_RELEASE);
}

/// Empties `side`, once its object is being let go.
static inline void exclusion_engine_retire_side(exclusion_engine_words *_Nonnull words) {
    __atomic_store_n(&words->side, (void *)0, __ATOMIC_RELEASE);
}

/// Waits until `bit` of the flags is clear, after the one spin of every wait: parked on the
/// flags' lower half, having set `waiter_bit` so that whoever clears `bit` unparks it
/// (`exclusion_engine_flags_end`). Both bits are in the lower 32, the half a thread parks on
/// (little-endian, as every platform Exclusion builds for is). Acquiring: what was stored before
/// `bit` was cleared is seen.
void exclusion_engine_flags_wait_until_clear(exclusion_engine_words *_Nonnull words, uint64_t bit, uint64_t waiter_bit);

/// Clears `bit` and `waiter_bit`, releasing, and unparks the threads that wait for `bit` to
/// clear, if `waiter_bit` says any may.
void exclusion_engine_flags_end(exclusion_engine_words *_Nonnull words, uint64_t bit, uint64_t waiter_bit);

/// The side structures, if they have been made: acquiring, so that what was made in them before
/// they were published is seen.
static inline void *_Nullable exclusion_engine_side(const exclusion_engine_words *_Nonnull words) {
    return __atomic_load_n(&words->side, __ATOMIC_ACQUIRE);
}

/// Publishes `side` if none is yet; 1 if it did, 0 if another thread's came first.
static inline int exclusion_engine_publish_side(exclusion_engine_words *_Nonnull words, void *_Nonnull side) {
    void *expected = 0;
    return __atomic_compare_exchange_n(&words->side, &expected, side, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

// MARK: - What an instance holds inline

/// The size of a cache line: 128 bytes on Apple's arm64 processors, 64 on the others Exclusion
/// builds for.
#if defined(__APPLE__) && defined(__aarch64__)
#define EXCLUSION_CACHE_LINE 128
#else
#define EXCLUSION_CACHE_LINE 64
#endif

/// Room for the instance's label, a Swift `String?` that the engine keeps there (`_Engine.label`):
/// raw bytes to C, in the gap between the words and the lock.
typedef struct {
    uint64_t bytes[2];
} exclusion_label_room;

/// Where the last watched access of an instance entered, for the stuck-wait report
/// (`Checks/Engine+Watching.swift`): the file's UTF-8 start, and its length and the line in one
/// word. Written only where waits are watched (debug builds, or `EXCLUSION_STUCK_WAIT_SECONDS`),
/// so it can share the words' line: an access without a watch never touches it.
typedef struct {
    uintptr_t file;
    uint64_t lengthAndLine;
} exclusion_entry_room;

static inline void exclusion_entry_note(exclusion_entry_room *_Nonnull entry, uintptr_t file, uint64_t lengthAndLine) {
    __atomic_store_n(&entry->file, file, __ATOMIC_RELAXED);
    __atomic_store_n(&entry->lengthAndLine, lengthAndLine, __ATOMIC_RELAXED);
}

static inline uintptr_t exclusion_entry_file(const exclusion_entry_room *_Nonnull entry) {
    return __atomic_load_n(&entry->file, __ATOMIC_RELAXED);
}

static inline uint64_t exclusion_entry_length_and_line(const exclusion_entry_room *_Nonnull entry) {
    return __atomic_load_n(&entry->lengthAndLine, __ATOMIC_RELAXED);
}

/// How an instance lays out its words and its lock: a cache line apart, so that threads that wait
/// (and change the words to say so) or look at the words (an iterator of `values` setting up its
/// next wait) don't take the lock's line from the thread that holds it, which every access and
/// release writes; the state follows the lock. The label's room and the watched entry's fill part
/// of the gap. The words
/// come first, at a 16-byte boundary of the object, and the lock a line further on: two 16-byte
/// pieces of an object whose distance is a whole line are never on one line, wherever the
/// allocator put the object.
#define EXCLUSION_WORDS_APART \
    (EXCLUSION_CACHE_LINE - sizeof(exclusion_engine_words) - sizeof(exclusion_label_room) - sizeof(exclusion_entry_room))

/// An `Exclusive`'s words and lock, kept in the instance itself.
typedef struct {
    exclusion_engine_words words;
    exclusion_label_room label;
    exclusion_entry_room entry;
    uint8_t apart[EXCLUSION_WORDS_APART];
    exclusion_lock lock;
} exclusion_exclusive_storage;

static inline exclusion_engine_words *_Nonnull exclusion_exclusive_words(exclusion_exclusive_storage *_Nonnull storage) {
    return &storage->words;
}

static inline exclusion_lock *_Nonnull exclusion_exclusive_lock(exclusion_exclusive_storage *_Nonnull storage) {
    return &storage->lock;
}

/// A `ReadersWriter`'s words and lock, kept in the instance itself, as `Exclusive`'s are.
typedef struct {
    exclusion_engine_words words;
    exclusion_label_room label;
    exclusion_entry_room entry;
    uint8_t apart[EXCLUSION_WORDS_APART];
    exclusion_rwlock lock;
} exclusion_readers_writer_storage;

_Static_assert(
    __builtin_offsetof(exclusion_exclusive_storage, lock) == EXCLUSION_CACHE_LINE
        && __builtin_offsetof(exclusion_readers_writer_storage, lock) == EXCLUSION_CACHE_LINE,
    "an instance's lock is a cache line past its words");
_Static_assert(
    __builtin_offsetof(exclusion_exclusive_storage, label) == sizeof(exclusion_engine_words)
        && __builtin_offsetof(exclusion_readers_writer_storage, label) == sizeof(exclusion_engine_words),
    "the label's room follows the words");
_Static_assert(
    __builtin_offsetof(exclusion_exclusive_storage, entry)
            == sizeof(exclusion_engine_words) + sizeof(exclusion_label_room)
        && __builtin_offsetof(exclusion_readers_writer_storage, entry)
            == sizeof(exclusion_engine_words) + sizeof(exclusion_label_room),
    "the watched entry's room follows the label's");

static inline exclusion_engine_words *_Nonnull exclusion_readers_writer_words(
    exclusion_readers_writer_storage *_Nonnull storage) {
    return &storage->words;
}

static inline exclusion_rwlock *_Nonnull exclusion_readers_writer_lock(exclusion_readers_writer_storage *_Nonnull storage) {
    return &storage->lock;
}

#endif
