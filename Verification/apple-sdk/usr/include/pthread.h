#pragma once
#include <time.h>
typedef struct _opaque_pthread_t *pthread_t;
typedef struct { long __sig; char __opaque[56]; } pthread_once_t;
#define PTHREAD_ONCE_INIT {0x30B1BCBA, {0}}
pthread_t pthread_self(void);
int pthread_once(pthread_once_t *once, void (*routine)(void));
