/*
 * channels/chan_adapter.h — what a flavour's adapter is (internal): the
 * operations and properties through which the channel façade reaches a
 * raw queue, and the table's accessor for the façade's files that are not
 * compiled with the adapters.
 *
 * Apart from channels/chan_flavors.h, which defines the adapters and the
 * table as static definitions for channels/chan.c alone (so that each
 * dispatch inlines its adapter's calls): this header has no definitions,
 * so channels/chan_wait.c, whose waits need a flavour's own wait and
 * where its receivers park, reads a row through sl__chan_adapter.
 */
#ifndef SLUICE_CHANNELS_CHAN_ADAPTER_H
#define SLUICE_CHANNELS_CHAN_ADAPTER_H

#include "chan_impl.h"
#include "rings.h"

/* ---- the adapters ---------------------------------------------------------
 * One per flavour: its raw queue's operations in the façade's terms, and the
 * ordering the façade relies on. After every push or pop that changed the
 * queue the façade notifies; the await protocol (internal/await.h) needs the
 * change ordered before the notify's load of the waiter count. The queues
 * that change state with a seq_cst read-modify-write (MPMC, list, ring) give
 * that as they are; SPSC publishes with release stores, so its adapter
 * fences: after a pop itself, after a push in its unmark (every push runs
 * between mark and unmark). */
typedef struct flavor_adapter {
    /* Sets up ch->q for o's message size and capacity, with the counters at
     * `start` where the queue has them (the test hook sl__chan_new_at). */
    sl_status (*init)(sl_chan *ch, const sl_chan_opts *o, uint64_t start);
    /* Hands what is left to fn (if any) in place, oldest first, then frees. */
    void (*drain_destroy)(sl_chan *ch, sl_visit_fn fn, void *ctx);
    /* Marks the calling sender in flight, before its closed-check; unmark
     * takes what mark returned, after the push (flag_* or count_*: chan_marks.h). */
    SL_ATOMIC(uint32_t) *(*mark)(sl_chan *ch);
    void (*unmark)(SL_ATOMIC(uint32_t) *mark);
    /* One push: SL_OK, SL_EVICTED (the displaced message went to
     * `displaced`), SL_FULL or SL_ENOMEM. */
    sl_status (*push)(sl_chan *ch, const void *elem, sl_visit_fn displaced, void *ctx);
    /* One pop: SL_OK or SL_EMPTY; where `lags`, also SL_LAGGED (or another
     * final status), which the receive forms return as it is. */
    sl_status (*pop)(sl_chan *ch, void *out);
    /* Up to n messages in order; how many went. A ring evicts instead of
     * refusing, through the channel's drop function. */
    size_t (*push_n)(sl_chan *ch, const void *elems, size_t n);
    size_t (*pop_n)(sl_chan *ch, void *out, size_t n);
    size_t (*len)(const sl_chan *ch);
    /* The earliest instant a receive may succeed without a notify
     * (queue_ready_at: SL_FOREVER, every change of a queue notifies). */
    uint64_t (*ready_at)(const sl_chan *ch);
    /* The mark is a plain store ordered by sl_event_fence() (flag_mark): a
     * receiver deciding SL_CLOSED issues the heavy barrier before it reads
     * the marks. */
    bool light_mark;
    /* The marks are in the threads' records too (record_mark, epoch_mark). */
    bool record_marks;
    bool unbounded; /* no capacity: sl_chan_cap says SIZE_MAX */
    bool evicts;    /* a push into a full queue displaces the oldest (sl_chan_send_evict);
                       so no send waits for room, and a pop owes senders no notify */
    bool recv_only; /* every send form refuses with SL_EINVAL, before any mark */
    bool own_ctor;  /* made by its own constructors: sl_chan_new refuses the flavour */
    bool lags;      /* a pop may answer SL_LAGGED: a batch that took nothing asks pop;
                       a broadcast ring: no send waits for room either */
    /* Whether a push would find the queue full now, or a pop find it empty,
     * on the loads the push or pop itself starts with and at the same
     * linearization point (NULL: no such look). A select tries each case
     * through them first (poll_send_with, poll_recv_with in chan.c), where
     * a refused try is the common case (an idle quit channel). */
    bool (*looks_full)(const sl_chan *ch);
    bool (*looks_empty)(const sl_chan *ch);
    /* Where ch's receivers park, when not on ch->not_empty (NULL: there),
     * and that event's count of unwoken sleepers, which every wait on it
     * keeps and every notify of it reads (NULL: not counted). */
    sl_event *(*recv_event)(sl_chan *ch);
    SL_ATOMIC(uint32_t) *(*recv_unwoken)(sl_chan *ch);
    /* After sl_chan_close has closed ch and woken its own waiters (NULL: none). */
    void (*on_close)(sl_chan *ch);
    /* Sends into ch in flight that its mark counts outside the handle (the
     * broadcast ring's count), for the free's misuse check (NULL: none). */
    uint32_t (*sending_elsewhere)(const sl_chan *ch);
    /* A whole non-blocking send, for a flavour that needs no in-flight mark
     * (rendezvous: it decides close under its own lock) and does its own
     * notifies: one out-of-line call, so the other flavours' send path
     * keeps its registers. NULL: mark, push, unmark and notify here. */
    sl_status (*send)(sl_chan *ch, const void *elem);
    /* The blocking and timed forms' wait after a failed try, for a flavour
     * whose waiters must be seen by their partners (rendezvous); NULL: the
     * façade's own (await_op). Returns SL_OK, SL_CLOSED or SL_TIMEDOUT. */
    sl_status (*await)(sl_chan *ch, bool send, void *buf, uint64_t timeout_ns);
    /* What sl_chan_flavor reports, where not the row's own value (a
     * rendezvous or a shared channel's row: the public flavour it is). */
    sl_flavor reports;
    bool shared;    /* lives in a shared-memory segment (sluice/shm.h, channels/shm.c):
                       its queue geometry is the handle's `geom`, sl_chan_free
                       unmaps, pointers and drop functions are refused */
} flavor_adapter;

/* The adapter of flavour f (channels/chan.c: chan_flavors.h's adapter_of),
 * for what runs once per channel or per wait outside chan.c. */
const flavor_adapter *sl__chan_adapter(sl_flavor f);

#endif /* SLUICE_CHANNELS_CHAN_ADAPTER_H */
