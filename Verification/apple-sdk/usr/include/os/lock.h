// A stand-in for the SDK's <os/lock.h>, only for compiling Exclusion's C for an Apple target on
// Linux (Verification/apple-c.sh): the declarations Exclusion uses, as Apple documents them.
#pragma once
#include <stdbool.h>
#include <stdint.h>

typedef struct os_unfair_lock_s {
    uint32_t _os_unfair_lock_opaque;
} os_unfair_lock, *os_unfair_lock_t;

#define OS_UNFAIR_LOCK_INIT ((os_unfair_lock){0})

void os_unfair_lock_lock(os_unfair_lock_t lock);
bool os_unfair_lock_trylock(os_unfair_lock_t lock);
void os_unfair_lock_unlock(os_unfair_lock_t lock);
