/*
 * pool/exec_scope.c — structured parallelism on the executor: scopes,
 * sl_parallel_for (lazy binary splitting), cancellation tokens.
 *
 * A scope counts its tasks that have not completed (sl__pending), plus one
 * for its own thread until sl_scope_end. A task is counted before it is
 * queued and uncounted after it has run, and a task of the scope that spawns
 * into the scope counts the child before it uncounts itself, so the count
 * reaches zero only when the whole tree is done and sl_scope_end has begun.
 * The decrement that reaches it is sl_scope_end's own when no task was
 * outstanding (nothing to wait for), else the last completer's, which rings
 * the waiter and then stores SL__SCOPE_RELEASED (exec_run.c); the waiter
 * returns only once it sees that (exec_wait.c, settle).
 *
 * The thread in sl_scope_end sleeps on the event chosen at sl_scope_begin
 * (its worker's, of whichever executor, or the executor's event for foreign
 * threads). sl_scope_end waits through exec_wait.c, as sl_sync does; like
 * exec.c, this file calls down only.
 */
#include "exec_internal.h"
#include "internal/sysops.h"

#include <stdlib.h>
#include <string.h>

SL_API void sl_scope_begin(sl_exec *ex, sl_scope *s)
{
    if (!s)
        return;
    atomic_init(&s->sl__pending, 1); /* the scope's own count, until sl_scope_end */
    s->sl__ex = ex;
    if (ex) {
        /* A worker (of any executor) helps its own executor in sl_scope_end
         * and sleeps on its own event; a foreign thread on ex's. */
        sl__worker *w = sl__tls_worker;
        s->sl__sleep = w ? sl__exec_worker_event(w) : &ex->foreign;
    }
}

/* Runs fn on the calling thread with its own copy of the arguments (a task
 * that could not be queued), 16-aligned as a record's payload is. A block
 * that fits a record (the task found no memory for one) is copied onto this
 * stack: running it must not need the memory that was just missing, nor
 * hand the task the caller's bytes, which may be unaligned or read-only. A
 * bigger block is copied to the heap; only when that fails too does the
 * task get the caller's block itself (exec.h, sl_scope_spawn). */
static void run_here(sl_exec *ex, sl_task_fn fn, const void *args, size_t args_size)
{
    SL_ALIGNAS(16) unsigned char local[SL_EXEC_PAYLOAD_MAX];
    void *heap = NULL, *copy = args_size ? local : NULL;
#ifndef SL_MUTANT_EXEC_INLINE_ARGS_SHARED
    if (args_size > sizeof local)
#else
    if (args_size) /* planted bug: a task with no record gets the heap, or the caller's bytes */
#endif
        copy = heap = sl__alloc(16, args_size);
    if (copy)
        memcpy(copy, args, args_size);
    sl__exec_run_unqueued(ex, fn, copy ? copy : (void *)(uintptr_t)(args_size ? args : NULL));
    free(heap);
}

SL_API void sl_scope_spawn(sl_scope *s, sl_task_fn fn, const void *args, size_t args_size)
{
    if (!s || !s->sl__ex || !fn || (!args && args_size))
        return;
    sl_exec *ex = s->sl__ex;
    sl__worker *w = sl__exec_worker_of(ex);
    sl__task *t = SL_EXEC_FITS(args_size, 0)
                      ? sl__exec_task_new(ex, w, fn, args, args_size, 0) : NULL;
    if (t) {
        t->scope = s;
        /* relaxed: the queueing below publishes the count with the task, and
         * the completer's decrement is an RMW, which reads the latest value */
        atomic_fetch_add_explicit(&s->sl__pending, 1, memory_order_relaxed);
        if (sl__exec_queue(ex, w, t))
            return;
        /* Cannot reach zero here: the caller is the scope's thread (not yet
         * in sl_scope_end) or one of its tasks (still counted). */
        atomic_fetch_sub_explicit(&s->sl__pending, 1, memory_order_relaxed);
        sl__task_free(ex, w, t);
    }
    run_here(ex, fn, args, args_size);
}

