/*
 * tests/stress_park.c — lost-wake-up hunts on the eventcount and through the
 * channel.
 *
 *   event_pingpong   two threads hand a token back and forth through two
 *                    atomics and two sl_event, with the documented protocol
 *                    (spin, prepare, re-check, wait); the notify side uses a
 *                    seq_cst RMW or a store + seq_cst fence; random spin
 *                    lengths (often none) and short deadlines put the waiter
 *                    everywhere in the window.
 *   event_ring       K threads pass a turn around one shared sl_event with
 *                    notify_all (many waiters on one word).
 *   chan_pingpong    request/reply over two capacity-1 channels (MPMC, SPSC).
 *   many_receivers   4 receivers parked on one channel; one sender sends one
 *                    message at a time and waits for it to be received; then
 *                    close must wake all of them.
 *   many_senders     the mirror: 4 senders parked on a full capacity-1
 *                    channel, one receiver lets one through at a time; close
 *                    wakes the rest, sl_chan_free drops what is inside.
 *   timed_never_early  timed waits on events and channels return SL_TIMEDOUT
 *                    never before their deadline, with a noisy notifier.
 *
 * Every hunt also runs with the harness's fault-injecting system-call table
 * (sl_test_sys_spurious, tests/harness.h): futex_wait sometimes returns 0 at
 * once (spurious wake-up), -EINTR, -ETIMEDOUT before a finite deadline, or
 * sleeps a few microseconds before the real call; futex_wake sometimes
 * sleeps first. The base table is restored at the end of each test and by
 * the fixture's teardown.
 *
 * The "preempted" cases add a preemptor thread that signals the workers at
 * random instants (the handler naps a few microseconds), stopping them inside
 * the nanosecond windows between a failed attempt and sl_event_prepare or
 * between a push and its notify; "jitter" delays sends at random so they land
 * in the peer's spin -> prepare -> sleep transition.
 *
 * A lost wake-up shows as a hang: a watchdog reports 30 s without progress
 * with the events' state and fails the test; Check's 120 s time-out is the
 * backstop. SL_STRESS_SCALE and SL_STRESS_SEED as in stress_chan.c.
 */
#include "stress_common.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sluice/chan.h"
#include "sluice/park.h"
#include "sysops.h"
#include "testing.h"

#define SUITE "stress_park"
#define TC_TIMEOUT 120

/* ---- the fault-injecting system-call table -------------------------------
 * The harness's spurious-fault table (tests/harness.h), over its base. */

static void faults_install(bool on)
{
    sl_test_sys_faults_seed(g_seed ^ 0xFA17ull);
    if (on)
        sl_test_sys_install(sl_test_sys_spurious());
    else
        sl_test_sys_restore();
}

/* Restores the base table and reports what was injected. */
static void faults_remove(bool on)
{
    sl_test_sys_restore();
    if (on)
        sl_test_sys_faults_report(g_test);
}

static void restore_ops(void) { sl_test_sys_restore(); }

static void print_event(const char *name, const sl_event *ev)
{
    fprintf(stderr, "  %s: epoch %u, waiters %u\n", name,
            (unsigned)atomic_load_explicit(&ev->epoch, memory_order_relaxed),
            (unsigned)sl_event_waiters(ev));
}

/* =========================================================================
 * The documented waiter protocol, with random spin lengths and deadlines
 * ========================================================================= */

typedef struct waitstats {
    uint64_t slept, timed_out, cancelled;
} waitstats;

/* Waits until *word >= want. Spins a random while (often not at all), then
 * prepare / re-check / wait; with `timed`, some waits have a short deadline
 * and loop on SL_TIMEDOUT (checking it came no earlier than asked). */
static void await_ge(atomic_uint_fast64_t *word, uint64_t want, sl_event *ev, sl_test_rng *rng,
                     bool timed, waitstats *ws, const char *who)
{
    uint64_t r = sl_test_rng_next(rng);
    unsigned spin = (r & 3) == 0 ? 0 : (unsigned)((r >> 8) % 200);
    for (unsigned i = 0; i < spin; i++)
        if (atomic_load_explicit(word, memory_order_acquire) >= want)
            return;
    for (;;) {
        if (atomic_load_explicit(word, memory_order_acquire) >= want)
            return;
        uint32_t key = sl_event_prepare(ev);
        if (atomic_load_explicit(word, memory_order_acquire) >= want) {
            sl_event_cancel(ev);
            ws->cancelled++;
            return;
        }
        uint64_t deadline = SL_FOREVER;
        if (timed && (sl_test_rng_next(rng) & 1))
            deadline = sl_deadline_after(500 + sl_test_rng_next(rng) % 50000);
        ws->slept++;
        sl_status st = sl_event_wait(ev, key, deadline);
        if (st == SL_TIMEDOUT) {
            ws->timed_out++;
            uint64_t now = sl_test_now_ns();
            if (deadline == SL_FOREVER)
                rec_fail("%s: sl_event_wait(SL_FOREVER) returned SL_TIMEDOUT", who);
            else if (now < deadline)
                rec_fail("%s: sl_event_wait returned SL_TIMEDOUT %llu ns before the deadline",
                         who, ULL(deadline - now));
        } else if (st != SL_OK) {
            rec_fail("%s: sl_event_wait returned %s", who, sl_status_str(st));
        }
    }
}

