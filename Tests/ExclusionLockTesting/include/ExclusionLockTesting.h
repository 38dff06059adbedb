#ifndef EXCLUSION_LOCK_TESTING_H
#define EXCLUSION_LOCK_TESTING_H

// Entry points for the locks' tests only, kept out of the shipped headers: what a test reads about
// a lock, and the broken variants a test must catch.

#include "ExclusionShims.h"

#include <stddef.h>

/// How many threads wait on `lock` right now, asleep or about to sleep, in a way a release must
/// look for: on Linux the counted waiters (without the episode bit); on Apple platforms the timed
/// waiters (untimed ones wait inside the system's lock, which looks after them itself).
uint32_t exclusion_lock_testing_waiters(exclusion_lock *lock);

/// Gives `lock` back without looking for waiters: the broken variant the wake-up tests must catch.
void exclusion_lock_testing_release_silently(exclusion_lock *lock);

#if !EXCLUSION_OWNED_LOCK

/// Whether a contention episode is marked on `lock` right now.
int exclusion_lock_testing_in_episode(exclusion_lock *lock);

/// Switches every lock to the symmetric protocol (no membarrier). Only in a process of its own,
/// before any lock is used.
void exclusion_lock_testing_use_symmetric_protocol(void);

/// Whether releases give locks back with a plain store (the fenced protocol).
int exclusion_lock_testing_is_fenced(void);

#endif

/// The highest thread index handed out so far (`exclusion_thread_index_limit`).
uint32_t exclusion_testing_thread_index_limit(void);

/// Whether `lock` is read-biased right now (a writer that waits for readers has withdrawn it).
int exclusion_rwlock_testing_is_biased(exclusion_rwlock *lock);

/// Puts a reader of `lock` on thread `thread` in its slot of the shared table, announced and not yet
/// looked at the bias, as a real reader stopped between the two would be; 0 if another reader (of
/// any lock) holds that slot.
int exclusion_rwlock_testing_announce(exclusion_rwlock *lock, uint32_t thread);

/// That reader leaves, as a real one that saw the bias withdrawn would.
void exclusion_rwlock_testing_leave(exclusion_rwlock *lock, uint32_t thread);

/// Stops `thread` where it stands, inside a signal handler, and returns once it has stopped: a
/// thread asleep in the kernel is taken out of its sleep, and goes back to what it was doing only
/// after `exclusion_testing_resume`. So a test can make something happen at the one moment it
/// must, instead of hoping the scheduler picks it (a waiter woken, but not yet running). One
/// thread at a time; returns 0 if the thread hadn't stopped after `seconds`. Resume it in any case.
int exclusion_testing_pause(pthread_t thread, double seconds);

/// Lets `exclusion_testing_pause` stop the calling thread: call it first thing on the thread. (A
/// thread inherits the signals its creator blocks, and libdispatch's threads block nearly all.)
void exclusion_testing_allow_pausing(void);

/// Lets the thread that `exclusion_testing_pause` stopped go on.
void exclusion_testing_resume(void);

/// How many bytes the allocator gave the block at `pointer`, which `malloc` returned: what an
/// allocation really costs (`malloc_usable_size`, `malloc_size` on Apple platforms).
size_t exclusion_testing_allocation_size(const void *pointer);

#endif
