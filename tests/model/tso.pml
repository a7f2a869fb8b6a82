/*
 * tests/model/tso.pml — the SL_SPSC channel's send and receive paths and the
 * eventcount's parking handshake under x86-TSO, in both barrier modes of
 * channels/park.c: asymmetric (membarrier; what runs in production) and
 * fenced (membarrier unavailable).
 *
 * Why a second memory model. park.pml interleaves whole statements, which is
 * sequential consistency: there a store is visible to every thread the moment
 * it is made, and the barriers of the Dekker pairs have nothing to do. On
 * x86 a plain store (a relaxed or release atomic store, `mov`) first goes
 * into the storing CPU's store buffer, and a later load by the same CPU may
 * read memory before the store drains: the store->load reordering that the
 * pairs' barriers exist to forbid. In asymmetric mode the SPSC sender has
 * only a compiler barrier between its publishing store and its load of the
 * waiter count; the waiter's membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)
 * is what makes that correct, and only a store-buffer model can tell.
 *
 * The memory model (x86-TSO, Owens/Sarkar/Sewell):
 *   - each thread with plain stores (the sender, the receiver) has a FIFO
 *     store buffer of SB entries; a plain store appends to it (waiting for
 *     room when it is full);
 *   - a load reads the thread's own newest buffered store to that address,
 *     else memory. Here no thread ever loads an address it stores to with a
 *     plain store (each side keeps its own index in a local, as the C code
 *     reads its own index relaxed), so every load reads memory;
 *   - the Flusher process moves the oldest entry of any non-empty buffer to
 *     memory, at any moment: the buffers drain in order, nondeterministically;
 *   - a locked read-modify-write (`lock xadd`, `xchg`: every seq_cst RMW, a
 *     seq_cst store) and `mfence` (a seq_cst fence) first drain the own
 *     buffer, then act on memory: one atomic step here;
 *   - membarrier(PRIVATE_EXPEDITED) drains every other thread's buffer, in
 *     one step at the call: the IPI runs a full barrier on every CPU that
 *     runs a thread of the process, and a thread that is not running has
 *     drained its buffer at its context switch;
 *   - a seq_cst load is a plain `mov` on x86: it orders nothing.
 *   -DSC makes every store write memory at once (sequential consistency, as
 *   in park.pml): the same model with the store buffers taken away.
 *
 * Channels between processes (sluice/shm.h) are this model too: the threads
 * may be in different processes, which changes nothing above but the
 * barrier's reach. A shared SL_SPSC channel in asymmetric barrier mode
 * (docs/shm-layout.md, "The barrier mode") has a compiler barrier on the
 * fast side, and its waiters (W1) and its SL_CLOSED decision (R4) issue
 * membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), which drains the buffer of
 * every thread of every registered process: the ASYM configuration's
 * membarrier step, as it stands. A fenced segment is the fence mode.
 *
 * Variables: in memory and behind the buffers, the addresses plain stores
 * write — the sender's in-flight flag (ch->in_flight[0].n), the ring's head
 * (cons.index) and tail (prod.index), the CAP message slots. Written only by
 * locked operations, hence plain globals: `waiters` and `epoch` of both
 * eventcounts, `closed`.
 *
 * Each step names the C step it stands for (park.pml and close.pml use the
 * same names):
 *
 *   sender    S1 flag_mark: flag = 1 (relaxed store) ; sl_event_fence
 *             S2 send_with: closed? (seq_cst load) -> SL_CLOSED
 *             S3 sl_spsc_try_push: head (acquire load) ; full -> SL_FULL ;
 *                else slot = m (the bytes), tail += 1 (release store)
 *             S4 flag_unmark: flag = 0 (release store) ; sl_event_fence
 *             S5 send_end: closed? (seq_cst load) -> notify_all(not_empty)
 *             S6 send_with: pushed -> notify_one(not_empty)
 *   receiver  R1 spsc_pop: tail (acquire load) ; empty -> SL_EMPTY ;
 *                else read the slot, head += 1 (release store) ;
 *                sl_event_fence ; notify_one(not_full)
 *             R2 recv_with: closed? (acquire load) -> no: SL_EMPTY
 *             R3 drained? (the receiver stops at its first SL_CLOSED, so
 *                never set when read: no step)
 *             R4 sends_landed: closed? (seq_cst load: a plain mov; set
 *                since R2, `closed` never goes back: no step) ;
 *                sl_event_heavy_fence (the SPSC flag is a light mark):
 *                mfence, then membarrier in asymmetric mode
 *             R5 senders_in_flight: flag? (seq_cst load) -> set: SL_EMPTY
 *             R6 the last look (R1 again) ; R7 drained = 1 (not read
 *                again: no step) ; SL_CLOSED
 *   closer    C1 closed = 1 (seq_cst exchange: xchg), no barrier
 *             C4, C5 notify_all(not_empty), notify_all(not_full)
 *   waiter    (sl__event_await, either side: the receiver on not_empty, the
 *             sender on not_full)
 *             W0 the operation once (the spin phase folded in, as park.pml)
 *             W1 sl_event_prepare: waiters += 1 (lock xadd) ;
 *                sl_event_heavy_fence: mfence (a no-op right after the
 *                locked add), then membarrier in asymmetric mode
 *             W2 key = epoch (acquire load)
 *             W3 the re-check: the operation ; ready -> W3c waiters -= 1
 *             W4 sl_event_wait -> futex_sleep: F1 epoch moved? ;
 *                F2 FUTEX_WAIT(epoch, key): compare and queue, one step
 *                (the kernel's bucket lock: a locked operation)
 *             W6 waiters -= 1 (lock xadd) ; W5 the operation once more
 *   notifier  N2 load waiters (seq_cst load: a plain mov) ; 0 -> done
 *             N3 epoch += 1 (lock xadd) ; N4 FUTEX_WAKE
 *   sl_event_fence: a compiler barrier in asymmetric mode (nothing here),
 *   mfence in fence mode.
 *
 * Configuration (spin -D...):
 *   ASYM      asymmetric mode (membarrier); default: fence mode
 *   CAP=n     ring capacity (default 1: the sender also blocks on not_full)
 *   MSGS=n    messages the sender sends (default 2)
 *   CLOSER    a third thread closes the channel at any moment; the sender
 *             stops at its first SL_CLOSED, the receiver receives until
 *             SL_CLOSED. Without it the receiver receives MSGS messages.
 *   SB=n      store buffer entries per thread (default 4)
 *   SC        no store buffers: sequential consistency
 *   SPURIOUS=n  spurious futex returns per run (default 0; park.pml has them)
 *
 * Properties (pan: assertions and invalid end states):
 *   - no lost wake-up: there are no end labels in the threads, so a thread
 *     left asleep in FUTEX_WAIT is an invalid end state;
 *   - message safety: the receiver's n-th message is message n, intact
 *     (the slot it reads holds it: not a stale or an overwritten one); at the
 *     end every message whose send returned SL_OK was received (exactly once,
 *     by the order check) and the ring is empty; a send that got SL_CLOSED
 *     pushed nothing.
 *
 * Planted bugs (run.sh --mutants):
 *   BUG_NO_MEMBARRIER   sl_event_heavy_fence without its membarrier in
 *                       asymmetric mode (the waiter's after W1, and the
 *                       receiver's in R4)
 *   BUG_SEND_NO_FENCE   fence mode, the sender's sl_event_fence left out (it
 *                       behaves as in asymmetric mode while the waiters do
 *                       not issue membarrier)
 *   BUG_POP_NO_FENCE    fence mode, spsc_pop's sl_event_fence left out
 *   BUG_NO_CLOSE_BARRIER  the receiver's heavy barrier in R4 left out: it
 *                       loads the flag right after `closed` (with CLOSER;
 *                       close.pml under SC cannot catch it)
 *   BUG_TAIL_FIRST      the tail store before the slot's bytes
 *
 * Variant (not a bug): CLOSE_BARRIER puts back the barrier close issued
 * before it became one exchange (C2: sl_event_heavy_fence after C1), without
 * the `close_done` flag that went with it; with BUG_NO_CLOSE_BARRIER it
 * shows that barrier cannot stand in for the receiver's.
 *
 * Coverage (run.sh --cover): REACHED(n), as in park.pml.
 */

