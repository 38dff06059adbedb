#ifndef EXCLUSION_ZLIB_H
#define EXCLUSION_ZLIB_H

// zlib, for the contention profile's gzip (`ContentionReport.pprof()`): its one-shot compression
// and its checksum, as two function pointers, so that the Swift above is one code path however
// each platform provides them. Apple's SDKs have zlib, iOS's included: there it is linked
// (`Package.swift`). On Linux every system has the library, but not always its headers: there it
// is loaded when first asked for, and the pointers are NULL if it can't be.

#include <stdint.h>

typedef struct {
    /// zlib's `compress2`: deflates `source` into `destination` (of `*destination_length` bytes,
    /// set to what it wrote) in zlib's format, at `level`; 0 when it did.
    int (*compress2)(uint8_t *destination, unsigned long *destination_length, const uint8_t *source,
                     unsigned long source_length, int level);
    /// zlib's `crc32`: `crc` carried on over `length` bytes at `bytes`.
    unsigned long (*crc32)(unsigned long crc, const uint8_t *bytes, unsigned int length);
} exclusion_zlib;

/// zlib's two functions, or NULL pointers if zlib can't be had.
exclusion_zlib exclusion_zlib_functions(void);

#endif
