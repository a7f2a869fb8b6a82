/*
 * internal/sysops.h — the system layer under sluice (internal).
 *
 * Every futex, clock, membarrier, eventfd, allocation and thread-creation call sluice
 * makes goes through one table of function pointers, so that tests can
 * replace it to inject spurious wake-ups, EINTR, early time-outs, delays,
 * allocation and thread-creation failures, or to count system calls.
 * Production code never replaces it. A replacement table may leave any entry
 * NULL: that entry then uses the real call.
 */
#ifndef SLUICE_INTERNAL_SYSOPS_H
#define SLUICE_INTERNAL_SYSOPS_H

#include "sluice/base.h"

#include <pthread.h>
#include <stddef.h>

/* One futex word of a futex_waitv: sleep while *word equals expected; shared
 * 0 for a process-private futex, 1 for one in memory shared between
 * processes (no FUTEX_PRIVATE_FLAG). */
typedef struct sl__futex_word {
    SL_ATOMIC(uint32_t) *word;
    uint32_t expected;
    uint32_t shared;
} sl__futex_word;

/* futex_waitv(2) takes at most this many words. */
#define SL__FUTEX_WAITV_MAX 128u

typedef struct sl_sys_ops {
    /* FUTEX_WAIT on *word while it equals expected, until the absolute
     * CLOCK_MONOTONIC deadline (SL_FOREVER: none). Returns 0 when woken (or
     * spuriously), -EAGAIN if *word != expected, -EINTR, or -ETIMEDOUT. */
    int (*futex_wait)(SL_ATOMIC(uint32_t) *word, uint32_t expected, uint64_t deadline_ns);
    /* FUTEX_WAKE up to count waiters on word; returns how many woke (>= 0). */
    int (*futex_wake)(SL_ATOMIC(uint32_t) *word, int count);
    /* The same two on a word in memory shared between processes: without
     * FUTEX_PRIVATE_FLAG, so the kernel keys them by the mapped object and a
     * wake reaches waiters in other processes (sluice/shm.h). */
    int (*futex_wait_shared)(SL_ATOMIC(uint32_t) *word, uint32_t expected, uint64_t deadline_ns);
    int (*futex_wake_shared)(SL_ATOMIC(uint32_t) *word, int count);
    /* futex_waitv(2) (Linux 5.16) on n words, 1 <= n <= SL__FUTEX_WAITV_MAX,
     * until the absolute CLOCK_MONOTONIC deadline (SL_FOREVER: none):
     * sleeps while every word equals its expected value. Returns the index
     * of a woken word (>= 0; or spuriously), -EAGAIN if a word differs,
     * -EINTR, -ETIMEDOUT, or -ENOSYS where the kernel lacks it (the caller
     * then falls back: channels/park.c, sl__event_set). */
    int (*futex_waitv)(const sl__futex_word *w, unsigned n, uint64_t deadline_ns);
    /* CLOCK_MONOTONIC in nanoseconds. */
    uint64_t (*now_ns)(void);
    /* membarrier(2) with `cmd` and no flags; 0 on success, -errno otherwise. */
    int (*membarrier)(int cmd);
    /* eventfd(initval, EFD_NONBLOCK | EFD_CLOEXEC): the descriptor, or
     * -errno (EMFILE, ENFILE, ENOMEM, ...). For sl_chan_fd (chanfd.c). */
    int (*eventfd)(unsigned initval);
    /* Resets the eventfd fd to 0 (a read of its counter; EAGAIN when it was
     * 0 already is success). For an event-loop descriptor's re-arm. */
    void (*eventfd_reset)(int fd);
    /* aligned_alloc(align, size): size is a multiple of align; NULL when out
     * of memory. Memory is given back with free(). */
    void *(*alloc)(size_t align, size_t size);
    /* pthread_create, with its return value. */
    int (*thread_create)(pthread_t *thread, const pthread_attr_t *attr,
                         void *(*start)(void *), void *arg);
    /* pthread_getattr_np for the calling thread, with its return value (it
     * fails where /proc/self/maps cannot be read, for the main thread). */
    int (*thread_getattr)(pthread_attr_t *attr);
} sl_sys_ops;

/* The real system calls. */
extern const sl_sys_ops sl__sys_default_ops;

/* The table in use. */
const sl_sys_ops *sl__sys(void);

/* Replaces the table; NULL restores the default. Tests only: call it while no
 * thread is inside sluice. */
void sl__sys_set_ops(const sl_sys_ops *ops);

/* The table's entries, with the real call where the table has none: sluice
 * calls these, never the table's members directly, so that a table with NULL
 * entries is safe to install. */
int sl__futex_wait(SL_ATOMIC(uint32_t) *word, uint32_t expected, uint64_t deadline_ns);
int sl__futex_wake(SL_ATOMIC(uint32_t) *word, int count);
int sl__futex_wait_shared(SL_ATOMIC(uint32_t) *word, uint32_t expected, uint64_t deadline_ns);
int sl__futex_wake_shared(SL_ATOMIC(uint32_t) *word, int count);
int sl__futex_waitv(const sl__futex_word *w, unsigned n, uint64_t deadline_ns);
uint64_t sl__now_ns(void);
int sl__membarrier(int cmd);
int sl__eventfd(unsigned initval);
void sl__eventfd_reset(int fd);
/* All allocation in sluice goes through these: sl__alloc(align, size) rounds size
 * up to a multiple of align (align: a power of two; 0 means malloc's own);
 * sl__calloc zeroes and returns NULL when n * size overflows. */
void *sl__alloc(size_t align, size_t size);
void *sl__calloc(size_t n, size_t size);
int sl__thread_create(pthread_t *thread, const pthread_attr_t *attr,
                      void *(*start)(void *), void *arg);
int sl__thread_getattr(pthread_attr_t *attr);

#endif /* SLUICE_INTERNAL_SYSOPS_H */
