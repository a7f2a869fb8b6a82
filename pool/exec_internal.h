/*
 * pool/exec_internal.h — the executor's shared layout and its inline hot
 * paths (internal, not installed).
 *
 * The executor's files, in layers; each calls only the layers below it
 * (docs/exec.md, "Files"):
 *
 *   exec.c  exec_scope.c    the public API: worker threads, spawn, submit,
 *                           sync, lifecycle; scopes, parallel_for, tokens
 *   exec_wait.c             the one wait: helping, the stack-depth rule,
 *                           parking, foreign threads, sl_exec_free's
 *                           quiescence
 *   exec_run.c              finding work (a search round) and running a task
 *                           to its completion
 *   exec_task.c  exec_deque.{h,c}  idle.{h,c}
 *                           task records; the work-stealing deque; idle
 *                           workers (shared with the worker pool)
 *
 * Below the layout, each out-of-line function is declared under the file
 * that defines it, next to the inline fast paths that call it; the spawn
 * path, inline for exec.c and exec_scope.c, comes last.
 */
#ifndef SLUICE_POOL_EXEC_INTERNAL_H
#define SLUICE_POOL_EXEC_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "sluice/exec.h"
#include "sluice/list.h"
#include "sluice/park.h"
#include "exec_deque.h"
#include "idle.h"

typedef struct sl__worker sl__worker;

/* Task state, for tasks with a future. PENDING until the task completes when
 * run by a thread other than its syncer; WAITED once the syncer has published
 * where it sleeps (task->sleep) and may park; NOTIFYING once the result is in
 * the payload, while the completer may still ring the syncer's event; DONE
 * when the completer is through with the record. A task run inline by its
 * syncer never leaves PENDING. Both NOTIFYING and DONE say "completed"
 * (sl__task_completed): a waiter wakes on either, and waits out NOTIFYING
 * before it frees the record or returns (exec_wait.c, settle), since the
 * event it lent may belong to another executor, which its caller may free
 * as soon as it returns (exec_run.c). */
enum {
    SL__TASK_PENDING = 0,
    SL__TASK_WAITED = 1,
    SL__TASK_DONE = 2,
    SL__TASK_NOTIFYING = SL__TASK_DONE | SL__TASK_WAITED
};

static inline bool sl__task_completed(uint32_t state) { return (state & SL__TASK_DONE) != 0; }

/* A scope's count once its last task's completer is through with it (the
 * count is biased by one for the scope's own thread until sl_scope_end, so
 * it reaches zero only in that completer, which then stores this). */
#define SL__SCOPE_RELEASED ((uint64_t)1 << 63)

/* A task record: one header line and the payload (arguments, then result).
 * Records live in slabs owned by the executor and are recycled through the
 * caches; they are never freed while the executor lives, so a stale future's
 * generation check always reads valid memory. */
typedef struct sl__task {
    SL_ALIGNAS(SL_CACHELINE) sl_task_fn fn; /* records never share a line */
    /* Even: spawned and unclaimed (the future's gen), or free. Odd: claimed
     * by the one sl_sync that will complete it. Each free adds 2 to the even
     * value, so a future from an earlier life never matches again. */
    SL_ATOMIC(uint64_t) gen;
    SL_ATOMIC(uint32_t) state;
    uint16_t args_size;
    uint16_t ret_size;
    union {
        struct sl__task *next;   /* free: the cache's link */
        sl__worker *submitter;   /* queued by sl_submit from a worker: never run there */
    } link;
    sl_scope *scope;             /* a scope task (no future), or NULL */
    sl_exec *ex;
    SL_ATOMIC(sl_event *) sleep; /* where the syncer sleeps (WAITED) */
    sl_event done;               /* a foreign syncer sleeps here */
    SL_ALIGNAS(16) unsigned char payload[SL_EXEC_PAYLOAD_MAX];
} sl__task;
_Static_assert(sizeof(sl__task) == 64 + SL_EXEC_PAYLOAD_MAX, "one header line, then the payload");

/* Where the result sits in the payload: behind the arguments, 16-aligned. */
static inline size_t sl__task_ret_offset(const sl__task *t)
{
    return ((size_t)t->args_size + 15u) & ~(size_t)15u;
}