#ifdef COVER
#define REACHED(n) assert(COVER != (n));
#else
#define REACHED(n)
#endif

#ifndef CAP
#define CAP 1
#endif
#ifndef MSGS
#define MSGS 2
#endif
#ifndef SB
#define SB 4
#endif
#ifndef SPURIOUS
#define SPURIOUS 0
#endif

#define SL_OK     0
#define SL_FULL   1
#define SL_EMPTY  2
#define SL_CLOSED 3
#define RETRY(s)  ((s) == SL_FULL || (s) == SL_EMPTY)

/* threads; the first two have store buffers */
#define SND 0
#define RCV 1
#define CLS 2

/* the two eventcounts */
#define NOT_EMPTY 0   /* the receiver parks here */
#define NOT_FULL  1   /* the sender parks here */

/* addresses written by plain stores */
#define A_FLAG 0      /* ch->in_flight[0].n, the SPSC sender's flag */
#define A_HEAD 1      /* cons.index */
#define A_TAIL 2      /* prod.index */
#define A_SLOT 3      /* the slots: A_SLOT .. A_SLOT + CAP - 1 */
#define NADDR (A_SLOT + CAP)

byte mem[NADDR];
byte sba[2 * SB];     /* store buffers: address and value of each entry, */
byte sbv[2 * SB];     /* oldest first, thread t's at t*SB .. t*SB + sbn[t]-1 */
byte sbn[2];
hidden byte k_;       /* scratch for the shifts, inside d_steps only */