/* The notifier: make the condition true (a seq_cst RMW, or a store and a
 * seq_cst fence, the two forms park.h allows), then notify. */
static void publish(atomic_uint_fast64_t *word, uint64_t v, sl_event *ev, int style,
                    sl_test_rng *rng)
{
    if (style == 0) {
        atomic_exchange_explicit(word, v, memory_order_seq_cst);
    } else {
        atomic_store_explicit(word, v, memory_order_release);
        atomic_thread_fence(memory_order_seq_cst);
    }
    if ((sl_test_rng_next(rng) & 15) == 0)
        sl_event_notify_all(ev);
    else
        sl_event_notify_one(ev);
}

/* =========================================================================
 * event_pingpong
 * ========================================================================= */

typedef struct pp_cfg {
    const char *name;
    int style;    /* 0: RMW, 1: store + fence */
    bool timed;   /* short deadlines on some waits */
    bool faults;
    bool preempt; /* signal the two threads at random instants */
    uint64_t n, floor;
} pp_cfg;

typedef struct pp_run {
    const pp_cfg *cfg;
    uint64_t n, seed;
    uint64_t floor, until_ns; /* the time budget: A ends the run once past both */
    atomic_uint_fast64_t last; /* the last hand-off: n, or A's choice once past budget */
    _Alignas(64) atomic_uint_fast64_t a2b;
    _Alignas(64) atomic_uint_fast64_t b2a;
    _Alignas(64) sl_event ev_a2b; /* B waits here */
    _Alignas(64) sl_event ev_b2a; /* A waits here */
    sl_test_barrier start;
    waitstats ws[2];
} pp_run;

static void *pp_a(void *arg)
{
    pp_run *r = ((worker *)arg)->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ GOLDEN);
    sl_test_barrier_wait(&r->start);
    for (uint64_t i = 1; i <= atomic_load(&r->last); i++) {
        /* Past the budget: the next hand-off is the last (B reads `last`
         * after its wait for it, which this publish releases). */
        if (i > r->floor && atomic_load(&r->last) == r->n && (i & 255) == 0 &&
            sl_test_now_ns() > r->until_ns)
            atomic_store(&r->last, i);
        publish(&r->a2b, i, &r->ev_a2b, r->cfg->style, &rng);
        await_ge(&r->b2a, i, &r->ev_b2a, &rng, r->cfg->timed, &r->ws[0], "A");
        sl_test_maybe_stall(&rng, 8192);
    }
    return NULL;
}

static void *pp_b(void *arg)
{
    pp_run *r = ((worker *)arg)->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (2 * GOLDEN));
    sl_test_barrier_wait(&r->start);
    for (uint64_t i = 1; i <= atomic_load(&r->last); i++) {
        await_ge(&r->a2b, i, &r->ev_a2b, &rng, r->cfg->timed, &r->ws[1], "B");
        publish(&r->b2a, i, &r->ev_b2a, r->cfg->style, &rng);
        sl_test_maybe_stall(&rng, 8192);
    }
    return NULL;
}

static uint64_t pp_progress(void *arg)
{
    pp_run *r = arg;
    return atomic_load(&r->a2b) + atomic_load(&r->b2a);
}

static void pp_diag(void *arg)
{
    pp_run *r = arg;
    fprintf(stderr, "  a2b %llu, b2a %llu of %llu\n", ULL(atomic_load(&r->a2b)),
            ULL(atomic_load(&r->b2a)), ULL(r->n));
    print_event("ev_a2b (B waits)", &r->ev_a2b);
    print_event("ev_b2a (A waits)", &r->ev_b2a);
}

static const pp_cfg pp_cfgs[] = {
    {"rmw", 0, false, false, false, 500000, 10000},
    {"store+fence timed", 1, true, false, false, 300000, 10000},
    {"rmw faults", 0, false, true, false, 100000, 5000},
    {"store+fence timed faults", 1, true, true, false, 100000, 5000},
    {"rmw preempted", 0, false, false, true, 200000, 5000},
    {"store+fence timed preempted faults", 1, true, true, true, 100000, 5000},
};

