/*
 * pool/pool_ctl.c — the pool's control thread ("<name>/ctl"): everything
 * slow, in one place and one thread, so that commands can return at once
 * and the hot path never creates or joins a thread.
 *
 * It joins workers that exited (retired, shut down or died), spawns workers
 * (sl__pool_spawn, in the worker file below it) up to what the target, the
 * floor and the backlog call for (replacing dead ones), sweeps queued jobs
 * to on_discard for reset and cancel, completes the command in progress —
 * marks the pool ready, then calls on_state — and exits once a shutdown has
 * completed.
 *
 * It sleeps on ctl_ev through the await protocol (internal/await.h), its
 * condition a kick counter that every poke (sl__pool_ctl_poke, in the core)
 * increments before it notifies, so no poke is lost. Pokes are rare: a
 * worker exiting, a submit that found nobody searching or asleep below the
 * target, a worker going idle while a stop waits for that, the pending count
 * reaching 0 after shutdown, a command. An idle pool's control thread sleeps
 * without a timeout.
 */
#include <stdio.h>
#include <stdlib.h>

#include "pool_impl.h"
#include "internal/await.h"
#include "internal/util.h"

/* While a cancel waits for submits that reserved before the shutdown but
 * have not pushed yet, or a spawn failed, the thread polls this often. */
#define CTL_POLL_NS (1000000ull)

static void join_exited(sl_pool *p)
{
    pthread_mutex_lock(&p->lock);
    sl__pool_worker *w = p->exited;
    p->exited = NULL;
    pthread_mutex_unlock(&p->lock);
    while (w) {
        sl__pool_worker *next = w->next_exited;
        pthread_join(w->thread, NULL);
        free(w);
        p->joined++;
        w = next;
    }
}

typedef struct sweep_ctx {
    sl_pool *pool;
    sl_discard why;
} sweep_ctx;

/* A swept job leaves `pending` before its report, not after: the report
 * (on_discard) may submit, and on a full bounded pool a blocking submit
 * would wait for the very room this decrement makes — a reset that never
 * completes. `reporting` stands in for the job meanwhile, so that wait_idle
 * still sees every report (counted before the decrement that publishes it). */
static void sweep_leave_pending(sl_pool *p)
{
    sl__pool_report_begin(p);
#ifndef SL_MUTANT_POOL_SWEEP_PENDING_LATE /* planted bug: pending left after the report */
    sl__pool_pending_done(p, 1);
#endif
}

static void sweep_reported(sl_pool *p)
{
#ifdef SL_MUTANT_POOL_SWEEP_PENDING_LATE
    sl__pool_pending_done(p, 1);
#endif
    sl__pool_report_end(p);
}

static void discard_waiting(const sl_job *job, void *arg)
{
    sweep_ctx *c = arg;
    sweep_leave_pending(c->pool);
    sl__pool_discard(c->pool, job, c->why);
    sweep_reported(c->pool);
}

/* Hands an accepted job that left `pending` to on_discard; a keyed job's
 * discard releases its key. */
static void discard_taken(sl_pool *p, const sl_job *job, sl_discard why)
{
    sl__pool_key_holder_gone(p, job->key);
    sl__pool_discard(p, job, why);
    if (job->key)
        sl__pool_key_done(p, job->key);
}

/* Discards every job in the workers' rings (whose workers are stopped,
 * cancelled, or gone): claimed as a thief would, so a worker that claims at
 * the same moment takes each job or leaves it, never both. A ring is
 * counted empty after the reports, so wait_idle has seen them. */
static void sweep_rings(sl_pool *p, sl_discard why)
{
    sl_job got[SL__POOL_BATCH];
#ifdef SL_MUTANT_POOL_NO_SWEEP_RINGS
    return; /* planted bug: reset and cancel leave the rings' jobs */
#endif
    for (unsigned s = 0; s < p->opts.max_workers; s++) {
        bool emptied = false;
        unsigned n = sl__pool_ring_claim(&p->slots[s].ring, got, SL__POOL_BATCH, false, &emptied);
        sl__pool_count_moved(p, s, n, s, 0);
        for (unsigned i = 0; i < n; i++)
            discard_taken(p, &got[i], why);
        if (emptied)
            sl__pool_ring_emptied(p);
    }
}

/* A job a sweep popped from a list of inbox `from`. */
static void sweep_popped(sl_pool *p, const sl_job *job, unsigned from, sl_discard why)
{
    sl__pool_count_moved(p, from, 1, from, 0);
    sweep_leave_pending(p);
    discard_taken(p, job, why);
    sweep_reported(p);
}

