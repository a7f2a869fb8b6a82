/*
 * channels/mpmc_swap.c — the bounded MPMC queue's swap form (messages of 9
 * to SL__MPMC_SWAP_MAX bytes, and a shared channel's messages over 8 bytes
 * at every size): slots swapped through the used ring's cells for spares
 * from a table of spare entries, and what a process that died holding a
 * spare leaves in a shared segment.
 *
 * Apart from channels/mpmc.c (the storage and init of every form, the
 * direct and indexed forms, the public operations), which reaches this
 * form only through its out-of-line paths (sl__mpmc_push_slots and the
 * others, below): each was out of line already, so that each form keeps the
 * registers and frame it has alone, and the split moves no inlined step
 * away from its caller. docs/guarantees.md, "The swap form", has the
 * argument; cellring.h the ring's give_back and copy hooks it uses.
 */
#include "sluice/mpmc.h"

#include <stdlib.h>
#include <string.h>

#include "cellring.h"
#include "rings.h"
#include "sluice/park.h"
#include "internal/sysops.h"
#include "internal/util.h"

#include <unistd.h>

/* As in mpmc.c's push_one and pop_one: `shared` (a constant at every call)
 * picks the raw queue's fields (q) or the shared channel's view (v). */
#define GEOM(field) (shared ? v->field : q->field)
#define USED() (shared ? v->used : sl__mpmc_used_ring(q))

/* Whether a slot index read from a shared ring is out of range. */
static inline __attribute__((always_inline)) bool bad_index(uint64_t index, size_t slot_count)
{
#ifdef SL_MUTANT_SHM_UNBOUNDED_INDEX
    (void)index, (void)slot_count;
    return false; /* planted bug: an index from the segment is used unchecked */
#endif
    return index >= slot_count;
}

/* ---- the swap form (messages of 9 to SL__MPMC_SWAP_MAX bytes) -------------
 * Every used-ring cell always holds a slot index: while written, the slot of
 * its message; while free, a slot the next push there may have. A push copies
 * into a spare slot and swaps it for the cell's free one in the cell's
 * double-width CAS (the same step as the direct form's), keeping the one it
 * gets back as its spare; a pop copies the slot out before its taking CAS and
 * leaves the slot in the cell. Two ring steps per message, not four. */

/* The spare entry a thread tries first, at no cost after the first: each
 * thread is given a number once, and entries number * 9 words apart put the
 * first eight threads on eight lines (9 is odd: below the table's power of
 * two no two numbers share an entry, though folding that onto the table
 * may). Two threads on one entry only cost each other a probe. A shared
 * channel's table is used by the threads of several processes, each
 * numbered from 0: there the number is offset by a seed drawn from the
 * process's pid (process_seed), so that the processes' first threads do
 * not all start on entry 0. */
static _Thread_local size_t spare_home __attribute__((tls_model("initial-exec"))) = SIZE_MAX;
static SL_ATOMIC(size_t) spare_homes;
static SL_ATOMIC(size_t) spare_seed; /* 0: not drawn yet in this process */

static __attribute__((noinline, cold)) size_t draw_seed(void)
{
    /* Fibonacci hashing spreads neighbouring pids over the table. */
    size_t seed = (size_t)(((uint64_t)getpid() * 0x9E3779B97F4A7C15ull) >> 24) | 1u;
    /* Relaxed: any seed will do, and every thread computes the same one. */
    atomic_store_explicit(&spare_seed, seed, memory_order_relaxed);
    return seed;
}

void sl__mpmc_forked_child(void)
{
    /* Relaxed: the child runs only this thread now. */
    atomic_store_explicit(&spare_seed, 0, memory_order_relaxed);
}

static inline __attribute__((always_inline)) size_t process_seed(void)
{
    size_t seed = atomic_load_explicit(&spare_seed, memory_order_relaxed);
    return __builtin_expect(seed != 0, 1) ? seed : draw_seed();
}

