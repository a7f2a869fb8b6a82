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
 *   push  P1 load tail into seen; t = seen
 *         P2 the walk (sl__cellring_front, k = 0): load the stamp s of
 *            cell(t) (seq_cst); while s - t > 0 (written or taken: done),
 *            step t to next(t), and when that starts a line of LINE cells,
 *            first move the tail there from seen (W: a raise, one step);
 *            stop at s - t <= 0; d = s - t
 *            d < 0 and not displacing: SL_FULL
 *         P3 load the cell's value `old` (relaxed)
 *         P4 double-width CAS (stamp, value): (s, old) -> (t + 1, value); one
 *            atomic step over both words; it claims and publishes at once,
 *            and when d < 0 (displacing) takes the oldest value `old`
 *         P5 displacing only: raise head to at least next(s - 1)
 *         P6 the finish: raise tail from seen to next(t) when next(t) starts
 *            a line, or always when displacing (or in the swap form)
 *         P1' after a failed P4: reload the tail into seen, and walk on
 *            from t, or from the tail if it is past t
 *   pop   C1 load head into seen; h = seen
 *         C2 the walk (k = 1): stop at the first s - h <= 1, moving the
 *            head across lines as P2 does; d = s - (h + 1)
 *            d < 0: SL_EMPTY
 *         C3 load the value v (relaxed)
 *         C4 CAS stamp h + 1 -> h + one_lap (seq_cst): the take
 *         C5 the finish, as P6 (always in the swap form)
 *         C1' after a failed C4, as P1'
 * The counters are lazy (cellring.h, "Lazy counters"): they move once per
 * line. Checked at every move: a counter never passes the first position
 * not done (the tail the first unwritten, the head the first untaken), and
 * at rest each counter sits in the line of its front.
 *
 * Positions are taken modulo PMOD (a multiple of one_lap, like 2^64 in C) and
 * compared by their signed difference, as the C code does; with -DBASE near
 * PMOD a run crosses the wrap.
 *
 * The swap form (-DSWAP: SL_MPMC's messages of 9 to 256 bytes,
 * channels/mpmc_swap.c): the cells' values are slot indices, every cell always
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
 *   LINE       cells per line of the lazy counters, default 2 (the C code
 *              has 4; with CAP <= 3, 2 gives both a step inside a line and
 *              a move across one within a lap)
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
 *   - every counter move: never past the first position not done;
 *   - at rest: the tail's front (the walk from it) is the first unwritten
 *     position and the head's the first untaken, each counter in its
 *     front's line, and sl__cellring_len (on the fronts) == the oracle's
 *     count; after the drain every message whose push returned OK was
 *     received or displaced exactly once, one that got SL_FULL neither, the
 *     fronts are equal, and every cell is free for the position it serves
 *     next;
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
 *   BUG_HEAD_WALKS_WRITTEN the pop's walk steps over a cell written for its
 *                         position (k = 0, as the tail's walk):
 *                         SL_MUTANT_CELLRING_HEAD_WALKS_WRITTEN
 *   BUG_STALE_HELP        a counter move (W, P5, P6, C5) is a plain store,
 *                         not a raise from the value seen
 *   BUG_NO_HELP           a walk that reaches a line the counter has not
 *                         crossed re-reads the counter instead of moving it
 *                         (waits for the operation that finishes the line)
 * (BUG_FULL_NE, a full decision on s != t, is gone with the walk: the walk
 * never stops at s > t, so s != t there means s < t.)
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
#define OLDER(d) ((d) < 0)

#ifndef LINE
#define LINE 2
#endif
/* whether p starts a line of cells (sl__cellring_line_start) */
#define LSTART(p)   (IDX(p) % LINE == 0)
/* the first position of p's line */
#define LFIRST(p)   MOD((p) - IDX(p) % LINE)
/* the pop's walk's bound: s - h <= HEAD_K stops it */
#ifdef BUG_HEAD_WALKS_WRITTEN
#define HEAD_K 0
#else
#define HEAD_K 1
#endif
#ifdef SWAP
#define ALWAYS_MOVE true
#else
#define ALWAYS_MOVE false
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

/* W, P6, C5: sl__cellring_move: a CAS loop from the value seen that moves
 * the counter to `dest` unless it is there or beyond — one atomic step here,
 * as raise below; `seen` gets the counter's value after it. `limit` is the
 * first position not done (the tail's: POS(npushed); the head's:
 * POS(ntaken)): no counter may pass it. */
inline move(ctr, seen, dest, limit, mark)
{
    d_step {
#ifdef BUG_STALE_HELP
        moved_back = (DIFF(dest, ctr) < 0);
        ctr = dest;                          /* BUG: a plain store */
#else
        if
        :: DIFF(dest, ctr) > 0 ->
            assert(DIFF(dest, limit) <= 0);  /* never past a position not done */
            ctr = dest
        :: else -> REACHED(mark)           /* someone moved it there already */
        fi;
#endif
        assert(!moved_back);               /* head and tail only move forward */
        seen = ctr
    }
}

/* P2, C2: sl__cellring_front: from pos, the first position whose stamp s
 * has s - pos <= k (is_head: the pop's walk), moving the counter across
 * each line it steps into;
 * leaves that stamp in s. The deciding load's checks: a push's SL_FULL
 * only when the oracle holds CAP, a pop's SL_EMPTY only when it holds
 * none. */
inline front(ctr, seen, pos, k, is_head, limit, mark_walk, mark_move)
{
    do
    :: d_step {
        s = stamp[IDX(pos)];
        d = DIFF(s, pos);
        if
        :: d <= k && !is_head && OLDER(d) ->
            if
            :: !DISPLACING -> assert(qlen == CAP); REACHED(31)  /* full at the deciding load */
            :: else -> skip
            fi;
            assert(s == MOD(pos - ONE_LAP + 1))
        :: d <= k && is_head && DIFF(s, MOD(pos + 1)) < 0 ->
            assert(qlen == 0);             /* empty at the deciding load */
            assert(s == pos);
            REACHED(34)
        :: else -> skip
        fi
    };
        if
        :: d <= k -> break
        :: else ->
            REACHED(mark_walk);            /* done: written (or taken) already */
            nx = NEXT(pos);
            if
            :: LSTART(nx) ->
#ifdef BUG_NO_HELP
                seen = ctr;                /* BUG: wait for the line's finisher */
                nx = ctr
#else
                move(ctr, seen, nx, limit, mark_move);
                if
                :: DIFF(seen, nx) > 0 -> nx = seen    /* the counter is past */
                :: else -> skip
                fi
#endif
            :: else -> skip
            fi;
            pos = nx
        fi
    od
}

/* P6, C5: the finish after an operation at pos */
inline finish(ctr, seen, pos, always, limit, mark)
{
    nx = NEXT(pos);            /* (a conditional expression is no inline argument) */
    if
    :: always || LSTART(nx) -> move(ctr, seen, nx, limit, mark)
    :: else -> skip
    fi
}

/* P1', C1': after a lost CAS at pos, the counter again; pos jumps to it
 * when it is past */
inline reload(ctr, seen, pos)
{
    seen = ctr;
    if
    :: DIFF(seen, pos) > 0 -> pos = seen
    :: else -> skip
    fi
}

/* sl__cellring_peek_front at rest: the walk without moves, into pos */
inline peek(ctr, pos, k)
{
    pos = ctr;
    do
    :: DIFF(stamp[IDX(pos)], pos) <= k -> break
    :: else -> pos = NEXT(pos)
    od
}

/* P5: the displacing push's sl__cellring_move of the head, from a fresh
 * load, to next(p) unless it is there or beyond already — one atomic step
 * here, as move above (each of the loop's iterations either succeeds or
 * finds the counter moved, and it stops once the counter is at or past the
 * target). */
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
    seen = tail;                                       /* P1 */
    t = seen;
    do
    :: front(tail, seen, t, 0, false, POS(npushed), 32, 37);  /* P2: the walk */
        if
        :: OLDER(d) && !DISPLACING ->
#ifdef SWAP
            spare[e] = x + 1;                          /* S3: our own slot back */
#endif
            r = R_FULL; break
        :: else ->
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
                    finish(tail, seen, t, ALWAYS_MOVE, POS(npushed), 37);
                    r = R_OK;
                    break
                :: else -> goto lost
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
                finish(tail, seen, t, ALWAYS_MOVE || d != 0, POS(npushed), 37);   /* P6 */
                break
            :: else -> skip
            fi
        fi;
#ifdef BUG_SPLIT_PUBLISH
lost:
#endif
        reload(tail, seen, t)                          /* P1' */
    od
}

