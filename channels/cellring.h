/*
 * channels/cellring.h — the ring of stamped cells that SL_MPMC and SL_RING
 * are made of (internal, not installed). One mechanism, written once: the
 * push, the pop, the displacing push and the length; mpmc.c and ring.c
 * compose rings of messages (at most 8 bytes) or of slot indices from it.
 *
 * Positions. A position is lap * one_lap + index, index < capacity, and
 * one_lap the power of two above the capacity: the position after the last
 * index of a lap is the first of the next lap. Head and tail are positions;
 * both only move forward, and the 64-bit counters may wrap (2^64 is a whole
 * number of laps).
 *
 * Cells. Cell `index` serves one position at a time. Its stamp is
 *     p        free for position p: a push at p may write it;
 *     p + 1    written for position p: a pop at p may take it;
 * and taking it at p stamps it p + one_lap, free for the same cell's position
 * in the next lap. one_lap >= 2, so "written for p" and "free for the next
 * lap" never coincide.
 *
 * A push walks from the tail to the first position t whose cell's stamp s
 * is not past it (s - t <= 0; a stamp past t means cell(t) was written for
 * t, or later: done), then:
 *     s == t     one double-width CAS writes (t + 1, value) if the cell is
 *                still (t, old value): the claim and the write are one step;
 *                then, if next(t) starts a line of cells, it moves the tail
 *                there (below, "Lazy counters");
 *     s <  t     (then s == t - one_lap + 1) the previous lap's value is still
 *                there: the ring holds `capacity` values: full. A displacing
 *                push instead swaps (s, oldest) for (t + 1, value) in the same
 *                CAS — the oldest value leaves and the new one enters at once.
 * A pop walks from the head to the first position h with s - h <= 1 (a
 * stamp further on means taken or displaced), then:
 *     s == h + 1 CAS the stamp to h + one_lap, having read the value first
 *                (nobody writes it while the stamp is h + 1); the head moves
 *                as the tail does;
 *     s == h     nothing written at h, hence nothing after h: empty.
 * A lost CAS walks on from the same position (or from the counter, if it is
 * past it).
 *
 * Why this is lock-free and linearizable: docs/guarantees.md, "SL_MPMC". In
 * short: a push writes position t only after seeing every position before
 * it done, from the tail on, and the tail passes a position only after its
 * cell is written (the head: taken), so writes and takes happen in position
 * order; the cell's CAS is both the claim and the publication, so there is
 * never a claimed cell that others must wait for; and every failed CAS, and
 * every step of a walk, means another thread's CAS on that cell succeeded.
 * tests/model/cellring.pml checks it exhaustively for small rings.
 *
 * Memory orders: stamps and counters are read and CASed seq_cst (on x86 the
 * loads cost nothing extra, and one total order keeps the full/empty argument
 * short); the double-width CAS is a full barrier. A value is read relaxed
 * between the stamp's load (which synchronises with the CAS that wrote it) and
 * the taking CAS (before which nobody may overwrite it).
 */
#ifndef SLUICE_CHANNELS_CELLRING_H
#define SLUICE_CHANNELS_CELLRING_H

#include <string.h>

#include "sluice/mpmc.h"

#include "internal/dwcas.h"
#include "internal/testing.h"
#include "internal/util.h"

/* One ring: its cells and the two counters that index it, wherever the
 * owning structure keeps them. */
typedef struct sl__cellring {
    sl_mpmc_cell *cells;
    SL_ATOMIC(uint64_t) *head;
    SL_ATOMIC(uint64_t) *tail;
    uint64_t one_lap;
    uint64_t capacity;
} sl__cellring;

/* Guarded rings. A ring in memory a peer process may corrupt (sluice/shm.h)
 * is pushed and popped with the _guarded forms: a stamp more than
 * SL__CELLRING_FAR positions ahead of a counter that has not moved, which
 * no ring of this geometry holds, ends the operation (full, or empty)
 * instead of helping the counter along for as long as the garbage says.
 * The same body, with the guard a constant: the plain forms compile as
 * they did without it. */

/* How far ahead of the current head (tail) a stamp of its cell can be in a
 * sound ring: a cell is at most one lap ahead (taken at h, free for
 * h + one_lap), plus the written mark; a guarded ring treats anything
 * beyond four laps, with the counter unmoved, as corruption. */
#define SL__CELLRING_FAR(r) (4 * (r)->one_lap)

/* For a guarded ring: whether stamp s of cell(pos) is beyond what a sound
 * ring holds while `counter` still reads pos (then the caller gives up).
 * Out of line and cold: the unguarded rings' loops keep their size (and
 * stay inlined where they were). */
