/*
 * channels/rendezvous.h — rendezvous channels (capacity 0; internal, not
 * installed): the offers of waiting threads, and the hooks the façade
 * (chan.c, chan_flavors.h) and select (select.c) call.
 *
 * Nothing is ever stored. A thread that must wait for a partner posts an
 * *offer* on the channel: {its claim word, its case index, its buffer, how to
 * wake it}. A partner completes the operation by winning one
 * compare-and-swap on the claim word (OPEN -> TAKEN(index)), copying the
 * bytes, and waking the owner, all under the channel's lock; the owner learns
 * the outcome from its claim word and takes the lock once before it returns,
 * so the partner's copy and wake are over before its buffer and eventcount go
 * out of scope. All of one select's offers share one claim word, so at most
 * one of them is ever taken (rendezvous.c has the protocol, docs/guarantees.md
 * the argument).
 */
#ifndef SLUICE_CHANNELS_RENDEZVOUS_H
#define SLUICE_CHANNELS_RENDEZVOUS_H

#include "sluice/base.h"
#include "sluice/park.h"
#include "sluice/status.h"

struct sl_chan;
struct sl_select_case;

/* Claim word values: open to a partner; held by its owner (who is deciding,
 * or withdrawing); taken by a partner for the owner's case i. */
#define SL__RDV_OPEN 0u
#define SL__RDV_SELF 1u
#define SL__RDV_TAKEN(i) (2u + (uint32_t)(i))
/* The most cases a select may have: TAKEN of the last must not wrap the
 * claim word onto OPEN or SELF (select.c refuses more with SL_EINVAL). */
#define SL__RDV_CASES_MAX ((size_t)UINT32_MAX - 1)

typedef struct sl__rdv_offer {
    SL_ATOMIC(uint32_t) *claim; /* shared by all of one select's offers */
    uint32_t index;             /* the owner's case (0 for a plain send/receive) */
    bool send;                  /* the owner sends (its buffer holds the message) */
    bool linked;                /* on the channel's list; under its lock */
    void *buf;                  /* the message, or where it goes */
    sl_event *ev;               /* the owner's eventcount; NULL: a select (the bell) */
    struct sl_chan *ch;
    struct sl__rdv_offer *prev, *next;
} sl__rdv_offer;

/* Offers waiting on one side, oldest first. */
typedef struct sl__rdv_list {
    sl__rdv_offer *first, *last;
} sl__rdv_list;

/* A channel's rendezvous state: its short lock and the waiting offers,
 * waiting[1] the senders', waiting[0] the receivers'. */
typedef struct sl_rdv {
    SL_ATOMIC(uint32_t) lock;
    sl__rdv_list waiting[2];
} sl_rdv;

void sl__rdv_init(sl_rdv *r);

/* The try forms: hand elem to (take a message from) a partner's open offer,
 * oldest first. SL_OK, or SL_FULL (SL_EMPTY) when none is open. */
sl_status sl__rdv_give(struct sl_chan *ch, const void *elem);
sl_status sl__rdv_take(struct sl_chan *ch, void *out);

/* sl__rdv_give, then the select bell (if anyone selects on ch) after a
 * success: the façade's whole non-blocking send (flavor_adapter.send).
 * Cold for the compiler's layout of the façade's send switch: without it
 * the extra case cost every queue flavour's try_send a stack frame (+2
 * instructions, callgrind on sl-opcount chan-*); a hand-off takes a lock
 * and usually a wake-up anyway. */
sl_status sl__rdv_send(struct sl_chan *ch, const void *elem) __attribute__((cold));

/* The blocking and timed forms after a try failed: post an offer and wait
 * (through sl__event_await) until a partner takes it (SL_OK), the channel
 * closes (SL_CLOSED) or timeout_ns passes (SL_TIMEDOUT); on SL_CLOSED and
 * SL_TIMEDOUT nothing was taken. */
sl_status sl__rdv_await(struct sl_chan *ch, bool send, void *buf, uint64_t timeout_ns);

/* At close: wakes every owner of an offer on ch (selects through the bell). */
void sl__rdv_close(struct sl_chan *ch);

/* ---- select (select.c) ----------------------------------------------------
 * A blocked select with rendezvous cases: one offer per such case, one claim
 * word. */
#define SL__RDV_SELECT_LOCAL 4
typedef struct sl__rdv_select {
    SL_ATOMIC(uint32_t) claim;
    size_t m;              /* rendezvous cases */
    sl__rdv_offer *offers; /* one per rendezvous case: `local`, or allocated */
    bool posted;
    sl__rdv_offer local[SL__RDV_SELECT_LOCAL];
} sl__rdv_select;

/* Sets s up for cases[0..n): SL_OK; SL_EMPTY when no case is on a
 * rendezvous channel (s unused); SL_ENOMEM when more than
 * SL__RDV_SELECT_LOCAL are and their offers cannot be allocated. */
sl_status sl__rdv_select_begin(sl__rdv_select *s, struct sl_select_case *cases, size_t n);

/* The select's condition while it may post offers: holds its own claim word,
 * runs poll(ctx) (one round over every case), and if that found nothing
 * posts its offers (once), re-opens its word and looks for a partner's
 * offer that arrived meanwhile (then it rounds again). true once a case
 * was performed by the round or a partner took an offer. */
bool sl__rdv_select_ready(sl__rdv_select *s, bool (*poll)(void *), void *ctx);

/* After the wait: withdraws the offers and frees what begin allocated. If a
 * partner took one, returns true with its case in *index (the operation
 * happened: SL_OK); otherwise false and the round's result (or the
 * timeout) stands. */
bool sl__rdv_select_end(sl__rdv_select *s, size_t *index);

#endif /* SLUICE_CHANNELS_RENDEZVOUS_H */