#ifdef SWAP
/* The swap form's push of message m (channels/mpmc_swap.c, push_swap). */
inline push_swap(m)
{
    t = tail;                                          /* S0: the walk, read-only */
    do
    :: d_step {
        s = stamp[IDX(t)];
        d = DIFF(s, t);
        if
        :: OLDER(d) -> assert(qlen == CAP); REACHED(43)
        :: else -> skip
        fi
    };
        if
        :: d <= 0 -> break
        :: else ->
            nx = NEXT(t);
            if
            :: LSTART(nx) && DIFF(tail, nx) > 0 -> nx = tail
            :: else -> skip
            fi;
            t = nx
        fi
    od;
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
    seen = head;                                       /* C1 */
    h = seen;
    do
    :: front(head, seen, h, HEAD_K, true, POS(ntaken), 36, 42);   /* C2: the walk */
        d = DIFF(s, MOD(h + 1));
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
                finish(head, seen, h, ALWAYS_MOVE, POS(ntaken), 42);   /* C5 */
                r = R_OK;
                break
            :: else -> skip
            fi
        :: d < 0 -> r = R_EMPTY; break
        :: else -> skip                                /* BUG_HEAD_WALKS_WRITTEN only */
        fi;
        reload(head, seen, h)                          /* C1' */
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
    byte k, m, x, t, s, old, r, ev, expect, j, seen, nx;
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
            seen = 0; nx = 0;
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
    byte k, h, s, v, expect, r, j, seen, nx;
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
            seen = 0; nx = 0;
#ifdef SWAP
            c0 = 0; c1 = 0
#else
            skip
#endif
        }
    }
}