static __attribute__((noinline, cold, unused)) bool
sl__cellring_corrupt(const sl__cellring *r, SL_ATOMIC(uint64_t) *counter, uint64_t s,
                     uint64_t pos)
{
#ifdef SL_MUTANT_SHM_UNGUARDED_RING
    (void)r, (void)counter, (void)s, (void)pos;
    return false; /* planted bug: a guarded ring helps a garbage counter along */
#endif
    return s - pos > SL__CELLRING_FAR(r) &&
           atomic_load_explicit(counter, memory_order_seq_cst) == pos;
}

/* The lap length for a capacity: the power of two above it (so >= 2). */
static inline uint64_t sl__cellring_lap(uint64_t capacity)
{
    uint64_t p = 2;
    while (p <= capacity)
        p <<= 1;
    return p;
}

/* Cells free for positions base .. base + capacity - 1 (the first lap), or,
 * with `filled`, already written with the values 0 .. capacity - 1 (a ring
 * of slot indices that starts full; its tail is then base + one_lap). */
static inline void sl__cellring_init(sl_mpmc_cell *cells, uint64_t capacity, uint64_t base,
                                     bool filled)
{
    for (uint64_t i = 0; i < capacity; i++) {
        atomic_init(&cells[i].stamp, base + i + (filled ? 1 : 0));
        atomic_init(&cells[i].value, filled ? i : 0);
    }
}

static inline sl_mpmc_cell *sl__cell_at(const sl__cellring *r, uint64_t pos)
{
    return &r->cells[pos & (r->one_lap - 1)];
}

static inline uint64_t sl__cellring_next(const sl__cellring *r, uint64_t pos)
{
    if ((pos & (r->one_lap - 1)) + 1 < r->capacity)
        return pos + 1;
    return (pos & ~(r->one_lap - 1)) + r->one_lap;
}

/* Lazy counters. A ring's head and tail move once per line of
 * cells (SL__CELLS_PER_LINE positions), not once per operation: the push
 * (pop) that finishes a line's last position moves its counter to the next
 * line, and the others leave it where it is. A push (pop) starts at the
 * counter and steps over the done cells of its line, which it reads anyway:
 * the cell it will claim shares their line. The counter still passes a
 * position only after its cell is done (the invariant the argument rests
 * on, docs/guarantees.md "SL_MPMC"), so it lags the front by less than a
 * line once nothing is in flight; whoever steps across a line the counter
 * has not crossed moves it first (a helper). What this saves: three of
 * every four locked instructions on each counter, and the counter's line
 * stays put between them (docs/performance.md, "Lazy counters").
 * Exceptions: a push that gives a slot back (SL_MPMC's swap form) always
 * moves the tail, whose locked instruction is the full barrier the starved
 * flag needs; a pop that copies a slot out (the swap form) always moves
 * the head, which measured faster there (the lazy head cost the 64-byte
 * rows 11-25 %); a displacing push always moves both. Rings in shared
 * memory (layout version 12) are lazy as well, and the layout says so. */
#define SL__CELLS_PER_LINE (SL_CACHELINE / sizeof(sl_mpmc_cell))

/* Whether pos is the first position of a line of cells. */
static inline bool sl__cellring_line_start(const sl__cellring *r, uint64_t pos)
{
    return (pos & (r->one_lap - 1) & (SL__CELLS_PER_LINE - 1)) == 0;
}

/* Moves the counter to `to` from `seen` (a value it had), unless it is
 * there or beyond: every position before `to` must be done. Returns the
 * value the counter has at the end: `to`, or a position past it. A strong
 * CAS: each failure means another thread moved the counter (the progress
 * argument, docs/guarantees.md "SL_MPMC"). */
static inline __attribute__((always_inline)) uint64_t
sl__cellring_move(SL_ATOMIC(uint64_t) *counter, uint64_t seen, uint64_t to)
{
    SL_FI();
    while ((int64_t)(to - seen) > 0)
        if (atomic_compare_exchange_strong_explicit(counter, &seen, to, memory_order_seq_cst,
                                                    memory_order_seq_cst))
            return to;
    return seen;
}

/* The counter's move after an operation finished at pos: to the next line
 * when pos was its line's last (or with `always`). */
static inline __attribute__((always_inline)) void
sl__cellring_finish(const sl__cellring *r, SL_ATOMIC(uint64_t) *counter, uint64_t seen,
                    uint64_t pos, bool always)
{
    uint64_t next = sl__cellring_next(r, pos);
    if (always || sl__cellring_line_start(r, next))
        sl__cellring_move(counter, seen, next);
}

