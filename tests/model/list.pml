/*
 * tests/model/list.pml — SL_LIST's slots and segments (channels/list.c:
 * push_locked, push_grow, pop_locked, pop_advance, pop_sees_empty, pop_take,
 * pop_wait_or_poison; sl_list_len at rest; and from channels/list_segs.c
 * the spare's steps, seg_get, take_spare and seg_put here for its
 * sl__list_seg_get, sl__list_take_spare and sl__list_seg_put), against
 * ghost bookkeeping.
 *
 * Memory model. Promela interleaves whole statements: sequential
 * consistency. The C code's counter and state accesses are seq_cst but for
 * two: a pop's first load of its claimed slot's state is acquire and its
 * TAKEN mark on a FULL slot a release store (the acquire pairs with the
 * producer's publishing CAS, which is what makes the bytes visible; no later
 * step reads the TAKEN mark except another pop's look at a stale `deq`,
 * which only rereads `deq`). The message bytes are one word here, written
 * before the publishing CAS and read after the FULL that it wrote.
 *
 * What the model does NOT check: reclamation (the epoch records and the
 * freeing of unlinked segments: docs/guarantees.md's argument, the ASan
 * build and SL_MUTANT_LIST_EARLY_FREE; seg_get's reclaim between its two
 * takes of the spare is left out, so only a lost link puts a segment back
 * here), and the bounded spin before a poison (a pop that spins only
 * waits; the exchange that follows may come at any moment here). Memory
 * exhaustion is in with -DALLOC_FAIL: each allocation may fail.
 *
 * Each step is one Promela statement and names the C step it stands for:
 *
 *   push  L1 load tail seg (seq_cst)
 *         L2 push_claim: La read seg->enq into i (the C code starts from a
 *            guess instead, its last claim plus one in a segment at that
 *            address, which may be a value this segment's enq never had: a
 *            guess from an earlier use of the address, or from another
 *            list; only the CAS claims, and a CAS from a value enq does not
 *            hold fails and reads the true one, so the first CAS from any
 *            guess is a lost Lb here, followed by the Lb the model makes);
 *            Lb CAS seg->enq i -> i + 1: claims slot i; lost (another push
 *            claimed since), i is the value the CAS read and Lb again;
 *            i >= SEG, no CAS
 *            i >= SEG (the segment is used up): push_grow
 *              G1 load seg->next (the first look)
 *                 none: seg_get, each step filling the segment it hands
 *                       over (private until G3: the message in slot 0,
 *                       FULL, enq = 1):
 *                       G2a exchange the spare with none (take_spare);
 *                       G2b none: the same again (after reclaim, which is
 *                          not modelled);
 *                       G2c none: seg_alloc, a segment from the pool; with
 *                          -DALLOC_FAIL it may instead fail:
 *                          G6 load seg->next again (the second look); a
 *                             segment: another push linked it meanwhile,
 *                             go on as after a lost G3 (G5)
 *                          G7 none: take_spare; none either: SL_ENOMEM,
 *                             linearized at G6
 *                       G3 CAS seg->next none -> fresh: sent (SL_OK); G4 CAS
 *                          tail seg -> fresh. A lost G3 reads the winner's
 *                          segment; G8 seg_put: reset the fresh one, CAS
 *                          the spare none -> it (else it is freed)
 *              G5 CAS tail seg -> next (the help), then L1 again
 *         L3 write the message into slot i
 *         L4 CAS the slot's state EMPTY -> FULL: sent; a failure means a pop
 *            poisoned the slot: L1 again
 *   pop   Q1 load head seg; Q2 load seg->deq d
 *            d >= SEG: pop_advance: A1 load seg->next; none: SL_EMPTY; else
 *            A2 CAS tail seg -> next, A3 CAS head seg -> next, Q1 again
 *         Q3 load slot d's state (acquire)
 *            TAKEN: another pop claimed d, Q1 again
 *            EMPTY: pop_sees_empty: E1 load seg->enq e; d >= e: E2 load
 *                   seg->next; none: SL_EMPTY; else claim
 *            FULL: claim
 *         Q4 CAS seg->deq d -> d + 1: claims slot i = d; lost (another pop
 *            claimed d): Q1 again
 *         T1 load slot i's state (acquire)
 *            FULL: T2 copy the message out, T3 store TAKEN (release): SL_OK
 *            EMPTY: its producer has not published. W exchange the state
 *                   with TAKEN: FULL came after all: T2, T3, SL_OK; EMPTY:
 *                   the slot is poisoned (its producer's L4 will fail), Q1
 *                   again
 *
 * Threads (spin -D... to change):
 *   SEG=1|2|3  slots per segment
 *   NP=1|2     producers, MSGS=1|2 messages each (ids p*MSGS + k + 1)
 *   NC=0|1|2   consumers, POPS try-pops each (each may answer SL_EMPTY)
 *   ALLOC_FAIL a growing push's allocation may fail (a push may then
 *              answer SL_ENOMEM; its message is dropped, as a try-send's)
 * After every thread has ended, init checks sl_list_len at rest and drains
 * the list with pops until SL_EMPTY.
 *
 * Checks (assertions unless said otherwise):
 *   - every message received at most once and never invented (a pop
 *     returns only a published message, and the copy is that message);
 *   - each consumer receives in list order (the position: its segment's
 *     base plus its slot), hence per producer in sending order;
 *   - SL_EMPTY only when every push that had returned SL_OK before the pop
 *     began is claimed (its slot below its segment's `deq`): the claimed
 *     messages are the ones a pop linearized before this one took; an
 *     unclaimed one would make the answer non-linearizable;
 *   - at rest: sl_list_len (position of the tail's `enq` minus position of
 *     the head's `deq`, each clamped to the segment) equals the messages
 *     sent and not yet received; after the drain every message whose push
 *     returned SL_OK was received exactly once;
 *   - SL_ENOMEM (with ALLOC_FAIL) only as list.h says: nothing consumed
 *     (the message was never published), and no other push had linked a
 *     segment after the used-up one by the time the allocation failed
 *     (ghost grown_meanwhile, set at the failing G2c); a refused message is
 *     never received;
 *   - no invalid end state (nobody blocks); with -DNP and `pan -l` (run.sh's
 *     `progress` kind), no non-progress cycle: no schedule lets the threads
 *     retry forever without completing an operation.
 *
 * Planted bugs (run.sh --mutants):
 *   BUG_POISON_BY_STORE   W split into a load and a store: a producer's L4
 *                         between the two succeeds and its message is lost
 *                         (SL_MUTANT_LIST_POISON_BY_STORE)
 *   BUG_TAKE_EMPTY_BY_STORE  T1's plain TAKEN store without the FULL test:
 *                         a claimed, unpublished slot is marked with a store
 *                         (the pop's fast path stretched over the race)
 *   BUG_OK_AFTER_POISON   a push whose L4 failed returns SL_OK
 *                         (SL_MUTANT_LIST_OK_AFTER_POISON)
 *   BUG_NEW_SEG_ENQ_ZERO  a fresh segment's enq starts at 0: slot 0, which
 *                         holds the linking push's message, is claimed again
 *                         (SL_MUTANT_LIST_NEW_SEG_ENQ_ZERO)
 *   BUG_CLAIM_UNCHECKED   Lb stores i + 1 instead of the CAS: the guess
 *                         taken as the claim (SL_MUTANT_LIST_GUESS_TRUSTED)
 *   BUG_EMPTY_NO_ENQ      pop_sees_empty skips E1: SL_EMPTY whenever slot d
 *                         is unpublished and no next segment exists, though
 *                         later slots may hold messages
 *   BUG_ENOMEM_FIRST_LOOK a failed allocation answers SL_ENOMEM at once,
 *                         without G6 and G7, as before the fix: another
 *                         push may have linked a segment meanwhile
 *                         (SL_MUTANT_LIST_ENOMEM_FIRST_LOOK; needs
 *                         ALLOC_FAIL)
 *
 * Coverage (run.sh --cover): REACHED(n) marks a branch worth reaching; with
 * -DCOVER=n it becomes assert(false) there.
 */