static inline __attribute__((always_inline)) size_t home_entry(const sl_mpmc *q,
                                                               const sl__mpmc_view *v,
                                                               bool shared)
{
    if (__builtin_expect(spare_home == SIZE_MAX, 0))
        /* Relaxed: any spread of the threads over the entries will do. */
        spare_home = 9 * atomic_fetch_add_explicit(&spare_homes, 1, memory_order_relaxed);
    size_t j = (spare_home + (shared ? process_seed() : 0)) & GEOM(spare_mask);
    return j >= GEOM(spare_count) ? j - GEOM(spare_count) : j; /* mask + 1 <= 2 * count */
}

/* Whether a shared channel's spare entry holds a free slot: an index in
 * range. Held entries (sl__held_base) have bit 63 set; anything else out
 * of range is a peer's garbage, never taken, never written through. */
static inline __attribute__((always_inline)) bool free_spare(uint64_t entry, size_t slot_count)
{
#ifdef SL_MUTANT_SHM_UNCHECKED_SPARE
    (void)slot_count;
    return !(entry & SL__HELD_BIT); /* planted bug: an entry's index is taken unchecked */
#endif
    return !bad_index(entry, slot_count);
}

/* The record a shared view's holds are named by (rings.h). Relaxed: set
 * by this handle's claim, which came first on this thread. */
static inline uint32_t view_holder(const sl__mpmc_view *v)
{
    return atomic_load_explicit(&v->holder, memory_order_relaxed);
}

/* Takes entry e's slot into *slot, or says false (none there). In shared
 * memory by a CAS that leaves the entry naming this process and the slot
 * it took (cellring.h, "held"), so that if the process dies holding it the
 * slot can be found again; in a process's own memory an exchange (a thread
 * never dies alone). Acquire: pairs with the release that put the slot
 * there, so this push's writes into it come after the reads of every pop
 * that took it (docs/guarantees.md, "SL_MPMC"). seq_cst looks: a starving
 * push's second sweep must follow its store of the flag (starve). */
static inline __attribute__((always_inline)) bool
take_entry(const sl__mpmc_view *v, bool shared, SL_ATOMIC(uint64_t) *e, uint64_t *slot)
{
    if (!shared) {
        *slot = atomic_exchange_explicit(e, SL__MPMC_NO_SPARE, memory_order_acquire);
        return *slot != SL__MPMC_NO_SPARE;
    }
    uint64_t w = atomic_load_explicit(e, memory_order_seq_cst);
    *slot = w;
    return free_spare(w, v->slot_count) &&
           atomic_compare_exchange_strong_explicit(
               e, &w, sl__held_base(view_holder(v), w) | SL__HELD_X_NONE << SL__HELD_X_SHIFT,
               memory_order_acquire, memory_order_relaxed);
}

#define STARVED() (shared ? v->starved : &((sl_mpmc *)(uintptr_t)q)->starved)

/* Every entry once, from `from` on: the first one holding a slot, or NULL.
 * seq_cst looks: the starving push's second sweep must follow its store of
 * the flag (starve). */
static inline __attribute__((always_inline)) SL_ATOMIC(uint64_t) *
sweep_spares(const sl_mpmc *q, const sl__mpmc_view *v, bool shared, size_t from, uint64_t *slot)
{
    size_t count = GEOM(spare_count);
    for (size_t i = 0, j = from; i < count; i++, j = j + 1 == count ? 0 : j + 1) {
        SL_ATOMIC(uint64_t) *e = &GEOM(spares)[j];
        /* A look first: an empty entry is not written. */
        if (atomic_load_explicit(e, memory_order_seq_cst) != SL__MPMC_NO_SPARE &&
            take_entry(v, shared, e, slot))
            return e;
    }
    return NULL;
}

/* The home entry was empty (its slot is with another push in progress): the
 * other entries; if none holds a slot either, the push will say SL_FULL,
 * perhaps with room in the ring. A blocked sender must not sleep through the
 * give-back that ends that: it raises `starved`, then sweeps again. A push
 * that gives a slot back loads the flag after a full barrier (its tail's
 * CAS and sl__fence_after_locked), and, finding it raised, wakes the channel's
 * senders (wake_starved): either this second sweep sees the slot, or that
 * push sees the flag (docs/guarantees.md, "SL_MPMC"). Cold: `shared`
 * (as in push_one) is tested where it is used. */
