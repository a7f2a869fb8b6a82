/*
 * channels/list_impl.h — what SL_LIST's two files share (internal, not
 * installed): a segment's layout, its slots' states and groups, and the
 * segments' life that channels/list_segs.c keeps (allocation, the spare,
 * reclamation) for the push and pop of channels/list.c.
 */
#ifndef SLUICE_CHANNELS_LIST_IMPL_H
#define SLUICE_CHANNELS_LIST_IMPL_H

#include "sluice/list.h"

#include "internal/epoch.h"

enum { SLOT_EMPTY = 0, SLOT_FULL = 1, SLOT_TAKEN = 2 };

struct sl_list_seg {
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint64_t) enq; /* producers' next slot */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint64_t) deq; /* consumers' next slot */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(sl_list_seg *) next;
    SL_ATOMIC(uint64_t) retired; /* epoch stamp once unlinked; 0 before */
    uint64_t base;        /* list position of slot 0, for len */
    unsigned char *groups; /* the slots, in groups (slot_at) */
};

/* Slots in groups. A group is GROUP_STATES bytes of slot states (one per slot
 * of the group), then the group's messages, each in a whole number of 8-byte
 * words: as many as fit in one cache line with their states, the group then
 * padded to the line (seven 8-byte messages fill it exactly); a message too
 * large for two to a line is a group of its own, state then bytes, unpadded.
 * Up to 24 bytes a slot's state and its message then share a line (over 24,
 * the state shares a line with the message's first bytes, in all but at most
 * one slot in eight), so a push that publishes next to a pop that takes (a
 * consumer close behind its producer) moves one line between the two cores
 * per message, where states kept apart from the bytes moved two; and small
 * messages cost about the bytes they did in separate arrays (9.1 bytes an
 * 8-byte message). docs/design.md, "SL_LIST's slot groups". */
#define GROUP_STATES 8

/* A new segment, emptied (for sl_list_init's first); NULL without memory. */
sl_list_seg *sl__list_seg_alloc(sl_list *q);
/* An empty segment for a growing push: the spare, a freed one, or new. */
sl_list_seg *sl__list_seg_get(sl_list *q);
/* Gives back a segment no thread can reach: kept as the spare, or freed. */
void sl__list_seg_put(sl_list *q, sl_list_seg *s);
/* Takes the spare segment, NULL if there is none. */
sl_list_seg *sl__list_take_spare(sl_list *q);
/* Frees, oldest first, the unlinked segments no thread can still hold. */
void sl__list_reclaim(sl_list *q, const sl_epoch_rec *self);

#endif /* SLUICE_CHANNELS_LIST_IMPL_H */
