/*
 * pool/exec_deque.h — the executor's per-worker work-stealing deque (internal).
 *
 * A Chase–Lev deque (Chase & Lev, SPAA 2005) with the C11 memory orderings of
 * Lê, Pop, Cohen and Zappa Nardelli, "Correct and Efficient Work-Stealing for
 * Weak Memory Models" (PPoPP 2013), figure 1. The owner pushes and takes at
 * the bottom (LIFO); thieves steal at the top (FIFO) with a CAS on `top`.
 * Items are task pointers; NULL is never pushed.
 *
 *   | operation          | who                  | concurrent with            |
 *   |--------------------|----------------------|----------------------------|
 *   | push, take, size   | the owner only       | steal                      |
 *   | steal, is_empty    | any thread           | everything but init/destroy|
 *   | init, destroy      | one thread           | nothing                    |
 *
 * Orderings (each marked where it is used):
 *   push:  the slot store, then bottom = b + 1 as a release store. The paper
 *          writes a release fence followed by a relaxed store; a release store
 *          of bottom orders the same writes (the slot and the task's contents)
 *          before the only store a thief reads to find them, is the same
 *          instruction on x86 and AArch64 (stlr), and lets ThreadSanitizer see
 *          the synchronisation, which it cannot see through fences. `top` is
 *          read with acquire so that a thief's read of a slot, ordered before
 *          its CAS of top, happens-before the owner reuses that slot.
 *   take:  bottom = b - 1 (relaxed), then a seq_cst fence, then top (relaxed):
 *          the fence is one half of a Dekker pair with the fence in steal, so
 *          that owner and thief cannot both miss each other's index update and
 *          both take the last item. For the last item both race with a
 *          seq_cst CAS on top.
 *   steal: top (acquire), seq_cst fence, bottom (acquire; pairs with push's
 *          release store), the array (acquire; pairs with growth's release
 *          store), the slot (relaxed) — read *before* the CAS on top, because
 *          after a successful CAS the owner may overwrite the slot — then the
 *          seq_cst CAS on top that claims it.
 *
 * Growth: when full, the owner copies the live range into an array twice the
 * size and publishes it with a release store. A thief that loaded the old
 * array pointer may still read from it, so old arrays are not freed: they are
 * kept on a list and freed by sl__deque_destroy (at most as much memory as the
 * current array, since sizes double). Slots are atomic so that a thief's read
 * of a slot the owner is overwriting is a defined (discarded) value, not a
 * data race: its CAS then fails.
 */
#ifndef SLUICE_POOL_EXEC_DEQUE_H
#define SLUICE_POOL_EXEC_DEQUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/base.h"

typedef struct sl__deque_array {
    int64_t mask;                          /* capacity - 1; capacity a power of two */
    struct sl__deque_array *retired_next;  /* older arrays, kept until destroy */
    SL_ATOMIC(void *) slot[];
} sl__deque_array;

typedef struct sl__deque {
    /* Thieves CAS top: its own line, so that steals do not invalidate the
     * owner's line holding bottom on every attempt. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(int64_t) top;
    /* Written by the owner on every push and take, read by thieves. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(int64_t) bottom;
    SL_ATOMIC(sl__deque_array *) array;
    sl__deque_array *retired;              /* owner only */
} sl__deque;

typedef enum sl__steal { SL__STEAL_EMPTY, SL__STEAL_ABORT, SL__STEAL_OK } sl__steal;

/* Initialises an empty deque with room for 2^log2_cap items before growth.
 * Returns false when out of memory (nothing allocated). */
bool sl__deque_init(sl__deque *d, unsigned log2_cap);
/* Frees the arrays; items still inside are forgotten. */
void sl__deque_destroy(sl__deque *d);
/* The owner's slow path of push: grows the array (see above) and returns the
 * new one, or NULL when out of memory (the deque is unchanged). */
sl__deque_array *sl__deque_grow(sl__deque *d, sl__deque_array *a, int64_t t, int64_t b);