static __attribute__((noinline, cold)) SL_ATOMIC(uint64_t) *
starve(const sl_mpmc *q, const sl__mpmc_view *v, bool shared, size_t home, uint64_t *slot)
{
    SL_ATOMIC(uint64_t) *e = sweep_spares(q, v, shared, home, slot);
    if (e)
        return e;
#ifndef SL_MUTANT_MPMC_STARVED_UNSAID
    /* seq_cst: before the second sweep's looks. */
    atomic_store_explicit(STARVED(), 1u, memory_order_seq_cst);
#endif
    return sweep_spares(q, v, shared, home, slot);
}

/* Takes a spare slot into *slot and returns its entry, where the push gives
 * back the slot it ends up with; NULL when no entry holds one. */
static inline __attribute__((always_inline)) SL_ATOMIC(uint64_t) *
take_spare(const sl_mpmc *q, const sl__mpmc_view *v, bool shared, uint64_t *slot)
{
    size_t home = home_entry(q, v, shared);
    SL_ATOMIC(uint64_t) *e = &GEOM(spares)[home];
    if (__builtin_expect(take_entry(v, shared, e, slot), 1))
        return e;
    return starve(q, v, shared, home, slot);
}

/* After a give-back (and a full barrier): a starving push raised the flag,
 * so wake the senders waiting on `wake`, and the channel's selectors and
 * descriptors with a send case, which look again. */
static __attribute__((noinline, cold)) void wake_starved(SL_ATOMIC(uint32_t) *starved,
                                                          sl_event *wake)
{
    /* An exchange: a flag raised after it stays raised for the next give-back. */
    if (atomic_exchange_explicit(starved, 0u, memory_order_seq_cst)) {
#ifdef SL_MUTANT_MPMC_STARVED_SELECTORS_UNRUNG
        sl_event_notify_all(wake); /* planted bug: a selector's send case sleeps on */
        return;
#endif
        sl__chan_wake_starved(wake);
    }
}

/* Writes a message into a slot, in relaxed atomic words (a pop that will
 * lose its race may be reading them). */
static inline __attribute__((always_inline)) void slot_put(unsigned char *slot, const void *elem,
                                                           size_t size)
{
    SL_ATOMIC(uint64_t) *w = (SL_ATOMIC(uint64_t) *)(void *)slot;
    const unsigned char *src = elem;
    size_t words = size / 8;
    /* Unrolled: atomic stores are neither merged nor vectorised, so a word a
     * turn spends most of the copy on the loop's count and branch. */
#pragma GCC unroll 4
    for (size_t i = 0; i < words; i++) {
        uint64_t x;
        memcpy(&x, src + i * 8, 8);
        atomic_store_explicit(&w[i], x, memory_order_relaxed);
    }
    if (size & 7) {
        uint64_t x = 0;
        memcpy(&x, src + words * 8, size & 7);
        atomic_store_explicit(&w[words], x, memory_order_relaxed);
    }
}

/* After a push: asks for the line of the slot this thread's next push will
 * write (the one just given back to its entry) ready to be written. The
 * slot was last read by a pop a lap ago, so its line sits in that
 * consumer's cache; fetched now, it arrives while the caller does other
 * work, instead of holding up the next push's cell CAS, which as a locked
 * instruction waits for the slot's stores to reach the cache. Relaxed: a
 * hint, and a stale or swept entry (SL__MPMC_NO_SPARE, or a peer's garbage
 * in shared memory) is out of range and skipped. Measured in
 * docs/performance.md, "Prefetching the next spare". */
static inline __attribute__((always_inline)) void
prefetch_next_spare(SL_ATOMIC(uint64_t) *e, const sl__cellring_slots *slots)
{
    if (sl__prefetchw_known)
        sl__cellring_fetch_slot(slots, atomic_load_explicit(e, memory_order_relaxed));
}

/* The swap form's push, for the raw queue (`shared` false) and the shared
 * channel (true: from the view, the guarded ring, and the spare's index
 * checked before anything is written through it); `wake`: the channel's
 * not_full (NULL for the raw queue, whose callers do not sleep in it). */
