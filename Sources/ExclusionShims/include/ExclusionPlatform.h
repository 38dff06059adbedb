#ifndef EXCLUSION_PLATFORM_H
#define EXCLUSION_PLATFORM_H

// What Exclusion asks of the operating system, in one place: which of its two lock designs a build
// uses, how a thread sleeps until a word changes and how it is woken, the lock the system offers,
// how a waiting thread lends its priority, and the clock. Everything above this header is the same
// code on every platform.

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#if !defined(__APPLE__) && !defined(__linux__)
#error "Exclusion builds for Apple platforms and Linux."
#endif

/// 1 where the locks are built on the system's owner-tracking lock, as on Apple platforms: an
/// untimed wait sleeps inside that lock, which lends the waiter's priority to the thread holding
/// it, and nothing spins, yields or polls (`ExclusionOwnedLock.h`). 0 for Linux's own lock, which
/// spins before it sleeps and gives the lock back with a plain store (`ExclusionLock.h`).
///
/// `EXCLUSION_PORTABLE_LOCK` (defined for C and Swift alike: `-Xcc -DEXCLUSION_PORTABLE_LOCK
/// -Xswiftc -DEXCLUSION_PORTABLE_LOCK`) builds the Apple design on Linux, with stand-ins for the two
/// system calls it rests on, so that its logic is tested where there is no Mac.
#if defined(__APPLE__) || defined(EXCLUSION_PORTABLE_LOCK)
#define EXCLUSION_OWNED_LOCK 1
#else
#define EXCLUSION_OWNED_LOCK 0
#endif

// MARK: - Time

/// Nanoseconds on the monotonic clock (`CLOCK_MONOTONIC`): what every deadline in Exclusion is
/// measured against. A deadline of 0 means none.
uint64_t exclusion_monotonic_now(void);

/// Nanoseconds from now until `deadline` (0 once it has passed), for the system calls that take a
/// timeout instead of a moment.
uint64_t exclusion_nanoseconds_until(uint64_t deadline);

/// `nanoseconds` as the `timespec` that POSIX calls take: the one place C converts time.
struct timespec exclusion_timespec(uint64_t nanoseconds);

// MARK: - Parking

/// Parks the calling thread on `word` while it holds `expected`, until another thread unparks the
/// word or `deadline` passes (0: no deadline). Returns 0 when unparked, when the word no longer held
/// `expected`, or spuriously, and `ETIMEDOUT` once the deadline has passed: the caller looks at what
/// it waits for again either way.
///
/// The one way a thread in Exclusion blocks: for the lock, a condition, a granted waiter, a writer's
/// readers, and the locks beside an instance's. (But for an untimed wait for the lock on Apple
/// platforms, which sleeps inside `os_unfair_lock` so that it lends its priority to the holder, and
/// the portable build's stand-in for that lock.) The parking lot is the kernel's: Linux's futex and
/// Apple's `os_sync_wait_on_address` (macOS 14.4, iOS 17.4) keep their sleepers in a table keyed
/// by address, as WebKit's `ParkingLot` and Rust's `parking_lot` do in user space, so a waiter's
/// queue takes no room in an instance: what parks on a word is the word's thread, a waiter, and
/// only for as long as it waits. The checks the compare and the sleep make in one step, under the
/// kernel's lock, are what every protocol above relies on, and what its Spin model assumes.
int exclusion_park(uint32_t *word, uint32_t expected, uint64_t deadline);

/// The longest one sleep on a word lasts: a deadline further away is slept toward in sleeps of
/// this length, each followed by a look at what the sleeper waits for. Apple's timed wait takes a
/// timeout, not a moment, and the kernel adds it to its clock: a timeout near `UINT64_MAX` (what a
/// deadline of "never, really" leaves) could overflow that and be refused (`EINVAL`), which stops
/// the process. A day is far from any overflow, and a sleeper that looks again once a day costs
/// nothing.
#define EXCLUSION_LONGEST_SLEEP_NANOSECONDS (86400ull * 1000000000ull)

/// The timeout of one sleep toward `deadline` from `now`: 0 once the deadline has passed, at most
/// `EXCLUSION_LONGEST_SLEEP_NANOSECONDS`; `*shortened` says whether it ends before the deadline
/// (then its end is no timeout, only a time to look again).
uint64_t exclusion_sleep_timeout(uint64_t deadline, uint64_t now, int *shortened);

/// Unparks one thread parked on `word`, if one is.
void exclusion_unpark_one(uint32_t *word);

/// Unparks every thread parked on `word`.
void exclusion_unpark_all(uint32_t *word);

// MARK: - The system's lock

#if EXCLUSION_OWNED_LOCK

#if defined(__APPLE__)
#include <os/lock.h>

