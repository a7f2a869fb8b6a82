/*
 * tests/model/cellring.pml — the ring of stamped cells of channels/cellring.h
 * (sl__cellring_push, sl__cellring_pop, the displacing push of SL_RING, and
 * sl__cellring_len at rest), against a sequential FIFO oracle.
 *
 * Memory model. Promela interleaves whole statements: sequential
 * consistency, which is what the C code uses for every stamp and counter
 * access (seq_cst loads and CASes, the double-width CAS a full barrier). The
 * value loads are relaxed in C; here they are ordinary steps of their own,
 * between the stamp load and the CAS that depends on them. What the model does
 * NOT check: the relaxed value load under a weaker model (cellring.h's comment
 * carries that: the stamp load synchronises with the CAS that wrote the value).
 *
 * Each step is one Promela statement and names the C step it stands for:
 *
 *   push  P1 load tail t (seq_cst)
 *         P2 load the stamp s of cell(t) (seq_cst); d = s - t (signed)
 *            d < 0 and not displacing: SL_FULL
 *         P3 load the cell's value `old` (relaxed)
 *         P4 double-width CAS (stamp, value): (s, old) -> (t + 1, value); one
 *            atomic step over both words; it claims and publishes at once,
 *            and when d < 0 (displacing) takes the oldest value `old`
 *         P5 displacing only: raise head to at least next(s - 1)
 *         P6 CAS tail t -> next(t)   (also the help, when d > 0)
 *         P1 again: reload the tail, after a failed P4 or a help
 *   pop   C1 load head h (seq_cst)
 *         C2 load the stamp s of cell(h); d = s - (h + 1)
 *            d < 0: SL_EMPTY
 *         C3 load the value v (relaxed)
 *         C4 CAS stamp h + 1 -> h + one_lap (seq_cst): the take
 *         C5 CAS head h -> next(h)   (also the help, when d > 0)
 *         C1 again after a failed C4 or a help
 *
 * Positions are taken modulo PMOD (a multiple of one_lap, like 2^64 in C) and
 * compared by their signed difference, as the C code does; with -DBASE near
 * PMOD a run crosses the wrap.
 *
 * The swap form (-DSWAP: SL_MPMC's messages of 9 to 256 bytes,
 * channels/mpmc.c): the cells' values are slot indices, every cell always
 * holds one; CAP spare entries hold the other CAP slots. A slot is two
 * words, written one at a time, so a torn copy is visible.
 *
 *   push  S0 the ring's own full test (P1, P2) before a spare: SL_FULL
 *         S1 exchange the home entry (producer number mod CAP) with
 *            NO_SPARE, then the others in turn; none held a slot: SL_FULL
 *         S2 write the message into the slot, word by word
 *         P1..P4 as above with the slot index as the value; a successful P4
 *            swaps our slot in and hands back the cell's free one, `old`
 *         S3 store `old` into the entry we emptied, before P6; a P2 that
 *            finds the ring full stores our own slot back (SL_FULL)
 *   pop   C1..C3 as above (the value is a slot index)
 *         S4 copy the slot out, word by word (speculatively)
 *         C4 as above; only a successful take keeps the copy
 *   Checks added: a pop's copy is whole and the oracle's message; at rest
 *   every slot is in exactly one place (a cell or a spare entry).
 *   Planted bugs: BUG_COPY_AFTER_TAKE (S4 after C4:
 *   SL_MUTANT_MPMC_COPY_AFTER_TAKE), BUG_SPARE_BACK_EARLY (the push puts
 *   its own slot back before its P4 and keeps `old`:
 *   SL_MUTANT_MPMC_SPARE_BACK_EARLY).
 *
 * Threads (spin -D... to change):
 *   CAP=1|2|3  capacity (one_lap: 2, 4, 4)
 *   NP=1|2     producers, MSGS=1|2 messages each (ids p*MSGS + k + 1); a
 *              push that answers SL_FULL drops that message (a try-send)
 *   NC=1|2     consumers, POPS try-pops each (each may answer SL_EMPTY)
 *   DISPLACE   producers use the displacing push (the overwrite ring): never
 *              SL_FULL; the oldest message leaves instead
 *   BASE       the start position (a multiple of one_lap), default 0
 * After every thread has ended, init checks the counters at rest and drains
 * the ring with pops until SL_EMPTY.
 *
 * Checks (assertions unless said otherwise):
 *   - oracle: a FIFO queue `q` of the messages in the ring, changed in the
 *     same atomic step as the operation's linearization point (P4, C4); the
 *     value a pop returns is the oracle's head at its C4, the value a
 *     displacing push returns is the oracle's head at its P4 (the oldest),
 *     and the ring never holds more than CAP messages;
 *   - a SL_FULL answer only when the oracle held CAP messages at the P2 load
 *     that decided it, a SL_EMPTY answer only when it held none at the C2
 *     load; a displacement only when it held CAP at the P4;
 *   - every message received at most once and never invented (1..NMSG and
 *     pushed); per producer, each consumer receives in sending order;
 *   - the header's invariants: head and tail only move forward; s < t means
 *     s == t - one_lap + 1; an empty answer means s == h; a failed P4 failed
 *     on the stamp (a value never changes without its stamp); the value read
 *     at C3 is still there at a successful C4;
 *   - at rest: tail exact (the first unwritten position), head exact except
 *     in the overwrite ring (a displacing push whose head CAS lost to a pop
 *     still between its C4 and C5 leaves the head on a displaced position),
 *     and sl__cellring_len == the oracle's count; after the drain every
 *     message whose push returned OK was received or displaced exactly once,
 *     one that got SL_FULL neither, head == tail, and every cell is free for
 *     the position it serves next;
 *   - no invalid end state (nobody blocks); with -DNP and `pan -l`
 *     (run.sh's `progress` kind), no non-progress cycle: every loop of retries
 *     passes an operation's completion, under any schedule (lock-freedom in
 *     this bounded model: no thread can retry forever while the others stand
 *     still or finish).
 *
 * Planted bugs (run.sh --mutants):
 *   BUG_SPLIT_PUBLISH     P4 split: CAS the stamp t -> t + 1, then store the
 *                         value (channels' SL_MUTANT_MPMC_SPLIT_PUBLISH)
 *   BUG_FREE_BEFORE_READ  C3 after C4: the cell is free before its value is
 *                         read (SL_MUTANT_MPMC_FREE_BEFORE_READ)
 *   BUG_FULL_NE           the full (or displace) decision on s != t, not s < t
 *   BUG_STALE_HELP        the counter move (P5, P6, C5) is a plain store of
 *                         next(pos), not a CAS from pos
 *   BUG_NO_HELP           a push or pop that finds the counter behind its cell
 *                         re-reads it without moving it (waits for the owner)
 *   BUG_DISPLACE_NO_HEAD  the displacing push leaves the head alone (P5 out):
 *                         the head is then not exact at rest
 *
 * Coverage (run.sh --cover): REACHED(n) marks a branch worth reaching; with
 * -DCOVER=n it becomes assert(false) there.
 */

