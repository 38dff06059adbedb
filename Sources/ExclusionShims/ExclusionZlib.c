#include "ExclusionZlib.h"

#if defined(__APPLE__)

#include <zlib.h>

exclusion_zlib exclusion_zlib_functions(void) {
    exclusion_zlib zlib = {compress2, crc32};
    return zlib;
}

#else

#include <dlfcn.h>
#include <pthread.h>

static exclusion_zlib exclusion_zlib_loaded;
static pthread_once_t exclusion_zlib_once = PTHREAD_ONCE_INIT;

static void exclusion_zlib_load(void) {
    // Kept open for the life of the process, as a linked library would be. If it can't be
    // opened or lacks either function, both stay NULL.
    void *library = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) return;
    void *compressing = dlsym(library, "compress2");
    void *checksumming = dlsym(library, "crc32");
    if (compressing == NULL || checksumming == NULL) return;
    // POSIX guarantees that a function's address from dlsym converts back to a function pointer.
    exclusion_zlib_loaded.compress2 =
        (int (*)(uint8_t *, unsigned long *, const uint8_t *, unsigned long, int))compressing;
    exclusion_zlib_loaded.crc32 = (unsigned long (*)(unsigned long, const uint8_t *, unsigned int))checksumming;
}

exclusion_zlib exclusion_zlib_functions(void) {
    // Can't fail: the once-control is statically initialized and the routine is valid.
    (void)pthread_once(&exclusion_zlib_once, exclusion_zlib_load);
    return exclusion_zlib_loaded;
}

#endif
