/*
 * sluice/broadcast.h — broadcast channels: every subscriber sees every
 * message.
 *
 * A broadcast channel is made by sl_chan_new with flavor SL_BROADCAST and a
 * capacity >= 1; that handle is the send side (any number of sender
 * threads). sl_chan_subscribe gives a receive-only handle that sees, in
 * order, every message sent after it subscribed. Receive with the ordinary
 * calls (sl_chan_recv, try_recv, recv_for, recv_n, recv_n_for, try_recv_n,
 * sl_select receive cases) and the typed wrapper, so a subscriber is an
 * sl_chan like any other:
 *
 *   sl_chan_opts o = {.flavor = SL_BROADCAST, .elem_size = sizeof(struct quote),
 *                     .capacity = 64};
 *   sl_chan *bc, *rx;
 *   sl_chan_new(&bc, &o);
 *   sl_chan_subscribe(bc, &rx);            // in each listening thread
 *   sl_chan_send(bc, &q);                  // every subscriber gets a copy
 *   switch (sl_chan_recv(rx, &q)) {
 *   case SL_OK: ...;                       // the next message
 *   case SL_LAGGED: ...;                   // sl_chan_missed(rx) grew by the count lost
 *   case SL_CLOSED: ...;                   // closed, and everything seen
 *   }
 *
 * The sender never waits for a receiver: the channel holds the last
 * `capacity` messages and a send into a full ring overwrites the oldest.
 * A subscriber that falls more than `capacity` messages behind loses the
 * oldest: its next receive returns SL_LAGGED (nothing received; the bytes at
 * out are unspecified), having moved it to the oldest message that no send
 * has yet claimed the slot of (one being overwritten counts as lost) and
 * added the number skipped to sl_chan_missed(rx); the receive after that
 * returns that message. A receive never skips a message silently and never
 * returns a copy torn by an overwrite: the bytes of an SL_OK are exactly one
 * message as sent. (sl_chan_try_recv_n, which returns only a count, returns
 * 0 at a lag; sl_chan_missed tells.)
 *
 * The façade's rules, for this flavour:
 *   send forms     on the send handle: SL_OK (never SL_FULL, never waits
 *                  for a receiver: "Progress" below; also with no
 *                  subscriber: the message is held and nobody reads
 *                  it), SL_CLOSED once closed; SL_EINVAL on a
 *                  subscriber handle (SL_CLOSED once that is closed).
 *                  sl_chan_send_evict: SL_EINVAL. In sl_select, a send case
 *                  on the send handle is always ready.
 *   receive forms  on a subscriber: as above; on the send handle: SL_EINVAL
 *                  (sl_chan_try_recv_n: 0).
 *   close          on the send handle: sends refuse; every subscriber
 *                  receives what it can still see, then SL_CLOSED; every
 *                  waiting subscriber wakes. On a subscriber handle: ends
 *                  that subscription at once (its receives return
 *                  SL_CLOSED); the others go on. sl_chan_is_closed(rx)
 *                  becomes true once rx has seen the end (after the last
 *                  message) or was closed itself.
 *   free           frees one handle, in any order: freeing a subscriber
 *                  leaves (dropping, with a drop function, the messages it
 *                  was the last unread subscriber of); freeing the send
 *                  handle closes the channel for the subscribers (which
 *                  may still drain it). The ring goes when the last handle
 *                  is freed. As for every channel,
 *                  no thread may still use the handle being freed; a thread
 *                  waiting in a subscriber parks on the shared ring, so
 *                  sl_chan_free of that subscriber does not see it (close the
 *                  subscriber, let the thread return, then free).
 *   len, cap       len: messages held (send handle) or not yet read
 *                  (subscriber; 0 once its subscription has ended, closed
 *                  or drained to SL_CLOSED), at most cap; cap: the capacity.
 *   sl_chan_fd     SL_EINVAL (a subscriber is woken through its ring, which
 *                  a descriptor of one handle cannot follow).
 *
 * Which calls may overlap: sends on the send handle from any threads;
 * receives on one subscriber handle from one thread at a time (each thread
 * that listens subscribes on its own); subscribe, close, free of other
 * handles, len and cap from any thread at any time.
 *
 * Ownership (docs/ownership.md): a send moves the message into the channel,
 * which keeps the original; subscribers receive byte copies. With a drop
 * function, the channel drops each original exactly once, as soon as no
 * subscriber can read it: when the last subscriber counted for it (those
 * subscribed when it was sent) has received it or left without it
 * (sl_chan_free; a closed subscriber keeps its claim until freed), or when
 * a later send overwrites it, whichever comes first; a message sent with
 * nobody subscribed is dropped in its send. A drop function may assume:
 * it runs once per message, on the message's bytes as sent (in the
 * channel's slot or a copy of them: it must not write them); no receive
 * that will return the message is copying it or starts a copy of it after
 * it runs (one whose copy was complete before may return it after; a
 * lagging receive's copy may overlap the drop a send runs on the message
 * it overwrites, and is discarded: that receive answers SL_LAGGED); it may
 * run on the sender's thread or on any subscriber's, inside a receive,
 * sl_chan_subscribe or sl_chan_free (so it must be thread-safe). It must
 * not assume the subscribers are done with what their copies point to:
 * the last subscriber's receive returns after the drop ran, so a payload
 * the subscribers go on using needs its own claim for each of them (a
 * value, or a reference count set for its readers). A drop function must
 * not send on its own channel, subscribe to it or free one of its
 * subscribers: a send runs the drop while its own message is being
 * written, which those wait for. Nor may it receive on the subscriber
 * whose receive runs it: that receive has not yet moved past the message,
 * which the nested one would return again. Without a drop function
 * nothing is counted and nothing is dropped.
 *
 * Progress (docs/guarantees.md, "Broadcast channels"):
 *   send     never waits for a receiver. With one sender thread wait-free
 *            (a fetch-and-add, the copy, the drop and the notifies). With
 *            several, a send whose slot is still being written by the
 *            sender a lap (capacity messages) earlier waits for that copy
 *            to finish: blocking only on a sender stalled mid-copy. So a
 *            send is not async-signal-safe: a signal handler's send (or,
 *            with a drop function, subscribe or free of a subscriber) may
 *            wait for ever for the send its thread was interrupted in
 *            (with capacity 1 it does).
 *   receive  try_recv is lock-free and never waits for anyone, but a
 *            subscriber's next message is not there while its sender is
 *            mid-copy: a sender stalled there leaves the subscriber empty
 *            (later messages wait behind it, in order) until it resumes.
 *            With a drop function a receive also gives up its share of
 *            the message (a CAS loop: lock-free) and may run the drop.
 *   subscribe, free of a subscriber: with a drop function, settle the
 *            shares of up to `capacity` messages at the boundary of the
 *            subscription, waiting for a send among them still being
 *            written (blocking only on a sender stalled mid-copy).
 * Ordering: what a sender wrote before a send is visible to a subscriber
 * that received the message; a subscriber that sees SL_CLOSED has seen every
 * message it could (every send that returned SL_OK before the close, not yet
 * overwritten).
 */
