/*
 * pool/exec.c — the executor's public face for tasks with futures: worker
 * threads, sl_spawn, sl_submit, sl_sync and the queries; sl_exec_new,
 * sl_exec_free and the global executor.
 *
 * Each worker owns a Chase–Lev deque (exec_deque.h). sl_spawn on a worker
 * pushes on its own deque; sl_sync pops it back and runs it inline when it is
 * still there (the fork-join common case: no other thread touched it). When
 * the task was stolen, or the syncer is no worker of the executor, sl_sync
 * waits through exec_wait.c, which decides whether and how it helps.
 *
 * A foreign thread's spawns go to the helper slot it holds while helping,
 * else through the injector. A worker's sl_submit goes to another worker's
 * mailbox — a sleeping one if any — and a foreign thread's to the injector:
 * never to a deque, which is what keeps sl_submit's promise (docs/exec.md,
 * "Submit never runs on its caller").
 *
 * This file calls down only: to exec_wait.c (waits, worker loops,
 * quiescence), exec_run.c (running a task), exec_task.c (records) and the
 * idle component (wake-ups, the sleeper a submit goes to).
 */
#include "exec_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/util.h"
#include "internal/sysops.h"

/* A worker thread: its main loop (exec_wait.c) until the executor exits. */
static void *exec_thread_main(void *arg)
{
    sl__exec_worker_loop(arg);
    return NULL;
}

/* ---- spawn, submit, sync ---- */

static const sl_future cleared_future = { NULL, 0 };

static bool task_ok(sl_exec *ex, sl_task_fn fn, const void *args, size_t args_size,
                    size_t ret_size)
{
    return ex && fn && (args || !args_size) && SL_EXEC_FITS(args_size, ret_size);
}

SL_API sl_future sl_spawn(sl_exec *ex, sl_task_fn fn, const void *args, size_t args_size,
                          size_t ret_size)
{
    if (!task_ok(ex, fn, args, args_size, ret_size))
        return cleared_future;
    sl__worker *w = sl__exec_worker_of(ex);
    sl__task *t = sl__exec_task_new(ex, w, fn, args, args_size, ret_size);
    if (!t)
        return cleared_future;
    uint64_t gen = atomic_load_explicit(&t->gen, memory_order_relaxed);
    if (!sl__exec_queue(ex, w, t)) {
        sl__task_free(ex, w, t);
        return cleared_future;
    }
    return (sl_future){ t, gen };
}

/* A foreign thread's submit: always the injector — never its helper slot,
 * which it takes from itself; a foreign thread's helping never takes from
 * the injector. */
static sl_future submit_foreign(sl_exec *ex, sl_task_fn fn, const void *args, size_t args_size,
                                size_t ret_size)
{
    sl__task *t = sl__exec_task_new(ex, NULL, fn, args, args_size, ret_size);
    if (!t)
        return cleared_future;
    uint64_t gen = atomic_load_explicit(&t->gen, memory_order_relaxed);
    if (sl_list_try_push(&ex->injector, &t) != SL_OK) {
        sl__task_free(ex, NULL, t);
        return cleared_future;
    }
    sl__exec_published(ex);
    return (sl_future){ t, gen };
}

/* The worker a worker's submission goes to: a sleeping one, else the next in
 * turn; never the submitter. */
static unsigned submit_target(sl_exec *ex, sl__worker *w)
{
    unsigned v = sl__idle_find_sleeper(&ex->idle, w->id);
    if (v < ex->nworkers)
        return v;
    v = w->submit_next++ % ex->nworkers;
    return v == w->id ? (v + 1) % ex->nworkers : v;
}

SL_API sl_future sl_submit(sl_exec *ex, sl_task_fn fn, const void *args, size_t args_size,
                           size_t ret_size)
{
    if (!task_ok(ex, fn, args, args_size, ret_size))
        return cleared_future;
    sl__worker *w = sl__exec_worker_of(ex);
    if (!w)
        return submit_foreign(ex, fn, args, args_size, ret_size);
    if (ex->nworkers < 2)
        return cleared_future; /* no other thread could ever run it */
    sl__task *t = sl__exec_task_new(ex, w, fn, args, args_size, ret_size);
    if (!t)
        return cleared_future;
    t->link.submitter = w;
    uint64_t gen = atomic_load_explicit(&t->gen, memory_order_relaxed);
    unsigned v = submit_target(ex, w);
    /* relaxed: read only by this thread (its parking re-check) */
    atomic_fetch_add_explicit(&w->mailed, 1, memory_order_relaxed);
    if (sl_list_try_push(&ex->workers[v].mailbox, &t) != SL_OK) {
        atomic_fetch_sub_explicit(&w->mailed, 1, memory_order_relaxed);
        sl__task_free(ex, w, t);
        return cleared_future;
    }
    sl__idle_notify_slot(&ex->idle, v);
    return (sl_future){ t, gen };
}