#ifdef COVER
#define REACHED(n) assert(COVER != (n));
#else
#define REACHED(n)
#endif

#ifndef CAP
#define CAP 1
#endif
#if CAP == 1
#define ONE_LAP 2
#else
#define ONE_LAP 4
#endif
#ifndef NP
#define NP 2
#endif
#ifndef MSGS
#define MSGS 1
#endif
#ifndef NC
#define NC 1
#endif
#ifndef POPS
#define POPS 2
#endif
#ifdef DISPLACE
#define DISPLACING true
#else
#define DISPLACING false
#endif
#ifndef PMOD
#define PMOD 64
#endif
#ifndef BASE
#define BASE 0
#endif
#define NMSG (NP * MSGS)

/* position arithmetic modulo PMOD, as uint64_t arithmetic modulo 2^64 */
#define MOD(x)      (((x) + PMOD) % PMOD)
#define UDIFF(a, b) (((a) - (b) + PMOD) % PMOD)
#define DIFF(a, b)  (UDIFF(a, b) >= PMOD / 2 -> UDIFF(a, b) - PMOD : UDIFF(a, b))
#define IDX(p)      ((p) % ONE_LAP)
#define NEXT(p)     (IDX(p) + 1 < CAP -> MOD((p) + 1) : MOD((p) - IDX(p) + ONE_LAP))
#define PROD(m)     (((m) - 1) / MSGS)
#define SEQ(m)      (((m) - 1) % MSGS)

