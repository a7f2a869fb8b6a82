/*
 * tests/stress_flavors.c — stress accounting for SL_LIST, SL_RING, rendezvous,
 * SL_BROADCAST and sl_select.
 *
 * Every message carries (producer, seq, check) and, above 16 bytes, a pad
 * derived from them, so that torn copies show. What is checked:
 *
 *   list_exactly_once  P producers send seq 0..N-1 into an SL_LIST channel
 *                      (the sends never wait), C consumers receive with
 *                      blocking receives until SL_CLOSED: every (producer,
 *                      seq) arrives exactly once, each consumer sees each
 *                      producer's seqs increasing, and no send form ever
 *                      returns SL_FULL or SL_TIMEDOUT.
 *   list_mixed_close   random mixes of every send and receive form with a
 *                      close from a third thread at a random point, and
 *                      consumers that sometimes leave early: per producer,
 *                      sent_ok == received + dropped; no message twice; a
 *                      refused send never shows up; drops at sl_chan_free are
 *                      in FIFO order and newer than anything received; close
 *                      is linearizable with sends: once a receiver has seen
 *                      SL_CLOSED nothing more arrives and nothing successfully
 *                      sent is left for sl_chan_free.
 *   ring_flood         senders (plain sends and send_evict) flood an SL_RING
 *                      of capacity 1, 2, 4 or 64 while receivers race them:
 *                      every message is, exactly once, received, or handed
 *                      back to an evicting sender, or dropped (by a plain
 *                      send's displacement, or at free) — never two, never
 *                      none; a plain send returns SL_EVICTED exactly when its
 *                      call handed one message to the drop function; each
 *                      observer (receiver, evictor, dropping thread) sees
 *                      every producer's seqs increasing; len <= capacity.
 *   select_stress      producers each on their own channel (any flavour;
 *                      some send through sl_select), consumers selecting over
 *                      all channels with random time-outs, plus a consumer
 *                      with plain receives on one shared channel; producers
 *                      close their channels at the end: every message exactly
 *                      once (received, or dropped/evicted for SL_RING), FIFO
 *                      per producer per consumer, and everyone finishes. Two
 *                      configurations select with sl_select_biased (the same
 *                      accounting; which case wins is unit_select's to check)
 *                      and give the plain consumer batch receives
 *                      (sl_chan_recv_n_for with random n and time-outs).
 *   timer_select       consumers loop over sl_select on a work channel (fed
 *                      by producers, then closed), one shared ticker and one
 *                      shared deadline (sl_chan_after), until the work is
 *                      drained and the deadline taken: every work message
 *                      exactly once and FIFO per producer per consumer; every
 *                      tick on the ticker's grid, never received before its
 *                      instant, each instant received once in all, and no
 *                      more ticks than grid points passed (no backlog); the
 *                      deadline received exactly once, never early.
 *
 *   broadcast_churn    senders send seq 0..N-1 each, with random send forms
 *                      (send, try_send, send_for, try_send_n batches, select
 *                      send cases), into a broadcast channel of capacity 1, 4
 *                      or 64; the last to finish closes it. One steady
 *                      subscriber, subscribed before the first send, receives
 *                      with random forms (recv, try_recv, recv_for,
 *                      recv_n_for, select with a never-ready second case)
 *                      until SL_CLOSED. Churners subscribe, receive a random
 *                      number of messages, sometimes close their own handle,
 *                      leave (free), and subscribe again, until the channel is
 *                      closed. Checked: every message received is intact
 *                      (never torn); each subscription sees each sender's seqs
 *                      increasing, and a sender's seqs jump only across an
 *                      SL_LAGGED; the jumps a subscription sees never add up
 *                      to more than sl_chan_missed says; the steady
 *                      subscriber's received + missed is exactly every message
 *                      sent (so what it was told it missed is exactly what it
 *                      did not get); no send fails; the drop function sees
 *                      every message exactly once, intact; no subscription
 *                      receives a message whose drop ran before that receive
 *                      began (the drop waits for every subscriber counted);
 *                      and once the threads are done, before the last two
 *                      handles are freed, every message has been dropped (at
 *                      its last read, a leave, or its overwrite).
 *   rendezvous_close   producers hand messages to consumers over a rendezvous
 *                      channel R (SL_MPMC, capacity 0) and a small queue Q,
 *                      with every send form on R (blocking, timed, try,
 *                      batches) and sl_select over R and Q (or R alone:
 *                      select meeting select; or both ways on R, R named
 *                      twice to send, which may receive a peer's message
 *                      instead), consumers with every receive form on R and
 *                      select over R and Q (or R twice and Q: each select
 *                      writes the buffer of the one case it performed, no
 *                      other, and none on a time-out); a closer closes
 *                      both at a random point (or after the last send): per
 *                      producer, the sends that returned SL_OK are exactly
 *                      the messages received, each once — the send refused
 *                      with SL_CLOSED was never received — and everyone
 *                      finishes.
 *
 * Sizes scale with SL_STRESS_SCALE; SL_STRESS_PRODUCERS / SL_STRESS_CONSUMERS
 * override the SL_LIST thread counts; SL_STRESS_SEED replays the random
 * choices (the seed is printed at the start of every test and in every
 * failure). A watchdog reports a test that makes no progress for 30 s (a lost
 * wake-up) with the state of its channels; Check's time-out is the backstop.
 */
#include "stress_common.h"

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/broadcast.h"
#include "sluice/chan.h"
#include "sluice/select.h"
#include "sluice/timer.h"

#define SUITE "stress_flavors"
#define TC_TIMEOUT 180
#define BATCH_MAX 16

/* ---- per-thread observers: FIFO per producer as one thread sees it ------ */

typedef struct observer {
    char who[48];
    uint64_t *last; /* [np]: newest seq seen per producer, or NONE */
    unsigned np;
    uint64_t count;
} observer;

static void obs_init(observer *o, unsigned np, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void obs_init(observer *o, unsigned np, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->who, sizeof o->who, fmt, ap);
    va_end(ap);
    o->np = np;
    o->count = 0;
    o->last = malloc(np * sizeof *o->last);
    if (!o->last)
        abort();
    for (unsigned p = 0; p < np; p++)
        o->last[p] = NONE;
}

static void obs_free(observer *o) { free(o->last); }

/* Records that this observer saw (p, s); returns false on a FIFO violation. */
static bool obs_see(observer *o, uint32_t p, uint64_t s, const char *what)
{
    o->count++;
    if (o->last[p] != NONE && s <= o->last[p]) {
        rec_fail("%s: per-producer FIFO broken (%s): producer %u seq %llu after seq %llu", o->who,
                 what, p, ULL(s), ULL(o->last[p]));
        return false;
    }
    o->last[p] = s;
    return true;
}

/* The thread's observer for messages the drop function gets on it. */
static _Thread_local observer *tl_drop_obs;

/* =========================================================================
 * (a1) SL_LIST: exactly once, per-producer FIFO, close at the end
 * ========================================================================= */

typedef struct leo_cfg {
    const char *name;
    unsigned producers, consumers;
    size_t esz;
    uint64_t msgs, floor;
} leo_cfg;

typedef struct leo_run {
    const leo_cfg *cfg;
    sl_chan *ch;
    unsigned np, nc;
    uint64_t n;
    size_t esz;
    uint64_t seed;
    bitmap seen;
    sl_test_barrier start;
    atomic_uint producers_left;
    atomic_uint_fast64_t received, dropped;
    pad_counter *progress;
} leo_run;

static void *leo_producer(void *arg)
{
    worker *w = arg;
    leo_run *r = w->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN);
    unsigned char buf[ESZ_MAX * BATCH_MAX > 1024 ? ESZ_MAX * BATCH_MAX : 1024];
    sl_test_barrier_wait(&r->start);
    for (uint64_t s = 0; s < r->n && !failed();) {
        unsigned op = (unsigned)(sl_test_rng_next(&rng) % 8);
        sl_status st = SL_OK;
        if (op == 7 && r->esz <= ESZ_MAX) {
            size_t k = msg_batch(buf, r->esz, w->idx, s, r->n - s, BATCH_MAX, &rng);
            size_t got = sl_chan_try_send_n(r->ch, buf, k);
            if (got != k)
                rec_fail("producer %u: sl_chan_try_send_n(%zu) on SL_LIST sent %zu", w->idx, k,
                         got);
            s += k;
        } else {
            msg_make(buf, r->esz, w->idx, s);
            const char *what;
            if (op <= 3) {
                what = "sl_chan_send";
                st = sl_chan_send(r->ch, buf);
            } else if (op <= 5) {
                what = "sl_chan_try_send";
                st = sl_chan_try_send(r->ch, buf);
            } else {
                what = "sl_chan_send_for";
                st = sl_chan_send_for(r->ch, buf, k_timeouts[sl_test_rng_next(&rng) % N_TIMEOUTS]);
            }
            if (st != SL_OK) {
                rec_fail("producer %u: %s(seq %llu) on an open SL_LIST returned %s", w->idx, what,
                         ULL(s), sl_status_str(st));
                break;
            }
            s++;
        }
        if ((s & 127) == 0)
            atomic_store_explicit(&r->progress[w->idx].v, s, memory_order_relaxed);
        sl_test_maybe_stall(&rng, 4096);
    }
    atomic_store_explicit(&r->progress[w->idx].v, r->n, memory_order_relaxed);
    if (atomic_fetch_sub(&r->producers_left, 1) == 1)
        sl_chan_close(r->ch); /* the last producer closes, racing the receivers */
    return NULL;
}

static void *leo_consumer(void *arg)
{
    worker *w = arg;
    leo_run *r = w->run;
    unsigned c = w->idx - r->np;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN);
    unsigned char buf[1024];
    observer o;
    obs_init(&o, r->np, "consumer %u", c);
    sl_test_barrier_wait(&r->start);
    for (;;) {
        sl_status st = sl_chan_recv(r->ch, buf);
        if (st == SL_CLOSED)
            break;
        if (st != SL_OK) {
            rec_fail("%s: sl_chan_recv returned %s", o.who, sl_status_str(st));
            break;
        }
        uint32_t p;
        uint64_t s;
        if (!msg_read(buf, r->esz, r->np, r->n, &p, &s, o.who))
            continue;
        obs_see(&o, p, s, "received");
        if (bm_set(&r->seen, (uint64_t)p * r->n + s))
            rec_fail("%s: duplicate: producer %u seq %llu received twice", o.who, p, ULL(s));
        if ((o.count & 127) == 0)
            atomic_store_explicit(&r->progress[w->idx].v, o.count, memory_order_relaxed);
        sl_test_maybe_stall(&rng, 4096);
    }
    sl_status st = sl_chan_try_recv(r->ch, buf);
    if (st != SL_CLOSED)
        rec_fail("%s: sl_chan_try_recv after SL_CLOSED returned %s", o.who, sl_status_str(st));
    atomic_store_explicit(&r->progress[w->idx].v, o.count, memory_order_relaxed);
    atomic_fetch_add(&r->received, o.count);
    obs_free(&o);
    return NULL;
}

static void leo_drop(void *elem, void *ctx)
{
    (void)elem;
    leo_run *r = ctx;
    atomic_fetch_add(&r->dropped, 1);
}

static uint64_t leo_progress(void *arg)
{
    leo_run *r = arg;
    return sum_counters(r->progress, r->np + r->nc);
}

static void leo_diag(void *arg)
{
    leo_run *r = arg;
    fprintf(stderr, "  LIST %u/%u: len %zu, closed %d, producers left %u\n", r->np, r->nc,
            sl_chan_len(r->ch), (int)sl_chan_is_closed(r->ch), atomic_load(&r->producers_left));
    print_progress(r->progress, r->np, r->nc, "producer", "consumer");
}

