/*
 * sluice/select.h — wait on several channel operations, perform exactly one.
 *
 * Go's select over sluice channels of any mix of flavours: send and receive
 * cases, poll (timeout 0), a timeout, or wait forever. Exactly one ready
 * operation happens, chosen uniformly at random among the ready ones (a random
 * permutation of the cases is tried in order), or with sl_select_biased the
 * first ready one in the order given. A closed channel counts as ready: its
 * case returns SL_CLOSED.
 *
 * Blocking: a selecting thread tries every case, then spins briefly, then
 * sleeps until one of its channels changes state — no busy waiting. It is
 * woken through a process-wide eventcount — one for selects with receive
 * cases only, one for send cases only, one for both — that a channel rings
 * only while some thread is selecting on it, and only those whose cases the
 * change can make ready (a send: receive cases; a receive: send cases; a
 * close: both). A channel nobody selects on keeps its fast path (one extra
 * load of a counter on a line it already reads).
 *
 * Timer channels (sluice/timer.h) are receive cases like any other: ready
 * once a fire is due, and a sleeping selector asks the kernel to wake it at
 * the earliest fire among its cases (plus the kernel's timer slack,
 * sluice/timer.h). A send case on a timer channel is refused:
 * when a round reaches it, select returns SL_EINVAL with *index on it and
 * nothing happened. So is an operation a broadcast handle does not take
 * (sluice/broadcast.h: a receive case on the send handle, a send case on a
 * subscriber). A fair select may perform another ready case first.
 *
 * Rendezvous channels (SL_MPMC of capacity 0, sluice/chan.h) are cases like
 * any other: a case is ready when a partner waits — a thread blocked in the
 * other operation on that channel, or another select parked with the other
 * case on it. A select that has to wait posts an offer on each rendezvous
 * case (all of them sharing one claim, so at most one is ever taken), so two
 * selects facing each other on a channel meet; while it runs a round over
 * its cases its offers are held (a partner's try skips them), so exactly
 * one operation happens. A select re-runs its round after every ring of
 * its bell, for any channel's change (the bells are process-wide), so a
 * partner's try_send / try_recv may find a parked select busy and answer
 * SL_FULL / SL_EMPTY; the blocking forms post an offer and meet it. An
 * offer a partner takes while the select waits is the operation
 * performed, whatever else became ready meanwhile: fairness and
 * sl_select_biased's priority are among the cases a round finds ready. A
 * select never meets itself (a send and a receive case on one
 * rendezvous channel do not pair). A send case's message is taken only if
 * select returns SL_OK on that case.
 *
 * Channels in shared memory (sluice/shm.h) are cases like any other, mixed
 * with in-process ones: a send, receive or close made in another process
 * wakes the selector through the segment's own bell, which the selector
 * waits on beside its process's bell (futex_waitv(2); without it, Linux
 * before 5.16, a change made in another process is seen up to 50 ms late:
 * sluice/shm.h). A selector with a shared case also wakes every 50 ms to
 * look again, as every waiter on a shared channel does.
 *
 * Any number of threads may select on any channels at once, together with
 * ordinary sends and receives (within each flavour's rules: an SL_SPSC
 * channel still has one sender and one receiver thread at a time).
 */
#ifndef SLUICE_SELECT_H
#define SLUICE_SELECT_H

#include "sluice/base.h"
#include "sluice/chan.h"
#include "sluice/status.h"

SL_BEGIN_DECLS

typedef enum sl_select_op { SL_SEL_SEND, SL_SEL_RECV } sl_select_op;

typedef struct sl_select_case {
    sl_chan     *ch;  /* NULL: the case is never ready (Go's nil channel) */
    sl_select_op op;
    void        *buf; /* message to send, or where to receive */
} sl_select_case;

/* Performs exactly one ready operation among cases[0..n), chosen fairly among
 * the ready ones, and sets *index to its case. Returns
 *   SL_OK       case *index's operation happened;
 *   SL_EVICTED  case *index was a send into a full SL_RING: it happened and
 *               displaced the oldest message, which went to the drop function;
 *   SL_ENOMEM   case *index was a send into SL_LIST that could not allocate,
 *               or into a shared channel whose every record is held
 *               (sluice/shm.h); nothing happened;
 *   SL_CLOSED   case *index's channel is closed (for a receive: closed and
 *               drained);
 *   SL_LAGGED   case *index was a receive on a broadcast subscriber that
 *               fell behind (sluice/broadcast.h): nothing received (the
 *               bytes at buf unspecified), sl_chan_missed grew by the
 *               count lost, and the next receive takes the oldest kept;
 *   SL_TIMEDOUT nothing was ready within timeout_ns (0: nothing ready now);
 *   SL_EINVAL   NULL cases or index, a NULL buf on a case with a channel, an
 *               op that is neither send nor receive, no case with a
 *               channel at all, or n above 2^32 - 2; nothing happened.
 * With more than 64 cases select allocates their order, one that must
 * wait with more than 4 rendezvous cases allocates their offers, and one
 * that must wait with more than 7 shared-memory cases (sluice/shm.h)
 * allocates the list of their bells; if that fails it returns SL_ENOMEM
 * with *index untouched and nothing happened (preset *index to n to tell
 * this from a send case's SL_ENOMEM).
 * timeout_ns: as every timed call — one round first; 0 means that round
 * alone, SL_FOREVER waits without limit, and nothing ready in time is
 * SL_TIMEDOUT (never SL_FULL or SL_EMPTY), no earlier than asked. Blocking
 * unless 0.
 * A round judges each case when its try runs, one case after another, not
 * all cases at one instant (no channel is locked): with several channels,
 * a round may find nothing although some case was ready at every instant
 * of it (b closed just after its try found it open and empty, a's message
 * taken by another thread just before its try). So SL_TIMEDOUT of a poll
 * (timeout 0), and of a timed select's last round, says that each case
 * was found not ready when it was tried. A state that lasts (a message
 * nobody else takes, a close) is never missed: a select that waits looks
 * again after every change (docs/guarantees.md, "Select"). */
SL_API sl_status sl_select(sl_select_case *cases, size_t n, uint64_t timeout_ns, size_t *index);

/* Biased select (Go's priority-channel idiom, crossbeam's select_biased!):
 * as sl_select — the same statuses, blocking, wake-ups, close and timeout
 * rule — except that every round tries the cases in the order given, from
 * case 0, and performs the first that is ready: *index is the lowest index
 * ready when the round looked, and every lower case was found not ready in
 * that same round. With several cases ready at the call, the lowest wins,
 * every time. A round runs at the call and after each wake-up, so a case
 * that becomes ready while a round is past it waits for the next.
 * Never allocates for its order, so never the SL_ENOMEM of more than 64
 * cases (a send case's SL_ENOMEM, SL_LIST's, remains, and so do the
 * offers' allocation of more than 4 rendezvous cases and the bells' of
 * more than 7 shared cases when it must wait). Starvation is the caller's choice:
 * while case 0 stays ready, the others are never taken by a round (a
 * rendezvous case's offer that a partner takes while the select waits is
 * the exception: above). Progress and
 * ordering as sl_select: each case's operation is its channel's try form,
 * with that flavour's guarantee and ordering; blocking unless timeout_ns
 * is 0. */
SL_API sl_status sl_select_biased(sl_select_case *cases, size_t n, uint64_t timeout_ns,
                                  size_t *index);

SL_END_DECLS

#endif /* SLUICE_SELECT_H */