START_TEST(event_pingpong)
{
    const pp_cfg *cfg = &pp_cfgs[_i];
    pp_run *r = xaligned(sizeof *r);
    r->cfg = cfg;
    r->seed = begin_test(SUITE, "event_pingpong[%s]", cfg->name);
    r->n = sl_test_scaled(cfg->n, cfg->floor);
    r->floor = cfg->floor;
    r->until_ns = sl_test_now_ns() + (uint64_t)sl_test_env_uint("SL_STRESS_PARK_S", 3) * SEC;
    atomic_init(&r->last, r->n);
    atomic_init(&r->a2b, 0);
    atomic_init(&r->b2a, 0);
    sl_event_init(&r->ev_a2b);
    sl_event_init(&r->ev_b2a);
    sl_test_barrier_init(&r->start, 2);
    faults_install(cfg->faults);
    const team_role roles[] = {{1, pp_a, true}, {1, pp_b, true}};
    team t;
    team_start(&t, r, roles, N_OF(roles), cfg->preempt ? &k_preempt_brief : NULL, pp_progress,
               pp_diag);
    double secs = team_end(&t);
    faults_remove(cfg->faults);
    ASSERT_CLEAN();
    const uint64_t done = atomic_load(&r->last);
    CHECK_MSG(atomic_load(&r->a2b) == done && atomic_load(&r->b2a) == done && done > r->floor,
              "incomplete");
    CHECK_MSG(sl_event_waiters(&r->ev_a2b) == 0 && sl_event_waiters(&r->ev_b2a) == 0,
              "waiter counts %u and %u after everyone left", sl_event_waiters(&r->ev_a2b),
              sl_event_waiters(&r->ev_b2a));
    fprintf(stderr,
            "[%s] %llu hand-offs of %llu in %.3f s; waits slept %llu, cancelled %llu, timed "
            "out %llu\n",
            g_test, ULL(done), ULL(r->n), secs, ULL(r->ws[0].slept + r->ws[1].slept),
            ULL(r->ws[0].cancelled + r->ws[1].cancelled),
            ULL(r->ws[0].timed_out + r->ws[1].timed_out));
    CHECK_MSG(r->ws[0].slept + r->ws[1].slept > 0, "no wait ever reached sl_event_wait");
    sl_test_barrier_destroy(&r->start);
    free(r);
}
END_TEST

/* =========================================================================
 * event_ring: K threads, one event, notify_all
 * ========================================================================= */

typedef struct ring_run {
    unsigned k;
    uint64_t n, seed;
    bool faults;
    _Alignas(64) atomic_uint_fast64_t turn;
    _Alignas(64) sl_event ev;
    sl_test_barrier start;
    waitstats *ws; /* [k] */
} ring_run;

static void *ring_thread(void *arg)
{
    worker *a = arg;
    ring_run *r = a->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (a->idx + 1) * GOLDEN);
    char who[32];
    snprintf(who, sizeof who, "ring thread %u", a->idx);
    sl_test_barrier_wait(&r->start);
    /* Thread i moves the turn from t to t+1 whenever t % k == i. */
    for (uint64_t t = a->idx; t < r->n; t += r->k) {
        await_ge(&r->turn, t, &r->ev, &rng, false, &r->ws[a->idx], who);
        uint64_t cur = atomic_load(&r->turn);
        if (cur != t)
            rec_fail("%s: the turn is %llu, expected %llu", who, ULL(cur), ULL(t));
        if (sl_test_rng_next(&rng) & 1) {
            atomic_exchange_explicit(&r->turn, t + 1, memory_order_seq_cst);
        } else {
            atomic_store_explicit(&r->turn, t + 1, memory_order_release);
            atomic_thread_fence(memory_order_seq_cst);
        }
        /* The next owner is one of several waiters on the same word. */
        sl_event_notify_all(&r->ev);
        sl_test_maybe_stall(&rng, 8192);
    }
    return NULL;
}

static uint64_t ring_progress(void *arg)
{
    ring_run *r = arg;
    return atomic_load(&r->turn);
}

static void ring_diag(void *arg)
{
    ring_run *r = arg;
    fprintf(stderr, "  turn %llu of %llu, %u threads\n", ULL(atomic_load(&r->turn)), ULL(r->n),
            r->k);
    print_event("ev", &r->ev);
}

START_TEST(event_ring)
{
    bool faults = _i == 1;
    ring_run *r = xaligned(sizeof *r);
    r->seed = begin_test(SUITE, "event_ring[4 threads%s]", faults ? ", faults" : "");
    r->k = sl_test_env_uint("SL_STRESS_CONSUMERS", 4);
    if (r->k < 2)
        r->k = 2;
    r->n = sl_test_scaled(faults ? 60000 : 200000, 5000);
    r->faults = faults;
    atomic_init(&r->turn, 0);
    sl_event_init(&r->ev);
    sl_test_barrier_init(&r->start, r->k);
    r->ws = xcalloc(r->k, sizeof *r->ws);
    faults_install(faults);
    const team_role roles[] = {{r->k, ring_thread, false}};
    team t;
    team_start(&t, r, roles, N_OF(roles), NULL, ring_progress, ring_diag);
    double secs = team_end(&t);
    faults_remove(faults);
    ASSERT_CLEAN();
    uint64_t want = ((r->n + r->k - 1) / r->k) * r->k;
    CHECK_MSG(atomic_load(&r->turn) == want, "turn %llu, expected %llu",
              ULL(atomic_load(&r->turn)), ULL(want));
    CHECK_MSG(sl_event_waiters(&r->ev) == 0, "%u waiters left", sl_event_waiters(&r->ev));
    uint64_t slept = 0;
    for (unsigned i = 0; i < r->k; i++)
        slept += r->ws[i].slept;
    fprintf(stderr, "[%s] %llu turns in %.3f s, %llu sleeps\n", g_test, ULL(want), secs,
            ULL(slept));
    sl_test_barrier_destroy(&r->start);
    free(r->ws);
    free(r);
}
END_TEST