/* Worker w syncs t (claimed): runs it inline if it is still on w's deque,
 * else waits for it (exec_wait.c). Returns true when it ran inline (the
 * result is already in ret). */
static bool sync_on_worker(sl__worker *w, sl__task *t, void *ret)
{
    for (;;) {
        /* acquire: a thief's result before our copy of it. DONE exactly:
         * NOTIFYING means a registered waiter, so this thread inside
         * sl__exec_wait, which settles it. */
        if (atomic_load_explicit(&t->state, memory_order_acquire) == SL__TASK_DONE)
            return false;
        sl__task *top = sl__deque_take(&w->deque);
        if (!top)
            break;
        if (top == t) {
            size_t ret_size = t->ret_size;
            void *out = ret_size ? (ret ? ret : t->payload + sl__task_ret_offset(t)) : NULL;
            t->fn(t->args_size ? t->payload : NULL, out);
            return true;
        }
        sl__exec_run(w->ex, w, top); /* spawned after t and not synced yet: run it now */
    }
    sl__wait wt = { t, NULL }; /* stolen: wait for its thief */
    sl__exec_wait(w->ex, &wt);
    return false;
}

SL_API sl_status sl_sync(sl_future *f, void *ret)
{
    if (!f || !f->task || (f->gen & 1u))
        return SL_EINVAL;
    sl__task *t = f->task;
    uint64_t gen = f->gen;
    /* The claim: exactly one sync of this life gets past here. acq_rel: the
     * record's previous life (the free's release) before our reads. */
    if (!atomic_compare_exchange_strong_explicit(&t->gen, &gen, gen + 1, memory_order_acq_rel,
                                                 memory_order_relaxed))
        return SL_EINVAL;
    sl_exec *ex = t->ex;
    sl__worker *w = sl__exec_worker_of(ex);
    bool inline_ran = false;
    if (w) {
        inline_ran = sync_on_worker(w, t, ret);
    } else {
        /* A foreign thread, or a worker of another executor (exec_wait.c
         * says how each waits). */
        sl__wait wt = { t, NULL };
        sl__exec_wait(ex, &wt);
    }
    if (!inline_ran && ret && t->ret_size)
        memcpy(ret, t->payload + sl__task_ret_offset(t), t->ret_size);
    sl__task_free(ex, w, t);
    *f = cleared_future;
    return SL_OK;
}

SL_API bool sl_is_spawned(const sl_future *f)
{
    if (!f || !f->task || (f->gen & 1u))
        return false;
    const sl__task *t = f->task;
    return atomic_load_explicit(&t->gen, memory_order_relaxed) == f->gen;
}

SL_API bool sl_is_ready(const sl_future *f)
{
    if (!sl_is_spawned(f))
        return false;
    const sl__task *t = f->task;
    /* acquire: the task's completion before the caller's next steps */
    bool done = sl__task_completed(atomic_load_explicit(&t->state, memory_order_acquire));
    /* Relaxed, after the acquire: the record was not recycled (synced by
     * another copy, freed, spawned again and completed) between the
     * generation's first look and the state's. */
    return done && atomic_load_explicit(&t->gen, memory_order_relaxed) == f->gen;
}

/* ---- lifecycle ---- */

static bool worker_init(sl_exec *ex, sl__worker *w, unsigned id)
{
    memset(w, 0, sizeof *w);
    atomic_init(&w->mailed, 0);
    w->ex = ex;
    w->id = id;
    w->rng = 0x9e3779b97f4a7c15ull * (id + 1u);
    w->submit_next = id + 1u;
    /* 256 slots: fork-join depth rarely goes beyond; the deque grows if it does. */
    if (!sl__deque_init(&w->deque, 8))
        return false;
    if (sl_list_init(&w->mailbox, sizeof(sl__task *)) != SL_OK) {
        sl__deque_destroy(&w->deque);
        return false;
    }
    return true;
}

static void exec_destroy(sl_exec *ex, unsigned initialised)
{
    for (unsigned i = 0; i < initialised; i++) {
        sl__deque_destroy(&ex->workers[i].deque);
        sl_list_destroy(&ex->workers[i].mailbox);
    }
    for (unsigned i = 0; i < SL__HELPER_SLOTS; i++)
        sl__deque_destroy(&ex->helpers[i].deque);
    sl_list_destroy(&ex->injector);
    sl__task_free_all(ex);
    pthread_mutex_destroy(&ex->pool_lock);
    sl__idle_destroy(&ex->idle);
    free(ex->workers);
    free(ex);
}

