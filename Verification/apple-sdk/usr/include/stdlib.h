#pragma once
#include <stddef.h>
void abort(void) __attribute__((noreturn));
void *malloc(size_t size);
void *realloc(void *pointer, size_t size);
void *calloc(size_t count, size_t size);
void free(void *pointer);
int posix_memalign(void **memory, size_t alignment, size_t size);
