/*
 * pool/pool_impl.h — the worker pool's insides, shared by its files:
 *
 *   pool_queue.c   the job queues: priority levels x inboxes of SL_LIST
 *   pool_ring.c    a worker slot's batch ring: jobs taken, not yet started
 *   pool_keys.c    the key table: which keys are busy, jobs waiting per key
 *   idle.c         (shared with the executor) idle workers: who searches, who
 *                  sleeps, who wakes whom; the wake policy and its argument
 *   pool_core.c    the shared bookkeeping: `pending` and its waiters,
 *                  discards, pushing a job and making sure a worker will
 *                  look, a key's next job, the floor, poking the control
 *                  thread
 *   pool_submit.c  submitting: the `pending` reservation, back-pressure, keys
 *   pool_worker.c  a worker thread: spawn, take, run, leave, die
 *   pool_park.c    a worker out of work: search, park, retire
 *   pool_ctl.c     the control thread: spawns, joins, sweeps, completes commands
 *   pool.c         new/free, the commands, waits, stats
 *
 * The files are layered: each calls only files below it, skipping levels
 * where it needs to (pool.c also calls the worker file, the core and the
 * bottom row; the control thread the core, the queue and the key table;
 * the worker file the core and the bottom row), so the call graph between
 * them has no cycle:
 *
 *                 pool.c              starts the control thread, the first workers
 *                   |
 *               pool_ctl.c            starts the other workers (sl__pool_spawn)
 *                   |
 *             pool_worker.c
 *                   |
 *              pool_park.c    pool_submit.c
 *                      \        /
 *                     pool_core.c
 *                     /    |     \
 *   pool_queue.c  pool_ring.c  pool_keys.c  idle.c  (and the parking layer)
 *
 * Whatever two of the upper files share lives in the core; none of them
 * calls another sideways.
 *
 * The hot path (a keyless submit, a worker taking a job) is lock-free: one
 * reservation on `pending`, one push on an SL_LIST, and the idle component's
 * cheap check (a fence and a load while someone searches). A worker takes up
 * to SL__POOL_BATCH jobs per pop from the lists (one decrement of `pending`
 * for all) and keeps the rest in its slot's ring, where each costs one CAS
 * on a line of its own and the others can steal them.
 * Everything rare — commands, spawning and joining threads, keyed jobs —
 * goes through a mutex or the control thread.
 */
#ifndef SLUICE_POOL_IMPL_H
#define SLUICE_POOL_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "idle.h"
#include "sluice/list.h"
#include "sluice/park.h"
#include "sluice/pool.h"

/* pending's top bit: the pool is shut down and accepts nothing. Kept in the
 * same word as the count so that a submit's reservation and shutdown are
 * ordered by one read-modify-write each: every reservation either precedes
 * the shutdown (and is counted, so the drain or cancel waits for it) or sees
 * the bit and takes nothing. */
#define SL__PENDING_CLOSED (UINT64_C(1) << 63)
#define SL__PENDING_COUNT(v) ((v) & ~SL__PENDING_CLOSED)

/* What the workers may do now (run_state). */
enum sl__pool_run {
    SL__RUN_STOPPED,    /* take nothing; park */
    SL__RUN_RUNNING,    /* take and run jobs */
    SL__RUN_DRAINING,   /* shutdown(SL_DRAIN): run what is queued, then exit */
    SL__RUN_CANCELLING, /* shutdown(SL_CANCEL) or free: take nothing, exit */
};

/* The command in progress (cmd), completed by the control thread. */
enum sl__pool_cmd {
    SL__CMD_NONE,
    SL__CMD_START,
    SL__CMD_STOP,
    SL__CMD_WORKERS,
    SL__CMD_RESET,
    SL__CMD_SHUTDOWN,
};

/* Why a worker thread ended. */
enum sl__pool_end { SL__END_NONE, SL__END_RETIRED, SL__END_SHUTDOWN, SL__END_DIED };

typedef struct sl__pool_worker sl__pool_worker;

/* ---- job queues (pool_queue.c) ------------------------------------------- */

/* levels x inboxes lists of sl_job; inboxes == 1 for the shared queue. */
typedef struct sl__pool_queue {
    sl_list *lists; /* [inbox * levels + level] */
    unsigned levels, inboxes;
} sl__pool_queue;

