/*
 * sluice/spsc.h — the raw single-producer single-consumer ring (SL_SPSC).
 *
 * A bounded FIFO of fixed-size messages between exactly one producer thread
 * and one consumer thread, with no blocking operations: the embeddable form
 * under the SL_SPSC channel, for people building their own executors.
 *
 *   | operation               | may run concurrently with                        |
 *   |-------------------------|--------------------------------------------------|
 *   | try_push, push_n        | try_pop, pop_n, len (never another push)         |
 *   | try_pop, pop_n          | try_push, push_n, len (never another pop)        |
 *   | len, cap                | everything                                       |
 *   | init, destroy           | nothing                                          |
 *
 * Progress: every operation is wait-free (a bounded number of steps, no loops
 * that depend on the other side). Order: FIFO. Ownership: push moves the bytes
 * of the message into the ring; pop moves them out (see docs/ownership.md).
 *
 * Layout: the producer's index and the consumer's index live on separate cache
 * lines, each beside a private cache of the other side's index and a private
 * copy of the read-only geometry, so that in the steady state each side touches
 * its own line and the slot — the other side's line moves only when the cached
 * view says full (producer) or empty (consumer).
 *
 * Capacity: exactly what was asked. Storage is the capacity plus two cache
 * lines of slack (none for slots of 128 bytes or more, which are lines of
 * their own), rounded up to a power of two so that the free-running counters
 * map to slots with a mask; the slack keeps the producer of a full ring off
 * the line the consumer reads next.
 *
 * Misuse: a second concurrent producer or consumer breaks the ring. Builds with
 * SL_DEBUG_CHECKS (the default without NDEBUG) detect two overlapping pushes or
 * pops and abort with a message naming the ring.
 */
#ifndef SLUICE_SPSC_H
#define SLUICE_SPSC_H

#include "sluice/base.h"
#include "sluice/status.h"

SL_BEGIN_DECLS

/* The ring's geometry, apart from its counters (internal): the ring's own
 * operations read the copy in the side that runs them; a channel in shared
 * memory keeps it in its process-local handle, so that nothing a peer
 * process writes into the segment is ever used as a pointer or a size
 * (sluice/shm.h). The algorithm is written once, against (counters, geometry). */
typedef struct sl__spsc_geom {
    unsigned char *slots;
    size_t mask;      /* storage - 1; storage is a power of two */
    size_t capacity;
    size_t elem_size;
} sl__spsc_geom;

/* What one side of the ring keeps on its own cache line. */
typedef struct sl_spsc_side {
    SL_ATOMIC(size_t) index;   /* this side's position; written by this side only */
    size_t peer_cache;         /* the other side's index as last read by this side */
    sl__spsc_geom geom;        /* geometry, copied per side: read-only after init */
    SL_ATOMIC(unsigned) active; /* debug builds: 1 while an operation runs */
} sl_spsc_side;

typedef struct sl_spsc {
    SL_ALIGNAS(SL_CACHELINE) sl_spsc_side prod; /* tail: next position to write */
    SL_ALIGNAS(SL_CACHELINE) sl_spsc_side cons; /* head: next position to read */
} sl_spsc;


/* Initialises q for capacity messages of elem_size bytes each.
 * Returns SL_OK; SL_EINVAL for NULL q, elem_size 0 or above SL_ELEM_MAX,
 * capacity 0 or so large that the storage size overflows; SL_ENOMEM.
 * On failure q is left unusable and needs no destroy. */
SL_API sl_status sl_spsc_init(sl_spsc *q, size_t elem_size, size_t capacity);

/* Frees the storage. Messages still inside are discarded without being looked
 * at (the channel layer hands them to its drop function first). NULL is fine. */
SL_API void sl_spsc_destroy(sl_spsc *q);

/* Copies up to n messages from elems into the ring, in order; returns how many
 * went (0 when full, and for NULL q or elems or n == 0). Producer only. Wait-free; one release store publishes all
 * of them. */
SL_API size_t sl_spsc_push_n(sl_spsc *q, const void *elems, size_t n);

