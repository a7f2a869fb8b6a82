/*
 * channels/mpmc.c — the bounded MPMC queue: SCQ index rings (Nikolaev, DISC 2019).
 *
 * The queue is two rings of slot indices, `free` and `used`, over an array of
 * message slots. Each ring has R = 2n entries for at most n indices. An entry
 * is one 64-bit word:
 *
 *     | cycle (high bits) | safe (1 bit, value R) | index (log2 R bits) |
 *
 * `index` == R-1 is ⊥ (no index). A position's cycle is counter / R, for the
 * free-running 64-bit head and tail counters. Comparisons of cycles are done on
 * whole words with the low bits forced to ones, so one signed subtraction
 * compares cycles modulo 2^(63 - log2 R) and the counters may wrap.
 *
 * Why lock-free (docs/guarantees.md has the full argument): an enqueue or
 * dequeue claims a position with one fetch-and-add and then touches only that
 * entry with a bounded number of CAS attempts; if the entry is unusable it
 * takes a new position. Nobody ever waits for another thread's entry: a
 * dequeuer that finds its entry empty marks it with its own cycle so that the
 * late enqueuer gives it up, and the threshold (3n - 1 failed dequeues after
 * the last enqueue) bounds how long dequeuers keep trying on an empty ring.
 * A thread stopped anywhere holds at most one slot index, which other threads
 * never wait for.
 *
 * Memory orders: head/tail/threshold operations and the entry CASes are
 * seq_cst. On x86 these are the same instructions as acq_rel; we pay nothing
 * for the simpler argument, and the channel layer needs the publishing CAS to
 * be seq_cst for its Dekker pair with the eventcount (sluice/park.h).
 */
#include "sluice/mpmc.h"

#include <stdlib.h>
#include <string.h>

#include "internal/spin.h"
#include "rings.h"
#include "internal/testing.h"

/* Dequeuers that find their entry empty while an enqueuer has already claimed
 * the position wait this many pause hints for it before marking the entry,
 * which would send the enqueuer round for a new position. */
#define SCQ_EMPTY_SPIN 64

/* Entries per cache line: log2(64 / 8). */
#define SCQ_LINE_SHIFT 3

/* Smallest number of indices an index ring is built for, whatever the
 * capacity. SCQ's threshold (3n - 1 failed dequeue attempts after the last
 * enqueue) must also absorb the decrements of dequeuers already in flight when
 * an enqueue re-arms it; the paper's argument assumes no more threads than n.
 * With n = 1 (capacity 1) three in-flight failures drove it negative while the
 * one free index sat in the ring, and with nothing left to enqueue it stayed
 * there: a permanent FULL, found by the fault-injection build. So n >= 256:
 * up to 256 threads operating on one queue at once (docs/guarantees.md). */
#define SCQ_MIN_HALF 256

typedef SL_ATOMIC(uint64_t) scq_word;

/* The counters and threshold of one ring, wherever sl_mpmc keeps them. */
typedef struct scq_view {
    scq_word *entries;
    scq_word *head;
    scq_word *tail;
    SL_ATOMIC(int64_t) *threshold;
    unsigned order; /* log2 R */
    uint64_t half;  /* n = R / 2 */
} scq_view;

static inline bool cyc_less(uint64_t a, uint64_t b) { return (int64_t)(a - b) < 0; }

static inline uint64_t scq_r(const scq_view *v) { return (uint64_t)1 << v->order; }
/* Low mask: index bits and the safe bit. */
static inline uint64_t scq_low(const scq_view *v) { return (scq_r(v) << 1) - 1; }
/* A counter's cycle, in entry-word form (low bits all ones). */
static inline uint64_t scq_cycle(const scq_view *v, uint64_t counter)
{
    return (counter << 1) | scq_low(v);
}
static inline int64_t scq_threshold3(const scq_view *v) { return (int64_t)(3 * v->half - 1); }

/* Spreads consecutive positions over different cache lines, so that threads
 * working on neighbouring positions do not share (and bounce) one line. A
 * rotation of the position's bits: a bijection on [0, R). */
static inline size_t scq_map(const scq_view *v, uint64_t counter)
{
    uint64_t mask = scq_r(v) - 1, pos = counter & mask;
    if (v->order <= SCQ_LINE_SHIFT)
        return (size_t)pos;
    return (size_t)((pos >> (v->order - SCQ_LINE_SHIFT)) | ((pos << SCQ_LINE_SHIFT) & mask));
}

