#pragma once
#include <stdarg.h>
#include <stddef.h>
typedef struct __sFILE FILE;
int snprintf(char *buffer, size_t size, const char *format, ...) __attribute__((format(printf, 3, 4)));
int vsnprintf(char *buffer, size_t size, const char *format, va_list arguments);
