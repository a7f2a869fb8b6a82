/*
 * pool/pool.c — the worker pool's life: creation, the commands of the state
 * machine, waits, statistics and free. The top of the pool's files
 * (pool_impl.h): it starts the control thread (pool_ctl.c) and the first
 * workers (pool_worker.c); submitting is in pool_submit.c, the bookkeeping
 * they all share in pool_core.c.
 *
 * A command checks and applies its immediate effect under the pool lock —
 * the run state the workers read, the target, the closed bit — and leaves
 * the rest to the control thread, which completes it (ready, then on_state)
 * once its condition holds: a stop when no worker is in a run of jobs, a
 * resize when the live count fits, a reset after its sweep, a shutdown when
 * nothing is pending and every worker has been joined.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool_impl.h"
#include "internal/await.h"
#include "internal/util.h"
#include "internal/sysops.h"

/* ---- creation and free --------------------------------------------------- */

static sl_status fill_opts(sl_pool_opts *o, const sl_pool_opts *given)
{
    *o = given ? *given : (sl_pool_opts){0};
    if (o->max_workers == 0) {
        o->max_workers = sl__online_cpus(SL_POOL_MAX_WORKERS);
    }
    if (o->priority_levels == 0)
        o->priority_levels = 1;
    if (o->max_workers > SL_POOL_MAX_WORKERS || o->min_workers > o->max_workers ||
        o->active_workers > o->max_workers ||
        o->priority_levels > SL_POOL_MAX_PRIORITIES ||
        (unsigned)o->dispatch > (unsigned)SL_DISPATCH_LEAST_LOADED)
        return SL_EINVAL;
    if (o->active_workers == 0)
        o->active_workers = o->max_workers;
    return SL_OK;
}

