#include <lmdb.h>
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

/// fallocate(2) with mode 0 (allocate the blocks, extend the size) of [0, length): 0, or the
/// errno. Not posix_fallocate: where the file system has no fallocate, glibc's fallback writes a
/// byte per block, which could race with another process writing into LMDB's lock file.
static inline int sokuho_allocate(int fd, long long length) {
    return syscall(SYS_fallocate, fd, 0, (long long)0, length) == 0 ? 0 : errno;
}