static void leo_execute(const leo_cfg *cfg)
{
    leo_run *r = xaligned(sizeof *r);
    r->cfg = cfg;
    r->seed = begin_test(SUITE, "list_exactly_once[%s]", cfg->name);
    r->np = sl_test_env_uint("SL_STRESS_PRODUCERS", cfg->producers);
    r->nc = sl_test_env_uint("SL_STRESS_CONSUMERS", cfg->consumers);
    uint64_t total = sl_test_scaled(cfg->msgs, cfg->floor);
    r->n = total / r->np ? total / r->np : 1;
    r->esz = cfg->esz;
    bm_init(&r->seen, (uint64_t)r->np * r->n);
    sl_test_barrier_init(&r->start, r->np + r->nc);
    atomic_init(&r->producers_left, r->np);
    atomic_init(&r->received, 0);
    atomic_init(&r->dropped, 0);
    r->progress = xaligned((r->np + r->nc) * sizeof *r->progress);
    sl_status st = new_chan(&r->ch, SL_LIST, cfg->esz, 0, leo_drop, r, false, 0);
    CHECK_MSG(st == SL_OK, "channel creation returned %s", sl_status_str(st));

    const team_role roles[] = {{r->np, leo_producer, false}, {r->nc, leo_consumer, false}};
    team t;
    team_start(&t, r, roles, N_OF(roles), NULL, leo_progress, leo_diag);
    double secs = team_end(&t);

    ASSERT_CLEAN();
    uint64_t want = (uint64_t)r->np * r->n, got = atomic_load(&r->received);
    check_none_lost(&r->seen, r->n, got, want);
    CHECK_MSG(got == want, "received %llu of %llu", ULL(got), ULL(want));
    CHECK_MSG(sl_chan_len(r->ch) == 0, "len %zu after everything was received",
              sl_chan_len(r->ch));
    sl_chan_free(r->ch);
    CHECK_MSG(atomic_load(&r->dropped) == 0, "sl_chan_free dropped %llu from a drained channel",
              ULL(atomic_load(&r->dropped)));
    fprintf(stderr, "[%s] %u/%u, %llu messages of %zu B in %.3f s\n", g_test, r->np, r->nc,
            ULL(want), r->esz, secs);
    sl_test_barrier_destroy(&r->start);
    bm_free(&r->seen);
    free(r->progress);
    free(r);
}

static const leo_cfg leo_cfgs[] = {
    {"8/8 16B", 8, 8, 16, 2000000, 50000},
    {"8/8 1024B (32-slot segments)", 8, 8, 1024, 300000, 10000},
    {"8/1 64B", 8, 1, 64, 600000, 20000},
    {"1/8 16B", 1, 8, 16, 600000, 20000},
    {"2/2 40B", 2, 2, 40, 600000, 20000},
    {"2/2 8B volume", 2, 2, 8, 12000000, 100000},
};

START_TEST(list_exactly_once) { leo_execute(&leo_cfgs[_i]); }
END_TEST

/* =========================================================================
 * (a2) SL_LIST: mixed calls, a close in the middle, drops at free
 * ========================================================================= */

typedef struct lmx_cfg {
    const char *name;
    unsigned producers, consumers;
    size_t esz;
    uint64_t msgs, floor; /* per round, in all */
    unsigned rounds, rounds_floor;
} lmx_cfg;

static void *lmx_producer(void *arg)
{
    worker *w = arg;
    mc_round *r = w->run;
    unsigned p = w->idx;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN ^ r->round);
    unsigned char buf[ESZ_MAX], batch[BATCH_MAX * ESZ_MAX];
    uint64_t s = 0, ok = 0;
    bool closed = false;
    sl_test_barrier_wait(&r->start);
    while (s < r->n && !closed && !failed()) {
        unsigned op = (unsigned)(sl_test_rng_next(&rng) % 8);
        if (op <= 5) {
            msg_make(buf, r->esz, p, s);
            sl_status st;
            const char *what;
            if (op <= 2) {
                what = "sl_chan_send";
                st = sl_chan_send(r->ch, buf);
            } else if (op <= 4) {
                what = "sl_chan_try_send";
                st = sl_chan_try_send(r->ch, buf);
            } else {
                what = "sl_chan_send_for";
                st = sl_chan_send_for(r->ch, buf, k_timeouts[sl_test_rng_next(&rng) % N_TIMEOUTS]);
            }
            if (st == SL_OK) {
                mc_mark_sent(r, p, s);
                s++;
                ok++;
            } else if (st == SL_CLOSED) {
                closed = true;
            } else {
                /* SL_LIST never refuses for room or time. */
                rec_fail("producer %u: %s on SL_LIST returned %s", p, what, sl_status_str(st));
                closed = true;
            }
        } else {
            size_t k = msg_batch(batch, r->esz, p, s, r->n - s, BATCH_MAX, &rng);
            size_t got = sl_chan_try_send_n(r->ch, batch, k);
            if (got > k) {
                rec_fail("producer %u: sl_chan_try_send_n(%zu) returned %zu", p, k, got);
                got = k;
            }
            for (size_t i = 0; i < got; i++)
                mc_mark_sent(r, p, s + i);
            s += got;
            ok += got;
            if (got < k) {
                if (got != 0)
                    rec_fail("producer %u: sl_chan_try_send_n(%zu) on SL_LIST sent only %zu", p, k,
                             got);
                if (!sl_chan_is_closed(r->ch))
                    rec_fail("producer %u: sl_chan_try_send_n(%zu) on an open SL_LIST sent %zu",
                             p, k, got);
                closed = true;
            }
        }
        atomic_store_explicit(&r->progress[p].v, s, memory_order_relaxed);
        sl_test_maybe_stall(&rng, 1024);
    }
    if (closed && s < r->n) {
        msg_make(buf, r->esz, p, s);
        sl_status st = sl_chan_send(r->ch, buf);
        if (st == SL_OK) {
            rec_fail("producer %u: sl_chan_send after SL_CLOSED returned SL_OK", p);
            mc_mark_sent(r, p, s);
            ok++;
        } else if (st != SL_CLOSED) {
            rec_fail("producer %u: sl_chan_send after the close returned %s", p,
                     sl_status_str(st));
        }
    }
    r->sent_ok[p] = ok;
    atomic_store_explicit(&r->progress[p].v, r->n, memory_order_relaxed);
    atomic_fetch_add(&r->producers_done, 1);
    return NULL;
}

static void *lmx_consumer(void *arg)
{
    worker *w = arg;
    mc_round *r = w->run;
    unsigned c = w->idx - r->np;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN ^ r->round);
    unsigned char buf[ESZ_MAX], batch[BATCH_MAX * ESZ_MAX];
    char who[64];
    snprintf(who, sizeof who, "consumer %u", c);
    bool done = false, saw_closed = false;
    uint64_t got = 0;
    /* A consumer that quits early leaves after a random number of messages
     * once the channel is closed (the rest is for sl_chan_free). */
    uint64_t quit_after = r->quit_early[c] ? sl_test_rng_next(&rng) % (r->n + 1) : NONE;
    sl_test_barrier_wait(&r->start);
    while (!done && !failed()) {
        if (got >= quit_after && sl_chan_is_closed(r->ch))
            break;
        unsigned op = (unsigned)(sl_test_rng_next(&rng) % 8);
        sl_status st;
        if (op <= 2) {
            st = sl_chan_recv(r->ch, buf);
        } else if (op <= 4) {
            st = sl_chan_try_recv(r->ch, buf);
        } else if (op == 5) {
            uint64_t timeout = k_timeouts[sl_test_rng_next(&rng) % N_TIMEOUTS];
            uint64_t t0 = sl_test_now_ns();
            st = sl_chan_recv_for(r->ch, buf, timeout);
            if (st == SL_TIMEDOUT && sl_test_now_ns() - t0 < timeout)
                rec_fail("%s: sl_chan_recv_for(%llu ns) timed out early", who, ULL(timeout));
        } else {
            size_t k = 1 + (size_t)(sl_test_rng_next(&rng) % BATCH_MAX);
            size_t n = sl_chan_try_recv_n(r->ch, batch, k);
            if (n > k) {
                rec_fail("%s: sl_chan_try_recv_n(%zu) returned %zu", who, k, n);
                n = k;
            }
            for (size_t i = 0; i < n; i++)
                mc_take(r, c, batch + i * r->esz, who, false);
            got += n;
            st = n ? SL_EMPTY : sl_chan_try_recv(r->ch, buf);
            if (n)
                goto next; /* nothing more to look at */
        }
        if (st == SL_OK) {
            mc_take(r, c, buf, who, false);
            got++;
        } else if (st == SL_CLOSED) {
            done = saw_closed = true;
        } else if (st == SL_EMPTY || st == SL_TIMEDOUT) {
            if (st == SL_EMPTY)
                sched_yield();
        } else {
            rec_fail("%s: a receive returned %s", who, sl_status_str(st));
            done = true;
        }
    next:
        atomic_store_explicit(&r->progress[w->idx].v, got, memory_order_relaxed);
        sl_test_maybe_stall(&rng, 1024);
    }
    if (saw_closed) {
        atomic_fetch_add(&r->closed_seen, 1);
        /* Closed and drained is final: a message now would come from a send
         * that returned SL_OK after this receiver was told SL_CLOSED (close is
         * linearizable with sends, docs/guarantees.md). */
        for (int k = 0; k < 3; k++) {
            sl_status st = k == 0 ? sl_chan_try_recv(r->ch, buf)
                         : k == 1 ? sl_chan_recv_for(r->ch, buf, 0)
                                  : sl_chan_recv(r->ch, buf);
            if (st == SL_OK) {
                rec_fail("%s: a receive after SL_CLOSED returned a message", who);
                mc_take(r, c, buf, who, true);
                got++;
                k--;
            } else if (st != SL_CLOSED) {
                rec_fail("%s: receive form %d after SL_CLOSED returned %s", who, k,
                         sl_status_str(st));
            }
        }
    }
    atomic_store_explicit(&r->progress[w->idx].v, got, memory_order_relaxed);
    return NULL;
}

static void *lmx_closer(void *arg)
{
    mc_close_at_target(((worker *)arg)->run, true);
    return NULL;
}

static void lmx_round(const lmx_cfg *cfg, uint64_t seed, unsigned round, unsigned np, unsigned nc,
                      uint64_t n, uint64_t *late_total, uint64_t *drops_total)
{
    mc_round *r = mc_begin(seed, round, np, nc, n, cfg->esz);
    r->flavor = SL_LIST;
    uint64_t total = (uint64_t)np * n;
    sl_status st = new_chan(&r->ch, SL_LIST, cfg->esz, 0, mc_drop, r, false, 0);
    CHECK_MSG(st == SL_OK, "channel creation returned %s", sl_status_str(st));

    const team_role roles[] = {
        {np, lmx_producer, false}, {nc, lmx_consumer, false}, {1, lmx_closer, false}};
    team t;
    team_start(&t, r, roles, N_OF(roles), NULL, mc_progress, mc_diag);
    team_end(&t);
    ASSERT_CLEAN();

    /* The newest seq received per producer, for the drop function's check. */
    fold_newest(r->max_recv, r->recv_last, nc, np);
    size_t left = sl_chan_len(r->ch);
    sl_chan_free(r->ch); /* drops what is left, on this thread */
    ASSERT_CLEAN();

    uint64_t recv_all = 0, drop_all = 0;
    for (unsigned p = 0; p < np; p++) {
        uint64_t rc = mc_received(r, p);
        CHECK_MSG(r->sent_ok[p] == rc + r->drop_cnt[p],
                  "round %u (%s): producer %u: %llu sent, %llu received + %llu dropped", round,
                  k_mode_names[r->mode], p, ULL(r->sent_ok[p]), ULL(rc), ULL(r->drop_cnt[p]));
        recv_all += rc;
        drop_all += r->drop_cnt[p];
    }
    for (uint64_t i = 0; i < total; i++) {
        bool se = bm_get(&r->sent, i), rv = bm_get(&r->recv, i), dr = bm_get(&r->drop, i);
        CHECK_MSG(se == (rv || dr) && !(rv && dr),
                  "round %u: producer %llu seq %llu: sent %d received %d dropped %d", round,
                  ULL(i / n), ULL(i % n), se, rv, dr);
    }
    CHECK_MSG(left == drop_all, "round %u: len %zu before free, %llu dropped", round, left,
              ULL(drop_all));
    sl_test_account("messages received or dropped exactly once, racing close",
                    recv_all + drop_all);
    /* Close is linearizable with sends: once any receiver has been told
     * SL_CLOSED, every message of every send that returned SL_OK has been
     * received — none is left for sl_chan_free. */
    unsigned closed_seen = atomic_load(&r->closed_seen);
    CHECK_MSG(closed_seen == 0 || drop_all == 0,
              "round %u (%s): %u consumer(s) saw SL_CLOSED, yet %llu successfully sent messages "
              "were left in the channel (%llu of them sent before the close began)",
              round, k_mode_names[r->mode], closed_seen, ULL(drop_all), ULL(r->drops_pre));
    if (r->mode == MODE_DRAIN)
        CHECK_MSG(closed_seen == nc, "round %u: %u of %u draining consumers saw SL_CLOSED", round,
                  closed_seen, nc);
    *late_total += atomic_load(&r->late_after_closed);
    *drops_total += drop_all;
    (void)recv_all;
    mc_end(r);
}