#ifdef COVER
#define REACHED(n) assert(COVER != (n));
#else
#define REACHED(n)
#endif

#ifndef SEG
#define SEG 2
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
#define NMSG (NP * MSGS)
/* the first segment, one linked per message at most, and the fresh ones
 * that lost their link CAS (at most NP - 1 per link) */
#define NSEG (1 + NMSG * NP)
#define NSLOT (NSEG * SEG)
#define NONE 255
#define PROD(m) (((m) - 1) / MSGS)
#define SEQ(m)  (((m) - 1) % MSGS)

#define EMPTY 0
#define FULL  1
#define TAKEN 2

#define R_OK    0
#define R_EMPTY 2
#define R_ENOMEM 9

/* the list */
byte enq[NSEG];
byte deq[NSEG];
byte nxt[NSEG];                /* NONE: no next segment */
byte base[NSEG];               /* list position of the segment's slot 0 */
byte st[NSLOT];                /* slot states */
byte val[NSLOT];               /* slot bytes: a message id once written */
byte head = 0;
byte tail = 0;
byte nalloc = 1;               /* segments handed out (segment 0 is the first) */
byte spare = NONE;             /* the list's spare segment: NONE, or one never published */

/* ghost state */
byte seg_of[NMSG + 1];         /* where the message was published */
byte idx_of[NMSG + 1];
bool pushed[NMSG + 1];         /* published: its L4 or G3 succeeded */
bool sent_ok[NMSG + 1];        /* its push returned SL_OK */
byte got[NMSG + 1];            /* times it was received */
byte done_mask;                /* bit m - 1: its push has returned SL_OK */
byte waiting;                  /* sent (SL_OK returned) and not yet received */