/* Owner: pushes item at the bottom. Returns false only when the deque is full
 * and could not grow (out of memory); then nothing was pushed. Wait-free
 * except for growth. The push is a release: what the owner wrote before it is
 * visible to the thief that steals item. */
static inline bool sl__deque_push(sl__deque *d, void *item)
{
    int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
    /* acquire: a thief's read of the slot we may reuse happened-before (see header) */
    int64_t t = atomic_load_explicit(&d->top, memory_order_acquire);
    sl__deque_array *a = atomic_load_explicit(&d->array, memory_order_relaxed);
    if (b - t > a->mask) {
        a = sl__deque_grow(d, a, t, b);
        if (!a)
            return false;
    }
    atomic_store_explicit(&a->slot[b & a->mask], item, memory_order_relaxed);
    /* release: the slot and the item's contents before the bottom that exposes them */
    atomic_store_explicit(&d->bottom, b + 1, memory_order_release);
    return true;
}

/* Owner: takes the most recently pushed item, or NULL when empty (or when a
 * thief won the race for the last item). Wait-free. */
static inline void *sl__deque_take(sl__deque *d)
{
    int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed) - 1;
    sl__deque_array *a = atomic_load_explicit(&d->array, memory_order_relaxed);
    atomic_store_explicit(&d->bottom, b, memory_order_relaxed);
    /* seq_cst fence: our bottom store before our top load (Dekker with steal) */
    atomic_thread_fence(memory_order_seq_cst);
    int64_t t = atomic_load_explicit(&d->top, memory_order_relaxed);
    if (t > b) {
        /* empty: restore bottom (nobody can take below top) */
        atomic_store_explicit(&d->bottom, b + 1, memory_order_relaxed);
        return NULL;
    }
    void *item = atomic_load_explicit(&a->slot[b & a->mask], memory_order_relaxed);
    if (t == b) {
        SL_FI();
        /* the last item: whoever moves top from t owns it */
        if (!atomic_compare_exchange_strong_explicit(&d->top, &t, t + 1, memory_order_seq_cst,
                                                     memory_order_relaxed))
            item = NULL;
        atomic_store_explicit(&d->bottom, b + 1, memory_order_relaxed);
    }
    return item;
}

/* Any thread: steals the oldest item into *out. SL__STEAL_OK with *out set;
 * SL__STEAL_EMPTY; SL__STEAL_ABORT when another thread moved top first (retry
 * may succeed). Lock-free: an abort means some other steal or take
 * succeeded. The successful steal is an acquire: it sees what the pusher
 * wrote before pushing. */
static inline sl__steal sl__deque_steal(sl__deque *d, void **out)
{
    /* acquire: pairs with the CAS of a previous thief (orders our slot read after it) */
    int64_t t = atomic_load_explicit(&d->top, memory_order_acquire);
    /* seq_cst fence: our top load before our bottom load (Dekker with take) */
    atomic_thread_fence(memory_order_seq_cst);
    /* acquire: pairs with push's release store; the slot and the task are visible */
    int64_t b = atomic_load_explicit(&d->bottom, memory_order_acquire);
    if (t >= b)
        return SL__STEAL_EMPTY;
    /* acquire: pairs with growth's release store; the copied slots are visible */
    sl__deque_array *a = atomic_load_explicit(&d->array, memory_order_acquire);
    void *item = atomic_load_explicit(&a->slot[t & a->mask], memory_order_relaxed);
    SL_FI();
    if (!atomic_compare_exchange_strong_explicit(&d->top, &t, t + 1, memory_order_seq_cst,
                                                 memory_order_relaxed))
        return SL__STEAL_ABORT;
    *out = item;
    return SL__STEAL_OK;
}

/* Any thread: true when the deque looked empty at some moment during the call.
 * Used as a hint (lazy splitting) and, after a full fence, by the parking
 * re-check. */
static inline bool sl__deque_is_empty(const sl__deque *d)
{
    int64_t t = atomic_load_explicit(&d->top, memory_order_acquire);
    int64_t b = atomic_load_explicit(&d->bottom, memory_order_acquire);
    return b <= t;
}

#endif /* SLUICE_POOL_EXEC_DEQUE_H */