static void lmx_execute(const lmx_cfg *cfg)
{
    uint64_t seed = begin_test(SUITE, "list_mixed_close[%s]", cfg->name);
    unsigned np = sl_test_env_uint("SL_STRESS_PRODUCERS", cfg->producers);
    unsigned nc = sl_test_env_uint("SL_STRESS_CONSUMERS", cfg->consumers);
    uint64_t total = sl_test_scaled(cfg->msgs, cfg->floor);
    uint64_t n = total / np ? total / np : 1;
    unsigned rounds = (unsigned)sl_test_scaled(cfg->rounds, cfg->rounds_floor);
    uint64_t late = 0, drops = 0;
    uint64_t t0 = sl_test_now_ns();
    for (unsigned round = 0; round < rounds; round++)
        lmx_round(cfg, seed, round, np, nc, n, &late, &drops);
    fprintf(stderr, "[%s] %u rounds of %u/%u x %llu in %.3f s; %llu dropped at free, %llu "
            "received after a consumer saw SL_CLOSED\n",
            g_test, rounds, np, nc, ULL(n), (double)(sl_test_now_ns() - t0) / 1e9, ULL(drops),
            ULL(late));
}

static const lmx_cfg lmx_cfgs[] = {
    {"8/8 16B", 8, 8, 16, 200000, 4000, 16, 3},
    {"4/4 64B", 4, 4, 64, 200000, 4000, 16, 3},
    {"3/1 24B", 3, 1, 24, 100000, 3000, 12, 3},
};

START_TEST(list_mixed_close) { lmx_execute(&lmx_cfgs[_i]); }
END_TEST

/* ---- fates: each message is received, evicted to a sender or dropped ---- */

enum { FATE_RECV, FATE_EVICTED, FATE_DROPPED, FATE_N };
static const char *const k_fates[FATE_N] = {"received", "evicted", "dropped"};

/* One bitmap per fate over (producer, seq), n seqs per producer. */
typedef struct fates {
    bitmap b[FATE_N];
    uint64_t n;
} fates;

static void fates_init(fates *f, uint64_t all, uint64_t n)
{
    for (int k = 0; k < FATE_N; k++)
        bm_init(&f->b[k], all);
    f->n = n;
}

static void fates_free(fates *f)
{
    for (int k = 0; k < FATE_N; k++)
        bm_free(&f->b[k]);
}

/* How many fates message i met: exactly one once the books are closed. */
static int fates_of(const fates *f, uint64_t i)
{
    return bm_get(&f->b[FATE_RECV], i) + bm_get(&f->b[FATE_EVICTED], i) +
           bm_get(&f->b[FATE_DROPPED], i);
}

/* (p, s) met fate k: it must not have met that one, or another, before. */
static void fate_record(fates *f, int k, uint32_t p, uint64_t s, const char *who)
{
    uint64_t i = (uint64_t)p * f->n + s;
    if (bm_set(&f->b[k], i))
        rec_fail("%s: producer %u seq %llu %s twice", who, p, ULL(s), k_fates[k]);
    if (fates_of(f, i) > 1)
        rec_fail("%s: producer %u seq %llu %s, but it was already received/evicted/dropped "
                 "(received %d evicted %d dropped %d)",
                 who, p, ULL(s), k_fates[k], bm_get(&f->b[FATE_RECV], i),
                 bm_get(&f->b[FATE_EVICTED], i), bm_get(&f->b[FATE_DROPPED], i));
}

/* =========================================================================
 * (b) SL_RING flood: received, evicted or dropped — exactly one of them
 * ========================================================================= */

typedef struct ring_cfg {
    const char *name;
    size_t cap, esz;
    unsigned plain, evictors, receivers;
    uint64_t msgs, floor; /* all senders together */
    unsigned yield_one_in; /* senders yield with probability 1/this (0: never),
                              so that receivers win a fair share of messages */
    bool abandon;          /* receivers leave once the channel is closed, without
                              draining: sl_chan_free drops the rest */
} ring_cfg;

typedef struct ring_run {
    const ring_cfg *cfg;
    sl_chan *ch;
    unsigned np, nc; /* senders (plain first, then evictors), receivers */
    uint64_t n;      /* per sender */
    size_t esz, cap;
    uint64_t seed;
    fates f;
    bitmap at_free; /* dropped by sl_chan_free */
    sl_test_barrier start;
    atomic_uint senders_left;
    atomic_uint_fast64_t n_recv, n_evicted, n_dropped_send, n_dropped_free;
    atomic_uint_fast64_t evicted_returns; /* SL_EVICTED returned to any sender */
    bool freeing;
    pad_counter *progress;
} ring_run;

static void ring_drop(void *elem, void *ctx)
{
    ring_run *r = ctx;
    observer *o = tl_drop_obs;
    const char *who = o ? o->who : "drop function";
    uint32_t p;
    uint64_t s;
    if (!o) {
        rec_fail("the drop function ran on a thread that neither sends nor frees");
        return;
    }
    if (!msg_read(elem, r->esz, r->np, r->n, &p, &s, who))
        return;
    obs_see(o, p, s, "dropped");
    fate_record(&r->f, FATE_DROPPED, p, s, who);
    if (r->freeing)
        bm_set(&r->at_free, (uint64_t)p * r->n + s);
    atomic_fetch_add_explicit(r->freeing ? &r->n_dropped_free : &r->n_dropped_send, 1,
                              memory_order_relaxed);
}

static void *ring_sender(void *arg)
{
    worker *w = arg;
    ring_run *r = w->run;
    unsigned p = w->idx;
    bool evictor = p >= r->cfg->plain;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN);
    unsigned char buf[ESZ_MAX], ev[ESZ_MAX], batch[BATCH_MAX * ESZ_MAX];
    observer drops, evs;
    obs_init(&drops, r->np, "sender %u (drop function)", p);
    obs_init(&evs, r->np, "sender %u (send_evict)", p);
    tl_drop_obs = &drops;
    sl_test_barrier_wait(&r->start);
    for (uint64_t s = 0; s < r->n && !failed();) {
        unsigned op = (unsigned)(sl_test_rng_next(&rng) % 8);
        uint64_t d0 = drops.count;
        if (evictor && op <= 5) {
            msg_make(buf, r->esz, p, s);
            sl_status st = sl_chan_send_evict(r->ch, buf, ev);
            if (st == SL_EVICTED) {
                uint32_t q;
                uint64_t t;
                if (msg_read(ev, r->esz, r->np, r->n, &q, &t, evs.who)) {
                    obs_see(&evs, q, t, "evicted");
                    fate_record(&r->f, FATE_EVICTED, q, t, evs.who);
                }
                atomic_fetch_add_explicit(&r->n_evicted, 1, memory_order_relaxed);
            } else if (st != SL_OK) {
                rec_fail("sender %u: sl_chan_send_evict returned %s", p, sl_status_str(st));
            }
            if (drops.count != d0)
                rec_fail("sender %u: sl_chan_send_evict called the drop function", p);
            s++;
        } else if (op == 7) {
            size_t k = msg_batch(batch, r->esz, p, s, r->n - s, BATCH_MAX, &rng);
            size_t got = sl_chan_try_send_n(r->ch, batch, k);
            if (got != k)
                rec_fail("sender %u: sl_chan_try_send_n(%zu) on SL_RING sent %zu", p, k, got);
            if (drops.count - d0 > k)
                rec_fail("sender %u: sl_chan_try_send_n(%zu) dropped %llu", p, k,
                         ULL(drops.count - d0));
            s += k;
        } else {
            msg_make(buf, r->esz, p, s);
            sl_status st;
            const char *what;
            if (op <= 2) {
                what = "sl_chan_send";
                st = sl_chan_send(r->ch, buf);
            } else if (op <= 4) {
                what = "sl_chan_try_send";
                st = sl_chan_try_send(r->ch, buf);
            } else {
                what = "sl_chan_send_for";
                st = sl_chan_send_for(r->ch, buf, k_timeouts[sl_test_rng_next(&rng) % N_TIMEOUTS]);
            }
            uint64_t dd = drops.count - d0;
            if (st == SL_EVICTED) {
                atomic_fetch_add_explicit(&r->evicted_returns, 1, memory_order_relaxed);
                if (dd != 1)
                    rec_fail("sender %u: %s returned SL_EVICTED, the drop function ran %llu times "
                             "in the call",
                             p, what, ULL(dd));
            } else if (st == SL_OK) {
                if (dd != 0)
                    rec_fail("sender %u: %s returned SL_OK, but the drop function ran %llu times",
                             p, what, ULL(dd));
            } else {
                rec_fail("sender %u: %s on SL_RING returned %s", p, what, sl_status_str(st));
            }
            s++;
        }
        if ((s & 63) == 0)
            atomic_store_explicit(&r->progress[p].v, s, memory_order_relaxed);
        if (r->cfg->yield_one_in && sl_test_rng_next(&rng) % r->cfg->yield_one_in == 0)
            sched_yield();
        sl_test_maybe_stall(&rng, 2048);
    }
    atomic_store_explicit(&r->progress[p].v, r->n, memory_order_relaxed);
    tl_drop_obs = NULL;
    if (atomic_fetch_sub(&r->senders_left, 1) == 1)
        sl_chan_close(r->ch);
    obs_free(&drops);
    obs_free(&evs);
    return NULL;
}

