/*
 * ipc.h — `sl-bench ipc`'s runs (ipc_run.c) as its driver (ipc.c) sees them.
 */
#ifndef SLB_IPC_H
#define SLB_IPC_H

#include "bench.h"

/* A contender and where its peer runs. */
typedef struct ipc_contender {
    const slb_ops *ops;
    bool forked;           /* peer in a child process; else a thread */
    bool baseline;         /* sluice's in-process channel: the round trip's yardstick */
} ipc_contender;

/* Per contender and workload, over its rounds: how often the two sides went
 * to sleep (gave up their CPU waiting), which is what separates a channel
 * that hands over in memory from one that goes through the scheduler. */
typedef struct ipc_tally {
    uint64_t sleeps, moved;
} ipc_tally;

/* The page both sides of every run share (the start gate, the peer's counts):
 * mapped once, before any fork. Exits when it cannot be mapped. */
typedef struct ipc_shared ipc_shared;
ipc_shared *slb_ipc_shared_new(void);
void slb_ipc_shared_free(ipc_shared *sh);

/* One run of r (test SLB_PINGPONG or SLB_TPUT; tput sends for run_ns) with
 * c's peer in a forked process or a thread; the timing side is the calling
 * thread. Fills out (p50/p99/p99.9 ns, or Mmsg/s) and adds the run's sleeps
 * and messages to tally. False when the queue cannot be created (n/a). Any
 * failed check stops sl-bench (slb_die, status 2); a hang is the watchdog's
 * (status 3), which takes a forked peer with it. */
bool slb_ipc_run(const ipc_contender *c, const slb_run *r, uint64_t run_ns, ipc_shared *sh,
                 slb_result *out, ipc_tally *tally);

#endif /* SLB_IPC_H */