static void scq_enqueue(const scq_view *v, uint64_t index)
{
    const uint64_t r = scq_r(v), low = scq_low(v), bottom = r - 1;
    for (;;) {
        SL_FI();
        uint64_t tail = atomic_fetch_add_explicit(v->tail, 1, memory_order_seq_cst);
        uint64_t tcycle = scq_cycle(v, tail);
        scq_word *slot = &v->entries[scq_map(v, tail)];
        SL_FI();
        uint64_t e = atomic_load_explicit(slot, memory_order_acquire);
        for (;;) {
            bool older = cyc_less(e | low, tcycle), empty = (e & bottom) == bottom;
            /* An unsafe empty entry may still be read by a dequeuer of an older
             * cycle unless every dequeuer has moved past this position. */
            bool usable = older && empty &&
                          ((e & r) || !cyc_less(tail, atomic_load_explicit(
                                                            v->head, memory_order_seq_cst)));
            if (!usable)
                break;
            uint64_t fresh = (tcycle ^ low) | r | index;
            SL_FI();
            if (atomic_compare_exchange_weak_explicit(slot, &e, fresh, memory_order_seq_cst,
                                                      memory_order_acquire)) {
                /* Re-arm the dequeuers' budget; skip the store when it is armed. */
                if (atomic_load_explicit(v->threshold, memory_order_seq_cst) != scq_threshold3(v))
                    atomic_store_explicit(v->threshold, scq_threshold3(v), memory_order_seq_cst);
                return;
            }
        }
    }
}

/* The dequeuer moved past the tail: drag the tail up to it so that enqueuers
 * do not use positions every dequeuer has already given up on. */
static void scq_catchup(const scq_view *v, uint64_t tail, uint64_t head)
{
    SL_FI();
    while (!atomic_compare_exchange_weak_explicit(v->tail, &tail, head, memory_order_seq_cst,
                                                  memory_order_seq_cst)) {
        SL_FI();
        head = atomic_load_explicit(v->head, memory_order_seq_cst);
        tail = atomic_load_explicit(v->tail, memory_order_seq_cst);
        if (!cyc_less(tail, head))
            break;
    }
}

/* Waits briefly for an enqueuer that has claimed position `head` but not yet
 * written it. Returns the entry as last seen. Bounded: lock-freedom holds. */
static uint64_t scq_wait_enqueuer(const scq_view *v, scq_word *slot, uint64_t head, uint64_t e)
{
    const uint64_t bottom = scq_r(v) - 1;
    if (!cyc_less(head, atomic_load_explicit(v->tail, memory_order_seq_cst)))
        return e; /* nobody claimed it yet: waiting would be pointless */
    for (unsigned i = 0; i < SCQ_EMPTY_SPIN && (e & bottom) == bottom; i++) {
        sl_cpu_relax();
        e = atomic_load_explicit(slot, memory_order_acquire);
    }
    return e;
}

/* Tries to take the entry at position `head`. Returns true with *index set,
 * or false after making sure no enqueuer of an older cycle will use it. */
static bool scq_take(const scq_view *v, uint64_t head, uint64_t *index)
{
    const uint64_t r = scq_r(v), low = scq_low(v), bottom = r - 1;
    const uint64_t hcycle = scq_cycle(v, head);
    scq_word *slot = &v->entries[scq_map(v, head)];
    SL_FI();
    uint64_t e = atomic_load_explicit(slot, memory_order_acquire);
    bool waited = false;
    for (;;) {
        if ((e | low) == hcycle) {
            /* Ours: consume by setting the index to ⊥, keeping cycle and safe bit. */
            SL_FI();
            atomic_fetch_or_explicit(slot, bottom, memory_order_acq_rel);
            *index = e & bottom;
            return true;
        }
        if (!cyc_less(e | low, hcycle))
            return false; /* a newer cycle owns it already */
        uint64_t next;
        if ((e & bottom) != bottom) {
            /* An older cycle's index that its dequeuer has not taken yet: mark
             * it unsafe so no enqueuer of our cycle reuses the entry before it. */
            next = e & ~r;
            if (next == e)
                return false;
        } else {
            if (!waited) {
                waited = true;
                uint64_t seen = scq_wait_enqueuer(v, slot, head, e);
                if (seen != e) {
                    e = seen;
                    continue;
                }
            }
            /* Empty: move it to our cycle so the late enqueuer goes elsewhere. */
            next = (hcycle ^ low) | (e & r) | bottom;
        }
        SL_FI();
        if (atomic_compare_exchange_weak_explicit(slot, &e, next, memory_order_acq_rel,
                                                  memory_order_acquire))
            return false;
    }
}