#define CLAIMED(m) (deq[seg_of[m]] > idx_of[m])
#define POSITION(s, c) (base[s] + ((c) < SEG -> (c) : SEG))

/* L4 or G3 succeeded: message m is in slot i of segment s */
inline published(m, s, i)
{
    assert(!pushed[m]);
    pushed[m] = true;
    seg_of[m] = s;
    idx_of[m] = i
}

/* push_grow's fill of the segment it got, if any (private until G3, so
 * done in the step that handed it over): message m in slot 0, FULL, and
 * enq = 1 */
inline fill_fresh(m)
{
    if
    :: fresh != NONE ->
        val[fresh * SEG] = m;
        st[fresh * SEG] = FULL;
#ifdef BUG_NEW_SEG_ENQ_ZERO
        enq[fresh] = 0
#else
        enq[fresh] = 1
#endif
    :: else -> skip
    fi
}

/* take_spare: exchange the spare with none into fresh, then fill it */
inline take_spare(m)
{
    d_step {
        fresh = spare;
        spare = NONE;
        fill_fresh(m)
    }
}

/* sl__list_push of message m; sets r (R_OK, or R_ENOMEM with ALLOC_FAIL) */
inline push(m)
{
    do
    :: seg = tail;                                     /* L1 */
        i = enq[seg];                                  /* La: the guess */
        do
        :: d_step {                                    /* Lb: CAS enq i -> i + 1 */
               if
               :: i >= SEG -> ok = true                /* used up: no CAS */
#ifdef BUG_CLAIM_UNCHECKED
               :: i < SEG -> enq[seg] = i + 1; ok = true
#else
               :: i < SEG && enq[seg] == i -> enq[seg] = i + 1; ok = true
               :: i < SEG && enq[seg] != i ->
                   i = enq[seg]; ok = false;
                   REACHED(80)                         /* another push claimed since */
#endif
               fi
           };
           if
           :: ok -> break
           :: else -> skip
           fi
        od;
        if
        :: i >= SEG ->
            nx = nxt[seg];                             /* G1: the first look */
            fresh = NONE;
            if
            :: nx == NONE ->
                /* seg_get: the spare, else (after a reclaim, not modelled)
                 * the spare again, else an allocation */
                take_spare(m);                         /* G2a */
                if
                :: fresh == NONE ->
                    take_spare(m)                      /* G2b: again */
                :: else -> REACHED(85)                 /* a growing push reuses the spare */
                fi;
                if
                :: fresh == NONE ->
                    if
                    :: d_step {                        /* G2c: seg_alloc succeeds */
                           fresh = nalloc;
                           nalloc++;
                           assert(fresh < NSEG);       /* the model's pool is big enough */
                           fill_fresh(m)
                       }
#ifdef ALLOC_FAIL
                    :: d_step {                        /* G2c: seg_alloc fails */
                           /* ghost: what the contract's "by the time the
                            * allocation failed" looks at */
                           grown_meanwhile = (nxt[seg] != NONE)
                       };
#ifdef BUG_ENOMEM_FIRST_LOOK
                       r = R_ENOMEM;                   /* BUG: the answer from G1 */
                       break
#else
                       nx = nxt[seg];                  /* G6: the second look */
                       if
                       :: nx == NONE ->
                           take_spare(m);              /* G7 */
                           if
                           :: fresh == NONE ->
                               r = R_ENOMEM;           /* linearized at G6 */
                               REACHED(87);
                               break
                           :: else -> REACHED(88)      /* a spare put back meanwhile */
                           fi
                       :: else -> REACHED(86)          /* linked by another push meanwhile: go on into it */
                       fi
#endif
#endif
                    fi
                :: else -> skip
                fi
            :: else -> skip
            fi;
            if
            :: fresh != NONE ->
                d_step {                               /* G3: CAS next */
                    if
                    :: nxt[seg] == NONE ->
                        nxt[seg] = fresh;
                        base[fresh] = base[seg] + SEG;
                        published(m, fresh, 0);
                        ok = true
                    :: else ->
                        nx = nxt[seg];                 /* the winner's segment */
                        ok = false;
                        REACHED(72)                    /* another push linked first */
                    fi
                };
                if
                :: ok ->
                    d_step {                           /* G4 */
                        if
                        :: tail == seg -> tail = fresh
                        :: else -> skip
                        fi
                    };
                    r = R_OK;
                    break
                :: else ->
                    d_step {                           /* G8: seg_put, never published */
                        st[fresh * SEG] = EMPTY;       /* seg_reset */
                        val[fresh * SEG] = 0;
                        enq[fresh] = 0;
                        if
                        :: spare == NONE -> spare = fresh   /* CAS spare none -> fresh */
                        :: else -> skip                /* freed */
                        fi;
                        fresh = NONE
                    }
                fi
            :: else -> skip
            fi;
            d_step {                                   /* G5: help the tail */
                if
                :: tail == seg -> tail = nx
                :: else -> skip
                fi
            }
        :: else ->
            val[seg * SEG + i] = m;                    /* L3: the copy */
            d_step {                                   /* L4: publish */
                if
                :: st[seg * SEG + i] == EMPTY ->
                    st[seg * SEG + i] = FULL;
                    published(m, seg, i);
                    ok = true
                :: else ->
                    ok = false;
                    REACHED(71)                        /* a pop poisoned the slot */
                fi
            };
            if
            :: ok -> r = R_OK; break
            :: else ->
#ifdef BUG_OK_AFTER_POISON
                r = R_OK; break
#else
                skip
#endif
            fi
        fi
    od
}