/* =========================================================================
 * chan_pingpong: request / reply over two capacity-1 channels
 * ========================================================================= */

typedef struct cp_cfg {
    const char *name;
    sl_flavor flavor;
    bool faults;
    bool preempt;
    uint64_t n, floor;
} cp_cfg;

typedef struct cp_run {
    const cp_cfg *cfg;
    sl_chan *req, *rep;
    uint64_t n, seed;
    sl_test_barrier start;
    _Alignas(64) atomic_uint_fast64_t done_a;
    _Alignas(64) atomic_uint_fast64_t done_b;
} cp_run;

/* Sends v, with a random form: blocking, or timed / try in a retry loop. */
static sl_status cp_send(sl_chan *ch, const uint64_t *v, sl_test_rng *rng)
{
    switch (sl_test_rng_next(rng) % 4) {
    case 0: {
        sl_status st;
        while ((st = sl_chan_send_for(ch, v, 1000 + sl_test_rng_next(rng) % 20000)) ==
               SL_TIMEDOUT) {
        }
        return st;
    }
    case 1: {
        sl_status st;
        while ((st = sl_chan_try_send(ch, v)) == SL_FULL)
            sched_yield();
        return st;
    }
    default:
        return sl_chan_send(ch, v);
    }
}

static sl_status cp_recv(sl_chan *ch, uint64_t *v, sl_test_rng *rng)
{
    switch (sl_test_rng_next(rng) % 4) {
    case 0: {
        sl_status st;
        while ((st = sl_chan_recv_for(ch, v, 1000 + sl_test_rng_next(rng) % 20000)) ==
               SL_TIMEDOUT) {
        }
        return st;
    }
    case 1: {
        sl_status st;
        while ((st = sl_chan_try_recv(ch, v)) == SL_EMPTY)
            sched_yield();
        return st;
    }
    default:
        return sl_chan_recv(ch, v);
    }
}

/* With `on`, now and then busy-wait a random 0-200 us: the peer is then
 * somewhere in its spin / prepare / sleep sequence when the message comes,
 * including the narrow windows between them. */
static void cp_jitter(bool on, sl_test_rng *rng)
{
    if (!on || sl_test_rng_next(rng) % 8 != 0)
        return;
    busy_wait(sl_test_rng_next(rng) % 200000);
}

static void *cp_client(void *arg)
{
    cp_run *r = ((worker *)arg)->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ GOLDEN);
    sl_test_barrier_wait(&r->start);
    for (uint64_t i = 0; i < r->n; i++) {
        uint64_t v = i * 3 + 1, back = 0;
        cp_jitter(r->cfg->preempt, &rng);
        sl_status st = cp_send(r->req, &v, &rng);
        if (st != SL_OK) {
            rec_fail("client: request %llu: send returned %s", ULL(i), sl_status_str(st));
            break;
        }
        st = cp_recv(r->rep, &back, &rng);
        if (st != SL_OK) {
            rec_fail("client: reply %llu: receive returned %s", ULL(i), sl_status_str(st));
            break;
        }
        if (back != v + 1)
            rec_fail("client: round trip %llu: reply %llu, expected %llu", ULL(i), ULL(back),
                     ULL(v + 1));
        atomic_store_explicit(&r->done_a, i + 1, memory_order_relaxed);
        sl_test_maybe_stall(&rng, 8192);
    }
    sl_chan_close(r->req);
    return NULL;
}

static void *cp_server(void *arg)
{
    cp_run *r = ((worker *)arg)->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (2 * GOLDEN));
    uint64_t served = 0;
    sl_test_barrier_wait(&r->start);
    for (;;) {
        uint64_t v;
        sl_status st = cp_recv(r->req, &v, &rng);
        if (st == SL_CLOSED)
            break;
        if (st != SL_OK) {
            rec_fail("server: receive returned %s", sl_status_str(st));
            break;
        }
        if (v != served * 3 + 1)
            rec_fail("server: request %llu carries %llu", ULL(served), ULL(v));
        v++;
        cp_jitter(r->cfg->preempt, &rng);
        st = cp_send(r->rep, &v, &rng);
        if (st != SL_OK) {
            rec_fail("server: send returned %s", sl_status_str(st));
            break;
        }
        served++;
        atomic_store_explicit(&r->done_b, served, memory_order_relaxed);
        sl_test_maybe_stall(&rng, 8192);
    }
    if (served != r->n)
        rec_fail("server: served %llu of %llu before SL_CLOSED", ULL(served), ULL(r->n));
    return NULL;
}

static uint64_t cp_progress(void *arg)
{
    cp_run *r = arg;
    return atomic_load(&r->done_a) + atomic_load(&r->done_b);
}

static void cp_diag(void *arg)
{
    cp_run *r = arg;
    fprintf(stderr, "  client done %llu, server done %llu of %llu; req len %zu, rep len %zu\n",
            ULL(atomic_load(&r->done_a)), ULL(atomic_load(&r->done_b)), ULL(r->n),
            sl_chan_len(r->req), sl_chan_len(r->rep));
}

