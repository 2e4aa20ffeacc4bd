#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <netinet/tcp.h>
#include <sys/timex.h>

/// Names the calling thread (visible in `top -H`); prctl because pthread_setname_np needs _GNU_SOURCE.
static inline void sokuho_set_thread_name(const char *name) { prctl(PR_SET_NAME, name, 0, 0, 0); }
