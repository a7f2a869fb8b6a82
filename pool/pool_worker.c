/*
 * pool/pool_worker.c — one worker thread, from spawn to exit: take jobs and
 * run them, search a little when there are none, park in its idle slot,
 * retire when the pool has too many workers or this one was idle too long
 * (those three: pool_park.c), and — if the thread dies inside a job —
 * report the job, release its key and leave the pool in order.
 *
 * A worker's life:
 *
 *   spawn -> init -> [ run streak -> search -> park ]* -> fini -> exit
 *                         |            |         |
 *                         +------------+---------+--> retire / shutdown
 *
 * Run streak: `active` is set (seq_cst) before the state is read, so a stop
 * either sees the worker active (and waits for it) or the worker sees the
 * stop; it stays set across consecutive jobs and is cleared when the lists
 * look empty, which is when a pending stop is told.
 *
 * Take: the next job of the worker's own batch ring (pool_ring.c); else a
 * batch a worker that left did not run (adopt), ahead of its level; else a
 * fresh batch — up to SL__POOL_BATCH jobs of the top level popped at once,
 * the first run now, the rest kept in the ring, all leaving `pending` with
 * one decrement; else half of a busy worker's ring; else, with several
 * priority levels, one job of a lower level. The run state is read before
 * every job, so a stop leaves the rest of a batch in the ring (queued), and
 * a worker that leaves for good makes sure another will look at it.
 *
 * Search, park and retirement — what a worker does out of work, and
 * whether it leaves — are pool_park.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool_impl.h"
#include "internal/spin.h"
#include "internal/util.h"
#include "internal/sysops.h"

static sl__pool_ring *own_ring(const sl__pool_worker *w)
{
    return &w->pool->slots[w->slot].ring;
}

/* The slot stops counting as running (a job is over, or a claim found
 * nothing after setting it), and wait_idle hears of it if that may have
 * been the last sign of work: nothing pending and nothing left in this
 * worker's ring (a ring's last claimer, or whoever empties it, tells). */
static void stop_running(sl__pool_worker *w)
{
    sl_pool *p = w->pool;
    /* Release: the job's effects and the count precede "not running". */
    atomic_store_explicit(&p->slots[w->slot].running, 0, memory_order_release);
    /* Orders the store above before the loads below (wait_idle registers,
     * then reads pending, the rings and running). */
    sl_event_fence();
    if (sl__pool_ring_len(own_ring(w)) == 0 &&
        SL__PENDING_COUNT(atomic_load_explicit(&p->pending, memory_order_seq_cst)) == 0)
        sl_event_notify_all(&p->idle_ev);
}

/* Marks the slot running before a claim that can take the last trace of a
 * job from where wait_idle looks (a ring's last entry, whose emptying
 * publishes this flag). Relaxed: the claim's seq_cst RMW, and the
 * decrement after it, release it. */
static void start_running(sl__pool_worker *w)
{
    atomic_store_explicit(&w->pool->slots[w->slot].running, 1, memory_order_relaxed);
}

/* The next job of this worker's own ring: the steady state of a batch, one
 * CAS on the ring's line and nothing shared with submitters. */
static bool take_own(sl__pool_worker *w)
{
    bool emptied;
    if (sl__pool_ring_len(own_ring(w)) == 0)
        return false;
    start_running(w);
    if (!sl__pool_ring_claim(own_ring(w), &w->job, 1, false, &emptied)) {
        stop_running(w); /* stolen meanwhile */
        return false;
    }
    sl__pool_count_moved(w->pool, w->slot, 1, w->slot, 0);
    if (emptied)
        sl__pool_ring_emptied(w->pool);
    w->has_job = true;
    return true;
}

/* Half of the first other ring that has jobs, the slots from the next one
 * on. Running is set first: stolen jobs are nowhere else wait_idle looks
 * until they run or sit in this worker's ring. */
