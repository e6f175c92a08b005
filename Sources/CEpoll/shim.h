// Linux epoll(7) for HTTPServer's event loops (Glibc's Swift module does not export it). Part of libc:
// nothing to link.
#include <sys/epoll.h>
