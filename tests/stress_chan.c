/*
 * tests/stress_chan.c — channel stress for SL_MPMC and SL_SPSC.
 *
 * Every message carries (producer, seq, check) and, for messages above 16
 * bytes, a pad derived from them, so that torn copies show. What is checked:
 *
 *   exactly_once   P producers send seq 0..N-1 with blocking sends, C
 *                  consumers receive until SL_CLOSED: every (producer, seq)
 *                  arrives exactly once, and each consumer sees every
 *                  producer's seqs strictly increasing (per-producer FIFO, as
 *                  a linearizable FIFO must show it to one observer).
 *   mixed_close    random mixes of every send and receive form, with a close
 *                  from a third thread at a random point: a message a send
 *                  reported as sent is received or dropped exactly once; a
 *                  message whose send failed is never seen; drops come in
 *                  FIFO order and are all newer than anything received.
 *   close_drains   rounds of "send 1-3, then close" against a spinning,
 *                  parked, batch-polling or batch-waiting receiver: all sent before
 *                  the close arrives before SL_CLOSED.
 *   drop_blocked   consumers stop early, producers block on a full channel,
 *                  close wakes them, sl_chan_free drops exactly what is left.
 *   wrap           the same with ring counters started near UINT64_MAX
 *                  (and near 2^32) through sl__chan_new_at.
 *   fd_loop        an epoll loop on the channel's receive descriptor
 *                  (sluice/chanfd.h) against preempted producers that pace
 *                  themselves so the loop often sleeps: every message
 *                  arrives, in per-producer order, and no epoll_wait outlasts
 *                  5 s with a message in the channel (a lost edge).
 *
 * Sizes scale with SL_STRESS_SCALE; SL_STRESS_PRODUCERS / SL_STRESS_CONSUMERS
 * override the MPMC thread counts; SL_STRESS_SEED replays the random choices
 * (the seed is printed at the start of every test and in every failure).
 * A watchdog reports a test that makes no progress for 30 s (a lost wake-up)
 * with the channel's state; Check's 120 s time-out is the backstop. The
 * "preempted" cases run a preemptor thread that signals the workers at random
 * instants (the handler naps a few microseconds), to stop them inside the
 * narrow windows of the blocking and close paths.
 *
 * SL_STRESS_STRICT_CLOSE=1 additionally fails mixed_close when a send that
 * raced with sl_chan_close returned SL_OK after a receiver had already seen
 * SL_CLOSED (a close that is not linearizable with sends); by default such
 * messages are only counted and reported on stderr.
 */
#include "stress_common.h"

#include <sched.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/chan.h"
#include "sluice/chanfd.h"

#define SUITE "stress_chan"
#define TC_TIMEOUT 120
#define BATCH_MAX 16

/* =========================================================================
 * 1 + 3. Exactly once, per-producer FIFO, blocking send/recv, close at the end
 * ========================================================================= */

typedef struct eo_cfg {
    const char *name;
    sl_flavor flavor;
    unsigned producers, consumers;
    size_t cap, esz;
    uint64_t msgs, floor; /* messages in all at scale 1, and the floor */
    bool at;
    uint64_t start;
    bool preempt; /* signal the workers at random instants */
} eo_cfg;

typedef struct eo_run {
    const eo_cfg *cfg;
    sl_chan *ch;
    unsigned np, nc;
    uint64_t n;
    size_t esz, cap;
    uint64_t seed;
    bitmap seen;
    sl_test_barrier start;
    atomic_uint producers_left;
    atomic_uint_fast64_t received, dropped;
    pad_counter *progress; /* np + nc */
} eo_run;

