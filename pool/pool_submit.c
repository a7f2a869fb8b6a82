/*
 * pool/pool_submit.c — accepting jobs: the reservation on `pending`,
 * back-pressure on a bounded queue, the admission of keyed jobs, and the
 * public submit calls.
 *
 * A submit (1) reserves one unit of `pending` — the count of accepted jobs
 * not yet started — which is where the capacity bound and shutdown are
 * enforced, (2) for a keyed job asks the key table whether the key is free
 * (if not, the job waits there and the submit is done), then (3) hands the
 * job to the core (sl__pool_push: an inbox, a lock-free list, and making
 * sure a worker will look). Only (2) takes a lock, and only for keyed jobs.
 */
#include "pool_impl.h"
#include "internal/await.h"

/* ---- pending: reservations and back-pressure ----------------------------- */

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

typedef struct room_ctx {
    sl_pool *pool;
    sl_status st; /* the last attempt's result */
} room_ctx;

/* The wait's condition is the reservation itself: true once it succeeded or
 * found the pool closed. */
static bool reserved(void *arg)
{
    room_ctx *c = arg;
    c->st = reserve_bounded(c->pool);
    return c->st != SL_FULL;
}

/* Reserves a place for job: SL_OK, SL_CLOSED, or — no room in time —
 * `no_room` (SL_TIMEDOUT for the timed call, also with timeout 0: SPEC's one
 * rule for timeouts; SL_FULL for try_submit, which is not a timed call); or
 * SL_EXISTS, nothing reserved, for a unique job whose key is taken when
 * there is no room: refused at once, as with room, not after a wait for room
 * it would not use (SL_EXISTS linearizes at that look). */
static sl_status reserve(sl_pool *p, const sl_job *job, uint64_t timeout_ns, sl_status no_room)
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
    room_ctx c = {p, reserve_bounded(p)};
    if (c.st != SL_FULL)
        return c.st;
#ifndef SL_MUTANT_POOL_UNIQUE_WAITS_FOR_ROOM
    if (sl__pool_keys_refuse(&p->keys, job))
        return SL_EXISTS;
#endif
    if (timeout_ns == 0)
        return no_room;
    /* Full: park on space_ev through the await protocol (internal/await.h).
     * Every decrement of `pending` notifies it (sl__pool_pending_done), and
     * so does a shutdown; the await tries once more at the deadline, so room
     * that came with it is not missed. */
    if (sl__event_await(&p->space_ev, reserved, &c, sl_deadline_after(timeout_ns), 0) != SL_OK)
        return no_room;
    return c.st;
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

static sl_status submit(sl_pool *p, const sl_job *job, uint64_t timeout_ns, sl_status no_room)
{
    if (!p || !job || check_job(p, job) != SL_OK)
        return SL_EINVAL;
    sl_status st = reserve(p, job, timeout_ns, no_room);
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
    st = sl__pool_push(p, job);
    if (st != SL_OK) {
        if (job->key)
            sl__pool_key_done(p, job->key);
        sl__pool_pending_done(p, 1);
    }
    return st;
}

SL_API sl_status sl_pool_submit_job(sl_pool *p, const sl_job *job, uint64_t timeout_ns)
{
    return submit(p, job, timeout_ns, SL_TIMEDOUT);
}

SL_API sl_status sl_pool_submit(sl_pool *p, sl_job_fn fn, void *arg)
{
    sl_job job = {.fn = fn, .arg = arg};
    return sl_pool_submit_job(p, &job, SL_FOREVER);
}

SL_API sl_status sl_pool_try_submit(sl_pool *p, sl_job_fn fn, void *arg)
{
    sl_job job = {.fn = fn, .arg = arg};
    return submit(p, &job, 0, SL_FULL);
}