static inline __attribute__((always_inline)) sl_status
push_swap(const sl_mpmc *q, const sl__mpmc_view *v, const void *elem, sl_event *wake, bool shared)
{
    /* Full: answered before a spare is taken, so that a sender waiting for
     * room tries with two loads, not an exchange, a store and a fence. */
    sl__cellring r = USED();
    if (sl__cellring_full(&r))
        return SL_FULL;
    uint64_t mine;
    SL_ATOMIC(uint64_t) *e = take_spare(q, v, shared, &mine);
    if (!e)
        return SL_FULL; /* every spare is with a push in progress */
    unsigned char *mine_slot = sl__mpmc_swap_slot(GEOM(slots), GEOM(elem_size), mine);
    slot_put(mine_slot, elem, GEOM(elem_size));
    sl__cellring_slots slots = {GEOM(slots), sl__mpmc_swap_stride(GEOM(elem_size)),
                                GEOM(slot_count)};
    SL_ATOMIC(uint64_t) *give_back = e;
#ifdef SL_MUTANT_MPMC_SPARE_BACK_EARLY
    /* Planted bug: the slot about to be published stays among the spares. */
    atomic_store_explicit(e, mine, memory_order_release);
    give_back = NULL;
#endif
    SL_FI(); /* holding a spare: others must not wait for us */
    /* The cell's CAS publishes the bytes (release), is the condition change
     * a parked receiver pairs with, and swaps our slot for the cell's free
     * one, which goes back into e before the tail's CAS. */
    int full = sl__cellring_push_as(&r, mine, false, NULL, shared, give_back,
                                    shared && give_back ? sl__held_base(view_holder(v), mine) : 0,
                                    true, &slots);
    if (__builtin_expect(full, 0)) {
        /* Release: as the give-back. seq_cst fence: the give-back before the
         * flag's load, as the tail's CAS orders it on success. */
        atomic_store_explicit(e, mine, memory_order_release);
        atomic_thread_fence(memory_order_seq_cst);
    }
    SL_FI();
    if (!full && sl__cellring_handoff == SL__CELLRING_HANDED) {
        /* This thread waited for the message it received last, so a reader
         * likely waits for this one: demoted to the shared cache, the
         * slot's line reaches it without a snoop of this core (64-byte
         * ping-pong 8-18 % shorter). Once per message waited for: on every
         * push it cost a stream two thirds of its throughput and a busy
         * pipeline stage 40 % (docs/performance.md, "The slot handed on"). */
        sl__cellring_handoff = SL__CELLRING_NONE;
        sl__cache_demote(mine_slot);
    }
    if (!full)
        prefetch_next_spare(e, &slots);
    if (!wake)
        return full ? SL_FULL : SL_OK;
    if (!full)
        sl__fence_after_locked(); /* the give-back before the flag's load */
    if (atomic_load_explicit(STARVED(), memory_order_seq_cst))
        wake_starved(STARVED(), wake);
    return full ? SL_FULL : SL_OK;
}

/* The swap form's pop; `shared` as in push_swap: the index read from the
 * cell is checked before the slot is copied (cellring.h) and again before
 * the copy is handed out. */
static inline __attribute__((always_inline)) sl_status
pop_swap(const sl_mpmc *q, const sl__mpmc_view *v, void *out, bool shared)
{
    uint64_t buf[SL__MPMC_SWAP_MAX / 8], index;
    size_t stride = sl__mpmc_swap_stride(GEOM(elem_size));
    sl__cellring_copy cp = {GEOM(slots), stride, shared ? v->slot_count : 0,
                            (unsigned char *)buf, stride};
    sl__cellring r = USED();
    if (!sl__cellring_pop_as(&r, &index, shared, &cp))
        return SL_EMPTY;
    if (shared && bad_index(index, v->slot_count))
        return SL_EMPTY; /* a corrupted index: dropped, nothing was copied */
    /* Through buf: a lost race's copy never reaches out, which a pop that
     * answers SL_EMPTY leaves untouched. */
    memcpy(out, buf, GEOM(elem_size));
    return SL_OK;
}