/* Worker i sleeps on slot i of the executor's idle component (idle.h). */
struct sl__worker {
    sl__deque deque;                 /* cache-line aligned inside */
    /* Owner-only state (read by nobody else): its own line. */
    SL_ALIGNAS(SL_CACHELINE) sl__task *cache; /* free records */
    unsigned cache_len;
    unsigned id;                     /* its index, and its idle slot */
    bool searching;                  /* counted in the idle component's searchers */
    uint64_t rng;                    /* victim selection (xorshift64) */
    unsigned submit_next;            /* round-robin mailbox target */
    sl_exec *ex;
    pthread_t thread;
    uintptr_t help_floor;            /* below this stack address: too deep to steal */
    /* Tasks other workers submitted for this one (sl_submit from a worker):
     * this worker is responsible for them; others may take them too, but
     * never their submitter. Written by other threads: its own line. */
    SL_ALIGNAS(SL_CACHELINE) sl_list mailbox;
    /* This worker's submissions still in some mailbox: added by it before
     * the push, taken off by whoever pops one to run it (sl__exec_mail_taken).
     * Its parking re-check counts only mailbox tasks beyond these. */
    SL_ATOMIC(uint64_t) mailed;
};

/* A deque a foreign thread borrows while it helps (sl_sync, sl_scope_end on
 * a thread that is no worker of the executor): what it spawns then goes here,
 * where it can take it back as a worker takes back its own spawns, instead of
 * the injector, which only workers take from. Workers steal from it as from
 * each other. docs/exec.md, "Foreign threads help". */