/* Hands queued jobs to on_discard: first the jobs waiting for their keys,
 * then the rings, then each list in turn. `all` false (reset): a list gives
 * up what it holds when the sweep reaches it and no more, so submitters that
 * keep it full are not chased; every job queued before the reset began is
 * among those, at the list's front (FIFO, and no worker pops while the pool
 * is stopped). One count over all the lists would not do: a pop takes the
 * top level and inbox 0 first, so jobs pushed there during the sweep used
 * up the count and left older ones queued, to run after the next start.
 * Each job leaves its ring after its report, and `pending` just before it
 * with `reporting` counted until it is done (sweep_leave_pending), so wait_idle
 * has seen it. */
static void sweep(sl_pool *p, sl_discard why, bool all)
{
    sweep_ctx c = {p, why};
    sl__pool_keys_drop_list(sl__pool_keys_take_waiting(&p->keys), discard_waiting, &c);
    sweep_rings(p, why);
    sl_job job;
    unsigned from;
#ifdef SL_MUTANT_POOL_RESET_ONE_COUNT
    /* Planted bug: one count over all the lists, spent in pop order. */
    size_t count = all ? SIZE_MAX : 0;
    for (size_t i = 0; !all && i < sl__pool_queue_lists(&p->queue); i++)
        count += sl__pool_queue_len_at(&p->queue, i);
    while (count-- > 0 && sl__pool_queue_pop(&p->queue, 0, &job, 1, &from))
        sweep_popped(p, &job, from, why);
    return;
#endif
    for (size_t i = 0; i < sl__pool_queue_lists(&p->queue); i++) {
        size_t limit = all ? SIZE_MAX : sl__pool_queue_len_at(&p->queue, i);
        while (limit-- > 0 && sl__pool_queue_pop_at(&p->queue, i, &job, &from))
            sweep_popped(p, &job, from, why);
    }
}

static unsigned running_now(sl_pool *p)
{
    unsigned n = 0;
    pthread_mutex_lock(&p->lock);
    for (unsigned s = 0; s < p->opts.max_workers; s++) {
        n += atomic_load_explicit(&p->slots[s].running, memory_order_relaxed);
    }
    pthread_mutex_unlock(&p->lock);
    return n;
}

/* How many workers the pool should have now. */
static unsigned wanted(sl_pool *p, int run, uint64_t pending, bool asked)
{
    unsigned target = atomic_load_explicit(&p->target, memory_order_seq_cst);
    unsigned want = sl__pool_floor(p);
    if (run == SL__RUN_STOPPED)
        return want;
    uint64_t waiting = atomic_load_explicit(&p->keys.waiting, memory_order_seq_cst);
    uint64_t demand = running_now(p) + (pending > waiting ? pending - waiting : 0) +
                      atomic_load_explicit(&p->rings_busy, memory_order_seq_cst);
    unsigned live = atomic_load_explicit(&p->live, memory_order_seq_cst);
    if (asked && demand < (uint64_t)live + 1)
        demand = (uint64_t)live + 1; /* a submit found every worker busy */
    if (demand > target)
        demand = target;
    return demand > want ? (unsigned)demand : want;
}

/* Spawns up to what is wanted. false if a spawn failed (retried later). */
static bool ensure_workers(sl_pool *p)
{
    int run = atomic_load_explicit(&p->run_state, memory_order_seq_cst);
    uint64_t pending = SL__PENDING_COUNT(atomic_load_explicit(&p->pending, memory_order_seq_cst));
    bool asked = atomic_exchange_explicit(&p->spawn_req, 0, memory_order_seq_cst);
    if (sl__pool_all_leaving(p))
        return true;
    unsigned want = wanted(p, run, pending, asked);
    sl_status st;
    while ((st = sl__pool_spawn(p, want)) == SL_OK)
        continue;
    return st == SL_FULL;
}

/* Under lock: no worker is in a run of jobs (stop's condition). */
static bool all_inactive(sl_pool *p)
{
    for (unsigned s = 0; s < p->opts.max_workers; s++) {
        sl__pool_worker *w = atomic_load_explicit(&p->slots[s].worker, memory_order_acquire);
        if (w && atomic_load_explicit(&w->active, memory_order_seq_cst))
            return false;
    }
    return true;
}

/* Under lock: whether the command in progress (or free's shutdown) has
 * completed, and the state it leads to. */