byte waiters[2];      /* sl_event.waiters */
byte epoch[2];        /* sl_event.epoch, the futex word */
byte qon[2];          /* the futex queue: thread t asleep on eventcount qon[t]-1 */
byte spurious = SPURIOUS;
bool closed;

byte running;
byte nsent;           /* ghost: sends that returned SL_OK */
byte nrecv;           /* ghost: receives that returned SL_OK */

/* ---- the memory ------------------------------------------------------------- */

/* A plain store by thread t: into its buffer (SC: into memory). */
inline store(t, a, v)
{
#ifdef SC
    mem[a] = v
#else
    d_step { sbn[t] < SB -> sba[t * SB + sbn[t]] = a; sbv[t * SB + sbn[t]] = v; sbn[t]++ }
#endif
}

/* Moves thread t's oldest buffered store to memory (inside a d_step). */
inline flush1(t)
{
    mem[sba[t * SB]] = sbv[t * SB];
    k_ = 1;
    do
    :: k_ < sbn[t] ->
        sba[t * SB + k_ - 1] = sba[t * SB + k_];
        sbv[t * SB + k_ - 1] = sbv[t * SB + k_];
        k_++
    :: else -> break
    od;
    sbn[t]--;
    sba[t * SB + sbn[t]] = 0;
    sbv[t * SB + sbn[t]] = 0;
    k_ = 0
}

/* Drains thread t's buffer (inside a d_step): what a locked instruction or
 * mfence does before it acts. */
inline drain(t)
{
    do
    :: t < 2 && sbn[t] > 0 -> flush1(t)
    :: else -> break
    od
}

/* The buffers drain by themselves, oldest entry first, at any moment. */
proctype Flusher()
{
end:
    do
    :: d_step { sbn[SND] > 0 -> flush1(SND) }
    :: d_step { sbn[RCV] > 0 -> flush1(RCV) }
    od
}

/* sl_event_fence: a compiler barrier in asymmetric mode, mfence otherwise. */
inline event_fence(t)
{
#ifdef ASYM
    skip
#else
    d_step { drain(t) }
#endif
}

/* sl_event_heavy_fence: mfence (the own buffer drains), then, in asymmetric
 * mode, membarrier: every other thread's buffer drains now. One step: the
 * caller does nothing between the two, and the Flusher may drain its buffer
 * before. `mark`: the REACHED mark of a membarrier that drains a non-empty
 * buffer. */
inline heavy_fence(t, mark)
{
    d_step {
        drain(t);
#if defined(ASYM) && !defined(BUG_NO_MEMBARRIER)
        if
        :: (sbn[SND] > 0 && t != SND) || (sbn[RCV] > 0 && t != RCV) -> REACHED(mark) skip
        :: else -> skip
        fi;
        if :: t != SND -> drain(SND) :: else -> skip fi;
        if :: t != RCV -> drain(RCV) :: else -> skip fi
#endif
    }
}

