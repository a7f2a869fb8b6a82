/*
 * pool/exec_idle.c — the executor's idle workers: parking a worker through
 * the shared idle component (idle.h, which has the wake policy and why it
 * strands no work), and the quiescence test that lets sl_exec_free stop the
 * workers.
 *
 * `quiet` (struct sl_exec) counts the workers parked in their main loop (not
 * inside a sync or a scope), with SL__QUIET_EXIT once sl_exec_free has found
 * the executor quiescent (docs/exec.md, "sl_exec_free").
 */
#include "exec_internal.h"

bool sl__wait_done(const sl__wait *wt)
{
    if (!wt)
        return false;
    if (wt->task)  /* acquire: the task's result before our read of it */
        return atomic_load_explicit(&wt->task->state, memory_order_acquire) == SL__TASK_DONE;
    /* acquire: every task of the scope before our return from sl_scope_end */
    return atomic_load_explicit(&wt->scope->sl__pending, memory_order_acquire) == 0;
}

/* The main loop's count of parked workers: leaving fails once EXIT is set. */
static bool quiet_leave(sl_exec *ex)
{
    uint64_t q = atomic_load_explicit(&ex->quiet, memory_order_relaxed);
    do {
        if (q & SL__QUIET_EXIT)
            return false;
        /* seq_cst: ordered against sl__exec_idle_quiesce's CAS that sets EXIT */
    } while (!atomic_compare_exchange_weak_explicit(&ex->quiet, &q, q - 1, memory_order_seq_cst,
                                                    memory_order_relaxed));
    return true;
}

/* After the re-check, in the main loop: exit, or tell sl_exec_free that all
 * workers may now be parked. Returns false when the worker must exit. */
static bool quiet_check(sl_exec *ex)
{
    uint64_t q = atomic_load_explicit(&ex->quiet, memory_order_seq_cst);
    if (q & SL__QUIET_EXIT)
        return false;
    /* seq_cst: Dekker with sl_exec_free's store of stopping and load of quiet */
    SL_FI();
    if (atomic_load_explicit(&ex->stopping, memory_order_seq_cst) &&
        q == atomic_load_explicit(&ex->started, memory_order_relaxed))
        sl_event_notify_all(&ex->freer);
    return true;
}

typedef struct idle_wait {
    sl_exec *ex;
    const sl__worker *w;
    const sl__wait *wt;   /* NULL: the main loop */
} idle_wait;

/* What ends an idle worker's sleep besides a waker's claim: work in a queue
 * it takes from, its wait being over, or — in the main loop — EXIT. In the
 * main loop it also runs quiet_check between the registration and the
 * sleep, as the freer's half of the protocol needs. */
static bool idle_ready(void *arg)
{
    const idle_wait *c = arg;
    return sl__exec_has_work(c->ex, c->w) || sl__wait_done(c->wt) ||
           (!c->wt && !quiet_check(c->ex));
}

bool sl__exec_idle_park(sl_exec *ex, sl__worker *w, const sl__wait *wt)
{
    if (!wt) /* seq_cst: counted before the registration that quiet_check follows */
        atomic_fetch_add_explicit(&ex->quiet, 1, memory_order_seq_cst);
    idle_wait c = { ex, w, wt };
    sl__idle_park(&ex->idle, w->id, &w->searching, idle_ready, &c, SL_FOREVER);
    if (!wt && !quiet_leave(ex))
        return false; /* EXIT: the executor is quiescent and being freed */
    /* Not claimed by a waker (woken by the re-check): search again unless
     * our wait is over. */
    if (!w->searching && !sl__wait_done(wt))
        sl__idle_search_begin(&ex->idle, &w->searching);
    return true;
}

void sl__exec_idle_quiesce(sl_exec *ex)
{
    uint64_t n = atomic_load_explicit(&ex->started, memory_order_relaxed);
    for (;;) {
        uint32_t key = sl_event_prepare(&ex->freer);
        uint64_t q = atomic_load_explicit(&ex->quiet, memory_order_seq_cst);
        if (q == n && !sl__exec_has_work(ex, NULL)) {
            /* seq_cst: a worker's quiet_leave after this CAS fails and exits */
            bool done = atomic_compare_exchange_strong_explicit(
                &ex->quiet, &q, n | SL__QUIET_EXIT, memory_order_seq_cst, memory_order_relaxed);
            sl_event_cancel(&ex->freer);
            if (done)
                break;
            continue;
        }
        sl_event_wait(&ex->freer, key, SL_FOREVER);
    }
    /* Every worker is parked or about to re-check: wake them to see EXIT. */
    sl__idle_wake_all(&ex->idle);
}