/* The front of a counter: from pos (a position at or after *seen, with
 * every position in [*seen, pos) seen done), the first position whose
 * cell's stamp s has s - pos <= k (k = 0 for the tail: free or still full;
 * k = 1 for the head: written or not yet written); its stamp goes to
 * *stamp. Stepping from a line into the next, it moves the counter there
 * from *seen (unless someone moved it; only re-reads it without `moves`),
 * and jumps ahead if the counter is past. With `guarded`, a stamp beyond
 * SL__CELLRING_FAR while the counter reads *seen ends the walk: returns pos
 * with *stamp = pos - 1 - k, which the callers read as full (empty).
 * Lock-free: each step passes a cell another operation finished. */
static inline __attribute__((always_inline)) uint64_t
sl__cellring_front(const sl__cellring *r, SL_ATOMIC(uint64_t) *counter, uint64_t *seen,
                   uint64_t pos, uint64_t k, uint64_t *stamp, bool guarded, bool moves)
{
    for (;;) {
        SL_FI();
        uint64_t s = atomic_load_explicit(&sl__cell_at(r, pos)->stamp, memory_order_seq_cst);
        if ((int64_t)(s - pos) <= (int64_t)k) {
            *stamp = s;
            return pos;
        }
        if (guarded && s - *seen > SL__CELLRING_FAR(r) &&
            sl__cellring_corrupt(r, counter, s, *seen)) {
            *stamp = pos - 1 - k; /* a stamp no sound ring holds */
            return pos;
        }
        uint64_t next = sl__cellring_next(r, pos);
        if (sl__cellring_line_start(r, next)) {
            uint64_t cur = moves ? sl__cellring_move(counter, *seen, next)
                                 : atomic_load_explicit(counter, memory_order_seq_cst);
            if ((int64_t)(cur - next) > 0)
                next = cur; /* the counter is past: every position before it is done */
            *seen = cur;
        }
        pos = next;
    }
}

/* The same walk, read-only (for the full, empty and length snapshots),
 * guarded whatever the ring: no sound ring holds a stamp that far ahead,
 * so the plain rings never meet the guard's second load. */
static inline uint64_t sl__cellring_peek_front(const sl__cellring *r,
                                               SL_ATOMIC(uint64_t) *counter, uint64_t k,
                                               uint64_t *stamp)
{
    uint64_t seen = atomic_load_explicit(counter, memory_order_seq_cst);
    return sl__cellring_front(r, counter, &seen, seen, k, stamp, true, false);
}

/* The next line, fetched ahead. A push that publishes a line's first
 * position asks for the next line of cells ready to be written: the
 * consumers took its cells a lap ago, so it sits in a consumer's cache, and
 * without the hint the next line's first push would wait for it with its
 * double-width CAS, a locked instruction, which cannot overlap the miss. So
 * the line arrives while the push's caller does other work (8-byte rows
 * x1.2-x1.4, docs/performance.md "The next line fetched ahead"). Once a
 * line, by the one push that starts it. Not while the ring runs full: the
 * next line is then the one the consumers are taking, and the hint would
 * pull it away from them; a thread whose push found the ring full (refused,
 * or displacing the oldest: SL_RING) leaves the hint out for its next
 * SL__CELLRING_QUIET_LINES lines (a consumer-bound stream finds it full
 * again within them; after a displacing push, an overwrite ring's 1/1
 * consumer received 13-14 points more of the messages at a send rate level
 * within the noise: docs/performance.md, "SL_RING: no notify, no hint").
 * Only the line after: two lines ahead measured slower. Consumers take no
 * such hint: their next line is the one a producer close ahead is still
 * writing (measured x0.87). */
#define SL__CELLRING_QUIET_LINES 16u
/* Lines left before this thread's pushes fetch ahead again. */
extern _Thread_local unsigned sl__cellring_quiet __attribute__((tls_model("initial-exec")));

/* What a push fetches ahead: the next line of cells, and with `slots`
 * (SL_MPMC's swap form) the slots that this line's other free cells hold.
 * A swap-form push receives the slot its cell held and writes it at the
 * thread's next push; that slot's line, too, sits in the cache of the
 * consumer that read it a lap ago, and the slot's stores must reach the
 * cache before that push's locked instructions complete. Fetched when the
 * push one position earlier receives its own (prefetch_next_spare,
 * channels/mpmc_swap.c), it arrived late: one push is shorter than a line's
 * transfer. The cells of the line that a push starts are in this thread's
 * cache once its CAS is done, so their values are read without a miss,
 * and three slots in four are asked for two to four pushes before they are
 * written (docs/performance.md, "The slots fetched ahead"). Only by a
 * thread that has made SL__CELLRING_STREAM pushes since its last pop: in a
 * ping-pong the one slot prefetch_next_spare asks for arrives in time, and
 * the early fetches competed with the peer's misses on the lines it was
 * about to read (64-byte ping-pong x0.90-x0.96 with them). */
