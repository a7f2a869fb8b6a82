/*
 * tests/unit_alloc.c — allocation failure at the k-th call, in every channel
 * path that allocates.
 *
 * Each scenario runs with the harness's allocation fault armed at k
 * (sl_test_fail_alloc_at), for k = 1, 2, … until a run makes fewer than k
 * allocations, so that every allocation of the scenario fails once. In every
 * run each call must return SL_ENOMEM or succeed; a failed call consumed
 * nothing (the caller still owns its message, an out parameter is
 * untouched); the messages that did go are received exactly once, in order;
 * and nothing leaks (the asan preset runs this suite with LeakSanitizer).
 *
 * The paths: sl_chan_new for each flavour and size class; the raw queues'
 * init; SL_LIST's growth by segments, one message and a batch at a time; the
 * reclamation record a thread allocates at its first SL_LIST operation; and
 * sl_select with more cases than its stack array.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/list.h>
#include <sluice/mpmc.h>
#include <sluice/ring.h>
#include <sluice/select.h>
#include <sluice/spsc.h>
#include "testing.h"

#define SUITE "unit_alloc"

static const sl_flavor k_flavors[] = {SL_SPSC, SL_MPMC, SL_LIST, SL_RING};

/* Runs scenario(k, ctx) with the k-th allocation failing, for k = 1, 2, …
 * until a run made fewer than k allocations (none failed). Returns how many
 * runs had a failure injected: the scenario's allocation count. */
static unsigned every_k(const char *name, void (*scenario)(uint64_t k, void *ctx), void *ctx)
{
    for (uint64_t k = 1;; k++) {
        ck_assert_msg(k < 10000, "scenario still allocating after %llu runs", ULL(k));
        sl_test_fail_alloc_at(k);
        scenario(k, ctx);
        uint64_t made = sl_test_allocs();
        sl_test_alloc_faults_off();
        if (made < k) {
            if (name)
                fprintf(stderr, "[%s] %s: %llu allocations, each failed in its own run\n",
                        SUITE, name, ULL(k - 1));
            return (unsigned)(k - 1);
        }
    }
}

/* ---- sl_chan_new, each flavour and size class ----------------------------- */

typedef struct new_case {
    sl_flavor f;
    size_t esz, cap;
} new_case;

static void chan_new_scenario(uint64_t k, void *ctx)
{
    const new_case *c = ctx;
    sl_chan *const untouched = (sl_chan *)(uintptr_t)0x5A;
    sl_chan *ch = untouched;
    sl_chan_opts o = {.flavor = c->f, .elem_size = c->esz, .capacity = c->cap};
    sl_status st = sl_chan_new(&ch, &o);
    if (st == SL_ENOMEM) {
        CHECK(ch == untouched, "%s esz %zu cap %zu k %llu: SL_ENOMEM set *out",
              sl_test_flavor_name(c->f), c->esz, c->cap, ULL(k));
        return;
    }
    CHECK(st == SL_OK, "%s esz %zu cap %zu k %llu: %s", sl_test_flavor_name(c->f), c->esz,
          c->cap, ULL(k), sl_status_str(st));
    /* A channel made is whole: a message goes through. */
    unsigned char in[512], out[512];
    sl_test_seq_fill(in, c->esz, 77);
    CHECK(sl_chan_try_send(ch, in) == SL_OK, "new channel refused a send");
    CHECK(sl_chan_try_recv(ch, out) == SL_OK && sl_test_seq_is(out, c->esz, 77),
          "new channel lost a message");
    sl_chan_free(ch);
}

START_TEST(test_chan_new)
{
    const size_t sizes[] = {1, 8, 24, 64, 500};
    const size_t caps[] = {1, 64, 4096};
    unsigned total = 0, cases = 0;
    for (int f = 0; f < N_OF(k_flavors); f++)
        for (int s = 0; s < N_OF(sizes); s++)
            for (int c = 0; c < N_OF(caps); c++) {
                new_case nc = {k_flavors[f], sizes[s], caps[c]};
                unsigned allocs = every_k(NULL, chan_new_scenario, &nc);
                ck_assert_msg(allocs >= 2, "%s esz %zu: only %u allocations seen",
                              sl_test_flavor_name(nc.f), nc.esz, allocs);
                total += allocs;
                cases++;
            }
    fprintf(stderr, "[%s] sl_chan_new: %u flavour/size cases, %u allocations, each failed in its own run\n",
            SUITE, cases, total);
}
END_TEST

/* ---- the raw queues' init --------------------------------------------------- */

static sl_spsc g_spsc;
static sl_mpmc g_mpmc;
static sl_ring g_ring;
static sl_list g_list;

/* Init returns SL_OK (then destroy frees all) or SL_ENOMEM having kept
 * nothing (LeakSanitizer would see it). */
