/*
 * internal/sysops.h — the system-call layer under the parking code (internal).
 *
 * Every futex and clock call sluice makes goes through one table of function
 * pointers, so that tests can replace it to inject spurious wake-ups, EINTR,
 * early time-outs and delays, or to count system calls. Production code never
 * replaces it.
 */
#ifndef SLUICE_INTERNAL_SYSOPS_H
#define SLUICE_INTERNAL_SYSOPS_H

#include "sluice/base.h"

typedef struct sl_sys_ops {
    /* FUTEX_WAIT on *word while it equals expected, until the absolute
     * CLOCK_MONOTONIC deadline (SL_FOREVER: none). Returns 0 when woken (or
     * spuriously), -EAGAIN if *word != expected, -EINTR, or -ETIMEDOUT. */
    int (*futex_wait)(SL_ATOMIC(uint32_t) *word, uint32_t expected, uint64_t deadline_ns);
    /* FUTEX_WAKE up to count waiters on word; returns how many woke (>= 0). */
    int (*futex_wake)(SL_ATOMIC(uint32_t) *word, int count);
    /* CLOCK_MONOTONIC in nanoseconds. */
    uint64_t (*now_ns)(void);
    /* membarrier(2) with `cmd` and no flags; 0 on success, -errno otherwise. */
    int (*membarrier)(int cmd);
} sl_sys_ops;

/* The real system calls. */
extern const sl_sys_ops sl__sys_default_ops;

/* The table in use. */
const sl_sys_ops *sl__sys(void);

/* Replaces the table; NULL restores the default. Tests only: call it while no
 * thread is inside sluice. */
void sl__sys_set_ops(const sl_sys_ops *ops);

#endif /* SLUICE_INTERNAL_SYSOPS_H */