sl_status sl__pool_queue_init(sl__pool_queue *q, unsigned levels, unsigned inboxes);
void sl__pool_queue_destroy(sl__pool_queue *q);
/* Pushes job into inbox's list of its level. SL_OK or SL_ENOMEM. */
sl_status sl__pool_queue_push(sl__pool_queue *q, unsigned inbox, const sl_job *job);
/* max == 1: pops the highest-priority job, own inbox first at each level,
 * then the others'. max > 1: pops up to max jobs of the top level only (a
 * batch never holds a job ahead of a higher one that comes later), all from
 * one inbox. Returns how many went to out[] (0: every list it looked at was
 * empty); the inbox they came from goes to *from. */
unsigned sl__pool_queue_pop(sl__pool_queue *q, unsigned own, sl_job *out, unsigned max,
                            unsigned *from);
/* The lists one by one, for a sweep (pool_ctl.c): there are
 * sl__pool_queue_lists of them. len_at: jobs in list i now, a snapshot.
 * pop_at: its oldest job into *out, its inbox into *from; false when it
 * is empty. */
static inline size_t sl__pool_queue_lists(const sl__pool_queue *q)
{
    return (size_t)q->levels * q->inboxes;
}
size_t sl__pool_queue_len_at(const sl__pool_queue *q, size_t i);
/* Whether some list of a level above `level` holds a job now (a snapshot). */
bool sl__pool_queue_any_above(const sl__pool_queue *q, unsigned level);
bool sl__pool_queue_pop_at(sl__pool_queue *q, size_t i, sl_job *out, unsigned *from);
/* Whether some list holds a job a pop could take now (or a push that has
 * claimed its slot and is about to publish: a pop then poisons the slot and
 * the list reads empty again). Reads each list's indices with seq_cst loads
 * after its push's seq_cst RMW, so a job pushed before a full barrier is
 * seen after it. O(levels x inboxes), no writes to shared lines but the
 * caller's own epoch announcement. */
bool sl__pool_queue_any(const sl__pool_queue *q);

/* ---- batch rings (pool_ring.c) ------------------------------------------ */

/* The most jobs a worker takes from the lists at once. */
#define SL__POOL_BATCH 16u

/* A job in a ring, as relaxed atomics: a thief may copy an entry while its
 * owner refills it, and then throws the copy away (pool_ring.c). */
typedef struct sl__pool_ring_entry {
    SL_ATOMIC(uintptr_t) fn, arg;
    SL_ATOMIC(uint64_t) key;
    SL_ATOMIC(uint64_t) prio_flags; /* priority | flags << 32 */
} sl__pool_ring_entry;

/* Jobs [head, tail) (indices mod SL__POOL_BATCH) were taken from the lists
 * by the slot's occupant and not yet started. Single filler, any claimers. */
typedef struct sl__pool_ring {
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint32_t) head; /* next to claim (CAS) */
    SL_ATOMIC(uint32_t) tail;                          /* the filler's only */
    sl__pool_ring_entry e[SL__POOL_BATCH];
} sl__pool_ring;

void sl__pool_ring_init(sl__pool_ring *r);
/* Jobs in r: exact for the filler (its fills are the only writes of
 * tail), a snapshot for others (a refill between the loads reads as 0).
 * Inline: the owner asks around every job of a batch. */
static inline unsigned sl__pool_ring_len(const sl__pool_ring *r)
{
    uint32_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    uint32_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
    return (uint32_t)(t - h) <= SL__POOL_BATCH ? (unsigned)(t - h) : 0;
}
/* The priority of r's oldest job into *level; false when r is empty. A
 * snapshot for choosing which work to take first: a claim after it may get
 * nothing, or (if the ring was emptied and refilled meanwhile) other jobs. */
static inline bool sl__pool_ring_front_level(const sl__pool_ring *r, unsigned *level)
{
    /* Acquire, both: the entry below is the one the tail published. */
    uint32_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    uint32_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (t == h || (uint32_t)(t - h) > SL__POOL_BATCH)
        return false; /* empty, or a refill between the loads */
    const sl__pool_ring_entry *e = &r->e[h % SL__POOL_BATCH];
    *level = (unsigned)(atomic_load_explicit(&e->prio_flags, memory_order_relaxed) & UINT32_MAX);
    return true;
}
/* The filler only, r empty: publishes jobs[0..n), 1 <= n <= SL__POOL_BATCH. */
void sl__pool_ring_fill(sl__pool_ring *r, const sl_job *jobs, unsigned n);
/* Claims the oldest jobs — up to max, or half of them (rounded up) with
 * half — into out[]: how many, 0 when r is empty. *emptied: this claim took
 * the last one (the caller then calls sl__pool_ring_emptied). Lock-free;
 * seq_cst. Inline: the owner claims around every job of its batch (the
 * protocol is pool_ring.c's). */
