/*
 * channels/rings.h — what the raw queues share with each other and with the
 * channel façade (internal, not installed): the MPMC steps the overwrite ring
 * is built on, the in-place drains and the ring's visiting push that the
 * façade's adapters call, and the cache-line rounding of their allocations.
 */
#ifndef SLUICE_CHANNELS_RINGS_H
#define SLUICE_CHANNELS_RINGS_H

#include "sluice/list.h"
#include "sluice/mpmc.h"
#include "sluice/park.h"
#include "sluice/ring.h"
#include "sluice/spsc.h"

#include "cellring.h"

#include <string.h>

/* bytes rounded up to whole cache lines: aligned_alloc(SL_CACHELINE, ...)
 * wants a multiple of the alignment (the sanitizers' allocators enforce it),
 * and the storage then shares no line with a neighbouring allocation. */
static inline size_t sl__round_to_line(size_t bytes)
{
    return (bytes + SL_CACHELINE - 1) & ~(size_t)(SL_CACHELINE - 1);
}

/* Copies a message of at most 8 bytes into or out of a cell's word: at 8
 * bytes two moves, where a copy of a size known only at run time is a call
 * into the C library (and sl__copy_msg's cases for larger sizes would be
 * dead code in every direct path). */
static inline void sl__copy_word(void *dst, const void *src, size_t size)
{
    if (size == 8)
        memcpy(dst, src, 8);
    else
        memcpy(dst, src, size);
}

/* Initialises q as sl_mpmc_init does, with positions starting at the lap
 * boundary at or below `start` (tests cross the counters' wrap-around), and,
 * in the indexed form (messages over 8 bytes), `spare` slots beyond the
 * capacity (the overwrite ring's pushers hold one while displacing). */
sl_status sl__mpmc_init_mode(sl_mpmc *q, size_t elem_size, size_t capacity, uint64_t start,
                             size_t spare);

/* SL_MPMC's swap form serves messages of 9 to SL__MPMC_SWAP_MAX bytes: a pop
 * copies through a buffer of this size on its stack (channels/mpmc_swap.c). Larger
 * messages, and the overwrite ring, keep the indexed form. */
#define SL__MPMC_SWAP_MAX ((size_t)256)

/* sl_mpmc_try_push for the SL_MPMC channel: the same, and, when a push of
 * the swap form had found every spare held (so a sender may have gone to
 * sleep on SL_FULL with room in the ring), the push that gives a slot back
 * wakes everyone waiting on not_full (channels/mpmc_swap.c). */
sl_status sl__mpmc_send(sl_mpmc *q, const void *elem, sl_event *not_full);
/* sl_mpmc_push_n, likewise. */
size_t sl__mpmc_send_n(sl_mpmc *q, const void *elems, size_t n, sl_event *not_full);
/* That wake (channels/chan.c): everyone on not_full, which is always an
 * SL_MPMC channel's, and the channel's send-side selectors and descriptors,
 * which wait on the select bell and their eventfds, not on not_full. The
 * caller's give-back is fenced and its take of the flag a seq_cst RMW, as
 * sl__chan_ring_selectors asks. */
void sl__chan_wake_starved(sl_event *not_full);

/* Slots an SL_SPSC ring of this geometry stores (a power of two: the
 * capacity and its slack); the caller has checked the sizes as
 * sl_spsc_init does. */
size_t sl__spsc_storage(size_t elem_size, size_t capacity);

/* Messages of at most 8 bytes live in the used ring's cells ("direct");
 * larger ones in slots whose indices travel through the used ring and either
 * the free ring ("indexed") or the spare table ("swap", channels/mpmc_swap.c). */
static inline bool sl__mpmc_direct(const sl_mpmc *q) { return q->slots == NULL; }

/* The used ring of q: the cells every form's push publishes in and every
 * form's pop takes from (cellring.h). */
static inline sl__cellring sl__mpmc_used_ring(const sl_mpmc *q)
{
    sl_mpmc *m = (sl_mpmc *)(uintptr_t)q;
    return (sl__cellring){m->used, &m->head, &m->tail, m->one_lap, m->capacity};
}

/* The indexed form's steps: take a free slot index, take the oldest used one,
 * return one to the free ring, and address a slot. Lock-free, ordered as in
 * sl_mpmc_try_*. */
bool sl__mpmc_take_free(sl_mpmc *q, uint64_t *index);
bool sl__mpmc_take_used(sl_mpmc *q, uint64_t *index);
void sl__mpmc_release(sl_mpmc *q, uint64_t index);
unsigned char *sl__mpmc_slot(sl_mpmc *q, uint64_t index);

/* Publishes value (a message of at most 8 bytes, or a slot index) on the
 * used ring. When the ring is full: returns 1 and changes nothing, or, with
 * `displace`, swaps out the oldest value into *evicted in the same step and
 * returns 2. Returns 0 when published without displacing. */
int sl__mpmc_publish(sl_mpmc *q, uint64_t value, bool displace, uint64_t *evicted);

/* A shared SL_MPMC queue seen as its ring, slots and spares (cellring.h), apart
 * from where its counters and geometry are kept: the raw queue builds one
 * from its own fields; a channel in shared memory keeps one, validated once
 * at open, in its process-local handle (sluice/shm.h), with the counters and
 * cells in the segment. The push and pop are written once, against a view. */
