/*
 * channels/chan_flavors_shared.h — the flavour table's two rows for channels
 * in shared memory (sluice/shm.h, channels/shm.c): their adapters, in the
 * façade's terms. Included by channels/chan_flavors.h alone, at the place
 * of these rows among the adapters (it uses the marks and fences of
 * chan_marks.h, which that file includes first); a file of its own so
 * that the table's file stays one screenful of flavours shorter.
 */
#ifndef SLUICE_CHANNELS_CHAN_FLAVORS_SHARED_H
#define SLUICE_CHANNELS_CHAN_FLAVORS_SHARED_H

/* ---- shared channels (sluice/shm.h) ---------------------------------------
 * SL_SPSC and SL_MPMC in a shared-memory segment: the same raw algorithms,
 * with the counters in the segment (ch->q) and the geometry from the
 * process-local handle (ch->geom), so that a peer's writes into the segment
 * never become a pointer, a size or an unbounded index. channels/shm.c makes
 * them (own_ctor); nothing is drained at sl_chan_free, which only unmaps. */
static inline sl_status shared_init(sl_chan *ch, const sl_chan_opts *o, uint64_t start)
{
    return SL_EINVAL; /* made by channels/shm.c only */
}

static inline void shared_drain_destroy(sl_chan *ch, sl_visit_fn fn, void *ctx) {}

/* A shared channel's sender marks itself in its handle's record in the
 * segment, so that a receiver can tell a dead process's mark from a live
 * one (channels/shm_owner.c); the first send of a handle in a process claims it. */
/* NULL when every record is held by a living handle: the send is refused
 * (SL_ENOMEM, send_with), so that every message in flight has a record to
 * answer for it, its mark and any spare it holds (sluice/shm.h). */
static inline __attribute__((always_inline)) SL_ATOMIC(uint32_t) *shm_mark_word(sl_chan *ch)
{
    if (__builtin_expect(sl__shm_claimed_here(ch), 1))
        return ch->shm.mark;
    return sl__shm_claim_mark(ch);
}

static inline SL_ATOMIC(uint32_t) *spsc_shared_mark(sl_chan *ch)
{
    SL_ATOMIC(uint32_t) *flag = shm_mark_word(ch);
    return __builtin_expect(flag != NULL, 1) ? flag_mark_as(flag, true) : NULL;
}

/* SL_MPMC's sending threads mark themselves in lanes of the record, a flag
 * each, as SL_SPSC's sender does (channels/shm_lane.c): no locked
 * instruction where the segment's barrier mode is asymmetric. A thread
 * that found every lane owned counts itself in the record's count. */
static inline __attribute__((always_inline)) SL_ATOMIC(uint32_t) *mpmc_shared_mark(sl_chan *ch)
{
    const sl__shm_lane_cache *c = &sl__shm_lane_of_thread;
    SL_ATOMIC(uint32_t) *w;
    /* Relaxed: `claim` changes only in this process's claims. */
    if (__builtin_expect(c->ch == ch && c->claim == atomic_load_explicit(&ch->shm.claim,
                                                                         memory_order_relaxed), 1))
        w = c->word;
    else if (!(w = sl__shm_claim_lane(ch)))
        return NULL;
    if (__builtin_expect(sl__shm_is_lane(w), 1))
        return flag_mark_as(w, true);
    /* seq_cst: the mark before the closed-check, in the total order. */
    atomic_fetch_add_explicit(w, 1u, memory_order_seq_cst);
    return w;
}

static inline __attribute__((always_inline)) void mpmc_shared_unmark(SL_ATOMIC(uint32_t) *w)
{
    if (__builtin_expect(sl__shm_is_lane(w), 1))
        flag_unmark_across(w);
    else
        count_unmark(w);
}

/* An empty look may be the one that finds every registered sender gone
 * (a full send's look is send_with's and send_n_with's, chan.c): the batch
 * receives take it too, or a loop polling with them never learns of the
 * death (found by review). */
static inline sl_status shared_empty(sl_chan *ch)
{
    sl__shm_on_stuck(ch);
    return SL_EMPTY;
}

/* SL_SPSC across processes: the flag mark, the unmark and the pop are
 * ordered by the shared channels' fence (sl__shm_fence): a compiler barrier
 * where every waiter issues the global expedited membarrier, else a real
 * fence, since the private membarrier does not reach another process. */
static inline sl_status spsc_shared_push(sl_chan *ch, const void *elem, sl_visit_fn displaced,
                                         void *ctx)
{
    return sl__spsc_push_in(&ch->q.spsc, &ch->geom.spsc, elem);
}

static inline sl_status spsc_shared_pop(sl_chan *ch, void *out)
{
    if (sl__spsc_pop_in(&ch->q.spsc, &ch->geom.spsc, out) != SL_OK)
        return shared_empty(ch);
    store_load_fence(true); /* head store before the notify's waiter load */
    return SL_OK;
}

