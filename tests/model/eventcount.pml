/*
 * tests/model/eventcount.pml — the eventcount (park.pml) under the channel's
 * blocking send and receive (chan_wait.c: wait_for; chan.c: the attempts,
 * try_send_once and try_recv_once here)
 * over a one-slot buffer, with close.
 *
 * Conditions: receivers park on NOT_EMPTY until "a message is there (or the
 * channel is closed)", senders on NOT_FULL until "the slot is free".
 * A successful push notifies one receiver, a successful pop one sender; close
 * wakes everyone (notify_all on both).
 *
 * Close, here, comes after every send has returned (the last sender out
 * closes), so no sender is ever in flight at a close: the in-flight protocol
 * is close.pml's subject.
 *
 * Threads (spin -D... to change; at most 4 in all):
 *   NS=1|2    senders, indices 0..NS-1, MSGS messages each. Sender 0 blocks
 *             forever (sl_chan_send) unless SENDER_TIMED; sender 1 is timed
 *             (sl_chan_send_for) and gives up the rest at its first
 *             SL_TIMEDOUT. The last sender out closes the channel.
 *   NR=1|2    receivers, indices NS..NS+NR-1, receiving until SL_CLOSED.
 *             Receiver 0 blocks forever (sl_chan_recv); receiver 1 is timed
 *             (sl_chan_recv_for) and leaves for good at its first SL_TIMEDOUT
 *             (after wait_for's final attempt).
 *   MSGS=n    messages per sender (default 2)
 *   SPURIOUS=n  spurious futex returns allowed per run (default 1)
 *   Defaults: NS=1, NR=2 (one sender, a blocking and a timed receiver).
 *
 * Properties:
 *   - no invalid end state (`pan` without -E): every thread ends; a thread
 *     left asleep in FUTEX_WAIT is a lost wake-up, reported as
 *     "invalid end state". There are no end labels: the only valid end is
 *     the end of each proctype.
 *   - assertions: every message received at most once (at the pop), and at
 *     the end every message whose send returned SL_OK received exactly once,
 *     none left in the slot.
 *   - ltl no_lost_wakeup (with weak fairness): a receiver asleep while a
 *     message is there wakes eventually; a sender asleep while the slot is
 *     free wakes eventually.
 *   - ltl terminates (checked without fairness, which is stronger): every
 *     run ends — no deadlock, no livelock under any schedule.
 *
 * Planted bugs: see park.pml, and BUG_CLOSE_NOTIFY_ONE (close wakes one
 * receiver only) below.
 */

#ifndef NS
#define NS 1
#endif
#ifndef NR
#define NR 2
#endif
#define NT (NS + NR)          /* threads: senders 0..NS-1, receivers NS..NT-1 */

#ifndef MSGS
#define MSGS 2
#endif
#ifndef SPURIOUS
#define SPURIOUS 1
#endif
#define NMSG (NS * MSGS)      /* message ids 1..NMSG */

#include "park.pml"

#define OP_SEND 1
#define OP_RECV 2

byte slot;                    /* the one-slot buffer: 0 empty, else a message id */
bool closed;                  /* ch->closed */
byte senders_done;            /* senders that have finished or given up */
byte running;                 /* threads not yet ended */
bool finished;                /* init saw every thread end (for ltl terminates) */

/* ghost state for the checks */
bool sent_ok[NMSG + 1];       /* that message's send returned SL_OK */
byte got[NMSG + 1];           /* times that message was received */

/* ---- the non-blocking attempts (chan.c) ------------------------------------ */

/* try_send_once(m): raw_push, then notify one receiver. */
inline try_send()
{
#ifdef BUG_LOAD_BEFORE_CHANGE
    seen = waiters[NOT_EMPTY];       /* N2 (BUG: the waiter load before the push) */
#endif
    /* N1: raw_push: the publishing CAS (seq_cst RMW; SPSC: store + sl_event_fence) */
    atomic {
        if
        :: slot == 0 -> slot = m; sent_ok[m] = true; st = SL_OK
        :: else -> st = SL_FULL
        fi
    }
    if
    :: st == SL_OK -> notify_one(NOT_EMPTY)   /* N2..N4 on not_empty */
    :: else -> seen = 0
    fi
}

/* raw_pop: the claiming CAS (seq_cst RMW), the condition change for senders. */
inline pop()
{
    atomic {
        if
        :: slot != 0 ->
            got[slot]++;
            assert(got[slot] == 1);  /* received at most once */
            slot = 0;
            st = SL_OK
        :: else -> st = SL_EMPTY
        fi
    }
}