init {
    byte i, h, s, v, expect, r, j, k, seen, nx, ft, fh;
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

    /* counters at rest: each front exact, each counter in its front's line
     * (with the head moved by a CAS from exactly s - 1, a displacing push
     * could leave it behind a displaced cell — the bug review found; P5
     * raises it instead). */
    peek(tail, ft, 0);
    peek(head, fh, 1);
    assert(ft == POS(npushed));
    assert(fh == POS(ntaken));
    assert(DIFF(tail, LFIRST(ft)) >= 0 && DIFF(ft, tail) >= 0);
    assert(DIFF(head, LFIRST(fh)) >= 0 && DIFF(fh, head) >= 0);
    if
    :: tail != ft || head != fh -> REACHED(41)   /* a counter rests behind its front */
    :: else -> skip
    fi;
    /* sl__cellring_len, on the fronts: exact at rest */
    d_step {
        k = (DIFF(ft - IDX(ft), fh - IDX(fh))) / ONE_LAP;
        n = k * CAP + IDX(ft) - IDX(fh);
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
        d_step { h = 0; s = 0; d = 0; v = 0; expect = 0; r = 0; ok = false; seen = 0; nx = 0 }
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

    peek(tail, ft, 0);
    peek(head, fh, 1);
    assert(qlen == 0 && fh == ft && ft == POS(npushed));
    assert(DIFF(tail, LFIRST(ft)) >= 0 && DIFF(head, LFIRST(fh)) >= 0);
    for (i : 1 .. NMSG) {
        assert(sent_ok[i] == pushed[i]);
        assert(got[i] + evicted[i] == (sent_ok[i] -> 1 : 0));
        assert(sent_ok[i] != full_answer[i])
    }
    /* every cell free for the position it serves next: the tail's front,
     * next of it, ... */
    h = ft;
    for (i : 1 .. CAP) {
        assert(stamp[IDX(h)] == h);
        h = NEXT(h)
    }
}
