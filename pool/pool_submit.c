/*
 * pool/pool_submit.c — accepting jobs: the reservation on `pending`,
 * back-pressure, keys, the choice of inbox, and waking a worker.
 *
 * A submit (1) reserves one unit of `pending` — the count of accepted jobs
 * not yet started — which is where the capacity bound and shutdown are
 * enforced, (2) for a keyed job asks the key table whether the key is free
 * (if not, the job waits there and the submit is done), (3) pushes the job
 * into a lock-free list and (4) wakes one parked worker unless a worker is
 * already searching. Only (2) takes a lock, and only for keyed jobs.
 *
 * Wake-ups and the searcher count follow the Go scheduler: a submit wakes a
 * sleeper only when no worker is spinning (a spinner will find the job) and
 * no wake-up is already in flight (`waking`), and a worker that takes a job
 * with more waiting does the same (pool_worker.c), so bursts fan out one
 * worker at a time and a single job never wakes more than one.
 */
#include <sched.h>

#include "pool_impl.h"

/* ---- pending: reservations, back-pressure, the end of a job's wait ------- */

/* Called for n jobs that left `pending` (started, discarded, or a
 * reservation given back). Wakes submitters waiting for room, wait_idle
 * callers when nothing is pending, and — after shutdown — the workers and
 * the control thread, which wait for the count to reach 0. */
void sl__pool_pending_done(sl_pool *p, uint64_t n)
{
    /* seq_cst: the decrement is the condition change the waiters on
     * space_ev and idle_ev pair with (their prepare is a full barrier). */
    uint64_t v = atomic_fetch_sub_explicit(&p->pending, n, memory_order_seq_cst);
    if (p->cap)
        sl_event_notify_n(&p->space_ev, (size_t)n);
    if (SL__PENDING_COUNT(v) != n)
        return;
    sl_event_notify_all(&p->idle_ev);
    if (v & SL__PENDING_CLOSED) {
        sl_event_notify_all(&p->work_ev);
        sl__pool_ctl_poke(p);
    }
}

/* One CAS attempt loop on a bounded pool: SL_OK, SL_FULL or SL_CLOSED. */
static sl_status reserve_bounded(sl_pool *p)
{
    uint64_t v = atomic_load_explicit(&p->pending, memory_order_relaxed);
    for (;;) {
        if (v & SL__PENDING_CLOSED)
            return SL_CLOSED;
        if (SL__PENDING_COUNT(v) >= p->cap)
            return SL_FULL;
        /* seq_cst: in the same total order as shutdown's setting of the
         * closed bit (which of the two came first decides the job's fate). */
        if (atomic_compare_exchange_weak_explicit(&p->pending, &v, v + 1,
                                                  memory_order_seq_cst,
                                                  memory_order_relaxed))
            return SL_OK;
    }
}

/* Parks until room may have appeared: SL_OK to try again, SL_TIMEDOUT. */
static sl_status wait_for_room(sl_pool *p, uint64_t deadline)
{
    uint32_t key = sl_event_prepare(&p->space_ev);
    uint64_t v = atomic_load_explicit(&p->pending, memory_order_seq_cst);
    if ((v & SL__PENDING_CLOSED) || SL__PENDING_COUNT(v) < p->cap) {
        sl_event_cancel(&p->space_ev);
        return SL_OK;
    }
    return sl_event_wait(&p->space_ev, key, deadline);
}

static sl_status reserve(sl_pool *p, uint64_t timeout_ns)
{
    if (!p->cap) {
        /* seq_cst: see reserve_bounded. An unbounded pool reserves with one
         * fetch-and-add and gives it back if the pool turned out closed. */
        uint64_t v = atomic_fetch_add_explicit(&p->pending, 1, memory_order_seq_cst);
        if (!(v & SL__PENDING_CLOSED))
            return SL_OK;
        sl__pool_pending_done(p, 1);
        return SL_CLOSED;
    }
    uint64_t deadline = 0;
    for (;;) {
        sl_status st = reserve_bounded(p);
        if (st != SL_FULL)
            return st;
        if (timeout_ns == 0)
            return SL_FULL;
        if (deadline == 0)
            deadline = sl_deadline_after(timeout_ns);
        if (wait_for_room(p, deadline) == SL_TIMEDOUT) {
            st = reserve_bounded(p); /* room may have come with the deadline */
            return st == SL_FULL ? SL_TIMEDOUT : st;
        }
    }
}

/* ---- inboxes and waking -------------------------------------------------- */

static unsigned pick_round_robin(sl_pool *p)
{
    unsigned n = p->queue.inboxes;
    unsigned i = atomic_fetch_add_explicit(&p->rr, 1, memory_order_relaxed) % n;
    for (unsigned k = 0; k < n; k++) {
        unsigned s = i + k < n ? i + k : i + k - n;
        if (atomic_load_explicit(&p->slots[s].worker, memory_order_relaxed))
            return s;
    }
    return i;
}

/* The inbox with the fewest queued jobs, counting a running job as one;
 * ties go to the first found from a rotating start. */