static inline unsigned sl__pool_ring_claim(sl__pool_ring *r, sl_job *out, unsigned max,
                                           bool half, bool *emptied)
{
    /* Acquire, both: the tail's entries are visible; and the head load
     * pairs with the release of the CAS below as the owner reads it before
     * a refill, so that every copy of an entry is done before it is
     * overwritten. */
    uint32_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    for (;;) {
        uint32_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
        uint32_t len = t - h;
        if (len == 0)
            return 0;
        if (len > SL__POOL_BATCH) { /* h is older than a refill: look again */
            h = atomic_load_explicit(&r->head, memory_order_acquire);
            continue;
        }
        unsigned k = half ? (len + 1) / 2 : len;
        k = k < max ? k : max;
        for (unsigned i = 0; i < k; i++) {
            const sl__pool_ring_entry *e = &r->e[(h + i) % SL__POOL_BATCH];
            uint64_t pf = atomic_load_explicit(&e->prio_flags, memory_order_relaxed);
            out[i].fn = (sl_job_fn)atomic_load_explicit(&e->fn, memory_order_relaxed);
            out[i].arg = (void *)atomic_load_explicit(&e->arg, memory_order_relaxed);
            out[i].key = atomic_load_explicit(&e->key, memory_order_relaxed);
            out[i].priority = (unsigned)(pf & UINT32_MAX);
            out[i].flags = (unsigned)(pf >> 32);
        }
        SL_FI();
#ifdef SL_MUTANT_POOL_CLAIM_STORE
        atomic_store_explicit(&r->head, h + k, memory_order_seq_cst); /* planted bug: no CAS */
        *emptied = h + k == t;
        return k;
#endif
        /* seq_cst: a claim that empties the ring is followed by the
         * decrement of rings_busy, whose readers must not see the count
         * without the claim (sl__pool_has_work); release for the copy above
         * (see the head load). */
        if (atomic_compare_exchange_weak_explicit(&r->head, &h, h + k, memory_order_seq_cst,
                                                  memory_order_acquire)) {
            /* tail cannot have moved while h < t: fills wait for empty. */
            *emptied = h + k == t;
            return k;
        }
    }
}

/* ---- key table (pool_keys.c) --------------------------------------------- */

typedef struct sl__pool_key_job sl__pool_key_job; /* a job waiting for its key */
typedef struct sl__pool_key_entry {
    uint64_t key;                  /* 0: free slot */
    sl__pool_key_job *head, *tail; /* waiting jobs, in submission order */
    bool reporting;                /* the holder is in its on_discard report */
} sl__pool_key_entry;

typedef struct sl__pool_keys {
    pthread_mutex_t lock;
    sl__pool_key_entry *slots; /* open addressing, linear probing */
    size_t mask, used;
    /* Jobs waiting for their key (written under lock, read lock-free by
     * workers deciding whether the lists hold anything). */
    SL_ATOMIC(uint64_t) waiting;
    /* Jobs a key's release took from its list and not yet pushed: in no
     * place a sweep looks (sl__pool_keys_take_waiting waits for them). */
    SL_ATOMIC(unsigned) handing;
} sl__pool_keys;

sl_status sl__pool_keys_init(sl__pool_keys *k);
void sl__pool_keys_destroy(sl__pool_keys *k);
/* Admits a keyed job: SL_OK when its key was free (the key is now busy and
 * the caller queues the job); SL_FULL when the key is busy (the job was
 * stored to wait for it — the caller is done); SL_EXISTS for SL_JOB_UNIQUE
 * on a key with a job queued or running; SL_ENOMEM. */
sl_status sl__pool_keys_admit(sl__pool_keys *k, const sl_job *job);
/* Whether job is SL_JOB_UNIQUE and admission would refuse it now (a
 * snapshot, for a submit that found no room: refused at once, not after a
 * wait for room it would not use). Takes the lock. */
