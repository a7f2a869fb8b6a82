/*
 * tests/stress_raw.c — the raw rings (sl_mpmc_*, sl_spsc_*) without the façade.
 *
 *   mpmc_exactly_once  P producers try_push (or push_n) seq 0..N-1, spinning
 *                      with sched_yield on SL_FULL; C consumers try_pop (or
 *                      pop_n) until all arrived: every (producer, seq) exactly
 *                      once, per-producer FIFO per consumer, len <= capacity.
 *   mpmc_len_quiescent sl_mpmc_len with no operation in progress equals what
 *                      a drain finds, after contended rounds with threads
 *                      stopped inside their operations.
 *   spsc_batches       1/1 with random mixes of try_push / push_n and try_pop
 *                      / pop_n of random sizes: exact sequence, len <= cap
 *                      seen from a third thread.
 *
 * (Lock-freedom evidence, a thread stopped at each atomic step of its
 * operation while the others must complete theirs, is tests/stress_stall.c.)
 *
 * Counters near wrap-around come from sl__mpmc_init_at / sl__spsc_init_at.
 * SL_STRESS_SCALE, SL_STRESS_PRODUCERS / SL_STRESS_CONSUMERS and
 * SL_STRESS_SEED as in stress_chan.c.
 */
#include "stress_common.h"

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/mpmc.h"
#include "sluice/spsc.h"
#include "testing.h"

#define SUITE "stress_raw"
#define TC_TIMEOUT 120
#define BATCH_MAX 32
#define W64 (UINT64_MAX - 1000)

/* =========================================================================
 * Raw MPMC: exactly once and per-producer FIFO with try_push/try_pop/batches
 * ========================================================================= */

typedef struct rm_cfg {
    const char *name;
    unsigned producers, consumers;
    size_t cap, esz;
    uint64_t msgs, floor;
    bool batches; /* mix push_n / pop_n in */
    bool at;
    uint64_t start;
} rm_cfg;

typedef struct rm_run {
    const rm_cfg *cfg;
    sl_mpmc q;
    unsigned np, nc;
    uint64_t n, total;
    size_t esz, cap;
    uint64_t seed;
    bitmap seen;
    sl_test_barrier start;
    atomic_uint_fast64_t popped;
    pad_counter *progress;
} rm_run;

static void *rm_producer(void *arg)
{
    worker *w = arg;
    rm_run *r = w->run;
    unsigned p = w->idx;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN);
    unsigned char batch[BATCH_MAX * ESZ_MAX];
    uint64_t s = 0;
    sl_test_barrier_wait(&r->start);
    while (s < r->n) {
        if (r->cfg->batches && (sl_test_rng_next(&rng) & 1)) {
            size_t k = msg_batch(batch, r->esz, p, s, r->n - s, BATCH_MAX, &rng);
            size_t got = sl_mpmc_push_n(&r->q, batch, k);
            if (got > k) {
                rec_fail("producer %u: sl_mpmc_push_n(%zu) returned %zu", p, k, got);
                got = k;
            }
            s += got;
            if (got < k)
                sched_yield();
        } else {
            msg_make(batch, r->esz, p, s);
            sl_status st = sl_mpmc_try_push(&r->q, batch);
            if (st == SL_OK)
                s++;
            else if (st == SL_FULL)
                sched_yield();
            else {
                rec_fail("producer %u: sl_mpmc_try_push returned %s", p, sl_status_str(st));
                break;
            }
        }
        atomic_store_explicit(&r->progress[p].v, s, memory_order_relaxed);
        sl_test_maybe_stall(&rng, 4096);
    }
    return NULL;
}

static void rm_take(rm_run *r, uint64_t *last, const unsigned char *b, const char *who)
{
    uint32_t p;
    uint64_t s;
    if (!msg_read(b, r->esz, r->np, r->n, &p, &s, who))
        return;
    fifo_see(&last[p], p, s, who);
    if (bm_set(&r->seen, (uint64_t)p * r->n + s))
        rec_fail("%s: duplicate: producer %u seq %llu popped twice", who, p, ULL(s));
}