static void *eo_producer(void *arg)
{
    worker *w = arg;
    eo_run *r = w->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN);
    unsigned char buf[ESZ_MAX];
    sl_test_barrier_wait(&r->start);
    for (uint64_t s = 0; s < r->n; s++) {
        msg_make(buf, r->esz, w->idx, s);
        sl_status st = sl_chan_send(r->ch, buf);
        if (st != SL_OK) {
            rec_fail("producer %u: sl_chan_send(seq %llu) returned %s before the close",
                     w->idx, ULL(s), sl_status_str(st));
            break;
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

static void *eo_consumer(void *arg)
{
    worker *w = arg;
    eo_run *r = w->run;
    unsigned c = w->idx - r->np;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN);
    unsigned char buf[ESZ_MAX];
    char who[64];
    snprintf(who, sizeof who, "consumer %u", c);
    uint64_t *last = xnones(r->np);
    uint64_t got = 0;
    sl_test_barrier_wait(&r->start);
    for (;;) {
        sl_status st = sl_chan_recv(r->ch, buf);
        if (st == SL_CLOSED)
            break;
        if (st != SL_OK) {
            rec_fail("%s: sl_chan_recv returned %s", who, sl_status_str(st));
            break;
        }
        uint32_t p;
        uint64_t s;
        if (!msg_read(buf, r->esz, r->np, r->n, &p, &s, who))
            continue;
        fifo_see(&last[p], p, s, who);
        if (bm_set(&r->seen, (uint64_t)p * r->n + s))
            rec_fail("%s: duplicate: producer %u seq %llu received twice", who, p, ULL(s));
        got++;
        if ((got & 127) == 0) {
            atomic_store_explicit(&r->progress[w->idx].v, got, memory_order_relaxed);
            size_t len = sl_chan_len(r->ch);
            if (len > r->cap)
                rec_fail("sl_chan_len = %zu above the capacity %zu", len, r->cap);
        }
        sl_test_maybe_stall(&rng, 4096);
    }
    /* Closed and drained stays so. */
    sl_status st = sl_chan_try_recv(r->ch, buf);
    if (st != SL_CLOSED)
        rec_fail("%s: sl_chan_try_recv after SL_CLOSED returned %s", who, sl_status_str(st));
    atomic_store_explicit(&r->progress[w->idx].v, got, memory_order_relaxed);
    atomic_fetch_add(&r->received, got);
    free(last);
    return NULL;
}

static void eo_drop(void *elem, void *ctx)
{
    (void)elem;
    eo_run *r = ctx;
    atomic_fetch_add(&r->dropped, 1);
}

static uint64_t eo_progress(void *arg)
{
    eo_run *r = arg;
    return sum_counters(r->progress, r->np + r->nc);
}

static void eo_diag(void *arg)
{
    eo_run *r = arg;
    fprintf(stderr, "  %s %u/%u cap %zu: len %zu, closed %d, producers left %u\n",
            sl_test_flavor_name(r->cfg->flavor), r->np, r->nc, r->cap, sl_chan_len(r->ch),
            (int)sl_chan_is_closed(r->ch), atomic_load(&r->producers_left));
    for (unsigned i = 0; i < r->np + r->nc; i++)
        fprintf(stderr, "  %s %u: %llu of %llu\n", i < r->np ? "producer" : "consumer",
                i < r->np ? i : i - r->np,
                ULL(atomic_load_explicit(&r->progress[i].v, memory_order_relaxed)),
                ULL(i < r->np ? r->n : r->n * r->np));
}

static void eo_execute(const eo_cfg *cfg)
{
    eo_run *r = xaligned(sizeof *r);
    r->cfg = cfg;
    r->seed = begin_test(SUITE, "exactly_once[%s]", cfg->name);
    bool multi = cfg->flavor == SL_MPMC;
    r->np = multi ? sl_test_env_uint("SL_STRESS_PRODUCERS", cfg->producers) : 1;
    r->nc = multi ? sl_test_env_uint("SL_STRESS_CONSUMERS", cfg->consumers) : 1;
    uint64_t total = sl_test_scaled(cfg->msgs, cfg->floor);
    r->n = total / r->np ? total / r->np : 1;
    r->esz = cfg->esz;
    r->cap = cfg->cap;
    bm_init(&r->seen, (uint64_t)r->np * r->n);
    sl_test_barrier_init(&r->start, r->np + r->nc);
    atomic_init(&r->producers_left, r->np);
    atomic_init(&r->received, 0);
    atomic_init(&r->dropped, 0);
    r->progress = xaligned((r->np + r->nc) * sizeof *r->progress);

    sl_status st = new_chan(&r->ch, cfg->flavor, cfg->esz, cfg->cap, eo_drop, r, cfg->at,
                            cfg->start);
    CHECK_MSG(st == SL_OK, "channel creation returned %s", sl_status_str(st));
    CHECK_MSG(sl_chan_cap(r->ch) == cfg->cap, "sl_chan_cap %zu, asked %zu", sl_chan_cap(r->ch),
              cfg->cap);

    const team_role roles[] = {{r->np, eo_producer, true}, {r->nc, eo_consumer, true}};
    team t;
    team_start(&t, r, roles, N_OF(roles), cfg->preempt ? &k_preempt_brief : NULL, eo_progress,
               eo_diag);
    double secs = team_end(&t);

    ASSERT_CLEAN();
    uint64_t want = (uint64_t)r->np * r->n;
    uint64_t got = atomic_load(&r->received);
    check_none_lost(&r->seen, r->n, got, want);
    CHECK_MSG(got == want, "received %llu of %llu", ULL(got), ULL(want));
    CHECK_MSG(sl_chan_is_closed(r->ch), "channel not closed");
    CHECK_MSG(sl_chan_len(r->ch) == 0, "len %zu after everything was received",
              sl_chan_len(r->ch));
    sl_chan_free(r->ch);
    CHECK_MSG(atomic_load(&r->dropped) == 0, "sl_chan_free dropped %llu messages from a drained "
              "channel", ULL(atomic_load(&r->dropped)));
    fprintf(stderr, "[%s] %u/%u, %llu messages of %zu B in %.3f s\n", g_test, r->np, r->nc,
            ULL(want), r->esz, secs);

    sl_test_barrier_destroy(&r->start);
    bm_free(&r->seen);
    free(r->progress);
    free(r);
}

#define W64 (UINT64_MAX - 1000)
#define W32 ((uint64_t)UINT32_MAX - 500)

static const eo_cfg eo_mpmc[] = {
    {"mpmc 1/1 cap 1", SL_MPMC, 1, 1, 1, 16, 100000, 10000, false, 0, false},
    {"mpmc 1/1 cap 1024 64B", SL_MPMC, 1, 1, 1024, 64, 2000000, 50000, false, 0, false},
    {"mpmc 2/2 cap 2", SL_MPMC, 2, 2, 2, 16, 100000, 10000, false, 0, false},
    {"mpmc 2/2 cap 64 40B", SL_MPMC, 2, 2, 64, 40, 1000000, 20000, false, 0, false},
    {"mpmc 4/4 cap 3 8B", SL_MPMC, 4, 4, 3, 8, 100000, 10000, false, 0, false},
    {"mpmc 4/4 cap 1024", SL_MPMC, 4, 4, 1024, 16, 2000000, 40000, false, 0, false},
    {"mpmc 8/8 cap 1", SL_MPMC, 8, 8, 1, 16, 100000, 8000, false, 0, false},
    {"mpmc 8/8 cap 7 64B", SL_MPMC, 8, 8, 7, 64, 150000, 10000, false, 0, false},
    {"mpmc 8/1 cap 7", SL_MPMC, 8, 1, 7, 16, 150000, 10000, false, 0, false},
    {"mpmc 8/1 cap 1024", SL_MPMC, 8, 1, 1024, 16, 1000000, 20000, false, 0, false},
    {"mpmc 1/8 cap 2 64B", SL_MPMC, 1, 8, 2, 64, 100000, 10000, false, 0, false},
    {"mpmc 1/8 cap 64", SL_MPMC, 1, 8, 64, 16, 1000000, 20000, false, 0, false},
    {"mpmc 1/1 cap 1 preempted", SL_MPMC, 1, 1, 1, 16, 60000, 5000, false, 0, true},
    {"mpmc 2/2 cap 2 preempted", SL_MPMC, 2, 2, 2, 64, 60000, 5000, false, 0, true},
    /* Volume: blocking sends and receives in the common shape, long enough
     * for many parks and wake-ups. */
    {"mpmc 2/2 cap 1024 8B volume", SL_MPMC, 2, 2, 1024, 8, 10000000, 100000, false, 0, false},
};

static const eo_cfg eo_spsc[] = {
    {"spsc cap 1", SL_SPSC, 1, 1, 1, 16, 100000, 10000, false, 0, false},
    {"spsc cap 2 64B", SL_SPSC, 1, 1, 2, 64, 100000, 10000, false, 0, false},
    {"spsc cap 3 40B", SL_SPSC, 1, 1, 3, 40, 100000, 10000, false, 0, false},
    {"spsc cap 1000", SL_SPSC, 1, 1, 1000, 16, 2000000, 50000, false, 0, false},
    {"spsc cap 1 preempted", SL_SPSC, 1, 1, 1, 16, 60000, 5000, false, 0, true},
};

static const eo_cfg eo_wrap[] = {
    {"mpmc 4/4 cap 7 @2^64-1000", SL_MPMC, 4, 4, 7, 16, 150000, 10000, true, W64, false},
    {"mpmc 2/2 cap 1024 @2^64-1000", SL_MPMC, 2, 2, 1024, 16, 600000, 20000, true, W64, false},
    {"mpmc 3/3 cap 1 @2^32-500", SL_MPMC, 3, 3, 1, 16, 80000, 6000, true, W32, false},
    {"mpmc 8/8 cap 64 @2^64-5", SL_MPMC, 8, 8, 64, 64, 300000, 10000, true, UINT64_MAX - 5, false},
    {"spsc cap 3 @2^64-1000", SL_SPSC, 1, 1, 3, 16, 100000, 10000, true, W64, false},
    {"spsc cap 1000 @2^64-1000", SL_SPSC, 1, 1, 1000, 64, 600000, 20000, true, W64, false},
    {"spsc cap 1 @2^64-3", SL_SPSC, 1, 1, 1, 16, 100000, 8000, true, UINT64_MAX - 3, false},
};

START_TEST(exactly_once_mpmc) { eo_execute(&eo_mpmc[_i]); }
END_TEST

START_TEST(exactly_once_spsc) { eo_execute(&eo_spsc[_i]); }
END_TEST

START_TEST(exactly_once_wrap) { eo_execute(&eo_wrap[_i]); }
END_TEST

/* =========================================================================
 * 2. Mixed calls with a close in the middle; drops at free
 * ========================================================================= */

typedef struct mx_cfg {
    const char *name;
    sl_flavor flavor;
    unsigned producers, consumers;
    size_t cap, esz;
    uint64_t msgs, floor; /* per round, in all */
    unsigned rounds, rounds_floor;
    bool at;
    uint64_t start;
    bool preempt; /* signal producers and consumers at random instants */
} mx_cfg;

static void *mx_producer(void *arg)
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
    while (s < r->n && !closed) {
        unsigned op = (unsigned)(sl_test_rng_next(&rng) % 8);
        if (op <= 5) {
            msg_make(buf, r->esz, p, s);
            sl_status st;
            uint64_t timeout = 0, t0 = 0;
            const char *what;
            if (op <= 2) {
                what = "sl_chan_send";
                st = sl_chan_send(r->ch, buf);
            } else if (op <= 4) {
                what = "sl_chan_try_send";
                st = sl_chan_try_send(r->ch, buf);
            } else {
                what = "sl_chan_send_for";
                timeout = k_timeouts[sl_test_rng_next(&rng) % N_TIMEOUTS];
                t0 = sl_test_now_ns();
                st = sl_chan_send_for(r->ch, buf, timeout);
            }
            if (st == SL_OK) {
                mc_mark_sent(r, p, s);
                s++;
                ok++;
            } else if (st == SL_CLOSED) {
                closed = true;
            } else if ((st == SL_FULL && op >= 3 && op <= 4) || (st == SL_TIMEDOUT && op == 5)) {
                if (st == SL_TIMEDOUT && timeout > 0) {
                    uint64_t el = sl_test_now_ns() - t0;
                    if (el < timeout)
                        rec_fail("producer %u: sl_chan_send_for(%llu ns) returned SL_TIMEDOUT "
                                 "after %llu ns",
                                 p, ULL(timeout), ULL(el));
                }
                /* Still ours: give it up (it is never sent) or try again. */
                if (sl_test_rng_next(&rng) & 1)
                    s++;
                else
                    sched_yield();
            } else if (op <= 2 && st == SL_FULL) {
                rec_fail("producer %u: %s returned SL_FULL", p, what);
            } else {
                rec_fail("producer %u: %s returned %s", p, what, sl_status_str(st));
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
                /* The tail of the batch is still ours. */
                if (sl_chan_is_closed(r->ch))
                    closed = true;
                else if (sl_test_rng_next(&rng) & 1)
                    s++; /* give up the first unsent one */
                else
                    sched_yield();
            }
        }
        atomic_store_explicit(&r->progress[p].v, s, memory_order_relaxed);
        sl_test_maybe_stall(&rng, 1024);
    }
    if (closed && s < r->n) {
        /* Closed stays closed for every send form. */
        msg_make(buf, r->esz, p, s);
        sl_status st = sl_chan_try_send(r->ch, buf);
        if (st == SL_OK) {
            rec_fail("producer %u: sl_chan_try_send after the close returned SL_OK", p);
            mc_mark_sent(r, p, s);
            ok++;
        } else if (st != SL_CLOSED) {
            rec_fail("producer %u: sl_chan_try_send after the close returned %s", p,
                     sl_status_str(st));
        }
        if (st != SL_OK) {
            st = sl_chan_send(r->ch, buf);
            if (st == SL_OK) {
                rec_fail("producer %u: sl_chan_send after the close returned SL_OK", p);
                mc_mark_sent(r, p, s);
                ok++;
            } else if (st != SL_CLOSED) {
                rec_fail("producer %u: sl_chan_send after the close returned %s", p,
                         sl_status_str(st));
            }
        }
    }
    r->sent_ok[p] = ok;
    atomic_store_explicit(&r->progress[p].v, r->n, memory_order_relaxed);
    atomic_fetch_add(&r->producers_done, 1);
    return NULL;
}

