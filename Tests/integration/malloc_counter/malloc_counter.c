/*
 * An LD_PRELOAD interposer that counts heap allocations (malloc, calloc, realloc, reallocarray,
 * posix_memalign, aligned_alloc, memalign, valloc, pvalloc) in the process it is loaded into, so a test
 * can read allocations per request from a running server. It counts calls, never bytes or times.
 *
 * The counts go to the file named by DCSERVE_MALLOC_COUNTER_FILE (created, sized and mapped shared at
 * load time; without the variable nothing is counted). Layout, native-endian 64-bit words:
 *   [0] magic 0x636f756e746d616c ("lamtnuoc"), [1] slots claimed so far, then MC_SLOTS slots of
 *   {thread id, allocations}, then one overflow slot {0, allocations} for threads beyond MC_SLOTS.
 * Each thread claims a slot on its first allocation and is its only writer (relaxed atomics: a reader
 * in another process sees each word whole, possibly a few counts late, never torn).
 *
 * Forwarding goes to glibc's __libc_* entry points (no dlsym, which itself allocates); free is not
 * interposed. Allocations made before the constructor maps the file are not counted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

#define MC_SLOTS 1024
#define MC_MAGIC 0x636f756e746d616cULL

struct mc_slot {
    _Atomic uint64_t tid;
    _Atomic uint64_t count;
};

struct mc_counters {
    uint64_t magic;
    _Atomic uint64_t claimed;
    struct mc_slot slots[MC_SLOTS + 1];
};

static struct mc_counters *_Atomic mc_shared;
static __thread struct mc_slot *mc_mine __attribute__((tls_model("initial-exec")));

__attribute__((constructor(101))) static void mc_map(void) {
    const char *path = getenv("DCSERVE_MALLOC_COUNTER_FILE");
    if (path == NULL || *path == 0) return;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return;
    if (ftruncate(fd, sizeof(struct mc_counters)) != 0) { close(fd); return; }
    void *p = mmap(NULL, sizeof(struct mc_counters), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return;
    struct mc_counters *c = p;
    c->magic = MC_MAGIC;
    atomic_store_explicit(&mc_shared, c, memory_order_release);
}

static inline void mc_count(void) {
    struct mc_counters *c = atomic_load_explicit(&mc_shared, memory_order_acquire);
    if (c == NULL) return;
    struct mc_slot *s = mc_mine;
    if (s == NULL) {
        uint64_t i = atomic_fetch_add_explicit(&c->claimed, 1, memory_order_relaxed);
        s = &c->slots[i < MC_SLOTS ? i : MC_SLOTS];
        if (i < MC_SLOTS) atomic_store_explicit(&s->tid, (uint64_t)syscall(SYS_gettid), memory_order_relaxed);
        mc_mine = s;
    }
    atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
}

void *malloc(size_t n) { mc_count(); return __libc_malloc(n); }
void *calloc(size_t n, size_t size) { mc_count(); return __libc_calloc(n, size); }
void *realloc(void *p, size_t n) { mc_count(); return __libc_realloc(p, n); }
void *memalign(size_t alignment, size_t n) { mc_count(); return __libc_memalign(alignment, n); }
void *valloc(size_t n) { mc_count(); return __libc_valloc(n); }
void *pvalloc(size_t n) { mc_count(); return __libc_pvalloc(n); }

void *reallocarray(void *p, size_t n, size_t size) {
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) { errno = ENOMEM; return NULL; }
    return realloc(p, bytes);
}

void *aligned_alloc(size_t alignment, size_t n) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) { errno = EINVAL; return NULL; }
    mc_count();
    return __libc_memalign(alignment, n);
}

int posix_memalign(void **out, size_t alignment, size_t n) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    mc_count();
    void *p = __libc_memalign(alignment, n);
    if (p == NULL) return ENOMEM;
    *out = p;
    return 0;
}