static const cp_cfg cp_cfgs[] = {
    {"mpmc", SL_MPMC, false, false, 150000, 10000},
    {"spsc", SL_SPSC, false, false, 300000, 10000},
    {"mpmc faults", SL_MPMC, true, false, 50000, 3000},
    {"spsc faults", SL_SPSC, true, false, 50000, 3000},
    {"mpmc preempted jitter", SL_MPMC, false, true, 60000, 4000},
    {"spsc preempted jitter", SL_SPSC, false, true, 60000, 4000},
    {"mpmc preempted jitter faults", SL_MPMC, true, true, 40000, 3000},
};

START_TEST(chan_pingpong)
{
    const cp_cfg *cfg = &cp_cfgs[_i];
    cp_run *r = xaligned(sizeof *r);
    r->cfg = cfg;
    r->seed = begin_test(SUITE, "chan_pingpong[%s]", cfg->name);
    r->n = sl_test_scaled(cfg->n, cfg->floor);
    sl_chan_opts o = {.flavor = cfg->flavor, .elem_size = sizeof(uint64_t), .capacity = 1};
    ck_assert_int_eq(sl_chan_new(&r->req, &o), SL_OK);
    ck_assert_int_eq(sl_chan_new(&r->rep, &o), SL_OK);
    atomic_init(&r->done_a, 0);
    atomic_init(&r->done_b, 0);
    sl_test_barrier_init(&r->start, 2);
    faults_install(cfg->faults);
    const team_role roles[] = {{1, cp_client, true}, {1, cp_server, true}};
    team t;
    team_start(&t, r, roles, N_OF(roles), cfg->preempt ? &k_preempt_brief : NULL, cp_progress,
               cp_diag);
    double secs = team_end(&t);
    faults_remove(cfg->faults);
    ASSERT_CLEAN();
    CHECK_MSG(atomic_load(&r->done_a) == r->n, "client finished %llu of %llu round trips",
              ULL(atomic_load(&r->done_a)), ULL(r->n));
    CHECK_MSG(sl_chan_len(r->req) == 0 && sl_chan_len(r->rep) == 0, "messages left behind");
    fprintf(stderr, "[%s] %llu round trips in %.3f s\n", g_test, ULL(r->n), secs);
    sl_chan_free(r->req);
    sl_chan_free(r->rep);
    sl_test_barrier_destroy(&r->start);
    free(r);
}
END_TEST

/* =========================================================================
 * many_receivers: 4 parked receivers, one message at a time, then close
 * ========================================================================= */

typedef struct mr_run {
    sl_chan *ch;
    unsigned nr;
    uint64_t n, seed;
    bool faults;
    _Alignas(64) atomic_uint_fast64_t received;
    _Alignas(64) atomic_uint_fast64_t sent;
    atomic_uint closed_returns;
    atomic_uint_fast64_t *seen; /* one flag per message */
    uint64_t *got;              /* [nr] messages each receiver got */
    sl_test_barrier start;
} mr_run;

static void *mr_receiver(void *arg)
{
    worker *a = arg;
    mr_run *r = a->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (a->idx + 1) * GOLDEN);
    sl_test_barrier_wait(&r->start);
    for (;;) {
        uint64_t v;
        sl_status st;
        if (sl_test_rng_next(&rng) % 4 == 0) {
            /* A long timed wait: must be woken by the message like recv. */
            while ((st = sl_chan_recv_for(r->ch, &v, 50000000)) == SL_TIMEDOUT) {
            }
        } else {
            st = sl_chan_recv(r->ch, &v);
        }
        if (st == SL_CLOSED)
            break;
        if (st != SL_OK) {
            rec_fail("receiver %u: receive returned %s", a->idx, sl_status_str(st));
            break;
        }
        if (v >= r->n) {
            rec_fail("receiver %u: bad message %llu", a->idx, ULL(v));
            continue;
        }
        if (atomic_exchange(&r->seen[v], 1) != 0)
            rec_fail("receiver %u: message %llu received twice", a->idx, ULL(v));
        r->got[a->idx]++;
        atomic_fetch_add(&r->received, 1);
    }
    atomic_fetch_add(&r->closed_returns, 1);
    return NULL;
}

static uint64_t mr_progress(void *arg)
{
    mr_run *r = arg;
    return atomic_load(&r->received) + atomic_load(&r->sent) + atomic_load(&r->closed_returns);
}

static void mr_diag(void *arg)
{
    mr_run *r = arg;
    fprintf(stderr,
            "  sent %llu, received %llu of %llu; %u receivers returned SL_CLOSED; len %zu, "
            "closed %d\n",
            ULL(atomic_load(&r->sent)), ULL(atomic_load(&r->received)), ULL(r->n),
            atomic_load(&r->closed_returns), sl_chan_len(r->ch), (int)sl_chan_is_closed(r->ch));
}

