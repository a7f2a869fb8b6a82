/*
 * pool_peers.h — the one interface every worker pool in `sl-bench pool` sits
 * behind, and the constructors of the pools.
 *
 * sluice's pool (once per dispatch mode) and every peer are reached through
 * the same table, so the driver's workloads are identical for all of them:
 * the same job functions, the same submit loops, the same wait at the end.
 *
 * Every job of one pool calls the same function, given at create time. That
 * is GThreadPool's shape (one GFunc per pool, a data pointer per job), and
 * the others lose nothing by it: sluice and the mutex pool still store the
 * function with every job, as their users' code does. The job function has
 * the shape of both sl_job_fn and GFunc: (arg, context).
 *
 * Plain C that also compiles as C++ (the oneTBB adapter).
 */
#ifndef SLB_POOL_PEERS_H
#define SLB_POOL_PEERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*slp_job_fn)(void *arg, void *ctx);

typedef struct slp_ops {
    const char *name;  /* shown in the tables and the CSV */
    const char *peer;  /* "sluice", or the peer's id for --peers */
    bool ours;         /* sluice's pool (compared with peers, never with itself) */
    const char *note;  /* how the adapter sizes and waits, printed with --list */
    /* A pool of `workers` threads whose jobs call fn(arg, ctx); NULL when it
     * cannot be made (the driver then dies: a peer that is built must work). */
    void *(*create)(unsigned workers, slp_job_fn fn);
    /* Submits one job. arg is never NULL. Any number of threads at once. */
    void (*submit)(void *pool, void *arg);
    /* Returns once every job submitted so far has returned; `submitted` is
     * how many jobs the driver submitted since create (adapters whose pool
     * cannot tell count against it). Acts as acquire: what the jobs wrote is
     * visible to the caller. Called by one thread, after every submit has
     * returned. */
    void (*wait_idle)(void *pool, uint64_t submitted);
    /* Stops the workers and frees the pool; only after wait_idle. */
    void (*destroy)(void *pool);
} slp_ops;

/* Each returns a NULL-terminated list of static tables. */
typedef const slp_ops *const *(*slp_peer_fn)(void);
const slp_ops *const *slp_pools_sluice(void); /* pool_sluice.c: one per dispatch mode */
const slp_ops *const *slp_pools_mutex(void);  /* pool_mutex.c: always built */
const slp_ops *const *slp_pools_glib(void);   /* pool_glib.c: GThreadPool */
const slp_ops *const *slp_pools_tbb(void);    /* pool_tbb.cpp: arena.enqueue, task_group.run */

#ifdef __cplusplus
}
#endif

#endif /* SLB_POOL_PEERS_H */
