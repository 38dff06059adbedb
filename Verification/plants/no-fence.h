// Planted bug for stress.sh: membarrier's fence does nothing (querying and registering still
// work, so the lock believes it is fenced). Included before ExclusionLock.c is compiled.
#include <linux/membarrier.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

static long planted_syscall(long number, ...) {
    va_list arguments;
    va_start(arguments, number);
    long a = va_arg(arguments, long), b = va_arg(arguments, long), c = va_arg(arguments, long);
    long d = va_arg(arguments, long), e = va_arg(arguments, long), f = va_arg(arguments, long);
    va_end(arguments);
    if (number == __NR_membarrier && a == MEMBARRIER_CMD_PRIVATE_EXPEDITED) return 0;
    return syscall(number, a, b, c, d, e, f);
}

#define syscall planted_syscall
