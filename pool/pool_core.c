/*
 * pool/pool_core.c — the pool's shared bookkeeping: what every side of a
 * job's way through the pool needs, written once at the bottom of the pool's
 * files (pool_impl.h has the layering).
 *
 *   pending     a job leaving `pending` (started, taken into a ring,
 *               discarded, a reservation given back), a ring's last job
 *               claimed, and whoever waits on those: blocked submitters,
 *               wait_idle, a shutdown waiting for nothing to be left
 *   discard     an accepted job handed to on_discard, and counted; a
 *               report in progress for a job that already left the places
 *               wait_idle looks at (`reporting`)
 *   push        an accepted job into an inbox (the dispatch modes), then
 *               making sure a worker will look: a searcher, a sleeper woken
 *               through the idle component, or a new worker asked of the
 *               control thread
 *   keys        the job holding a key will not run (it is marked until its
 *               report is over), or is over: the key's next job is pushed
 *   floor       the workers kept while idle
 *   ctl poke    waking the control thread
 *
 * Submitting, the workers, the control thread and the commands call down
 * into this file; it calls only the queue, the key table, the idle-worker
 * component (idle.h: who searches, who sleeps, who wakes whom) and the
 * parking layer, never up.
 */
#include <sched.h>

#include "pool_impl.h"

_Thread_local sl_pool *sl__pool_of_thread;

void sl__pool_discard(sl_pool *p, const sl_job *job, sl_discard why)
{
    if (p->opts.on_discard)
        p->opts.on_discard(job, why, p->opts.user);
    /* Release: the report precedes the count (and the count precedes the
     * pending decrement that the caller makes next). */
    atomic_fetch_add_explicit(&p->discarded, 1, memory_order_release);
}

void sl__pool_report_begin(sl_pool *p)
{
    /* Relaxed: released by the caller's next release (see pool_impl.h). */
    atomic_fetch_add_explicit(&p->reporting, 1, memory_order_relaxed);
}

void sl__pool_report_end(sl_pool *p)
{
    /* Release: the report precedes the decrement (wait_idle acquires it). */
    atomic_fetch_sub_explicit(&p->reporting, 1, memory_order_release);
    sl_event_fence(); /* the decrement before the loads below (wait_idle's Dekker pair) */
    if (sl__pool_drained(p))
        sl_event_notify_all(&p->idle_ev);
}

unsigned sl__pool_floor(const sl_pool *p)
{
    unsigned target = atomic_load_explicit(&p->target, memory_order_seq_cst);
    if (!p->opts.idle_timeout_ns)
        return target;
    return p->opts.min_workers < target ? p->opts.min_workers : target;
}

void sl__pool_ctl_poke(sl_pool *p)
{
    /* seq_cst: the kick is the condition the control thread re-reads after
     * its prepare; it must precede the notify's read of the waiter count. */
    atomic_fetch_add_explicit(&p->ctl_kicks, 1, memory_order_seq_cst);
    sl_event_notify_one(&p->ctl_ev);
}

void sl__pool_wake_workers(sl_pool *p)
{
    /* It fences: the caller's change of the run state or target before its
     * read of each sleep bit (pool/idle.h). */
    sl__idle_wake_all(&p->idle);
}

/* ---- pending: the end of a job's wait ------------------------------------ */

/* Called for n jobs that left `pending` (started, discarded, or a
 * reservation given back). Wakes submitters waiting for room, wait_idle
 * callers when nothing is pending, and — after shutdown — the workers and
 * the control thread, which wait for the count to reach 0. */
/* `pending` reached 0 (closed: whether shutdown was called), or the last
 * busy ring emptied with `pending` at 0: wait_idle may be done, and after
 * shutdown the workers and the control thread wait for this. A ring may
 * still be busy when `pending` reaches 0: the waiters re-check, and the
 * ring's emptying calls this again. */
static void nothing_pending(sl_pool *p, bool closed)
{
    sl_event_notify_all(&p->idle_ev);
    if (closed) {
        sl__pool_wake_workers(p);
        sl__pool_ctl_poke(p);
    }
}

void sl__pool_pending_done(sl_pool *p, uint64_t n)
{
    /* seq_cst: the decrement is the condition change the waiters on
     * space_ev and idle_ev pair with (their prepare is a full barrier). */
    uint64_t v = atomic_fetch_sub_explicit(&p->pending, n, memory_order_seq_cst);
    if (p->cap)
        sl_event_notify_n(&p->space_ev, (size_t)n);
    if (SL__PENDING_COUNT(v) == n)
        nothing_pending(p, v & SL__PENDING_CLOSED);
}

void sl__pool_ring_emptied(sl_pool *p)
{
    /* seq_cst, both: the decrement is a condition change (the waiters'
     * prepare is a full barrier), and the load after it makes this and
     * pending_done a Dekker pair — whichever of the two last leaves
     * nothing to start sees the other's zero and wakes. */
    if (atomic_fetch_sub_explicit(&p->rings_busy, 1, memory_order_seq_cst) != 1)
        return;
    uint64_t v = atomic_load_explicit(&p->pending, memory_order_seq_cst);
    if (SL__PENDING_COUNT(v) == 0)
        nothing_pending(p, v & SL__PENDING_CLOSED);
}

/* ---- making sure a worker will look -------------------------------------- */

static void request_spawn(sl_pool *p)
{
    if (atomic_load_explicit(&p->live, memory_order_relaxed) >=
        atomic_load_explicit(&p->target, memory_order_relaxed))
        return;
    if (atomic_load_explicit(&p->spawn_req, memory_order_relaxed))
        return; /* one request at a time: the control thread re-evaluates */
    /* seq_cst: the request is the condition the control thread re-checks
     * after its prepare; it must precede the notify's read of its waiters. */
    if (!atomic_exchange_explicit(&p->spawn_req, 1, memory_order_seq_cst))
        sl__pool_ctl_poke(p);
}