static unsigned pick_least_loaded(sl_pool *p)
{
    unsigned n = p->queue.inboxes;
    unsigned start = atomic_fetch_add_explicit(&p->rr, 1, memory_order_relaxed) % n;
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

/* A job was just pushed (or a worker took one and saw more waiting): make
 * sure a worker will look — a spinner, else a sleeper, else a new worker
 * when the pool is below its target. */
void sl__pool_want_worker(sl_pool *p)
{
    /* Orders the push before the loads of spinning and of the waiter count:
     * a searcher stops counting itself, then registers on work_ev (a full
     * barrier), then looks at the lists again — either it sees the job or
     * this thread sees it spinning or registered. */
    sl_event_fence();
    if (atomic_load_explicit(&p->spinning, memory_order_seq_cst) != 0)
        return;
    /* Stopped or cancelling: nobody may take it; start wakes everyone. (A
     * start racing with this load is covered by start's own notify_all,
     * which follows its store of the run state.) */
    int run = atomic_load_explicit(&p->run_state, memory_order_seq_cst);
    if (run != SL__RUN_RUNNING && run != SL__RUN_DRAINING)
        return;
    if (sl_event_waiters(&p->work_ev) == 0) {
        request_spawn(p);
        return;
    }
    /* One wake-up in flight at a time: while a woken worker has not yet
     * left work_ev it will look at the lists after this push (it clears
     * `waking` after it deregisters, then searches), so a second notify
     * would only cost a system call. */
    unsigned idle = 0;
    if (atomic_load_explicit(&p->waking, memory_order_relaxed) != 0 ||
        !atomic_compare_exchange_strong_explicit(&p->waking, &idle, 1, memory_order_seq_cst,
                                                 memory_order_relaxed))
        return;
    /* seq_cst: read after the token is taken. A waiter seen here leaves
     * work_ev after this read and clears the token after that; with none,
     * give the token back — a worker registering later re-checks and sees
     * the job itself. */
    if (sl_event_waiters(&p->work_ev) != 0) {
        sl_event_notify_one(&p->work_ev);
        return;
    }
    atomic_store_explicit(&p->waking, 0, memory_order_seq_cst);
    request_spawn(p);
}

/* Pushes an accepted job (a new one, or a keyed job whose key came free)
 * and wakes a worker for it. SL_OK or SL_ENOMEM (nothing pushed). */
static sl_status push_job(sl_pool *p, const sl_job *job)
{
    unsigned inbox = 0;
    if (p->opts.dispatch == SL_DISPATCH_ROUND_ROBIN)
        inbox = pick_round_robin(p);
    else if (p->opts.dispatch == SL_DISPATCH_LEAST_LOADED)
        inbox = pick_least_loaded(p);
    if (p->opts.dispatch == SL_DISPATCH_LEAST_LOADED)
        atomic_fetch_add_explicit(&p->slots[inbox].load, 1, memory_order_relaxed);
    sl_status st = sl__pool_queue_push(&p->queue, inbox, job);
    if (st != SL_OK) {
        if (p->opts.dispatch == SL_DISPATCH_LEAST_LOADED)
            atomic_fetch_sub_explicit(&p->slots[inbox].load, 1, memory_order_relaxed);
        return st;
    }
    sl__pool_want_worker(p);
    return SL_OK;
}

/* The job holding key is over: queue the key's next job, if any. That job
 * was accepted long ago and must not be lost to a failed allocation, so a
 * push that fails is retried (the lists allocate a segment per 32+ jobs). */
void sl__pool_key_done(sl_pool *p, uint64_t key)
{
    sl_job next;
    if (!sl__pool_keys_release(&p->keys, key, &next))
        return;
    while (push_job(p, &next) != SL_OK)
        sched_yield();
}

/* ---- the public submit calls --------------------------------------------- */

static sl_status check_job(const sl_pool *p, const sl_job *job)
{
    if (!job->fn || job->priority >= p->levels || (job->flags & ~(unsigned)SL_JOB_UNIQUE))
        return SL_EINVAL;
    if ((job->flags & SL_JOB_UNIQUE) && job->key == 0)
        return SL_EINVAL;
    return SL_OK;
}

SL_API sl_status sl_pool_submit_job(sl_pool *p, const sl_job *job, uint64_t timeout_ns)
{
    if (!p || !job || check_job(p, job) != SL_OK)
        return SL_EINVAL;
    sl_status st = reserve(p, timeout_ns);
    if (st != SL_OK)
        return st;
    if (job->key) {
        st = sl__pool_keys_admit(&p->keys, job);
        if (st == SL_FULL)
            return SL_OK; /* waits for its key, counted in pending */
        if (st != SL_OK) {
            sl__pool_pending_done(p, 1);
            return st;
        }
    }
    st = push_job(p, job);
    if (st != SL_OK) {
        if (job->key)
            sl__pool_key_done(p, job->key);
        sl__pool_pending_done(p, 1);
    }
    return st;
}

SL_API sl_status sl_pool_submit(sl_pool *p, sl_job_fn fn, void *arg)
{
    sl_job job = {.fn = fn, .arg = arg};
    return sl_pool_submit_job(p, &job, SL_FOREVER);
}

SL_API sl_status sl_pool_try_submit(sl_pool *p, sl_job_fn fn, void *arg)
{
    sl_job job = {.fn = fn, .arg = arg};
    return sl_pool_submit_job(p, &job, 0);
}
