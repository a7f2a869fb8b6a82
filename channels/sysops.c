/*
 * channels/sysops.c — futex, clock, membarrier, eventfd, allocation and thread
 * creation behind a replaceable table.
 *
 * FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline, so a wait
 * interrupted by a signal retries with the same deadline instead of
 * recomputing a relative one. Futexes are process-private, except the
 * shared variants, for eventcounts in memory shared between processes
 * (sluice/shm.h). Allocation and thread creation sit in the
 * same table so that tests can make them fail.
 */
#include "internal/sysops.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The deadline as futex(2) and futex_waitv(2) take it: NULL for none. */
static struct timespec *abs_time(struct timespec *ts, uint64_t deadline_ns)
{
    if (deadline_ns == SL_FOREVER)
        return NULL;
    ts->tv_sec = (time_t)(deadline_ns / 1000000000u);
    ts->tv_nsec = (long)(deadline_ns % 1000000000u);
    return ts;
}

static int futex_wait_op(SL_ATOMIC(uint32_t) *word, uint32_t expected, uint64_t deadline_ns,
                         int private_flag)
{
    struct timespec ts;
    long r = syscall(SYS_futex, (void *)word, FUTEX_WAIT_BITSET | private_flag,
                     expected, abs_time(&ts, deadline_ns), NULL, FUTEX_BITSET_MATCH_ANY);
    return r == 0 ? 0 : -errno;
}

static int futex_wake_op(SL_ATOMIC(uint32_t) *word, int count, int private_flag)
{
    SL_FI(); /* a wake delayed behind the waiter's compare */
    long r = syscall(SYS_futex, (void *)word, FUTEX_WAKE | private_flag, count, NULL, NULL, 0);
    return r < 0 ? 0 : (int)r;
}

static int sys_futex_wait(SL_ATOMIC(uint32_t) *word, uint32_t expected, uint64_t deadline_ns)
{
    return futex_wait_op(word, expected, deadline_ns, FUTEX_PRIVATE_FLAG);
}

static int sys_futex_wake(SL_ATOMIC(uint32_t) *word, int count)
{
    return futex_wake_op(word, count, FUTEX_PRIVATE_FLAG);
}

static int sys_futex_wait_shared(SL_ATOMIC(uint32_t) *word, uint32_t expected,
                                 uint64_t deadline_ns)
{
    return futex_wait_op(word, expected, deadline_ns, 0);
}

static int sys_futex_wake_shared(SL_ATOMIC(uint32_t) *word, int count)
{
    return futex_wake_op(word, count, 0);
}

/* The kernel's struct futex_waitv (linux/futex.h since 5.16; spelled out
 * here for older headers), and its 32-bit size flag. */
struct waitv_entry {
    uint64_t val;
    uint64_t uaddr;
    uint32_t flags;
    uint32_t reserved;
};
#define WAITV_U32 0x02u

static int sys_futex_waitv(const sl__futex_word *w, unsigned n, uint64_t deadline_ns)
{
#ifdef SYS_futex_waitv
    struct waitv_entry v[SL__FUTEX_WAITV_MAX];
    if (n == 0 || n > SL__FUTEX_WAITV_MAX)
        return -EINVAL;
    for (unsigned i = 0; i < n; i++)
        v[i] = (struct waitv_entry){w[i].expected, (uint64_t)(uintptr_t)w[i].word,
                                    WAITV_U32 | (w[i].shared ? 0u : FUTEX_PRIVATE_FLAG), 0};
    struct timespec ts;
    long r = syscall(SYS_futex_waitv, v, n, 0, abs_time(&ts, deadline_ns), CLOCK_MONOTONIC);
    return r >= 0 ? (int)r : -errno;
#else
    (void)w, (void)n, (void)deadline_ns;
    return -ENOSYS;
#endif
}

static uint64_t sys_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int sys_membarrier(int cmd)
{
#ifdef SYS_membarrier
    long r = syscall(SYS_membarrier, cmd, 0, 0);
    return r < 0 ? -errno : 0;
#else
    (void)cmd;
    return -ENOSYS;
#endif
}

