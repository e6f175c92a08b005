// Linux system interfaces HTTPServer needs that Swift's Glibc module does not export. Part of libc:
// nothing to link.
//
// epoll(7), for the event loops.
//
// openat2(2) confined to a directory, for StaticFileHandler: one system call opens a whole relative
// path while the kernel refuses symlinks and escapes (Linux >= 5.6). Elsewhere, or when the kernel
// lacks it, the call fails with ENOSYS and the caller opens component by component instead.
//
// inotify(7), for StaticFileHandler's in-memory snapshots of small files (FileChangeMonitor).
#ifndef DCSERVE_CLINUX_SHIM_H
#define DCSERVE_CLINUX_SHIM_H

#include <errno.h>
#include <stdint.h>
#if defined(__linux__)
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <malloc.h>
#endif

/// Returns free memory at the top of every malloc arena to the system (glibc's malloc_trim(0));
/// 0 elsewhere.
static inline int dcserve_malloc_trim(void) {
#if defined(__linux__) && defined(__GLIBC__)
    return malloc_trim(0);
#else
    return 0;
#endif
}

/// Allocator settings for a server holding many tens-of-KB bodies briefly: allocations of at least
/// `mmap_threshold` bytes get their own mapping (returned to the system when freed, instead of
/// fragmenting the arenas, whose growth glibc never gives back under load), and at most `arenas`
/// malloc arenas, whose free top is given back to the system only once it exceeds `trim_threshold`
/// bytes. Returns 1 when all were applied; 0 elsewhere.
static inline int dcserve_malloc_configure(int mmap_threshold, int arenas, int trim_threshold) {
#if defined(__linux__) && defined(__GLIBC__)
    // 0 leaves a setting as glibc has it (its default, or the operator's GLIBC_TUNABLES).
    if (mmap_threshold > 0 && !mallopt(M_MMAP_THRESHOLD, mmap_threshold)) return 0;
    if (arenas > 0 && !mallopt(M_ARENA_MAX, arenas)) return 0;
    if (trim_threshold > 0 && !mallopt(M_TRIM_THRESHOLD, trim_threshold)) return 0;
    return 1;
#else
    (void)mmap_threshold; (void)arenas; (void)trim_threshold;
    return 0;
#endif
}

/// Names the calling thread (the first 15 bytes; shown by `ps -L`, `perf`, /proc/self/task/*/comm).
static inline void dcserve_set_thread_name(const char *name) {
#if defined(__linux__)
    (void)prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
#else
    (void)name;
#endif
}

/// The calling thread's name into `buffer` (at least 16 bytes, NUL-terminated); "" elsewhere.
static inline void dcserve_thread_name(char *buffer) {
#if defined(__linux__)
    if (prctl(PR_GET_NAME, (unsigned long)buffer, 0, 0, 0) != 0) buffer[0] = 0;
#else
    buffer[0] = 0;
#endif
}

/// epoll_wait with a timeout in nanoseconds (epoll_pwait2, Linux >= 5.11). Where the kernel lacks it,
/// returns 0 at once (no events) instead of waiting, and stops asking the kernel (the flag is written
/// racily but only ever from 0 to 1).
static inline int dcserve_epoll_wait_nanoseconds(int epfd, struct epoll_event *events, int maxevents, long nanoseconds) {
#if defined(__linux__)
    static volatile int unsupported = 0;
    if (unsupported) return 0;
    struct timespec timeout = { nanoseconds / 1000000000L, nanoseconds % 1000000000L };
    int n = epoll_pwait2(epfd, events, maxevents, &timeout, NULL);
    if (n < 0 && errno == ENOSYS) { unsupported = 1; return 0; }
    return n;
#else
    return 0;
#endif
}

/// Opens `path` relative to `directory` with `flags` (no O_CREAT). Fails with ELOOP when any component
/// is a symlink, EXDEV when the path would leave `directory`, ENOSYS where openat2 is unavailable.
static inline int dcserve_openat2_beneath_no_symlinks(int directory, const char *path, int flags) {
#if defined(__linux__) && defined(SYS_openat2)
    struct { uint64_t flags, mode, resolve; } how = {
        (uint64_t)(uint32_t)flags, 0,
        0x04 /* RESOLVE_NO_SYMLINKS */ | 0x08 /* RESOLVE_BENEATH */
    };
    return (int)syscall(SYS_openat2, directory, path, &how, sizeof how);
#else
    (void)directory; (void)path; (void)flags;
    errno = ENOSYS;
    return -1;
#endif
}

#endif
