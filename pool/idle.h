/*
 * pool/idle.h — idle workers: who searches, who sleeps, and who wakes whom.
 * Shared by the worker pool and the executor (internal).
 *
 * A worker that runs out of work first *searches* (spins or steals for a
 * while, counted in `searching`), then *sleeps* on its own slot's eventcount
 * with its bit set in `sleep_bits`. A thread that publishes work wakes a
 * sleeper only when nobody searches, and only one waker at a time: the CAS
 * of `searching` from 0 to 1 takes a wake token, which the woken worker
 * inherits and counts as a searcher until it finds work. So a publish wakes
 * at most one sleeper; the last searcher to find work wakes one more only
 * when its caller sees more work waiting (the pool: then one job wakes at
 * most one sleeper), or always when the caller cannot tell (the executor:
 * a spare wake-up now and then). A burst ramps up one worker per hop, never
 * a herd (the Go scheduler's policy: runtime/proc.go, "Worker thread
 * parking/unparking").
 *
 * Why no work is stranded — the argument, once (docs/design.md, "Idle
 * workers", cites it; so do the callers). Let P publish work, fence
 * (sl_event_fence), then read `searching` and the bits (sl__idle_notify_work).
 * Let S, going to sleep, set its bit and stop counting as a searcher, then
 * re-check for work after the full barrier of its registration (the await
 * protocol, internal/await.h). All of these are seq_cst steps of one total
 * order. Either S's re-check comes after P's publication (S sees the work and
 * stays up), or P's reads come after S's registration: P sees S's bit and
 * either sees no searcher and wakes one sleeper, or sees a searcher X (a
 * waker's token in flight counts: a waker that finds no sleeper left to
 * claim gives it back as a searcher that stops). X, on
 * stopping (sl__idle_search_end), decrements `searching` and — if it was the
 * last and its caller sees more work, or cannot tell — wakes a sleeper; the
 * caller's look comes after the decrement, so P's work is visible to it
 * whenever P's read counted X. Each link of that chain is the same Dekker
 * pair, so whenever work is queued and a worker sleeps, some worker is
 * searching or about to re-check.
 *
 * Concurrency: every function may run on any thread concurrently with every
 * other, except init/destroy (alone) and sl__idle_park, which only slot i's
 * owner calls for slot i. The caller's own `searching` flag is its own.
 */
#ifndef SLUICE_POOL_IDLE_H
#define SLUICE_POOL_IDLE_H

#include <stdbool.h>

#include "sluice/park.h"
#include "internal/await.h"

/* A slot's eventcount on a line of its own: its waker and sleeper are the
 * only threads that touch it. */
typedef struct sl__idle_slot {
    SL_ALIGNAS(SL_CACHELINE) sl_event ev;
} sl__idle_slot;

typedef struct sl__idle {
    /* Searchers plus wake tokens in flight: read by every publish. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint64_t) searching;
    SL_ATOMIC(uint64_t) *sleep_bits; /* bit i: slot i sleeps and nobody claimed it yet */
    sl__idle_slot *slots;
    unsigned nslots, nwords;
} sl__idle;

/* nslots sleepers at most, none sleeping. SL_OK or SL_ENOMEM. */
sl_status sl__idle_init(sl__idle *idle, unsigned nslots);
void sl__idle_destroy(sl__idle *idle);

/* Slot i's eventcount: its owner may wait on it for other conditions too
 * (the executor's deep waits); every wake of the slot rings it. */
static inline sl_event *sl__idle_event(sl__idle *idle, unsigned i) { return &idle->slots[i].ev; }

/* Searchers now (a snapshot), for callers that cap how many spin at once. */
static inline unsigned sl__idle_searchers(const sl__idle *idle)
{
    return (unsigned)atomic_load_explicit(&idle->searching, memory_order_relaxed);
}

/* The caller starts searching (its flag *searching becomes true); nothing if
 * it already was. seq_cst. Lock-free. */
void sl__idle_search_begin(sl__idle *idle, bool *searching);

/* The caller stops searching (found work, or gives up). If it was the last
 * searcher and someone sleeps, it wakes one sleeper — when more(ctx) says
 * there is more work, or always when more is NULL (the caller cannot tell
 * cheaply). more() runs after the decrement: see the argument above. */
void sl__idle_search_end(sl__idle *idle, bool *searching, sl__ready_fn more, void *ctx);

/* What sl__idle_notify_work did. */
typedef enum sl__idle_wake {
    SL__IDLE_SEARCHING, /* a searcher (or a wake in flight) will find the work */
    SL__IDLE_WOKE,      /* it woke one sleeper, which inherits the token */
    SL__IDLE_NOBODY,    /* nobody searches and nobody sleeps */
} sl__idle_wake;

/* Work was published. Orders the caller's publication before its loads of
 * `searching` and the bits (sl_event_fence); a caller that pre-checks them
 * inline to skip the call must fence before its own loads. Wakes one sleeper
 * unless a searcher exists. No system call unless it wakes one. Lock-free. */
sl__idle_wake sl__idle_notify_work(sl__idle *idle);

/* Work was published for slot v in particular (its mailbox or inbox); fences
 * like notify_work. Wakes v if it sleeps (handing it a
 * token); otherwise rings v's event (a deep waiter re-checks) and lets
 * notify_work find a searcher or a sleeper for it. */
void sl__idle_notify_slot(sl__idle *idle, unsigned v);

/* Wakes every sleeper (start, shutdown, free), each with a token. */
void sl__idle_wake_all(sl__idle *idle);

/* A sleeping slot other than not_this (a snapshot), or nslots if none. */
unsigned sl__idle_find_sleeper(const sl__idle *idle, unsigned not_this);

/* Slot i's owner sleeps: registers its bit, stops searching (if it was), and
 * waits through the await protocol until ready(ctx), a waker's claim, or the
 * deadline. Returns SL_OK when woken or ready, SL_TIMEDOUT at the deadline.
 * On return the bit is clear, and *searching is true exactly when a waker
 * claimed the slot (the token is the caller's now: it must search and end
 * with sl__idle_search_end). ready may be called more than once. */
sl_status sl__idle_park(sl__idle *idle, unsigned i, bool *searching, sl__ready_fn ready,
                        void *ctx, uint64_t deadline_ns);

#endif /* SLUICE_POOL_IDLE_H */