static void *ring_receiver(void *arg)
{
    worker *w = arg;
    ring_run *r = w->run;
    unsigned c = w->idx - r->np;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN);
    unsigned char buf[ESZ_MAX], batch[BATCH_MAX * ESZ_MAX];
    observer o;
    obs_init(&o, r->np, "receiver %u", c);
    sl_test_barrier_wait(&r->start);
    bool done = false;
    while (!done && !failed()) {
        if (r->cfg->abandon && sl_chan_is_closed(r->ch))
            break;
        unsigned op = (unsigned)(sl_test_rng_next(&rng) % 8);
        size_t got = 0;
        sl_status st;
        if (op <= 2) {
            st = sl_chan_recv(r->ch, buf);
        } else if (op <= 4) {
            st = sl_chan_try_recv(r->ch, buf);
        } else if (op == 5) {
            st = sl_chan_recv_for(r->ch, buf, k_timeouts[sl_test_rng_next(&rng) % N_TIMEOUTS]);
        } else {
            size_t k = 1 + (size_t)(sl_test_rng_next(&rng) % BATCH_MAX);
            got = sl_chan_try_recv_n(r->ch, batch, k);
            if (got > k) {
                rec_fail("%s: sl_chan_try_recv_n(%zu) returned %zu", o.who, k, got);
                got = k;
            }
            st = got ? SL_EMPTY : sl_chan_try_recv(r->ch, buf);
        }
        for (size_t i = 0; i < got + (st == SL_OK); i++) {
            const unsigned char *m = i < got ? batch + i * r->esz : buf;
            uint32_t p;
            uint64_t s;
            if (!msg_read(m, r->esz, r->np, r->n, &p, &s, o.who))
                continue;
            obs_see(&o, p, s, "received");
            fate_record(&r->f, FATE_RECV, p, s, o.who);
        }
        if (st == SL_CLOSED)
            done = true;
        else if (st == SL_EMPTY && got == 0)
            sched_yield();
        else if (st != SL_OK && st != SL_EMPTY && st != SL_TIMEDOUT)
            rec_fail("%s: a receive returned %s", o.who, sl_status_str(st));
        if ((o.count & 63) == 0) {
            size_t len = sl_chan_len(r->ch);
            if (len > r->cap)
                rec_fail("sl_chan_len = %zu above the capacity %zu", len, r->cap);
        }
        atomic_store_explicit(&r->progress[w->idx].v, o.count, memory_order_relaxed);
        sl_test_maybe_stall(&rng, 2048);
    }
    atomic_fetch_add(&r->n_recv, o.count);
    obs_free(&o);
    return NULL;
}

static uint64_t ring_progress(void *arg)
{
    ring_run *r = arg;
    return sum_counters(r->progress, r->np + r->nc);
}

static void ring_diag(void *arg)
{
    ring_run *r = arg;
    fprintf(stderr, "  RING cap %zu: len %zu, closed %d, senders left %u\n", r->cap,
            sl_chan_len(r->ch), (int)sl_chan_is_closed(r->ch), atomic_load(&r->senders_left));
    print_progress(r->progress, r->np, r->nc, "sender", "receiver");
}

static void ring_execute(const ring_cfg *cfg)
{
    ring_run *r = xaligned(sizeof *r);
    r->cfg = cfg;
    r->seed = begin_test(SUITE, "ring_flood[%s]", cfg->name);
    r->np = cfg->plain + cfg->evictors;
    r->nc = cfg->receivers;
    uint64_t total = sl_test_scaled(cfg->msgs, cfg->floor);
    r->n = total / r->np ? total / r->np : 1;
    r->esz = cfg->esz;
    r->cap = cfg->cap;
    uint64_t all = (uint64_t)r->np * r->n;
    fates_init(&r->f, all, r->n);
    bm_init(&r->at_free, all);
    sl_test_barrier_init(&r->start, r->np + r->nc);
    atomic_init(&r->senders_left, r->np);
    r->progress = xaligned((r->np + r->nc) * sizeof *r->progress);
    sl_status st = new_chan(&r->ch, SL_RING, cfg->esz, cfg->cap, ring_drop, r, false, 0);
    CHECK_MSG(st == SL_OK, "channel creation returned %s", sl_status_str(st));
    CHECK_MSG(sl_chan_cap(r->ch) == cfg->cap, "cap %zu", sl_chan_cap(r->ch));

    const team_role roles[] = {{r->np, ring_sender, false}, {r->nc, ring_receiver, false}};
    team t;
    team_start(&t, r, roles, N_OF(roles), NULL, ring_progress, ring_diag);
    double secs = team_end(&t);
    ASSERT_CLEAN();

    size_t left = sl_chan_len(r->ch);
    observer main_obs;
    obs_init(&main_obs, r->np, "sl_chan_free");
    tl_drop_obs = &main_obs;
    r->freeing = true;
    sl_chan_free(r->ch);
    tl_drop_obs = NULL;
    obs_free(&main_obs);
    ASSERT_CLEAN();

    uint64_t nr = atomic_load(&r->n_recv), ne = atomic_load(&r->n_evicted);
    uint64_t nds = atomic_load(&r->n_dropped_send), ndf = atomic_load(&r->n_dropped_free);
    for (uint64_t i = 0; i < all; i++) {
        CHECK_MSG(fates_of(&r->f, i) == 1,
                  "producer %llu seq %llu: received %d evicted %d dropped %d (expected exactly "
                  "one); totals: %llu received, %llu evicted, %llu dropped by sends, %llu at free",
                  ULL(i / r->n), ULL(i % r->n), bm_get(&r->f.b[FATE_RECV], i),
                  bm_get(&r->f.b[FATE_EVICTED], i), bm_get(&r->f.b[FATE_DROPPED], i), ULL(nr),
                  ULL(ne), ULL(nds), ULL(ndf));
    }
    CHECK_MSG(nr + ne + nds + ndf == all, "%llu + %llu + %llu + %llu != %llu", ULL(nr), ULL(ne),
              ULL(nds), ULL(ndf), ULL(all));
    sl_test_account("messages with exactly one fate (received, displaced, dropped)", all);
    if (cfg->abandon) {
        /* What free dropped is what len said was left, at most cap, and for
         * each producer the newest of its messages (FIFO). */
        CHECK_MSG(left == ndf && left <= r->cap,
                  "len %zu before free, %llu dropped at free, cap %zu", left, ULL(ndf), r->cap);
        for (unsigned p = 0; p < r->np; p++) {
            bool in = false;
            for (uint64_t q = 0; q < r->n; q++) {
                bool f = bm_get(&r->at_free, (uint64_t)p * r->n + q);
                CHECK_MSG(!in || f, "producer %u: seq %llu was left for free, but the later seq "
                          "%llu was not", p, ULL(q - 1), ULL(q));
                in = in || f;
            }
        }
    } else {
        /* Receivers drained to SL_CLOSED after the last send: nothing is left. */
        CHECK_MSG(left == 0 && ndf == 0, "len %zu and %llu dropped at free after every receiver "
                  "saw SL_CLOSED", left, ULL(ndf));
    }
    fprintf(stderr, "[%s] %u senders (%u evicting) / %u receivers, %llu messages: %llu received, "
            "%llu evicted to senders, %llu dropped by sends, %llu at free, in %.3f s\n",
            g_test, r->np, cfg->evictors, r->nc, ULL(all), ULL(nr), ULL(ne), ULL(nds), ULL(ndf),
            secs);
    sl_test_barrier_destroy(&r->start);
    fates_free(&r->f);
    bm_free(&r->at_free);
    free(r->progress);
    free(r);
}

static const ring_cfg ring_cfgs[] = {
    {"cap 1, 4+2 senders, 3 receivers, 8B", 1, 8, 4, 2, 3, 600000, 15000, 0, false},
    {"cap 1, 4+2 senders, 3 receivers, senders yield", 1, 16, 4, 2, 3, 200000, 10000, 1, false},
    {"cap 2, 4+2 senders, 3 receivers, 40B", 2, 40, 4, 2, 3, 600000, 15000, 0, false},
    {"cap 2, 4+2 senders, 3 receivers, senders yield", 2, 16, 4, 2, 3, 200000, 10000, 2, false},
    {"cap 4, 4+2 senders, 3 receivers, 8B", 4, 8, 4, 2, 3, 600000, 15000, 0, false},
    {"cap 4, 4+2 senders, 3 receivers, senders yield", 4, 24, 4, 2, 3, 200000, 10000, 1, false},
    {"cap 64, 3+3 senders, 2 receivers, 64B", 64, 64, 3, 3, 2, 600000, 15000, 0, false},
    {"cap 1, 0+4 senders (mostly send_evict), 2 receivers", 1, 24, 0, 4, 2, 300000, 10000, 0,
     false},
    {"cap 4, 4+2 senders, 3 receivers leave at close, 8B", 4, 8, 4, 2, 3, 200000, 10000, 0, true},
    {"cap 64, 4+2 senders, 2 receivers leave at close", 64, 32, 4, 2, 2, 200000, 10000, 2, true},
    /* More operations in progress than SL_RING_SPARE: a push of a message
     * over 8 bytes may wait, never forever; 8-byte ones never wait. */
    {"cap 1, 140+20 senders, 8 receivers", 1, 16, 140, 20, 8, 320000, 32000, 0, false},
    {"cap 1, 140+20 senders, 8 receivers, 8B", 1, 8, 140, 20, 8, 320000, 32000, 0, false},
};

START_TEST(ring_flood) { ring_execute(&ring_cfgs[_i]); }
END_TEST

/* =========================================================================
 * (c) select stress
 * ========================================================================= */

#define SEL_MAXP 8
#define SEL_MAXC 6

typedef struct sel_cfg {
    const char *name;
    unsigned producers;
    sl_flavor flavor[SEL_MAXP];
    size_t cap[SEL_MAXP];
    bool select_send[SEL_MAXP]; /* the producer sends through sl_select */
    unsigned selectors;
    int plain_ch;               /* channel a plain consumer also receives from, or -1 */
    uint64_t msgs, floor;       /* all producers together */
    bool biased;                /* every select is sl_select_biased */
    bool batch;                 /* the plain consumer receives with sl_chan_recv_n_for */
} sel_cfg;

typedef struct sel_run {
    const sel_cfg *cfg;
    sl_chan *ch[SEL_MAXP];
    unsigned np, nsel, nc; /* nc = nsel + plain */
    uint64_t n;
    size_t esz;
    uint64_t seed;
    fates f;
    sl_test_barrier start;
    atomic_uint_fast64_t n_recv, n_dropped, n_evicted, timeouts, closed_cases;
    bool freeing;
    atomic_uint_fast64_t n_dropped_free;
    pad_counter *progress; /* np + nc */
} sel_run;

static void sel_drop(void *elem, void *ctx)
{
    sel_run *r = ctx;
    observer *o = tl_drop_obs;
    uint32_t p;
    uint64_t s;
    if (!o) {
        rec_fail("the drop function ran on an unexpected thread");
        return;
    }
    if (!msg_read(elem, r->esz, r->np, r->n, &p, &s, o->who))
        return;
    obs_see(o, p, s, "dropped");
    fate_record(&r->f, FATE_DROPPED, p, s, o->who);
    atomic_fetch_add_explicit(r->freeing ? &r->n_dropped_free : &r->n_dropped, 1,
                              memory_order_relaxed);
}

