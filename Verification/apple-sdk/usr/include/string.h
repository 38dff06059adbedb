#pragma once
#include <stddef.h>
size_t strlen(const char *string);
char *strdup(const char *string);
void *memset(void *destination, int value, size_t count);
void *memcpy(void *destination, const void *source, size_t count);
int memcmp(const void *a, const void *b, size_t count);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t count);
