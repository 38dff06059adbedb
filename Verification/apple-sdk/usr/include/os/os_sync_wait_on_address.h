// A stand-in for the SDK's <os/os_sync_wait_on_address.h>, macOS 14.4 and iOS 17.4 (see os/lock.h
// here).
#pragma once
#include <os/clock.h>
#include <stddef.h>
#include <stdint.h>

typedef uint32_t os_sync_wait_on_address_flags_t;
#define OS_SYNC_WAIT_ON_ADDRESS_NONE ((os_sync_wait_on_address_flags_t)0)
#define OS_SYNC_WAIT_ON_ADDRESS_SHARED ((os_sync_wait_on_address_flags_t)1)

typedef uint32_t os_sync_wake_by_address_flags_t;
#define OS_SYNC_WAKE_BY_ADDRESS_NONE ((os_sync_wake_by_address_flags_t)0)
#define OS_SYNC_WAKE_BY_ADDRESS_SHARED ((os_sync_wake_by_address_flags_t)1)

int os_sync_wait_on_address(void *addr, uint64_t value, size_t size, os_sync_wait_on_address_flags_t flags);
int os_sync_wait_on_address_with_timeout(void *addr, uint64_t value, size_t size,
    os_sync_wait_on_address_flags_t flags, os_clockid_t clockid, uint64_t timeout_ns);
int os_sync_wake_by_address_any(void *addr, size_t size, os_sync_wake_by_address_flags_t flags);
int os_sync_wake_by_address_all(void *addr, size_t size, os_sync_wake_by_address_flags_t flags);