#define SL__CELLRING_STREAM 4u
/* Pushes by this thread since its last pop (any cell ring's), up to
 * SL__CELLRING_STREAM. */
extern _Thread_local unsigned sl__cellring_pushes __attribute__((tls_model("initial-exec")));

/* Whether this thread waits for what it receives: WAITING once one of its
 * pops found a ring empty, HANDED once a pop then took a message (the
 * thread waited for it), NONE after a pop that took one at once (a pop
 * halves the value: WAITING becomes HANDED, HANDED NONE). A push after
 * HANDED hands its message to a reader that likely waits too (a
 * ping-pong, an idle pipeline stage): channels/mpmc_swap.c, push_swap. */
enum { SL__CELLRING_NONE = 0, SL__CELLRING_HANDED = 1, SL__CELLRING_WAITING = 2 };
extern _Thread_local unsigned char sl__cellring_handoff __attribute__((tls_model("initial-exec")));

static inline __attribute__((always_inline)) bool sl__cellring_popped_empty(void)
{
    sl__cellring_handoff = SL__CELLRING_WAITING;
    return false;
}

static inline __attribute__((always_inline)) bool sl__cellring_popped(void)
{
    sl__cellring_handoff >>= 1;
    return true;
}

/* The swap form's slots, for the hints that fetch them. Unlike
 * sl__cellring_copy's, slot_count is always the real count: every index a
 * hint reads is bounded by it, in process too. */
typedef struct sl__cellring_slots {
    const unsigned char *base;
    size_t stride;       /* bytes per slot */
    uint64_t slot_count; /* a value at or above it is no slot (a peer's garbage) */
} sl__cellring_slots;

/* Asks for slot v's line ready to be written, if v is a slot at all (a
 * stale or swept index, or a peer's garbage, is skipped: no address
 * outside the slots is formed). The caller has checked
 * sl__prefetchw_known. */
static inline __attribute__((always_inline)) void
sl__cellring_fetch_slot(const sl__cellring_slots *a, uint64_t v)
{
    if (v < a->slot_count)
        sl__prefetch_for_write(a->base + (size_t)v * a->stride);
}

/* The slots that the free cells after position t in its line hold. Relaxed
 * loads: a hint, and a cell taken or refilled meanwhile only makes it a
 * wasted one. Only cells free for this lap (stamp = position): a cell still
 * holding last lap's message holds a slot a consumer has yet to read. The
 * walk stops at the lap's last cell, so a ring whose capacity is not a
 * multiple of four reads no cell past it. */
static inline __attribute__((always_inline)) void
sl__cellring_fetch_slots(const sl__cellring *r, uint64_t t, const sl__cellring_slots *a)
{
    for (uint64_t n = t + 1; (n & (r->one_lap - 1)) < r->capacity && !sl__cellring_line_start(r, n);
         n++) {
        const sl_mpmc_cell *c = sl__cell_at(r, n);
        if (atomic_load_explicit(&c->stamp, memory_order_relaxed) == n)
            sl__cellring_fetch_slot(a, atomic_load_explicit(&c->value, memory_order_relaxed));
    }
}

static inline __attribute__((always_inline)) void
sl__cellring_fetch_ahead(const sl__cellring *r, uint64_t t, const sl__cellring_slots *slots)
{
    if (!sl__cellring_line_start(r, t))
        return;
    if (sl__cellring_quiet) {
        sl__cellring_quiet--;
        return;
    }
    if (!sl__prefetchw_known)
        return;
    /* The line after t's in ring order: past the lap's last cell (whose
     * line may be partial), the lap's first, so that no address beyond
     * the cells is formed. */
    uint64_t next = (t & (r->one_lap - 1)) + SL__CELLS_PER_LINE;
    sl__prefetch_for_write(&r->cells[next < r->capacity ? next : 0]);
    if (slots && sl__cellring_pushes >= SL__CELLRING_STREAM)
        sl__cellring_fetch_slots(r, t, slots);
}

/* A spare entry of SL_MPMC's swap form in a shared segment while a push (or
 * a pop of messages over SL__MPMC_SWAP_MAX bytes: sl__cellring_pop_swap)
 * holds its slot (channels/mpmc_swap.c, docs/shm-layout.md "The spare table"):
 * bit 63 set; the holder's record in bits 56-62 (SL__HELD_NOBODY: none
 * known); in bits 28-55 the free slot the cell offered the push's latest
 * CAS (SL__HELD_X_NONE before the first, SL__HELD_X_BAD for an index out
 * of range); in bits 0-27 the slot the push took. So that the slot a dead
 * holder leaves can be found again: docs/guarantees.md, "Send, holding a
 * spare". SL__MPMC_NO_SPARE reads as held by nobody, with no slot. */
