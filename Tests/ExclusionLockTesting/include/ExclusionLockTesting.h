#ifndef EXCLUSION_LOCK_TESTING_H
#define EXCLUSION_LOCK_TESTING_H

// Entry points for the lock's tests only, kept out of the shipped header: what a test reads about a
// lock, and the broken variant a test must catch.

#include "ExclusionShims.h"

#if defined(__linux__)

/// How many waiters are counted on `lock` right now (without the episode bit).
uint32_t exclusion_lock_testing_waiters(exclusion_lock *lock);

/// Whether a contention episode is marked on `lock` right now.
int exclusion_lock_testing_in_episode(exclusion_lock *lock);

/// Gives `lock` back without looking for sleepers: the broken variant the wake-up test must catch.
void exclusion_lock_testing_release_silently(exclusion_lock *lock);

/// Switches every lock to the symmetric protocol (no membarrier). Only in a process of its own,
/// before any lock is used.
void exclusion_lock_testing_use_symmetric_protocol(void);

/// Whether releases give locks back with a plain store (the fenced protocol).
int exclusion_lock_testing_is_fenced(void);

#endif

#endif