static inline size_t spsc_shared_push_n(sl_chan *ch, const void *elems, size_t n)
{
    return sl__spsc_push_n_in(&ch->q.spsc, &ch->geom.spsc, elems, n); /* fenced by the unmark */
}

static inline size_t spsc_shared_pop_n(sl_chan *ch, void *out, size_t n)
{
    size_t k = sl__spsc_pop_n_in(&ch->q.spsc, &ch->geom.spsc, out, n);
    store_load_fence(true); /* head store before the notify's waiter load */
#ifndef SL_MUTANT_SHM_BATCH_NO_LOOK
    if (k == 0)
        shared_empty(ch); /* the look, as an empty single receive's */
#endif
    return k;
}

static inline size_t spsc_shared_len(const sl_chan *ch)
{
    return sl__spsc_len_in(&ch->q.spsc, ch->capacity);
}

static const flavor_adapter spsc_shared_adapter = {
    .init = shared_init, .drain_destroy = shared_drain_destroy,
    .mark = spsc_shared_mark, .unmark = flag_unmark_across,
    .push = spsc_shared_push, .pop = spsc_shared_pop,
    .push_n = spsc_shared_push_n, .pop_n = spsc_shared_pop_n, .len = spsc_shared_len,
    .ready_at = sl__shm_ready_at,
    .light_mark = true, .own_ctor = true, .shared = true, .reports = SL_SPSC,
};

/* SL_MPMC across processes: its steps are seq_cst read-modify-writes (full
 * barriers in every process), so it needs no fence of its own. */
static inline sl_status mpmc_shared_push(sl_chan *ch, const void *elem, sl_visit_fn displaced,
                                         void *ctx)
{
    return sl__mpmc_push_in(&ch->geom.mpmc, elem);
}

/* One pop. A pop of messages over SL__MPMC_SWAP_MAX bytes holds a spare
 * named by the handle's record, as a push does (channels/mpmc_swap.c,
 * pop_swap_large), so only while that record is claimed in this process:
 * by the handle's first receive that finds a message (an empty poll claims
 * nothing: a handle that never receives one keeps no record). Until then
 * it copies first — also in a fork()ed child, whose inherited handle names
 * its parent's record until it claims its own: a spare held in that name
 * would be settled as the parent's at the parent's death, under the
 * child's copy (found by review: a slot in two cells). */
static inline sl_status mpmc_shared_pop_one(sl_chan *ch, void *out)
{
    const sl__mpmc_view *v = &ch->geom.mpmc;
    if (ch->elem_size > SL__MPMC_SWAP_MAX && !sl__shm_claimed_here(ch) &&
        (sl__cellring_empty(&v->used) || !sl__shm_claim_mark(ch)))
#ifdef SL_MUTANT_SHM_POP_HOLDS_UNCLAIMED
        return sl__mpmc_pop_in(v, out); /* planted bug: holds in the name the view has */
#else
        return sl__mpmc_pop_copy_in(v, out);
#endif
    return sl__mpmc_pop_in(v, out);
}

static inline sl_status mpmc_shared_pop(sl_chan *ch, void *out)
{
    sl_status st = mpmc_shared_pop_one(ch, out);
    return st == SL_EMPTY ? shared_empty(ch) : st;
}

static inline sl_status mpmc_shared_push_one(sl_chan *ch, const void *elem)
{
    return sl__mpmc_push_in(&ch->geom.mpmc, elem);
}

static inline size_t mpmc_shared_push_n(sl_chan *ch, const void *elems, size_t n)
{
    return push_each(ch, elems, n, mpmc_shared_push_one);
}

static inline size_t mpmc_shared_pop_n(sl_chan *ch, void *out, size_t n)
{
    size_t k = pop_each(ch, out, n, mpmc_shared_pop_one);
#ifndef SL_MUTANT_SHM_BATCH_NO_LOOK
    if (k == 0)
        shared_empty(ch); /* the look, as an empty single receive's */
#endif
    return k;
}

static inline size_t mpmc_shared_len(const sl_chan *ch)
{
    return (size_t)sl__cellring_len(&ch->geom.mpmc.used);
}

static const flavor_adapter mpmc_shared_adapter = {
    .init = shared_init, .drain_destroy = shared_drain_destroy,
    .mark = mpmc_shared_mark, .unmark = mpmc_shared_unmark,
    .push = mpmc_shared_push, .pop = mpmc_shared_pop,
    .push_n = mpmc_shared_push_n, .pop_n = mpmc_shared_pop_n, .len = mpmc_shared_len,
    .ready_at = sl__shm_ready_at,
    .light_mark = true, .own_ctor = true, .shared = true, .reports = SL_MPMC,
};

#endif /* SLUICE_CHANNELS_CHAN_FLAVORS_SHARED_H */
