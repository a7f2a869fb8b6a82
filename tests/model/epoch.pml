/*
 * tests/model/epoch.pml — the epoch records' announcement against a
 * reclaimer's scan (internal/epoch.h, channels/epoch.c, channels/list_segs.c's
 * sl__list_reclaim) under x86-TSO, in both barrier modes: asymmetric (the
 * announcement a plain store and a compiler barrier, the scan after a
 * membarrier; what runs in production) and fenced (a seq_cst fence on both
 * sides, where membarrier is unavailable).
 *
 * The memory model is tso.pml's: a plain store goes into its thread's FIFO
 * store buffer, which the Flusher drains into memory in order at any moment;
 * a load reads memory (the operation never loads its own record); a locked
 * read-modify-write and mfence drain the own buffer first;
 * membarrier(PRIVATE_EXPEDITED) drains every other thread's buffer at the
 * call (a thread not running drained it at its context switch). -DSC takes
 * the store buffers away.
 *
 * Threads and steps (the C steps' names):
 *   operation  (OPS operations in a row, a list push or pop: SL_LIST's)
 *              E1 e = the global epoch (acquire load)
 *              E2 announced = e (relaxed store: into the buffer) ;
 *                 sl__event_fence_fast: nothing in asymmetric mode, mfence
 *                 in fence mode
 *              E3 root = head (seq_cst load: a plain mov) ; X -> E4 uses X
 *                 (the property: X is not freed)
 *              E5 announced = 0 (release store: into the buffer)
 *   reclaimer  (a pop that moved the head past X)
 *              U1 head = Y (the head CAS: locked, memory at once)
 *              U2 stamp: s = ++global (lock xadd)
 *              U3 the hint (sl__epoch_oldest_seen): announced != 0 and < s
 *                 -> nothing can be freed, skip the rest
 *              U4 sl__epoch_oldest: sl_event_heavy_fence (mfence, then
 *                 membarrier in asymmetric mode) ; a = announced
 *              U5 a == 0 or a >= s -> free X
 *
 * Property (pan: assertions): an operation that loaded X as its root never
 * finds X freed when it uses it, whichever of its OPS operations it is (the
 * second one's announcement comes after the first's exit: the case of a scan
 * that reads the 0 from before an announcement).
 *
 * Planted bugs (run.sh --mutants):
 *   BUG_SCAN_UNFENCED      asymmetric mode, the scan without its membarrier
 *                          (SL_MUTANT_EPOCH_SCAN_UNFENCED in channels/epoch.c)
 *   BUG_ANNOUNCE_UNFENCED  fence mode, the announcement's fence left out
 *
 * Coverage (run.sh --cover): REACHED(n), as in park.pml.
 */

#ifdef COVER
#define REACHED(n) assert(COVER != (n));
#else
#define REACHED(n)
#endif

#ifndef OPS
#define OPS 2
#endif
#define SB 3

#define X 1
#define Y 2

byte head = X;          /* the root the operation loads */
byte global = 1;        /* sl__epoch_global */
byte announced;         /* the operation's record, in memory */
bool freed;             /* X given back */
byte sbv[SB];           /* the operation's store buffer (to `announced`), oldest first */
byte sbn;

/* A plain store by the operation: into its buffer (SC: into memory). */
inline store_announced(v)
{
#ifdef SC
    announced = v
#else
    atomic { sbn < SB -> sbv[sbn] = v; sbn++ }
#endif
}

/* Moves the oldest buffered store to memory, when there is one (the test
 * and the move one step: a membarrier may empty the buffer in between). */
inline drain_one()
{
    d_step {
        sbn > 0;
        announced = sbv[0];
        sbv[0] = sbv[1];
        sbv[1] = sbv[2];
        sbv[2] = 0;
        sbn--
    }
}

/* mfence by the operation, or another thread's membarrier reaching it. */
inline drain_all()
{
    d_step {
        do
        :: sbn > 0 ->
            announced = sbv[0];
            sbv[0] = sbv[1];
            sbv[1] = sbv[2];
            sbv[2] = 0;
            sbn--
        :: else -> break
        od
    }
}

active proctype Flusher()
{
end:
    do
    :: drain_one()
    od
}

active proctype Operation()
{
    byte op = 0, e, r;
    do
    :: op < OPS ->
        e = global;                             /* E1 */
        store_announced(e);                     /* E2 */
#ifndef ASYM
#ifndef BUG_ANNOUNCE_UNFENCED
        drain_all();                            /* E2: mfence (fence mode) */
#endif
#endif
        r = head;                               /* E3 */
        if
        :: r == X ->
            REACHED(81)
            assert(!freed)                      /* E4: uses X */
        :: else -> skip
        fi;
        store_announced(0);                     /* E5 */
        op++
    :: else -> break
    od
}

active proctype Reclaimer()
{
    byte s, a;
    head = Y;                                   /* U1 */
    d_step { global++; s = global }             /* U2 */
    a = announced;                              /* U3: the hint */
    if
    :: a != 0 && a < s -> goto done
    :: else -> skip
    fi;
#ifdef ASYM
#ifndef BUG_SCAN_UNFENCED
    atomic {                                    /* U4: membarrier */
        if
        :: sbn > 0 -> REACHED(82)
        :: else -> skip
        fi;
        drain_all()
    }
#endif
#endif
    a = announced;                              /* U4: the scan */
    if
    :: a == 0 || a >= s ->                      /* U5 */
        REACHED(83)
        freed = true
    :: else -> skip
    fi;
done:
    skip
}