static void *sel_producer(void *arg)
{
    worker *w = arg;
    sel_run *r = w->run;
    unsigned p = w->idx;
    sl_chan *ch = r->ch[p];
    sl_flavor fl = r->cfg->flavor[p];
    bool via_select = r->cfg->select_send[p];
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN);
    unsigned char buf[ESZ_MAX], ev[ESZ_MAX];
    observer drops, evs;
    obs_init(&drops, r->np, "producer %u (drop function)", p);
    obs_init(&evs, r->np, "producer %u (send_evict)", p);
    tl_drop_obs = &drops;
    sl_test_barrier_wait(&r->start);
    for (uint64_t s = 0; s < r->n && !failed();) {
        msg_make(buf, r->esz, p, s);
        unsigned op = (unsigned)(sl_test_rng_next(&rng) % 4);
        sl_status st;
        if (via_select) {
            sl_select_case cs[2] = {{NULL, SL_SEL_RECV, NULL}, {ch, SL_SEL_SEND, buf}};
            uint64_t timeout =
                op == 3 ? SL_FOREVER : k_timeouts[sl_test_rng_next(&rng) % N_TIMEOUTS];
            size_t idx = 99;
            uint64_t t0 = sl_test_now_ns();
            st = (r->cfg->biased ? sl_select_biased : sl_select)(cs, 2, timeout, &idx);
            if (st == SL_TIMEDOUT) {
                if (timeout != 0 && sl_test_now_ns() - t0 < timeout)
                    rec_fail("producer %u: sl_select(%llu ns) timed out early", p, ULL(timeout));
                continue; /* the message is still ours: try again */
            }
            if (idx != 1)
                rec_fail("producer %u: sl_select chose case %zu (a nil case)", p, idx);
        } else if (fl == SL_RING && op == 0) {
            st = sl_chan_send_evict(ch, buf, ev);
            if (st == SL_EVICTED) {
                uint32_t q;
                uint64_t t;
                if (msg_read(ev, r->esz, r->np, r->n, &q, &t, evs.who)) {
                    obs_see(&evs, q, t, "evicted");
                    fate_record(&r->f, FATE_EVICTED, q, t, evs.who);
                    atomic_fetch_add_explicit(&r->n_evicted, 1, memory_order_relaxed);
                }
                st = SL_OK;
            }
        } else if (op == 1) {
            st = sl_chan_try_send(ch, buf);
            if (st == SL_FULL) {
                sched_yield();
                continue;
            }
        } else if (op == 2) {
            st = sl_chan_send_for(ch, buf, k_timeouts[sl_test_rng_next(&rng) % N_TIMEOUTS]);
            if (st == SL_TIMEDOUT)
                continue;
        } else {
            st = sl_chan_send(ch, buf);
        }
        if (st != SL_OK && !(st == SL_EVICTED && fl == SL_RING))
            rec_fail("producer %u (%s): a send returned %s", p, sl_test_flavor_name(fl),
                     sl_status_str(st));
        s++;
        if ((s & 63) == 0)
            atomic_store_explicit(&r->progress[p].v, s, memory_order_relaxed);
        sl_test_maybe_stall(&rng, 2048);
    }
    atomic_store_explicit(&r->progress[p].v, r->n, memory_order_relaxed);
    tl_drop_obs = NULL;
    sl_chan_close(ch);
    obs_free(&drops);
    obs_free(&evs);
    return NULL;
}

static void sel_take(sel_run *r, observer *o, const unsigned char *m)
{
    uint32_t p;
    uint64_t s;
    if (!msg_read(m, r->esz, r->np, r->n, &p, &s, o->who))
        return;
    obs_see(o, p, s, "received");
    fate_record(&r->f, FATE_RECV, p, s, o->who);
}

static void *sel_consumer(void *arg)
{
    worker *w = arg;
    sel_run *r = w->run;
    unsigned c = w->idx - r->np;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN);
    observer o;
    obs_init(&o, r->np, "selector %u", c);
    unsigned char bufs[SEL_MAXP][ESZ_MAX];
    sl_select_case cs[SEL_MAXP];
    unsigned open = 0;
    for (unsigned i = 0; i < r->np; i++) {
        /* An SL_SPSC channel has one receiver thread: selector 0. */
        bool mine = r->cfg->flavor[i] != SL_SPSC || c == 0;
        cs[i] = (sl_select_case){mine ? r->ch[i] : NULL, SL_SEL_RECV, bufs[i]};
        open += mine;
    }
    sl_test_barrier_wait(&r->start);
    while (open > 0 && !failed()) {
        unsigned pick = (unsigned)(sl_test_rng_next(&rng) % 8);
        uint64_t timeout = pick >= 5 ? SL_FOREVER : k_timeouts[pick];
        size_t idx = 99;
        uint64_t t0 = sl_test_now_ns();
        sl_status st = (r->cfg->biased ? sl_select_biased : sl_select)(cs, r->np, timeout, &idx);
        if (st == SL_TIMEDOUT) {
            if (timeout != 0 && sl_test_now_ns() - t0 < timeout)
                rec_fail("%s: sl_select(%llu ns) timed out early", o.who, ULL(timeout));
            atomic_fetch_add_explicit(&r->timeouts, 1, memory_order_relaxed);
            continue;
        }
        if (idx >= r->np || !cs[idx].ch) {
            rec_fail("%s: sl_select returned %s with index %zu (nil or out of range)", o.who,
                     sl_status_str(st), idx);
            break;
        }
        if (st == SL_OK) {
            sel_take(r, &o, bufs[idx]);
        } else if (st == SL_CLOSED) {
            cs[idx].ch = NULL; /* closed and drained: a nil case from now on */
            open--;
            atomic_fetch_add_explicit(&r->closed_cases, 1, memory_order_relaxed);
        } else {
            rec_fail("%s: sl_select returned %s", o.who, sl_status_str(st));
            break;
        }
        atomic_store_explicit(&r->progress[w->idx].v, o.count, memory_order_relaxed);
        sl_test_maybe_stall(&rng, 2048);
    }
    atomic_fetch_add(&r->n_recv, o.count);
    atomic_store_explicit(&r->progress[w->idx].v, o.count + 1, memory_order_relaxed);
    obs_free(&o);
    return NULL;
}

/* One batch receive with a random n and time-out: how many it took (0 on a
 * time-out, checked not early), or -1 at SL_CLOSED. */
static long sel_batch(sl_chan *ch, unsigned char *buf, sl_test_rng *rng)
{
    size_t n = 1 + (size_t)(sl_test_rng_next(rng) % BATCH_MAX), got = 99;
    unsigned pick = (unsigned)(sl_test_rng_next(rng) % 8);
    uint64_t timeout = pick >= N_TIMEOUTS ? SL_FOREVER : k_timeouts[pick];
    uint64_t t0 = sl_test_now_ns();
    sl_status st = sl_chan_recv_n_for(ch, buf, n, timeout, &got);
    if (st == SL_OK && got >= 1 && got <= n)
        return (long)got;
    if ((st == SL_CLOSED || st == SL_TIMEDOUT) && got == 0) {
        if (st == SL_TIMEDOUT && timeout != 0 && sl_test_now_ns() - t0 < timeout)
            rec_fail("batch consumer: recv_n_for(%llu ns) timed out early", ULL(timeout));
        return st == SL_CLOSED ? -1 : 0;
    }
    rec_fail("batch consumer: recv_n_for(n %zu) returned %s with got %zu", n, sl_status_str(st),
             got);
    return -1;
}

static void *sel_plain(void *arg)
{
    worker *w = arg;
    sel_run *r = w->run;
    sl_chan *ch = r->ch[r->cfg->plain_ch];
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN);
    observer o;
    obs_init(&o, r->np, r->cfg->batch ? "batch consumer" : "plain consumer");
    unsigned char buf[BATCH_MAX * ESZ_MAX];
    sl_test_barrier_wait(&r->start);
    for (;;) {
        long got = 1;
        if (r->cfg->batch) {
            got = sel_batch(ch, buf, &rng);
        } else {
            sl_status st = sl_chan_recv(ch, buf);
            if (st != SL_OK && st != SL_CLOSED)
                rec_fail("plain consumer: sl_chan_recv returned %s", sl_status_str(st));
            got = st == SL_OK ? 1 : -1;
        }
        if (got < 0)
            break;
        for (long k = 0; k < got; k++)
            sel_take(r, &o, buf + (size_t)k * r->esz);
        atomic_store_explicit(&r->progress[w->idx].v, o.count, memory_order_relaxed);
    }
    atomic_fetch_add(&r->n_recv, o.count);
    atomic_store_explicit(&r->progress[w->idx].v, o.count + 1, memory_order_relaxed);
    obs_free(&o);
    return NULL;
}

static uint64_t sel_progress(void *arg)
{
    sel_run *r = arg;
    return sum_counters(r->progress, r->np + r->nc);
}

static void sel_diag(void *arg)
{
    sel_run *r = arg;
    for (unsigned i = 0; i < r->np; i++)
        fprintf(stderr, "  channel %u (%s cap %zu): len %zu, closed %d\n", i,
                sl_test_flavor_name(r->cfg->flavor[i]), r->cfg->cap[i], sl_chan_len(r->ch[i]),
                (int)sl_chan_is_closed(r->ch[i]));
    print_progress(r->progress, r->np, r->nc, "producer", "consumer");
}

static void sel_execute(const sel_cfg *cfg)
{
    sel_run *r = xaligned(sizeof *r);
    r->cfg = cfg;
    r->seed = begin_test(SUITE, "select_stress[%s]", cfg->name);
    r->np = cfg->producers;
    r->nsel = cfg->selectors;
    r->nc = cfg->selectors + (cfg->plain_ch >= 0 ? 1 : 0);
    uint64_t total = sl_test_scaled(cfg->msgs, cfg->floor);
    r->n = total / r->np ? total / r->np : 1;
    r->esz = 24;
    uint64_t all = (uint64_t)r->np * r->n;
    fates_init(&r->f, all, r->n);
    sl_test_barrier_init(&r->start, r->np + r->nc);
    r->progress = xaligned((r->np + r->nc) * sizeof *r->progress);
    for (unsigned i = 0; i < r->np; i++) {
        sl_status st =
            new_chan(&r->ch[i], cfg->flavor[i], r->esz, cfg->cap[i], sel_drop, r, false, 0);
        CHECK_MSG(st == SL_OK, "channel %u: creation returned %s", i, sl_status_str(st));
    }
    ck_assert(cfg->plain_ch < 0 || cfg->flavor[cfg->plain_ch] != SL_SPSC);

    const team_role roles[] = {{r->np, sel_producer, false},
                               {r->nsel, sel_consumer, false},
                               {r->nc - r->nsel, sel_plain, false}};
    team t;
    team_start(&t, r, roles, N_OF(roles), NULL, sel_progress, sel_diag);
    double secs = team_end(&t);
    ASSERT_CLEAN();

    observer main_obs;
    obs_init(&main_obs, r->np, "sl_chan_free");
    tl_drop_obs = &main_obs;
    r->freeing = true;
    for (unsigned i = 0; i < r->np; i++) {
        CHECK_MSG(sl_chan_len(r->ch[i]) == 0, "channel %u (%s): %zu left after every consumer "
                  "saw SL_CLOSED", i, sl_test_flavor_name(cfg->flavor[i]), sl_chan_len(r->ch[i]));
        sl_chan_free(r->ch[i]);
    }
    tl_drop_obs = NULL;
    obs_free(&main_obs);
    ASSERT_CLEAN();

    uint64_t nr = atomic_load(&r->n_recv), nd = atomic_load(&r->n_dropped);
    uint64_t ne = atomic_load(&r->n_evicted), ndf = atomic_load(&r->n_dropped_free);
    for (uint64_t i = 0; i < all; i++) {
        CHECK_MSG(fates_of(&r->f, i) == 1,
                  "producer %llu (%s) seq %llu: received %d dropped %d evicted %d",
                  ULL(i / r->n), sl_test_flavor_name(cfg->flavor[i / r->n]), ULL(i % r->n),
                  bm_get(&r->f.b[FATE_RECV], i), bm_get(&r->f.b[FATE_DROPPED], i),
                  bm_get(&r->f.b[FATE_EVICTED], i));
    }
    CHECK_MSG(nr + nd + ne + ndf == all, "%llu + %llu + %llu + %llu != %llu", ULL(nr), ULL(nd),
              ULL(ne), ULL(ndf), ULL(all));
    sl_test_account("messages with exactly one fate (received, displaced, dropped)", all);
    CHECK_MSG(ndf == 0, "%llu dropped at free after every consumer saw SL_CLOSED", ULL(ndf));
    unsigned nspsc = 0;
    for (unsigned i = 0; i < r->np; i++)
        nspsc += cfg->flavor[i] == SL_SPSC;
    uint64_t want_closed = r->np + (uint64_t)(r->nsel - 1) * (r->np - nspsc);
    CHECK_MSG(atomic_load(&r->closed_cases) == want_closed,
              "selectors saw SL_CLOSED %llu times, expected once per channel each (%llu)",
              ULL(atomic_load(&r->closed_cases)), ULL(want_closed));
    fprintf(stderr, "[%s] %u producers, %u selectors%s, %llu messages: %llu received, %llu "
            "dropped, %llu evicted; %llu select time-outs; in %.3f s\n",
            g_test, r->np, r->nsel, cfg->plain_ch >= 0 ? " + 1 plain" : "", ULL(all), ULL(nr),
            ULL(nd), ULL(ne), ULL(atomic_load(&r->timeouts)), secs);
    sl_test_barrier_destroy(&r->start);
    fates_free(&r->f);
    free(r->progress);
    free(r);
}