bool sl__pool_more_work(void *pool) { return sl__pool_takeable(pool, false); }

/* A job was just pushed (or a worker took one and saw more waiting): make
 * sure a worker will look — a searcher, else a sleeper, else a new worker
 * when the pool is below its target. Which sleeper, and why the job cannot
 * be stranded, is the idle component's (idle.h). */
void sl__pool_want_worker(sl_pool *p)
{
    /* Stopped or cancelling: nobody may take it; start wakes everyone. (A
     * start racing with this load is covered by start's own wake-up of every
     * worker, which follows its store of the run state.) */
    if (!sl__pool_may_take(p))
        return;
    /* It fences (our push before its loads: the Dekker pair with a parking
     * worker's registration and re-check) and returns at once while someone
     * searches: that searcher finds the job, or wakes the next sleeper when
     * it stops (idle.h). */
    if (sl__idle_notify_work(&p->idle) == SL__IDLE_NOBODY)
        request_spawn(p); /* every worker is busy */
}

/* ---- push: inboxes ------------------------------------------------------- */

/* The submitting thread's turn at the inboxes of the pool it last fed. Each
 * thread goes round on its own, from a start the pool's cursor deals out when
 * it comes to that pool: a shared cursor took a locked add on one line that
 * every submitter writes, at every submit. Several submitters each going
 * round still spread the jobs evenly; a thread that alternates between pools
 * deals from the cursor each time, as before. */
static _Thread_local struct {
    const sl_pool *pool;
    unsigned next;
} inbox_turn __attribute__((tls_model("initial-exec")));

static unsigned next_turn(sl_pool *p, unsigned n)
{
    if (inbox_turn.pool != p) {
        inbox_turn.pool = p;
        inbox_turn.next = atomic_fetch_add_explicit(&p->rr, 1, memory_order_relaxed);
    }
    unsigned i = inbox_turn.next < n ? inbox_turn.next : inbox_turn.next % n;
    inbox_turn.next = i + 1 < n ? i + 1 : 0; /* no division on the way round */
    return i;
}

static unsigned pick_round_robin(sl_pool *p)
{
    unsigned n = p->queue.inboxes;
    unsigned i = next_turn(p, n);
    for (unsigned k = 0; k < n; k++) {
        unsigned s = i + k < n ? i + k : i + k - n;
        if (atomic_load_explicit(&p->slots[s].worker, memory_order_relaxed))
            return s;
    }
    return i;
}

/* The inbox with the fewest queued jobs — those its worker took into its
 * batch ring included (`load` counts both: sl__pool_count_moved) —
 * counting a running job as one; ties go to the first found from a
 * rotating start. */
static unsigned pick_least_loaded(sl_pool *p)
{
    unsigned n = p->queue.inboxes;
    unsigned start = next_turn(p, n);
    unsigned best = start;
    uint64_t best_load = UINT64_MAX;
    for (unsigned k = 0; k < n && best_load > 0; k++) {
        unsigned s = start + k < n ? start + k : start + k - n;
        if (!atomic_load_explicit(&p->slots[s].worker, memory_order_relaxed))
            continue; /* vacant: only a pointer test, never a dereference */
        uint64_t load = atomic_load_explicit(&p->slots[s].load, memory_order_relaxed) +
                        atomic_load_explicit(&p->slots[s].running, memory_order_relaxed);
        if (load < best_load)
            best = s, best_load = load;
    }
    return best;
}

/* An inbox mode's choice, and least-loaded's count of it. Out of line, so
 * that the shared queue's push (the default, and the hot path) carries none
 * of the inbox loops' registers: 10 instructions per submit (callgrind). */
static __attribute__((noinline)) unsigned pick_inbox(sl_pool *p)
{
    if (p->opts.dispatch == SL_DISPATCH_ROUND_ROBIN)
        return pick_round_robin(p);
    unsigned inbox = pick_least_loaded(p);
    atomic_fetch_add_explicit(&p->slots[inbox].load, 1, memory_order_relaxed);
    return inbox;
}

sl_status sl__pool_push(sl_pool *p, const sl_job *job)
{
    unsigned inbox = p->opts.dispatch == SL_DISPATCH_SHARED ? 0 : pick_inbox(p);
    sl_status st = sl__pool_queue_push(&p->queue, inbox, job);
    if (st != SL_OK) {
        if (p->opts.dispatch == SL_DISPATCH_LEAST_LOADED)
            atomic_fetch_sub_explicit(&p->slots[inbox].load, 1, memory_order_relaxed);
        return st;
    }
    sl__pool_want_worker(p);
    return SL_OK;
}

/* The key stays busy through the report (its next job starts after it),
 * but nothing of it is queued or running now: a unique job of the key —
 * on_discard, or a dead worker's worker_fini, retrying this one — must not
 * be refused. */
void sl__pool_key_holder_gone(sl_pool *p, uint64_t key)
{
    if (key)
        sl__pool_keys_reporting(&p->keys, key);
}

/* The key's next job was accepted long ago and must not be lost to a failed
 * allocation, so a push that fails is retried (the lists allocate a segment
 * per 32+ jobs). Until it is in, a sweep waits for it (handed). */
void sl__pool_key_done(sl_pool *p, uint64_t key)
{
    sl_job next;
    if (!sl__pool_keys_release(&p->keys, key, &next))
        return;
    while (sl__pool_push(p, &next) != SL_OK)
        sched_yield();
    sl__pool_keys_handed(&p->keys);
}