static void raw_init_scenario(uint64_t k, void *ctx)
{
    const new_case *c = ctx;
    sl_status st;
    switch (c->f) {
    case SL_SPSC:
        if ((st = sl_spsc_init(&g_spsc, c->esz, c->cap)) == SL_OK)
            sl_spsc_destroy(&g_spsc);
        break;
    case SL_MPMC:
        if ((st = sl_mpmc_init(&g_mpmc, c->esz, c->cap)) == SL_OK)
            sl_mpmc_destroy(&g_mpmc);
        break;
    case SL_RING:
        if ((st = sl_ring_init(&g_ring, c->esz, c->cap)) == SL_OK)
            sl_ring_destroy(&g_ring);
        break;
    default:
        if ((st = sl_list_init(&g_list, c->esz)) == SL_OK)
            sl_list_destroy(&g_list);
        break;
    }
    CHECK(st == SL_OK || st == SL_ENOMEM, "raw %s init, k %llu: %s", sl_test_flavor_name(c->f),
          ULL(k), sl_status_str(st));
}

START_TEST(test_raw_init)
{
    const size_t sizes[] = {8, 24, 500};
    unsigned total = 0;
    for (int f = 0; f < N_OF(k_flavors); f++)
        for (int s = 0; s < N_OF(sizes); s++) {
            new_case nc = {k_flavors[f], sizes[s], 100};
            unsigned allocs = every_k(NULL, raw_init_scenario, &nc);
            ck_assert_uint_ge(allocs, 1);
            total += allocs;
        }
    fprintf(stderr, "[%s] raw init: %u allocations, each failed in its own run\n", SUITE, total);
}
END_TEST

/* ---- SL_LIST's growth ------------------------------------------------------- */

#define BIG 2048         /* 32 slots per segment: growth every 32 messages */
#define GROWTH_MSGS 200

/* Sends GROWTH_MSGS numbered messages one at a time (odd rounds: in batches
 * of 7), keeping what was refused; then receives: exactly the sent ones, in
 * order. */
static void list_growth_scenario(uint64_t k, void *ctx)
{
    const bool batches = ctx != NULL;
    sl_chan *ch = NULL;
    sl_chan_opts o = {.flavor = SL_LIST, .elem_size = BIG};
    if (sl_chan_new(&ch, &o) == SL_ENOMEM)
        return;
    static unsigned char msgs[7][BIG], out[BIG];
    static bool sent[GROWTH_MSGS];
    unsigned n_sent = 0;
    for (uint64_t i = 0; i < GROWTH_MSGS;) {
        size_t want = batches ? (GROWTH_MSGS - i < 7 ? GROWTH_MSGS - i : 7) : 1;
        for (size_t j = 0; j < want; j++)
            sl_test_seq_fill(msgs[j], BIG, i + j);
        size_t went;
        if (batches) {
            went = sl_chan_try_send_n(ch, msgs, want);
        } else {
            sl_status st = (i & 1) ? sl_chan_send(ch, msgs[0]) : sl_chan_try_send(ch, msgs[0]);
            CHECK(st == SL_OK || st == SL_ENOMEM, "list send, k %llu: %s", ULL(k),
                  sl_status_str(st));
            went = st == SL_OK;
        }
        for (size_t j = 0; j < want; j++) {
            sent[i + j] = j < went;
            /* Refused: still the caller's, unchanged. */
            CHECK(j < went || sl_test_seq_is(msgs[j], BIG, i + j), "a refused message changed");
        }
        n_sent += (unsigned)went;
        i += want;
    }
    unsigned got = 0;
    for (uint64_t i = 0; i < GROWTH_MSGS; i++) {
        if (!sent[i])
            continue;
        CHECK(sl_chan_try_recv(ch, out) == SL_OK, "k %llu: message %llu lost", ULL(k), ULL(i));
        CHECK(sl_test_seq_is(out, BIG, i), "k %llu: got %llu, expected %llu", ULL(k),
              ULL(sl_test_seq_low(out, BIG)), ULL(i));
        got++;
    }
    CHECK(sl_chan_try_recv(ch, out) == SL_EMPTY, "k %llu: a refused message arrived", ULL(k));
    CHECK(got == n_sent, "k %llu: %u sent, %u received", ULL(k), n_sent, got);
    sl_chan_free(ch);
}

START_TEST(test_list_growth)
{
    /* One segment per 32 messages: a scenario allocates at least 6. */
    ck_assert_uint_ge(every_k("list growth, one at a time", list_growth_scenario, NULL), 6);
    ck_assert_uint_ge(every_k("list growth, batches", list_growth_scenario, (void *)1), 6);
}
END_TEST

/* ---- a thread's first SL_LIST operation or SL_MPMC send: its record ---------
 * Records are reused after their thread exits, so the scenario keeps more
 * threads alive at once than there are records: some must allocate one. Where
 * that allocation fails the thread works unregistered (channels/epoch.c: it
 * is counted as an anonymous reader; its send marks itself in the channel's
 * counters) and its operation still succeeds; a failed segment allocation
 * gives SL_ENOMEM (SL_LIST only: an SL_MPMC send never allocates more). */