static bool scq_dequeue(const scq_view *v, uint64_t *index)
{
    /* A negative threshold means empty: return without touching the head. */
    if (atomic_load_explicit(v->threshold, memory_order_seq_cst) < 0)
        return false;
    for (;;) {
        SL_FI();
        uint64_t head = atomic_fetch_add_explicit(v->head, 1, memory_order_seq_cst);
        if (scq_take(v, head, index))
            return true;
        SL_FI();
        uint64_t tail = atomic_load_explicit(v->tail, memory_order_seq_cst);
        if (!cyc_less(head + 1, tail)) {
            scq_catchup(v, tail, head + 1);
            atomic_fetch_sub_explicit(v->threshold, 1, memory_order_seq_cst);
            return false;
        }
        if (atomic_fetch_sub_explicit(v->threshold, 1, memory_order_seq_cst) <= 0)
            return false;
    }
}

/* ---- the two rings of one queue ---------------------------------------- */

static scq_view free_view(const sl_mpmc *q)
{
    sl_mpmc *m = (sl_mpmc *)(uintptr_t)q;
    return (scq_view){m->free_ring.entries, &m->free_head, &m->free_tail, &m->free_threshold,
                      m->free_ring.order, m->half};
}

static scq_view used_view(const sl_mpmc *q)
{
    sl_mpmc *m = (sl_mpmc *)(uintptr_t)q;
    return (scq_view){m->used_ring.entries, &m->used_head, &m->used_tail, &m->used_threshold,
                      m->used_ring.order, m->half};
}

static unsigned log2_pow2(uint64_t x)
{
    unsigned o = 0;
    while (((uint64_t)1 << o) < x)
        o++;
    return o;
}

/* Every position starts one cycle behind `start`, safe and empty; the first
 * `fill` positions of the free ring then hold slot indices 0 .. fill-1. */
static void scq_init(scq_view *v, uint64_t start, uint64_t fill)
{
    uint64_t r = scq_r(v), low = scq_low(v);
    uint64_t stale = ((scq_cycle(v, start) ^ low) - (r << 1)) | low;
    for (uint64_t i = 0; i < r; i++)
        atomic_init(&v->entries[i], stale);
    for (uint64_t k = 0; k < fill; k++)
        atomic_init(&v->entries[scq_map(v, start + k)], (scq_cycle(v, start + k) ^ low) | r | k);
    atomic_init(v->head, start);
    atomic_init(v->tail, start + fill);
    atomic_init(v->threshold, fill ? scq_threshold3(v) : -1);
}

sl_status sl__mpmc_init_at(sl_mpmc *q, size_t elem_size, size_t capacity, uint64_t start)
{
    if (!q || elem_size == 0 || elem_size > SL_ELEM_MAX || capacity == 0)
        return SL_EINVAL;
    /* Index rings of 2n words, and index values below n, must fit easily. */
    if (capacity > ((size_t)1 << 40) || capacity > SIZE_MAX / elem_size)
        return SL_EINVAL;
    uint64_t half = (uint64_t)1 << log2_pow2(capacity < SCQ_MIN_HALF ? SCQ_MIN_HALF : capacity);
    /* aligned_alloc wants a size that is a multiple of the alignment (the
     * sanitizers' allocators enforce it): round both up to a cache line. */
    size_t ring_bytes = sl__round_to_line((size_t)(2 * half) * sizeof(uint64_t));
    size_t slot_bytes = sl__round_to_line(capacity * elem_size);
    scq_word *free_e = aligned_alloc(SL_CACHELINE, ring_bytes);
    scq_word *used_e = aligned_alloc(SL_CACHELINE, ring_bytes);
    unsigned char *slots = aligned_alloc(SL_CACHELINE, slot_bytes);
    if (!free_e || !used_e || !slots) {
        free(free_e);
        free(used_e);
        free(slots);
        return SL_ENOMEM;
    }
    memset(q, 0, sizeof *q);
    q->free_ring = (sl_scq){free_e, log2_pow2(2 * half)};
    q->used_ring = (sl_scq){used_e, log2_pow2(2 * half)};
    q->slots = slots;
    q->elem_size = elem_size;
    q->capacity = capacity;
    q->half = (size_t)half;
    scq_view fv = free_view(q), uv = used_view(q);
    scq_init(&fv, start, capacity);
    scq_init(&uv, start, 0);
    return SL_OK;
}