START_TEST(many_receivers)
{
    bool faults = _i == 1;
    mr_run *r = xaligned(sizeof *r);
    r->seed = begin_test(SUITE, "many_receivers%s", faults ? "[faults]" : "");
    r->nr = sl_test_env_uint("SL_STRESS_CONSUMERS", 4);
    r->n = sl_test_scaled(faults ? 10000 : 20000, 1000);
    r->faults = faults;
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = sizeof(uint64_t), .capacity = 4};
    ck_assert_int_eq(sl_chan_new(&r->ch, &o), SL_OK);
    atomic_init(&r->received, 0);
    atomic_init(&r->sent, 0);
    atomic_init(&r->closed_returns, 0);
    r->seen = xcalloc(r->n, sizeof *r->seen);
    r->got = xcalloc(r->nr, sizeof *r->got);
    sl_test_barrier_init(&r->start, r->nr + 1);
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed);
    faults_install(faults);
    const team_role roles[] = {{r->nr, mr_receiver, false}};
    team t;
    team_start(&t, r, roles, N_OF(roles), NULL, mr_progress, mr_diag);
    sl_test_barrier_wait(&r->start);
    for (uint64_t i = 0; i < r->n; i++) {
        /* Now and then give the receivers time to park for real. */
        if (sl_test_rng_next(&rng) % 8 == 0)
            sl_test_sleep_ns(20000 + sl_test_rng_next(&rng) % 100000);
        sl_status st = sl_chan_send(r->ch, &i);
        CHECK_MSG(st == SL_OK, "send %llu returned %s", ULL(i), sl_status_str(st));
        atomic_store(&r->sent, i + 1);
        /* One message in flight: it must reach one of the parked receivers. */
        while (atomic_load(&r->received) <= i)
            sched_yield();
    }
    sl_test_sleep_ns(2000000); /* let them all park */
    sl_chan_close(r->ch);
    double secs = team_end(&t);
    faults_remove(faults);
    ASSERT_CLEAN();
    CHECK_MSG(atomic_load(&r->received) == r->n, "received %llu of %llu",
              ULL(atomic_load(&r->received)), ULL(r->n));
    CHECK_MSG(atomic_load(&r->closed_returns) == r->nr, "%u of %u receivers saw SL_CLOSED",
              atomic_load(&r->closed_returns), r->nr);
    fprintf(stderr, "[%s] %llu messages to %u receivers in %.3f s; per receiver:", g_test,
            ULL(r->n), r->nr, secs);
    for (unsigned i = 0; i < r->nr; i++)
        fprintf(stderr, " %llu", ULL(r->got[i]));
    fprintf(stderr, "\n");
    sl_chan_free(r->ch);
    sl_test_barrier_destroy(&r->start);
    free(r->seen);
    free(r->got);
    free(r);
}
END_TEST

/* =========================================================================
 * many_senders: 4 senders parked on a full channel, one let through at a time
 * ========================================================================= */

typedef struct ms_run {
    sl_chan *ch;
    unsigned ns;
    uint64_t n, seed;
    _Alignas(64) atomic_uint_fast64_t received;
    _Alignas(64) atomic_uint_fast64_t sent_total;
    atomic_uint closed_returns;
    uint64_t *sent;     /* [ns] messages each sender got in (seqs 0..sent-1) */
    uint64_t *last;     /* [ns] newest seq received from each sender */
    uint64_t *dropped;  /* [ns] */
    sl_test_barrier start;
} ms_run;

static void *ms_sender(void *arg)
{
    worker *a = arg;
    ms_run *r = a->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (a->idx + 1) * GOLDEN);
    uint64_t s = 0;
    sl_test_barrier_wait(&r->start);
    for (;;) {
        uint64_t v = ((uint64_t)a->idx << 48) | s;
        sl_status st;
        if (sl_test_rng_next(&rng) % 4 == 0) {
            while ((st = sl_chan_send_for(r->ch, &v, 50000000)) == SL_TIMEDOUT) {
            }
        } else {
            st = sl_chan_send(r->ch, &v);
        }
        if (st == SL_CLOSED)
            break;
        if (st != SL_OK) {
            rec_fail("sender %u: send returned %s", a->idx, sl_status_str(st));
            break;
        }
        s++;
        atomic_fetch_add(&r->sent_total, 1);
    }
    r->sent[a->idx] = s;
    atomic_fetch_add(&r->closed_returns, 1);
    return NULL;
}

static void ms_drop(void *elem, void *ctx)
{
    ms_run *r = ctx;
    uint64_t v;
    memcpy(&v, elem, sizeof v);
    unsigned idx = (unsigned)(v >> 48);
    uint64_t s = v & ((1ull << 48) - 1);
    if (idx >= r->ns) {
        rec_fail("drop: bad message %llx", ULL(v));
        return;
    }
    if (r->last[idx] != NONE && s <= r->last[idx])
        rec_fail("drop: sender %u seq %llu dropped, but seq %llu was received (FIFO)", idx,
                 ULL(s), ULL(r->last[idx]));
    r->dropped[idx]++;
}

static uint64_t ms_progress(void *arg)
{
    ms_run *r = arg;
    return atomic_load(&r->received) + atomic_load(&r->sent_total) +
           atomic_load(&r->closed_returns);
}

