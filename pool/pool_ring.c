/*
 * pool/pool_ring.c — a worker slot's batch ring: the jobs a worker took from
 * the lists in one go and has not started yet.
 *
 * Taking jobs one at a time from a shared list costs every job a claim on
 * lines the submitters write (the list's slot and index, `pending`, the
 * searcher count). A worker that finds several jobs queued takes up to
 * SL__POOL_BATCH of them with one pop_n and one decrement of `pending`, runs
 * the first and keeps the rest here; each of those then costs one CAS on a
 * line that only this slot's owner usually touches.
 *
 * The ring is single-producer, multi-consumer, and never blocks anyone:
 *   - only the slot's occupant fills it, and only when it is empty
 *     (head == tail); it stores the entries, then publishes them by moving
 *     `tail` (release);
 *   - anyone claims from the front — the owner one job at a time, a thief
 *     (another worker with nothing to do) half of what is there, the control
 *     thread everything when it sweeps — by copying the entries first and
 *     then moving `head` over them with a CAS. A failed CAS means somebody
 *     else claimed (lock-free), and the copy is thrown away.
 * A copy can race with a refill of the same entries only if every entry was
 * claimed meanwhile, which moved `head` past the copier's value, so its CAS
 * fails: the copied fields are relaxed atomics so that such a torn copy is
 * not a data race, merely discarded. The indices only grow (32 bits: an ABA
 * needs 2^32 claims during one copy), and a claim never waits for the owner,
 * so a worker stopped in the middle of a long job — or dead — does not hold
 * back the jobs it took: the others steal them.
 */
#include "pool_impl.h"

void sl__pool_ring_init(sl__pool_ring *r)
{
    atomic_init(&r->head, 0);
    atomic_init(&r->tail, 0);
}

void sl__pool_ring_fill(sl__pool_ring *r, const sl_job *jobs, unsigned n)
{
    uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    for (unsigned i = 0; i < n; i++) {
        sl__pool_ring_entry *e = &r->e[(t + i) % SL__POOL_BATCH];
        atomic_store_explicit(&e->fn, (uintptr_t)jobs[i].fn, memory_order_relaxed);
        atomic_store_explicit(&e->arg, (uintptr_t)jobs[i].arg, memory_order_relaxed);
        atomic_store_explicit(&e->key, jobs[i].key, memory_order_relaxed);
        atomic_store_explicit(&e->prio_flags,
                              (uint64_t)jobs[i].priority | (uint64_t)jobs[i].flags << 32,
                              memory_order_relaxed);
    }
    SL_FI();
    /* Release: the entries before the index that publishes them. */
    atomic_store_explicit(&r->tail, t + n, memory_order_release);
}

static void copy_out(const sl__pool_ring_entry *e, sl_job *out)
{
    out->fn = (sl_job_fn)atomic_load_explicit(&e->fn, memory_order_relaxed);
    out->arg = (void *)atomic_load_explicit(&e->arg, memory_order_relaxed);
    out->key = atomic_load_explicit(&e->key, memory_order_relaxed);
    uint64_t pf = atomic_load_explicit(&e->prio_flags, memory_order_relaxed);
    out->priority = (unsigned)(pf & UINT32_MAX);
    out->flags = (unsigned)(pf >> 32);
}

unsigned sl__pool_ring_claim(sl__pool_ring *r, sl_job *out, unsigned max, bool half,
                             bool *emptied)
{
    /* Acquire, both: the tail's entries are visible; and the head load
     * pairs with the release of the CAS below as the owner reads it before
     * a refill, so that every copy of an entry is done before it is
     * overwritten. */
    uint32_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    for (;;) {
        uint32_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
        uint32_t len = t - h;
        if (len == 0)
            return 0;
        if (len > SL__POOL_BATCH) { /* h is older than a refill: look again */
            h = atomic_load_explicit(&r->head, memory_order_acquire);
            continue;
        }
        unsigned k = half ? (len + 1) / 2 : len;
        k = k < max ? k : max;
        for (unsigned i = 0; i < k; i++)
            copy_out(&r->e[(h + i) % SL__POOL_BATCH], &out[i]);
        SL_FI();
        /* seq_cst: a claim that empties the ring is followed by the
         * decrement of the pool's busy-ring count, whose readers must not
         * see the count without the claim (pool_impl.h, sl__pool_has_work);
         * release for the copy above (see the head load). */
        if (atomic_compare_exchange_weak_explicit(&r->head, &h, h + k, memory_order_seq_cst,
                                                  memory_order_acquire)) {
            /* tail cannot have moved while h < t: fills wait for empty. */
            *emptied = h + k == t;
            return k;
        }
    }
}