static void pool_destroy(sl_pool *p)
{
    sl__pool_queue_destroy(&p->queue);
    sl__pool_keys_destroy(&p->keys);
    sl__idle_destroy(&p->idle);
    free(p->slots);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

static sl_status pool_alloc(sl_pool **out, const sl_pool_opts *o)
{
    sl_pool *p = sl__alloc(SL_CACHELINE, sizeof(*p));
    if (!p)
        return SL_ENOMEM;
    memset(p, 0, sizeof(*p));
    p->opts = *o;
    strncpy(p->name, o->name ? o->name : "sl-pool", sizeof(p->name) - 1);
    p->opts.name = p->name; /* the caller's string need not outlive the call */
    p->levels = o->priority_levels;
    unsigned cpus = sl__online_cpus(UINT32_MAX);
    p->spin_limit = cpus >= 4 ? cpus / 2 : 1u;
    p->cap = o->queue_capacity;
    /* A bounded pool takes one job at a time: jobs in a ring have left
     * `pending`, which is what the capacity bounds. */
    p->batch = p->cap ? 1u : SL__POOL_BATCH;
    pthread_mutex_init(&p->lock, NULL);
    p->slots = sl__alloc(SL_CACHELINE, o->max_workers * sizeof(sl__pool_slot));
    if (p->slots) {
        memset(p->slots, 0, o->max_workers * sizeof(sl__pool_slot));
        for (unsigned s = 0; s < o->max_workers; s++)
            sl__pool_ring_init(&p->slots[s].ring);
    }
    unsigned inboxes = o->dispatch == SL_DISPATCH_SHARED ? 1u : o->max_workers;
    if (!p->slots || sl__pool_keys_init(&p->keys) != SL_OK ||
        sl__pool_queue_init(&p->queue, p->levels, inboxes) != SL_OK ||
        sl__idle_init(&p->idle, o->max_workers) != SL_OK) {
        pool_destroy(p);
        return SL_ENOMEM;
    }
    sl_event *events[] = {&p->space_ev, &p->idle_ev, &p->ready_ev, &p->ctl_ev};
    for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
        sl_event_init(events[i]);
    bool stopped = o->start_stopped;
    atomic_store_explicit(&p->run_state, stopped ? SL__RUN_STOPPED : SL__RUN_RUNNING,
                          memory_order_relaxed);
    atomic_store_explicit(&p->state, stopped ? SL_POOL_STOPPED : SL_POOL_RUNNING,
                          memory_order_relaxed);
    atomic_store_explicit(&p->target, o->active_workers, memory_order_relaxed);
    *out = p;
    return SL_OK;
}

SL_API sl_status sl_pool_new(sl_pool **out, const sl_pool_opts *opts)
{
    sl_pool_opts o;
    if (!out || fill_opts(&o, opts) != SL_OK)
        return SL_EINVAL;
    sl_pool *p;
    sl_status st = pool_alloc(&p, &o);
    if (st != SL_OK)
        return st;
    if (sl__thread_create(&p->ctl, NULL, sl__pool_ctl_main, p) != 0) {
        pool_destroy(p);
        return SL_ENOMEM;
    }
    /* The pool starts at its floor: the target, or min_workers when idle
     * workers retire (an elastic pool starts small and grows on demand, as
     * it would shrink back after the idle timeout anyway). The control
     * thread may be spawning too: both stop at the floor. */
    sl_status spawned;
    while ((spawned = sl__pool_spawn(p, sl__pool_floor(p))) == SL_OK)
        continue;
    if (spawned == SL_ENOMEM) {
        sl_pool_free(p);
        return SL_ENOMEM;
    }
    *out = p;
    return SL_OK;
}

/* Under lock. From here on submits get SL_CLOSED and commands SL_EINVAL. */
static void begin_shutdown(sl_pool *p, sl_shutdown how)
{
    p->shut = true;
    /* seq_cst: in one total order with every reservation (pool_submit.c). */
    atomic_fetch_or_explicit(&p->pending, SL__PENDING_CLOSED, memory_order_seq_cst);
    atomic_store_explicit(&p->run_state, how == SL_DRAIN ? SL__RUN_DRAINING : SL__RUN_CANCELLING,
                          memory_order_seq_cst);
}

/* After a change the workers and waiting submitters must see. */
static void wake_everyone(sl_pool *p)
{
    sl__pool_wake_workers(p);
    sl_event_notify_all(&p->space_ev);
    sl__pool_ctl_poke(p);
}

/* Freeing a pool from its own thread would join that thread from itself:
 * a silent hang. Say what happened instead. */
static void refuse_free_from_own_thread(const sl_pool *p)
{
    fprintf(stderr,
            "sluice: sl_pool_free(%p) called from one of the pool's own threads "
            "(a job or a callback); it would wait for itself forever. Call "
            "sl_pool_shutdown there and free the pool from another thread.\n",
            (const void *)p);
    abort();
}

SL_API void sl_pool_free(sl_pool *p)
{
    if (!p)
        return;
    if (sl__pool_of_thread == p)
        refuse_free_from_own_thread(p);
    pthread_mutex_lock(&p->lock);
    if (!p->shut) {
        p->cmd = SL__CMD_NONE; /* a command in progress is overtaken */
        atomic_store_explicit(&p->busy, 1, memory_order_seq_cst);
        begin_shutdown(p, SL_CANCEL);
    }
    pthread_mutex_unlock(&p->lock);
    wake_everyone(p);
    pthread_join(p->ctl, NULL); /* it exits once the shutdown completed */
    pool_destroy(p);
}

/* ---- commands ------------------------------------------------------------ */

/* Under lock: SL_OK if cmd may begin now. */
static sl_status admissible(const sl_pool *p, enum sl__pool_cmd cmd, unsigned arg)
{
    int state = atomic_load_explicit(&p->state, memory_order_relaxed);
    bool ok;
    switch (cmd) {
    case SL__CMD_START: ok = state == SL_POOL_STOPPED; break;
    case SL__CMD_STOP: ok = state == SL_POOL_RUNNING; break;
    case SL__CMD_WORKERS: ok = arg >= 1 && arg <= p->opts.max_workers; break;
    case SL__CMD_RESET: ok = state == SL_POOL_STOPPED; break;
    case SL__CMD_SHUTDOWN: ok = arg == SL_DRAIN || arg == SL_CANCEL; break;
    default: ok = false; break;
    }
    if (p->shut)
        return SL_EINVAL;
    /* Busy before the state: the state a command in progress leads to is
     * not reported yet, so stop right after start is SL_BUSY, not EINVAL. */
    if (p->cmd != SL__CMD_NONE && (cmd != SL__CMD_WORKERS || ok) && (cmd != SL__CMD_SHUTDOWN || ok))
        return SL_BUSY;
    return ok ? SL_OK : SL_EINVAL;
}

/* Under lock: the command's immediate effect. */
static void apply(sl_pool *p, enum sl__pool_cmd cmd, unsigned arg)
{
    p->cmd = cmd;
    /* seq_cst: the condition wait_ready re-checks after its prepare. */
    atomic_store_explicit(&p->busy, 1, memory_order_seq_cst);
    switch (cmd) {
    case SL__CMD_START:
        atomic_store_explicit(&p->run_state, SL__RUN_RUNNING, memory_order_seq_cst);
        break;
    case SL__CMD_STOP:
        /* seq_cst, both: stop's Dekker pairs with the workers' `active`
         * (pool_worker.c); cmd_waiting makes idle-going workers poke. */
        atomic_store_explicit(&p->cmd_waiting, 1, memory_order_seq_cst);
        atomic_store_explicit(&p->run_state, SL__RUN_STOPPED, memory_order_seq_cst);
        break;
    case SL__CMD_WORKERS:
        atomic_store_explicit(&p->target, arg, memory_order_seq_cst);
        break;
    case SL__CMD_RESET:
        p->reset_swept = false;
        break;
    case SL__CMD_SHUTDOWN:
        begin_shutdown(p, (sl_shutdown)arg);
        break;
    default:
        break;
    }
}

static sl_status command(sl_pool *p, enum sl__pool_cmd cmd, unsigned arg)
{
    if (!p)
        return SL_EINVAL;
    pthread_mutex_lock(&p->lock);
    sl_status st = admissible(p, cmd, arg);
    if (st == SL_OK)
        apply(p, cmd, arg);
    pthread_mutex_unlock(&p->lock);
    if (st == SL_OK)
        wake_everyone(p); /* start, a shrink, a drain: parked workers look again */
    return st;
}

SL_API sl_status sl_pool_start(sl_pool *p) { return command(p, SL__CMD_START, 0); }
SL_API sl_status sl_pool_stop(sl_pool *p) { return command(p, SL__CMD_STOP, 0); }
SL_API sl_status sl_pool_set_workers(sl_pool *p, unsigned n)
{
    return command(p, SL__CMD_WORKERS, n);
}
SL_API sl_status sl_pool_reset(sl_pool *p) { return command(p, SL__CMD_RESET, 0); }

SL_API sl_status sl_pool_shutdown(sl_pool *p, sl_shutdown how)
{
    return command(p, SL__CMD_SHUTDOWN, (unsigned)how);
}

/* ---- waits and statistics ------------------------------------------------ */

SL_API bool sl_pool_ready(sl_pool *p)
{
    return p && !atomic_load_explicit(&p->busy, memory_order_seq_cst);
}

/* Waits on ev until ready(p) holds (SL_OK) or the deadline passes
 * (SL_TIMEDOUT), through the await protocol (internal/await.h): whoever makes
 * the condition true notifies ev after it. A wait for a rare event: no spin. */
static sl_status wait_until(sl_pool *p, sl_event *ev, sl__ready_fn ready, uint64_t timeout_ns)
{
    return sl__event_await(ev, ready, p, sl_deadline_after(timeout_ns), 0);
}

/* The command in progress completed; try_complete (pool_ctl.c) clears `busy`,
 * then notifies ready_ev. */
static bool is_ready(void *arg) { return sl_pool_ready(arg); }

SL_API sl_status sl_pool_wait_ready(sl_pool *p, uint64_t timeout_ns)
{
    return p ? wait_until(p, &p->ready_ev, is_ready, timeout_ns) : SL_EINVAL;
}

/* Nothing pending, nothing in a ring, nothing running, no report in
 * progress. idle_ev is notified when the count reaches 0
 * (sl__pool_pending_done), when the last busy ring empties with nothing
 * pending (sl__pool_ring_emptied), when a worker stops running with nothing
 * pending or in its ring (pool_worker.c) and when a report ends
 * (sl__pool_report_end). */
static bool is_idle(void *arg)
{
    sl_pool *p = arg;
    if (!sl__pool_drained(p))
        return false;
    bool idle = true;
    pthread_mutex_lock(&p->lock);
    for (unsigned s = 0; s < p->opts.max_workers && idle; s++) {
        if (atomic_load_explicit(&p->slots[s].running, memory_order_acquire))
            idle = false;
    }
    pthread_mutex_unlock(&p->lock);
    /* Acquire, and last: a report counted before the decrement of `pending`
     * (a sweep) or the store of `running` (a death) that it reads above. */
    return idle && atomic_load_explicit(&p->reporting, memory_order_acquire) == 0;
}

SL_API sl_status sl_pool_wait_idle(sl_pool *p, uint64_t timeout_ns)
{
    return p ? wait_until(p, &p->idle_ev, is_idle, timeout_ns) : SL_EINVAL;
}

/* Under lock: the live workers' part of the snapshot, and the jobs in the
 * rings (queued: taken from the lists, not started), read before `pending`
 * as the flow goes. */
static void worker_stats(sl_pool *p, sl_pool_stats *out)
{
    for (unsigned s = 0; s < p->opts.max_workers; s++) {
#ifndef SL_MUTANT_POOL_STATS_NO_RINGS /* planted bug when defined: rings not counted */
        out->queued += sl__pool_ring_len(&p->slots[s].ring);
#endif
        sl__pool_worker *w = atomic_load_explicit(&p->slots[s].worker, memory_order_acquire);
        if (!w)
            continue;
        out->running += atomic_load_explicit(&p->slots[s].running, memory_order_acquire);
        out->parked += atomic_load_explicit(&w->parked, memory_order_relaxed);
        out->completed += atomic_load_explicit(&w->completed, memory_order_relaxed);
    }
}

SL_API void sl_pool_get_stats(sl_pool *p, sl_pool_stats *out)
{
    if (!p || !out)
        return;
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&p->lock);
    /* Finished and discarded counts first, pending last, against the flow
     * pending -> running -> completed: a job finished while we read is
     * missed, never counted twice there. `running` is the workers' flag,
     * raised before their take leaves `pending` and held through a batch,
     * so queued + running may count a taken job twice (pool.h says so). */
    out->discarded = atomic_load_explicit(&p->discarded, memory_order_acquire);
    out->completed = atomic_load_explicit(&p->completed_gone, memory_order_relaxed);
    worker_stats(p, out);
    out->queued += SL__PENDING_COUNT(atomic_load_explicit(&p->pending, memory_order_seq_cst));
    out->waiting_on_key = atomic_load_explicit(&p->keys.waiting, memory_order_relaxed);
    if (out->waiting_on_key > out->queued)
        out->waiting_on_key = out->queued; /* read after queued: keep "of those" true */
    out->state = (sl_pool_state)atomic_load_explicit(&p->state, memory_order_relaxed);
    out->workers = atomic_load_explicit(&p->live, memory_order_relaxed);
    out->target = atomic_load_explicit(&p->target, memory_order_relaxed);
    pthread_mutex_unlock(&p->lock);
    out->idle = out->workers > out->running ? out->workers - out->running : 0;
    if (out->parked > out->idle)
        out->parked = out->idle;
    out->submitted = out->queued + out->running + out->completed + out->discarded;
    out->spawned = atomic_load_explicit(&p->spawned, memory_order_relaxed);
    out->retired = atomic_load_explicit(&p->retired, memory_order_relaxed);
    out->respawned = atomic_load_explicit(&p->respawned, memory_order_relaxed);
    out->died = atomic_load_explicit(&p->died, memory_order_relaxed);
    out->capacity = (size_t)p->cap;
    out->max_workers = p->opts.max_workers;
    out->busy = !sl_pool_ready(p);
}