static void ms_diag(void *arg)
{
    ms_run *r = arg;
    fprintf(stderr, "  received %llu of %llu, sent %llu; %u senders returned; len %zu, closed %d\n",
            ULL(atomic_load(&r->received)), ULL(r->n), ULL(atomic_load(&r->sent_total)),
            atomic_load(&r->closed_returns), sl_chan_len(r->ch), (int)sl_chan_is_closed(r->ch));
}

START_TEST(many_senders)
{
    bool faults = _i == 1;
    ms_run *r = xaligned(sizeof *r);
    r->seed = begin_test(SUITE, "many_senders%s", faults ? "[faults]" : "");
    r->ns = sl_test_env_uint("SL_STRESS_PRODUCERS", 4);
    r->n = sl_test_scaled(faults ? 10000 : 20000, 1000);
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = sizeof(uint64_t), .capacity = 1,
                      .drop = ms_drop, .drop_ctx = r};
    ck_assert_int_eq(sl_chan_new(&r->ch, &o), SL_OK);
    atomic_init(&r->received, 0);
    atomic_init(&r->sent_total, 0);
    atomic_init(&r->closed_returns, 0);
    r->sent = xcalloc(r->ns, sizeof(uint64_t));
    r->last = xnones(r->ns);
    r->dropped = xcalloc(r->ns, sizeof(uint64_t));
    sl_test_barrier_init(&r->start, r->ns + 1);
    uint64_t *recv_cnt = xcalloc(r->ns, sizeof(uint64_t));
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed);
    faults_install(faults);
    const team_role roles[] = {{r->ns, ms_sender, false}};
    team t;
    team_start(&t, r, roles, N_OF(roles), NULL, ms_progress, ms_diag);
    sl_test_barrier_wait(&r->start);
    for (uint64_t i = 0; i < r->n; i++) {
        if (sl_test_rng_next(&rng) % 8 == 0)
            sl_test_sleep_ns(20000 + sl_test_rng_next(&rng) % 100000);
        uint64_t v;
        sl_status st = sl_test_rng_next(&rng) & 1 ? sl_chan_recv(r->ch, &v)
                                                  : sl_chan_recv_for(r->ch, &v, 10000000000ull);
        CHECK_MSG(st == SL_OK, "receive %llu returned %s", ULL(i), sl_status_str(st));
        unsigned idx = (unsigned)(v >> 48);
        uint64_t s = v & ((1ull << 48) - 1);
        CHECK_MSG(idx < r->ns, "bad message %llx", ULL(v));
        CHECK_MSG(r->last[idx] == NONE ? s == 0 : s == r->last[idx] + 1,
                  "sender %u: seq %llu after %llu (each sender's messages must arrive in "
                  "order, none lost)",
                  idx, ULL(s), ULL(r->last[idx]));
        r->last[idx] = s;
        recv_cnt[idx]++;
        atomic_store(&r->received, i + 1);
    }
    sl_test_sleep_ns(2000000); /* let the senders park on the full channel */
    sl_chan_close(r->ch);
    double secs = team_end(&t);
    faults_remove(faults);
    ASSERT_CLEAN();
    CHECK_MSG(atomic_load(&r->closed_returns) == r->ns, "%u of %u senders returned",
              atomic_load(&r->closed_returns), r->ns);
    size_t len = sl_chan_len(r->ch);
    sl_chan_free(r->ch);
    ASSERT_CLEAN();
    uint64_t drops = 0;
    for (unsigned i = 0; i < r->ns; i++) {
        drops += r->dropped[i];
        CHECK_MSG(r->sent[i] == recv_cnt[i] + r->dropped[i],
                  "sender %u: sent %llu != received %llu + dropped %llu", i, ULL(r->sent[i]),
                  ULL(recv_cnt[i]), ULL(r->dropped[i]));
    }
    CHECK_MSG(drops == len, "len %zu before free, %llu dropped", len, ULL(drops));
    fprintf(stderr, "[%s] %llu messages from %u senders in %.3f s, %llu dropped at free\n",
            g_test, ULL(r->n), r->ns, secs, ULL(drops));
    sl_test_barrier_destroy(&r->start);
    free(r->sent);
    free(r->last);
    free(r->dropped);
    free(recv_cnt);
    free(r);
}
END_TEST

/* =========================================================================
 * timed_never_early: SL_TIMEDOUT never comes before the deadline
 * ========================================================================= */

typedef struct tn_run {
    sl_event ev;
    sl_chan *empty, *full;
    uint64_t n, seed;
    atomic_bool stop;
    _Alignas(64) atomic_uint_fast64_t progress;
    sl_test_barrier start;
    uint64_t *timeouts, *notified; /* [waiters] */
} tn_run;