bool sl__pool_keys_refuse(sl__pool_keys *k, const sl_job *job);
/* The job holding key will not run: it is being reported to on_discard,
 * and keeps the key until sl__pool_keys_release. Meanwhile it is neither
 * queued nor running, so SL_JOB_UNIQUE admits a job of the key (to wait
 * for the report) if none waits already. */
void sl__pool_keys_reporting(sl__pool_keys *k, uint64_t key);
/* The job holding key is over (ran, died or was discarded): true with the
 * key's next waiting job in *next (the key stays busy for it; the caller
 * pushes it, then calls sl__pool_keys_handed), or false after freeing the
 * key. */
bool sl__pool_keys_release(sl__pool_keys *k, uint64_t key, sl_job *next);
/* The job that sl__pool_keys_release handed out is in the queues. */
void sl__pool_keys_handed(sl__pool_keys *k);
/* Detaches every job waiting for its key (not the ones holding keys) and
 * returns them as a list for sl__pool_keys_drop_list; the keys stay busy
 * until their holders are over. Returns once every job that a release took
 * from a key's list before it is in the queues, so that a sweep after it
 * finds each job that was waiting when it began, here or there. */
sl__pool_key_job *sl__pool_keys_take_waiting(sl__pool_keys *k);
/* Visits and frees a list from sl__pool_keys_take_waiting. */
void sl__pool_keys_drop_list(sl__pool_key_job *list, void (*visit)(const sl_job *, void *),
                             void *ctx);

/* ---- the pool ------------------------------------------------------------ */

/* One inbox slot per possible worker. A worker owns the slot it was given at
 * spawn; the slot (and its inbox) outlives it. */
typedef struct sl__pool_slot {
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(sl__pool_worker *) worker; /* NULL: vacant */
    /* The ring holds a batch its worker left behind (it retired, died or
     * exited with jobs in it; pool_worker.c, adopt); cleared by the next
     * occupant, or by whoever finds the ring empty. Counted in `orphans`. */
    SL_ATOMIC(unsigned) orphaned;
    /* Least-loaded's count: jobs in this inbox, and in this slot's batch
     * ring, not yet taken to run (sl__pool_count_moved). A line apart from
     * `worker`, which round-robin's pick reads at every submit and which
     * changes only when a worker comes or goes, where `running` changes
     * twice a job: together, every submit fetched the line from the
     * occupant's core. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint64_t) load;
    /* The occupant is running a job. Here rather than in the worker so that
     * dispatch, stats and wait_idle read it without touching a worker that
     * may be exiting; written only by the occupant. */
    SL_ATOMIC(unsigned) running;
    sl__pool_ring ring; /* the occupant's batch; outlives it like the inbox */
} sl__pool_slot;

struct sl__pool_worker {
    /* Written by the worker, read by stats and the control thread: its own
     * line, so that workers do not slow each other down. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(unsigned) active; /* in a run of jobs (see stop) */
    SL_ATOMIC(unsigned) parked;    /* asleep in the kernel */
    SL_ATOMIC(uint64_t) completed; /* jobs run to the end */
    /* The worker's own (plain: read by its cleanup handler, same thread). */
    sl_pool *pool;
    unsigned id, slot;             /* slot: also its idle slot (pool->idle) */
    pthread_t thread;
    void *ctx;                     /* from worker_init */
    sl_job job;                    /* the job running now, when has_job */
    bool has_job, init_done, fini_done;
    bool reporting;                /* holds a count in pool->reporting (a death's report) */
    bool reported;                 /* on_discard called for the death's job (report_death) */
    bool vacated;                  /* left its slot and the live count (worker_vacate) */
    bool counted;                  /* still counted in pool->live */
    bool searching;                /* holds a count in pool->idle's searching (idle.h) */
    enum sl__pool_end end;         /* work()'s result; a field, not a local, because the
                                      cleanup region is a setjmp (-Wclobbered) */
    sl__pool_worker *next_exited;  /* the control thread's join list */
};