/* SL_EMPTY decided: every push that returned SL_OK before this pop began
 * has its slot claimed by a pop (linearized before this one) */
inline say_empty()
{
    atomic {
        j = 1;
        do
        :: j <= NMSG ->
            assert((start_mask & (1 << (j - 1))) == 0 || CLAIMED(j));
            j++
        :: else -> break
        od;
        j = 0;
        r = R_EMPTY
    }
}

/* pop_take of slot i of seg; sets ok, and v when ok */
inline take()
{
    s = st[seg * SEG + i];                             /* T1 (acquire) */
    if
    :: s == FULL -> ok = true
    :: else ->
        REACHED(74);                                   /* claimed before published */
#if defined(BUG_TAKE_EMPTY_BY_STORE)
        st[seg * SEG + i] = TAKEN;                     /* BUG: a store, no exchange */
        ok = false
#elif defined(BUG_POISON_BY_STORE)
        s = st[seg * SEG + i];                         /* BUG: W as a load ... */
        if
        :: s == FULL -> ok = true
        :: else -> st[seg * SEG + i] = TAKEN; ok = false   /* ... and a store */
        fi
#else
        d_step {                                       /* W: exchange */
            s = st[seg * SEG + i];
            st[seg * SEG + i] = TAKEN
        };
        ok = (s == FULL);
        if
        :: ok -> REACHED(75)                           /* published while it waited */
        :: else -> REACHED(76)                         /* poisoned */
        fi
#endif
    fi;
    if
    :: ok ->
        v = val[seg * SEG + i];                        /* T2: the copy */
        st[seg * SEG + i] = TAKEN                      /* T3: release store */
    :: else -> skip
    fi
}

/* sl_list_try_pop; sets r, and v, pos when r == R_OK */
inline pop()
{
    start_mask = done_mask;                            /* the pop begins */
    do
    :: seg = head;                                     /* Q1 */
        d = deq[seg];                                  /* Q2 */
        claim = false;
        if
        :: d >= SEG ->
            nx = nxt[seg];                             /* A1 */
            if
            :: nx == NONE -> say_empty(); REACHED(77); break
            :: else ->
                d_step {                               /* A2 */
                    if
                    :: tail == seg -> tail = nx
                    :: else -> skip
                    fi
                };
                d_step {                               /* A3 */
                    if
                    :: head == seg -> head = nx
                    :: else -> skip
                    fi
                }
            fi
        :: else ->
            s = st[seg * SEG + d];                     /* Q3 (acquire) */
            if
            :: s == TAKEN -> REACHED(73)               /* d is stale: read deq again */
            :: s == FULL -> claim = true
            :: s == EMPTY ->
#ifdef BUG_EMPTY_NO_ENQ
                e = d;
#else
                e = enq[seg];                          /* E1 */
#endif
                if
                :: d < e -> claim = true; REACHED(78)  /* claimed, not yet published */
                :: else ->
                    nx = nxt[seg];                     /* E2 */
                    if
                    :: nx == NONE -> say_empty(); break
                    :: else -> claim = true; REACHED(79)
                    fi
                fi
            fi;
            if
            :: claim ->
                d_step {                               /* Q4: CAS deq d -> d + 1 */
                    if
                    :: deq[seg] == d -> deq[seg] = d + 1; i = d
                    :: else -> claim = false; REACHED(81) /* another pop claimed d */
                    fi
                };
                if
                :: claim ->
                    take();
                    if
                    :: ok ->
                        pos = base[seg] + i;
                        r = R_OK;
                        break
                    :: else -> skip
                    fi
                :: else -> skip
                fi
            :: else -> skip
            fi
        fi
    od
}

