#include "ExclusionShims.h"

_Thread_local exclusion_thread_record exclusion_thread __attribute__((tls_model("initial-exec")));

static uint32_t next_thread_index = 0;

exclusion_thread_record *exclusion_current_thread_slow(void) {
    exclusion_thread_record *record = &exclusion_thread;
    record->index = __atomic_add_fetch(&next_thread_index, 1, __ATOMIC_RELAXED);
    if (record->index == 0) {
        // After 2^32 threads the counter wraps; 0 means "unassigned", so skip it.
        record->index = __atomic_add_fetch(&next_thread_index, 1, __ATOMIC_RELAXED);
    }
    return record;
}