typedef struct sl__mpmc_view {
    sl__cellring used;
    unsigned char *slots;  /* NULL: the direct form; else the swap form's */
    size_t elem_size;
    size_t slot_count;
    /* The swap form only (spares NULL otherwise): the spare table's
     * spare_count entries, spare_mask as sl_mpmc's, the starved word, and
     * the event a give-back that finds it raised wakes (the channel's
     * not_full). */
    SL_ATOMIC(uint64_t) *spares;
    size_t spare_count;
    size_t spare_mask;
    SL_ATOMIC(uint32_t) *starved;
    sl_event *wake;
    /* The record that names this process's pushes (and pops over 256
     * bytes) in the entries they hold: the handle's record; SL__HELD_NOBODY
     * until it is claimed, or while every record is held (when a send is
     * refused and a pop copies first). Set before the handle's first push;
     * atomic (relaxed) because a refused claim writes it again while a
     * thread sharing the handle may read it. */
    SL_ATOMIC(uint32_t) holder;
} sl__mpmc_view;

/* One push and one pop through a view, with every slot index read from the
 * rings or the spare table checked against slot_count before use (before
 * any copy in or out): an index out of range (a corrupted segment) makes
 * the push say SL_FULL and the pop SL_EMPTY, and the index is dropped. For
 * shared channels; the raw queue's own forms skip the check (their rings
 * are private memory). */
sl_status sl__mpmc_push_in(const sl__mpmc_view *v, const void *elem);
sl_status sl__mpmc_pop_in(const sl__mpmc_view *v, void *out);
/* A pop of messages over SL__MPMC_SWAP_MAX bytes that holds no spare: the
 * slot is copied into out before the cell is taken (so a pop that loses
 * its race and then finds the ring empty has written out). For a handle
 * with no record claimed in this process. */
sl_status sl__mpmc_pop_copy_in(const sl__mpmc_view *v, void *out);

/* Gives back what pushes of the processes in `dead` (a bit per record)
 * held when they died: for each entry one of them holds, the slot that is
 * no longer in circulation, once the look tells which (docs/guarantees.md,
 * "Send, holding a spare"). Returns the records still named by an entry
 * (their slot was not seen yet: the next look tries again). The caller has
 * established that every process in `dead` is dead. Cold: it scans the
 * cells and the spare table, and allocates a bit per slot. */
uint64_t sl__mpmc_settle_spares(const sl__mpmc_view *v, uint64_t dead);

/* A fork()ed child's spare-table entries start from a seed of its own
 * (channels/mpmc_swap.c, home_entry): called in the child, by its one thread. */
void sl__mpmc_forked_child(void);

/* The swap form's bytes between slots: whole words (channels/mpmc_swap.c). */
static inline size_t sl__mpmc_swap_stride(size_t elem_size)
{
    return (elem_size + 7) & ~(size_t)7;
}

/* Slot `index` of the swap form's slots (whole words each). */
static inline unsigned char *sl__mpmc_swap_slot(unsigned char *slots, size_t elem_size,
                                                uint64_t index)
{
    return slots + (size_t)index * sl__mpmc_swap_stride(elem_size);
}

/* The out-of-line paths of messages over 8 bytes (channels/mpmc.c, "the
 * public operations"): the raw queue's (channels/mpmc_swap.c: the swap
 * form, or the indexed one through sl__mpmc_push_indexed and
 * sl__mpmc_pop_indexed, channels/mpmc.c) and a shared channel's view's (the
 * swap form at every size). */
sl_status sl__mpmc_push_slots(sl_mpmc *q, const void *elem, sl_event *wake);
sl_status sl__mpmc_pop_slots(sl_mpmc *q, void *out);
sl_status sl__mpmc_push_slots_in(const sl__mpmc_view *v, const void *elem);
sl_status sl__mpmc_pop_slots_in(const sl__mpmc_view *v, void *out);
sl_status sl__mpmc_push_indexed(sl_mpmc *q, const void *elem);
sl_status sl__mpmc_pop_indexed(sl_mpmc *q, void *out);

/* The swap form's start, written once for the raw queue and the shared
 * segment: cell i holds slot i (free for its first position), spare entry j
 * slot capacity + j. Before any other thread can see the cells. */
void sl__mpmc_swap_fill(sl_mpmc_cell *cells, size_t capacity, SL_ATOMIC(uint64_t) *spares,
                        size_t spare_count);

/* Called with a pointer to each message's bytes inside the ring. */
typedef void (*sl_visit_fn)(void *elem, void *ctx);

/* Hands every message still inside to fn, oldest first, in place (no copy,
 * no allocation), and leaves the ring empty. No other thread may use q. */
void sl__spsc_drain(sl_spsc *q, sl_visit_fn fn, void *ctx);
/* For MPMC, list and ring, fn may be NULL: the messages are only taken. */
void sl__mpmc_drain(sl_mpmc *q, sl_visit_fn fn, void *ctx);
void sl__list_drain(sl_list *q, sl_visit_fn fn, void *ctx);
void sl__ring_drain(sl_ring *r, sl_visit_fn fn, void *ctx);

/* A list push (or batch) inside an epoch section the caller entered
 * (sl__epoch_enter; self as it returned, NULL when anonymous) and will exit:
 * an SL_LIST channel's sender, whose in-flight mark enters it. */
struct sl_epoch_rec;
sl_status sl__list_push_entered(sl_list *q, const void *elem, struct sl_epoch_rec *self);
size_t sl__list_push_n_entered(sl_list *q, const void *elems, size_t n,
                               struct sl_epoch_rec *self);

/* The overwrite ring's push with the displaced message handed to `displaced`
 * in place (NULL: discarded). Returns SL_OK or SL_EVICTED. */
sl_status sl__ring_push_visit(sl_ring *r, const void *elem, sl_visit_fn displaced, void *ctx);

#endif /* SLUICE_CHANNELS_RINGS_H */