/* The swap form's pop for a shared channel's messages over
 * SL__MPMC_SWAP_MAX bytes when it holds no spare (every entry was empty, or
 * the handle has no record to name it by): too large for pop_swap's stack
 * buffer, the speculative copy goes straight into `out`. So a pop that
 * loses its race and then finds the ring empty has written `out` (shm.h
 * says so); one that wins read the bytes published with the index, as
 * pop_swap's (cellring.h's sl__cellring_copy_out, docs/guarantees.md
 * "SL_MPMC"). */
static sl_status pop_copy_large(const sl__mpmc_view *v, void *out)
{
    uint64_t index;
    sl__cellring_copy cp = {v->slots, sl__mpmc_swap_stride(v->elem_size), v->slot_count, out,
                            v->elem_size};
    sl__cellring r = v->used;
    if (!sl__cellring_pop_as(&r, &index, true, &cp))
        return SL_EMPTY;
    if (bad_index(index, v->slot_count))
        return SL_EMPTY; /* a corrupted index: dropped, nothing was copied */
    return SL_OK;
}

/* A slot back into the entry a pop took its spare from, as a push's
 * give-back: release (the pop's reads of the slot before the push that
 * takes it next writes it); then the starved flag (a sender that found
 * every spare held may be asleep: starve). An exchange, not a store: a
 * locked instruction, the full barrier between the give-back and the
 * flag's load that a push gets from its tail's CAS. */
static void pop_give_back(const sl__mpmc_view *v, SL_ATOMIC(uint64_t) *e, uint64_t slot)
{
    (void)atomic_exchange_explicit(e, slot, memory_order_seq_cst);
    if (atomic_load_explicit(v->starved, memory_order_seq_cst))
        wake_starved(v->starved, v->wake);
}

/* The pop of a shared channel's messages over SL__MPMC_SWAP_MAX bytes. It
 * takes a spare as a push does (an entry held in its record's name) and
 * swaps it into the oldest message's cell, taking the message's slot out
 * (sl__cellring_pop_swap); it then owns that slot alone and copies it out
 * with no race (a plain memcpy, whatever the size), and gives it back as
 * its spare. Receivers so copy at once, each from its own slot, where a
 * copy before the take would hold the ring's head for the whole copy. A
 * pop killed while it holds a spare is settled as a push is
 * (docs/guarantees.md, "Receive, holding a spare"). With no spare to take
 * (pushes and pops in flight hold them all) or no record to name it by,
 * the copy-first pop instead: never SL_EMPTY for want of a spare. */
static __attribute__((noinline)) sl_status pop_swap_large(const sl__mpmc_view *v, void *out)
{
    uint64_t mine, index;
    sl__cellring r = v->used;
    /* Empty: answered before a spare is taken, so that an empty poll
     * writes nothing and holds no spare a send needs (but for a head that
     * lags a pop in progress: then the spare goes back at once). */
    if (sl__cellring_empty(&r))
        return SL_EMPTY;
    size_t home = home_entry(NULL, v, true);
    SL_ATOMIC(uint64_t) *e = &v->spares[home];
    uint32_t holder = view_holder(v);
    if (holder == SL__HELD_NOBODY ||
        (!take_entry(v, true, e, &mine) && !(e = sweep_spares(NULL, v, true, home, &mine))))
        return pop_copy_large(v, out);
    SL_FI(); /* holding a spare */
    if (!sl__cellring_pop_swap(&r, &index, mine, e, sl__held_base(holder, mine),
                               v->slot_count)) {
        pop_give_back(v, e, mine);
        return SL_EMPTY;
    }
    if (bad_index(index, v->slot_count)) {
        pop_give_back(v, e, mine); /* taken by the stamp alone: still ours */
        return SL_EMPTY;
    }
    SL_FI(); /* the message's slot taken, not yet copied */
#ifndef SL_MUTANT_SHM_POP_SWAP_BACK_EARLY
    memcpy(out, sl__mpmc_swap_slot(v->slots, v->elem_size, index), v->elem_size);
    SL_FI(); /* copied, the slot not yet given back */
    pop_give_back(v, e, index);
#else
    pop_give_back(v, e, index); /* planted bug: the slot goes back before its copy */
    SL_FI();
    memcpy(out, sl__mpmc_swap_slot(v->slots, v->elem_size, index), v->elem_size);
#endif
    return SL_OK;
}