static void *rm_consumer(void *arg)
{
    worker *w = arg;
    rm_run *r = w->run;
    unsigned c = w->idx - r->np;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN);
    unsigned char batch[BATCH_MAX * ESZ_MAX];
    char who[64];
    snprintf(who, sizeof who, "consumer %u", c);
    uint64_t *last = xnones(r->np);
    uint64_t got = 0;
    sl_test_barrier_wait(&r->start);
    while (atomic_load_explicit(&r->popped, memory_order_relaxed) < r->total) {
        size_t n = 0;
        if (r->cfg->batches && (sl_test_rng_next(&rng) & 1)) {
            size_t k = 1 + (size_t)(sl_test_rng_next(&rng) % BATCH_MAX);
            n = sl_mpmc_pop_n(&r->q, batch, k);
            if (n > k) {
                rec_fail("%s: sl_mpmc_pop_n(%zu) returned %zu", who, k, n);
                n = k;
            }
        } else {
            sl_status st = sl_mpmc_try_pop(&r->q, batch);
            if (st == SL_OK)
                n = 1;
            else if (st != SL_EMPTY)
                rec_fail("%s: sl_mpmc_try_pop returned %s", who, sl_status_str(st));
        }
        if (n == 0) {
            sched_yield();
            continue;
        }
        for (size_t i = 0; i < n; i++)
            rm_take(r, last, batch + i * r->esz, who);
        got += n;
        atomic_fetch_add_explicit(&r->popped, n, memory_order_relaxed);
        atomic_store_explicit(&r->progress[w->idx].v, got, memory_order_relaxed);
        if ((got & 255) < n) {
            size_t len = sl_mpmc_len(&r->q);
            if (len > r->cap)
                rec_fail("sl_mpmc_len = %zu above the capacity %zu", len, r->cap);
        }
        sl_test_maybe_stall(&rng, 4096);
    }
    free(last);
    return NULL;
}

static uint64_t rm_progress(void *arg)
{
    rm_run *r = arg;
    return sum_counters(r->progress, r->np + r->nc);
}

static void rm_diag(void *arg)
{
    rm_run *r = arg;
    fprintf(stderr, "  raw mpmc %u/%u cap %zu: len %zu, popped %llu of %llu\n", r->np, r->nc,
            r->cap, sl_mpmc_len(&r->q), ULL(atomic_load(&r->popped)), ULL(r->total));
    print_progress(r->progress, r->np, r->nc, "producer", "consumer");
}

static void rm_execute(const rm_cfg *cfg)
{
    rm_run *r = xaligned(sizeof *r);
    r->cfg = cfg;
    r->seed = begin_test(SUITE, "mpmc_exactly_once[%s]", cfg->name);
    r->np = sl_test_env_uint("SL_STRESS_PRODUCERS", cfg->producers);
    r->nc = sl_test_env_uint("SL_STRESS_CONSUMERS", cfg->consumers);
    uint64_t total = sl_test_scaled(cfg->msgs, cfg->floor);
    r->n = total / r->np ? total / r->np : 1;
    r->total = r->n * r->np;
    r->esz = cfg->esz;
    r->cap = cfg->cap;
    bm_init(&r->seen, r->total);
    sl_test_barrier_init(&r->start, r->np + r->nc);
    atomic_init(&r->popped, 0);
    r->progress = xaligned((r->np + r->nc) * sizeof *r->progress);
    sl_status st = cfg->at ? sl__mpmc_init_at(&r->q, cfg->esz, cfg->cap, cfg->start)
                           : sl_mpmc_init(&r->q, cfg->esz, cfg->cap);
    CHECK_MSG(st == SL_OK, "init returned %s", sl_status_str(st));
    CHECK_MSG(sl_mpmc_cap(&r->q) == cfg->cap, "cap %zu, asked %zu", sl_mpmc_cap(&r->q), cfg->cap);

    const team_role roles[] = {{r->np, rm_producer, false}, {r->nc, rm_consumer, false}};
    team t;
    team_start(&t, r, roles, N_OF(roles), NULL, rm_progress, rm_diag);
    double secs = team_end(&t);
    ASSERT_CLEAN();
    CHECK_MSG(atomic_load(&r->popped) == r->total, "popped %llu of %llu",
              ULL(atomic_load(&r->popped)), ULL(r->total));
    for (uint64_t i = 0; i < r->total; i++)
        CHECK_MSG(bm_get(&r->seen, i), "lost: producer %llu seq %llu", ULL(i / r->n),
                  ULL(i % r->n));
    sl_test_account("messages exactly once", r->total);
    CHECK_MSG(sl_mpmc_len(&r->q) == 0, "len %zu after everything was popped",
              sl_mpmc_len(&r->q));
    unsigned char buf[ESZ_MAX];
    CHECK_MSG(sl_mpmc_try_pop(&r->q, buf) == SL_EMPTY, "a pop after the end found a message");
    /* Quiescent: exactly the capacity fits again, not one more. */
    for (size_t i = 0; i < r->cap; i++) {
        msg_make(buf, r->esz, 0, i);
        CHECK_MSG(sl_mpmc_try_push(&r->q, buf) == SL_OK, "refill: push %zu of %zu failed", i,
                  r->cap);
    }
    CHECK_MSG(sl_mpmc_try_push(&r->q, buf) == SL_FULL, "refill: push beyond the capacity %zu",
              r->cap);
    CHECK_MSG(sl_mpmc_len(&r->q) == r->cap, "refill: len %zu, cap %zu", sl_mpmc_len(&r->q),
              r->cap);
    sl_mpmc_destroy(&r->q);
    fprintf(stderr, "[%s] %u/%u, %llu messages in %.3f s\n", g_test, r->np, r->nc,
            ULL(r->total), secs);
    sl_test_barrier_destroy(&r->start);
    bm_free(&r->seen);
    free(r->progress);
    free(r);
}

