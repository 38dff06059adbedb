#pragma once
#include <stddef.h>
size_t malloc_size(const void *pointer);