/* ---- what a dead holder leaves (shared segments) --------------------------
 * A process killed between taking a spare and giving a slot back leaves its
 * entry held (cellring.h): the slot it took, and the slot the cell offered
 * its latest CAS. If that CAS happened, the slot it took is in circulation
 * (in the cell, or gone on from there) and the offer died with the process;
 * if not, the other way round. One of the two is seen where only a slot in
 * circulation can be, a cell's value or a free entry: seeing the taken slot
 * there proves the CAS happened (nobody but the holder had it otherwise),
 * seeing the offer proves it did not (it would be in the dead hand). Each
 * sighting is sound alone, so the scan need not be atomic; seeing neither
 * (the other slot is in a live push's hands, or a dead one's) waits for the
 * next look. A pop holding a spare (pop_swap_large) leaves the same entry,
 * the message's slot as its offer, and is settled alike.
 * docs/guarantees.md, "Send, holding a spare", "Receive, holding a spare". */

/* The record field of a held word (7 bits: SL__HELD_NOBODY is all ones). */
static inline uint32_t held_record(uint64_t w)
{
    return (uint32_t)(w >> SL__HELD_REC_SHIFT) & 127u;
}

/* Whether entry word w is held by a process in `dead`. */
static bool held_by(uint64_t w, uint64_t dead)
{
    return (w & SL__HELD_BIT) && held_record(w) < 64 && ((dead >> held_record(w)) & 1);
}

static inline bool was_seen(const uint64_t *seen, uint64_t slot)
{
    return (seen[slot / 64] >> (slot % 64)) & 1;
}

static inline void see(uint64_t *seen, uint64_t slot, size_t slot_count)
{
    if (slot < slot_count) /* held words, NO_SPARE and garbage are not slots */
        seen[slot / 64] |= (uint64_t)1 << (slot % 64);
}

/* Every slot found in a cell or a free entry, each as it was when read. */
static void observe(const sl__mpmc_view *v, uint64_t *seen)
{
    memset(seen, 0, (v->slot_count + 63) / 64 * sizeof *seen);
    /* seq_cst loads: after the caller learnt of the deaths. */
    for (uint64_t i = 0; i < v->used.capacity; i++)
        see(seen, atomic_load_explicit(&v->used.cells[i].value, memory_order_seq_cst),
            v->slot_count);
    for (size_t j = 0; j < v->spare_count; j++)
        see(seen, atomic_load_explicit(&v->spares[j], memory_order_seq_cst), v->slot_count);
}

/* What a dead holder's entry w becomes: the slot out of circulation; w
 * itself while neither was seen; NO_SPARE for a peer's garbage (a slot out
 * of range, or both seen, which no sound segment shows). */
static uint64_t settled(uint64_t w, const uint64_t *seen, size_t slot_count)
{
    uint64_t took = w & SL__HELD_FIELD;
    uint64_t offer = (w >> SL__HELD_X_SHIFT) & SL__HELD_FIELD;
    if (took >= slot_count)
        return SL__MPMC_NO_SPARE;
    if (offer == SL__HELD_X_NONE)
        return took; /* no CAS tried */
    if (offer >= slot_count || offer == took)
        return SL__MPMC_NO_SPARE;
    bool took_seen = was_seen(seen, took), offer_seen = was_seen(seen, offer);
#ifdef SL_MUTANT_SHM_SETTLE_BACKWARDS
    took_seen = !took_seen; /* planted bug: the slot in circulation is the one given back */
    offer_seen = !offer_seen;
#endif
    if (took_seen == offer_seen)
        return took_seen ? SL__MPMC_NO_SPARE : w;
    return took_seen ? offer : took;
}

/* One pass over the entries: each dead holder's settled by a CAS (another
 * look may settle it first). Returns how many were; *held gets how many
 * were found held, *left the records still named, *gave whether a slot
 * went back. */
