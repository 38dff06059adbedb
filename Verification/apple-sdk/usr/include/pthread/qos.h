// A stand-in for the SDK's <pthread/qos.h> and <sys/qos.h> (see os/lock.h here).
#pragma once
#include <pthread.h>

typedef enum {
    QOS_CLASS_USER_INTERACTIVE = 0x21,
    QOS_CLASS_USER_INITIATED = 0x19,
    QOS_CLASS_DEFAULT = 0x15,
    QOS_CLASS_UTILITY = 0x11,
    QOS_CLASS_BACKGROUND = 0x09,
    QOS_CLASS_UNSPECIFIED = 0x00,
} qos_class_t;

qos_class_t qos_class_self(void);

typedef struct pthread_override_s *pthread_override_t;

pthread_override_t pthread_override_qos_class_start_np(pthread_t thread, qos_class_t qos_class, int relative_priority);
int pthread_override_qos_class_end_np(pthread_override_t override);