static unsigned steal(sl__pool_worker *w, sl_job *out, bool *emptied)
{
    sl_pool *p = w->pool;
    unsigned n = p->opts.max_workers;
    if (atomic_load_explicit(&p->rings_busy, memory_order_relaxed) == 0)
        return 0; /* the common case: nothing held anywhere */
    start_running(w);
    for (unsigned k = 1; k < n; k++) {
        unsigned s = w->slot + k < n ? w->slot + k : w->slot + k - n;
#ifdef SL_MUTANT_POOL_NO_STEAL_BUSY
        if (atomic_load_explicit(&p->slots[s].running, memory_order_relaxed))
            continue; /* planted bug: a busy worker's batch waits for it */
#endif
        unsigned got = sl__pool_ring_claim(&p->slots[s].ring, out, SL__POOL_BATCH, true, emptied);
        if (got) {
            sl__pool_count_moved(p, s, got, w->slot, got - 1); /* as take_fresh keeps them */
            return got;
        }
    }
    stop_running(w);
    return 0;
}

/* Slot s's ring no longer holds a batch left behind: drops the flag, and
 * its count if this caller is the one that dropped it. Relaxed, both: the
 * flags only choose which work is taken first (steal finds any ring). */
static void clear_orphan(sl_pool *p, unsigned s)
{
    if (atomic_exchange_explicit(&p->slots[s].orphaned, 0, memory_order_relaxed))
        atomic_fetch_sub_explicit(&p->orphans, 1, memory_order_relaxed);
}

/* This worker leaves for good with jobs in its ring (relaxed: see above). */
static void mark_orphan(sl__pool_worker *w)
{
    sl_pool *p = w->pool;
    if (!atomic_exchange_explicit(&p->slots[w->slot].orphaned, 1, memory_order_relaxed))
        atomic_fetch_add_explicit(&p->orphans, 1, memory_order_relaxed);
}

/* All of a batch whose worker left it behind (a stop, then a shrink or a
 * death): those jobs were taken from the lists before every job still
 * there of their level, so they go first — after the jobs of any higher
 * level, which the lists' pop then takes. FIFO within a level holds with
 * the one worker a shrink may leave, where a steal, which comes after the
 * lists, ran the newer jobs first. Running is set first, as for a steal. */
static unsigned adopt(sl__pool_worker *w, sl_job *out, bool *emptied)
{
    sl_pool *p = w->pool;
#ifdef SL_MUTANT_POOL_ORPHAN_BATCH_LAST
    return 0; /* planted bug: a batch left behind waits behind the lists */
#endif
    if (atomic_load_explicit(&p->orphans, memory_order_relaxed) == 0)
        return 0; /* the common case: nothing left behind */
    for (unsigned s = 0; s < p->opts.max_workers; s++) {
        unsigned level;
        if (!atomic_load_explicit(&p->slots[s].orphaned, memory_order_relaxed))
            continue;
        if (!sl__pool_ring_front_level(&p->slots[s].ring, &level)) {
            clear_orphan(p, s); /* stolen or swept meanwhile */
            continue;
        }
        if (sl__pool_queue_any_above(&p->queue, level))
            return 0;
        start_running(w);
        unsigned got = sl__pool_ring_claim(&p->slots[s].ring, out, SL__POOL_BATCH, false, emptied);
        if (got) {
            sl__pool_count_moved(p, s, got, w->slot, got - 1); /* as take_fresh keeps them */
            clear_orphan(p, s); /* a whole claim empties the ring */
            return got;
        }
        stop_running(w);
    }
    return 0;
}

/* Jobs from the lists: a batch of the top level, else one of any level. */
static unsigned pop_lists(sl__pool_worker *w, sl_job *out, unsigned max)
{
    sl_pool *p = w->pool;
    unsigned from;
    unsigned n = sl__pool_queue_pop(&p->queue, w->slot, out, max, &from);
    sl__pool_count_moved(p, from, n, w->slot, n ? n - 1 : 0); /* as take_fresh keeps them */
    return n;
}

/* Keeps jobs[0..n) in this worker's ring, counted busy first: before the
 * jobs leave `pending` or the ring they were stolen from (the order
 * sl__pool_has_work reads the two in). */
static void keep(sl__pool_worker *w, const sl_job *jobs, unsigned n)
{
    if (n == 0)
        return;
    /* seq_cst: see above. */
    atomic_fetch_add_explicit(&w->pool->rings_busy, 1, memory_order_seq_cst);
    sl__pool_ring_fill(own_ring(w), jobs, n);
}

