/*
 * pool/idle.c — idle workers: the searching count, the sleep bits, the wake
 * token, parking. The policy and why it strands no work: pool/idle.h.
 */
#include "idle.h"
#include "internal/sysops.h"

#include <stdlib.h>
#include <string.h>

sl_status sl__idle_init(sl__idle *idle, unsigned nslots)
{
    memset(idle, 0, sizeof *idle);
    idle->nslots = nslots;
    idle->nwords = (nslots + 63u) / 64u;
    idle->sleep_bits = sl__calloc(idle->nwords ? idle->nwords : 1, sizeof *idle->sleep_bits);
    idle->slots = sl__alloc(SL_CACHELINE, (nslots ? nslots : 1) * sizeof *idle->slots);
    if (!idle->sleep_bits || !idle->slots) {
        sl__idle_destroy(idle);
        return SL_ENOMEM;
    }
    for (unsigned i = 0; i < nslots; i++)
        sl_event_init(&idle->slots[i].ev);
    atomic_init(&idle->searching, 0);
    return SL_OK;
}

void sl__idle_destroy(sl__idle *idle)
{
    free(idle->sleep_bits);
    free(idle->slots);
    idle->sleep_bits = NULL;
    idle->slots = NULL;
}

static bool any_sleeper(const sl__idle *idle)
{
    for (unsigned i = 0; i < idle->nwords; i++)
        if (atomic_load_explicit(&idle->sleep_bits[i], memory_order_relaxed) != 0)
            return true;
    return false;
}

/* Clears slot i's sleep bit if set; true if this call cleared it (the caller
 * now owns i's wake-up). seq_cst: a step of the chain in idle.h. */
static bool claim(sl__idle *idle, unsigned i)
{
    uint64_t bit = (uint64_t)1 << (i & 63u);
    uint64_t old = atomic_fetch_and_explicit(&idle->sleep_bits[i >> 6], ~bit, memory_order_seq_cst);
    return (old & bit) != 0;
}

/* Claims some sleeping slot, lowest first (the most recently busy workers
 * keep their caches warm, the others stay asleep and may retire); its index,
 * or UINT32_MAX if none. */
static unsigned claim_any(sl__idle *idle)
{
    for (unsigned wi = 0; wi < idle->nwords; wi++) {
        uint64_t bits = atomic_load_explicit(&idle->sleep_bits[wi], memory_order_relaxed);
        while (bits) {
            unsigned i = wi * 64u + (unsigned)__builtin_ctzll(bits);
            if (claim(idle, i))
                return i;
            bits &= bits - 1;
        }
    }
    return UINT32_MAX;
}

/* The gate: take the wake token if nobody searches, then hand it to a
 * sleeper. true if it woke one. */
static bool wake_one(sl__idle *idle)
{
    uint64_t none = 0;
    /* seq_cst: one step of the chain in idle.h */
    if (!atomic_compare_exchange_strong_explicit(&idle->searching, &none, 1,
                                                 memory_order_seq_cst, memory_order_relaxed))
        return false; /* a searcher exists (or another waker holds the token) */
    SL_FI();
    unsigned i = claim_any(idle);
    if (i != UINT32_MAX) {
        SL_FI();
        sl_event_notify_one(&idle->slots[i].ev); /* it wakes up searching, with our token */
        return true;
    }
    /* Every sleeper we saw woke by itself meanwhile (its re-check found
     * work, or its deadline came) and holds no count. While we held the
     * token, a publisher may have counted it as a searcher and woken
     * nobody, and a worker may have gone back to sleep since our claim
     * looked: the token ends as any searcher's does, the last one out
     * waking a sleeper (we cannot tell whether work waits), as wake_slot's
     * failed claim does. */
    SL_FI(); /* a publisher may count this token as a searcher now */
#ifdef SL_MUTANT_POOL_WAKER_DROPS_TOKEN
    /* planted bug: the token goes back without the last one's hand-on */
    atomic_fetch_sub_explicit(&idle->searching, 1, memory_order_seq_cst);
    return false;
#endif
    bool token = true;
    sl__idle_search_end(idle, &token, NULL, NULL);
    return false;
}

void sl__idle_search_begin(sl__idle *idle, bool *searching)
{
    if (*searching)
        return;
    *searching = true;
    atomic_fetch_add_explicit(&idle->searching, 1, memory_order_seq_cst);
}

void sl__idle_search_end(sl__idle *idle, bool *searching, sl__ready_fn more, void *ctx)
{
    if (!*searching)
        return;
    *searching = false;
    uint64_t old = atomic_fetch_sub_explicit(&idle->searching, 1, memory_order_seq_cst);
    /* The last searcher out hands on: more() looks after the decrement, so
     * work whose publisher counted us is visible to it (idle.h). */
    if (old == 1 && any_sleeper(idle) && (!more || more(ctx)))
        wake_one(idle);
}

