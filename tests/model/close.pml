/*
 * tests/model/close.pml — the close protocol of channels/chan.c, over the
 * eventcount of park.pml and a buffer of one or two slots.
 *
 *   sender    S1 send_begin: in_flight[sl] += 1 (seq_cst RMW; SPSC: store +
 *                sl_event_fence)
 *             S2 try_send_once: closed? (seq_cst load) -> SL_CLOSED
 *             S3 raw_push: the publishing CAS -> SL_OK or SL_FULL
 *             S4 send_end: in_flight[sl] -= 1 (seq_cst; SPSC: release store
 *                + fence)
 *             S5 send_end: closed? (seq_cst load) -> notify_all(not_empty)
 *             S6 try_send_once: pushed -> notify_one(not_empty)
 *   closer    C1 sl_chan_close: closed = 1 (seq_cst exchange; once); no
 *                barrier
 *             C4 notify_all(not_empty)  C5 notify_all(not_full)
 *   receiver  R1 try_recv_once: pop_once -> SL_OK (notify_one(not_full))
 *             R2 is_closed? no -> SL_EMPTY
 *             R3 drained? -> SL_CLOSED
 *             R4 sends_landed: closed? (seq_cst load); SPSC: the heavy barrier
 *                (SC here: no step)
 *             R5 senders_in_flight: each slot in turn, non-zero -> SL_EMPTY
 *             R6 the last look: pop_once -> SL_OK
 *             R7 drained = 1 (release); SL_CLOSED
 *
 * Senders and receivers are blocking (wait_for in park.pml, with its
 * eventcount): receivers park on not_empty, whose condition is "a message,
 * or closed and nobody in flight", senders on not_full.
 * The closer closes at any moment, concurrently with everything.
 *
 * Threads (spin -D... to change; at most 4 besides the closer):
 *   NS=1|2    senders, indices 0..NS-1, MSGS messages each, stopping at the
 *             first SL_CLOSED; sender i counts itself in in-flight slot i
 *             (SAME_SLOT: both in slot 0)
 *   NR=1|2    receivers, indices NS..NS+NR-1, receiving until SL_CLOSED
 *   a closer  sl_chan_close, at any moment
 *   MSGS=n    messages per sender (default 1)
 *   CAP=1|2   buffer slots (default 1; with 1, senders also block on not_full
 *             and the close must wake them)
 *   SPURIOUS=n  spurious futex returns per run (default 0: eventcount.pml
 *             covers them)
 *   Defaults: NS=1, NR=2, MSGS=1, CAP=1.
 *
 * Properties:
 *   - linearizable close: no push succeeds after a receiver has answered
 *     SL_CLOSED, and the buffer is empty whenever one does (assertions)
 *   - every message whose send returned SL_OK is received exactly once, and a
 *     send that returned SL_CLOSED pushed nothing (assertions at the end)
 *   - no thread hangs: no invalid end state; ltl no_hang and terminates
 *
 * Planted bugs (run.sh MODEL_BUG=...):
 *   BUG_NO_MARK           the sender checks `closed` without marking itself
 *   BUG_NO_LAST_LOOK      the receiver answers SL_CLOSED without R6
 *   BUG_UNMARK_NO_NOTIFY  send_end does not wake receivers after a close
 *   BUG_MARK_AFTER_CHECK  S1 after S2: the mark comes after the closed-check
 *
 * The receiver's heavy barrier in R4 is there for the asymmetric mode, where
 * the SPSC sender's mark is a plain store followed by a compiler barrier
 * only, so the mark may become visible after the sender's load of `closed`
 * (store->load reordering). This model's SC memory cannot show that
 * (README.md); docs/guarantees.md has the argument.
 */

#ifndef NS
#define NS 1
#endif
#ifndef NR
#define NR 2
#endif
#ifndef MSGS
#define MSGS 1
#endif
#define NT (NS + NR)          /* threads: senders 0..NS-1, receivers NS..NT-1 */
#ifndef SPURIOUS
#define SPURIOUS 0
#endif
#define NMSG (NS * MSGS)

#include "park.pml"

#define OP_SEND 1
#define OP_RECV 2

#ifndef CAP
#define CAP 1
#endif
byte buf[2];                  /* the buffer, CAP (1 or 2) slots: 0 empty, else a message id */
#define QEMPTY (buf[0] == 0 && buf[1] == 0)
bool closed;                  /* ch->closed */
bool drained;                 /* ch->drained */
byte in_flight[2];            /* ch->in_flight[].n (two of the SL_SEND_SLOTS) */
byte running;                 /* threads not yet ended */
bool finished;

/* ghost state for the checks */
bool answered_closed;         /* some receiver has returned SL_CLOSED */
bool sent_ok[NMSG + 1];       /* that message's send returned SL_OK */
bool refused[NMSG + 1];       /* that message's send returned SL_CLOSED */
byte got[NMSG + 1];           /* times that message was received */

/* ---- the non-blocking attempts -------------------------------------------- */