#define SL__HELD_BIT ((uint64_t)1 << 63)
#define SL__HELD_REC_SHIFT 56
#define SL__HELD_NOBODY 127u
#define SL__HELD_X_SHIFT 28
#define SL__HELD_FIELD (((uint64_t)1 << 28) - 1)
#define SL__HELD_X_NONE SL__HELD_FIELD
#define SL__HELD_X_BAD (SL__HELD_FIELD - 1)
/* The most slots a shared swap form may have: every index below X_BAD. */
#define SL__HELD_SLOTS_MAX (SL__HELD_FIELD - 1)

/* The held word without its offer (slot < SL__HELD_SLOTS_MAX). */
static inline uint64_t sl__held_base(uint32_t holder, uint64_t slot)
{
    return SL__HELD_BIT | (uint64_t)holder << SL__HELD_REC_SHIFT | slot;
}

/* An offer's bits, for a held base. */
static inline uint64_t sl__held_offer(uint64_t offered)
{
    return (offered < SL__HELD_X_BAD ? offered : SL__HELD_X_BAD) << SL__HELD_X_SHIFT;
}

/* A held push's record of the cell's offer before its CAS (true, for the
 * CAS's condition); nothing without `held`. */
static inline __attribute__((always_inline)) bool
sl__cellring_say_offer(SL_ATOMIC(uint64_t) *entry, uint64_t held, uint64_t offered)
{
#ifndef SL_MUTANT_SHM_OFFER_UNSAID /* planted bug when defined: the offer goes unrecorded */
    if (held) {
        /* Relaxed: read only once this process is dead, after its exit
         * (docs/guarantees.md, "Send, holding a spare"). */
        atomic_store_explicit(entry, held | sl__held_offer(offered), memory_order_relaxed);
        SL_FI(); /* the offer recorded, the CAS not yet made */
    }
#endif
    return true;
}

/* Appends value. Returns 0 when pushed; 1 when the ring was full and
 * `displace` was false (nothing changed); 2 when it was full and the oldest
 * value was displaced into *evicted. On 0, with `give_back`, stores there
 * the value the free cell held, before the tail moves (SL_MPMC's swap form,
 * channels/mpmc_swap.c: the slot the cell hands the push). With `held` (a shared
 * swap form's push: its sl__held_base), each CAS is preceded by a store of
 * `held` and the cell's offer into give_back. With `ahead`, a push that
 * starts a line fetches the next one, and with `slots` (the swap form's)
 * the slots of its line's other cells (sl__cellring_fetch_ahead). Lock-free; the
 * publishing step is a double-width CAS (a full barrier: releases the
 * value's bytes, and is the condition change a parked receiver pairs with). */