/* Allocates ex and everything but the threads. */
static sl_exec *exec_alloc(unsigned n, const char *name)
{
    sl_exec *ex = sl__alloc(SL_CACHELINE, sizeof *ex);
    if (!ex)
        return NULL;
    memset(ex, 0, sizeof *ex);
    ex->nworkers = n;
    snprintf(ex->name, sizeof ex->name, "%s", name ? name : "sl-exec");
    pthread_mutex_init(&ex->pool_lock, NULL);
    sl_event_init(&ex->foreign);
    sl_event_init(&ex->freer);
    ex->workers = sl__alloc(SL_CACHELINE, n * sizeof *ex->workers);
    bool idle = sl__idle_init(&ex->idle, n) == SL_OK; /* destroys itself on failure */
    bool helpers = true;
    for (unsigned i = 0; i < SL__HELPER_SLOTS; i++)
        helpers = sl__deque_init(&ex->helpers[i].deque, 6) && helpers;
    if (!helpers || !ex->workers || !idle ||
        sl_list_init(&ex->injector, sizeof(sl__task *)) != SL_OK) {
        for (unsigned i = 0; i < SL__HELPER_SLOTS; i++)
            sl__deque_destroy(&ex->helpers[i].deque);
        free(ex->workers);
        sl__idle_destroy(&ex->idle);
        pthread_mutex_destroy(&ex->pool_lock);
        free(ex);
        return NULL;
    }
    for (unsigned i = 0; i < n; i++) {
        if (!worker_init(ex, &ex->workers[i], i)) {
            exec_destroy(ex, i);
            return NULL;
        }
    }
    return ex;
}

/* Stops and joins the started workers (every task done), then frees ex. */
static void exec_stop(sl_exec *ex)
{
    atomic_store_explicit(&ex->stopping, 1, memory_order_seq_cst);
    sl__exec_quiesce(ex);
    unsigned started = atomic_load_explicit(&ex->started, memory_order_relaxed);
    for (unsigned i = 0; i < started; i++)
        pthread_join(ex->workers[i].thread, NULL);
    exec_destroy(ex, ex->nworkers);
}

SL_API sl_status sl_exec_new(sl_exec **out, const sl_exec_opts *opts)
{
    if (!out || (opts && opts->threads > SL_EXEC_MAX_THREADS))
        return SL_EINVAL;
    unsigned n = opts && opts->threads ? opts->threads : sl__online_cpus(SL_EXEC_MAX_THREADS);
    sl_exec *ex = exec_alloc(n, opts ? opts->name : NULL);
    if (!ex)
        return SL_ENOMEM;
    for (unsigned i = 0; i < n; i++) {
        sl__worker *w = &ex->workers[i];
        if (sl__thread_create(&w->thread, NULL, exec_thread_main, w) != 0) {
            exec_stop(ex); /* the workers started so far exit; nothing left */
            return SL_ENOMEM;
        }
        char id[16];
        snprintf(id, sizeof id, "%u", i);
        sl__thread_name(w->thread, ex->name, id);
        atomic_store_explicit(&ex->started, i + 1, memory_order_relaxed);
    }
    *out = ex;
    return SL_OK;
}

/* The process-wide executor (sl_exec_global). Atomic: sl_exec_free
 * compares against it on any thread, also while another creates it. */
static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static SL_ATOMIC(sl_exec *) global_exec;

/* Whether free must leave ex alone: from one of its own tasks it would wait
 * for itself forever, and the global executor is never freed, since
 * sl_exec_global would go on returning it. Relaxed: a caller holding the
 * global got it through pthread_once; any other ex differs from whatever
 * the load sees. */
static bool free_refused(const sl_exec *ex)
{
#ifndef SL_MUTANT_EXEC_FREE_GLOBAL /* planted bug when defined: the global may be freed */
    if (ex == atomic_load_explicit(&global_exec, memory_order_relaxed))
        return true;
#endif
    return sl__exec_worker_of(ex) || sl__exec_foreign_helping(ex);
}

SL_API void sl_exec_free(sl_exec *ex)
{
    if (!ex || free_refused(ex))
        return;
    exec_stop(ex);
}

SL_API unsigned sl_exec_threads(const sl_exec *ex)
{
    return ex ? ex->nworkers : 0;
}

static void global_create(void)
{
    sl_exec_opts o = { 0, "sl-global" };
    sl_exec *ex;
    /* relaxed: pthread_once publishes it to sl_exec_global's callers */
    atomic_store_explicit(&global_exec, sl_exec_new(&ex, &o) == SL_OK ? ex : NULL,
                          memory_order_relaxed);
}

SL_API sl_exec *sl_exec_global(void)
{
    pthread_once(&global_once, global_create);
    return atomic_load_explicit(&global_exec, memory_order_relaxed);
}