/* the full (or displace) decision on d = s - t */
#ifdef BUG_FULL_NE
#define OLDER(d) ((d) != 0)
#else
#define OLDER(d) ((d) < 0)
#endif

#define R_OK       0
#define R_FULL     1
#define R_EMPTY    2
#define R_DISPLACED 3

/* the ring */
byte stamp[CAP];
byte val[CAP];                 /* 0: never written; else a message id */
byte head = BASE;
byte tail = BASE;

#ifdef SWAP
#define NSLOT (2 * CAP)
byte w0[NSLOT];                /* a slot's two words: a message id once written */
byte w1[NSLOT];
byte spare[CAP];               /* a spare entry: slot index + 1; 0: NO_SPARE */
#endif

/* ghost state */
byte q[CAP];                   /* the oracle: messages in the ring, oldest first */
byte qlen;
bool pushed[NMSG + 1];         /* its P4 succeeded */
bool sent_ok[NMSG + 1];        /* its push returned OK or DISPLACED */
bool full_answer[NMSG + 1];    /* its push returned SL_FULL */
byte got[NMSG + 1];            /* times it was received by a pop */
byte evicted[NMSG + 1];        /* times it was displaced */
byte npushed;                  /* successful P4s */
byte ntaken;                   /* successful C4s and displacements */
bool moved_back;               /* a counter write moved it backwards */

/* the position of the k-th message from BASE */
#define POS(k) MOD(BASE + ((k) / CAP) * ONE_LAP + (k) % CAP)

inline enqueue(m)
{
    assert(qlen < CAP);        /* never more than CAP messages */
    q[qlen] = m;
    qlen++
}

/* the oracle's oldest message into x */
inline dequeue(x)
{
    assert(qlen > 0);
    x = q[0];
    j = 1;
    do
    :: j < qlen -> q[j - 1] = q[j]; j++
    :: else -> break
    od;
    qlen--;
    q[qlen] = 0;
    j = 0
}

/* P5, P6, C5: sl__cellring_advance: CAS counter pos -> next(pos). Counters
 * only move forward: the CAS from the value read makes that hold by
 * construction; a plain store (BUG_STALE_HELP) from a stale pos does not. */
inline advance(ctr, p, mark)
{
    d_step {
#ifdef BUG_STALE_HELP
        moved_back = (DIFF(NEXT(p), ctr) < 0);
        ctr = NEXT(p);                     /* BUG: a plain store */
#else
        if
        :: ctr == p -> ctr = NEXT(p)
        :: else -> REACHED(mark)           /* someone moved it already */
        fi;
#endif
        assert(!moved_back)                /* head and tail only move forward */
    }
}

/* P5: sl__cellring_raise: a CAS loop that moves the counter to next(p)
 * unless it is there or beyond already — one atomic step here (each of the
 * loop's iterations either succeeds or finds the counter moved, and it stops
 * once the counter is at or past the target). */
inline raise(ctr, p, mark)
{
    d_step {
#ifdef BUG_STALE_HELP
        moved_back = (DIFF(NEXT(p), ctr) < 0);
        ctr = NEXT(p);                     /* BUG: a plain store */
#else
        if
        :: DIFF(NEXT(p), ctr) > 0 -> ctr = NEXT(p)
        :: else -> REACHED(mark)           /* at or past it already */
        fi;
#endif
        assert(!moved_back)
    }
}

