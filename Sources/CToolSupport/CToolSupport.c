// Runs before any Swift code: by the time Swift's main starts, the runtime, Foundation or
// Dispatch may already have opened a file (an eventfd, say) that takes the number of a closed
// standard stream, and the tool's output would go into it. A constructor is the earliest hook.

#include "CToolSupport.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

static int output_was_closed = 0;

static int hold(int descriptor, int flags) {
    if (fcntl(descriptor, F_GETFD) != -1 || errno != EBADF) return 0;
    int null = open("/dev/null", flags);
    if (null >= 0 && null != descriptor) {
        dup2(null, descriptor);
        close(null);
    }
    return 1;
}

__attribute__((constructor)) static void hold_closed_standard_streams(void) {
    hold(STDIN_FILENO, O_RDONLY);
    output_was_closed = hold(STDOUT_FILENO, O_RDONLY);  // read-only: writing fails, and is reported
    hold(STDERR_FILENO, O_WRONLY);                      // write-only: what nobody reads is dropped
}

int c_tool_support_output_was_closed(void) { return output_was_closed; }