/* ---- the eventcount ----------------------------------------------------------- */

/* N3, N4: the notifier found a waiter: epoch += 1 (lock xadd), FUTEX_WAKE.
 * One thread at most waits on each eventcount, so a wake-one and a
 * wake-all are the same. */
inline wake(t, ev)
{
    d_step { drain(t); epoch[ev]++ };
    d_step {
        if
        :: qon[SND] == ev + 1 -> REACHED(54) qon[SND] = 0
        :: else -> skip
        fi;
        if
        :: qon[RCV] == ev + 1 -> REACHED(54) qon[RCV] = 0
        :: else -> skip
        fi
    }
}

/* notify_one or notify_all, after the condition change: N2, then N3 and N4 if
 * it saw a waiter. N2 is a plain load: it may run while the change is still
 * in the notifier's buffer. */
inline notify(t, ev)
{
    seen = waiters[ev];
#ifdef COVER
    d_step {                    /* 51: the sender read 0, its tail store still buffered */
        do
        :: k_ < sbn[SND] && sba[SND * SB + k_] != A_TAIL -> k_++
        :: else -> break
        od;
        if
        :: t == SND && seen == 0 && k_ < sbn[SND] -> REACHED(51) skip
        :: else -> skip
        fi;
        k_ = 0
    };
#endif
    if
    :: seen != 0 -> seen = 0; wake(t, ev)
    :: else -> skip
    fi
}

/* W4 (F1, F2, asleep, back to F1) and W6. */
inline event_wait(t, ev)
{
    do
    :: epoch[ev] != key -> break                     /* F1: the epoch moved */
    :: else ->
        d_step {                                     /* F2: FUTEX_WAIT */
            drain(t);
            if
            :: epoch[ev] == key -> qon[t] = ev + 1
            :: else -> REACHED(55) skip              /* EAGAIN */
            fi
        };
        if
        :: qon[t] == 0 -> skip                       /* woken, or EAGAIN */
        :: d_step { qon[t] != 0 && spurious > 0 -> qon[t] = 0; spurious-- }
        fi
    od;
    key = 0;
    d_step { drain(t); waiters[ev]-- }                /* W6 */
}

/* sl__event_await(ev, op): the operation, then prepare / re-check / wait
 * until it is ready. Leaves its status in st. */
inline await(t, ev)
{
    try_op(t);                                       /* W0 */
    if
    :: RETRY(st) ->
        do
        :: d_step { drain(t); waiters[ev]++ };        /* W1 */
            heavy_fence(t, 52);
            key = epoch[ev];                         /* W2 */
            try_op(t);                               /* W3 */
            if
            :: !RETRY(st) ->
                REACHED(53)
                key = 0;
                d_step { drain(t); waiters[ev]-- };   /* W3c: sl_event_cancel */
                break
            :: else -> skip
            fi;
            event_wait(t, ev);                       /* W4, W6 */
            try_op(t);                               /* W5 */
            if
            :: !RETRY(st) -> break
            :: else -> skip
            fi
        od
    :: else -> skip
    fi
}

/* ---- the channel ------------------------------------------------------------- */

inline sender_fence()
{
#ifdef BUG_SEND_NO_FENCE
    skip
#else
    event_fence(SND)
#endif
}

/* send_with on the SPSC adapter: S1..S6. */
inline try_send()
{
    store(SND, A_FLAG, 1);                           /* S1 */
    sender_fence();
#ifdef CLOSER
    if
    :: closed -> REACHED(57) st = SL_CLOSED          /* S2 */
    :: else ->
#endif
        hd = mem[A_HEAD];                            /* S3 */
        if
        :: tail - hd >= CAP -> REACHED(56) st = SL_FULL
        :: else ->
#ifdef BUG_TAIL_FIRST
            store(SND, A_TAIL, tail + 1);
            store(SND, A_SLOT + tail % CAP, m);
#else
            store(SND, A_SLOT + tail % CAP, m);      /* the message bytes */
            store(SND, A_TAIL, tail + 1);            /* release */
#endif
            tail++;
            st = SL_OK
        fi;
        hd = 0;
#ifdef CLOSER
    fi;
#endif
    store(SND, A_FLAG, 0);                           /* S4 */
    sender_fence();
#ifdef CLOSER
    if
    :: closed -> notify(SND, NOT_EMPTY)              /* S5 */
    :: else -> skip
    fi;
#endif
    if
    :: st == SL_OK -> notify(SND, NOT_EMPTY)         /* S6 */
    :: else -> skip
    fi
}