static const rm_cfg rm_cfgs[] = {
    {"4/4 cap 64", 4, 4, 64, 16, 2000000, 50000, false, false, 0},
    {"4/4 cap 3 40B", 4, 4, 3, 40, 600000, 20000, false, false, 0},
    {"8/8 cap 8", 8, 8, 8, 16, 1000000, 40000, false, false, 0},
    {"8/8 cap 1 64B", 8, 8, 1, 64, 300000, 10000, false, false, 0},
    {"2/2 cap 2", 2, 2, 2, 16, 600000, 20000, false, false, 0},
    {"4/4 cap 16 batches", 4, 4, 16, 16, 1000000, 40000, true, false, 0},
    {"8/8 cap 64 64B batches", 8, 8, 64, 64, 1000000, 40000, true, false, 0},
    {"4/4 cap 7 @2^64-1000", 4, 4, 7, 16, 600000, 20000, false, true, W64},
    {"8/8 cap 1024 @2^64-1000 batches", 8, 8, 1024, 16, 1000000, 40000, true, true, W64},
    {"2/2 cap 1 @2^64-100", 2, 2, 1, 16, 200000, 10000, false, true, UINT64_MAX - 100},
    {"3/3 cap 5 @2^32-300", 3, 3, 5, 16, 300000, 10000, true, true, (uint64_t)UINT32_MAX - 300},
    /* 8-byte messages: the direct form, values in the cells. */
    {"8/8 cap 8 8B", 8, 8, 8, 8, 1000000, 40000, false, false, 0},
    {"4/4 cap 1 8B @2^64-1000", 4, 4, 1, 8, 300000, 10000, false, true, W64},
    {"4/4 cap 64 8B batches", 4, 4, 64, 8, 1000000, 40000, true, false, 0},
    /* Volume: the common shape (few threads, a roomy ring) long enough to
     * cross many laps and preemptions; most of the messages make test checks. */
    {"2/2 cap 1024 8B volume", 2, 2, 1024, 8, 16000000, 100000, false, false, 0},
};

START_TEST(mpmc_exactly_once) { rm_execute(&rm_cfgs[_i]); }
END_TEST

/* =========================================================================
 * Raw MPMC: len when nothing runs
 *
 * sl_mpmc_len promises an exact count when no operation is in progress. Many
 * short rounds of contended try_push / try_pop attempts (a preemptor stops
 * threads inside their operations, so rings wrap past a stalled one and
 * positions get skipped), then a barrier; with everyone parked at the
 * barrier, len must equal what a drain finds, and pushed - popped too.
 * ========================================================================= */

/* Naps up to 205 us, no spins: long enough that the other threads wrap the
 * ring past a thread stopped inside its operation. */
static const preempt_timing k_preempt_long = {10000, 100000, 5000, 200000, false};

typedef struct lq_run {
    sl_mpmc q;
    unsigned np, nc, rounds;
    sl_test_barrier go, done;
    atomic_bool round_stop;
    atomic_uint_fast64_t pushed, popped, round;
    uint64_t seed;
} lq_run;