static int sys_eventfd(unsigned initval)
{
    int fd = eventfd(initval, EFD_NONBLOCK | EFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

static void sys_eventfd_reset(int fd)
{
    uint64_t v;
    /* EAGAIN: it was 0 already. The system call, not read(), which is a
     * cancellation point: a re-arm runs inside sends and receives. */
#ifndef SL_MUTANT_CHANFD_CANCEL_POINTS /* planted bug when defined */
    long r = syscall(SYS_read, fd, &v, sizeof v);
#else
    long r = read(fd, &v, sizeof v);
#endif
    (void)r;
}

static void *sys_alloc(size_t align, size_t size)
{
    return align <= sizeof(max_align_t) ? malloc(size) : aligned_alloc(align, size);
}

static int sys_thread_getattr(pthread_attr_t *attr)
{
    return pthread_getattr_np(pthread_self(), attr);
}

const sl_sys_ops sl__sys_default_ops = {
    .futex_wait = sys_futex_wait,
    .futex_wake = sys_futex_wake,
    .futex_wait_shared = sys_futex_wait_shared,
    .futex_wake_shared = sys_futex_wake_shared,
    .futex_waitv = sys_futex_waitv,
    .now_ns = sys_now_ns,
    .membarrier = sys_membarrier,
    .eventfd = sys_eventfd,
    .eventfd_reset = sys_eventfd_reset,
    .alloc = sys_alloc,
    .thread_create = pthread_create,
    .thread_getattr = sys_thread_getattr,
};

static _Atomic(const sl_sys_ops *) current_ops = &sl__sys_default_ops;

const sl_sys_ops *sl__sys(void)
{
    /* Acquire: a test's table, filled in before sl__sys_set_ops, is seen whole. */
    return atomic_load_explicit(&current_ops, memory_order_acquire);
}

void sl__sys_set_ops(const sl_sys_ops *ops)
{
    atomic_store_explicit(&current_ops, ops ? ops : &sl__sys_default_ops,
                          memory_order_release);
}

/* Entry `name` of table t, or the real call where t has none. */
#define ENTRY(t, name) ((t)->name ? (t)->name : sl__sys_default_ops.name)

int sl__futex_wait(SL_ATOMIC(uint32_t) *word, uint32_t expected, uint64_t deadline_ns)
{
    const sl_sys_ops *t = sl__sys();
    return ENTRY(t, futex_wait)(word, expected, deadline_ns);
}

int sl__futex_wake(SL_ATOMIC(uint32_t) *word, int count)
{
    const sl_sys_ops *t = sl__sys();
    return ENTRY(t, futex_wake)(word, count);
}

int sl__futex_wait_shared(SL_ATOMIC(uint32_t) *word, uint32_t expected, uint64_t deadline_ns)
{
    const sl_sys_ops *t = sl__sys();
    return ENTRY(t, futex_wait_shared)(word, expected, deadline_ns);
}

int sl__futex_wake_shared(SL_ATOMIC(uint32_t) *word, int count)
{
    const sl_sys_ops *t = sl__sys();
    return ENTRY(t, futex_wake_shared)(word, count);
}

int sl__futex_waitv(const sl__futex_word *w, unsigned n, uint64_t deadline_ns)
{
    const sl_sys_ops *t = sl__sys();
    return ENTRY(t, futex_waitv)(w, n, deadline_ns);
}

uint64_t sl__now_ns(void)
{
    const sl_sys_ops *t = sl__sys();
    return ENTRY(t, now_ns)();
}

int sl__membarrier(int cmd)
{
    const sl_sys_ops *t = sl__sys();
    return ENTRY(t, membarrier)(cmd);
}

int sl__eventfd(unsigned initval)
{
    const sl_sys_ops *t = sl__sys();
    return ENTRY(t, eventfd)(initval);
}

void sl__eventfd_reset(int fd)
{
    const sl_sys_ops *t = sl__sys();
    ENTRY(t, eventfd_reset)(fd);
}

void *sl__alloc(size_t align, size_t size)
{
    if (align > 1) {
        if (size > SIZE_MAX - (align - 1))
            return NULL;
        size = (size + align - 1) & ~(align - 1);
    }
    const sl_sys_ops *t = sl__sys();
    return ENTRY(t, alloc)(align, size ? size : 1);
}

void *sl__calloc(size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    void *p = sl__alloc(0, n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

int sl__thread_create(pthread_t *thread, const pthread_attr_t *attr,
                      void *(*start)(void *), void *arg)
{
    const sl_sys_ops *t = sl__sys();
    return ENTRY(t, thread_create)(thread, attr, start, arg);
}

int sl__thread_getattr(pthread_attr_t *attr)
{
    const sl_sys_ops *t = sl__sys();
    return ENTRY(t, thread_getattr)(attr);
}