static void *mx_consumer(void *arg)
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
    sl_test_barrier_wait(&r->start);
    while (!done) {
        if (r->quit_early[c] && sl_chan_is_closed(r->ch))
            break; /* leave the rest to sl_chan_free */
        unsigned op = (unsigned)(sl_test_rng_next(&rng) % 8);
        sl_status st;
        if (op <= 2) {
            st = sl_chan_recv(r->ch, buf);
            if (st == SL_OK) {
                mc_take(r, c, buf, who, false);
                got++;
            } else if (st == SL_CLOSED) {
                done = saw_closed = true;
            } else {
                rec_fail("%s: sl_chan_recv returned %s", who, sl_status_str(st));
                done = true;
            }
        } else if (op <= 4) {
            st = sl_chan_try_recv(r->ch, buf);
            if (st == SL_OK) {
                mc_take(r, c, buf, who, false);
                got++;
            } else if (st == SL_CLOSED) {
                done = saw_closed = true;
            } else if (st == SL_EMPTY) {
                sched_yield();
            } else {
                rec_fail("%s: sl_chan_try_recv returned %s", who, sl_status_str(st));
                done = true;
            }
        } else if (op == 5) {
            uint64_t timeout = k_timeouts[sl_test_rng_next(&rng) % N_TIMEOUTS];
            uint64_t t0 = sl_test_now_ns();
            st = sl_chan_recv_for(r->ch, buf, timeout);
            if (st == SL_OK) {
                mc_take(r, c, buf, who, false);
                got++;
            } else if (st == SL_CLOSED) {
                done = saw_closed = true;
            } else if (st == SL_TIMEDOUT) {
                uint64_t el = sl_test_now_ns() - t0;
                if (el < timeout)
                    rec_fail("%s: sl_chan_recv_for(%llu ns) returned SL_TIMEDOUT after %llu ns",
                             who, ULL(timeout), ULL(el));
            } else {
                rec_fail("%s: sl_chan_recv_for returned %s", who, sl_status_str(st));
                done = true;
            }
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
            if (n == 0) {
                st = sl_chan_try_recv(r->ch, buf);
                if (st == SL_OK) {
                    mc_take(r, c, buf, who, false);
                    got++;
                } else if (st == SL_CLOSED) {
                    done = saw_closed = true;
                } else if (st == SL_EMPTY) {
                    sched_yield();
                } else {
                    rec_fail("%s: sl_chan_try_recv returned %s", who, sl_status_str(st));
                    done = true;
                }
            }
        }
        atomic_store_explicit(&r->progress[w->idx].v, got, memory_order_relaxed);
        sl_test_maybe_stall(&rng, 1024);
    }
    if (saw_closed) {
        atomic_fetch_add(&r->closed_seen, 1);
        /* Closed and drained: every receive form says so from now on. A message
         * here came from a send that raced the close and won after we were told
         * the channel was drained. */
        for (int k = 0; k < 3; k++) {
            sl_status st = k == 0 ? sl_chan_try_recv(r->ch, buf)
                         : k == 1 ? sl_chan_recv_for(r->ch, buf, 0)
                                  : sl_chan_recv(r->ch, buf);
            if (st == SL_OK) {
                mc_take(r, c, buf, who, true);
                got++;
                k--;
            } else if (st != SL_CLOSED) {
                rec_fail("%s: receive form %d after SL_CLOSED returned %s", who, k,
                         sl_status_str(st));
            }
        }
        if (sl_chan_try_recv_n(r->ch, batch, BATCH_MAX) != 0)
            rec_fail("%s: sl_chan_try_recv_n after SL_CLOSED returned messages", who);
    }
    atomic_store_explicit(&r->progress[w->idx].v, got, memory_order_relaxed);
    return NULL;
}