/* sl__cellring_push of value x for message m (x == m but in the swap
 * form, where x is m's slot); sets r (and ev when displaced) */
inline push(m, x)
{
    t = tail;                                          /* P1 */
    do
    :: d_step {                                        /* P2 */
        s = stamp[IDX(t)];
        d = DIFF(s, t);
        if
        :: OLDER(d) && !DISPLACING ->
            assert(qlen == CAP);                       /* full at the deciding load */
            REACHED(31)
        :: else -> skip
        fi;
        if
        :: d < 0 -> assert(s == MOD(t - ONE_LAP + 1))
        :: else -> skip
        fi
    };
        if
        :: OLDER(d) && !DISPLACING ->
#ifdef SWAP
            spare[e] = x + 1;                          /* S3: our own slot back */
#endif
            r = R_FULL; break
        :: (OLDER(d) && DISPLACING) || d == 0 ->
            old = val[IDX(t)];                         /* P3 */
#ifdef BUG_SPLIT_PUBLISH
            if
            :: d == 0 ->
                d_step {                               /* BUG: the claim alone */
                    if
                    :: stamp[IDX(t)] == s ->
                        stamp[IDX(t)] = MOD(t + 1);
                        enqueue(m); pushed[m] = true; npushed++;
                        ok = true
                    :: else -> ok = false
                    fi
                };
                if
                :: ok ->
                    val[IDX(t)] = x;                   /* BUG: then the value */
                    advance(tail, t, 37);
                    r = R_OK;
                    break
                :: else -> goto reload
                fi
            :: else -> skip
            fi;
#endif
            d_step {                                   /* P4: the double-width CAS */
                if
                :: stamp[IDX(t)] == s && val[IDX(t)] == old ->
                    stamp[IDX(t)] = MOD(t + 1);
                    val[IDX(t)] = x;
                    if
                    :: d != 0 ->                       /* displacing: full, takes the oldest */
                        assert(qlen == CAP);
                        dequeue(expect);
                        ntaken++;
                        REACHED(38)
                    :: else -> skip
                    fi;
                    enqueue(m);
                    pushed[m] = true;
                    npushed++;
                    ok = true
                :: else ->
                    assert(stamp[IDX(t)] != s);        /* the value never changes alone */
                    ok = false;
                    REACHED(33)                        /* another push won the cell */
                fi
            };
            if
            :: ok ->
                if
                :: d != 0 ->
#ifndef BUG_DISPLACE_NO_HEAD
                    raise(head, MOD(s - 1), 39);       /* P5 */
#endif
                    ev = old;
                    r = R_DISPLACED
                :: else ->
#if defined(SWAP) && !defined(BUG_SPARE_BACK_EARLY)
                    spare[e] = old + 1;                /* S3: the cell's free slot is ours */
#endif
                    r = R_OK
                fi;
                advance(tail, t, 37);                  /* P6 */
                break
            :: else -> skip
            fi
        :: else ->
            REACHED(32);                               /* written by another push, or t stale */
#ifndef BUG_NO_HELP
            advance(tail, t, 37)                       /* P6: the help */
#else
            skip
#endif
        fi;
#ifdef BUG_SPLIT_PUBLISH
reload:
#endif
        t = tail                                       /* P1 again */
    od
}

#ifdef SWAP
/* The swap form's push of message m (channels/mpmc.c, push_swap). */
inline push_swap(m)
{
    t = tail;                                          /* S0: P1 */
    d_step {                                           /* S0: P2 */
        s = stamp[IDX(t)];
        d = DIFF(s, t);
        if
        :: OLDER(d) -> assert(qlen == CAP); REACHED(43)
        :: else -> skip
        fi
    };
    if
    :: OLDER(d) -> r = R_FULL
    :: else ->
        e = me % CAP;
        i = 0;
        took = false;
        do
        :: i == CAP -> break
        :: i < CAP ->
            d_step { mine = spare[e]; spare[e] = 0 };  /* S1: exchange */
            if
            :: mine != 0 -> mine = mine - 1; took = true; break
            :: else -> e = (e + 1) % CAP; i++
            fi
        od;
        if
        :: !took -> r = R_FULL; REACHED(44)            /* every spare with a push */
        :: else ->
            w0[mine] = m;                              /* S2: the copy in */
            w1[mine] = m;
#ifdef BUG_SPARE_BACK_EARLY
            spare[e] = mine + 1;                       /* BUG: published and spare */
#endif
            push(m, mine)
        fi
    fi
}
#endif