static void *lq_worker(void *arg)
{
    worker *a = arg;
    lq_run *r = a->run;
    bool producer = a->idx < r->np;
    uint64_t v[2] = {a->idx, 0};
    for (unsigned round = 0; round < r->rounds; round++) {
        sl_test_barrier_wait(&r->go);
        while (!atomic_load_explicit(&r->round_stop, memory_order_relaxed)) {
            if (producer) {
                if (sl_mpmc_try_push(&r->q, v) == SL_OK)
                    atomic_fetch_add_explicit(&r->pushed, 1, memory_order_relaxed);
            } else if (sl_mpmc_try_pop(&r->q, v) == SL_OK) {
                atomic_fetch_add_explicit(&r->popped, 1, memory_order_relaxed);
            }
        }
        sl_test_barrier_wait(&r->done);
    }
    return NULL;
}

static uint64_t lq_progress(void *arg)
{
    lq_run *r = arg;
    return atomic_load(&r->round);
}

START_TEST(mpmc_len_quiescent)
{
    static const size_t caps[] = {7, 64};
    size_t cap = caps[_i];
    lq_run *r = xaligned(sizeof *r);
    r->seed = begin_test(SUITE, "mpmc_len_quiescent[3/5 cap %zu]", cap);
    r->np = 3;
    r->nc = 5;
    r->rounds = (unsigned)sl_test_scaled(250, 60);
    CHECK_MSG(sl_mpmc_init(&r->q, 16, cap) == SL_OK, "init");
    sl_test_barrier_init(&r->go, r->np + r->nc + 1);
    sl_test_barrier_init(&r->done, r->np + r->nc + 1);
    atomic_init(&r->round_stop, false);
    atomic_init(&r->pushed, 0);
    atomic_init(&r->popped, 0);
    atomic_init(&r->round, 0);
    const team_role roles[] = {{r->np + r->nc, lq_worker, true}};
    team t;
    team_start(&t, r, roles, N_OF(roles), &k_preempt_long, lq_progress, NULL);
    unsigned bad = 0, first_round = 0;
    size_t first_len = 0;
    uint64_t first_inside = 0;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed);
    for (unsigned round = 0; round < r->rounds; round++) {
        atomic_store(&r->round_stop, false);
        sl_test_barrier_wait(&r->go);
        sl_test_sleep_ns(100000 + sl_test_rng_next(&rng) % 1000000);
        atomic_store(&r->round_stop, true);
        sl_test_barrier_wait(&r->done);
        /* Every worker is at the barrier: no operation is in progress. */
        size_t len = sl_mpmc_len(&r->q);
        uint64_t v[2], drained = 0;
        while (sl_mpmc_try_pop(&r->q, v) == SL_OK)
            drained++;
        atomic_fetch_add(&r->popped, drained);
        uint64_t pushed = atomic_load(&r->pushed), popped = atomic_load(&r->popped);
        CHECK_MSG(pushed == popped,
                  "round %u: pushed %llu, popped %llu after a drain (lost or duplicated)",
                  round, ULL(pushed), ULL(popped));
        /* sl_mpmc_len at rest is an upper bound that is 0 exactly when the
         * queue is empty (sluice/mpmc.h): positions an enqueuer skipped are
         * counted until consumers pass them. */
        if ((len < drained || (len == 0) != (drained == 0)) && bad++ == 0) {
            first_round = round;
            first_len = len;
            first_inside = drained;
        }
        CHECK_MSG(sl_mpmc_len(&r->q) == 0, "round %u: len %zu after a drain", round,
                  sl_mpmc_len(&r->q));
        atomic_store(&r->round, round + 1);
    }
    team_end(&t);
    signal(SIGUSR2, SIG_DFL); /* every target is joined: nothing is pending */
    fprintf(stderr, "[%s] %u rounds, %llu preemptions, len wrong in %u\n", g_test, r->rounds,
            ULL(atomic_load(&g_preempt_hits)), bad);
    CHECK_MSG(bad == 0,
              "sl_mpmc_len was not exact with no operation in progress in %u of %u rounds; "
              "first: round %u, len %zu, but %llu messages inside (capacity %zu)",
              bad, r->rounds, first_round, first_len, ULL(first_inside), cap);
    sl_mpmc_destroy(&r->q);
    sl_test_barrier_destroy(&r->go);
    sl_test_barrier_destroy(&r->done);
    free(r);
}
END_TEST