static void *mx_closer(void *arg)
{
    worker *w = arg;
    mc_round *r = w->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ 0xC105Eull ^ r->round);
    mc_close_at_target(r, sl_test_rng_next(&rng) & 1);
    return NULL;
}

/* Close is linearizable with sends (chan.c): by default a send that returned
 * SL_OK after a receiver saw SL_CLOSED is a failure. SL_STRESS_STRICT_CLOSE=0
 * only reports it. */
static bool strict_close(void)
{
    const char *v = getenv("SL_STRESS_STRICT_CLOSE");
    return !(v && strcmp(v, "0") == 0);
}

/* One round: a fresh channel, threads, a close at a random point, the books. */
static void mx_round(const mx_cfg *cfg, uint64_t seed, unsigned round, unsigned np, unsigned nc,
                     uint64_t n, uint64_t *late_total, uint64_t *drops_total)
{
    mc_round *r = mc_begin(seed, round, np, nc, n, cfg->esz);
    r->flavor = cfg->flavor;
    r->cap = cfg->cap;
    sl_status st = new_chan(&r->ch, cfg->flavor, cfg->esz, cfg->cap, mc_drop, r, cfg->at,
                            cfg->start);
    CHECK_MSG(st == SL_OK, "channel creation returned %s", sl_status_str(st));

    const team_role roles[] = {
        {np, mx_producer, true}, {nc, mx_consumer, true}, {1, mx_closer, false}};
    team t;
    team_start(&t, r, roles, N_OF(roles), cfg->preempt ? &k_preempt_brief : NULL, mc_progress,
               mc_diag);
    team_end(&t);

    /* Merge what the consumers saw, then let sl_chan_free drop the rest. */
    fold_newest(r->max_recv, r->recv_last, nc, np);
    size_t len = sl_chan_len(r->ch);
    CHECK_MSG(len <= cfg->cap, "round %u: len %zu above capacity %zu", round, len, cfg->cap);
    sl_chan_free(r->ch);
    ASSERT_CLEAN();

    uint64_t drops = 0;
    for (unsigned p = 0; p < np; p++) {
        uint64_t recvd = mc_received(r, p);
        drops += r->drop_cnt[p];
        for (uint64_t s = 0; s < n; s++) {
            uint64_t i = (uint64_t)p * n + s;
            bool sent = bm_get(&r->sent, i), rv = bm_get(&r->recv, i), dr = bm_get(&r->drop, i);
            CHECK_MSG(sent || !rv,
                      "round %u (%s): producer %u seq %llu was received, but its send "
                      "reported failure (the message was consumed anyway)",
                      round, k_mode_names[r->mode], p, ULL(s));
            CHECK_MSG(sent || !dr,
                      "round %u (%s): producer %u seq %llu was dropped at free, but its send "
                      "reported failure",
                      round, k_mode_names[r->mode], p, ULL(s));
            CHECK_MSG(!sent || rv || dr,
                      "round %u (%s): lost: producer %u seq %llu was sent (SL_OK) but neither "
                      "received nor dropped",
                      round, k_mode_names[r->mode], p, ULL(s));
        }
        CHECK_MSG(r->sent_ok[p] == recvd + r->drop_cnt[p],
                  "round %u: producer %u: sent %llu != received %llu + dropped %llu", round, p,
                  ULL(r->sent_ok[p]), ULL(recvd), ULL(r->drop_cnt[p]));
    }
    /* len at rest: exact for SPSC; for MPMC an upper bound that is 0 exactly
     * when empty (sluice/mpmc.h). */
    CHECK_MSG(len >= drops && (len == 0) == (drops == 0) &&
                  (cfg->flavor != SL_SPSC || len == drops),
              "round %u: sl_chan_len said %zu before free, %llu were dropped", round, len,
              ULL(drops));
    unsigned saw = atomic_load(&r->closed_seen);
    uint64_t late_recv = atomic_load(&r->late_after_closed);
    /* A send that returned SL_OK before the close began must be received before
     * any receiver is told "closed and drained". */
    CHECK_MSG(saw == 0 || r->drops_pre == 0,
              "round %u (%s): %llu message(s) whose send returned SL_OK before sl_chan_close "
              "was called were still inside after a receiver got SL_CLOSED",
              round, k_mode_names[r->mode], ULL(r->drops_pre));
    if (r->mode == MODE_DRAIN)
        CHECK_MSG(saw == nc, "round %u: %u of %u draining consumers saw SL_CLOSED", round, saw,
                  nc);
    uint64_t late = late_recv + (saw ? r->drops_late : 0);
    if (late && strict_close())
        ck_abort_msg("%s [seed %llu]: round %u (%s): %llu send(s) racing sl_chan_close returned "
                     "SL_OK after a receiver had been told the channel was closed and drained "
                     "(%llu received after SL_CLOSED, %llu dropped at free)",
                     g_test, ULL(g_seed), round, k_mode_names[r->mode], ULL(late),
                     ULL(late_recv), ULL(r->drops_late));
    *late_total += late;
    *drops_total += drops;
    uint64_t accepted = 0;
    for (unsigned p = 0; p < np; p++)
        accepted += r->sent_ok[p];
    sl_test_account("messages received or dropped exactly once, racing close", accepted);

    mc_end(r);
}

static void mx_execute(const mx_cfg *cfg)
{
    uint64_t seed = begin_test(SUITE, "mixed_close[%s]", cfg->name);
    bool multi = cfg->flavor == SL_MPMC;
    unsigned np = multi ? sl_test_env_uint("SL_STRESS_PRODUCERS", cfg->producers) : 1;
    unsigned nc = multi ? sl_test_env_uint("SL_STRESS_CONSUMERS", cfg->consumers) : 1;
    uint64_t total = sl_test_scaled(cfg->msgs, cfg->floor);
    uint64_t n = total / np ? total / np : 1;
    unsigned rounds = (unsigned)sl_test_scaled(cfg->rounds, cfg->rounds_floor);
    uint64_t late = 0, drops = 0, t0 = sl_test_now_ns();
    for (unsigned round = 0; round < rounds; round++)
        mx_round(cfg, seed, round, np, nc, n, &late, &drops);
    fprintf(stderr, "[%s] %u rounds of %u/%u x %llu messages in %.3f s; %llu dropped at free\n",
            g_test, rounds, np, nc, ULL(n), (double)(sl_test_now_ns() - t0) / 1e9, ULL(drops));
    if (late)
        fprintf(stderr,
                "[%s] note: %llu send(s) racing sl_chan_close returned SL_OK after a receiver "
                "had already seen SL_CLOSED (received late or dropped at free; never lost). "
                "SL_STRESS_STRICT_CLOSE=1 makes this a failure.\n",
                g_test, ULL(late));
}