struct sl_pool {
    /* Submitters and workers: the reservation count, the idle workers
     * (searchers, sleepers, one eventcount per worker slot: idle.h). */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint64_t) pending; /* accepted, not started | CLOSED */
    sl__idle idle;                 /* max_workers slots; its count has a line of its own */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(unsigned) rr; /* deals each submitting thread its first inbox */
    /* Slots whose ring is not empty: written per batch by workers, read by
     * searchers and park re-checks (sl__pool_has_work); its own line, so
     * that submitters, who never read it, are not disturbed. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint64_t) rings_busy;
    /* Read on every take, written by commands only. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(int) run_state; /* enum sl__pool_run */
    /* Slots flagged `orphaned`; read at every fresh take, written only when
     * a worker leaves a batch behind and when that batch is gone. */
    SL_ATOMIC(unsigned) orphans;
    SL_ATOMIC(unsigned) live;      /* worker threads counted alive */
    SL_ATOMIC(unsigned) target;    /* set_workers */
    SL_ATOMIC(int) cmd_waiting;    /* the control thread waits for workers to go idle */
    SL_ATOMIC(int) spawn_req;      /* a submit found no idle worker */
    SL_ATOMIC(int) busy;           /* a command is in progress */
    SL_ATOMIC(int) state;          /* sl_pool_state, as reported */
    sl_event space_ev;             /* submitters waiting for room */
    sl_event idle_ev;              /* wait_idle, and pending reaching 0 */
    sl_event ready_ev;             /* wait_ready */
    sl_event ctl_ev;               /* the control thread */
    SL_ATOMIC(uint64_t) discarded, completed_gone, spawned, retired, respawned, died;
    /* Reports in progress of jobs that have left every other place wait_idle
     * looks: a swept job out of `pending` (pool_ctl.c, sweep_popped), a
     * dead worker's job out of its slot's `running` (pool_worker.c,
     * worker_died). wait_idle is not done while it is non-zero. */
    SL_ATOMIC(unsigned) reporting;

    sl__pool_queue queue;
    sl__pool_keys keys;
    sl__pool_slot *slots;          /* max_workers of them */
    sl_pool_opts opts;             /* as given, defaults filled in */
    char name[32];
    unsigned levels;
    unsigned spin_limit;           /* searchers at once: online CPUs / 2, at least 1 */
    uint64_t cap;                  /* queue_capacity, 0: unbounded */
    unsigned batch;                /* jobs per pop: SL__POOL_BATCH, 1 when bounded */

    /* Commands and thread bookkeeping, under lock. */
    pthread_mutex_t lock;
    enum sl__pool_cmd cmd;         /* in progress, or SL__CMD_NONE */
    bool shut;                     /* shutdown was called (commands: EINVAL) */
    sl__pool_worker *exited;       /* to be joined by the control thread */
    unsigned next_id;              /* worker ids, never reused */
    unsigned deaths;               /* deaths not yet replaced */
    uint64_t joined;               /* workers joined (control thread only) */
    bool reset_swept;              /* SL__CMD_RESET: the sweep is done */
    SL_ATOMIC(uint64_t) ctl_kicks; /* the control thread's condition */
    pthread_t ctl;
};

/* ---- least-loaded's counts ---------------------------------------------- */

/* n jobs left slot `from`'s inbox or batch ring (taken to run, stolen, or
 * discarded), and `kept` of them went on into slot `to`'s ring. Keeps `load`
 * counting what each slot holds, its ring included, so that the pick reads
 * one line per inbox (load and running), not also the ring's line, which
 * its owner writes at every job. A no-op in the other modes. Relaxed: the
 * counts only steer the pick; nothing is published through them. */
static inline void sl__pool_count_moved(sl_pool *p, unsigned from, unsigned n, unsigned to,
                                        unsigned kept)
{
    if (p->opts.dispatch != SL_DISPATCH_LEAST_LOADED || n == 0)
        return;
    if (from == to) {
        atomic_fetch_sub_explicit(&p->slots[from].load, n - kept, memory_order_relaxed);
        return;
    }
    atomic_fetch_sub_explicit(&p->slots[from].load, n, memory_order_relaxed);
    if (kept)
        atomic_fetch_add_explicit(&p->slots[to].load, kept, memory_order_relaxed);
}

/* ---- the core (pool_core.c) ---------------------------------------------- */

/* Workers may take jobs: running, or draining a shutdown. */
static inline bool sl__pool_may_take(const sl_pool *p)
{
    int run = atomic_load_explicit(&p->run_state, memory_order_seq_cst);
    return run == SL__RUN_RUNNING || run == SL__RUN_DRAINING;
}