SL_API sl_status sl_mpmc_init(sl_mpmc *q, size_t elem_size, size_t capacity)
{
    return sl__mpmc_init_at(q, elem_size, capacity, 0);
}

SL_API void sl_mpmc_destroy(sl_mpmc *q)
{
    if (!q)
        return;
    free(q->free_ring.entries);
    free(q->used_ring.entries);
    free(q->slots);
    q->free_ring.entries = q->used_ring.entries = NULL;
    q->slots = NULL;
}

static inline unsigned char *slot_at(const sl_mpmc *q, uint64_t index)
{
    return q->slots + (size_t)index * q->elem_size;
}

/* ---- the four steps, shared with the overwrite ring (channels/rings.h) --- */

bool sl__mpmc_take_free(sl_mpmc *q, uint64_t *index)
{
    scq_view fv = free_view(q);
    return scq_dequeue(&fv, index);
}

void sl__mpmc_publish(sl_mpmc *q, uint64_t index)
{
    /* The used ring's seq_cst CAS publishes the bytes (release) and is the
     * condition change a blocked receiver's eventcount pairs with. */
    scq_view uv = used_view(q);
    scq_enqueue(&uv, index);
}

bool sl__mpmc_take_used(sl_mpmc *q, uint64_t *index)
{
    scq_view uv = used_view(q);
    return scq_dequeue(&uv, index);
}

void sl__mpmc_release(sl_mpmc *q, uint64_t index)
{
    /* Release (seq_cst): our read of the slot completes before a producer
     * that takes the index from the free ring writes it. */
    scq_view fv = free_view(q);
    scq_enqueue(&fv, index);
}

unsigned char *sl__mpmc_slot(sl_mpmc *q, uint64_t index) { return slot_at(q, index); }

SL_API sl_status sl_mpmc_try_push(sl_mpmc *q, const void *elem)
{
    if (!q || !elem)
        return SL_EINVAL;
    uint64_t index;
    if (!sl__mpmc_take_free(q, &index))
        return SL_FULL;
    memcpy(slot_at(q, index), elem, q->elem_size);
    SL_FI(); /* holding a slot: others must not wait for us */
    sl__mpmc_publish(q, index);
    return SL_OK;
}

SL_API sl_status sl_mpmc_try_pop(sl_mpmc *q, void *out)
{
    if (!q || !out)
        return SL_EINVAL;
    uint64_t index;
    if (!sl__mpmc_take_used(q, &index))
        return SL_EMPTY;
    memcpy(out, slot_at(q, index), q->elem_size);
    SL_FI();
    sl__mpmc_release(q, index);
    return SL_OK;
}

void sl__mpmc_drain(sl_mpmc *q, sl_visit_fn fn, void *ctx)
{
    scq_view fv = free_view(q), uv = used_view(q);
    uint64_t index;
    while (scq_dequeue(&uv, &index)) {
        fn(slot_at(q, index), ctx);
        scq_enqueue(&fv, index);
    }
}

SL_API size_t sl_mpmc_push_n(sl_mpmc *q, const void *elems, size_t n)
{
    const unsigned char *p = elems;
    size_t done = 0;
    if (!q || !elems)
        return 0;
    while (done < n && sl_mpmc_try_push(q, p + done * q->elem_size) == SL_OK)
        done++;
    return done;
}

SL_API size_t sl_mpmc_pop_n(sl_mpmc *q, void *out, size_t n)
{
    unsigned char *p = out;
    size_t done = 0;
    if (!q || !out)
        return 0;
    while (done < n && sl_mpmc_try_pop(q, p + done * q->elem_size) == SL_OK)
        done++;
    return done;
}

SL_API size_t sl_mpmc_len(const sl_mpmc *q)
{
    if (!q)
        return 0;
    uint64_t head = atomic_load_explicit(&q->used_head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&q->used_tail, memory_order_acquire);
    int64_t len = (int64_t)(tail - head);
    if (len <= 0)
        return 0;
    return (uint64_t)len > q->capacity ? q->capacity : (size_t)len;
}

SL_API size_t sl_mpmc_cap(const sl_mpmc *q) { return q ? q->capacity : 0; }
