#pragma once
#include <stddef.h>
typedef long ssize_t;
#define STDIN_FILENO 0
#define STDOUT_FILENO 1
#define STDERR_FILENO 2
ssize_t write(int descriptor, const void *bytes, size_t count);
int close(int descriptor);
int dup2(int from, int to);