static const sel_cfg sel_cfgs[] = {
    {"6 mixed, 3 selectors + plain on MPMC",
     6,
     {SL_SPSC, SL_MPMC, SL_LIST, SL_RING, SL_MPMC, SL_LIST},
     {4, 4, 0, 8, 1, 0},
     {false, true, false, false, false, true},
     3,
     4,
     400000,
     12000,
     false,
     false},
    {"4 MPMC cap 1 via select, 4 selectors",
     4,
     {SL_MPMC, SL_MPMC, SL_MPMC, SL_MPMC},
     {1, 1, 1, 1},
     {true, true, true, true},
     4,
     -1,
     200000,
     8000,
     false,
     false},
    {"8 mixed, 2 selectors + plain on RING",
     8,
     {SL_RING, SL_SPSC, SL_LIST, SL_MPMC, SL_RING, SL_SPSC, SL_MPMC, SL_LIST},
     {2, 1, 0, 2, 1, 8, 16, 0},
     {false, false, false, true, false, false, false, false},
     2,
     0,
     400000,
     12000,
     false,
     false},
    {"3 SPSC + 1 RING, 1 selector",
     4,
     {SL_SPSC, SL_SPSC, SL_SPSC, SL_RING},
     {1, 2, 64, 4},
     {false, false, false, false},
     1,
     -1,
     200000,
     8000,
     false,
     false},
    {"6 mixed, 2 biased selectors + batch plain on LIST",
     6,
     {SL_MPMC, SL_LIST, SL_RING, SL_SPSC, SL_MPMC, SL_LIST},
     {2, 0, 4, 4, 1, 0},
     {false, false, false, false, true, true},
     2,
     1,
     150000,
     6000,
     true,
     true},
    {"3 MPMC cap 1, 1 biased selector + batch plain on MPMC",
     3,
     {SL_MPMC, SL_MPMC, SL_MPMC},
     {1, 1, 1},
     {true, false, true},
     1,
     0,
     100000,
     6000,
     true,
     true},
};

START_TEST(select_stress) { sel_execute(&sel_cfgs[_i]); }
END_TEST

/* ---- timer_select --------------------------------------------------------- */
#define TS_PRODUCERS 2
#define TS_CONSUMERS 3
#define TS_PERIOD (200 * 1000ull) /* 200 us */

typedef struct ts_run {
    sl_chan *work, *tick, *deadline;
    uint64_t n, start;
    bitmap seen;
    atomic_uint deadline_taken;
    sl_test_barrier go;
    uint64_t *ticks[TS_CONSUMERS]; /* each consumer's tick instants, in order */
    uint64_t nticks[TS_CONSUMERS], cap_ticks;
} ts_run;

typedef struct ts_arg {
    ts_run *r;
    unsigned id;
} ts_arg;

static void *ts_producer(void *arg)
{
    ts_arg *a = arg;
    ts_run *r = a->r;
    sl_test_barrier_wait(&r->go);
    for (uint64_t s = 0; s < r->n && !failed(); s++) {
        uint64_t m = (uint64_t)a->id << 48 | s;
        sl_status st = sl_chan_send(r->work, &m);
        if (st != SL_OK)
            rec_fail("producer %u seq %llu: send returned %s", a->id, ULL(s), sl_status_str(st));
    }
    return NULL;
}

static void ts_tick(ts_run *r, unsigned id, uint64_t at)
{
    uint64_t now = sl_test_now_ns();
    if (at > now || at < r->start + TS_PERIOD)
        rec_fail("consumer %u: tick at %llu before the first (start %llu) or after now %llu",
                 id, ULL(at), ULL(r->start), ULL(now));
    uint64_t k = r->nticks[id];
    if (k && r->ticks[id][k - 1] >= at)
        rec_fail("consumer %u: tick %llu not after the previous %llu", id, ULL(at),
                 ULL(r->ticks[id][k - 1]));
    if (k < r->cap_ticks)
        r->ticks[id][r->nticks[id]++] = at;
}

static void *ts_consumer(void *arg)
{
    ts_arg *a = arg;
    ts_run *r = a->r;
    uint64_t last[TS_PRODUCERS] = {NONE, NONE}, m = 0, t_at = 0, d_at = 0;
    sl_select_case c[] = {{r->work, SL_SEL_RECV, &m},
                          {r->tick, SL_SEL_RECV, &t_at},
                          {r->deadline, SL_SEL_RECV, &d_at}};
    sl_test_barrier_wait(&r->go);
    while (!failed() && (c[0].ch || !atomic_load(&r->deadline_taken))) {
        size_t i = 99;
        /* A bounded wait once the work is gone: another consumer may take the
         * deadline, and nothing would wake this one. */
        sl_status st = sl_select(c, 3, c[0].ch ? SL_FOREVER : 2 * MS, &i);
        if (st == SL_TIMEDOUT && !c[0].ch)
            continue;
        if (i == 0 && st == SL_CLOSED) {
            c[0].ch = NULL;
            continue;
        }
        if (st != SL_OK) {
            rec_fail("consumer %u: select returned %s on case %zu", a->id, sl_status_str(st), i);
            break;
        }
        if (i == 0) {
            uint32_t p = (uint32_t)(m >> 48);
            uint64_t s = m & ((1ull << 48) - 1);
            if (p >= TS_PRODUCERS || s >= r->n || bm_set(&r->seen, p * r->n + s))
                rec_fail("consumer %u: message %llx unknown or received twice", a->id, ULL(m));
            else
                fifo_see(&last[p], p, s, "timer_select consumer");
        } else if (i == 1) {
            ts_tick(r, a->id, t_at);
        } else if (atomic_fetch_add(&r->deadline_taken, 1) != 0 || d_at > sl_test_now_ns()) {
            rec_fail("consumer %u: the deadline fired twice or early (%llu)", a->id, ULL(d_at));
        }
    }
    return NULL;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Every tick instant was received once in all, and there were no more ticks
 * than grid points passed. */
static void ts_check_ticks(ts_run *r, uint64_t end)
{
    uint64_t all = 0;
    for (unsigned i = 0; i < TS_CONSUMERS; i++)
        all += r->nticks[i];
    uint64_t *v = xmalloc((all + 1) * sizeof *v), k = 0;
    for (unsigned i = 0; i < TS_CONSUMERS; i++)
        for (uint64_t j = 0; j < r->nticks[i]; j++)
            v[k++] = r->ticks[i][j];
    qsort(v, all, sizeof *v, cmp_u64);
    for (uint64_t j = 1; j < all; j++) {
        CHECK_MSG(v[j] != v[j - 1], "tick at %llu received twice", ULL(v[j]));
        CHECK_MSG((v[j] - v[0]) % TS_PERIOD == 0, "tick at %llu off the grid of %llu",
                  ULL(v[j]), ULL(v[0]));
    }
    CHECK_MSG(all <= (end - r->start) / TS_PERIOD, "%llu ticks in %llu ns: a backlog",
              ULL(all), ULL(end - r->start));
    free(v);
    sl_test_account("tick instants received once each", all);
}

START_TEST(timer_select)
{
    ts_run *r = xcalloc(1, sizeof *r);
    begin_test(SUITE, "timer_select");
    r->n = sl_test_scaled(100000, 5000);
    bm_init(&r->seen, TS_PRODUCERS * r->n);
    ck_assert_int_eq(new_chan(&r->work, SL_MPMC, 8, 64, NULL, NULL, false, 0), SL_OK);
    r->start = sl_test_now_ns();
    ck_assert_int_eq(sl_chan_tick(&r->tick, TS_PERIOD), SL_OK);
    ck_assert_int_eq(sl_chan_after(&r->deadline, (g_seed % 5000) * 1000), SL_OK);
    r->cap_ticks = 1u << 20;
    for (unsigned i = 0; i < TS_CONSUMERS; i++)
        r->ticks[i] = xmalloc(r->cap_ticks * sizeof(uint64_t));
    sl_test_barrier_init(&r->go, TS_PRODUCERS + TS_CONSUMERS);
    pthread_t th[TS_PRODUCERS + TS_CONSUMERS];
    ts_arg args[TS_PRODUCERS + TS_CONSUMERS];
    for (unsigned i = 0; i < TS_PRODUCERS + TS_CONSUMERS; i++) {
        bool prod = i < TS_PRODUCERS;
        args[i] = (ts_arg){r, prod ? i : i - TS_PRODUCERS};
        ck_assert_int_eq(pthread_create(&th[i], NULL, prod ? ts_producer : ts_consumer,
                                        &args[i]), 0);
    }
    for (unsigned i = 0; i < TS_PRODUCERS; i++)
        pthread_join(th[i], NULL);
    sl_chan_close(r->work);
    for (unsigned i = TS_PRODUCERS; i < TS_PRODUCERS + TS_CONSUMERS; i++)
        pthread_join(th[i], NULL);
    uint64_t end = sl_test_now_ns();
    ASSERT_CLEAN();
    check_none_lost(&r->seen, TS_PRODUCERS * r->n, TS_PRODUCERS * r->n, TS_PRODUCERS * r->n);
    ck_assert_uint_eq(atomic_load(&r->deadline_taken), 1);
    ts_check_ticks(r, end);
    ASSERT_CLEAN();
    sl_chan_free(r->work);
    sl_chan_free(r->tick);
    sl_chan_free(r->deadline);
    sl_test_barrier_destroy(&r->go);
    bm_free(&r->seen);
    for (unsigned i = 0; i < TS_CONSUMERS; i++)
        free(r->ticks[i]);
    free(r);
}
END_TEST

/* ---- broadcast_churn ------------------------------------------------------ */

#define BC_SENDERS 2
#define BC_CHURNERS 2
#define BC_BATCH 8

typedef struct bc_cfg {
    size_t cap, esz;
} bc_cfg;

static const bc_cfg bc_cfgs[] = {{1, 24}, {4, 64}, {64, 16}};

typedef struct bc_run {
    sl_chan *bc;
    sl_chan *steady; /* subscribed before the first send */
    sl_chan *never;  /* the steady subscriber's select's second case */
    size_t esz;
    uint64_t n; /* per sender */
    uint64_t seed;
    atomic_uint senders_left;
    bitmap dropped;
    atomic_uint_fast64_t drops;
    atomic_uint_fast64_t drop_clock;   /* a ticket per drop, in the order they ran */
    atomic_uint_fast64_t *dropped_at;  /* per message: its drop's ticket + 1, 0 before */
    uint64_t steady_got;
    pad_counter progress[BC_SENDERS + 1 + BC_CHURNERS];
} bc_run;

static void bc_drop(void *elem, void *ctx)
{
    bc_run *r = ctx;
    uint32_t p;
    uint64_t s;
    if (!msg_read(elem, r->esz, BC_SENDERS, r->n, &p, &s, "drop"))
        return;
    if (bm_set(&r->dropped, p * r->n + s))
        rec_fail("sender %u seq %llu dropped twice", p, ULL(s));
    atomic_store(&r->dropped_at[p * r->n + s], atomic_fetch_add(&r->drop_clock, 1) + 1);
    atomic_fetch_add(&r->drops, 1);
}

static sl_status bc_send_one(bc_run *r, sl_test_rng *rng, unsigned char *m)
{
    size_t i;
    sl_select_case c = {r->bc, SL_SEL_SEND, m};
    switch (sl_test_rng_next(rng) % 4) {
    case 0: return sl_chan_send(r->bc, m);
    case 1: return sl_chan_try_send(r->bc, m);
    case 2: return sl_chan_send_for(r->bc, m, k_timeouts[sl_test_rng_next(rng) % N_TIMEOUTS]);
    default: return sl_select(&c, 1, 0, &i);
    }
}

static void *bc_sender(void *arg)
{
    worker *w = arg;
    bc_run *r = w->run;
    uint32_t p = w->idx;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (p + 1) * GOLDEN);
    unsigned char batch[BC_BATCH * ESZ_MAX];
    for (uint64_t s = 0; s < r->n && !failed();) {
        if (sl_test_rng_next(&rng) % 8 == 0) { /* a batch: all of it goes */
            size_t k = msg_batch(batch, r->esz, p, s, r->n - s, BC_BATCH, &rng);
            size_t sent = sl_chan_try_send_n(r->bc, batch, k);
            if (sent != k)
                rec_fail("sender %u: try_send_n sent %zu of %zu", p, sent, k);
            s += k;
        } else {
            msg_make(batch, r->esz, p, s);
            sl_status st = bc_send_one(r, &rng, batch);
            if (st != SL_OK)
                rec_fail("sender %u seq %llu: %s", p, ULL(s), sl_status_str(st));
            s++;
        }
        atomic_store(&r->progress[p].v, s);
        sl_test_maybe_stall(&rng, 256);
    }
    if (atomic_fetch_sub(&r->senders_left, 1) == 1)
        sl_chan_close(r->bc);
    return NULL;
}