/* Some ring holds a job now (a snapshot). rings_busy alone is not that: it
 * counts a ring from before its fill (keep) to after the claim of its last
 * job, and a worker preempted in either window would make every idle
 * worker poll and never park while nothing can be taken (the pathology of
 * "Pool wake-ups" in docs/guarantees.md). A ring filled after this look is
 * its filler's to announce: take() looks for more work, as a push does. */
static inline bool sl__pool_rings_hold(const sl_pool *p)
{
    /* seq_cst: re-check side of the Dekker pairs, as the other loads of
     * sl__pool_has_work (the filler's tail store precedes its fence). */
    for (unsigned s = 0; s < p->opts.max_workers; s++) {
        const sl__pool_ring *r = &p->slots[s].ring;
        uint32_t h = atomic_load_explicit(&r->head, memory_order_seq_cst);
        uint32_t t = atomic_load_explicit(&r->tail, memory_order_seq_cst);
        if (t != h)
            return true; /* a refill between the loads reads as work: harmless */
    }
    return false;
}

/* Whether some job is in the lists or in a ring — pushed, not merely
 * reserved. `pending` counts a submit from its reservation on, and a
 * submitter can be preempted between the reservation and the push: a worker
 * that took `pending` for work would poll, park, find its re-check true and
 * poll again for as long as that submitter stays off the CPU — on a small
 * machine, the very CPU it needs (docs/guarantees.md, "Pool wake-ups"). So
 * `pending` is only the cheap filter: the lists themselves decide. The
 * submitter's push precedes its wake-up (sl__pool_want_worker), so a worker
 * that sleeps through the window is woken by it.
 *
 * Order of the reads: `waiting` first — a job that left it was counted
 * there before its push, so a stale `waiting` can only overstate the jobs
 * that wait aside when its push has not been seen, and then the pusher,
 * whose push precedes its wake-up check, sees this worker's registration or
 * its search (idle.h). The rings after `pending`: a batch is counted in
 * rings_busy before it leaves `pending`, so a job moving into a ring is seen
 * in one of the two; the lists last (a job popped and not yet in a ring is
 * its popper's, which looks for more work after filling its ring: take()).
 * seq_cst, all: the re-check side of that Dekker pair.
 * `look_in_rings`: a busy ring counts only if some ring holds a job
 * (sl__pool_rings_hold), for the decisions to keep looking or to park;
 * the fan-out after a take and a stopping searcher's hand-on keep the one
 * load, since a spare wake-up there costs one look by the woken. */
static inline bool sl__pool_has_work(const sl_pool *p, bool look_in_rings)
{
    uint64_t waiting = atomic_load_explicit(&p->keys.waiting, memory_order_seq_cst);
    uint64_t pending = atomic_load_explicit(&p->pending, memory_order_seq_cst);
    bool busy = atomic_load_explicit(&p->rings_busy, memory_order_seq_cst) != 0;
#ifdef SL_MUTANT_POOL_BUSY_RING_IS_WORK
    look_in_rings = false; /* planted bug: idle workers poll a filler's empty ring */
#endif
    if (busy && (!look_in_rings || sl__pool_rings_hold(p)))
        return true;
    return SL__PENDING_COUNT(pending) > waiting && sl__pool_queue_any(&p->queue);
}

/* Nothing accepted is left to start: `pending` is 0 and every ring is empty
 * (in that order, as sl__pool_has_work). What a drain waits for. */
static inline bool sl__pool_drained(const sl_pool *p)
{
    if (SL__PENDING_COUNT(atomic_load_explicit(&p->pending, memory_order_seq_cst)) != 0)
        return false;
    return atomic_load_explicit(&p->rings_busy, memory_order_seq_cst) == 0;
}

/* Every worker is to leave: a cancel, or a drain with nothing left to
 * start. The one statement of it: a worker exits on it, and none is placed
 * or spawned while it holds. */
static inline bool sl__pool_all_leaving(const sl_pool *p)
{
    int run = atomic_load_explicit(&p->run_state, memory_order_seq_cst);
    return run == SL__RUN_CANCELLING || (run == SL__RUN_DRAINING && sl__pool_drained(p));
}