static void *tn_waiter(void *arg)
{
    worker *a = arg;
    tn_run *r = a->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (a->idx + 1) * GOLDEN);
    sl_test_barrier_wait(&r->start);
    for (uint64_t i = 0; i < r->n; i++) {
        uint64_t timeout = 1000 + sl_test_rng_next(&rng) % 300000;
        uint64_t t0 = sl_test_now_ns();
        sl_status st;
        const char *what;
        uint64_t v = 0;
        unsigned kind = (unsigned)(sl_test_rng_next(&rng) % 3);
        switch (kind) {
        case 0: {
            what = "sl_event_wait";
            uint64_t deadline = sl_deadline_after(timeout);
            uint32_t key = sl_event_prepare(&r->ev);
            st = sl_event_wait(&r->ev, key, deadline);
            timeout = deadline - t0; /* measured from before the deadline was taken */
            break;
        }
        case 1:
            what = "sl_chan_recv_for (empty)";
            st = sl_chan_recv_for(r->empty, &v, timeout);
            break;
        default:
            what = "sl_chan_send_for (full)";
            st = sl_chan_send_for(r->full, &v, timeout);
            break;
        }
        uint64_t el = sl_test_now_ns() - t0;
        if (st == SL_TIMEDOUT) {
            r->timeouts[a->idx]++;
            if (el < timeout)
                rec_fail("waiter %u: %s(%llu ns) returned SL_TIMEDOUT after %llu ns", a->idx,
                         what, ULL(timeout), ULL(el));
        } else if (st == SL_OK && kind == 0) {
            r->notified[a->idx]++; /* the event was notified by the noise thread */
        } else {
            rec_fail("waiter %u: %s returned %s", a->idx, what, sl_status_str(st));
        }
        atomic_fetch_add_explicit(&r->progress, 1, memory_order_relaxed);
    }
    return NULL;
}

static void *tn_noise(void *arg)
{
    tn_run *r = ((worker *)arg)->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ 0x4015Eull);
    sl_test_barrier_wait(&r->start);
    while (!atomic_load(&r->stop)) {
        sl_test_sleep_ns(50000 + sl_test_rng_next(&rng) % 500000);
        atomic_thread_fence(memory_order_seq_cst);
        if (sl_test_rng_next(&rng) & 1)
            sl_event_notify_one(&r->ev);
        else
            sl_event_notify_all(&r->ev);
    }
    return NULL;
}

static uint64_t tn_progress(void *arg)
{
    tn_run *r = arg;
    return atomic_load(&r->progress);
}

START_TEST(timed_never_early)
{
    bool faults = _i == 1;
    tn_run *r = xaligned(sizeof *r);
    r->seed = begin_test(SUITE, "timed_never_early%s", faults ? "[faults]" : "");
    r->n = sl_test_scaled(3000, 300);
    unsigned nw = 3;
    sl_event_init(&r->ev);
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = sizeof(uint64_t), .capacity = 1};
    ck_assert_int_eq(sl_chan_new(&r->empty, &o), SL_OK);
    ck_assert_int_eq(sl_chan_new(&r->full, &o), SL_OK);
    uint64_t one = 1;
    ck_assert_int_eq(sl_chan_try_send(r->full, &one), SL_OK);
    atomic_init(&r->stop, false);
    atomic_init(&r->progress, 0);
    sl_test_barrier_init(&r->start, nw + 1);
    r->timeouts = xcalloc(nw, sizeof *r->timeouts);
    r->notified = xcalloc(nw, sizeof *r->notified);
    faults_install(faults);
    const team_role roles[] = {{nw, tn_waiter, false}, {1, tn_noise, false}};
    team t;
    team_start(&t, r, roles, N_OF(roles), NULL, tn_progress, NULL);
    team_join(&t, 0, nw);
    atomic_store(&r->stop, true);
    team_end(&t);
    faults_remove(faults);
    ASSERT_CLEAN();
    uint64_t timeouts = 0, notified = 0;
    for (unsigned i = 0; i < nw; i++) {
        timeouts += r->timeouts[i];
        notified += r->notified[i];
    }
    CHECK_MSG(timeouts > 0, "no wait timed out");
    CHECK_MSG(sl_event_waiters(&r->ev) == 0, "%u waiters left", sl_event_waiters(&r->ev));
    CHECK_MSG(sl_chan_len(r->empty) == 0 && sl_chan_len(r->full) == 1,
              "a timed-out call moved a message");
    fprintf(stderr, "[%s] %llu timed waits: %llu timed out, %llu notified\n", g_test,
            ULL(r->n * nw), ULL(timeouts), ULL(notified));
    sl_chan_free(r->empty);
    sl_chan_free(r->full);
    sl_test_barrier_destroy(&r->start);
    free(r->timeouts);
    free(r->notified);
    free(r);
}
END_TEST

/* Each hunt restores the real system-call table even when it fails. */
static void hunt_case(Suite *s, const char *name, const TTest *test, int n)
{
    TCase *tc = sl_test_loop_case(s, name, TC_TIMEOUT, test, n);
    tcase_add_checked_fixture(tc, NULL, restore_ops);
}

static Suite *stress_park_suite(void)
{
    Suite *s = suite_create("stress_park");
    hunt_case(s, "event_pingpong", event_pingpong, N_OF(pp_cfgs));
    hunt_case(s, "event_ring", event_ring, 2);
    hunt_case(s, "chan_pingpong", chan_pingpong, N_OF(cp_cfgs));
    hunt_case(s, "many_receivers", many_receivers, 2);
    hunt_case(s, "many_senders", many_senders, 2);
    hunt_case(s, "timed_never_early", timed_never_early, 2);
    return s;
}

int main(void) { return sl_test_run(stress_park_suite()); }