static inline __attribute__((always_inline)) int
sl__cellring_push_as(const sl__cellring *r, uint64_t value, bool displace, uint64_t *evicted,
                     bool guarded, SL_ATOMIC(uint64_t) *give_back, uint64_t held, bool ahead,
                     const sl__cellring_slots *slots)
{
    uint64_t seen = atomic_load_explicit(r->tail, memory_order_seq_cst);
    uint64_t t = seen;
    for (;;) {
        uint64_t s;
        t = sl__cellring_front(r, r->tail, &seen, t, 0, &s, guarded, true);
        sl_mpmc_cell *c = sl__cell_at(r, t);
        int64_t d = (int64_t)(s - t);
        if (d < 0 && !displace) {
            sl__cellring_quiet = SL__CELLRING_QUIET_LINES;
            return 1; /* the previous lap's value is still in cell(t) */
        }
        uint64_t old = atomic_load_explicit(&c->value, memory_order_relaxed);
        SL_FI();
#ifdef SL_MUTANT_MPMC_SPLIT_PUBLISH
        /* Planted bug (docs/guarantees.md): claim, then write the value. */
        if (d == 0) {
            if (atomic_compare_exchange_strong(&c->stamp, &s, t + 1)) {
                SL_FI();
                atomic_store_explicit(&c->value, value, memory_order_relaxed);
                sl__cellring_finish(r, r->tail, seen, t, false);
                return 0;
            }
            continue;
        }
#endif
        /* Claim and publish in one step; when full, the same step takes
         * the oldest value (position s - 1, which is the head's). A
         * producer that already sees the tail past t lost this cell (the
         * tail passes only done cells): it skips the locked CAS, which
         * would pull the cell's line away from the consumer for nothing. */
        if ((int64_t)(atomic_load_explicit(r->tail, memory_order_relaxed) - t) <= 0 &&
            sl__cellring_say_offer(give_back, held, old) && sl__dwcas(c, s, old, t + 1, value)) {
            if (d < 0) {
                /* The head to the position after the displaced one,
                 * unless it is there or beyond: every position up to
                 * s - 1 is taken or displaced, but the head may not have
                 * reached s - 1 yet (another taker's move is still to
                 * come), and a CAS from exactly s - 1 would then be lost
                 * for good, leaving the head on a displaced cell. */
                sl__cellring_move(r->head, atomic_load_explicit(r->head, memory_order_seq_cst),
                                  sl__cellring_next(r, s - 1));
                *evicted = old;
                /* Running full, as a push refused for it: the next line
                 * holds the oldest messages, the consumers' (below). */
                sl__cellring_quiet = SL__CELLRING_QUIET_LINES;
            } else if (give_back) {
                SL_FI(); /* published, the cell's slot not yet given back */
                /* Release: the pops that took old's bytes (before this
                 * cell was free) before the push that takes it next.
                 * The tail's move, made after every give-back, is a
                 * seq_cst CAS; with the caller's sl__fence_after_locked,
                 * a full barrier between this store and whatever the
                 * caller loads next (channels/mpmc_swap.c, the starved flag). */
                atomic_store_explicit(give_back, old, memory_order_release);
            }
            if (slots && sl__cellring_pushes < SL__CELLRING_STREAM)
                sl__cellring_pushes++;
            if (ahead)
                sl__cellring_fetch_ahead(r, t, slots);
            sl__cellring_finish(r, r->tail, seen, t, d < 0 || give_back);
            return d < 0 ? 2 : 0;
        }
        /* Lost cell(t): walk on from it, or from the tail if it is past. */
        seen = atomic_load_explicit(r->tail, memory_order_seq_cst);
        if ((int64_t)(seen - t) > 0)
            t = seen;
    }
}

/* A pop's speculative copy (SL_MPMC's swap form, channels/mpmc_swap.c): the
 * value is a slot index, and the slot's first `bytes` bytes go into `to`
 * (any alignment: the pop's stack buffer, or, for a shared channel's
 * messages over SL__MPMC_SWAP_MAX bytes, the caller's) between the read of
 * the value and the taking CAS. Each word is read with a relaxed
 * atomic load: a pop that then loses its CAS may have read a slot a later
 * push was writing (its copy is discarded); one that wins read the bytes
 * published with the value (docs/guarantees.md, "SL_MPMC"). In a guarded
 * ring (shared memory) the index is checked against slot_count first. */
typedef struct sl__cellring_copy {
    const unsigned char *slots;
    size_t stride; /* bytes per slot, a multiple of 8 */
    uint64_t slot_count; /* a guarded ring: an index at or above it is not copied */
    unsigned char *to;
    size_t bytes;
} sl__cellring_copy;

/* Word by word: whole words, then the last word's first bytes (the slot's
 * padding never reaches the buffer). */
static inline __attribute__((always_inline)) void
sl__cellring_copy_to(const SL_ATOMIC(uint64_t) *w, unsigned char *to, size_t bytes)
{
    size_t words = bytes / 8;
    /* Unrolled, as the push's slot_put (channels/mpmc_swap.c). */
#pragma GCC unroll 4
    for (size_t i = 0; i < words; i++) {
        uint64_t x = atomic_load_explicit(&w[i], memory_order_relaxed);
        memcpy(to + i * 8, &x, 8);
    }
#ifdef SL_MUTANT_SHM_LARGE_TAIL_DROPPED
    return; /* planted bug: a message's last bytes past a whole word stay behind */
#endif
    if (bytes & 7) {
        uint64_t x = atomic_load_explicit(&w[words], memory_order_relaxed);
        memcpy(to + words * 8, &x, bytes & 7);
    }
}

static inline __attribute__((always_inline)) void
sl__cellring_copy_out(const sl__cellring_copy *cp, uint64_t index)
{
    const SL_ATOMIC(uint64_t) *w =
        (const SL_ATOMIC(uint64_t) *)(const void *)(cp->slots + (size_t)index * cp->stride);
    sl__cellring_copy_to(w, cp->to, cp->bytes);
}

/* Removes the oldest value into *value; false when the ring is empty. With
 * `cp`, also copies the value's slot out (above) before taking the cell.
 * Lock-free; acts as acquire, and the taking CAS is seq_cst (what a parked
 * sender's re-check pairs with). */