static const mx_cfg mx_cfgs[] = {
    {"mpmc 4/4 cap 3 8B", SL_MPMC, 4, 4, 3, 8, 40000, 4000, 30, 3, false, 0, false},
    {"mpmc 8/8 cap 64 64B", SL_MPMC, 8, 8, 64, 64, 60000, 4000, 30, 3, false, 0, false},
    {"mpmc 2/6 cap 1", SL_MPMC, 2, 6, 1, 16, 15000, 2000, 30, 3, false, 0, false},
    {"mpmc 6/2 cap 1024 40B", SL_MPMC, 15, 2, 1024, 40, 60000, 4000, 30, 3, false, 0, false},
    {"spsc cap 1", SL_SPSC, 1, 1, 1, 16, 15000, 2000, 30, 3, false, 0, false},
    {"spsc cap 2 64B", SL_SPSC, 1, 1, 2, 64, 20000, 2000, 30, 3, false, 0, false},
    {"spsc cap 64", SL_SPSC, 1, 1, 64, 16, 60000, 4000, 30, 3, false, 0, false},
    {"mpmc 4/4 cap 7 @2^64-1000", SL_MPMC, 4, 4, 7, 16, 40000, 4000, 15, 2, true, W64, false},
    {"spsc cap 3 @2^64-1000", SL_SPSC, 1, 1, 3, 16, 20000, 3000, 15, 2, true, W64, false},
    {"mpmc 4/4 cap 3 preempted", SL_MPMC, 4, 4, 3, 16, 20000, 3000, 30, 3, false, 0, true},
    {"mpmc 2/6 cap 1 8B preempted", SL_MPMC, 2, 6, 1, 8, 10000, 2000, 30, 3, false, 0, true},
    {"spsc cap 2 preempted", SL_SPSC, 1, 1, 2, 16, 20000, 2000, 30, 3, false, 0, true},
};

START_TEST(mixed_close) { mx_execute(&mx_cfgs[_i]); }
END_TEST

/* =========================================================================
 * 4. Drop accounting: consumers stop, producers block, close, free drops
 * ========================================================================= */

typedef struct dr_run {
    const mx_cfg *cfg;
    sl_chan *ch;
    unsigned np, nc, round;
    uint64_t n, quota;
    size_t esz, cap;
    uint64_t seed;
    bitmap recv, drop;
    sl_test_barrier start;
    atomic_uint_fast64_t tickets;
    atomic_int closing;
    pad_counter *progress;
    uint64_t *sent_ok;   /* [np]: the sent seqs are exactly 0 .. sent_ok-1 */
    sl_status *end_status; /* [np]: SL_CLOSED, or SL_OK if it sent all n */
    uint64_t *recv_last; /* [nc][np] */
    uint64_t *max_recv, *drop_last, *drop_cnt; /* [np] */
} dr_run;

static void *dr_producer(void *arg)
{
    worker *w = arg;
    dr_run *r = w->run;
    unsigned p = w->idx;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN ^ r->round);
    unsigned char buf[ESZ_MAX], batch[BATCH_MAX * ESZ_MAX];
    uint64_t s = 0;
    sl_status end = SL_OK;
    sl_test_barrier_wait(&r->start);
    while (s < r->n) {
        unsigned op = (unsigned)(sl_test_rng_next(&rng) % 8);
        if (op == 7) {
            size_t k = msg_batch(batch, r->esz, p, s, r->n - s, BATCH_MAX, &rng);
            size_t got = sl_chan_try_send_n(r->ch, batch, k);
            s += got; /* the unsent tail is retried next */
            if (got == 0 && sl_chan_is_closed(r->ch)) {
                end = SL_CLOSED;
                break;
            }
        } else {
            msg_make(buf, r->esz, p, s);
            sl_status st = op == 6 ? sl_chan_send_for(r->ch, buf, 50000000) : sl_chan_send(r->ch, buf);
            if (st == SL_OK) {
                s++;
            } else if (st == SL_CLOSED) {
                if (!atomic_load(&r->closing))
                    rec_fail("producer %u: send returned SL_CLOSED before the close", p);
                end = SL_CLOSED;
                break;
            } else if (st != SL_TIMEDOUT || op != 6) {
                rec_fail("producer %u: send returned %s", p, sl_status_str(st));
                end = st;
                break;
            }
        }
        atomic_store_explicit(&r->progress[p].v, s, memory_order_relaxed);
        sl_test_maybe_stall(&rng, 2048);
    }
    r->sent_ok[p] = s;
    r->end_status[p] = end;
    atomic_store_explicit(&r->progress[p].v, s + 1, memory_order_relaxed);
    return NULL;
}

static void *dr_consumer(void *arg)
{
    worker *w = arg;
    dr_run *r = w->run;
    unsigned c = w->idx - r->np;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN ^ r->round);
    unsigned char buf[ESZ_MAX];
    char who[64];
    snprintf(who, sizeof who, "consumer %u", c);
    uint64_t got = 0;
    sl_test_barrier_wait(&r->start);
    /* Each ticket is one message this consumer must get: the producers have
     * more than quota + capacity to send and nobody closes before we stop. */
    while (atomic_fetch_add(&r->tickets, 1) < r->quota) {
        sl_status st;
        unsigned op = (unsigned)(sl_test_rng_next(&rng) % 4);
        do {
            if (op == 0)
                st = sl_chan_try_recv(r->ch, buf);
            else if (op == 1)
                st = sl_chan_recv_for(r->ch, buf, 100000);
            else
                st = sl_chan_recv(r->ch, buf);
            if (st == SL_EMPTY || st == SL_TIMEDOUT)
                sched_yield();
        } while ((st == SL_EMPTY && op == 0) || (st == SL_TIMEDOUT && op == 1));
        if (st != SL_OK) {
            rec_fail("%s: receive form %u returned %s while messages were due", who, op,
                     sl_status_str(st));
            break;
        }
        uint32_t p;
        uint64_t s;
        if (!msg_read(buf, r->esz, r->np, r->n, &p, &s, who))
            continue;
        fifo_see(&r->recv_last[(size_t)c * r->np + p], p, s, who);
        if (bm_set(&r->recv, (uint64_t)p * r->n + s))
            rec_fail("%s: duplicate: producer %u seq %llu", who, p, ULL(s));
        got++;
        atomic_store_explicit(&r->progress[w->idx].v, got, memory_order_relaxed);
        sl_test_maybe_stall(&rng, 2048);
    }
    return NULL;
}

