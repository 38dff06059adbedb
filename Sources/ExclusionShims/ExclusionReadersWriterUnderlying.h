#ifndef EXCLUSION_READERS_WRITER_UNDERLYING_H
#define EXCLUSION_READERS_WRITER_UNDERLYING_H

// What ExclusionReadersWriterLock.c asks of the underlying lock, which
// ExclusionReadersWriterUnderlying.c provides for each design. Private to ExclusionShims.

#include "ExclusionReadersWriterLock.h"

/// Shared access through the underlying lock, by `deadline` (0: as long as it takes), or only if
/// it can be had without waiting (`trying`); 1 if it has it. Turns the bias back on if it is due.
int exclusion_rwlock_read_underlying(exclusion_rwlock *lock, uint64_t deadline, int trying);

/// Gives back the underlying lock a writer holds.
void exclusion_rwlock_unlock_write_underlying(exclusion_rwlock *lock);

/// Holding the underlying lock with the bias withdrawn: whether slot `index` holds no reader that
/// must be waited for.
int exclusion_rwlock_slot_is_free(exclusion_rwlock *lock, int index);

/// Holding the underlying lock with the bias withdrawn: waits by `deadline` (0: none) for slot
/// `index` to empty; 1 once it is, 0 if the deadline passed first.
int exclusion_rwlock_wait_for_slot(exclusion_rwlock *lock, int index, uint64_t deadline);

#endif