/* Takes fresh work: (batching) a batch a worker left behind, unless a
 * higher level waits in the lists; else a batch from the lists; else
 * (batching) half of another worker's ring, before any job of a lower
 * level; else one job of a lower level. The first job is the worker's
 * next, the rest go to its ring. */
static bool take_fresh(sl__pool_worker *w)
{
    sl_pool *p = w->pool;
    sl_job got[SL__POOL_BATCH];
    bool emptied = false;
    unsigned n = 0;
    if (p->batch > 1 && (n = adopt(w, got, &emptied)) != 0) {
        keep(w, got + 1, n - 1);
        if (emptied)
            sl__pool_ring_emptied(p);
    } else if ((n = pop_lists(w, got, p->batch)) != 0) {
        /* Relaxed: released by the decrement of `pending` below. */
        start_running(w);
        keep(w, got + 1, n - 1);
        sl__pool_pending_done(p, n);
    } else if (p->batch > 1 && (n = steal(w, got, &emptied)) != 0) {
        keep(w, got + 1, n - 1);
        if (emptied)
            sl__pool_ring_emptied(p);
    } else if (p->batch > 1 && p->levels > 1 && (n = pop_lists(w, got, 1)) != 0) {
        start_running(w);
        sl__pool_pending_done(p, 1);
    }
    if (!n)
        return false;
    w->job = got[0];
    w->has_job = true;
    return true;
}

/* The next job: the own ring's, else fresh work. Either ends a search (a
 * searcher, or a sleeper woken with a token, stops; the last one out wakes
 * the next sleeper if more is waiting: idle.h) — always before the job
 * runs, so no job ever runs while its worker holds a token (worker_died
 * relies on it; and while one is held every submit sees "someone
 * searches" and wakes nobody). The own ring's job needs it too: a worker
 * parked with jobs in its ring (a stop left them there) is woken with a
 * token by the start, and ran them holding it, so a job of that ring that
 * submitted a child and waited for it stalled while another worker slept
 * (found by review). */
static bool take(sl__pool_worker *w)
{
    sl_pool *p = w->pool;
    bool own = take_own(w);
    if (!own && !take_fresh(w))
        return false;
#ifdef SL_MUTANT_POOL_RING_JOB_KEEPS_TOKEN
    if (w->searching && !own) /* planted bug: a ring job runs holding the token */
#else
    if (w->searching)
#endif
        sl__idle_search_end(&p->idle, &w->searching, sl__pool_more_work, p);
    /* More waiting behind fresh work — in the lists, or in a ring just
     * filled: the backlog exceeds the workers that were woken for it (a
     * burst of submits can all see one searcher) — fan out one more, or ask
     * for a new worker when none sleeps, as a submit would. Nothing happens
     * while someone searches, the sleeper just woken above included. */
    if (!own && sl__pool_has_work(p, false))
        sl__pool_want_worker(p);
    return true;
}

/* After a job ran: the job's key, the counters, wait_idle. (A death has
 * its own way out: worker_died.) */