static void dr_drop(void *elem, void *ctx)
{
    dr_run *r = ctx;
    uint32_t p;
    uint64_t s;
    if (!msg_read(elem, r->esz, r->np, r->n, &p, &s, "drop function"))
        return;
    drop_see(&r->drop, &r->recv, &r->drop_last[p], r->max_recv[p], p, s, (uint64_t)p * r->n + s);
    r->drop_cnt[p]++;
}

static uint64_t dr_progress(void *arg)
{
    dr_run *r = arg;
    return sum_counters(r->progress, r->np + r->nc);
}

static void dr_diag(void *arg)
{
    dr_run *r = arg;
    fprintf(stderr, "  round %u, %s %u/%u cap %zu quota %llu: len %zu, closed %d, closing %d\n",
            r->round, sl_test_flavor_name(r->cfg->flavor), r->np, r->nc, r->cap, ULL(r->quota),
            sl_chan_len(r->ch), (int)sl_chan_is_closed(r->ch), atomic_load(&r->closing));
    print_progress(r->progress, r->np, r->nc, "producer", "consumer");
}

static void dr_round(const mx_cfg *cfg, uint64_t seed, unsigned round, unsigned np, unsigned nc,
                     uint64_t n, uint64_t *drops_total)
{
    sl_test_rng rng;
    sl_test_rng_seed(&rng, seed ^ (round + 1) * 0xD1B54A32D192ED03ull);
    dr_run *r = xaligned(sizeof *r);
    uint64_t total = (uint64_t)np * n;
    CHECK_MSG(total > cfg->cap + 1, "config too small");
    r->cfg = cfg;
    r->np = np;
    r->nc = nc;
    r->round = round;
    r->n = n;
    r->esz = cfg->esz;
    r->cap = cfg->cap;
    r->seed = seed;
    /* Leave more than a channel-full unreceived, so some producer blocks. */
    r->quota = sl_test_rng_next(&rng) % (total - cfg->cap);
    bm_init(&r->recv, total);
    bm_init(&r->drop, total);
    sl_test_barrier_init(&r->start, np + nc);
    atomic_init(&r->tickets, 0);
    atomic_init(&r->closing, 0);
    r->progress = xaligned((np + nc) * sizeof *r->progress);
    r->sent_ok = xcalloc(np, sizeof(uint64_t));
    r->end_status = xcalloc(np, sizeof(sl_status));
    r->recv_last = xnones((size_t)nc * np);
    r->max_recv = xnones(np);
    r->drop_last = xnones(np);
    r->drop_cnt = xcalloc(np, sizeof(uint64_t));

    sl_status st = new_chan(&r->ch, cfg->flavor, cfg->esz, cfg->cap, dr_drop, r, cfg->at,
                            cfg->start);
    CHECK_MSG(st == SL_OK, "channel creation returned %s", sl_status_str(st));
    const team_role roles[] = {{np, dr_producer, false}, {nc, dr_consumer, false}};
    team t;
    team_start(&t, r, roles, N_OF(roles), NULL, dr_progress, dr_diag);
    team_join(&t, np, np + nc);
    /* The consumers are gone: the producers fill the channel and park. */
    uint64_t t0 = sl_test_now_ns();
    while (sl_chan_len(r->ch) < cfg->cap && sl_test_now_ns() - t0 < 2000000000ull)
        sl_test_sleep_ns(100000);
    sl_test_sleep_ns(1000000 + sl_test_rng_next(&rng) % 3000000);
    atomic_store(&r->closing, 1);
    sl_chan_close(r->ch);
    team_end(&t);
    ASSERT_CLEAN();

    fold_newest(r->max_recv, r->recv_last, nc, np);
    size_t len = sl_chan_len(r->ch);
    CHECK_MSG(len <= cfg->cap, "round %u: len %zu above capacity %zu", round, len, cfg->cap);
    sl_chan_free(r->ch);
    ASSERT_CLEAN();

    uint64_t sent = 0, drops = 0, recvd = 0;
    unsigned blocked = 0;
    for (unsigned p = 0; p < np; p++) {
        sent += r->sent_ok[p];
        drops += r->drop_cnt[p];
        if (r->end_status[p] == SL_CLOSED)
            blocked++;
        for (uint64_t s = 0; s < n; s++) {
            uint64_t i = (uint64_t)p * n + s;
            bool was_sent = s < r->sent_ok[p], rv = bm_get(&r->recv, i), dr = bm_get(&r->drop, i);
            if (rv)
                recvd++;
            CHECK_MSG(was_sent || (!rv && !dr),
                      "round %u: producer %u seq %llu was %s, but its send never succeeded",
                      round, p, ULL(s), rv ? "received" : "dropped");
            CHECK_MSG(!was_sent || rv || dr,
                      "round %u: lost: producer %u seq %llu sent but neither received nor "
                      "dropped by sl_chan_free",
                      round, p, ULL(s));
        }
    }
    CHECK_MSG(recvd == r->quota, "round %u: received %llu, quota %llu", round, ULL(recvd),
              ULL(r->quota));
    CHECK_MSG(len >= drops && (len == 0) == (drops == 0),
              "round %u: sl_chan_len said %zu before free, %llu dropped", round, len,
              ULL(drops));
    CHECK_MSG(sent == recvd + drops, "round %u: sent %llu != received %llu + dropped %llu",
              round, ULL(sent), ULL(recvd), ULL(drops));
    CHECK_MSG(blocked > 0, "round %u: no producer was stopped by the close (sent %llu of %llu)",
              round, ULL(sent), ULL(total));
    *drops_total += drops;
    sl_test_account("messages received or dropped exactly once, racing close", sent);

    sl_test_barrier_destroy(&r->start);
    bm_free(&r->recv);
    bm_free(&r->drop);
    free(r->progress);
    free(r->sent_ok);
    free(r->end_status);
    free(r->recv_last);
    free(r->max_recv);
    free(r->drop_last);
    free(r->drop_cnt);
    free(r);
}

static const mx_cfg dr_cfgs[] = {
    {"mpmc 4/4 cap 64 8B", SL_MPMC, 4, 4, 64, 8, 40000, 4000, 20, 3, false, 0, false},
    {"mpmc 8/2 cap 7 64B", SL_MPMC, 8, 2, 7, 64, 15000, 2000, 20, 3, false, 0, false},
    {"mpmc 3/5 cap 1 8B", SL_MPMC, 3, 5, 1, 8, 10000, 1500, 20, 3, false, 0, false},
    {"spsc cap 1000", SL_SPSC, 1, 1, 1000, 16, 40000, 4000, 20, 3, false, 0, false},
    {"spsc cap 1", SL_SPSC, 1, 1, 1, 40, 8000, 1000, 20, 3, false, 0, false},
    {"mpmc 4/4 cap 64 @2^64-1000", SL_MPMC, 4, 4, 64, 16, 40000, 4000, 10, 2, true, W64, false},
    {"spsc cap 7 @2^64-1000", SL_SPSC, 1, 1, 7, 16, 30000, 3000, 10, 2, true, W64, false},
};