static size_t settle_pass(const sl__mpmc_view *v, uint64_t dead, const uint64_t *seen,
                          size_t *held, uint64_t *left, bool *gave)
{
    size_t moved = 0;
    *held = 0, *left = 0;
    for (size_t j = 0; j < v->spare_count; j++) {
        SL_ATOMIC(uint64_t) *e = &v->spares[j];
        uint64_t w = atomic_load_explicit(e, memory_order_seq_cst);
        if (!held_by(w, dead))
            continue;
        ++*held;
        uint64_t to = seen ? settled(w, seen, v->slot_count) : w;
        if (to == w) {
            *left |= (uint64_t)1 << held_record(w);
            continue;
        }
        SL_FI(); /* decided, not yet given back */
        /* seq_cst: a give-back, whose release the slot's next taker
         * acquires (as push_swap's). */
        if (atomic_compare_exchange_strong_explicit(e, &w, to, memory_order_seq_cst,
                                                    memory_order_relaxed)) {
            moved++;
            *gave |= to != SL__MPMC_NO_SPARE;
        }
    }
    return moved;
}

uint64_t sl__mpmc_settle_spares(const sl__mpmc_view *v, uint64_t dead)
{
    if (!v->spares || !dead)
        return 0;
#ifdef SL_MUTANT_SHM_HELD_NEVER_SETTLED
    return 0; /* planted bug: a dead holder's spare stays held for good */
#endif
    /* The reads below come after the caller's look at the deaths. */
    atomic_thread_fence(memory_order_seq_cst);
    uint64_t *seen = malloc((v->slot_count + 63) / 64 * sizeof *seen);
    uint64_t left;
    bool gave = false;
    /* Again while a pass settled some and left some: a slot given back may
     * be the one another entry waits to see. A chain of dead holders loses
     * a link a pass, so as many passes as the first found held entries; the
     * bound keeps a peer's garbage (a living owner's record made to look
     * dead, its pushes holding anew) from keeping the look going. */
    for (size_t pass = 0, limit = 1; pass < limit; pass++) {
        size_t held;
        if (seen)
            observe(v, seen);
        size_t moved = settle_pass(v, dead, seen, &held, &left, &gave);
        if (pass == 0)
            limit = held + 1;
        if (!moved || !left)
            break;
    }
    free(seen);
    if (gave && atomic_load_explicit(v->starved, memory_order_seq_cst))
        wake_starved(v->starved, v->wake); /* as a give-back does (push_swap) */
    return left;
}

/* ---- the out-of-line paths, for mpmc.c's public operations --------------
 * Each out of line on its own (mpmc.c, "the public operations", says why). */
__attribute__((noinline)) sl_status sl__mpmc_push_slots(sl_mpmc *q, const void *elem,
                                                     sl_event *wake)
{
    if (!q->spares)
        return sl__mpmc_push_indexed(q, elem);
    return push_swap(q, NULL, elem, wake, false);
}

__attribute__((noinline)) sl_status sl__mpmc_pop_slots(sl_mpmc *q, void *out)
{
    /* `free`, not `spares`, tells the forms apart here: the spares' pointer
     * sits on the producers' line, which a pop does not read. */
    if (q->free)
        return sl__mpmc_pop_indexed(q, out);
    return pop_swap(q, NULL, out, false);
}

/* A shared channel's messages over 8 bytes: the swap form at every size
 * (docs/design.md, "Shared channels over 256 bytes"), out of line as
 * sl__mpmc_push_slots. */
__attribute__((noinline)) sl_status sl__mpmc_push_slots_in(const sl__mpmc_view *v,
                                                        const void *elem)
{
    return push_swap(NULL, v, elem, v->wake, true);
}

__attribute__((noinline)) sl_status sl__mpmc_pop_slots_in(const sl__mpmc_view *v, void *out)
{
    if (v->elem_size > SL__MPMC_SWAP_MAX)
        return pop_swap_large(v, out);
    return pop_swap(NULL, v, out, true);
}

sl_status sl__mpmc_pop_copy_in(const sl__mpmc_view *v, void *out)
{
    return pop_copy_large(v, out);
}
