#pragma once
#define O_RDONLY 0x0000
#define O_WRONLY 0x0001
#define F_GETFD 1
int open(const char *path, int flags, ...);
int fcntl(int descriptor, int command, ...);