sl__idle_wake sl__idle_notify_work(sl__idle *idle)
{
    sl_event_fence(); /* the caller's publication before the loads below */
    if (atomic_load_explicit(&idle->searching, memory_order_seq_cst) != 0)
        return SL__IDLE_SEARCHING;
    if (!any_sleeper(idle))
        return SL__IDLE_NOBODY;
    return wake_one(idle) ? SL__IDLE_WOKE : SL__IDLE_SEARCHING;
}

/* Wakes slot v if it sleeps, handing it a token; false if v was awake. A
 * failed claim (v woke by itself between our look and the claim) ends its
 * token like a searcher would, so a publisher that counted it is answered. */
static bool wake_slot(sl__idle *idle, unsigned v)
{
    uint64_t bit = (uint64_t)1 << (v & 63u);
    if (!(atomic_load_explicit(&idle->sleep_bits[v >> 6], memory_order_seq_cst) & bit))
        return false;
    /* The token first, then the claim: the woken slot counts as searching
     * as soon as it sees its bit cleared. */
    atomic_fetch_add_explicit(&idle->searching, 1, memory_order_seq_cst);
    SL_FI();
    if (claim(idle, v)) {
        SL_FI();
        sl_event_notify_one(&idle->slots[v].ev);
        return true;
    }
    bool token = true; /* v woke by itself; it answers for its own work */
    sl__idle_search_end(idle, &token, NULL, NULL);
    return false;
}

void sl__idle_notify_slot(sl__idle *idle, unsigned v)
{
    /* The caller's push for v before our read of v's bit: the Dekker pair
     * with v's registration and re-check. */
    sl_event_fence();
    if (wake_slot(idle, v))
        return;
    /* v is awake (perhaps busy): a searcher or a sleeper may take the work
     * instead. v may also wait on its event for something else (a deep
     * wait) with this work among what it re-checks: ring it — no system
     * call unless it sleeps there. */
    sl__idle_notify_work(idle);
    sl_event_notify_one(&idle->slots[v].ev);
}

void sl__idle_wake_all(sl__idle *idle)
{
    sl_event_fence(); /* the caller's state change before the loads below */
    for (unsigned i = 0; i < idle->nslots; i++)
        if (!wake_slot(idle, i))
            sl_event_notify_one(&idle->slots[i].ev); /* awake, or waiting on its event */
}

unsigned sl__idle_find_sleeper(const sl__idle *idle, unsigned not_this)
{
    for (unsigned wi = 0; wi < idle->nwords; wi++) {
        uint64_t bits = atomic_load_explicit(&idle->sleep_bits[wi], memory_order_relaxed);
        if (wi == not_this >> 6)
            bits &= ~((uint64_t)1 << (not_this & 63u));
        if (bits)
            return wi * 64u + (unsigned)__builtin_ctzll(bits);
    }
    return idle->nslots;
}

typedef struct park_ctx {
    sl__idle *idle;
    unsigned i;
    sl__ready_fn ready;
    void *ctx;
} park_ctx;

/* Stay up once a waker has claimed the slot (its notify may have come
 * before our prepare) or the caller's condition holds. */
static bool park_ready(void *arg)
{
    park_ctx *c = arg;
    uint64_t bit = (uint64_t)1 << (c->i & 63u);
    return !(atomic_load_explicit(&c->idle->sleep_bits[c->i >> 6], memory_order_seq_cst) & bit) ||
           c->ready(c->ctx);
}

sl_status sl__idle_park(sl__idle *idle, unsigned i, bool *searching, sl__ready_fn ready,
                        void *ctx, uint64_t deadline_ns)
{
    uint64_t bit = (uint64_t)1 << (i & 63u);
    /* Register as a sleeper, then stop counting as a searcher — in this
     * order a waker always sees one of the two (idle.h). No hand-on here:
     * this thread re-checks for work itself after the barrier. */
    atomic_fetch_or_explicit(&idle->sleep_bits[i >> 6], bit, memory_order_seq_cst);
    SL_FI();
    if (*searching) {
        *searching = false;
        atomic_fetch_sub_explicit(&idle->searching, 1, memory_order_seq_cst);
    }
    SL_FI();
    park_ctx c = {idle, i, ready, ctx};
    sl_status st = sl__event_await(&idle->slots[i].ev, park_ready, &c, deadline_ns, 0);
    /* Our bit still set: nobody claimed us (woken by the condition, a stray
     * notify or the deadline). Clear: a waker claimed us and gave us its
     * token. */
    if (!claim(idle, i))
        *searching = true;
    return st;
}