/* One subscription's bc_view: each sender's newest seq, and the jumps. */
typedef struct bc_view {
    uint64_t last[BC_SENDERS]; /* NONE before the first */
    uint64_t jumps;    /* seqs skipped between two received from one sender */
    uint64_t got;
    bool lag_since[BC_SENDERS]; /* an SL_LAGGED came since this sender's last message */
} bc_view;

static void bc_view_init(bc_view *v)
{
    memset(v, 0, sizeof *v);
    for (unsigned p = 0; p < BC_SENDERS; p++)
        v->last[p] = NONE;
}

static void bc_view_lagged(bc_view *v)
{
    for (unsigned p = 0; p < BC_SENDERS; p++)
        v->lag_since[p] = true;
}

/* m arrived by a receive that began when the drop clock read `began`. */
static void bc_view_see(bc_run *r, bc_view *v, const unsigned char *m, uint64_t began,
                        const char *who)
{
    uint32_t p;
    uint64_t s;
    if (!msg_read(m, r->esz, BC_SENDERS, r->n, &p, &s, who))
        return;
    /* Every subscription was counted for what it receives: the message's
     * drop cannot have run before this receive began. */
    uint64_t at = atomic_load(&r->dropped_at[p * r->n + s]);
    if (at != 0 && at - 1 < began)
        rec_fail("%s: sender %u seq %llu received after its drop", who, p, ULL(s));
    uint64_t want = v->last[p] == NONE ? NONE : v->last[p] + 1;
    if (want != NONE && s < want)
        rec_fail("%s: sender %u seq %llu after %llu", who, p, ULL(s), ULL(v->last[p]));
    else if (want != NONE && s > want) {
        if (!v->lag_since[p])
            rec_fail("%s: sender %u jumped %llu -> %llu with no SL_LAGGED", who, p,
                     ULL(v->last[p]), ULL(s));
        v->jumps += s - want;
    }
    v->last[p] = s;
    v->lag_since[p] = false;
    v->got++;
}

/* One receive by a random form into m (room for BC_BATCH messages): the status,
 * and how many messages arrived in *k. */
static sl_status bc_recv_some(bc_run *r, sl_chan *rx, sl_test_rng *rng, unsigned char *m,
                           size_t *k)
{
    size_t i;
    uint64_t t = k_timeouts[sl_test_rng_next(rng) % N_TIMEOUTS];
    sl_select_case c[2] = {{rx, SL_SEL_RECV, m}, {r->never, SL_SEL_RECV, m}};
    sl_status st;
    *k = 0;
    switch (sl_test_rng_next(rng) % 5) {
    case 0: st = sl_chan_recv(rx, m); break;
    case 1: st = sl_chan_try_recv(rx, m); break;
    case 2: st = sl_chan_recv_for(rx, m, t); break;
    case 3: return sl_chan_recv_n_for(rx, m, 1 + sl_test_rng_next(rng) % BC_BATCH, t, k);
    default:
        st = sl_select(c, 2, t, &i);
        if (st == SL_OK && i != 0)
            rec_fail("the never channel's case won");
        break;
    }
    *k = st == SL_OK;
    return st;
}

/* Receives on rx until SL_CLOSED or `budget` receives; returns the last status. */
static sl_status bc_drain(bc_run *r, sl_chan *rx, bc_view *v, sl_test_rng *rng, uint64_t budget,
                       pad_counter *progress, const char *who)
{
    unsigned char m[BC_BATCH * ESZ_MAX];
    sl_status st = SL_OK;
    for (uint64_t n = 0; n < budget && !failed(); n++) {
        size_t k;
        uint64_t began = atomic_load(&r->drop_clock);
        st = bc_recv_some(r, rx, rng, m, &k);
        if (st == SL_CLOSED)
            break;
        if (st == SL_LAGGED)
            bc_view_lagged(v);
        else if (st != SL_OK && st != SL_EMPTY && st != SL_TIMEDOUT)
            rec_fail("%s: %s", who, sl_status_str(st));
        for (size_t j = 0; j < k; j++)
            bc_view_see(r, v, m + j * r->esz, began, who);
        atomic_fetch_add(&progress->v, 1);
    }
    if (v->jumps > sl_chan_missed(rx))
        rec_fail("%s: skipped %llu seqs, told of %llu", who, ULL(v->jumps),
                 ULL(sl_chan_missed(rx)));
    return st;
}

static void *bc_steady(void *arg)
{
    worker *w = arg;
    bc_run *r = w->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN);
    bc_view v;
    bc_view_init(&v);
    if (bc_drain(r, r->steady, &v, &rng, UINT64_MAX, &r->progress[w->idx], "steady") !=
            SL_CLOSED && !failed())
        rec_fail("steady: did not end with SL_CLOSED");
    r->steady_got = v.got;
    return NULL;
}

static void *bc_churner(void *arg)
{
    worker *w = arg;
    bc_run *r = w->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN);
    char who[32];
    snprintf(who, sizeof who, "churner %u", w->idx);
    for (bool ended = false; !ended && !failed();) {
        sl_chan *rx = NULL;
        sl_status st = sl_chan_subscribe(r->bc, &rx);
        if (st != SL_OK) {
            rec_fail("%s: subscribe: %s", who, sl_status_str(st));
            break;
        }
        bc_view v;
        bc_view_init(&v);
        ended = bc_drain(r, rx, &v, &rng, 1 + sl_test_rng_next(&rng) % 64, &r->progress[w->idx],
                      who) == SL_CLOSED;
        if (!ended && sl_test_rng_next(&rng) % 4 == 0) {
            sl_chan_close(rx); /* ends this subscription alone */
            unsigned char m[ESZ_MAX];
            if ((st = sl_chan_try_recv(rx, m)) != SL_CLOSED)
                rec_fail("%s: %s from a closed subscription", who, sl_status_str(st));
        }
        /* The channel stays open while a sender is left: leave, join again. */
        ended = ended || atomic_load(&r->senders_left) == 0;
        sl_chan_free(rx);
    }
    return NULL;
}

static uint64_t bc_progress(void *arg)
{
    bc_run *r = arg;
    return sum_counters(r->progress, BC_SENDERS + 1 + BC_CHURNERS);
}

static void bc_diag(void *arg)
{
    bc_run *r = arg;
    fprintf(stderr, "  BROADCAST: len %zu, steady len %zu missed %llu, senders left %u\n",
            sl_chan_len(r->bc), sl_chan_len(r->steady), ULL(sl_chan_missed(r->steady)),
            atomic_load(&r->senders_left));
    print_progress(r->progress, BC_SENDERS, 1 + BC_CHURNERS, "sender", "subscriber");
}

START_TEST(broadcast_churn)
{
    const bc_cfg *cfg = &bc_cfgs[_i];
    bc_run *r = xaligned(sizeof *r);
    r->seed = begin_test(SUITE, "broadcast_churn[cap %zu, %zu bytes]", cfg->cap, cfg->esz);
    r->esz = cfg->esz;
    r->n = sl_test_scaled(16000, 500);
    atomic_store(&r->senders_left, BC_SENDERS);
    bm_init(&r->dropped, BC_SENDERS * r->n);
    r->dropped_at = calloc(BC_SENDERS * r->n, sizeof *r->dropped_at);
    ck_assert_ptr_nonnull(r->dropped_at);
    ck_assert_int_eq(new_chan(&r->bc, SL_BROADCAST, r->esz, cfg->cap, bc_drop, r, false, 0),
                     SL_OK);
    ck_assert_int_eq(sl_chan_subscribe(r->bc, &r->steady), SL_OK);
    ck_assert_int_eq(sl_chan_never(&r->never), SL_OK);

    const team_role roles[] = {{BC_SENDERS, bc_sender, true}, {1, bc_steady, true}, {BC_CHURNERS, bc_churner, true}};
    team t;
    team_start(&t, r, roles, N_OF(roles), &k_preempt_brief, bc_progress, bc_diag);
    team_end(&t);
    ASSERT_CLEAN();

    uint64_t total = BC_SENDERS * r->n, missed = sl_chan_missed(r->steady);
    CHECK_MSG(r->steady_got + missed == total, "steady: received %llu + missed %llu != %llu",
              ULL(r->steady_got), ULL(missed), ULL(total));
    fprintf(stderr, "[%s] steady subscriber: %llu received, %llu missed\n", g_test,
            ULL(r->steady_got), ULL(missed));
    /* Every message was read by every subscription counted for it (the
     * churners have left, giving up what they did not read) or overwritten:
     * all are dropped while the steady subscriber and the send handle live. */
    uint64_t drops = atomic_load(&r->drops);
    CHECK_MSG(drops == total, "dropped %llu of %llu before the last handles went",
              ULL(drops), ULL(total));
    sl_chan_free(r->steady);
    sl_chan_free(r->bc); /* the last handle: nothing is left to drop */
    ASSERT_CLEAN();
    drops = atomic_load(&r->drops);
    check_none_lost(&r->dropped, r->n, drops, total);
    CHECK_MSG(drops == total, "dropped %llu of %llu", ULL(drops), ULL(total));
    sl_test_account("broadcast messages received or missed, and dropped once", 2 * total);
    sl_chan_free(r->never);
    bm_free(&r->dropped);
    free(r->dropped_at);
    free(r);
}
END_TEST

/* ---- rendezvous_close ------------------------------------------------------ */
typedef struct rv_cfg {
    unsigned np, nc;
    bool early_close; /* close at a random point, else after the last send */
} rv_cfg;

static const rv_cfg rv_cfgs[] = {{1, 1, false}, {3, 2, false}, {2, 3, true}, {4, 4, true}};

typedef struct rv_run {
    const rv_cfg *cfg;
    sl_chan *r, *q;
    uint64_t n, close_at;
    bitmap seen;
    uint64_t sent[8];            /* [producer]: sends that returned SL_OK (its seqs 0..sent-1) */
    atomic_uint_fast64_t total;  /* sends that returned SL_OK, all producers */
    atomic_uint producers_done;
    sl_test_barrier go;
} rv_run;

typedef struct rv_arg {
    rv_run *r;
    unsigned id;
} rv_arg;

static void rv_take(rv_run *r, const unsigned char *b, unsigned id);

/* Whether the n buffers of a select's cases other than `done` (n: none) still
 * hold the filler byte: a case the select did not perform wrote nothing. */
static bool rv_untouched(const unsigned char *b, size_t n, size_t done)
{
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; k != done && j < 8; j++)
            if (b[8 * k + j] != 0xA5)
                return false;
    return true;
}