static void job_over(sl__pool_worker *w)
{
    uint64_t key = w->job.key;
    w->has_job = false;
    if (key)
        sl__pool_key_done(w->pool, key);
    /* Only this thread writes it: a load and a store, no RMW. */
    atomic_store_explicit(&w->completed,
                          atomic_load_explicit(&w->completed, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    /* More of its batch to come: the slot stays marked running (the pool
     * is not idle while the ring holds jobs), until the batch is done or a
     * claim finds it stolen. */
    if (sl__pool_ring_len(own_ring(w)) == 0)
        stop_running(w);
}

static void run_streak(sl__pool_worker *w)
{
    sl_pool *p = w->pool;
    /* seq_cst: a Dekker pair with stop, which stores run_state and then
     * reads every worker's `active`. */
    atomic_store_explicit(&w->active, 1, memory_order_seq_cst);
#ifdef SL_MUTANT_POOL_BATCH_THROUGH_STOP /* planted bug: a stop waits for the batch */
    while ((sl__pool_ring_len(own_ring(w)) || sl__pool_may_take(p)) && take(w)) {
#else
    while (sl__pool_may_take(p) && take(w)) {
#endif
        w->job.fn(w->job.arg, w->ctx);
        job_over(w);
        if (atomic_load_explicit(&p->live, memory_order_relaxed) >
                atomic_load_explicit(&p->target, memory_order_relaxed) &&
            sl__pool_ring_len(own_ring(w)) == 0)
            break; /* let sl__pool_exit_due retire this worker, its batch done */
    }
    stop_running(w); /* stopped, or cancelled, in the middle of a batch */
    /* seq_cst: pairs with the control thread's store of cmd_waiting before
     * it reads `active` — one of the two sees the other. */
    atomic_store_explicit(&w->active, 0, memory_order_seq_cst);
    if (atomic_load_explicit(&p->cmd_waiting, memory_order_seq_cst))
        sl__pool_ctl_poke(p);
}

/* The worker stops taking work for good (exit, retirement, death). Jobs
 * left in its ring (stopped or cancelled before it ran them, or a death)
 * stay there for others to steal or the sweep to discard: make sure a
 * worker will look, as for a push (a stopped pool's start wakes every
 * worker anyway). Then, leaving with a token (woken for work that it will
 * not take, or still searching): the component passes it on to a sleeper
 * if work is waiting, as any searcher that stops does. */
static void leave(sl__pool_worker *w)
{
    sl_pool *p = w->pool;
#ifndef SL_MUTANT_POOL_DEATH_LEAVES_RUNNING /* planted bug when defined */
    stop_running(w); /* a death in the middle of a batch */
#endif
    if (sl__pool_ring_len(own_ring(w)) != 0) {
        mark_orphan(w);
        sl__pool_want_worker(p);
    }
    sl__idle_search_end(&p->idle, &w->searching, sl__pool_more_work, p);
}

static enum sl__pool_end work(sl__pool_worker *w)
{
    sl_pool *p = w->pool;
    enum sl__pool_end end;
    for (;;) {
        if ((end = sl__pool_exit_due(w)) != SL__END_NONE)
            break;
        run_streak(w);
        if (sl__pool_may_take(p) && sl__pool_search(w))
            continue;
        if ((end = sl__pool_park(w)) != SL__END_NONE)
            break;
    }
    leave(w);
    return end;
}

/* The worker leaves its slot and the live count, its jobs and its death
 * counted: from here on the control thread may place another worker in the
 * slot (a replacement, after a death). */
static void worker_vacate(sl__pool_worker *w, enum sl__pool_end end)
{
    sl_pool *p = w->pool;
    w->vacated = true;
    pthread_mutex_lock(&p->lock);
    atomic_store_explicit(&p->slots[w->slot].worker, NULL, memory_order_release);
    atomic_fetch_add_explicit(&p->completed_gone,
                              atomic_load_explicit(&w->completed, memory_order_relaxed),
                              memory_order_relaxed);
    if (end == SL__END_DIED) {
        atomic_fetch_add_explicit(&p->died, 1, memory_order_relaxed);
        p->deaths++;
    }
    if (w->counted) /* a death: leaves the live count with its death counted */
        atomic_fetch_sub_explicit(&p->live, 1, memory_order_acq_rel);
    w->counted = false;
    pthread_mutex_unlock(&p->lock);
    sl__pool_ctl_poke(p);
}

/* Hands the thread to the control thread, which joins and frees it. The
 * thread touches nothing of the pool after this. */
static void worker_hand_over(sl__pool_worker *w)
{
    sl_pool *p = w->pool;
    pthread_mutex_lock(&p->lock);
    w->next_exited = p->exited;
    p->exited = w;
    pthread_mutex_unlock(&p->lock);
    sl__pool_ctl_poke(p);
}

static void worker_exit(sl__pool_worker *w, enum sl__pool_end end)
{
    worker_vacate(w, end);
    worker_hand_over(w);
}

static void run_fini(sl__pool_worker *w)
{
    sl_pool *p = w->pool;
#ifndef SL_MUTANT_POOL_FINI_WITHOUT_INIT /* planted bug when defined */
    if (w->fini_done || !w->init_done)
#else
    if (w->fini_done)
#endif
        return;
    w->fini_done = true; /* before: a fini that dies is not run again */
    if (p->opts.worker_fini)
        p->opts.worker_fini(w->id, w->ctx, p->opts.user);
}

/* The dead worker's job goes to on_discard, then its key is released (the
 * key's next job never starts before the report is over). `reporting`
 * stands in for the job, from before its slot stopped running. */
static void report_death(sl__pool_worker *w)
{
    sl_pool *p = w->pool;
#ifndef SL_MUTANT_POOL_DISCARD_DEATH_REPEATED /* planted bug when defined */
    if (w->reported) {
        /* on_discard ended the thread (pthread_exit) and sent it through
         * the handler again: the report is over, though it never returned.
         * Counted as sl__pool_discard would have; calling it again would
         * report the job twice, and for ever if it exits each time. */
        atomic_fetch_add_explicit(&p->discarded, 1, memory_order_release);
    } else
#endif
    {
        w->reported = true; /* before the call, which may not return */
        sl__pool_discard(p, &w->job, SL_DISCARD_WORKER_DIED);
    }
    w->has_job = false;
    if (w->job.key)
        sl__pool_key_done(p, w->job.key);
    w->reporting = false;
    sl__pool_report_end(p);
}

/* The cleanup handler around the worker's life: runs only when the thread
 * dies (pthread_exit or cancellation) inside a job or a callback.
 *
 * The job's report comes last, after the worker has left its slot and the
 * live count: on_discard may resubmit the job, and on a full bounded pool a
 * blocking submit waits for room that only another worker makes — with one
 * worker, the replacement, which the control thread can place only once
 * the dead one is gone. worker_fini runs before that, so that the
 * replacement's worker_init never overlaps it (at most max_workers workers
 * between the two). wait_idle sees the report through `reporting`.
 *
 * A callback that dies in here (worker_fini, on_discard) runs this handler
 * again from the top: what is done stays done (`reporting`, `fini_done`,
 * `vacated`), and what is not is done then. */
static void worker_died(void *arg)
{
    sl__pool_worker *w = arg;
    sl_pool *p = w->pool;
    if (w->has_job && !w->reporting) {
        w->reporting = true;
        sl__pool_report_begin(p); /* published by leave()'s store of `running` */
        sl__pool_key_holder_gone(p, w->job.key); /* before worker_fini, which may retry it */
    }
#ifdef SL_MUTANT_POOL_DEATH_REPORT_HOLDS_SLOT
    if (w->has_job) /* planted bug: reported before the worker leaves its slot */
        report_death(w);
#endif
    atomic_store_explicit(&w->active, 0, memory_order_seq_cst);
    if (atomic_load_explicit(&p->cmd_waiting, memory_order_seq_cst))
        sl__pool_ctl_poke(p);
    if (!w->vacated) { /* else the slot may be a replacement's by now */
        /* A thread dies only inside a job or a callback, and take() ends
         * the search before a job runs, so no token can be held here; ended
         * anyway, because a token that left with its thread would strand
         * work. */
        leave(w);
        run_fini(w);
        /* A worker that had already retired or been shut down and then dies
         * in its worker_fini leaves as it had decided: it is no death to
         * count or to replace (a replacement would undo the retirement). */
#ifndef SL_MUTANT_POOL_FINI_DEATH_REPLACED /* planted bug when defined */
        worker_vacate(w, w->end != SL__END_NONE ? w->end : SL__END_DIED);
#else
        worker_vacate(w, SL__END_DIED);
#endif
    }
    if (w->has_job)
        report_death(w);
    worker_hand_over(w);
}

static void name_thread(const sl__pool_worker *w)
{
    char id[16];
    snprintf(id, sizeof id, "%u", w->id);
    sl__thread_name(pthread_self(), w->pool->name, id);
}

static void *pool_worker_main(void *arg)
{
    sl__pool_worker *w = arg;
    sl_pool *p = w->pool;
    w->thread = pthread_self();
    sl__pool_of_thread = p;
    name_thread(w);
    pthread_cleanup_push(worker_died, w);
    if (p->opts.worker_init)
        w->ctx = p->opts.worker_init(w->id, p->opts.user);
    w->init_done = true;
    w->end = work(w);
    run_fini(w);
    pthread_cleanup_pop(0);
    worker_exit(w, w->end);
    return NULL;
}

/* Takes a vacant slot for w (under the pool lock). */
static bool claim_pool_slot(sl_pool *p, sl__pool_worker *w)
{
    for (unsigned s = 0; s < p->opts.max_workers; s++) {
        if (!atomic_load_explicit(&p->slots[s].worker, memory_order_relaxed)) {
            w->slot = s;
            clear_orphan(p, s); /* what the ring holds is the occupant's to run first */
            atomic_store_explicit(&p->slots[s].worker, w, memory_order_release);
            return true;
        }
    }
    return false;
}

/* Counts one more live worker if there are fewer than limit. */
static bool enter_below(sl_pool *p, unsigned limit)
{
    unsigned live = atomic_load_explicit(&p->live, memory_order_relaxed);
    while (live < limit) {
        if (atomic_compare_exchange_weak_explicit(&p->live, &live, live + 1,
                                                  memory_order_acq_rel,
                                                  memory_order_relaxed))
            return true;
    }
    return false;
}

/* Under the pool lock: counts w as live if fewer than limit (and the
 * target) are, and gives it a slot and an id. *replacement: it makes good a
 * death. false: enough workers, or no slot free yet. */
static bool place_worker(sl_pool *p, sl__pool_worker *w, unsigned limit, bool *replacement)
{
    /* Under lock with the slot: a worker that has left the live count but
     * not yet its slot holds the slot a moment longer. */
    /* The target as it is now: a limit computed from an older, higher target
     * would spawn workers that retire at once, over and over (thread churn
     * while set_workers shrinks the pool). */
    unsigned target = atomic_load_explicit(&p->target, memory_order_seq_cst);
    /* A worker placed now would leave at once: refuse, or a spawn loop whose
     * limit was computed before the shutdown began would start and join
     * threads for as long as each left before its next spawn (thousands, a
     * failed sl_pool_new's cancel under TSan's timing). */
    if (sl__pool_all_leaving(p))
        return false;
    if (!enter_below(p, limit < target ? limit : target)) {
        /* Enough workers without the dead: they are not replaced, and a
         * later spawn for demand is none (stats.respawned). Under the lock
         * a death counts itself under, so no newer one is forgotten. */
#ifndef SL_MUTANT_POOL_DEATHS_KEPT /* planted bug when defined */
        p->deaths = 0;
#endif
        return false;
    }
    if (!claim_pool_slot(p, w)) {
        atomic_fetch_sub_explicit(&p->live, 1, memory_order_acq_rel);
        return false;
    }
    w->id = p->next_id++;
    /* Decided here, under the lock a death counts itself under: a spawn
     * after a death restores the dead worker's place. */
    *replacement = p->deaths > 0;
    p->deaths -= *replacement;
    return true;
}

sl_status sl__pool_spawn(sl_pool *p, unsigned limit)
{
    bool replacement = false;
    if (limit > p->opts.max_workers)
        limit = p->opts.max_workers;
    sl__pool_worker *w = sl__alloc(SL_CACHELINE, sizeof(*w));
    if (!w)
        return SL_ENOMEM;
    memset(w, 0, sizeof(*w));
    w->pool = p;
    w->counted = true;
    pthread_mutex_lock(&p->lock);
    bool placed = place_worker(p, w, limit, &replacement);
    pthread_mutex_unlock(&p->lock);
    if (!placed) {
        free(w);
        return SL_FULL;
    }
    /* Counted before the thread runs worker_init: spawned never lags it. */
    atomic_fetch_add_explicit(&p->spawned, 1, memory_order_relaxed);
    if (replacement)
        atomic_fetch_add_explicit(&p->respawned, 1, memory_order_relaxed);
    pthread_t t;
    if (sl__thread_create(&t, NULL, pool_worker_main, w) != 0) {
        atomic_fetch_sub_explicit(&p->live, 1, memory_order_acq_rel);
        atomic_fetch_sub_explicit(&p->spawned, 1, memory_order_relaxed);
        if (replacement)
            atomic_fetch_sub_explicit(&p->respawned, 1, memory_order_relaxed);
        pthread_mutex_lock(&p->lock);
        p->deaths += replacement;
        atomic_store_explicit(&p->slots[w->slot].worker, NULL, memory_order_release);
        pthread_mutex_unlock(&p->lock);
        free(w);
        return SL_ENOMEM;
    }
    return SL_OK;
}