/* try_send_once(m), the sender's in-flight slot `sl`. */
inline try_send()
{
#ifndef BUG_MARK_AFTER_CHECK
#ifndef BUG_NO_MARK
    in_flight[sl]++;                 /* S1: send_begin: mark in flight (seq_cst) */
#endif
    /* S2: closed? (seq_cst load) */
    if
    :: closed -> REACHED(21) st = SL_CLOSED
    :: else ->
#else
    if
    :: closed -> st = SL_CLOSED; in_flight[sl]++
    :: else ->
        in_flight[sl]++;             /* S1 (BUG: after the closed-check) */
#endif
        /* S3: raw_push: the publishing CAS */
        atomic {
            if
            :: buf[0] == 0 ->
                assert(!answered_closed);   /* a push after an SL_CLOSED answer */
                buf[0] = m; st = SL_OK
            :: buf[0] != 0 && CAP > 1 && buf[1] == 0 ->
                assert(!answered_closed);
                buf[1] = m; st = SL_OK
            :: else -> st = SL_FULL
            fi
        }
    fi;
#ifndef BUG_NO_MARK
    in_flight[sl]--;                 /* S4: send_end: unmark (seq_cst) */
#endif
#ifndef BUG_UNMARK_NO_NOTIFY
    /* S5: send_end: closed? (seq_cst) -> wake receivers waiting for the unmark */
    if
    :: closed -> REACHED(22) notify_all(NOT_EMPTY)
    :: else -> skip
    fi;
#endif
    /* S6: try_send_once: pushed -> notify_one(not_empty) */
    if
    :: st == SL_OK -> notify_one(NOT_EMPTY)
    :: else -> skip
    fi
}

inline pop()
{
    atomic {
        if
        :: buf[0] != 0 ->
            got[buf[0]]++;
            assert(got[buf[0]] == 1);
            buf[0] = 0;
            st = SL_OK
        :: buf[0] == 0 && buf[1] != 0 ->
            got[buf[1]]++;
            assert(got[buf[1]] == 1);
            buf[1] = 0;
            st = SL_OK
        :: else -> st = SL_EMPTY
        fi
    }
}

/* an SL_CLOSED answer: the buffer is empty, and stays so (see try_send) */
inline answer_closed()
{
    atomic {
        assert(QEMPTY);
        answered_closed = true;
        st = SL_CLOSED
    }
}

/* try_recv_once */
inline try_recv()
{
    pop();                           /* R1: pop_once */
    if
    :: st == SL_OK -> notify_one(NOT_FULL)
    :: else ->
        if
        :: !closed -> skip           /* R2: not closed: SL_EMPTY */
        :: else ->
            if
            :: drained -> REACHED(23) answer_closed()   /* R3: closed and drained: final */
            :: else ->
                /* R4: sends_landed: `closed` again, then (SPSC) the heavy
                 * barrier: SC, no step */
                skip;
                if
                :: in_flight[0] != 0 -> REACHED(25) skip   /* R5: a sender is landing: SL_EMPTY */
                :: else ->
                    if
                    :: in_flight[1] != 0 -> REACHED(25) skip
                    :: else ->
#ifndef BUG_NO_LAST_LOOK
                        pop();                 /* R6: the last look */
                        if
                        :: st == SL_OK -> REACHED(26) notify_one(NOT_FULL)
                        :: else ->
#endif
                            drained = true;    /* R7: drained (release) */
                            answer_closed()
#ifndef BUG_NO_LAST_LOOK
                        fi
#endif
                    fi
                fi
            fi
        fi
    fi
}

inline try_op(op)
{
    if
    :: op == OP_SEND -> try_send()
    :: else -> try_recv()
    fi
}

/* ---- the threads ----------------------------------------------------------- */

/* sl_chan_send of messages first..first+MSGS-1 on in-flight slot sl; stops at
 * the first SL_CLOSED. */
proctype Sender(byte me; byte first; byte sl)
{
    byte st, w, key, seen;
    bool timed, passed;              /* SL_FOREVER */
    byte m = first;

    do
    :: m < first + MSGS ->
        wait_for(NOT_FULL, OP_SEND);
        if
        :: st == SL_OK -> sent_ok[m] = true; m++
        :: st == SL_CLOSED -> refused[m] = true; break
        fi
    :: else -> break
    od;
    m = 0;
    running--
}

/* sl_chan_recv until SL_CLOSED */
proctype Receiver(byte me)
{
    byte st, w, key, seen;
    bool timed, passed;
    byte m, sl;                      /* unused: try_op expands try_send too */

    do
    :: wait_for(NOT_EMPTY, OP_RECV);
        if
        :: st == SL_OK -> skip
        :: st == SL_CLOSED -> break
        fi
    od;
    running--
}

/* sl_chan_close, at any moment */
proctype Closer()
{
    byte seen;
    closed = true;                   /* C1: exchange(closed, 1) (seq_cst), was 0 */
    notify_all(NOT_EMPTY);           /* C4 */
    notify_all(NOT_FULL);            /* C5 */
    running--
}

init {
    byte i;
    atomic {
        running = NT + 1;
        run Sender(0, 1, 0);
#if NS > 1
#ifdef SAME_SLOT
        run Sender(1, 1 + MSGS, 0);
#else
        run Sender(1, 1 + MSGS, 1);
#endif
#endif
        run Receiver(NS);
#if NR > 1
        run Receiver(NS + 1);
#endif
        run Closer()
    }
    (running == 0);
    assert(QEMPTY && answered_closed);
    assert(NONE_UNWOKEN);
    for (i : 1 .. NMSG) {
        /* sent OK: received exactly once; refused: never received */
        assert(got[i] == (sent_ok[i] -> 1 : 0));
        assert(!(refused[i] && got[i] != 0))
    }
    finished = true
}

/* No hang: receiver 0 asleep once the close is complete (closed, nobody in
 * flight) wakes eventually. */
#define R_ASLEEP_AT_CLOSE (closed && in_flight[0] == 0 && in_flight[1] == 0 && ASLEEP(NS, NOT_EMPTY))
#define R_AWAKE (!ASLEEP(NS, NOT_EMPTY))

ltl no_hang { [] (R_ASLEEP_AT_CLOSE -> <> R_AWAKE) }
ltl terminates { <> finished }