/* Moves up to n messages out of the ring into out, in order; returns how many
 * (0 when empty, and for NULL q or out or n == 0). Consumer only. Wait-free; one release store frees all their slots. */
SL_API size_t sl_spsc_pop_n(sl_spsc *q, void *out, size_t n);

/* Messages inside now: a snapshot, never above the capacity. Any thread.
 * 0 for NULL. */
SL_API size_t sl_spsc_len(const sl_spsc *q);
/* The capacity given to init; 0 for NULL. */
SL_API size_t sl_spsc_cap(const sl_spsc *q);

/* The batch forms and the length against a given geometry (q supplies the
 * counters only); the sl_spsc_* forms above pass q's own. */
SL_API size_t sl__spsc_push_n_in(sl_spsc *q, const sl__spsc_geom *g, const void *elems, size_t n);
SL_API size_t sl__spsc_pop_n_in(sl_spsc *q, const sl__spsc_geom *g, void *out, size_t n);
SL_API size_t sl__spsc_len_in(const sl_spsc *q, size_t capacity);

/* Reports a second concurrent producer or consumer and aborts. */
SL_API void sl__spsc_misuse(const sl_spsc *q, const char *side);

#ifndef __cplusplus
/* The inline definitions name their parameters and locals sl_*_, as
 * SL_CHAN_TYPED does (sluice/chan.h): a program's file-scope `q` or `tail`
 * declared before this header is not shadowed (-Wshadow).
 *
 * The debug builds' misuse check runs on the ring's own operations only,
 * those that pass the side's own geometry. A channel in shared memory
 * passes its handle's: its `active` words lie in the segment, where a peer
 * process may write anything at any moment, and a check there would let
 * such a write (or a process killed inside an operation) abort this one
 * (sluice/shm.h). */
static inline void sl__spsc_enter(sl_spsc *sl_q_, sl_spsc_side *sl_side_,
                                  const sl__spsc_geom *sl_g_, const char *sl_name_)
{
#if SL_DEBUG_CHECKS
#ifndef SL_MUTANT_SHM_SPSC_PEER_ABORTS /* planted bug when defined: checked in the segment */
    if (sl_g_ != &sl_side_->geom)
        return;
#endif
    if (atomic_exchange_explicit(&sl_side_->active, 1u, memory_order_acquire) != 0)
        sl__spsc_misuse(sl_q_, sl_name_);
#else
    (void)sl_q_, (void)sl_side_, (void)sl_g_, (void)sl_name_;
#endif
}

static inline void sl__spsc_leave(sl_spsc_side *sl_side_, const sl__spsc_geom *sl_g_)
{
#if SL_DEBUG_CHECKS
#ifndef SL_MUTANT_SHM_SPSC_PEER_ABORTS
    if (sl_g_ != &sl_side_->geom)
        return;
#endif
    atomic_store_explicit(&sl_side_->active, 0u, memory_order_release);
#else
    (void)sl_side_, (void)sl_g_;
#endif
}

/* One push with the counters of q and the geometry g (the one algorithm;
 * every index into the slots is masked with g's mask, so counters that a
 * peer corrupted still address a slot of g). */
