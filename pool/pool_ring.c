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
 *
 * The claim (sl__pool_ring_claim) is inline in pool_impl.h: a worker makes
 * one around every job of its batch.
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
#ifdef SL_MUTANT_POOL_FILL_TAIL_FIRST
    atomic_store_explicit(&r->tail, t + n, memory_order_release); /* planted bug */
    SL_FI();
#endif
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