static inline __attribute__((always_inline)) bool
sl__cellring_pop_as(const sl__cellring *r, uint64_t *value, bool guarded,
                    const sl__cellring_copy *cp)
{
    sl__cellring_pushes = 0; /* not a stream of pushes (sl__cellring_fetch_slots) */
    uint64_t seen = atomic_load_explicit(r->head, memory_order_seq_cst);
    uint64_t h = seen;
    for (;;) {
        uint64_t s;
#ifdef SL_MUTANT_CELLRING_HEAD_WALKS_WRITTEN
        /* Planted bug: the pop's walk steps over written cells too. */
        h = sl__cellring_front(r, r->head, &seen, h, 0, &s, guarded, true);
#else
        h = sl__cellring_front(r, r->head, &seen, h, 1, &s, guarded, true);
#endif
        if (s != h + 1)
            return sl__cellring_popped_empty(); /* nothing written at h, so nothing after it */
        sl_mpmc_cell *c = sl__cell_at(r, h);
#ifndef SL_MUTANT_MPMC_FREE_BEFORE_READ
        /* Stable while the stamp is h + 1: only the next lap's push or a
         * displacing push writes it, and either changes the stamp too. */
        uint64_t v = atomic_load_explicit(&c->value, memory_order_relaxed);
#endif
#if !defined(SL_MUTANT_MPMC_COPY_AFTER_TAKE) && !defined(SL_MUTANT_MPMC_FREE_BEFORE_READ)
        /* Discarded unless the CAS below wins. A guarded ring's index
         * may be a peer's garbage: out of range, nothing is read (the
         * caller drops the index). */
        if (cp && (!guarded || v < cp->slot_count))
            sl__cellring_copy_out(cp, v);
#endif
        SL_FI();
        /* A head already past h means cell(h) is taken: skip the CAS. */
        if ((int64_t)(atomic_load_explicit(r->head, memory_order_relaxed) - h) <= 0 &&
            atomic_compare_exchange_strong_explicit(&c->stamp, &s, h + r->one_lap,
                                                    memory_order_seq_cst,
                                                    memory_order_relaxed)) {
#ifdef SL_MUTANT_MPMC_FREE_BEFORE_READ
            /* Planted bug: the cell is free for the next lap already. */
            SL_FI();
            uint64_t v = atomic_load_explicit(&c->value, memory_order_relaxed);
            if (cp)
                sl__cellring_copy_out(cp, v);
#endif
#ifdef SL_MUTANT_MPMC_COPY_AFTER_TAKE
            /* Planted bug: the slot is copied once the cell is free for
             * the next lap, whose push may be writing it already. */
            SL_FI();
            if (cp && (!guarded || v < cp->slot_count))
                sl__cellring_copy_out(cp, v);
#endif
            sl__cellring_finish(r, r->head, seen, h, cp != NULL);
            *value = v;
            return sl__cellring_popped();
        }
#ifdef SL_MUTANT_MPMC_EMPTY_ON_LOST_CAS
        return false; /* planted bug: one lost race reads as empty */
#endif
        /* Lost cell(h): walk on from it, or from the head if it is past. */
        seen = atomic_load_explicit(r->head, memory_order_seq_cst);
        if ((int64_t)(seen - h) > 0)
            h = seen;
    }
}

/* Removes the oldest value (a slot index) into *value and leaves `mine`, a
 * spare slot, in its cell, in one double-width CAS: the message's slot
 * leaves the ring in the caller's hands, to read at leisure and give back
 * (a shared SL_MPMC's pop of messages over SL__MPMC_SWAP_MAX bytes,
 * channels/mpmc_swap.c). Before each CAS it stores `held` and the cell's value
 * into `entry` (sl__cellring_say_offer), as a held push does, so that the
 * look that finds the caller dead knows which slot it kept. A value of
 * slot_count or more (a peer's garbage) is taken as a guarded pop takes it,
 * by the stamp alone, `mine` kept: the caller drops it. false when empty.
 * Lock-free; the CAS is a full barrier (acquires the message's bytes, and is
 * what a parked sender's re-check pairs with). */