#define SL__HELPER_SLOTS 8u
typedef struct sl__helper {
    sl__deque deque;                 /* cache-line aligned inside */
    /* A foreign thread owns the deque's bottom end while this is 1. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint32_t) owned;
} sl__helper;

/* Records are allocated in slabs of this many. */
#define SL__SLAB_TASKS 64u

typedef struct sl__slab {
    struct sl__slab *next;
    sl__task *tasks;                 /* SL__SLAB_TASKS records, 64-aligned */
} sl__slab;

struct sl_exec {
    /* Searching and sleeping workers, one slot per worker: its searcher
     * count is read by every spawn (the wake check), written only when
     * workers start or stop searching; its own line (idle.h). */
    sl__idle idle;
    /* Workers parked in the main loop (not inside sl_sync or a scope), with
     * SL__QUIET_EXIT once sl_exec_free has found the executor quiescent. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint64_t) quiet;
    SL_ATOMIC(uint32_t) stopping;    /* sl_exec_free has begun */
    SL_ATOMIC(uint32_t) started;     /* worker threads created (all of them, unless
                                        creation failed part-way) */
    /* Read-mostly after creation. */
    SL_ALIGNAS(SL_CACHELINE) unsigned nworkers;
    sl__worker *workers;             /* nworkers, each cache-line aligned */
    char name[16];
    /* Tasks from foreign threads that hold no helper slot (FIFO). */
    sl_list injector;
    /* Helper slots, borrowed by foreign threads while they help. */
    sl__helper helpers[SL__HELPER_SLOTS];
    /* Foreign threads in sl_scope_end sleep here; sl_exec_free sleeps on freer. */
    SL_ALIGNAS(SL_CACHELINE) sl_event foreign;
    sl_event freer;
    /* Shared record pool (cold: refills and overflow of worker caches,
     * foreign threads). */
    SL_ALIGNAS(SL_CACHELINE) pthread_mutex_t pool_lock;
    sl__task *pool_free;
    sl__slab *slabs;
};

#define SL__QUIET_EXIT ((uint64_t)1 << 63)

/* Where worker w sleeps: its idle slot's eventcount, rung by its wakers, by
 * the completions of what it waits for, and by submits into its mailbox. */
static inline sl_event *sl__exec_worker_event(const sl__worker *w)
{
    return sl__idle_event(&w->ex->idle, w->id);
}

/* ---- exec_task.c: records ---- */
/* A worker's cache longer than this gives half of it back to the pool. */
#define SL__CACHE_HIGH 512u

/* The slow paths of the two below: the shared pool, under its lock. */
sl__task *sl__task_alloc_slow(sl_exec *ex, sl__worker *w);
void sl__task_free_slow(sl_exec *ex, sl__worker *w, sl__task *t);
/* Frees every slab (sl_exec_free, after the workers have exited). */
void sl__task_free_all(sl_exec *ex);

/* A free record for the worker w (from its cache, refilled from the shared
 * pool or a new slab when dry), or for a foreign thread when w is NULL. NULL
 * when out of memory. */
static inline sl__task *sl__task_alloc(sl_exec *ex, sl__worker *w)
{
    sl__task *t = w ? w->cache : NULL;
    if (!t)
        return sl__task_alloc_slow(ex, w);
    w->cache = t->link.next;
    w->cache_len--;
    return t;
}

/* Returns t to w's cache (or the shared pool when w is NULL), advancing its
 * generation so that every future of this life is stale. */
static inline void sl__task_free(sl_exec *ex, sl__worker *w, sl__task *t)
{
    uint64_t g = atomic_load_explicit(&t->gen, memory_order_relaxed);
    /* release: this life's last accesses before the generation that ends it */
    atomic_store_explicit(&t->gen, (g | 1u) + 1u, memory_order_release);
    atomic_store_explicit(&t->state, SL__TASK_PENDING, memory_order_relaxed);
    if (!w || w->cache_len >= SL__CACHE_HIGH) {
        sl__task_free_slow(ex, w, t);
        return;
    }
    t->link.next = w->cache;
    w->cache = t;
    w->cache_len++;
}

/* ---- exec_run.c: finding work and running it ---- */
/* One search round of worker w: its mailbox, the deques from a random
 * victim, the injector, the other mailboxes. A task or NULL. */
sl__task *sl__exec_search(sl__worker *w);
/* One pass over the workers' deques from worker start % nworkers, skipping
 * worker `skip` (nworkers or more: none), then over the helper slots' from
 * slot start / nworkers, skipping `own`: draw start below nworkers *
 * SL__HELPER_SLOTS, so that both passes begin at random. */
sl__task *sl__exec_steal_deques(sl_exec *ex, unsigned start, unsigned skip,
                                const sl__helper *own);
/* True when some queue of ex may hold a task: a deque, the injector, a
 * mailbox — for w (its parking re-check), a mailbox task that w did not
 * submit; with w NULL (sl_exec_free's check), any. */
bool sl__exec_has_work(sl_exec *ex, const sl__worker *w);
/* Runs t (not inline for a syncer) on worker w — a foreign thread when w is
 * NULL — and completes it: wakes its syncer, or counts it off its scope. */
void sl__exec_run(sl_exec *ex, sl__worker *w, sl__task *t);

/* A task popped from a mailbox to be run: off its submitter's count. */
static inline void sl__exec_mail_taken(sl__task *t)
{
    /* relaxed: only the submitter reads it, as it parks; a late decrement
     * hides another mailbox task from its re-check, so whoever pops one
     * wakes a sleeper afterwards (a searcher's hand-on when it is the last,
     * take_own's wake), and a submitter with a count hands on as it parks */
    atomic_fetch_sub_explicit(&t->link.submitter->mailed, 1, memory_order_relaxed);
}

/* ---- exec_wait.c: the one wait ---- */
/* The calling thread's worker, if it is a worker of some executor. Initial-
 * exec TLS: one load off the thread pointer, even in the shared library. */
extern _Thread_local sl__worker *sl__tls_worker __attribute__((tls_model("initial-exec")));

/* The calling thread's worker if it is a worker of ex, else NULL. */
static inline sl__worker *sl__exec_worker_of(const sl_exec *ex)
{
    sl__worker *w = sl__tls_worker;
    return w && w->ex == ex ? w : NULL;
}

/* What a thread waits for: a task's completion (sl_sync, the task claimed)
 * or the end of a scope (sl_scope_end); exactly one is set. */
typedef struct sl__wait {
    sl__task *task;
    sl_scope *scope;
} sl__wait;

/* Waits on the calling thread, of any kind, until wt is over; helps or not
 * as the thread and its stack allow. On return the task's result or the
 * scope's tasks' effects are visible (acquire), and the last completer is
 * through with the task record or the scope, and with the event the waiter
 * lent it. */
void sl__exec_wait(sl_exec *ex, const sl__wait *wt);
/* Worker w's main loop, on its thread: runs tasks until its executor is
 * quiescent and being freed (sl__exec_quiesce). */
void sl__exec_worker_loop(sl__worker *w);
/* sl_exec_free: waits until every started worker is parked in its main loop
 * with no work anywhere, then lets them exit. */
void sl__exec_quiesce(sl_exec *ex);
/* The helper slot the calling foreign thread holds for ex while it helps,
 * or NULL (not helping ex, or no slot was free). */
sl__helper *sl__exec_foreign_slot(const sl_exec *ex);
/* True when the calling thread is a foreign thread running a task of ex. */
bool sl__exec_foreign_helping(const sl_exec *ex);
/* Runs fn(args, NULL), a task of ex that could not be queued, on the calling
 * thread, which counts as running a task of ex meanwhile (sl_exec_free
 * refuses there). */
void sl__exec_run_unqueued(sl_exec *ex, sl_task_fn fn, void *args);
/* Tests: non-zero makes every worker count as deep, so that the depth rule's
 * liveness is tested without filling a stack. */
extern SL_ATOMIC(int) sl__exec_deep_workers;

/* ---- inline here: the spawn path (exec.c, exec_scope.c) ---- */

/* A record for fn(args) with the given sizes (not queued), or NULL when out
 * of memory. The usual argument sizes are copied with fixed-size moves. */
static inline sl__task *sl__exec_task_new(sl_exec *ex, sl__worker *w, sl_task_fn fn,
                                          const void *args, size_t args_size, size_t ret_size)
{
    sl__task *t = sl__task_alloc(ex, w);
    if (!t)
        return NULL;
    t->fn = fn;
    t->args_size = (uint16_t)args_size;
    t->ret_size = (uint16_t)ret_size;
    t->scope = NULL;
    t->link.submitter = NULL;
    switch (args_size) {
    case 0: break;
    case 8: memcpy(t->payload, args, 8); break;
    case 16: memcpy(t->payload, args, 16); break;
    case 24: memcpy(t->payload, args, 24); break;
    case 32: memcpy(t->payload, args, 32); break;
    default: memcpy(t->payload, args, args_size); break;
    }
    return t;
}

/* After a task was made visible in a queue: wakes a sleeper if nobody
 * searches (sl__idle_notify_work), skipping the call while nobody sleeps. */
static inline void sl__exec_published(sl_exec *ex)
{
    SL_FI();
    /* Our push before the pre-check's loads: idle.h asks an inline
     * pre-check for its own fence (the Dekker pair with a parking worker's
     * registration and re-check). */
    sl_event_fence();
    /* relaxed: ordered by the fence. Both lines are read-shared while every
     * worker is busy (nobody searching, nobody asleep). */
    if (atomic_load_explicit(&ex->idle.searching, memory_order_relaxed) == 0 &&
        (ex->idle.nwords > 1 ||
         atomic_load_explicit(&ex->idle.sleep_bits[0], memory_order_relaxed) != 0))
        sl__idle_notify_work(&ex->idle);
}

/* Queues a filled spawned record: on w's deque, or (w NULL) on the helper
 * slot the calling foreign thread holds, else on the injector; then wakes a
 * sleeper if nobody searches. Nothing else ever pushes on a deque, and
 * nothing moves a task from the injector or a mailbox to a deque: deques hold
 * only spawned tasks, never a submitted one, which is why foreign threads may
 * steal from them while they wait (docs/exec.md). Returns false when it could
 * not be queued (out of memory). */
static inline bool sl__exec_queue(sl_exec *ex, sl__worker *w, sl__task *t)
{
    if (w) {
        if (!sl__deque_push(&w->deque, t))
            return false;
    } else {
        /* A foreign thread helping ex spawns onto its borrowed deque. */
        sl__helper *h = sl__exec_foreign_slot(ex);
        if (!(h && sl__deque_push(&h->deque, t)) &&
            sl_list_try_push(&ex->injector, &t) != SL_OK)
            return false;
    }
    sl__exec_published(ex);
    return true;
}

#endif /* SLUICE_POOL_EXEC_INTERNAL_H */
