/*
 * pool/pool_park.c — a pool worker out of work (pool_worker.c runs its
 * loop): whether it is to leave (a shutdown, or more workers than the
 * target), its search, its park in its idle slot, and its retirement after
 * an idle timeout.
 *
 * Search, park and waking follow the idle-worker component (idle.h), the
 * executor's policy too; the worker owns idle slot `slot`. Searching, it is
 * counted in the component's `searching` (at most spin_limit searchers)
 * and polls briefly; submits skip their wake-up meanwhile. Out of work, it
 * parks in its slot through the await protocol (internal/await.h). A
 * submit that finds nobody searching wakes one sleeper and hands it the
 * wake token, so the woken worker counts as a searcher until it finds work.
 * The flag `searching` says the worker holds such a count; whoever stops
 * holding it ends the search (sl__idle_search_end), and the last searcher
 * out wakes the next sleeper if more work is waiting — so a burst fans out
 * one worker at a time and one job wakes at most one. Every way out of the
 * loop ends the search too (pool_worker.c, work()), or work could wait for
 * a token that left with its thread. The park's deadline is the idle
 * timeout when the pool is above its floor, else none (an idle pool uses no
 * CPU).
 */
#include "pool_impl.h"
#include "internal/spin.h"
#include "internal/util.h"
#include "internal/sysops.h"

/* Polls of the work count before parking. Each poll is two loads; with the
 * pause in between this is a few microseconds — long enough to catch the
 * next job of a steady stream, short enough not to matter when idle. */
#define POOL_SPIN_POLLS 200u

/* Retires: leaves the live count if there are more workers than `limit`.
 * Under the pool lock, with the count of retirements, so that a stats
 * snapshot never sees a worker gone from `workers` but not yet `retired`.
 * The unlocked look first keeps the common case (nothing to do) free. */
static bool leave_above(sl_pool *p, unsigned limit)
{
    if (atomic_load_explicit(&p->live, memory_order_relaxed) <= limit)
        return false;
    bool left = false;
    pthread_mutex_lock(&p->lock);
    unsigned live = atomic_load_explicit(&p->live, memory_order_relaxed);
    while (live > limit && !left)
        left = atomic_compare_exchange_weak_explicit(&p->live, &live, live - 1,
                                                     memory_order_acq_rel,
                                                     memory_order_relaxed);
    if (left)
        atomic_fetch_add_explicit(&p->retired, 1, memory_order_relaxed);
    pthread_mutex_unlock(&p->lock);
    return left;
}

enum sl__pool_end sl__pool_exit_due(sl__pool_worker *w)
{
    sl_pool *p = w->pool;
    if (sl__pool_all_leaving(p)) {
        atomic_fetch_sub_explicit(&p->live, 1, memory_order_acq_rel);
        w->counted = false;
        return SL__END_SHUTDOWN;
    }
    if (leave_above(p, atomic_load_explicit(&p->target, memory_order_seq_cst))) {
        w->counted = false;
        return SL__END_RETIRED;
    }
    return SL__END_NONE;
}

/* Searches for work, counted as a searcher (idle.h). true: work appeared —
 * the worker goes back to take it, still searching (take ends the search:
 * pool_worker.c).
 * false: park, which stops the count once the worker is registered. */
bool sl__pool_search(sl__pool_worker *w)
{
    sl_pool *p = w->pool;
    /* Enough searchers besides this one (one per two CPUs, as Go allows):
     * more would only take CPU from the threads that submit and run jobs. A
     * worker woken with a token (after a command, every sleeper) parks again
     * at once then: park drops the count, and its re-check stands in for
     * the hand-on (idle.h). */
    unsigned others = sl__idle_searchers(&p->idle) - (w->searching ? 1u : 0u);
    if (others >= p->spin_limit)
        return false;
    sl__idle_search_begin(&p->idle, &w->searching);
    for (unsigned i = 0; i < POOL_SPIN_POLLS; i++) {
        if (sl__pool_takeable(p, true))
            return true;
        sl_cpu_relax();
    }
    return false;
}

/* Workers above the floor sleep at most idle_timeout_ns. */
static uint64_t idle_deadline(const sl_pool *p)
{
    if (!p->opts.idle_timeout_ns ||
        atomic_load_explicit(&p->live, memory_order_relaxed) <= sl__pool_floor(p))
        return SL_FOREVER;
    return sl_deadline_after(p->opts.idle_timeout_ns);
}

/* What exit_due would act on, read without acting (no lock, no count
 * changes): park's re-check runs between the registration and the sleep. */
/* Every worker is to leave: a cancel, or a drain with nothing left. */
static bool exit_wanted(const sl_pool *p)
{
    if (sl__pool_all_leaving(p))
        return true;
    return atomic_load_explicit(&p->live, memory_order_seq_cst) >
           atomic_load_explicit(&p->target, memory_order_seq_cst);
}

/* Park's condition: work to take, or a reason to exit. Whatever makes it
 * true wakes the workers after it: a push (sl__pool_want_worker), a command,
 * and `pending` reaching 0 after shutdown (sl__pool_wake_workers). */
static bool wake_reason(void *arg)
{
    const sl_pool *p = arg;
    return sl__pool_takeable(p, true) || exit_wanted(p);
}

/* Sleeps in the worker's idle slot until woken (perhaps with a token: then
 * w->searching is true), wake_reason holds, or the idle deadline passes; at
 * the deadline, with no work visible, retires if the pool is above its
 * floor. */
enum sl__pool_end sl__pool_park(sl__pool_worker *w)
{
    sl_pool *p = w->pool;
    uint64_t deadline = idle_deadline(p);
    atomic_store_explicit(&w->parked, 1, memory_order_relaxed);
    sl_status st = sl__idle_park(&p->idle, w->slot, &w->searching, wake_reason, p, deadline);
    atomic_store_explicit(&w->parked, 0, memory_order_relaxed);
    if (st == SL_TIMEDOUT && !sl__pool_takeable(p, true) && leave_above(p, sl__pool_floor(p))) {
        w->counted = false;
        return SL__END_RETIRED; /* a token claimed at the deadline: work() hands it on */
    }
    return SL__END_NONE;
}