/* sl__cellring_pop; sets r, and v and expect when r == R_OK */
inline pop()
{
    h = head;                                          /* C1 */
    do
    :: d_step {                                        /* C2 */
        s = stamp[IDX(h)];
        d = DIFF(s, MOD(h + 1));
        if
        :: d < 0 ->
            assert(qlen == 0);                         /* empty at the deciding load */
            assert(s == h);
            REACHED(34)
        :: else -> skip
        fi
    };
        if
        :: d == 0 ->
#ifndef BUG_FREE_BEFORE_READ
            v = val[IDX(h)];                           /* C3 */
#endif
#if defined(SWAP) && !defined(BUG_COPY_AFTER_TAKE)
            c0 = w0[v];                                /* S4: the copy out */
            c1 = w1[v];
#endif
            d_step {                                   /* C4: the take */
                if
                :: stamp[IDX(h)] == s ->
#ifndef BUG_FREE_BEFORE_READ
                    assert(val[IDX(h)] == v);          /* stable while the stamp is h + 1 */
#endif
                    stamp[IDX(h)] = MOD(h + ONE_LAP);
                    dequeue(expect);
                    ntaken++;
                    ok = true
                :: else ->
                    ok = false;
                    REACHED(35);                       /* taken by another pop, or displaced */
                    if
                    :: DISPLACING && stamp[IDX(h)] == MOD(h + 1 + ONE_LAP) -> REACHED(40)
                    :: else -> skip
                    fi
                fi
            };
            if
            :: ok ->
#ifdef BUG_FREE_BEFORE_READ
                v = val[IDX(h)];                       /* BUG: after the cell was freed */
#endif
#ifdef SWAP
#ifdef BUG_COPY_AFTER_TAKE
                c0 = w0[v];                            /* BUG: the cell is free already */
                c1 = w1[v];
#endif
                assert(c0 == c1);                      /* not torn */
                v = c0;                                /* the message, not its slot */
#endif
                advance(head, h, 42);                  /* C5 */
                r = R_OK;
                break
            :: else -> skip
            fi
        :: d < 0 -> r = R_EMPTY; break
        :: else ->
            REACHED(36);                               /* taken or displaced, or h stale */
#ifndef BUG_NO_HELP
            advance(head, h, 42)                       /* C5: the help */
#else
            skip
#endif
        fi;
        h = head                                       /* C1 again */
    od
}

/* A pop returned v, which the oracle said (expect) at its C4. */
inline received(v, expect)
{
    d_step {
        assert(v == expect);                           /* linearizable: the oracle's oldest */
        assert(v >= 1 && v <= NMSG && pushed[v]);      /* never invented */
        assert(got[v] == 0 && evicted[v] == 0);        /* at most once */
        got[v] = 1
    }
}

proctype Producer(byte me)
{
    byte k, m, x, t, s, old, r, ev, expect, j;
    short d;
    bool ok;
#ifdef SWAP
    byte e, mine, i;
    bool took;
#endif

    for (k : 0 .. MSGS - 1) {
        m = me * MSGS + k + 1;
#ifdef SWAP
        push_swap(m);
#else
        x = m;                 /* the value is the message itself */
        push(m, x);
#endif
progress_push:
        atomic {
            if
            :: r == R_OK -> sent_ok[m] = true
            :: r == R_FULL -> full_answer[m] = true; assert(!pushed[m])
            :: r == R_DISPLACED ->
                sent_ok[m] = true;
                assert(ev == expect);                  /* the oldest at the P4 */
                assert(ev >= 1 && ev <= NMSG && pushed[ev]);
                assert(got[ev] == 0 && evicted[ev] == 0);
                evicted[ev] = 1
            fi;
            t = 0; s = 0; d = 0; old = 0; r = 0; ev = 0; expect = 0; ok = false;
#ifdef SWAP
            e = 0; mine = 0; i = 0; took = false
#else
            skip
#endif
        }
    }
}