static bool completed(sl_pool *p, sl_pool_state *now)
{
    unsigned live = atomic_load_explicit(&p->live, memory_order_seq_cst);
    *now = (sl_pool_state)atomic_load_explicit(&p->state, memory_order_relaxed);
    if (p->shut) {
        *now = SL_POOL_SHUTDOWN;
        return live == 0 &&
               p->joined == atomic_load_explicit(&p->spawned, memory_order_relaxed) &&
               sl__pool_drained(p);
    }
    switch (p->cmd) {
    case SL__CMD_START:
        *now = SL_POOL_RUNNING;
        return true;
    case SL__CMD_STOP:
        *now = SL_POOL_STOPPED;
        return all_inactive(p);
    case SL__CMD_WORKERS: {
        /* Threads that exist, not the live count: a shrink completes once
         * the extra workers have run worker_fini and been joined. */
        uint64_t threads = atomic_load_explicit(&p->spawned, memory_order_relaxed) - p->joined;
        return threads <= atomic_load_explicit(&p->target, memory_order_seq_cst) &&
               live >= sl__pool_floor(p);
    }
    case SL__CMD_RESET:
        return p->reset_swept;
    default:
        return false;
    }
}

/* Completes the command in progress if it is done. true once the pool is
 * shut down and this thread should exit. */
static bool try_complete(sl_pool *p)
{
    sl_pool_state now;
    pthread_mutex_lock(&p->lock);
    bool user_cmd = p->cmd != SL__CMD_NONE;
    if ((!user_cmd && !p->shut) || !completed(p, &now)) {
        pthread_mutex_unlock(&p->lock);
        return false;
    }
    p->cmd = SL__CMD_NONE;
    atomic_store_explicit(&p->cmd_waiting, 0, memory_order_relaxed);
    atomic_store_explicit(&p->state, (int)now, memory_order_relaxed);
    /* seq_cst: the condition wait_ready re-checks after its prepare. Under
     * the lock, like apply()'s `busy = 1`: cleared after the unlock, it could
     * overwrite the mark of a command issued in between, and that command's
     * wait_ready would return before its effect (a RESET's sweep). */
    atomic_store_explicit(&p->busy, 0, memory_order_seq_cst);
    pthread_mutex_unlock(&p->lock);
    sl_event_notify_all(&p->ready_ev);
    if (user_cmd && p->opts.on_state)
        p->opts.on_state(p, now, p->opts.user);
    return now == SL_POOL_SHUTDOWN;
}

/* One pass over everything there is to do. true when it should be
 * repeated soon without a poke (a cancel waits for late pushes, or a spawn
 * failed). */
static bool ctl_pass(sl_pool *p)
{
    join_exited(p);
    bool poll = false;
    if (atomic_load_explicit(&p->run_state, memory_order_seq_cst) == SL__RUN_CANCELLING) {
        sweep(p, SL_DISCARD_CANCELLED, true); /* nothing new can come */
        poll = !sl__pool_drained(p); /* a late push, or a worker filling its ring */
    }
    pthread_mutex_lock(&p->lock);
    bool reset = p->cmd == SL__CMD_RESET && !p->reset_swept;
    pthread_mutex_unlock(&p->lock);
    if (reset) {
        /* What was queued when the sweep began, and no more (sweep). */
        sweep(p, SL_DISCARD_RESET, false);
        pthread_mutex_lock(&p->lock);
        p->reset_swept = true;
        pthread_mutex_unlock(&p->lock);
    }
    if (!ensure_workers(p))
        poll = true;
    return poll;
}

typedef struct kick_ctx {
    sl_pool *pool;
    uint64_t seen; /* ctl_kicks before the last pass */
} kick_ctx;

/* A poke came since the pass began: do another. */
static bool kicked(void *arg)
{
    const kick_ctx *c = arg;
    return atomic_load_explicit(&c->pool->ctl_kicks, memory_order_seq_cst) != c->seen;
}

void *sl__pool_ctl_main(void *arg)
{
    sl_pool *p = arg;
    sl__pool_of_thread = p;
    sl__thread_name(pthread_self(), p->name, "ctl");
    for (;;) {
        /* seq_cst: read before the pass, so a poke during it is not lost. */
        kick_ctx c = {p, atomic_load_explicit(&p->ctl_kicks, memory_order_seq_cst)};
        bool poll = ctl_pass(p);
        if (try_complete(p))
            break;
        uint64_t deadline = poll ? sl_deadline_after(CTL_POLL_NS) : SL_FOREVER;
        sl__event_await(&p->ctl_ev, kicked, &c, deadline, 0); /* a poke, or the poll */
    }
    join_exited(p);
    return NULL;
}