static inline sl_status sl__spsc_push_in(sl_spsc *sl_q_, const sl__spsc_geom *sl_g_,
                                         const void *sl_elem_)
{
    sl_spsc_side *sl_p_ = &sl_q_->prod;
    sl__spsc_enter(sl_q_, sl_p_, sl_g_, "producer");
    /* Relaxed: only this thread writes the tail. */
    size_t sl_tail_ = atomic_load_explicit(&sl_p_->index, memory_order_relaxed);
    if (sl_tail_ - sl_p_->peer_cache >= sl_g_->capacity) {
        SL_FI();
        /* Acquire: the consumer's reads of the slots it freed happen before
         * our overwrite of them. */
        sl_p_->peer_cache = atomic_load_explicit(&sl_q_->cons.index, memory_order_acquire);
#ifdef SL_MUTANT_SPSC_INLINE_CAP_PLUS_ONE
        /* planted bug: lets capacity + 1 in */
        if (sl_tail_ - sl_p_->peer_cache > sl_g_->capacity) {
#else
        if (sl_tail_ - sl_p_->peer_cache >= sl_g_->capacity) {
#endif
            sl__spsc_leave(sl_p_, sl_g_);
            return SL_FULL;
        }
    }
    sl__copy_msg(sl_g_->slots + (sl_tail_ & sl_g_->mask) * sl_g_->elem_size, sl_elem_,
                 sl_g_->elem_size);
    SL_FI();
    /* Release: the message bytes are visible before the consumer sees the new tail. */
    atomic_store_explicit(&sl_p_->index, sl_tail_ + 1, memory_order_release);
    sl__spsc_leave(sl_p_, sl_g_);
    return SL_OK;
}

/* One pop with the counters of q and the geometry g. */
static inline sl_status sl__spsc_pop_in(sl_spsc *sl_q_, const sl__spsc_geom *sl_g_, void *sl_out_)
{
    sl_spsc_side *sl_c_ = &sl_q_->cons;
    sl__spsc_enter(sl_q_, sl_c_, sl_g_, "consumer");
    size_t sl_head_ = atomic_load_explicit(&sl_c_->index, memory_order_relaxed);
    if (sl_head_ == sl_c_->peer_cache) {
        SL_FI();
        /* Acquire: pairs with the producer's release of the tail, so the
         * message bytes are visible before we read them. */
        sl_c_->peer_cache = atomic_load_explicit(&sl_q_->prod.index, memory_order_acquire);
        if (sl_head_ == sl_c_->peer_cache) {
            sl__spsc_leave(sl_c_, sl_g_);
            return SL_EMPTY;
        }
    }
    sl__copy_msg(sl_out_, sl_g_->slots + (sl_head_ & sl_g_->mask) * sl_g_->elem_size,
                 sl_g_->elem_size);
    SL_FI();
    /* Release: our read of the slot completes before the producer may reuse it. */
    atomic_store_explicit(&sl_c_->index, sl_head_ + 1, memory_order_release);
    sl__spsc_leave(sl_c_, sl_g_);
    return SL_OK;
}

static inline sl_status sl__spsc_try_push_fast(sl_spsc *sl_q_, const void *sl_elem_)
{
    if (!sl_q_ || !sl_elem_)
        return SL_EINVAL;
    return sl__spsc_push_in(sl_q_, &sl_q_->prod.geom, sl_elem_);
}

static inline sl_status sl__spsc_try_pop_fast(sl_spsc *sl_q_, void *sl_out_)
{
    if (!sl_q_ || !sl_out_)
        return SL_EINVAL;
    return sl__spsc_pop_in(sl_q_, &sl_q_->cons.geom, sl_out_);
}
#endif /* !__cplusplus */

#if SL_INLINE_FAST_PATHS
/* Copies one message of elem_size bytes into the ring. Producer only.
 * Returns SL_OK, SL_FULL (nothing consumed), or SL_EINVAL for NULL q or elem.
 * Wait-free. Acts as release: the message (and what the producer wrote
 * before) is visible to the consumer that pops it. q must be initialised. */
static inline sl_status sl_spsc_try_push(sl_spsc *sl_q_, const void *sl_elem_)
{
    return sl__spsc_try_push_fast(sl_q_, sl_elem_);
}
/* Moves the oldest message into out. Consumer only. Returns SL_OK, SL_EMPTY,
 * or SL_EINVAL for NULL q or out. Wait-free. Acts as acquire (pairs with the
 * push). */
static inline sl_status sl_spsc_try_pop(sl_spsc *sl_q_, void *sl_out_)
{
    return sl__spsc_try_pop_fast(sl_q_, sl_out_);
}
#else
SL_API sl_status sl_spsc_try_push(sl_spsc *q, const void *elem);
SL_API sl_status sl_spsc_try_pop(sl_spsc *q, void *out);
#endif

SL_END_DECLS

#endif /* SLUICE_SPSC_H */