/* A worker may take a job now, and one is waiting; with `look_in_rings`
 * as sl__pool_has_work's (true where a worker decides to keep looking or
 * to park). */
static inline bool sl__pool_takeable(const sl_pool *p, bool look_in_rings)
{
    return sl__pool_may_take(p) && sl__pool_has_work(p, look_in_rings);
}

/* The pool whose worker or control thread this is (NULL elsewhere), so that
 * sl_pool_free can refuse to wait for its own thread. */
extern _Thread_local sl_pool *sl__pool_of_thread;

/* Hands an accepted job to on_discard and counts it. */
void sl__pool_discard(sl_pool *p, const sl_job *job, sl_discard why);
/* A job that holds its key (queued or running, not waiting aside) will not
 * run: it was swept, or its worker died in it. It keeps the key until
 * sl__pool_key_done, after its report; meanwhile the key table knows it is
 * neither queued nor running (sl__pool_keys_reporting). */
void sl__pool_key_holder_gone(sl_pool *p, uint64_t key);
/* A report is about to leave the places wait_idle looks at (`reporting`
 * stands in for them until sl__pool_report_end). Published by the caller's
 * next release: the decrement of `pending`, or the store of `running`. */
void sl__pool_report_begin(sl_pool *p);
/* The report is done: `reporting` drops, and wait_idle hears of it if
 * nothing is left to start. */
void sl__pool_report_end(sl_pool *p);
/* The workers kept while idle: the target, or min_workers when idle
 * workers retire. */
unsigned sl__pool_floor(const sl_pool *p);
/* Wakes the control thread: it re-evaluates everything (ctl_kicks). */
void sl__pool_ctl_poke(sl_pool *p);
/* Wakes every parked worker, each with a token (a command or a shutdown
 * changed what they may do). Takes time in max_workers: not for hot paths. */
void sl__pool_wake_workers(sl_pool *p);
/* n jobs left `pending`: wakes whoever waits on that. */
void sl__pool_pending_done(sl_pool *p, uint64_t n);
/* A claim took a ring's last job: the ring no longer counts as busy, and if
 * nothing else is left to start, whoever waits on that is woken. */
void sl__pool_ring_emptied(sl_pool *p);
/* Work is waiting: wakes a sleeper unless someone searches (handing it the
 * wake token: idle.h), or asks the control thread for a worker when nobody
 * searches or sleeps and the pool is below its target. Nothing while the
 * pool is stopped or cancelling. */
void sl__pool_want_worker(sl_pool *p);
/* sl__pool_takeable as an sl__ready_fn (pool: the pool): the `more` of
 * sl__idle_search_end. */
bool sl__pool_more_work(void *pool);
/* Pushes an accepted job (a new one, or a keyed job whose key came free)
 * into the inbox its dispatch mode picks, and makes sure a worker will look.
 * SL_OK or SL_ENOMEM (nothing pushed). */
sl_status sl__pool_push(sl_pool *p, const sl_job *job);
/* The job holding key is over: queues the key's next job, if any. */
void sl__pool_key_done(sl_pool *p, uint64_t key);

/* ---- a worker out of work (pool_park.c) ---------------------------------- */

/* Whether the worker is to leave now (every worker is to, or there are more
 * than the target), counted out of `live` if so; SL__END_NONE otherwise. */
enum sl__pool_end sl__pool_exit_due(sl__pool_worker *w);
/* Searches for work as a searcher (idle.h): true when work appeared. */
bool sl__pool_search(sl__pool_worker *w);
/* Parks in the worker's idle slot; SL__END_RETIRED if it retired at the
 * idle deadline, else SL__END_NONE. */
enum sl__pool_end sl__pool_park(sl__pool_worker *w);

/* ---- the worker threads (pool_worker.c) ---------------------------------- */

/* Starts a worker if fewer than limit (and max_workers) are live — a
 * replacement (respawned) if a death is not yet made good: SL_OK;
 * SL_FULL when there are enough (or no slot is free yet); SL_ENOMEM. */
sl_status sl__pool_spawn(sl_pool *p, unsigned limit);

/* ---- the control thread (pool_ctl.c) ------------------------------------- */

/* The control thread's body; arg is the pool. */
void *sl__pool_ctl_main(void *arg);

#endif /* SLUICE_POOL_IMPL_H */
