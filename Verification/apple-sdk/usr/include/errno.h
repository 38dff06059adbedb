#pragma once
extern int *__error(void);
#define errno (*__error())
#define ENOENT 2
#define EINTR 4
#define EBADF 9
#define ENOMEM 12
#define EFAULT 14
#define EINVAL 22
#define EAGAIN 35
#define ETIMEDOUT 60