#ifndef SLUICE_BROADCAST_H
#define SLUICE_BROADCAST_H

#include "sluice/base.h"
#include "sluice/chan.h"
#include "sluice/status.h"

SL_BEGIN_DECLS

/* Subscribes to the broadcast channel bc (its send handle): *rx becomes a
 * receive-only handle that sees every message sent after this call returns
 * (none sent before; a send running concurrently with this call may be seen
 * or not), until it is freed, closed, or bc is closed and it has seen the
 * rest. Returns SL_OK; SL_EINVAL for NULL bc or rx, a channel of another
 * flavour, or a subscriber handle; SL_ENOMEM (*rx untouched), also when bc
 * has a drop function and 2^24 - 1 subscribers already (and, with one, at
 * most 2^40 subscribes and leaves in the channel's life: docs/guarantees.md,
 * "Limits"). Also on a closed bc
 * (the subscriber then receives SL_CLOSED). Without a drop function
 * lock-free: one allocation, one reference count increment. With one, a
 * second allocation (a message's worth of scratch), and the subscription's
 * count settled with the sends in flight: it may wait for a send still
 * being written, and may run the drop function (docs/guarantees.md,
 * "Broadcast channels", shares). Free rx with sl_chan_free, which with a
 * drop function gives up rx's claim on every message it did not read. */
SL_API sl_status sl_chan_subscribe(sl_chan *bc, sl_chan **rx);

/* How many messages subscriber rx has skipped since it subscribed, in all:
 * each SL_LAGGED adds exactly the number that receive skipped. 0 for NULL or
 * a handle that is not a subscriber. Exact on rx's receiving thread; from
 * other threads a snapshot. Wait-free. */
SL_API uint64_t sl_chan_missed(const sl_chan *rx);

SL_END_DECLS

/*
 * SL_BROADCAST_TYPED(name, T): SL_CHAN_TYPED(name, T) (sluice/chan.h) and
 * name_subscribe(name *bc, name **rx) and name_missed(const name *rx), with
 * parameters named sl_*_ as in SL_CHAN_TYPED.
 */
#define SL_BROADCAST_TYPED(name, T)                                                \
    SL_CHAN_TYPED(name, T);                                                        \
    SL_TYPED_FN sl_status name##_subscribe(name *sl_bc_, name **sl_rx_)            \
    { return sl_chan_subscribe((sl_chan *)(void *)sl_bc_, (sl_chan **)(void *)sl_rx_); } \
    SL_TYPED_FN uint64_t name##_missed(const name *sl_rx_)                         \
    { return sl_chan_missed((const sl_chan *)(const void *)sl_rx_); }             \
    typedef int name##_sl_bcast_end_ /* swallows the caller's semicolon */

#endif /* SLUICE_BROADCAST_H */