/* A producer's select both ways on R, naming it twice to send: it meets a
 * consumer or another producer's select, receiving instead of sending (the
 * message it takes is accounted like a consumer's). At most one case
 * happens, and the others' buffers stay as they were. How many it sent. */
static uint64_t rv_send_both_ways(rv_run *r, unsigned p, const unsigned char *m, uint64_t t,
                                  sl_test_rng *rng, sl_status *st)
{
    unsigned char b[1][8];
    memset(b, 0xA5, sizeof b);
    sl_select_case c[3] = {{r->r, SL_SEL_SEND, (void *)m}, {r->r, SL_SEL_RECV, b[0]},
                           {r->r, SL_SEL_SEND, (void *)m}};
    size_t idx = 9;
    *st = sl_test_rng_next(rng) & 1 ? sl_select(c, 3, t, &idx) : sl_select_biased(c, 3, t, &idx);
    if (*st == SL_TIMEDOUT || *st == SL_CLOSED) {
        if (*st == SL_TIMEDOUT ? idx != 9 : idx > 2)
            rec_fail("producer %u: select %s with index %zu", p, sl_status_str(*st), idx);
        if (!rv_untouched(b[0], 1, 3))
            rec_fail("producer %u: select %s wrote its receive buffer", p, sl_status_str(*st));
        return 0;
    }
    if (*st != SL_OK || idx > 2)
        return 0; /* the caller reports the status */
    if (idx != 1) {
        if (!rv_untouched(b[0], 1, 3))
            rec_fail("producer %u: select sent (case %zu) and wrote its receive buffer", p, idx);
        return 1;
    }
    rv_take(r, b[0], 100 + p);
    *st = SL_FULL; /* nothing sent: the caller tries again */
    return 0;
}

/* One send of producer p's message s (or a batch from it) by a random form:
 * how many went (0 with *st the refusal). */
static uint64_t rv_send_one(rv_run *r, unsigned p, uint64_t s, sl_test_rng *rng, sl_status *st)
{
    unsigned char m[3][8];
    for (unsigned k = 0; k < 3; k++)
        msg_make(m[k], 8, p, s + k);
    uint64_t t = k_timeouts[sl_test_rng_next(rng) % N_TIMEOUTS];
    sl_select_case c[2] = {{r->r, SL_SEL_SEND, m[0]}, {r->q, SL_SEL_SEND, m[0]}};
    size_t idx = 9;
    switch (sl_test_rng_next(rng) % 7) {
    case 6: return rv_send_both_ways(r, p, m[0], t ? t : SL_FOREVER, rng, st);
    case 0: *st = sl_chan_send(r->r, m[0]); break;
    case 1: *st = sl_chan_send_for(r->r, m[0], t); break;
    case 2: *st = sl_chan_try_send(r->r, m[0]); break;
    case 3: { /* a batch: one per waiting receiver */
        uint64_t k = sl_chan_try_send_n(r->r, m, s + 3 <= r->n ? 3 : r->n - s);
        *st = k ? SL_OK : sl_chan_is_closed(r->r) ? SL_CLOSED : SL_FULL;
        return k;
    }
    case 4: *st = sl_select(c, 2, SL_FOREVER, &idx); break;
    default: *st = sl_select(c, 1, t ? SL_FOREVER : 0, &idx); break; /* R alone */
    }
    return *st == SL_OK;
}

static void *rv_producer(void *arg)
{
    rv_arg *a = arg;
    rv_run *r = a->r;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, g_seed ^ (a->id + 1) * GOLDEN);
    sl_test_barrier_wait(&r->go);
    uint64_t s = 0;
    while (s < r->n && !failed()) {
        sl_status st;
        uint64_t k = rv_send_one(r, a->id, s, &rng, &st);
        s += k;
        atomic_fetch_add(&r->total, k);
        if (st == SL_CLOSED)
            break; /* message s was refused: it must never show up */
        if (!k && st != SL_FULL && st != SL_TIMEDOUT)
            rec_fail("producer %u seq %llu: send returned %s", a->id, ULL(s), sl_status_str(st));
        if (!k && st == SL_FULL)
            sched_yield();
    }
    r->sent[a->id] = s;
    atomic_fetch_add(&r->producers_done, 1);
    return NULL;
}

static void rv_take(rv_run *r, const unsigned char *b, unsigned id)
{
    uint32_t p;
    uint64_t s;
    if (msg_read(b, 8, r->cfg->np, r->n, &p, &s, "rendezvous consumer") &&
        bm_set(&r->seen, p * r->n + s))
        rec_fail("consumer %u: producer %u seq %llu received twice", id, p, ULL(s));
}

/* A consumer's select naming R twice beside Q: one case happens, into its
 * own buffer alone; clears the channel it finds closed. */
static void rv_recv_twice(rv_run *r, sl_chan **open, unsigned id, uint64_t t)
{
    unsigned char b[3][8];
    memset(b, 0xA5, sizeof b);
    sl_select_case c[3] = {{open[0], SL_SEL_RECV, b[0]}, {open[0], SL_SEL_RECV, b[1]},
                           {open[1], SL_SEL_RECV, b[2]}};
    size_t idx = 9;
    sl_status st = sl_select(c, 3, t, &idx);
    if (st == SL_TIMEDOUT) {
        if (idx != 9 || !rv_untouched(b[0], 3, 3))
            rec_fail("consumer %u: select timed out with index %zu or a buffer written", id, idx);
        return;
    }
    if ((st != SL_OK && st != SL_CLOSED) || idx > 2) {
        rec_fail("consumer %u: select returned %s, index %zu", id, sl_status_str(st), idx);
        return;
    }
    if (!rv_untouched(b[0], 3, st == SL_OK ? idx : 3))
        rec_fail("consumer %u: select %s on case %zu wrote another case's buffer", id,
                 sl_status_str(st), idx);
    if (st == SL_OK)
        rv_take(r, b[idx], id);
    else
        open[idx == 2] = NULL;
}

/* One receive by a random form over the channels still open (NULL: closed
 * and drained); clears the one it finds closed. */
static void rv_recv_one(rv_run *r, sl_chan **open, unsigned id, sl_test_rng *rng)
{
    unsigned char b[3][8];
    uint64_t t = k_timeouts[sl_test_rng_next(rng) % N_TIMEOUTS];
    size_t idx = 9, got = 0;
    sl_chan *one = open[0] ? open[0] : open[1];
    sl_status st;
    switch (open[0] && open[1] ? sl_test_rng_next(rng) % 6 : 4) {
    case 5: rv_recv_twice(r, open, id, t ? t : SL_FOREVER); return;
    case 0: st = sl_chan_recv(open[0], b[0]), idx = 0; break;
    case 1: st = sl_chan_recv_for(open[0], b[0], t), idx = 0; break;
    case 2: st = sl_chan_try_recv(open[0], b[0]), idx = 0; break;
    case 3:
        st = sl_chan_recv_n_for(open[0], b, 3, t, &got), idx = 0;
        for (size_t k = 1; k < got; k++)
            rv_take(r, b[k], id);
        break;
    default: {
        sl_select_case c[2] = {{open[0], SL_SEL_RECV, b[0]}, {open[1], SL_SEL_RECV, b[0]}};
        st = sl_select(c, 2, one == open[0] && !open[1] ? t : SL_FOREVER, &idx);
    }
    }
    if (st == SL_OK)
        rv_take(r, b[0], id);
    else if (st == SL_CLOSED)
        open[idx] = NULL;
    else if (st == SL_EMPTY)
        sched_yield();
    else if (st != SL_TIMEDOUT)
        rec_fail("consumer %u: receive returned %s", id, sl_status_str(st));
}

static void *rv_consumer(void *arg)
{
    rv_arg *a = arg;
    rv_run *r = a->r;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, g_seed ^ (a->id + 101) * GOLDEN);
    sl_chan *open[2] = {r->r, r->q};
    sl_test_barrier_wait(&r->go);
    while ((open[0] || open[1]) && !failed())
        rv_recv_one(r, open, a->id, &rng);
    return NULL;
}

static void *rv_closer(void *arg)
{
    rv_run *r = arg;
    sl_test_barrier_wait(&r->go);
    while (atomic_load(&r->total) < r->close_at &&
           atomic_load(&r->producers_done) < r->cfg->np && !failed())
        sl_test_sleep_ns(50000);
    sl_chan_close(r->r);
    sl_chan_close(r->q);
    return NULL;
}

START_TEST(rendezvous_close)
{
    const rv_cfg *cfg = &rv_cfgs[_i];
    rv_run *r = xcalloc(1, sizeof *r);
    begin_test(SUITE, "rendezvous_close %u/%u %s", cfg->np, cfg->nc,
               cfg->early_close ? "early close" : "close at the end");
    r->cfg = cfg;
    r->n = sl_test_scaled(3000, 300);
    r->close_at = cfg->early_close ? g_seed % (cfg->np * r->n) : UINT64_MAX;
    bm_init(&r->seen, cfg->np * r->n);
    ck_assert_int_eq(new_chan(&r->r, SL_MPMC, 8, 0, NULL, NULL, false, 0), SL_OK);
    ck_assert_int_eq(new_chan(&r->q, SL_MPMC, 8, 4, NULL, NULL, false, 0), SL_OK);
    unsigned nt = cfg->np + cfg->nc;
    sl_test_barrier_init(&r->go, nt + 1);
    pthread_t th[16], closer;
    rv_arg args[16];
    for (unsigned i = 0; i < nt; i++) {
        bool prod = i < cfg->np;
        args[i] = (rv_arg){r, prod ? i : i - cfg->np};
        ck_assert_int_eq(pthread_create(&th[i], NULL, prod ? rv_producer : rv_consumer,
                                        &args[i]), 0);
    }
    ck_assert_int_eq(pthread_create(&closer, NULL, rv_closer, r), 0);
    for (unsigned i = 0; i < nt; i++)
        pthread_join(th[i], NULL);
    pthread_join(closer, NULL);
    ASSERT_CLEAN();
    uint64_t all = 0;
    for (unsigned p = 0; p < cfg->np; p++) {
        for (uint64_t s = 0; s < r->n; s++)
            CHECK_MSG(bm_get(&r->seen, p * r->n + s) == (s < r->sent[p]),
                      "producer %u seq %llu: %s (sent %llu)", p, ULL(s),
                      s < r->sent[p] ? "sent but never received" : "refused yet received",
                      ULL(r->sent[p]));
        all += r->sent[p];
    }
    sl_test_account("rendezvous messages received exactly when sent, racing close", all);
    sl_chan_free(r->r);
    sl_chan_free(r->q);
    sl_test_barrier_destroy(&r->go);
    bm_free(&r->seen);
    free(r);
}
END_TEST

static Suite *flavors_suite(void)
{
    Suite *s = suite_create("stress_flavors");

    TCase *tc = sl_test_loop_case(s, "list", TC_TIMEOUT, list_exactly_once, N_OF(leo_cfgs));
    tcase_add_loop_test(tc, list_mixed_close, 0, N_OF(lmx_cfgs));
    sl_test_loop_case(s, "ring", TC_TIMEOUT, ring_flood, N_OF(ring_cfgs));
    sl_test_loop_case(s, "select", TC_TIMEOUT, select_stress, N_OF(sel_cfgs));
    tc = tcase_create("timer");
    tcase_set_timeout(tc, TC_TIMEOUT);
    tcase_add_test(tc, timer_select);
    suite_add_tcase(s, tc);
    sl_test_loop_case(s, "rendezvous", TC_TIMEOUT, rendezvous_close, N_OF(rv_cfgs));
    sl_test_loop_case(s, "broadcast", TC_TIMEOUT, broadcast_churn, N_OF(bc_cfgs));
    return s;
}

int main(void)
{
    return sl_test_run(flavors_suite());
}
