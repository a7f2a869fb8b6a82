/*
 * contender.h — the one interface every queue in sl-bench sits behind.
 *
 * sluice's own flavours and every peer library are reached through the same
 * table of function pointers, so that the driver's loops, the verification
 * and the per-operation overhead (one indirect call) are identical for all of
 * them: a difference in the table is a difference in the queues.
 *
 * Peers written in C++ implement this table in an `extern "C"` adapter; the
 * header is therefore plain C that also compiles as C++.
 */
#ifndef SLB_CONTENDER_H
#define SLB_CONTENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kind decides which loop drives a contender and which peers it is
 * compared with: SPSC contenders against SPSC peers, and so on. */
typedef enum slb_kind {
    SLB_SPSC = 0,     /* one producer, one consumer; try operations, spinning */
    SLB_MPMC = 1,     /* any producers and consumers; try operations, spinning */
    SLB_BLOCKING = 2, /* blocking push/pop: the thread sleeps while it waits */
    /* A bounded ring that never refuses a push: when full it displaces its
     * oldest message (push_evict). Not a queue in the sense of the kinds
     * above — messages are lost by design — so it runs only the overwrite
     * workload, against overwrite peers. */
    SLB_OVERWRITE = 3,
    /* Select over a pair of bounded channels: push sends on whichever has
     * room, sel_pop receives from whichever has a message, both blocking.
     * Runs only the select workload, against select peers. */
    SLB_SELECTING = 4,
    SLB_KINDS
} slb_kind;

enum {
    /* Promises FIFO order per producer: consumers then check that each
     * producer's sequence numbers only go up. Without it only the count and
     * the checksum are checked. */
    SLB_FIFO = 1u << 0,
    /* Ignores the capacity and grows with the backlog (noted in the table). */
    SLB_UNBOUNDED = 1u << 1,
    /* One of sluice's own contenders rather than a peer. */
    SLB_OURS = 1u << 2,
    /* Safe with one producer and one consumer only (kind blocking may be). */
    SLB_SINGLE = 1u << 3,
    /* Blocking kind: capacity 0 makes a rendezvous channel (a send completes
     * when a receiver takes the message); runs the rendezvous workload. */
    SLB_RENDEZVOUS_OK = 1u << 4,
    /* A measurement of the machine, not a queue (peers/line_ceiling.c):
     * shown in the tables, never the best peer, never judged. */
    SLB_YARDSTICK = 1u << 5,
    /* Every blocking call is an sl_select beside a never-ready in-process
     * channel: compared only with a contender that does the same. */
    SLB_VIA_SELECT = 1u << 6,
    /* Its two ends may share one thread in a one-to-one run (1x1 and the
     * latency workloads): Go's scheduler runs goroutines, which cannot be
     * pinned, and may hand over without crossing cores. Such a figure is
     * shown there but is never the best peer and never judged (report.c). */
    SLB_MAY_SHARE_THREAD = 1u << 7,
};

/*
 * One contender. `q` is what create returned; `h` is what attach returned for
 * the calling thread (NULL when the contender has no attach, and also NULL
 * when the driver drains a queue from its own thread after a run — adapters
 * must accept that). Every message is elem_size bytes, copied in and out.
 */
typedef struct slb_ops {
    const char *name;  /* shown in the table and the CSV */
    const char *peer;  /* "sluice", or the peer's id for --peers ("ck", "boost", …) */
    slb_kind kind;
    unsigned flags;    /* the SLB_* flags above */
    const char *note;  /* how the capacity is honoured, printed under the table */
    /* Ours only: the sl_flavor exercised (1 SL_SPSC, 2 SL_MPMC, 3 SL_LIST,
     * 4 SL_RING), which --flavor selects by; 0 for peers. A number rather
     * than sluice's enum keeps this header free of sluice (C++ adapters). */
    unsigned flavor;

    /* NULL when the size is not supported (or out of memory): the driver
     * then shows the row as n/a instead of failing. */
    void *(*create)(size_t capacity, size_t elem_size);
    void (*destroy)(void *q);
    /* Optional per-thread state (moodycamel's tokens); NULL if not needed. */
    void *(*attach)(void *q, bool producer);
    void (*detach)(void *q, void *h);

    /* Non-blocking: false means full (push) or empty (pop). Required, except
     * try_push for SLB_OVERWRITE (which pushes with push_evict). */
    bool (*try_push)(void *q, void *h, const void *msg);
    bool (*try_pop)(void *q, void *h, void *out);
    /* Blocking: wait for room or a message. Required for SLB_BLOCKING.
     * false means the queue failed (the driver aborts). */
    bool (*push)(void *q, void *h, const void *msg);
    bool (*pop)(void *q, void *h, void *out);
    /* Batches of up to n messages, contiguous; return how many moved.
     * Optional: only contenders that have them run the batch workloads. */
    size_t (*push_n)(void *q, void *h, const void *msgs, size_t n);
    size_t (*pop_n)(void *q, void *h, void *out, size_t n);
    /* SLB_OVERWRITE only (required there): stores msg, never refuses. Returns
     * true when the queue was full and its oldest message was displaced into
     * `evicted` (elem_size bytes), so that the driver can verify it. */
    bool (*push_evict)(void *q, void *h, const void *msg, void *evicted);
    /* SLB_SELECTING only (required there; `q` is the pair create made, push
     * its blocking select-send): receives from whichever channel of the
     * pair has a message into `out` and returns 1 + that channel's index
     * (1 or 2), so that order is checked per channel; with block false it
     * returns 0 at once when both are empty. */
    unsigned (*sel_pop)(void *q, void *h, void *out, bool block);

    /* A peer in another language runs in its own process: `program` (built
     * next to sl-bench) is started for every run with `variant` and the
     * run's parameters, and runs, times and verifies the workload itself
     * (bench/remote.c has the protocol). Such a contender has none of the
     * operations above and runs the tput, pingpong, select and rendezvous
     * workloads only. NULL
     * for in-process contenders. */
    const char *program;
    const char *variant;
} slb_ops;

/* Each peer adapter exposes one constructor returning its contenders as a
 * NULL-terminated list of static tables. */
typedef const slb_ops *const *(*slb_peer_fn)(void);

/* Adapters call this when the library under test reports something that can
 * only be a bug (an unexpected status): it prints the contender's name and
 * exits with status 2. */
#ifdef __cplusplus
[[noreturn]]
#else
_Noreturn
#endif
void slb_die(const char *who, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif

#endif /* SLB_CONTENDER_H */