/* =========================================================================
 * Raw SPSC: batches of random sizes, exact sequence, len from a third thread
 * ========================================================================= */

typedef struct rs_cfg {
    const char *name;
    size_t cap, esz;
    uint64_t msgs, floor;
    bool at;
    uint64_t start;
} rs_cfg;

typedef struct rs_run {
    const rs_cfg *cfg;
    sl_spsc q;
    uint64_t n;
    size_t esz, cap, bmax;
    uint64_t seed;
    sl_test_barrier start;
    atomic_bool done;
    pad_counter *progress; /* 2 */
} rs_run;

static void *rs_producer(void *arg)
{
    rs_run *r = ((worker *)arg)->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ GOLDEN);
    unsigned char *batch = xcalloc(r->bmax, r->esz);
    uint64_t s = 0;
    sl_test_barrier_wait(&r->start);
    while (s < r->n) {
        size_t got;
        if (sl_test_rng_next(&rng) % 3 == 0) {
            msg_make(batch, r->esz, 0, s);
            got = sl_spsc_try_push(&r->q, batch) == SL_OK;
        } else {
            size_t k = msg_batch(batch, r->esz, 0, s, r->n - s, r->bmax, &rng);
            got = sl_spsc_push_n(&r->q, batch, k);
            if (got > k) {
                rec_fail("producer: sl_spsc_push_n(%zu) returned %zu", k, got);
                got = k;
            }
        }
        s += got;
        atomic_store_explicit(&r->progress[0].v, s, memory_order_relaxed);
        if (got == 0)
            sched_yield();
        sl_test_maybe_stall(&rng, 4096);
    }
    free(batch);
    return NULL;
}

static void *rs_consumer(void *arg)
{
    rs_run *r = ((worker *)arg)->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (2 * GOLDEN));
    unsigned char *batch = xcalloc(r->bmax, r->esz);
    uint64_t expect = 0;
    sl_test_barrier_wait(&r->start);
    while (expect < r->n) {
        size_t got;
        if (sl_test_rng_next(&rng) % 3 == 0) {
            got = sl_spsc_try_pop(&r->q, batch) == SL_OK;
        } else {
            size_t k = 1 + (size_t)(sl_test_rng_next(&rng) % r->bmax);
            got = sl_spsc_pop_n(&r->q, batch, k);
            if (got > k) {
                rec_fail("consumer: sl_spsc_pop_n(%zu) returned %zu", k, got);
                got = k;
            }
        }
        for (size_t i = 0; i < got; i++) {
            uint32_t p;
            uint64_t s;
            if (!msg_read(batch + i * r->esz, r->esz, 1, r->n, &p, &s, "consumer"))
                continue;
            if (s != expect)
                rec_fail("consumer: expected seq %llu, got %llu (FIFO broken, lost or "
                         "duplicated)",
                         ULL(expect), ULL(s));
            expect = s + 1;
        }
        atomic_store_explicit(&r->progress[1].v, expect, memory_order_relaxed);
        if (got == 0)
            sched_yield();
        sl_test_maybe_stall(&rng, 4096);
    }
    free(batch);
    atomic_store(&r->done, true);
    return NULL;
}

static void *rs_observer(void *arg)
{
    rs_run *r = ((worker *)arg)->run;
    uint64_t looks = 0;
    sl_test_barrier_wait(&r->start);
    while (!atomic_load(&r->done)) {
        size_t len = sl_spsc_len(&r->q);
        if (len > r->cap)
            rec_fail("observer: sl_spsc_len = %zu above the capacity %zu", len, r->cap);
        if (sl_spsc_cap(&r->q) != r->cap)
            rec_fail("observer: sl_spsc_cap changed");
        if ((++looks & 63) == 0)
            sched_yield();
    }
    return NULL;
}

static uint64_t rs_progress(void *arg)
{
    rs_run *r = arg;
    return sum_counters(r->progress, 2);
}