typedef struct first_op {
    pthread_t thr;
    sl_chan *ch;
    sl_test_barrier *go;
    uint64_t id;
    sl_status st;
} first_op;

static void *first_op_main(void *arg)
{
    first_op *t = arg;
    sl_test_barrier_wait(t->go);
    t->st = sl_chan_try_send(t->ch, &t->id);
    sl_test_barrier_wait(t->go); /* every thread alive until all have sent */
    return NULL;
}

#define MAX_FIRST 64

static void first_op_scenario(uint64_t k, void *ctx)
{
    const sl_flavor f = *(const sl_flavor *)ctx;
    /* More threads at once than records exist (the earlier runs' threads
     * gave theirs back): 4 of them allocate one. */
    const unsigned n = (unsigned)sl__epoch_records() + 4;
    ck_assert_uint_le(n, MAX_FIRST);
    sl_chan *ch = NULL;
    sl_chan_opts o = {.flavor = f, .elem_size = 8, .capacity = MAX_FIRST};
    if (sl_chan_new(&ch, &o) == SL_ENOMEM)
        return;
    sl_test_barrier go;
    sl_test_barrier_init(&go, n);
    first_op t[MAX_FIRST];
    for (unsigned i = 0; i < n; i++) {
        t[i] = (first_op){.ch = ch, .go = &go, .id = i};
        ck_assert_int_eq(pthread_create(&t[i].thr, NULL, first_op_main, &t[i]), 0);
    }
    bool sent[MAX_FIRST] = {false};
    for (unsigned i = 0; i < n; i++) {
        ck_assert_int_eq(pthread_join(t[i].thr, NULL), 0);
        CHECK(t[i].st == SL_OK || (f == SL_LIST && t[i].st == SL_ENOMEM),
              "k %llu: %s, thread %u: %s", ULL(k), sl_test_flavor_name(f), i,
              sl_status_str(t[i].st));
        sent[i] = t[i].st == SL_OK;
    }
    sl_test_barrier_destroy(&go);
    uint64_t v;
    while (sl_chan_try_recv(ch, &v) == SL_OK) {
        CHECK(v < n && sent[v], "k %llu: message %llu was not sent, or came twice", ULL(k), ULL(v));
        sent[v] = false;
    }
    for (unsigned i = 0; i < n; i++)
        CHECK(!sent[i], "k %llu: thread %u's message lost", ULL(k), i);
    sl_chan_free(ch);
}

START_TEST(test_first_operation_of_a_thread)
{
    /* The channel's two, then four records. */
    const sl_flavor list = SL_LIST, mpmc = SL_MPMC;
    ck_assert_uint_ge(every_k("a thread's first list operation", first_op_scenario,
                              (void *)&list), 6);
    /* The channel's one, then four records. */
    ck_assert_uint_ge(every_k("a thread's first SL_MPMC send", first_op_scenario,
                              (void *)&mpmc), 5);
}
END_TEST

/* ---- sl_select with more cases than its stack array ------------------------- */

#define MANY_CASES 100

/* The channel is made inside the scenario too (its allocations come first). */
static void select_scenario(uint64_t k, void *ctx)
{
    (void)ctx;
    sl_chan *ch = NULL;
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 8, .capacity = 4};
    if (sl_chan_new(&ch, &o) == SL_ENOMEM)
        return;
    uint64_t v = 42, out = 0;
    ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
    sl_select_case cs[MANY_CASES] = {{0}};
    cs[MANY_CASES / 2] = (sl_select_case){.ch = ch, .op = SL_SEL_RECV, .buf = &out};
    size_t idx = MANY_CASES;
    sl_status st = sl_select(cs, MANY_CASES, 0, &idx);
    if (st == SL_ENOMEM) {
        CHECK(idx == MANY_CASES, "k %llu: SL_ENOMEM set *index", ULL(k));
        CHECK(sl_chan_len(ch) == 1 && out == 0, "k %llu: SL_ENOMEM consumed the message", ULL(k));
    } else {
        CHECK(st == SL_OK && idx == MANY_CASES / 2 && out == 42, "k %llu: %s, index %zu",
              ULL(k), sl_status_str(st), idx);
        CHECK(sl_chan_len(ch) == 0, "k %llu: nothing received", ULL(k));
    }
    sl_chan_free(ch);
}

START_TEST(test_select_many_cases)
{
    /* The channel's allocations, then select's order array. */
    ck_assert_uint_ge(every_k("select, 100 cases", select_scenario, NULL), 2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create(SUITE);
    TCase *tc = tcase_create("enomem");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_chan_new);
    tcase_add_test(tc, test_raw_init);
    tcase_add_test(tc, test_list_growth);
    tcase_add_test(tc, test_first_operation_of_a_thread);
    tcase_add_test(tc, test_select_many_cases);
    suite_add_tcase(s, tc);
    return sl_test_run(s);
}
