/*
 * channels/broadcast.h — the ring behind SL_BROADCAST channels (internal,
 * not installed): one ring of stamped slots shared by the send handle and
 * every subscriber handle, each handle's own part, and what the flavour's
 * adapter (chan_flavors.h) calls.
 *
 * Positions count from 0; position p lives in slot p % cap. A slot's stamp
 * says what it holds: 2p + 1 while the sender of position p writes it, 2p + 2
 * once that message is complete, 0 before its first message. A sender claims
 * its position with a fetch-and-add on `tail`, waits until the slot's
 * previous message (p - cap) is complete (only a sender a lap earlier can
 * hold it back: never a receiver), takes the slot over from that original
 * (with a drop function: below), writes its own and stamps it complete. A
 * subscriber reads its
 * position's slot seqlock-style: stamp, bytes, stamp again; a stamp past its
 * position, before or after the copy, means the message was overwritten, and
 * the receive reports SL_LAGGED with the count it skipped
 * (docs/guarantees.md, "Broadcast channels").
 *
 * With a drop function, each position also has a share word: the number of
 * subscribers counted for it (the `subs` count its sender loaded after its
 * claim), tagged with its lap. A receive gives its share up after its copy
 * and a leave or subscribe settles the shares at its boundary; the share
 * that takes the count to zero drops the message from its own copy, unless
 * the sender a lap later took the word over first (one exchange), which
 * then drops it from the slot. Without one, nothing is counted.
 *
 * The shared part outlives any one handle: each handle holds a reference and
 * the last one to be freed drops what is left and frees it. That is why the
 * closed flag, the senders-in-flight count and the event subscribers park on
 * live here and not in the send handle's sl_chan (docs/design.md).
 */
#ifndef SLUICE_CHANNELS_BROADCAST_H
#define SLUICE_CHANNELS_BROADCAST_H

#include "sluice/chan.h"
#include "sluice/park.h"

typedef struct sl__bcast {
    /* Written by every send: the next position to claim, and the senders
     * between their closed-check and the end of their push (the flavour's
     * in-flight mark, chan_marks.h). */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint64_t) tail;
    SL_ATOMIC(uint32_t) in_flight;
    /* Only with a drop function: the subscribers alive (low SL__BCAST_NBITS
     * bits) and an epoch that every subscribe and leave advances (the rest),
     * in one word, so that a send's one load of it says both how many may
     * read its message and where it stands among the subscribes and leaves. */
    SL_ATOMIC(uint64_t) subs;
    /* Read by every send and receive, written rarely. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint32_t) closed; /* the send handle closed or freed */
    SL_ATOMIC(uint32_t) selected; /* a subscriber has been a select case: sends ring the bell */
    SL_ATOMIC(uint32_t) refs;     /* handles alive */
    size_t cap;
    size_t elem_size;
    size_t words;  /* a slot's message, in 8-byte words */
    sl_drop_fn drop;
    void *drop_ctx;
    sl_event ready; /* subscribers park here: every send and close notifies all */
    /* The sleepers on `ready` that no notify has woken yet (internal/await.h):
     * a send calls FUTEX_WAKE only while one is left. */
    SL_ATOMIC(uint32_t) unwoken;
    SL_ATOMIC(uint64_t) *slots; /* cap slots of 1 + words words: stamp, then the message */
    /* Only with a drop function, per slot two words: the share word (the lap
     * of the position it counts for, then the number of subscribers that
     * still have to read it, SL__BCAST_NBITS bits) and the `subs` epoch the
     * position's sender saw. NULL without a drop function: nothing counts. */
    SL_ATOMIC(uint64_t) *shares;
} sl__bcast;

/* Bits of a subscriber count in `subs` and in a share word; the rest is the
 * epoch, or the lap. */
#define SL__BCAST_NBITS 24

/* A handle's own part (the SL_BROADCAST member of sl_chan's queue union). */
typedef struct sl__bcast_end {
    sl__bcast *b;
    bool subscriber;          /* a receive handle (sl_chan_subscribe), else the send handle */
    SL_ATOMIC(uint64_t) next; /* subscriber: the next position it reads */
    SL_ATOMIC(uint64_t) missed; /* subscriber: messages skipped so far (SL_LAGGED) */
    uint64_t epoch;           /* subscriber, with a drop function: `subs` epoch after its subscribe */
    void *scratch;            /* subscriber, with a drop function: a message's bytes, to drop */
} sl__bcast_end;

/* The send handle's sends in flight (the ring's count, which its mark
 * raises; a ring has one send handle, so the count is that handle's); 0
 * for a subscriber. For sl_chan_free's misuse check. */
uint32_t sl__bcast_sending(const struct sl_chan *ch);

/* Sets up a handle: a new ring for o (the send handle: SL_EINVAL for
 * elem_size 0 or above SL_ELEM_MAX, capacity 0 or too large; SL_ENOMEM), or,
 * inside sl_chan_subscribe, a subscriber of its ring. */
sl_status sl__bcast_init(sl__bcast_end *e, const sl_chan_opts *o);

/* Leaves: the send handle's leaving closes the ring; a subscriber's, with a
 * drop function, gives up its share of every message it was counted for and
 * did not read (dropping those it was the last for); the last handle's drops
 * every message still held and not dropped (oldest first) and frees the ring. */
void sl__bcast_release(sl__bcast_end *e);

/* The in-flight mark of a send (a seq_cst count), and its unmark, which after
 * a close wakes the subscribers that wait for the last sender to land. The
 * mark is declared cold: that makes the broadcast case of the façade's send
 * dispatch cold, and gcc's register allocation then stops spilling in the
 * other flavours' cases (docs/performance.md, "A sixth row"). A broadcast
 * send pays a jump for it. */
__attribute__((cold)) SL_ATOMIC(uint32_t) *sl__bcast_mark(sl_chan *ch);
void sl__bcast_unmark(SL_ATOMIC(uint32_t) *mark);

/* One send: SL_OK, or SL_EINVAL on a subscriber handle. Overwrites the oldest
 * message when the ring is full; wakes every parked subscriber and, once a
 * subscriber has been selected on, the select bell. */
sl_status sl__bcast_push(sl_chan *ch, const void *elem);

/* One receive on a subscriber handle `ch`: SL_OK, SL_LAGGED (the position
 * was overwritten: moved to the oldest message still held, the count added
 * to `missed`), or SL_EMPTY (nothing new; also once the subscription has
 * ended, which it marks by setting ch->closed). SL_EINVAL on the send handle.
 * pop_n: up to n messages, stopping before a lag (left for the next pop). */
sl_status sl__bcast_pop(sl_chan *ch, void *out);
size_t sl__bcast_pop_n(sl_chan *ch, void *out, size_t n);

/* Messages held (send handle) or unread (subscriber; at most cap; 0 once
 * its subscription has ended). */
size_t sl__bcast_len(const struct sl_chan *ch);

/* Where the handle's receivers park (the façade's recv_event hook), and
 * that event's count of unwoken sleepers (its recv_unwoken hook). */
sl_event *sl__bcast_recv_event(sl_chan *ch);
SL_ATOMIC(uint32_t) *sl__bcast_recv_unwoken(sl_chan *ch);

/* After sl_chan_close on either handle: wakes the parked subscribers (and the
 * bell); the send handle's also closes the ring for every subscriber. */
void sl__bcast_closed(sl_chan *ch);

#endif /* SLUICE_CHANNELS_BROADCAST_H */
