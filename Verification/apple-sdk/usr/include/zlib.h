// A stand-in for the SDK's <zlib.h> (see os/lock.h here): the two functions Exclusion uses, as
// zlib's manual declares them.
#pragma once

typedef unsigned char Bytef;
typedef unsigned long uLong;
typedef unsigned long uLongf;
typedef unsigned int uInt;

int compress2(Bytef *dest, uLongf *destLen, const Bytef *source, uLong sourceLen, int level);
uLong crc32(uLong crc, const Bytef *buf, uInt len);
