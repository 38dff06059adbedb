// A stand-in for the SDK's <os/clock.h> (see os/lock.h here).
#pragma once
#include <stdint.h>

typedef uint32_t os_clockid_t;
#define OS_CLOCK_MACH_ABSOLUTE_TIME ((os_clockid_t)32)
