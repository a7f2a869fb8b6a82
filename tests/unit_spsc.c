/*
 * tests/unit_spsc.c — the raw SPSC ring (sluice/spsc.h).
 *
 * Sequential behaviour is checked against a plain array FIFO (the model),
 * including with the counters started just below the 64-bit wrap
 * (sl__spsc_init_at). This unit compiles the inline fast paths with the
 * misuse checks on, whatever the build type, so that a second concurrent
 * producer or consumer must abort.
 */
#undef SL_DEBUG_CHECKS
#define SL_DEBUG_CHECKS 1

#include "harness.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/spsc.h>
#include "testing.h"

#define Q_T sl_spsc
#define Q_NAME "spsc"
#define q_init sl_spsc_init
#define q_init_at sl__spsc_init_at
#define q_destroy sl_spsc_destroy
#define q_push sl_spsc_try_push
#define q_pop sl_spsc_try_pop
#define q_push_n sl_spsc_push_n
#define q_pop_n sl_spsc_pop_n
#define q_len sl_spsc_len
#define q_cap sl_spsc_cap
#include "raw_ring_cases.h"

/* ---- misuse: a second concurrent producer or consumer aborts --------------- */

typedef struct misuse_ctx {
    sl_spsc q;
    _Atomic int stop;
    uint64_t until_ns;
} misuse_ctx;

static void *misuse_pusher(void *arg)
{
    misuse_ctx *c = arg;
    uint64_t v = 0;
    while (!atomic_load_explicit(&c->stop, memory_order_relaxed) && sl_test_now_ns() < c->until_ns) {
        for (int i = 0; i < 256; i++) {
            (void)sl_spsc_try_push(&c->q, &v);
            v++;
        }
    }
    return NULL;
}

static void *misuse_popper(void *arg)
{
    misuse_ctx *c = arg;
    uint64_t v;
    while (!atomic_load_explicit(&c->stop, memory_order_relaxed) && sl_test_now_ns() < c->until_ns) {
        for (int i = 0; i < 256; i++) (void)sl_spsc_try_pop(&c->q, &v);
    }
    return NULL;
}

/* Runs `pushers` producer threads and `poppers` consumer threads on one ring
 * for up to a few seconds; with two on one side this must abort (SIGABRT). */
static void run_misuse(int pushers, int poppers)
{
    static misuse_ctx c;
    ck_assert_int_eq(sl_spsc_init(&c.q, sizeof(uint64_t), 64), SL_OK);
    atomic_store(&c.stop, 0);
    c.until_ns = sl_test_now_ns() + 5 * 1000000000ull;
    pthread_t t[4];
    int n = 0;
    for (int i = 0; i < pushers; i++)
        ck_assert_int_eq(pthread_create(&t[n++], NULL, misuse_pusher, &c), 0);
    for (int i = 0; i < poppers; i++)
        ck_assert_int_eq(pthread_create(&t[n++], NULL, misuse_popper, &c), 0);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    sl_spsc_destroy(&c.q);
}

START_TEST(test_misuse_two_producers_abort)
{
    run_misuse(2, 1);
    /* Reaching here means no abort: the check failed to fire. */
    ck_abort_msg("two concurrent producers ran for 5 s without SIGABRT");
}
END_TEST

START_TEST(test_misuse_two_consumers_abort)
{
    run_misuse(1, 2);
    ck_abort_msg("two concurrent consumers ran for 5 s without SIGABRT");
}
END_TEST

static Suite *spsc_suite(void)
{
    Suite *s = suite_create(Q_NAME);

    TCase *tc = tcase_create("init");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_init_bad_input);
    tcase_add_test(tc, test_init_limits_ok);
    tcase_add_test(tc, test_destroy_null);
    tcase_add_test(tc, test_try_null_args);
    suite_add_tcase(s, tc);

    tc = tcase_create("sequential");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_exact_capacity);
    tcase_add_test(tc, test_exact_capacity_near_wrap);
    tcase_add_test(tc, test_fifo_interleaved);
    tcase_add_test(tc, test_batch_partial);
    tcase_add_test(tc, test_elem_sizes);
    tcase_add_test(tc, test_wrap_sequential);
    tcase_add_test(tc, test_model_random);
    tcase_add_test(tc, test_model_random_near_wrap);
    suite_add_tcase(s, tc);

    tc = tcase_create("threads");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_two_threads_fifo);
    tcase_add_test(tc, test_two_threads_fifo_near_wrap);
    suite_add_tcase(s, tc);

    tc = tcase_create("misuse");
    tcase_set_timeout(tc, 60);
    tcase_add_test_raise_signal(tc, test_misuse_two_producers_abort, SIGABRT);
    tcase_add_test_raise_signal(tc, test_misuse_two_consumers_abort, SIGABRT);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sl_test_run(spsc_suite());
}