static void rs_execute(const rs_cfg *cfg)
{
    rs_run *r = xaligned(sizeof *r);
    r->cfg = cfg;
    r->seed = begin_test(SUITE, "spsc_batches[%s]", cfg->name);
    r->n = sl_test_scaled(cfg->msgs, cfg->floor);
    r->esz = cfg->esz;
    r->cap = cfg->cap;
    r->bmax = cfg->cap * 2 + 3 < 64 ? cfg->cap * 2 + 3 : 64;
    sl_test_barrier_init(&r->start, 3);
    atomic_init(&r->done, false);
    r->progress = xaligned(2 * sizeof *r->progress);
    sl_status st = cfg->at ? sl__spsc_init_at(&r->q, cfg->esz, cfg->cap, cfg->start)
                           : sl_spsc_init(&r->q, cfg->esz, cfg->cap);
    CHECK_MSG(st == SL_OK, "init returned %s", sl_status_str(st));
    CHECK_MSG(sl_spsc_cap(&r->q) == cfg->cap, "cap %zu, asked %zu", sl_spsc_cap(&r->q), cfg->cap);
    const team_role roles[] = {
        {1, rs_producer, false}, {1, rs_consumer, false}, {1, rs_observer, false}};
    team t;
    team_start(&t, r, roles, N_OF(roles), NULL, rs_progress, NULL);
    double secs = team_end(&t);
    ASSERT_CLEAN();
    CHECK_MSG(sl_spsc_len(&r->q) == 0, "len %zu at the end", sl_spsc_len(&r->q));
    sl_test_account("messages exactly once, in order", r->n);
    /* Quiescent: exactly the capacity fits, in one batch. */
    unsigned char *all = xcalloc(cfg->cap + 1, cfg->esz);
    for (size_t i = 0; i <= cfg->cap; i++)
        msg_make(all + i * cfg->esz, cfg->esz, 0, i);
    size_t in = sl_spsc_push_n(&r->q, all, cfg->cap + 1);
    CHECK_MSG(in == cfg->cap, "push_n(cap + 1) into an empty ring took %zu, cap %zu", in,
              cfg->cap);
    CHECK_MSG(sl_spsc_len(&r->q) == cfg->cap, "len %zu when full, cap %zu", sl_spsc_len(&r->q),
              cfg->cap);
    memset(all, 0, (cfg->cap + 1) * cfg->esz);
    size_t out = sl_spsc_pop_n(&r->q, all, cfg->cap + 1);
    CHECK_MSG(out == cfg->cap, "pop_n took %zu, cap %zu", out, cfg->cap);
    for (size_t i = 0; i < out; i++) {
        msg_hdr h;
        memcpy(&h, all + i * cfg->esz, sizeof h);
        CHECK_MSG(h.seq == i && h.check == msg_check(0, i), "refill: slot %zu holds seq %llu", i,
                  ULL(h.seq));
    }
    free(all);
    sl_spsc_destroy(&r->q);
    fprintf(stderr, "[%s] %llu messages in %.3f s\n", g_test, ULL(r->n),
            secs);
    sl_test_barrier_destroy(&r->start);
    free(r->progress);
    free(r);
}

static const rs_cfg rs_cfgs[] = {
    {"cap 1", 1, 16, 500000, 20000, false, 0},
    {"cap 2 64B", 2, 64, 1000000, 20000, false, 0},
    {"cap 3 40B", 3, 40, 1000000, 20000, false, 0},
    {"cap 1000", 1000, 16, 4000000, 100000, false, 0},
    {"cap 3 @2^64-1000", 3, 16, 1000000, 20000, true, W64},
    {"cap 1000 @2^64-1000", 1000, 64, 2000000, 50000, true, W64},
    {"cap 1 @2^64-1", 1, 16, 300000, 10000, true, UINT64_MAX - 1},
    {"cap 1024 volume", 1024, 16, 24000000, 100000, false, 0},
};

START_TEST(spsc_batches) { rs_execute(&rs_cfgs[_i]); }
END_TEST

static Suite *stress_raw_suite(void)
{
    Suite *s = suite_create("stress_raw");
    sl_test_loop_case(s, "mpmc_exactly_once", TC_TIMEOUT, mpmc_exactly_once, N_OF(rm_cfgs));
    sl_test_loop_case(s, "mpmc_len_quiescent", TC_TIMEOUT, mpmc_len_quiescent, 2);
    sl_test_loop_case(s, "spsc_batches", TC_TIMEOUT, spsc_batches, N_OF(rs_cfgs));
    return s;
}

int main(void) { return sl_test_run(stress_raw_suite()); }