/// `os_unfair_lock`: it records its owner, and a thread that waits for it lends the owner its
/// priority. Giving it back is an atomic exchange with releasing order (libplatform's
/// `os_unfair_lock_unlock`), which the owned lock's release relies on (`ExclusionOwnedLock.h`).
typedef os_unfair_lock exclusion_system_lock;

static inline void exclusion_system_lock_init(exclusion_system_lock *lock) {
    *lock = OS_UNFAIR_LOCK_INIT;
}

static inline int exclusion_system_lock_try(exclusion_system_lock *lock) {
    return os_unfair_lock_trylock(lock);
}

static inline void exclusion_system_lock_lock(exclusion_system_lock *lock) {
    os_unfair_lock_lock(lock);
}

static inline void exclusion_system_lock_unlock(exclusion_system_lock *lock) {
    os_unfair_lock_unlock(lock);
}

#else

/// The stand-in for `os_unfair_lock` in the portable build, of the same shape: the word holds its
/// owner's thread ID, and a bit that says threads sleep on it; a thread that finds it taken sleeps
/// on the word (a futex); giving it back clears the word with an atomic exchange and, if anyone
/// sleeps, wakes one, which then takes it like anybody else. Like `os_unfair_lock` it is unfair:
/// a releasing thread that comes straight back may take the lock again before the woken one runs
/// (a lock that hands itself to its first waiter, as a priority-inheriting futex does, makes every
/// release on a busy machine wait for that waiter to be scheduled). Giving back a lock the thread
/// doesn't own stops the process, as `os_unfair_lock` does. What it can't stand in for: the
/// priority a waiter lends the owner, which only Apple's kernel gives.
typedef struct {
    uint32_t owner;
} exclusion_system_lock;

/// In `owner`: threads sleep on the word, and its release must wake one. Thread IDs stay below it.
#define EXCLUSION_SYSTEM_LOCK_SLEEPERS 0x80000000u

/// The calling thread's ID, as the kernel knows it; read once per thread.
uint32_t exclusion_system_thread_id_slow(void);
extern _Thread_local uint32_t exclusion_system_thread_id __attribute__((tls_model("initial-exec")));

static inline uint32_t exclusion_system_thread(void) {
    uint32_t id = exclusion_system_thread_id;
    return __builtin_expect(id != 0, 1) ? id : exclusion_system_thread_id_slow();
}

/// Sleeps on the word until the lock is this thread's.
void exclusion_system_lock_wait(exclusion_system_lock *lock);

/// Gives back a lock that threads sleep on, or stops the process if this thread doesn't own it.
void exclusion_system_lock_hand_over(exclusion_system_lock *lock);

static inline void exclusion_system_lock_init(exclusion_system_lock *lock) {
    lock->owner = 0;
}

static inline int exclusion_system_lock_try(exclusion_system_lock *lock) {
    uint32_t expected = 0;
    return __atomic_compare_exchange_n(
        &lock->owner, &expected, exclusion_system_thread(), 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline void exclusion_system_lock_lock(exclusion_system_lock *lock) {
    if (__builtin_expect(!exclusion_system_lock_try(lock), 0)) {
        exclusion_system_lock_wait(lock);
    }
}

static inline void exclusion_system_lock_unlock(exclusion_system_lock *lock) {
    uint32_t expected = exclusion_system_thread();
    if (__builtin_expect(
            !__atomic_compare_exchange_n(&lock->owner, &expected, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED), 0)) {
        exclusion_system_lock_hand_over(lock);
    }
}

#endif

#endif

// MARK: - Lending priority

/// A loan of the calling thread's priority to another thread, while the caller waits for that
/// thread to do something that no lock of its own stands for (a woken waiter's turn).
#if defined(__APPLE__)
#include <pthread/qos.h>
typedef pthread_override_t exclusion_priority_loan;
#else
typedef void *exclusion_priority_loan;
#endif

/// Lends the calling thread's priority (its quality of service) to `thread` until the loan ends;
/// NULL if there is nothing to lend. On Apple platforms `pthread_override_qos_class_start_np`;
/// Linux has no quality of service to lend, and lends nothing.
///
/// `thread` must be alive during the call: the caller holds whatever keeps it from ending (the
/// wait list's lock, while the thread is its grantee). The loan then keeps a reference to the
/// thread of its own (libpthread takes one on the kernel's thread), so it may end after the
/// thread has.
exclusion_priority_loan exclusion_lend_priority(pthread_t thread);

/// Ends a loan from `exclusion_lend_priority` (nothing for NULL).
void exclusion_end_loan(exclusion_priority_loan loan);

// MARK: - Failing

/// Stops the process with `message` on standard error: what a lock does when the system refuses
/// a call that leaves no correct way to wait or wake. Better a message than a hang.
__attribute__((noreturn)) void exclusion_fail(const char *message);

#endif
