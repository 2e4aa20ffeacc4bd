// The system headers first: libevent's event-config.h defines _GNU_SOURCE, and system headers
// first parsed under it would declare fd_set and friends differently from Swift's Glibc module.
#include <sys/types.h>
#include <sys/time.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