static inline bool sl__cellring_pop_swap(const sl__cellring *r, uint64_t *value, uint64_t mine,
                                         SL_ATOMIC(uint64_t) *entry, uint64_t held,
                                         uint64_t slot_count)
{
    sl__cellring_pushes = 0; /* as sl__cellring_pop_as */
    uint64_t seen = atomic_load_explicit(r->head, memory_order_seq_cst);
    uint64_t h = seen;
    for (;;) {
        uint64_t s;
        h = sl__cellring_front(r, r->head, &seen, h, 1, &s, true, true);
        if (s != h + 1)
            return sl__cellring_popped_empty();
        sl_mpmc_cell *c = sl__cell_at(r, h);
        uint64_t v = atomic_load_explicit(&c->value, memory_order_relaxed);
        bool taken = (int64_t)(atomic_load_explicit(r->head, memory_order_relaxed) - h) <= 0 &&
                     (v < slot_count ? sl__cellring_say_offer(entry, held, v) &&
                                           sl__dwcas(c, s, v, h + r->one_lap, mine)
                                     : atomic_compare_exchange_strong_explicit(
                                           &c->stamp, &s, h + r->one_lap,
                                           memory_order_seq_cst, memory_order_relaxed));
        if (taken) {
            sl__cellring_finish(r, r->head, seen, h, false);
            *value = v;
            return sl__cellring_popped();
        }
        seen = atomic_load_explicit(r->head, memory_order_seq_cst);
        if ((int64_t)(seen - h) > 0)
            h = seen;
    }
}

/* The plain forms, inlined where they are called (the walk made them too
 * large for the compiler to do so unasked: a call on every push and pop,
 * 49 instructions a pair, callgrind). */
static inline __attribute__((always_inline)) int
sl__cellring_push(const sl__cellring *r, uint64_t value, bool displace, uint64_t *evicted)
{
    return sl__cellring_push_as(r, value, displace, evicted, false, NULL, 0, true, NULL);
}

/* A push into a ring of free slot indices (SL_MPMC's indexed form, the
 * overwrite ring): its pushers are the consumers, and its next line is the
 * one the producers are taking from, so no line is fetched ahead. */
static inline __attribute__((always_inline)) void
sl__cellring_push_free(const sl__cellring *r, uint64_t value)
{
    sl__cellring_push_as(r, value, false, NULL, false, NULL, 0, false, NULL);
}

static inline __attribute__((always_inline)) bool
sl__cellring_pop(const sl__cellring *r, uint64_t *value)
{
    return sl__cellring_pop_as(r, value, false, NULL);
}

static inline int sl__cellring_push_guarded(const sl__cellring *r, uint64_t value)
{
    return sl__cellring_push_as(r, value, false, NULL, true, NULL, 0, true, NULL);
}

static inline bool sl__cellring_pop_guarded(const sl__cellring *r, uint64_t *value)
{
    return sl__cellring_pop_as(r, value, true, NULL);
}

/* The push's own full test, alone: the walk from the tail (without moving
 * it) stops at a cell that still holds the previous lap's value. The push
 * answers SL_FULL on exactly this (sl__cellring_push_as, s < t), so a
 * caller may answer it here, before work that only a push with room needs
 * (SL_MPMC's swap form: taking a spare slot; a select's look). */
static inline bool sl__cellring_full(const sl__cellring *r)
{
    uint64_t s, t = sl__cellring_peek_front(r, r->tail, 0, &s);
    return (int64_t)(s - t) < 0;
}

/* Whether the ring looks empty, on the walk a pop starts with: from the
 * head to the first cell not taken, not yet written for its position (the
 * same answer and the same linearization point as the pop's SL_EMPTY). A
 * look at the head's cell alone would not do: a lagging head's cell is
 * taken, and an empty ring would then look "maybe not empty" three times in
 * four (a select's look, and the planted bug SELECT_LOOK_SKIPS_DESCRIPTOR's
 * check, count on the answer). */
static inline bool sl__cellring_empty(const sl__cellring *r)
{
    uint64_t s, h = sl__cellring_peek_front(r, r->head, 1, &s);
    return (int64_t)(s - (h + 1)) < 0;
}

/* Values between the head's front and the tail's: a snapshot in
 * [0, capacity], exact when no operation is in progress (meanwhile a front
 * may be one position behind per operation in progress; the clamp keeps
 * the answer in range). */
static inline uint64_t sl__cellring_len(const sl__cellring *r)
{
    uint64_t s;
    uint64_t h = sl__cellring_peek_front(r, r->head, 1, &s);
    uint64_t t = sl__cellring_peek_front(r, r->tail, 0, &s);
    uint64_t mask = r->one_lap - 1;
    int64_t laps = (int64_t)((t & ~mask) - (h & ~mask)) / (int64_t)r->one_lap;
    int64_t n = laps * (int64_t)r->capacity + (int64_t)(t & mask) - (int64_t)(h & mask);
    return n <= 0 ? 0 : (uint64_t)n > r->capacity ? r->capacity : (uint64_t)n;
}

#endif /* SLUICE_CHANNELS_CELLRING_H */