SL_API void sl_scope_end(sl_scope *s)
{
    if (!s || !s->sl__ex)
        return;
    /* Relaxed: only a second sl_scope_end (a misuse, refused as a no-op, not
     * a wait for a count that never comes) reads either value here. */
    uint64_t n = atomic_load_explicit(&s->sl__pending, memory_order_relaxed);
    if (n == 0 || n == SL__SCOPE_RELEASED)
        return;
    /* acq_rel: drops the scope's own count; acquire: the finished tasks'
     * decrements (a release sequence) before our return. The last one: no
     * task outstanding, nobody to wait for. */
    if (atomic_fetch_sub_explicit(&s->sl__pending, 1, memory_order_acq_rel) == 1)
        return;
    sl__wait wt = { NULL, s };
    sl__exec_wait(s->sl__ex, &wt);
}

/* ---- sl_parallel_for ---- */

typedef struct pf_range {
    size_t begin, end, grain;
    void (*body)(size_t i, void *ctx);
    void *ctx;
    sl_scope *scope;
} pf_range;

static void pf_task(void *args, void *ret);

/* Lazy binary splitting (Tzannes, Caragea, Barua, Vishkin, PPoPP 2010): work
 * through the range grain by grain, and whenever the worker's own deque is
 * empty — a thief has taken everything it offered, so others are hungry —
 * give away the upper half as a task first. */
static void pf_run(pf_range r)
{
    sl__worker *w = sl__exec_worker_of(r.scope->sl__ex);
    while (r.end - r.begin > r.grain) {
        /* A foreign thread that stole a piece while it waits (w NULL) has no
         * worker deque to watch: it gives every upper half away at once,
         * through its helper slot (or the injector), and keeps one grain —
         * its help must not become the one slow piece the others wait for. */
        if (!w || sl__deque_is_empty(&w->deque)) {
            pf_range upper = r;
            upper.begin = r.begin + (r.end - r.begin) / 2;
            r.end = upper.begin;
            sl_scope_spawn(r.scope, pf_task, &upper, sizeof upper);
            continue;
        }
        for (size_t stop = r.begin + r.grain; r.begin < stop; r.begin++)
            r.body(r.begin, r.ctx);
    }
    for (; r.begin < r.end; r.begin++)
        r.body(r.begin, r.ctx);
}

static void pf_task(void *args, void *ret)
{
    (void)ret;
    pf_range r;
    memcpy(&r, args, sizeof r);
    pf_run(r);
}

/* grain 0: pieces small enough for 32 per worker, so that late imbalance is
 * absorbed, and at most 4096 indices between two looks at the deque. */
static size_t pf_grain(sl_exec *ex, size_t n)
{
    size_t g = n / (32u * (size_t)ex->nworkers);
    return g < 1 ? 1 : g > 4096 ? 4096 : g;
}

SL_API void sl_parallel_for(sl_exec *ex, size_t begin, size_t end, size_t grain,
                            void (*body)(size_t i, void *ctx), void *ctx)
{
    if (!ex || !body || begin >= end)
        return;
    sl_scope s;
    sl_scope_begin(ex, &s);
    pf_range r = { begin, end, grain ? grain : pf_grain(ex, end - begin), body, ctx, &s };
    if (sl__exec_worker_of(ex))
        pf_run(r);
    else
        sl_scope_spawn(&s, pf_task, &r, sizeof r);
    sl_scope_end(&s);
}

/* ---- cancellation tokens ---- */

SL_API void sl_cancel_init(sl_cancel *c)
{
    if (c)
        atomic_init(&c->sl__requested, 0);
}

SL_API void sl_cancel_request(sl_cancel *c)
{
    if (c) /* release: the requester's writes before the flag */
        atomic_store_explicit(&c->sl__requested, 1, memory_order_release);
}

SL_API bool sl_cancelled(const sl_cancel *c)
{
    /* acquire: pairs with the request */
    return c && atomic_load_explicit(&c->sl__requested, memory_order_acquire) != 0;
}
