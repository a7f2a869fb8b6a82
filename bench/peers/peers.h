/*
 * peers.h — the constructors of the peer adapters.
 *
 * Each returns a NULL-terminated list of contender tables (see contender.h).
 * CMake compiles an adapter only when its library is installed and then
 * defines SLB_HAVE_<PEER>=1; the driver lists the others as skipped. The
 * Rust and Go peers are programs of their own, built when their toolchain
 * and crates are found (SLB_HAVE_RUST, SLB_HAVE_GO).
 */
#ifndef SLB_PEERS_H
#define SLB_PEERS_H

#include "contender.h"

#ifdef __cplusplus
extern "C" {
#endif

const slb_ops *const *slb_peers_sluice(void);     /* ours: bench/contenders.c */
const slb_ops *const *slb_peers_sluice_select(void); /* ours: bench/select_contenders.c */
const slb_ops *const *slb_peers_mutex(void);      /* always built: the baseline */
const slb_ops *const *slb_peers_ck(void);         /* Concurrency Kit ck_ring */
const slb_ops *const *slb_peers_boost(void);      /* Boost.Lockfree */
const slb_ops *const *slb_peers_moodycamel_rwq(void); /* moodycamel SPSC queues */
const slb_ops *const *slb_peers_moodycamel_cq(void);  /* moodycamel ConcurrentQueue */
const slb_ops *const *slb_peers_atomic_queue(void);   /* atomic_queue AtomicQueueB2 */
const slb_ops *const *slb_peers_tbb(void);        /* oneTBB */
const slb_ops *const *slb_peers_urcu(void);       /* liburcu cds_wfcq */
const slb_ops *const *slb_peers_glib(void);       /* GLib GAsyncQueue */
const slb_ops *const *slb_peers_xenium(void);     /* xenium nikolaev_bounded_queue */
/* In their own processes (bench/remote.c), tables in peers/processes.c: */
const slb_ops *const *slb_peers_crossbeam(void);  /* Rust crossbeam-channel */
const slb_ops *const *slb_peers_flume(void);      /* Rust flume */
const slb_ops *const *slb_peers_go(void);         /* Go channels */
/* Between processes, for `sl-bench ipc` only (bench/ipc.c): */
const slb_ops *const *slb_peers_kernel_ipc(void); /* pipe, Unix dgram, POSIX mq */
const slb_ops *const *slb_peers_line_ceiling(void); /* a bare ring: the machine's yardstick */
/* Ours, SLB_HAVE_SHM (contenders_shm.c): the shared-memory channel between
 * processes, the same between threads, and the select row's yardstick (an
 * in-process channel through the same selects, between threads). */
const slb_ops *const *slb_peers_sluice_shm(void);
const slb_ops *const *slb_peers_sluice_shm_threads(void);
const slb_ops *const *slb_peers_sluice_select_threads(void);

/* Smallest power of two >= n (n >= 1); ring-based peers need one. */
static inline size_t slb_pow2(size_t n)
{
    size_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

#ifdef __cplusplus
}
#endif

#endif /* SLB_PEERS_H */