/* spsc_pop, then pop_with's notify (R1). */
inline pop()
{
    tl = mem[A_TAIL];
    if
    :: tl == head -> st = SL_EMPTY
    :: else ->
        /* message safety: the n-th message, and the bytes are there */
        assert(mem[A_SLOT + head % CAP] == head + 1);
        store(RCV, A_HEAD, head + 1);                /* release */
        head++;
#ifndef BUG_POP_NO_FENCE
        event_fence(RCV);
#endif
        st = SL_OK;
        notify(RCV, NOT_FULL)
    fi;
    tl = 0
}

/* R4's barrier: sends_landed's heavy fence between its load of `closed` and
 * its load of the flag. */
inline close_barrier()
{
#ifdef COVER
    d_step {                    /* 60: the sender's mark (flag = 1) still buffered */
        do
        :: k_ < sbn[SND] && !(sba[SND * SB + k_] == A_FLAG && sbv[SND * SB + k_] == 1) -> k_++
        :: else -> break
        od;
        if
        :: k_ < sbn[SND] -> REACHED(60) skip
        :: else -> skip
        fi;
        k_ = 0
    };
#endif
#ifdef BUG_NO_CLOSE_BARRIER
    skip
#else
    heavy_fence(RCV, 61)
#endif
}

/* recv_with: R1..R7. */
inline try_recv()
{
    pop();
#ifdef CLOSER
    if
    :: st == SL_EMPTY && closed ->                   /* R2 */
        close_barrier();                             /* R4 */
        if
        :: mem[A_FLAG] != 0 -> REACHED(58) skip      /* R5: a send is landing */
        :: else ->
            pop();                                   /* R6 */
            if
            :: st == SL_OK -> REACHED(59) skip
            :: else -> st = SL_CLOSED                /* R7 */
            fi
        fi
    :: else -> skip
    fi
#endif
}

inline try_op(t)
{
    if
    :: t == SND -> try_send()
    :: else -> try_recv()
    fi
}

/* sl_chan_send of messages 1..MSGS, stopping at the first SL_CLOSED. */
proctype Sender()
{
    byte st, key, seen, hd, tail, m = 1;
    byte head, tl;                                   /* unused: try_op has try_recv too */

    do
    :: m <= MSGS ->
        await(SND, NOT_FULL);
        if
        :: st == SL_OK -> nsent++; m++
        :: st == SL_CLOSED -> break
        fi
    :: else -> break
    od;
    running--
}

/* sl_chan_recv until SL_CLOSED (CLOSER), or MSGS times. */
proctype Receiver()
{
    byte st, key, seen, head, tl;
    byte hd, tail, m;                                /* unused: try_op has try_send too */

    do
#ifdef CLOSER
    :: true ->
#else
    :: head < MSGS ->
#endif
        await(RCV, NOT_EMPTY);
        if
        :: st == SL_OK -> nrecv++
        :: st == SL_CLOSED -> break
        fi
#ifndef CLOSER
    :: else -> break
#endif
    od;
    running--
}

/* sl_chan_close: C1, C4, C5. */
proctype Closer()
{
    byte seen;
    closed = true;                                   /* C1 (xchg) */
#ifdef CLOSE_BARRIER
    heavy_fence(CLS, 62);                            /* the old C2 (62: no cover row) */
#endif
    notify(CLS, NOT_EMPTY);                          /* C4 */
    notify(CLS, NOT_FULL);                           /* C5 */
    running--
}

init {
    atomic {
#ifdef CLOSER
        running = 3;
        run Closer();
#else
        running = 2;
#endif
        run Sender();
        run Receiver();
#ifndef SC
        run Flusher()
#endif
    }
    (running == 0 && sbn[SND] == 0 && sbn[RCV] == 0);
    /* every message sent with SL_OK received, in order (the assertion at
     * the pop), and nothing left in the ring */
    assert(nrecv == nsent);
    assert(mem[A_TAIL] == mem[A_HEAD]);
#ifndef CLOSER
    assert(nsent == MSGS)
#endif
}
