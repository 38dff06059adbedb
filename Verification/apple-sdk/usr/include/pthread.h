#pragma once
#include <time.h>
typedef struct _opaque_pthread_t *pthread_t;
typedef struct { long __sig; char __opaque[56]; } pthread_once_t;
#define PTHREAD_ONCE_INIT {0x30B1BCBA, {0}}
pthread_t pthread_self(void);
int pthread_once(pthread_once_t *once, void (*routine)(void));
typedef struct { long __sig; char __opaque[56]; } pthread_mutex_t;
#define PTHREAD_MUTEX_INITIALIZER {0x32AAABA7, {0}}
int pthread_mutex_lock(pthread_mutex_t *mutex);
int pthread_mutex_unlock(pthread_mutex_t *mutex);
typedef unsigned long pthread_key_t;
int pthread_key_create(pthread_key_t *key, void (*destructor)(void *));
int pthread_setspecific(pthread_key_t key, const void *value);