/* A pop returned message v from list position pos; `last_pos` is this
 * thread's previous one (0: none yet; positions are stored + 1). */
inline received()
{
    d_step {
        assert(v >= 1 && v <= NMSG && pushed[v]);      /* never invented */
        assert(seg_of[v] * SEG + idx_of[v] == seg * SEG + i);   /* the copy is that slot's message */
        assert(got[v] == 0);                           /* at most once */
        got[v] = 1;
        assert(pos + 1 > last_pos);                    /* list order, per receiver */
        last_pos = pos + 1;
        if
        :: sent_ok[v] -> waiting--
        :: else -> skip                                /* its push has not returned yet */
        fi
    }
}

proctype Producer(byte me)
{
    byte k, m, seg, i, nx, fresh, r;
    bool ok;
    bool grown_meanwhile;          /* ghost: seg had a next when the allocation failed */

    for (k : 0 .. MSGS - 1) {
        m = me * MSGS + k + 1;
        push(m);
progress_push:
        skip;                                          /* (a break cannot end in a d_step) */
        d_step {
            if
            :: r == R_ENOMEM ->
                assert(!pushed[m]);                    /* nothing consumed */
                /* SL_ENOMEM only if no other push had linked a segment
                 * after the used-up one by the time the allocation failed
                 * (list.h): the list could not grow */
                assert(!grown_meanwhile)
            :: else ->
                assert(pushed[m] && r == R_OK);
                sent_ok[m] = true;
                done_mask = done_mask | (1 << (m - 1));
                if
                :: got[m] == 0 -> waiting++
                :: else -> skip                        /* received before the push returned */
                fi
            fi;
            seg = 0; i = 0; nx = 0; fresh = 0; r = 0; ok = false; grown_meanwhile = false
        }
    }
}

proctype Consumer(byte me)
{
    byte k, seg, d, e, s, i, nx, v, r, j, pos, last_pos, start_mask;
    bool ok, claim;
    byte last[NP];                 /* per producer: 1 + the last sequence number received */

    for (k : 1 .. POPS) {
        pop();
progress_pop:
        if
        :: r == R_OK ->
            received();
            d_step {
                assert(SEQ(v) + 1 > last[PROD(v)]);    /* per-producer FIFO */
                last[PROD(v)] = SEQ(v) + 1
            }
        :: else -> skip
        fi;
        d_step { seg = 0; d = 0; e = 0; s = 0; i = 0; nx = 0; v = 0; r = 0; pos = 0;
                 start_mask = 0; ok = false; claim = false }
    }
}

init {
    byte k, seg, d, e, s, i, nx, v, r, j, pos, last_pos, start_mask;
    bool ok, claim;
    short n;

    atomic {
        for (k : 0 .. NSEG - 1) {
            nxt[k] = NONE
        }
        for (k : 0 .. NP - 1) {
            run Producer(k)
        }
        for (k : 0 .. NC - 1) {
            run Consumer(NP + k)
        }
    }
    (_nr_pr == 1);                     /* every thread has ended: at rest */

    /* sl_list_len at rest: every message sent and not received, no more */
    d_step {
        n = POSITION(tail, enq[tail]) - POSITION(head, deq[head]);
        if
        :: n < 0 -> n = 0
        :: else -> skip
        fi;
        assert(n == waiting);
        n = 0
    };

    /* the drain */
    do
    :: pop();
        if
        :: r == R_OK -> received()
        :: else -> break
        fi;
        d_step { seg = 0; d = 0; e = 0; s = 0; i = 0; nx = 0; v = 0; r = 0; pos = 0;
                 start_mask = 0; ok = false; claim = false }
    od;

    assert(waiting == 0);
    for (k : 1 .. NMSG) {
        /* sent, so received exactly once; or refused (SL_ENOMEM), so
         * never in the list */
        assert(sent_ok[k] && pushed[k] && got[k] == 1 ||
               !sent_ok[k] && !pushed[k] && got[k] == 0)
    }
}