static void dr_execute(const mx_cfg *cfg)
{
    uint64_t seed = begin_test(SUITE, "drop_blocked[%s]", cfg->name);
    bool multi = cfg->flavor == SL_MPMC;
    unsigned np = multi ? sl_test_env_uint("SL_STRESS_PRODUCERS", cfg->producers) : 1;
    unsigned nc = multi ? sl_test_env_uint("SL_STRESS_CONSUMERS", cfg->consumers) : 1;
    uint64_t total = sl_test_scaled(cfg->msgs, cfg->floor);
    if (total < 2 * cfg->cap + 2)
        total = 2 * cfg->cap + 2;
    uint64_t n = total / np ? total / np : 1;
    if ((uint64_t)np * n <= cfg->cap + 1)
        n = (cfg->cap + 2) / np + 1;
    unsigned rounds = (unsigned)sl_test_scaled(cfg->rounds, cfg->rounds_floor);
    uint64_t drops = 0, t0 = sl_test_now_ns();
    for (unsigned round = 0; round < rounds; round++)
        dr_round(cfg, seed, round, np, nc, n, &drops);
    fprintf(stderr, "[%s] %u rounds, %llu dropped at free in all, %.3f s\n", g_test, rounds,
            ULL(drops), (double)(sl_test_now_ns() - t0) / 1e9);
}

START_TEST(drop_blocked) { dr_execute(&dr_cfgs[_i]); }
END_TEST

/* =========================================================================
 * 5. close_drains: what was sent before the close is received before SL_CLOSED
 *
 * Many short rounds: a sender sends 1-3 messages, then closes the channel
 * itself (so the sends precede the close in program order); a receiver that
 * is spinning, parked, polling in batches or waiting in sl_chan_recv_n_for
 * must get all of them before SL_CLOSED. The preemptor stops the receiver at random instants, e.g.
 * between a failed pop and its look at the closed flag.
 * ========================================================================= */

typedef struct cd_run {
    sl_flavor flavor;
    sl_chan *ch;
    unsigned rounds, k, got, mode;
    uint64_t seed, delay_ns;
    sl_test_barrier go, done;
    atomic_uint_fast64_t progress;
    uint64_t dropped;
} cd_run;

static void *cd_sender(void *arg)
{
    cd_run *r = ((worker *)arg)->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ GOLDEN);
    for (unsigned round = 0; round < r->rounds; round++) {
        sl_test_barrier_wait(&r->go);
        busy_wait(r->delay_ns);
        for (unsigned j = 0; j < r->k; j++) {
            uint64_t v = j;
            sl_status st = (sl_test_rng_next(&rng) & 1) ? sl_chan_send(r->ch, &v)
                                                        : sl_chan_try_send(r->ch, &v);
            if (st != SL_OK)
                rec_fail("round %u: send %u returned %s (capacity 4, never full)", round, j,
                         sl_status_str(st));
        }
        sl_chan_close(r->ch);
        sl_test_barrier_wait(&r->done);
    }
    return NULL;
}

static void *cd_receiver(void *arg)
{
    cd_run *r = ((worker *)arg)->run;
    for (unsigned round = 0; round < r->rounds; round++) {
        sl_test_barrier_wait(&r->go);
        unsigned got = 0;
        uint64_t v[4];
        for (;;) {
            sl_status st;
            size_t n = 0;
            switch (r->mode) {
            case 0:
                st = sl_chan_try_recv(r->ch, v);
                break;
            case 1:
                st = sl_chan_recv(r->ch, v);
                break;
            case 2:
                st = sl_chan_recv_for(r->ch, v, 2000);
                break;
            case 3:
                n = sl_chan_try_recv_n(r->ch, v, 4);
                st = n ? SL_OK : sl_chan_try_recv(r->ch, v);
                if (st == SL_OK && n == 0)
                    n = 1;
                break;
            default: /* the batch receive that waits: its SL_CLOSED alone ends the round */
                st = sl_chan_recv_n_for(r->ch, v, 4, (round & 1) ? SL_FOREVER : 2000, &n);
                break;
            }
            if (st == SL_OK) {
                if (n == 0)
                    n = 1;
                for (size_t i = 0; i < n; i++) {
                    if (v[i] != got)
                        rec_fail("round %u: message %llu arrived as number %u", round,
                                 ULL(v[i]), got);
                    got++;
                }
            } else if (st == SL_CLOSED) {
                break;
            } else if (st != SL_EMPTY && st != SL_TIMEDOUT) {
                rec_fail("round %u: receive mode %u returned %s", round, r->mode,
                         sl_status_str(st));
                break;
            }
        }
        r->got = got;
        atomic_fetch_add_explicit(&r->progress, 1, memory_order_relaxed);
        sl_test_barrier_wait(&r->done);
    }
    return NULL;
}

static void cd_drop(void *elem, void *ctx)
{
    (void)elem;
    ((cd_run *)ctx)->dropped++;
}

static uint64_t cd_progress(void *arg)
{
    cd_run *r = arg;
    return atomic_load(&r->progress);
}

START_TEST(close_drains)
{
    cd_run *r = xaligned(sizeof *r);
    r->flavor = _i == 0 ? SL_MPMC : SL_SPSC;
    r->seed = begin_test(SUITE, "close_drains[%s preempted]", _i == 0 ? "mpmc" : "spsc");
    r->rounds = (unsigned)sl_test_scaled(4000, 400);
    sl_test_barrier_init(&r->go, 3);
    sl_test_barrier_init(&r->done, 3);
    atomic_init(&r->progress, 0);
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed);
    const team_role roles[] = {{1, cd_sender, true}, {1, cd_receiver, true}};
    team t;
    team_start(&t, r, roles, N_OF(roles), &k_preempt_brief, cd_progress, NULL);
    unsigned missed_rounds = 0, missed = 0;
    for (unsigned round = 0; round < r->rounds; round++) {
        sl_chan_opts o = {.flavor = r->flavor, .elem_size = sizeof(uint64_t), .capacity = 4,
                          .drop = cd_drop, .drop_ctx = r};
        CHECK_MSG(sl_chan_new(&r->ch, &o) == SL_OK, "sl_chan_new failed");
        r->k = 1 + (unsigned)(sl_test_rng_next(&rng) % 3);
        r->mode = (unsigned)(sl_test_rng_next(&rng) % 5);
        r->delay_ns = sl_test_rng_next(&rng) % 50000;
        r->dropped = 0;
        sl_test_barrier_wait(&r->go);
        sl_test_barrier_wait(&r->done);
        sl_chan_free(r->ch);
        if (r->got != r->k) {
            missed_rounds++;
            missed += r->k - r->got;
            rec_fail("round %u (receive mode %u): %u of %u messages sent before sl_chan_close "
                     "were received before SL_CLOSED; %llu left to the drop function",
                     round, r->mode, r->got, r->k, ULL(r->dropped));
        }
    }
    team_end(&t);
    fprintf(stderr, "[%s] %u rounds, %llu preemptions; %u rounds lost %u messages\n", g_test,
            r->rounds, ULL(atomic_load(&g_preempt_hits)), missed_rounds, missed);
    ASSERT_CLEAN();
    sl_test_barrier_destroy(&r->go);
    sl_test_barrier_destroy(&r->done);
    free(r);
}
END_TEST