proctype Consumer(byte me)
{
    byte k, h, s, v, expect, r, j;
    short d;
    bool ok;
#ifdef SWAP
    byte c0, c1;
#endif
    byte last[NP];                 /* per producer: 1 + the last sequence number received */

    for (k : 1 .. POPS) {
        pop();
progress_pop:
        atomic {
            if
            :: r == R_OK ->
                received(v, expect);
                assert(SEQ(v) + 1 > last[PROD(v)]);    /* per-producer FIFO */
                last[PROD(v)] = SEQ(v) + 1
            :: else -> skip
            fi;
            h = 0; s = 0; d = 0; v = 0; expect = 0; r = 0; ok = false;
#ifdef SWAP
            c0 = 0; c1 = 0
#else
            skip
#endif
        }
    }
}

init {
    byte i, h, s, v, expect, r, j, k;
    short d, n;
    bool ok;
#ifdef SWAP
    byte c0, c1;
#endif

    atomic {
        for (i : 0 .. CAP - 1) {
            stamp[i] = MOD(BASE + i);
#ifdef SWAP
            val[i] = i;                /* cell i holds slot i */
            spare[i] = CAP + i + 1     /* entry i holds slot CAP + i */
#else
            skip
#endif
        }
        for (i : 0 .. NP - 1) {
            run Producer(i)
        }
        for (i : 0 .. NC - 1) {
            run Consumer(NP + i)
        }
    }
    (_nr_pr == 1);                     /* every thread has ended: at rest */

    /* counters at rest: both exact. (With a displacing push's head moved by
     * a CAS from exactly s - 1, the head could rest behind a displaced cell —
     * the bug review found; P5 raises it instead.) */
    assert(tail == POS(npushed));
    assert(head == POS(ntaken));
    /* sl__cellring_len: exact at rest */
    d_step {
        k = (DIFF(tail - IDX(tail), head - IDX(head))) / ONE_LAP;
        n = k * CAP + IDX(tail) - IDX(head);
        if
        :: n > CAP -> n = CAP
        :: n < 0 -> n = 0
        :: else -> skip
        fi;
        assert(n == qlen);
        k = 0; n = 0
    };

    /* the drain */
    do
    :: pop();
        if
        :: r == R_OK -> received(v, expect)
        :: else -> break
        fi;
        d_step { h = 0; s = 0; d = 0; v = 0; expect = 0; r = 0; ok = false }
    od;
#ifdef SWAP
    /* every slot in exactly one place: a cell or a spare entry */
    for (k : 0 .. NSLOT - 1) {
        n = 0;
        for (i : 0 .. CAP - 1) {
            if
            :: val[i] == k -> n++
            :: else -> skip
            fi;
            if
            :: spare[i] == k + 1 -> n++
            :: else -> skip
            fi
        }
        assert(n == 1)
    }
    n = 0;
#endif

    assert(qlen == 0 && head == tail && tail == POS(npushed));
    for (i : 1 .. NMSG) {
        assert(sent_ok[i] == pushed[i]);
        assert(got[i] + evicted[i] == (sent_ok[i] -> 1 : 0));
        assert(sent_ok[i] != full_answer[i])
    }
    /* every cell free for the position it serves next: tail, next(tail), ... */
    h = tail;
    for (i : 1 .. CAP) {
        assert(stamp[IDX(h)] == h);
        h = NEXT(h)
    }
}