/* try_recv_once: pop (and notify one sender); if empty and closed, one last
 * look, then SL_CLOSED. */
inline try_recv()
{
#ifdef BUG_LOAD_BEFORE_CHANGE
    seen = waiters[NOT_FULL];        /* N2 (BUG: the waiter load before the pop) */
#endif
    pop();                           /* N1: pop_once -> raw_pop */
    if
    :: st == SL_OK -> notify_one(NOT_FULL)   /* N2..N4 on not_full */
    :: else ->
        seen = 0;
        /* is_closed; nobody is in flight (see above) */
        if
        :: closed ->
            pop();                   /* the last look */
            if
            :: st == SL_OK -> notify_one(NOT_FULL)
            :: else -> st = SL_CLOSED
            fi
        :: else -> skip              /* SL_EMPTY */
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

/* sl_chan_close: closed = 1 (seq_cst exchange), then wake everyone on both eventcounts. */
inline chan_close()
{
    closed = true;                   /* N1 for both eventcounts */
#ifdef BUG_CLOSE_NOTIFY_ONE
    seen = waiters[NOT_EMPTY];
    notify_one_after_load(NOT_EMPTY);   /* BUG: close wakes one receiver only */
#else
    notify_all(NOT_EMPTY);
#endif
    notify_all(NOT_FULL)
}

/* ---- the threads ----------------------------------------------------------- */

/* sl_chan_send (timed: sl_chan_send_for) of messages first..first+MSGS-1. A
 * timed sender that gets SL_TIMEDOUT gives up the rest. The last sender out
 * closes the channel. */
proctype Sender(byte me; byte first; bool timed)
{
    byte st, w, key, seen;
    bool passed;
    byte m = first;
    bool last;

    do
    :: m < first + MSGS ->
        wait_for(NOT_FULL, OP_SEND);
        if
        :: st == SL_OK -> m++
        :: st == SL_TIMEDOUT -> break   /* gave up: message m is not sent */
        fi
    :: else -> break
    od;
    m = 0;
    atomic { senders_done++; last = (senders_done == NS) }
    if
    :: last -> chan_close()
    :: else -> skip
    fi;
    running--
}

/* sl_chan_recv (timed: sl_chan_recv_for) until SL_CLOSED; a timed receiver
 * that gets SL_TIMEDOUT leaves for good. */
proctype Receiver(byte me; bool timed)
{
    byte st, w, key, seen;
    bool passed;
    byte m;                          /* unused: try_op expands try_send too */

    do
    :: wait_for(NOT_EMPTY, OP_RECV);
        if
        :: st == SL_OK -> skip       /* recorded in got[] at the pop */
        :: st == SL_CLOSED -> break
        :: st == SL_TIMEDOUT -> break
        fi
    od;
    running--
}

init {
    byte i;
#ifndef SENDER_TIMED
#define SENDER_TIMED false
#endif
    atomic {
        running = NT;
        run Sender(0, 1, SENDER_TIMED);
#if NS > 1
        run Sender(1, 1 + MSGS, true);
#endif
        run Receiver(NS, false);
#if NR > 1
        run Receiver(NS + 1, true);
#endif
    }
    (running == 0);                  /* every thread has ended */
    /* every message whose send returned SL_OK was received exactly once, and
     * nothing is left behind in the slot */
    assert(slot == 0);
    assert(NONE_UNWOKEN);
    for (i : 1 .. NMSG) {
        assert(got[i] == (sent_ok[i] -> 1 : 0))
    }
    finished = true
}

/* Liveness, for the threads that block forever (sender 0, receiver 0): a
 * timed thread may legitimately sleep through a message until its deadline,
 * and ETIMEDOUT then ends its sleep anyway. */
#define R_STARVED  (slot != 0 && ASLEEP(NS, NOT_EMPTY))  /* a message, and receiver 0 asleep */
#define R_AWAKE    (!ASLEEP(NS, NOT_EMPTY))
#define S_STARVED  (slot == 0 && ASLEEP(0, NOT_FULL))    /* a free slot, and sender 0 asleep */
#define S_AWAKE    (!ASLEEP(0, NOT_FULL))

ltl no_lost_wakeup { [] (R_STARVED -> <> R_AWAKE) && [] (S_STARVED -> <> S_AWAKE) }
ltl terminates { <> finished }