/* =========================================================================
 * fd_loop: an epoll loop on the receive descriptor
 * ========================================================================= */

typedef struct fl_run {
    sl_chan *ch;
    unsigned np;       /* producers */
    uint64_t n;        /* messages per producer */
    uint64_t seed;
    atomic_uint left;  /* producers still sending: the last one closes */
    atomic_uint_fast64_t got;
    uint64_t wakes, empty_wakes;
} fl_run;

static void *fl_producer(void *arg)
{
    worker *w = arg;
    fl_run *r = w->run;
    sl_test_rng rng;
    unsigned p = w->idx - 1; /* the loop is worker 0 */
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN);
    for (uint64_t s = 0; s < r->n && !failed(); s++) {
        uint64_t v = (uint64_t)p << 40 | s;
        sl_status st;
        if (sl_test_rng_next(&rng) & 1)
            st = sl_chan_send(r->ch, &v);
        else
            while ((st = sl_chan_try_send(r->ch, &v)) == SL_FULL)
                sched_yield();
        if (st != SL_OK)
            rec_fail("producer %u: send of %llu returned %s", p, ULL(s),
                     sl_status_str(st));
        if (sl_test_rng_next(&rng) % 64 == 0) /* let the loop go back to epoll_wait */
            sl_test_sleep_ns(sl_test_rng_next(&rng) % 50000);
    }
    if (atomic_fetch_sub(&r->left, 1) == 1)
        sl_chan_close(r->ch);
    return NULL;
}

/* Drains until SL_EMPTY or SL_CLOSED, checking per-producer order. */
static sl_status fl_drain(fl_run *r, uint64_t *next, uint64_t *n)
{
    uint64_t v;
    sl_status st;
    *n = 0;
    while ((st = sl_chan_try_recv(r->ch, &v)) == SL_OK) {
        unsigned p = (unsigned)(v >> 40);
        uint64_t s = v & ((1ull << 40) - 1);
        if (p >= r->np || s != next[p])
            rec_fail("message %u/%llu arrived, expected %llu", p, ULL(s),
                     ULL(p < r->np ? next[p] : 0));
        else
            next[p]++;
        ++*n;
        atomic_fetch_add_explicit(&r->got, 1, memory_order_relaxed);
    }
    return st;
}

static void *fl_loop(void *arg)
{
    worker *w = arg;
    fl_run *r = w->run;
    uint64_t next[4] = {0}, n;
    int fd, ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN};
    if (ep < 0 || sl_chan_fd(r->ch, SL_END_RECV, &fd) != SL_OK ||
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        rec_fail("loop set-up failed");
        return NULL;
    }
    uint64_t since = sl_test_now_ns();
    for (;;) {
        /* Only a lost edge sleeps 5 s: the producers pause 50 us at most.
         * The preemptor's signals end many waits early (EINTR): the 5 s
         * count from the last wake-up. */
        int k = epoll_wait(ep, &ev, 1, 100);
        if (k <= 0) {
            if (sl_test_now_ns() - since < 5 * SEC)
                continue;
            rec_fail("epoll_wait slept 5 s with %zu messages in the channel (closed: %d): "
                     "a lost edge", sl_chan_len(r->ch), sl_chan_is_closed(r->ch));
            sl_chan_close(r->ch); /* the producers stop; no watchdog wait */
            break;
        }
        since = sl_test_now_ns();
        r->wakes++;
        sl_status st = fl_drain(r, next, &n);
        r->empty_wakes += n == 0;
        if (st == SL_CLOSED)
            break;
        if (st != SL_EMPTY) {
            rec_fail("try_recv returned %s", sl_status_str(st));
            break;
        }
    }
    for (unsigned p = 0; p < r->np; p++)
        if (next[p] != r->n)
            rec_fail("producer %u: %llu of %llu messages received before SL_CLOSED", p,
                     ULL(next[p]), ULL(r->n));
    close(ep);
    return NULL;
}

static uint64_t fl_progress(void *arg)
{
    return atomic_load(&((fl_run *)arg)->got);
}

START_TEST(fd_loop)
{
    static const sl_flavor flavors[] = {SL_MPMC, SL_SPSC, SL_LIST};
    fl_run *r = xaligned(sizeof *r);
    sl_flavor f = flavors[_i];
    r->seed = begin_test(SUITE, "fd_loop[%s preempted]", sl_test_flavor_name(f));
    r->np = f == SL_SPSC ? 1 : 3;
    r->n = sl_test_scaled(20000, 2000);
    atomic_init(&r->left, r->np);
    atomic_init(&r->got, 0);
    CHECK_MSG(new_chan(&r->ch, f, sizeof(uint64_t), 8, NULL, NULL, false, 0) == SL_OK,
              "sl_chan_new failed");
    const team_role roles[] = {{1, fl_loop, true}, {r->np, fl_producer, true}};
    team t;
    team_start(&t, r, roles, N_OF(roles), &k_preempt_brief, fl_progress, NULL);
    double secs = team_end(&t);
    fprintf(stderr, "[%s] %llu messages in %.2f s, %llu loop wake-ups (%llu found nothing), "
            "%llu preemptions\n", g_test, ULL(atomic_load(&r->got)), secs, ULL(r->wakes),
            ULL(r->empty_wakes), ULL(atomic_load(&g_preempt_hits)));
    ASSERT_CLEAN();
    sl_chan_free(r->ch);
    free(r);
}
END_TEST

/* ---- the suite ------------------------------------------------------------ */

static Suite *stress_chan_suite(void)
{
    Suite *s = suite_create("stress_chan");
    sl_test_loop_case(s, "exactly_once_mpmc", TC_TIMEOUT, exactly_once_mpmc, N_OF(eo_mpmc));
    sl_test_loop_case(s, "exactly_once_spsc", TC_TIMEOUT, exactly_once_spsc, N_OF(eo_spsc));
    sl_test_loop_case(s, "exactly_once_wrap", TC_TIMEOUT, exactly_once_wrap, N_OF(eo_wrap));
    sl_test_loop_case(s, "mixed_close", TC_TIMEOUT, mixed_close, N_OF(mx_cfgs));
    sl_test_loop_case(s, "close_drains", TC_TIMEOUT, close_drains, 2);
    sl_test_loop_case(s, "drop_blocked", TC_TIMEOUT, drop_blocked, N_OF(dr_cfgs));
    sl_test_loop_case(s, "fd_loop", TC_TIMEOUT, fd_loop, 3);
    return s;
}

int main(void) { return sl_test_run(stress_chan_suite()); }
