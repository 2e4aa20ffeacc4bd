#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <netinet/tcp.h>
#include <sys/timex.h>
#include <sys/syscall.h>
#include <unistd.h>

/// Names the calling thread (visible in `top -H`); prctl because pthread_setname_np needs _GNU_SOURCE.
static inline void sokuho_set_thread_name(const char *name) { prctl(PR_SET_NAME, name, 0, 0, 0); }

/// dup3: `newfd` closed and made a close-on-exec copy of `oldfd` in one step (no moment in which
/// another thread's open() can take the slot). Through syscall(2): glibc declares dup3 only under _GNU_SOURCE.
static inline int sokuho_dup3(int oldfd, int newfd, int flags) { return (int)syscall(SYS_dup3, oldfd, newfd, flags); }
