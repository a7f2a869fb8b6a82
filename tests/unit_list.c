/*
 * tests/unit_list.c — the unbounded list: raw sl_list_* (sluice/list.h) and
 * the SL_LIST channel.
 *
 * Segment sizes depend on the message size (about 32 KiB of messages per
 * segment, 32 … 1024 slots), so every FIFO test runs over several message
 * sizes and pushes far more than one segment holds. Messages carry their
 * sequence number and a pad derived from it, so that a reordered, lost,
 * duplicated or torn message shows. Random tests print their seed; set
 * SL_TEST_SEED to replay one.
 *
 * Reclamation: after a drained burst the list must be back to at most two
 * segments (head and spare) once a pop has found it empty, in every build
 * (TSan sees the epoch scheme's atomics, so it checks the real reclamation
 * too). Allocation failure at a segment boundary, growth from the spare with
 * every allocation failing, and record reuse across thread exits use the
 * hooks of internal/testing.h.
 */
#include "stress_common.h"
#include "internal/epoch.h"

#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/chan.h>
#include <sluice/list.h>

#include "testing.h"

#if defined(__SANITIZE_THREAD__)
#define UL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UL_TSAN 1
#endif
#endif
#ifndef UL_TSAN
#define UL_TSAN 0
#endif
#if defined(__SANITIZE_ADDRESS__)
#define UL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UL_ASAN 1
#endif
#endif
#ifndef UL_ASAN
#define UL_ASAN 0
#endif

/* Segments a drained list may keep: the head segment and the spare. */
#define IDLE_SEGMENTS 2

/* The same slot count list.c picks (about 32 KiB of messages, 32..1024). */
static size_t expected_slots(size_t esz)
{
    size_t n = (32 * 1024) / esz;
    return n < 32 ? 32 : n > 1024 ? 1024 : n;
}

/* =========================================================================
 * Raw list
 * ========================================================================= */

START_TEST(test_init_bad_input)
{
    sl_list q;
    ck_assert_int_eq(sl_list_init(NULL, 8), SL_EINVAL);
    ck_assert_int_eq(sl_list_init(&q, 0), SL_EINVAL);
    ck_assert_int_eq(sl_list_init(&q, SL_ELEM_MAX + 1), SL_EINVAL);
    ck_assert_int_eq(sl_list_init(&q, SIZE_MAX), SL_EINVAL);

    /* The NULL-tolerant calls. */
    sl_list_destroy(NULL);
    ck_assert_uint_eq(sl_list_len(NULL), 0);
    ck_assert_uint_eq(sl_list_segments(NULL), 0);
    uint64_t v = 5;
    ck_assert_uint_eq(sl_list_push_n(NULL, &v, 1), 0);
    ck_assert_uint_eq(sl_list_pop_n(NULL, &v, 1), 0);

    /* The extremes that are allowed. */
    const size_t ok_sizes[] = {1, SL_ELEM_MAX};
    for (int k = 0; k < N_OF(ok_sizes); k++) {
        size_t esz = ok_sizes[k];
        ck_assert_int_eq(sl_list_init(&q, esz), SL_OK);
        ck_assert_uint_eq(sl_list_len(&q), 0);
        ck_assert_uint_ge(sl_list_segments(&q), 1);
        unsigned char *in = xmalloc(esz), *out = xmalloc(esz);
        for (uint64_t s = 0; s < 40; s++) { /* > 32 slots: crosses a segment */
            sl_test_seq_fill(in, esz, s);
            ck_assert_int_eq(sl_list_try_push(&q, in), SL_OK);
        }
        ck_assert_uint_eq(sl_list_len(&q), 40);
        for (uint64_t s = 0; s < 40; s++) {
            memset(out, 0, esz);
            ck_assert_int_eq(sl_list_try_pop(&q, out), SL_OK);
            ck_assert_msg(sl_test_seq_is(out, esz, s), "esz %zu: message %llu wrong", esz, ULL(s));
        }
        ck_assert_int_eq(sl_list_try_pop(&q, out), SL_EMPTY);
        /* NULL buffers in the batch forms consume nothing. */
        sl_test_seq_fill(in, esz, 7);
        ck_assert_int_eq(sl_list_try_push(&q, in), SL_OK);
        ck_assert_uint_eq(sl_list_push_n(&q, NULL, 3), 0);
        ck_assert_uint_eq(sl_list_pop_n(&q, NULL, 3), 0);
        ck_assert_uint_eq(sl_list_len(&q), 1);
        ck_assert_int_eq(sl_list_try_pop(&q, out), SL_OK);
        ck_assert(sl_test_seq_is(out, esz, 7));
        free(in);
        free(out);
        sl_list_destroy(&q);
    }
}
END_TEST

/* Every slot-group geometry (channels/list.c): seven to a line (1, 8),
 * three (12, 16) and two (24) to a padded line, one to a group just over a
 * half line (40) and over a line (64, 1000, 4096). */
static const size_t fifo_sizes[] = {1, 8, 12, 16, 24, 40, 64, 1000, 4096};

START_TEST(test_fifo_across_segments)
{
    const size_t esz = fifo_sizes[_i];
    const size_t slots = expected_slots(esz);
    const uint64_t n = sl_test_scaled(100000, esz >= 1000 ? 5000 : 20000);
    sl_list q;
    ck_assert_int_eq(sl_list_init(&q, esz), SL_OK);
    unsigned char *buf = xmalloc(esz), *out = xmalloc(esz + 16);
    for (int round = 0; round < 2; round++) {
        for (uint64_t s = 0; s < n; s++) {
            sl_test_seq_fill(buf, esz, s);
            CHECK(sl_list_try_push(&q, buf) == SL_OK, "esz %zu: push %llu failed", esz, ULL(s));
        }
        ck_assert_uint_eq(sl_list_len(&q), n);
        /* At least the segments the messages need, at most two more. */
        size_t segs = sl_list_segments(&q);
        ck_assert_msg(segs >= (size_t)(n / slots), "esz %zu: %llu messages in %zu segments of %zu",
                      esz, ULL(n), segs, slots);
        for (uint64_t s = 0; s < n; s++) {
            memset(out, 0xEE, esz + 16);
            CHECK(sl_list_try_pop(&q, out) == SL_OK, "esz %zu round %d: pop %llu of %llu: empty",
                  esz, round, ULL(s), ULL(n));
            CHECK(sl_test_seq_is(out, esz, s),
                  "esz %zu round %d: pop %llu got message %llu (low bytes)", esz, round, ULL(s),
                  ULL(sl_test_seq_low(out, esz)));
            CHECK(out[esz] == 0xEE && out[esz + 15] == 0xEE, "esz %zu: pop wrote past the message",
                  esz);
            if ((s & 4095) == 0)
                CHECK(sl_list_len(&q) == n - s - 1, "esz %zu: len %zu after %llu of %llu pops", esz,
                      sl_list_len(&q), ULL(s + 1), ULL(n));
        }
        ck_assert_uint_eq(sl_list_len(&q), 0);
        ck_assert_int_eq(sl_list_try_pop(&q, out), SL_EMPTY);
        ck_assert_int_eq(sl_list_try_pop(&q, out), SL_EMPTY);
        ck_assert_uint_eq(sl_list_len(&q), 0);
    }
    free(buf);
    free(out);
    sl_list_destroy(&q);
}
END_TEST

START_TEST(test_batches)
{
    const size_t sizes[] = {8, 1024, 3};
    const size_t esz = sizes[_i];
    const size_t slots = expected_slots(esz);
    const size_t bsz[] = {1, 7, 31, 32, 33, slots - 1, slots, slots + 1, 3 * slots + 5, 1000};
    sl_list q;
    ck_assert_int_eq(sl_list_init(&q, esz), SL_OK);
    size_t maxb = 3 * slots + 5 > 1000 ? 3 * slots + 5 : 1000;
    unsigned char *in = xmalloc(maxb * esz), *out = xmalloc((maxb + 1) * esz);
    uint64_t next_in = 0, next_out = 0;
    ck_assert_uint_eq(sl_list_push_n(&q, in, 0), 0);
    ck_assert_uint_eq(sl_list_pop_n(&q, out, 0), 0);
    ck_assert_uint_eq(sl_list_pop_n(&q, out, 5), 0); /* empty */
    for (int round = 0; round < 40; round++) {
        size_t k = bsz[(size_t)round % (sizeof bsz / sizeof bsz[0])];
        for (size_t i = 0; i < k; i++)
            sl_test_seq_fill(in + i * esz, esz, next_in + i);
        ck_assert_uint_eq(sl_list_push_n(&q, in, k), k);
        next_in += k;
        ck_assert_uint_eq(sl_list_len(&q), next_in - next_out);
        /* Pop a different batch size, sometimes more than is inside. */
        size_t j = bsz[(size_t)(round * 7 + 3) % (sizeof bsz / sizeof bsz[0])];
        size_t inside = (size_t)(next_in - next_out);
        size_t want = j < inside ? j : inside;
        memset(out, 0xEE, (j + 1) * esz);
        size_t got = sl_list_pop_n(&q, out, j);
        ck_assert_msg(got == want, "esz %zu: pop_n(%zu) with %zu inside returned %zu", esz, j,
                      inside, got);
        for (size_t i = 0; i < got; i++)
            CHECK(sl_test_seq_is(out + i * esz, esz, next_out + i),
                  "esz %zu: pop_n element %zu wrong", esz, i);
        CHECK(out[got * esz] == 0xEE || got == j, "esz %zu: pop_n wrote past its result", esz);
        next_out += got;
        ck_assert_uint_eq(sl_list_len(&q), next_in - next_out);
    }
    /* Drain with single pops. */
    while (next_out < next_in) {
        ck_assert_int_eq(sl_list_try_pop(&q, out), SL_OK);
        CHECK(sl_test_seq_is(out, esz, next_out), "esz %zu: final pop %llu wrong", esz,
              ULL(next_out));
        next_out++;
    }
    ck_assert_uint_eq(sl_list_pop_n(&q, out, 10), 0);
    ck_assert_uint_eq(sl_list_len(&q), 0);
    free(in);
    free(out);
    sl_list_destroy(&q);
}
END_TEST

/* Random push / pop / push_n / pop_n / len against a plain FIFO of numbers. */
static const size_t model_sizes[] = {1, 8, 1024, 3000};

START_TEST(test_model_random)
{
    const size_t esz = model_sizes[_i];
    char name[64];
    snprintf(name, sizeof name, "model esz %zu", esz);
    const uint64_t seed = sl_test_seed("unit_list", name);
    sl_test_rng rng;
    sl_test_rng_seed(&rng, seed);
    const unsigned ops = (unsigned)sl_test_scaled(60000, 8000);
    const size_t maxb = 80;
    sl_list q;
    ck_assert_int_eq(sl_list_init(&q, esz), SL_OK);
    /* The model: a FIFO of sequence numbers, head..tail. */
    uint64_t head = 0, tail = 0;
    unsigned char *in = xmalloc(maxb * esz), *out = xmalloc((maxb + 1) * esz);
    unsigned bias = 60; /* percent of pushes among push/pop choices */
    for (unsigned op = 0; op < ops; op++) {
        if (op % 2500 == 0)
            bias = 20 + (unsigned)(sl_test_rng_next(&rng) % 70);
        unsigned r = (unsigned)(sl_test_rng_next(&rng) % 100);
        unsigned kind = (unsigned)(sl_test_rng_next(&rng) % 10);
        if (r < bias) {
            if (kind < 6) {
                sl_test_seq_fill(in, esz, tail);
                CHECK(sl_list_try_push(&q, in) == SL_OK, "seed %llu op %u: push failed", ULL(seed),
                      op);
                tail++;
            } else {
                size_t k = 1 + (size_t)(sl_test_rng_next(&rng) % maxb);
                for (size_t i = 0; i < k; i++)
                    sl_test_seq_fill(in + i * esz, esz, tail + i);
                size_t got = sl_list_push_n(&q, in, k);
                CHECK(got == k, "seed %llu op %u: push_n(%zu) = %zu", ULL(seed), op, k, got);
                tail += k;
            }
        } else {
            if (kind < 6) {
                sl_status st = sl_list_try_pop(&q, out);
                if (head == tail) {
                    CHECK(st == SL_EMPTY, "seed %llu op %u: pop on empty returned %d", ULL(seed),
                          op, (int)st);
                } else {
                    CHECK(st == SL_OK, "seed %llu op %u: pop with %llu inside returned %d",
                          ULL(seed), op, ULL(tail - head), (int)st);
                    CHECK(sl_test_seq_is(out, esz, head),
                          "seed %llu op %u: popped %llu (low bytes), model says %llu", ULL(seed),
                          op, ULL(sl_test_seq_low(out, esz)), ULL(head));
                    head++;
                }
            } else {
                size_t k = 1 + (size_t)(sl_test_rng_next(&rng) % maxb);
                size_t want = (uint64_t)k < tail - head ? k : (size_t)(tail - head);
                size_t got = sl_list_pop_n(&q, out, k);
                CHECK(got == want, "seed %llu op %u: pop_n(%zu) with %llu inside = %zu", ULL(seed),
                      op, k, ULL(tail - head), got);
                for (size_t i = 0; i < got; i++)
                    CHECK(sl_test_seq_is(out + i * esz, esz, head + i),
                          "seed %llu op %u: pop_n element %zu wrong", ULL(seed), op, i);
                head += got;
            }
        }
        size_t len = sl_list_len(&q);
        CHECK(len == tail - head, "seed %llu op %u: len %zu, model %llu", ULL(seed), op, len,
              ULL(tail - head));
    }
    /* Drain and compare the rest. */
    while (head < tail) {
        CHECK(sl_list_try_pop(&q, out) == SL_OK, "seed %llu: final pop empty", ULL(seed));
        CHECK(sl_test_seq_is(out, esz, head), "seed %llu: final pop %llu wrong", ULL(seed),
              ULL(head));
        head++;
    }
    ck_assert_int_eq(sl_list_try_pop(&q, out), SL_EMPTY);
    ck_assert_uint_eq(sl_list_len(&q), 0);
    free(in);
    free(out);
    sl_list_destroy(&q);
}
END_TEST

/* A burst of 10 million 8-byte messages (scaled, at least 1 million; 1 million
 * under TSan), drained: the segments go back as the pops pass them. */
START_TEST(test_memory_returns_after_drain)
{
    /* TSan: a million (its instrumented atomics make ten cost a minute of CI). */
    const uint64_t n = sl_test_scaled(UL_TSAN ? 1000000 : 10000000, 1000000);
    const size_t slots = expected_slots(8);
    sl_list q;
    ck_assert_int_eq(sl_list_init(&q, 8), SL_OK);
    for (int round = 0; round < 2; round++) {
        for (uint64_t s = 0; s < n; s++)
            CHECK(sl_list_try_push(&q, &s) == SL_OK, "push %llu failed", ULL(s));
        ck_assert_uint_eq(sl_list_len(&q), n);
        size_t peak = sl_list_segments(&q);
        ck_assert_msg(peak >= (size_t)(n / slots),
                      "%llu messages held in %zu segments of %zu slots", ULL(n), peak, slots);
        for (uint64_t s = 0; s < n; s++) {
            uint64_t v = ~s;
            CHECK(sl_list_try_pop(&q, &v) == SL_OK, "pop %llu: empty", ULL(s));
            CHECK(v == s, "pop %llu got %llu", ULL(s), ULL(v));
        }
        uint64_t v;
        ck_assert_int_eq(sl_list_try_pop(&q, &v), SL_EMPTY);
        ck_assert_uint_eq(sl_list_len(&q), 0);
        size_t after = sl_list_segments(&q);
        ck_assert_msg(after <= IDLE_SEGMENTS,
                      "round %d: %zu segments still allocated after draining %llu messages "
                      "(peak %zu)",
                      round, after, ULL(n), peak);
        fprintf(stderr, "[unit_list memory] round %d: peak %zu segments, %zu after the drain\n",
                round, peak, after);
    }
    sl_list_destroy(&q);
    ck_assert_uint_eq(sl_list_segments(&q), 0);
    /* The list struct may be initialised again and used after destroy. */
    ck_assert_int_eq(sl_list_init(&q, 8), SL_OK);
    uint64_t v = 42, w = 0;
    ck_assert_int_eq(sl_list_try_push(&q, &v), SL_OK);
    ck_assert_int_eq(sl_list_try_pop(&q, &w), SL_OK);
    ck_assert_uint_eq(w, 42);
    sl_list_destroy(&q);
}
END_TEST

/* Destroy with messages (and many segments) still inside frees everything
 * (ASan's leak check sees any segment left behind). */
START_TEST(test_destroy_with_messages)
{
    const size_t sizes[] = {8, 1024, 4096};
    for (int k = 0; k < N_OF(sizes); k++) {
        size_t esz = sizes[k];
        sl_list q;
        ck_assert_int_eq(sl_list_init(&q, esz), SL_OK);
        unsigned char *buf = xmalloc(esz);
        for (uint64_t s = 0; s < 5000; s++) {
            sl_test_seq_fill(buf, esz, s);
            ck_assert_int_eq(sl_list_try_push(&q, buf), SL_OK);
        }
        for (uint64_t s = 0; s < 1234; s++)
            ck_assert_int_eq(sl_list_try_pop(&q, buf), SL_OK);
        ck_assert(sl_test_seq_is(buf, esz, 1233));
        sl_list_destroy(&q);
        ck_assert_uint_eq(sl_list_segments(&q), 0);
        free(buf);
    }
}
END_TEST

/* A push that needs a new segment when none can be allocated fails with
 * SL_ENOMEM and consumes nothing; so does the batch form, short at that
 * point; the list goes on in order once memory is back. */
START_TEST(test_enomem_at_boundary)
{
    const size_t esz = 64, slots = expected_slots(esz);
    sl_list q;
    ck_assert_int_eq(sl_list_init(&q, esz), SL_OK);
    unsigned char in[64 * 4], out[64];
    uint64_t s = 0;
    for (; s < slots; s++) {
        sl_test_seq_fill(in, esz, s);
        ck_assert_int_eq(sl_list_try_push(&q, in), SL_OK);
    }
    ck_assert_uint_eq(sl_list_segments(&q), 1); /* fresh: no spare to grow into */
    sl_test_fail_allocs(3);
    for (int k = 0; k < 3; k++) {
        sl_test_seq_fill(in, esz, s);
        ck_assert_int_eq(sl_list_try_push(&q, in), SL_ENOMEM);
        ck_assert_uint_eq(sl_list_len(&q), slots);
    }
    sl_test_fail_allocs(1);
    for (int k = 0; k < 4; k++)
        sl_test_seq_fill(in + k * esz, esz, s + (uint64_t)k);
    ck_assert_uint_eq(sl_list_push_n(&q, in, 4), 0);
    ck_assert_uint_eq(sl_list_len(&q), slots);
    ck_assert_uint_eq(sl_list_segments(&q), 1);
    /* Memory is back: the same four go in, then pop in order. */
    ck_assert_uint_eq(sl_list_push_n(&q, in, 4), 4);
    sl_test_alloc_faults_off();
    s += 4;
    ck_assert_uint_eq(sl_list_len(&q), s);
    for (uint64_t k = 0; k < s; k++) {
        ck_assert_int_eq(sl_list_try_pop(&q, out), SL_OK);
        CHECK(sl_test_seq_is(out, esz, k), "pop %llu got message %llu", ULL(k),
              ULL(sl_test_seq_low(out, esz)));
    }
    ck_assert_int_eq(sl_list_try_pop(&q, out), SL_EMPTY);
    sl_list_destroy(&q);
}
END_TEST

/* A growing push whose allocation fails while another producer links a
 * segment: the failing producer's allocation entry lets the other push
 * (whose allocation succeeds) grow the list, waits for it, then fails. The
 * list did grow, so the failing push must go on into the new segment
 * rather than answer SL_ENOMEM. */
static struct grow_race {
    sl_list *q;
    pthread_t failing;
    atomic_bool failed_once, go, grown;
    sl_status other; /* the other producer's push */
} g_race;

static void *race_alloc(size_t align, size_t size)
{
    if (pthread_equal(pthread_self(), g_race.failing) &&
        !atomic_exchange(&g_race.failed_once, true)) {
        atomic_store(&g_race.go, true);
        while (!atomic_load(&g_race.grown))
            sched_yield();
        return NULL;
    }
    return sl_test_sys_base()->alloc(align, size);
}

static void *race_other_producer(void *arg)
{
    (void)arg;
    uint64_t v = UINT64_C(1) << 40;
    while (!atomic_load(&g_race.go))
        sched_yield();
    g_race.other = sl_list_try_push(g_race.q, &v);
    atomic_store(&g_race.grown, true);
    return NULL;
}

START_TEST(test_enomem_not_when_another_grew)
{
    const size_t slots = expected_slots(8);
    sl_list q;
    ck_assert_int_eq(sl_list_init(&q, 8), SL_OK);
    uint64_t v = 0;
    for (; v < slots; v++)
        ck_assert_int_eq(sl_list_try_push(&q, &v), SL_OK);
    ck_assert_uint_eq(sl_list_segments(&q), 1); /* fresh: no spare to grow into */
    g_race.q = &q;
    g_race.failing = pthread_self();
    atomic_store(&g_race.failed_once, false);
    atomic_store(&g_race.go, false);
    atomic_store(&g_race.grown, false);
    pthread_t other;
    ck_assert_int_eq(pthread_create(&other, NULL, race_other_producer, NULL), 0);
    static const sl_sys_ops race_ops = {.alloc = race_alloc};
    sl_test_sys_install(&race_ops);
    sl_status st = sl_list_try_push(&q, &v);
    sl_test_sys_restore();
    ck_assert_int_eq(pthread_join(other, NULL), 0);
    ck_assert_msg(atomic_load(&g_race.failed_once), "the push did not try to allocate");
    ck_assert_int_eq(g_race.other, SL_OK);
    ck_assert_msg(st == SL_OK,
                  "push answered %d (SL_ENOMEM: %d) although another producer had linked a "
                  "segment while its allocation failed",
                  (int)st, (int)SL_ENOMEM);
    ck_assert_uint_eq(sl_list_len(&q), slots + 2);
    ck_assert_uint_eq(sl_list_segments(&q), 2);
    uint64_t out;
    for (uint64_t k = 0; k < slots; k++) {
        ck_assert_int_eq(sl_list_try_pop(&q, &out), SL_OK);
        ck_assert_uint_eq(out, k);
    }
    /* The other producer's push took the new segment's slot 0. */
    ck_assert_int_eq(sl_list_try_pop(&q, &out), SL_OK);
    ck_assert_uint_eq(out, UINT64_C(1) << 40);
    ck_assert_int_eq(sl_list_try_pop(&q, &out), SL_OK);
    ck_assert_uint_eq(out, slots);
    ck_assert_int_eq(sl_list_try_pop(&q, &out), SL_EMPTY);
    sl_list_destroy(&q);
}
END_TEST

/* Steady state allocates nothing: with every allocation failing, a list
 * whose consumer keeps within a segment of its producer grows through its
 * spare segment, 200 segments over. */
START_TEST(test_steady_state_uses_spare)
{
    const size_t slots = expected_slots(8);
    sl_list q;
    ck_assert_int_eq(sl_list_init(&q, 8), SL_OK);
    uint64_t pushed = 0, popped = 0, v;
    for (; pushed < slots + slots / 2; pushed++) /* over a boundary: makes the spare */
        ck_assert_int_eq(sl_list_try_push(&q, &pushed), SL_OK);
    while (popped < pushed) {
        ck_assert_int_eq(sl_list_try_pop(&q, &v), SL_OK);
        ck_assert_uint_eq(v, popped++);
    }
    ck_assert_uint_eq(sl_list_segments(&q), 2);
    sl_test_fail_allocs(UINT64_MAX);
    const uint64_t window = slots / 3;
    while (pushed < 200 * slots) {
        for (uint64_t k = 0; k < window; k++, pushed++)
            CHECK(sl_list_try_push(&q, &pushed) == SL_OK, "push %llu needed the allocator",
                  ULL(pushed));
        while (popped < pushed) {
            CHECK(sl_list_try_pop(&q, &v) == SL_OK && v == popped, "pop %llu", ULL(popped));
            popped++;
        }
    }
    sl_test_alloc_faults_off();
    ck_assert_uint_le(sl_list_segments(&q), IDLE_SEGMENTS);
    sl_list_destroy(&q);
}
END_TEST

static void *one_push_pop(void *arg)
{
    uint64_t v = 7, w = 0;
    sl_list *q = arg;
    if (sl_list_try_push(q, &v) != SL_OK || sl_list_try_pop(q, &w) != SL_OK || w != v)
        return arg; /* non-NULL: failed */
    return NULL;
}

/* A thread's reclamation record goes back at thread exit: 200 short-lived
 * threads one after another use one more record at most, not 200. */
START_TEST(test_records_reused_after_exit)
{
    sl_list q;
    ck_assert_int_eq(sl_list_init(&q, 8), SL_OK);
    ck_assert_ptr_null(one_push_pop(&q)); /* this thread's record */
    size_t before = sl__epoch_records();
    /* Without a record here (registration failed, the shared counter took
     * over) "at most one more" would hold with no reuse at all. */
    ck_assert_uint_ge(before, 1);
    for (int i = 0; i < 200; i++) {
        pthread_t t;
        void *ret;
        ck_assert_int_eq(pthread_create(&t, NULL, one_push_pop, &q), 0);
        ck_assert_int_eq(pthread_join(t, &ret), 0);
        ck_assert_ptr_null(ret);
    }
    size_t after = sl__epoch_records();
    ck_assert_msg(after <= before + 1, "%zu records after 200 threads came and went (%zu before)",
                  after, before);
    sl_list_destroy(&q);
}
END_TEST

/* A list used at thread exit by another key's destructor, in glibc's last
 * round of destructors (PTHREAD_DESTRUCTOR_ITERATIONS), long after the
 * list's own destructor gave the thread's record back: a record it took
 * then would never be given back (no round follows to run the list's
 * destructor again). The record count must not grow with such threads. */
static pthread_key_t late_key;
static sl_list *late_q;
static atomic_uint late_failures, late_last_rounds;

/* The key's value is its round: set again until the last round, where it
 * uses the list. */
static void late_destructor(void *p)
{
    uintptr_t round = (uintptr_t)p;
    if (round < PTHREAD_DESTRUCTOR_ITERATIONS) {
        if (pthread_setspecific(late_key, (void *)(round + 1)) != 0)
            atomic_fetch_add(&late_failures, 1);
        return;
    }
    atomic_fetch_add(&late_last_rounds, 1);
    if (one_push_pop(late_q) != NULL)
        atomic_fetch_add(&late_failures, 1);
}

static void *use_then_exit_late(void *arg)
{
    if (one_push_pop(arg) != NULL || pthread_setspecific(late_key, (void *)1) != 0)
        return arg;
    return NULL;
}

START_TEST(test_record_used_in_last_destructor_round)
{
    sl_list q;
    ck_assert_int_eq(sl_list_init(&q, 8), SL_OK);
    ck_assert_ptr_null(one_push_pop(&q)); /* this thread's record */
    ck_assert_int_eq(pthread_key_create(&late_key, late_destructor), 0);
    late_q = &q;
    atomic_store(&late_failures, 0);
    atomic_store(&late_last_rounds, 0);
    size_t before = sl__epoch_records();
    ck_assert_uint_ge(before, 1);
    const unsigned threads = 50;
    for (unsigned i = 0; i < threads; i++) {
        pthread_t t;
        void *ret;
        ck_assert_int_eq(pthread_create(&t, NULL, use_then_exit_late, &q), 0);
        ck_assert_int_eq(pthread_join(t, &ret), 0);
        ck_assert_ptr_null(ret);
    }
    ck_assert_uint_eq(atomic_load(&late_last_rounds), threads);
    ck_assert_uint_eq(atomic_load(&late_failures), 0);
    size_t after = sl__epoch_records();
    ck_assert_msg(after <= before + 1,
                  "%zu records after %u threads used the list in their last destructor round "
                  "(%zu before): each kept one",
                  after, threads, before);
    ck_assert_int_eq(pthread_key_delete(late_key), 0);
    sl_list_destroy(&q);
}
END_TEST

static void *registered_then_wait(void *arg)
{
    sl_test_barrier *b = arg;
    sl_list q;
    uint64_t v = 1;
    if (sl_list_init(&q, 8) != SL_OK || sl_list_try_push(&q, &v) != SL_OK)
        abort();
    sl_list_destroy(&q);
    sl_test_barrier_wait(&b[0]); /* registered */
    sl_test_barrier_wait(&b[1]); /* until the fork is done */
    return NULL;
}

typedef struct fork_child {
    sl_list *q;
    sl_test_barrier registered, done;
} fork_child;

static void *use_then_wait(void *arg)
{
    fork_child *c = arg;
    void *failed = one_push_pop(c->q);
    sl_test_barrier_wait(&c->registered);
    sl_test_barrier_wait(&c->done);
    return failed;
}

/* In the child: as many threads alive at once as there are records besides
 * this thread's must all find a free one, which only holds if the records
 * of the threads left behind by fork were freed. */
static int fork_child_main(sl_list *q, size_t records)
{
    fork_child c = {.q = q};
    size_t k = records - 1;
    pthread_t *u = xcalloc(k, sizeof *u);
    sl_test_barrier_init(&c.registered, (unsigned)k + 1);
    sl_test_barrier_init(&c.done, (unsigned)k + 1);
    for (size_t i = 0; i < k; i++)
        if (pthread_create(&u[i], NULL, use_then_wait, &c) != 0)
            return 2;
    sl_test_barrier_wait(&c.registered);
    size_t now = sl__epoch_records();
    sl_test_barrier_wait(&c.done);
    int failed = 0;
    for (size_t i = 0; i < k; i++) {
        void *ret;
        pthread_join(u[i], &ret);
        failed |= ret != NULL;
    }
    return failed ? 3 : now == records ? 0 : 1;
}

/* After fork, the child's records of threads that did not come along are
 * free again. */
START_TEST(test_fork_frees_other_records)
{
    sl_test_barrier b[2];
    sl_test_barrier_init(&b[0], 2);
    sl_test_barrier_init(&b[1], 2);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, registered_then_wait, b), 0);
    sl_test_barrier_wait(&b[0]);
    sl_list q;
    ck_assert_int_eq(sl_list_init(&q, 8), SL_OK);
    ck_assert_ptr_null(one_push_pop(&q)); /* this thread registered too */
    size_t before = sl__epoch_records();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(fork_child_main(&q, before));
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    sl_test_barrier_wait(&b[1]);
    pthread_join(t, NULL);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "child status %d: its threads did not reuse the records of the threads "
                  "left behind (%zu records before the fork; 1: more records, 3: a push/pop "
                  "failed)", status, before);
    sl_list_destroy(&q);
    sl_test_barrier_destroy(&b[0]);
    sl_test_barrier_destroy(&b[1]);
}
END_TEST

/* A fork's child alone runs bursts that cross segments, each drained to
 * SL_EMPTY; it exits 0 if it then holds at most the head segment, the
 * spare and the one segment a fork may cost it (docs/guarantees.md,
 * SL_LIST "After fork"), 1 if it holds more, 3 if an operation failed. */
enum { FORK_BIG = 1024 }; /* 32 slots a segment (list.c, slots_for) */

static int fork_bursts_child(sl_list *q)
{
    static unsigned char m[FORK_BIG];
    for (int b = 0; b < 20; b++) {
        for (int i = 0; i < 320; i++)
            if (sl_list_try_push(q, m) != SL_OK)
                return 3;
        while (sl_list_try_pop(q, m) == SL_OK) {
        }
    }
    return sl_list_segments(q) <= 3 ? 0 : 1;
}

static int fork_and_wait(sl_list *q)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(fork_bursts_child(q));
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

typedef struct churn_arg {
    sl_list *q;
    atomic_bool stop;
} churn_arg;

static void *churn_segments(void *p)
{
    churn_arg *a = p;
    static unsigned char m[FORK_BIG];
    while (!atomic_load_explicit(&a->stop, memory_order_relaxed)) {
        for (int i = 0; i < 40; i++)
            if (sl_list_try_push(a->q, m) != SL_OK)
                abort();
        while (sl_list_try_pop(a->q, m) == SL_OK) {
        }
    }
    return NULL;
}

/* A fork while another thread reclaims: the child must still free. First
 * by hand, the list's reclaim flag raised as a thread of this process
 * raises it (a fork-generation-0 holder, list_segs.c reclaim_begin), so the
 * child surely starts with it raised; then for real, forks taken while a
 * thread crosses segments, which land inside its reclaim (membarrier and
 * all) most of the time on two cores, and sometimes between a segment's
 * unlink and its stamp. Before the fix the child never freed a segment of
 * that list again (502 segments kept, where 2 were due). */
START_TEST(test_fork_mid_reclaim_frees)
{
    sl_list q;
    ck_assert_int_eq(sl_list_init(&q, FORK_BIG), SL_OK);
    ck_assert_uint_eq(atomic_load(&sl__epoch_forks), 0u); /* no fork made this process */
    /* This thread's record: a thread that reclaims has one, and the fork
     * handler comes with the first. */
    static unsigned char m[FORK_BIG];
    ck_assert_int_eq(sl_list_try_push(&q, m), SL_OK);
    ck_assert_int_eq(sl_list_try_pop(&q, m), SL_OK);
    atomic_store(&q.reclaiming, 1u);
    int rc = fork_and_wait(&q);
    atomic_store(&q.reclaiming, 0u);
    ck_assert_msg(rc == 0, "child status %d with the reclaim flag raised at the fork "
                           "(1: segments kept, 3: an operation failed)", rc);

    /* Not under AddressSanitizer: its allocator is not safe to fork while
     * another thread allocates (a child then hangs in malloc), which the
     * churning thread does at every segment. The default and faults builds
     * run this half. */
    if (UL_ASAN) {
        sl_list_destroy(&q);
        return;
    }
    churn_arg a = {.q = &q};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, churn_segments, &a), 0);
    int bad = 0, forks = (int)sl_test_scaled(60, 20);
    for (int k = 0; k < forks && !bad; k++)
        if ((rc = fork_and_wait(&q)) != 0)
            bad = k + 1;
    atomic_store(&a.stop, true);
    pthread_join(t, NULL);
    ck_assert_msg(!bad, "fork %d of %d, taken while a thread crossed segments: child status %d",
                  bad, forks, rc);
    sl_list_destroy(&q);
}
END_TEST

/* ---- the fork handler, registered before any record is handed out ---------
 * pthread_atfork is interposed here (forwarding to glibc's __register_atfork)
 * so that a test can hold the library's registration of its fork handler.
 * Found by review: the handler was registered by the winner of the record
 * key's creation after it published the key, so another thread could take
 * a record and enter an operation, and a third fork, before the handler
 * existed; the child kept the entered thread's announcement and a fork
 * count of 0, and never freed a segment of any list again. Now every
 * record waits for the registration (channels/epoch.c, pthread_once): the
 * late thread cannot enter while it is held, and the child forked then
 * frees as any other. */
#if !UL_TSAN /* TSan's start-up calls pthread_atfork before it can run instrumented code */
extern int __register_atfork(void (*)(void), void (*)(void), void (*)(void), void *);
extern void *__dso_handle;
static atomic_int atfork_gate, atfork_waiting, atfork_go;
static pid_t atfork_gate_pid;

int pthread_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
    if (atomic_load(&atfork_gate) && getpid() == atfork_gate_pid) {
        atomic_store(&atfork_gate, 0);
        atomic_store(&atfork_waiting, 1);
        while (!atomic_load(&atfork_go))
            sched_yield();
    }
    return __register_atfork(prepare, parent, child, __dso_handle);
}

static void *first_record_user(void *p)
{
    uint64_t v = 1, w;
    sl_list *q = p;
    if (sl_list_try_push(q, &v) != SL_OK || sl_list_try_pop(q, &w) != SL_OK)
        return p;
    return NULL;
}

static atomic_int late_entered, late_release;

static void *late_holder(void *p)
{
    (void)p;
    sl_epoch_rec *r = sl__epoch_enter(); /* an operation in progress at the fork */
    atomic_store(&late_entered, 1);
    while (!atomic_load(&late_release))
        sched_yield();
    sl__epoch_exit(r);
    return NULL;
}

static int atfork_race_child(void)
{
    sl_list c;
    if (sl_list_init(&c, FORK_BIG) != SL_OK)
        return 3;
    int rc = fork_bursts_child(&c);
    fprintf(stderr, "[unit_list atfork race] child: forks %u, %zu segments after 20 drained bursts\n",
            atomic_load(&sl__epoch_forks), sl_list_segments(&c));
    return rc;
}

START_TEST(test_fork_before_handler_registered)
{
    if (sl__epoch_records() != 0) {
        fprintf(stderr, "[unit_list atfork race] skipped: records exist already (CK_FORK=no?)\n");
        return;
    }
    sl_list q;
    ck_assert_int_eq(sl_list_init(&q, 8), SL_OK);
    atfork_gate_pid = getpid();
    atomic_store(&atfork_gate, 1);
    pthread_t first, late;
    ck_assert_int_eq(pthread_create(&first, NULL, first_record_user, &q), 0);
    while (!atomic_load(&atfork_waiting))
        sched_yield(); /* the key is published, the handler not registered yet */
    ck_assert_int_eq(pthread_create(&late, NULL, late_holder, NULL), 0);
    uint64_t t0 = sl_test_now_ns();
    while (!atomic_load(&late_entered) && sl_test_now_ns() - t0 < 300000000ull)
        sched_yield(); /* fixed: it waits for the registration instead */
    int entered = atomic_load(&late_entered);
    pid_t pid = fork();
    if (pid == 0)
        _exit(atfork_race_child());
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    atomic_store(&atfork_go, 1);
    atomic_store(&late_release, 1);
    void *ret;
    pthread_join(first, &ret);
    pthread_join(late, NULL);
    ck_assert_ptr_null(ret);
    sl_list_destroy(&q);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "child status %d (1: segments kept): forked after the first record's key was "
                  "published but before the fork handler was registered, with a thread "
                  "%s an operation", status, entered ? "inside" : "not yet inside");
}
END_TEST
#endif

typedef struct idle_arg {
    sl_list *q;
    uint64_t n;
    sl_test_barrier *pushed, *checked;
} idle_arg;

static void *burst_then_idle(void *p)
{
    idle_arg *a = p;
    for (uint64_t s = 0; s < a->n; s++)
        if (sl_list_try_push(a->q, &s) != SL_OK)
            abort();
    sl_test_barrier_wait(a->pushed);
    sl_test_barrier_wait(a->checked); /* alive, registered, outside any call */
    return NULL;
}

/* A thread that used the list and now idles (alive) holds no memory back. */
/* A thread inside an operation (here: an epoch section held open, as a
 * preempted pop would) keeps every segment retired meanwhile; the pop that
 * then finds the list empty gives them back. Drained exactly at a segment's
 * end, that empty pop finds the head used up with no next segment, a path
 * of its own which freed nothing: the soak found 20-121 segments kept after
 * a concurrent drain of 8 producers and 2 consumers (unit_list threads). */
typedef struct held_epoch {
    sl_test_barrier *entered, *release;
} held_epoch;

static void *hold_epoch(void *p)
{
    held_epoch *h = p;
    sl_epoch_rec *r = sl__epoch_enter();
    sl_test_barrier_wait(h->entered);
    sl_test_barrier_wait(h->release);
    sl__epoch_exit(r);
    return NULL;
}

START_TEST(test_drained_at_segment_end_gives_back)
{
    const size_t slots = expected_slots(8);
    /* Ends on a segment boundary (loop 0), or half-way into one (loop 1). */
    const uint64_t n = (uint64_t)slots * 6 + (_i ? slots / 2 : 0);
    sl_list q;
    ck_assert_int_eq(sl_list_init(&q, 8), SL_OK);
    sl_test_barrier entered, release;
    sl_test_barrier_init(&entered, 2);
    sl_test_barrier_init(&release, 2);
    held_epoch h = {&entered, &release};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, hold_epoch, &h), 0);
    sl_test_barrier_wait(&entered);
    for (uint64_t s = 0; s < n; s++)
        ck_assert_int_eq(sl_list_try_push(&q, &s), SL_OK);
    uint64_t v;
    for (uint64_t s = 0; s < n; s++) {
        ck_assert_int_eq(sl_list_try_pop(&q, &v), SL_OK);
        ck_assert_uint_eq(v, s);
    }
    size_t held = sl_list_segments(&q);
    ck_assert_uint_ge(held, 6); /* retired while the other thread was inside */
    sl_test_barrier_wait(&release);
    pthread_join(t, NULL);
    ck_assert_int_eq(sl_list_try_pop(&q, &v), SL_EMPTY);
    size_t after = sl_list_segments(&q);
    ck_assert_msg(after <= IDLE_SEGMENTS,
                  "%zu of %zu segments kept after an empty pop (%llu messages, %s)", after,
                  held, ULL(n), n % slots ? "mid-segment" : "drained at a segment's end");
    sl_test_barrier_destroy(&entered);
    sl_test_barrier_destroy(&release);
    sl_list_destroy(&q);
}
END_TEST

/* A long batch holds back only what was unlinked during its current
 * message, not everything any list unlinked since it began. The batch's
 * growths stop it (its allocation hook) while another thread works on a
 * second list: at the first, a burst through that list, whose segments the
 * batch, inside, keeps; at the second, a segment's worth of messages later,
 * an empty pop there, which must give them back. Announced only at its
 * entry, the batch kept them all (a push_n of 20 million messages kept 15
 * thousand segments of a list that never held more than one message). */
static struct {
    pthread_t batcher;
    sl_list *other;
    atomic_uint stops, asked, done;
    size_t kept; /* the other list's segments after the empty pop */
} g_batch;

static void *batch_alloc(size_t align, size_t size)
{
    if (pthread_equal(pthread_self(), g_batch.batcher) && atomic_load(&g_batch.stops) < 2) {
        unsigned k = atomic_fetch_add(&g_batch.stops, 1) + 1;
        atomic_store(&g_batch.asked, k);
        while (atomic_load(&g_batch.done) != k)
            sched_yield();
    }
    return sl_test_sys_base()->alloc(align, size);
}

static void *other_list_worker(void *p)
{
    (void)p;
    const uint64_t n = 6 * (uint64_t)expected_slots(8);
    uint64_t v;
    while (atomic_load(&g_batch.asked) != 1)
        sched_yield();
    for (uint64_t s = 0; s < n; s++)
        if (sl_list_try_push(g_batch.other, &s) != SL_OK)
            abort();
    for (uint64_t s = 0; s < n; s++)
        if (sl_list_try_pop(g_batch.other, &v) != SL_OK || v != s)
            abort();
    atomic_store(&g_batch.done, 1);
    while (atomic_load(&g_batch.asked) != 2)
        sched_yield();
    if (sl_list_try_pop(g_batch.other, &v) != SL_EMPTY)
        abort();
    g_batch.kept = sl_list_segments(g_batch.other);
    atomic_store(&g_batch.done, 2);
    return NULL;
}

START_TEST(test_batch_renews_its_epoch)
{
    const size_t slots = expected_slots(8);
    const size_t n = 3 * slots; /* grows twice, at messages slots and 2 * slots */
    sl_list q, other;
    ck_assert_int_eq(sl_list_init(&q, 8), SL_OK);
    ck_assert_int_eq(sl_list_init(&other, 8), SL_OK);
    uint64_t *batch = xcalloc(n, sizeof *batch);
    for (size_t i = 0; i < n; i++)
        batch[i] = i;
    /* This thread's record first: its allocation must not be a stop. */
    ck_assert_uint_eq(sl_list_len(&q), 0);
    g_batch.batcher = pthread_self();
    g_batch.other = &other;
    atomic_store(&g_batch.stops, 0);
    atomic_store(&g_batch.asked, 0);
    atomic_store(&g_batch.done, 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, other_list_worker, NULL), 0);
    static const sl_sys_ops batch_ops = {.alloc = batch_alloc};
    sl_test_sys_install(&batch_ops);
    size_t pushed = sl_list_push_n(&q, batch, n);
    sl_test_sys_restore();
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_uint_eq(pushed, n);
    ck_assert_uint_eq(atomic_load(&g_batch.stops), 2);
    ck_assert_msg(g_batch.kept <= IDLE_SEGMENTS,
                  "%zu segments of another list kept after its empty pop: a batch that "
                  "began before they were retired still holds them a segment later",
                  g_batch.kept);
    uint64_t v;
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(sl_list_try_pop(&q, &v), SL_OK);
        ck_assert_uint_eq(v, i);
    }
    ck_assert_int_eq(sl_list_try_pop(&q, &v), SL_EMPTY);
    free(batch);
    sl_list_destroy(&q);
    sl_list_destroy(&other);
}
END_TEST

START_TEST(test_idle_thread_holds_nothing)
{
    sl_list q;
    sl_test_barrier pushed, checked;
    ck_assert_int_eq(sl_list_init(&q, 8), SL_OK);
    sl_test_barrier_init(&pushed, 2);
    sl_test_barrier_init(&checked, 2);
    idle_arg a = {&q, 20 * expected_slots(8), &pushed, &checked};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, burst_then_idle, &a), 0);
    sl_test_barrier_wait(&pushed);
    size_t peak = sl_list_segments(&q);
    ck_assert_uint_ge(peak, 20);
    uint64_t v;
    for (uint64_t s = 0; s < a.n; s++) {
        ck_assert_int_eq(sl_list_try_pop(&q, &v), SL_OK);
        ck_assert_uint_eq(v, s);
    }
    ck_assert_int_eq(sl_list_try_pop(&q, &v), SL_EMPTY);
    size_t after = sl_list_segments(&q);
    sl_test_barrier_wait(&checked);
    pthread_join(t, NULL);
    ck_assert_msg(after <= IDLE_SEGMENTS, "%zu of %zu segments kept with the producer idle",
                  after, peak);
    sl_test_barrier_destroy(&pushed);
    sl_test_barrier_destroy(&checked);
    sl_list_destroy(&q);
}
END_TEST

/* ---- many threads crossing segment boundaries at once -------------------- */

#define MT_ESZ 1024 /* 32 slots per segment */

typedef struct mt_run {
    sl_list q;
    unsigned np, nc;
    uint64_t per;         /* messages per producer */
    uint64_t seed;
    sl_test_barrier start;
    atomic_uint producers_done;
    atomic_uint_fast64_t received;
    bitmap seen;          /* np * per */
    atomic_int failed;
    char msg[512];
} mt_run;

typedef struct mt_worker {
    mt_run *r;
    unsigned idx;
    pthread_t thr;
} mt_worker;

static void mt_fail(mt_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mt_fail(mt_run *r, const char *fmt, ...)
{
    if (atomic_exchange(&r->failed, 1) != 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[unit_list mt] FAIL (seed %llu): %s\n", ULL(r->seed), r->msg);
}

static void *mt_producer(void *arg)
{
    mt_worker *w = arg;
    mt_run *r = w->r;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * 0x9E3779B97F4A7C15ull);
    unsigned char *buf = malloc(MT_ESZ * 8);
    sl_test_barrier_wait(&r->start);
    for (uint64_t s = 0; s < r->per && !atomic_load_explicit(&r->failed, memory_order_relaxed);) {
        if (sl_test_rng_next(&rng) % 4 == 0) {
            size_t k = msg_batch(buf, MT_ESZ, w->idx, s, r->per - s, 8, &rng);
            size_t got = sl_list_push_n(&r->q, buf, k);
            if (got != k)
                mt_fail(r, "producer %u: push_n(%zu) = %zu", w->idx, k, got);
            s += k;
        } else {
            msg_make(buf, MT_ESZ, w->idx, s);
            sl_status st = sl_list_try_push(&r->q, buf);
            if (st != SL_OK)
                mt_fail(r, "producer %u: push seq %llu returned %d", w->idx, ULL(s), (int)st);
            s++;
        }
        sl_test_maybe_stall(&rng, 2048);
    }
    free(buf);
    atomic_fetch_add(&r->producers_done, 1);
    return NULL;
}

static bool mt_take(mt_run *r, const unsigned char *b, unsigned c, uint64_t *last)
{
    uint32_t p;
    uint64_t s;
    char why[160];
    if (!msg_parse(b, MT_ESZ, r->np, r->per, &p, &s, why, sizeof why)) {
        mt_fail(r, "consumer %u: %s", c, why);
        return false;
    }
    if (last[p] != NONE && s <= last[p])
        mt_fail(r, "consumer %u: producer %u seq %llu after seq %llu (FIFO per producer)", c, p,
                ULL(s), ULL(last[p]));
    last[p] = s;
    if (bm_set(&r->seen, (uint64_t)p * r->per + s))
        mt_fail(r, "consumer %u: producer %u seq %llu received twice", c, p, ULL(s));
    return true;
}

static void *mt_consumer(void *arg)
{
    mt_worker *w = arg;
    mt_run *r = w->r;
    unsigned c = w->idx;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 101) * 0x9E3779B97F4A7C15ull);
    uint64_t *last = xnones(r->np);
    unsigned char *buf = malloc(MT_ESZ * 8);
    uint64_t got = 0;
    sl_test_barrier_wait(&r->start);
    while (!atomic_load_explicit(&r->failed, memory_order_relaxed)) {
        size_t k;
        if (sl_test_rng_next(&rng) % 4 == 0) {
            k = sl_list_pop_n(&r->q, buf, 1 + (size_t)(sl_test_rng_next(&rng) % 8));
        } else {
            k = sl_list_try_pop(&r->q, buf) == SL_OK ? 1 : 0;
        }
        for (size_t i = 0; i < k; i++)
            if (mt_take(r, buf + i * MT_ESZ, c, last))
                got++;
        if (k == 0) {
            /* Every push has returned and the list still looks empty: done. */
            if (atomic_load(&r->producers_done) == r->np) {
                if (sl_list_try_pop(&r->q, buf) == SL_OK) {
                    if (mt_take(r, buf, c, last))
                        got++;
                    continue;
                }
                break;
            }
            sched_yield();
        }
        sl_test_maybe_stall(&rng, 2048);
    }
    atomic_fetch_add(&r->received, got);
    free(last);
    free(buf);
    return NULL;
}

START_TEST(test_mt_segment_boundaries)
{
    mt_run *r = xaligned(sizeof *r);
    r->seed = sl_test_seed("unit_list", "mt 8x8 esz 1024");
    r->np = sl_test_env_uint("SL_STRESS_PRODUCERS", 8);
    r->nc = sl_test_env_uint("SL_STRESS_CONSUMERS", 8);
    r->per = sl_test_scaled(300000, 20000) / r->np;
    ck_assert_int_eq(sl_list_init(&r->q, MT_ESZ), SL_OK);
    ck_assert_uint_eq(r->q.seg_slots, 32); /* the premise: 32-slot segments */
    bm_init(&r->seen, (uint64_t)r->np * r->per);
    sl_test_barrier_init(&r->start, r->np + r->nc);
    mt_worker *w = xcalloc(r->np + r->nc, sizeof *w);
    uint64_t t0 = sl_test_now_ns();
    for (unsigned i = 0; i < r->np + r->nc; i++) {
        w[i].r = r;
        w[i].idx = i < r->np ? i : i - r->np;
        ck_assert_int_eq(pthread_create(&w[i].thr, NULL, i < r->np ? mt_producer : mt_consumer,
                                        &w[i]),
                         0);
    }
    for (unsigned i = 0; i < r->np + r->nc; i++)
        pthread_join(w[i].thr, NULL);
    uint64_t t1 = sl_test_now_ns();
    ck_assert_msg(!atomic_load(&r->failed), "%s (seed %llu; SL_TEST_SEED replays the stalls)",
                  r->msg, ULL(r->seed));
    uint64_t want = (uint64_t)r->np * r->per, got = atomic_load(&r->received);
    if (got != want) {
        for (uint64_t b = 0; b < want; b++)
            CHECK(bm_get(&r->seen, b),
                  "lost: producer %llu seq %llu never received (%llu of %llu; seed %llu)",
                  ULL(b / r->per), ULL(b % r->per), ULL(got), ULL(want), ULL(r->seed));
    }
    ck_assert_msg(got == want, "received %llu of %llu (seed %llu)", ULL(got), ULL(want),
                  ULL(r->seed));
    sl_test_account("messages exactly once", want);
    ck_assert_uint_eq(sl_list_len(&r->q), 0);
    static unsigned char probe[MT_ESZ];
    /* Drained by many consumers at once: this empty pop, with every other
     * thread gone, frees whatever their pops could not. */
    ck_assert_int_eq(sl_list_try_pop(&r->q, probe), SL_EMPTY);
    ck_assert_msg(sl_list_segments(&r->q) <= IDLE_SEGMENTS,
                  "%zu segments allocated after a concurrent drain and an empty pop",
                  sl_list_segments(&r->q));
    fprintf(stderr, "[unit_list mt] %u/%u, %llu messages of %d B over %llu segments in %.3f s\n",
            r->np, r->nc, ULL(want), MT_ESZ, ULL(want / 32), (double)(t1 - t0) / 1e9);
    sl_list_destroy(&r->q);
    sl_test_barrier_destroy(&r->start);
    free(w);
    bm_free(&r->seen);
    free(r);
}
END_TEST

/* len is exact whenever no operation is in progress, also after concurrent
 * pushes and pops have raced across segment boundaries. */
typedef struct qlen_arg {
    sl_list *q;
    unsigned idx;
    uint64_t count;
    sl_test_barrier *start;
    uint64_t popped;
} qlen_arg;

static void *qlen_push(void *p)
{
    qlen_arg *a = p;
    unsigned char buf[40];
    sl_test_barrier_wait(a->start);
    for (uint64_t s = 0; s < a->count; s++) {
        sl_test_seq_fill(buf, sizeof buf, ((uint64_t)a->idx << 40) | s);
        if (sl_list_try_push(a->q, buf) != SL_OK)
            return (void *)1;
    }
    return NULL;
}

static void *qlen_pop(void *p)
{
    qlen_arg *a = p;
    unsigned char buf[40 * 4];
    sl_test_barrier_wait(a->start);
    while (a->popped < a->count) {
        uint64_t want = a->count - a->popped;
        size_t k = (a->popped & 1) ? sl_list_pop_n(a->q, buf, want < 4 ? (size_t)want : 4)
                                   : (sl_list_try_pop(a->q, buf) == SL_OK);
        a->popped += k;
        if (k == 0)
            sched_yield();
    }
    return NULL;
}

START_TEST(test_len_exact_when_quiescent)
{
    enum { T = 8 };
    sl_list q;
    ck_assert_int_eq(sl_list_init(&q, 40), SL_OK); /* 819 slots per segment */
    const uint64_t per = sl_test_scaled(20000, 3000);
    sl_test_barrier start;
    pthread_t th[T];
    qlen_arg a[T];
    uint64_t inside = 0;
    for (int round = 0; round < 6; round++) {
        bool push = round % 3 != 2;
        uint64_t count = push ? per : (inside / T) - (uint64_t)round;
        sl_test_barrier_init(&start, T);
        for (unsigned i = 0; i < T; i++) {
            a[i] = (qlen_arg){&q, i, count, &start, 0};
            ck_assert_int_eq(pthread_create(&th[i], NULL, push ? qlen_push : qlen_pop, &a[i]), 0);
        }
        for (unsigned i = 0; i < T; i++) {
            void *rv = NULL;
            pthread_join(th[i], &rv);
            ck_assert_ptr_null(rv);
        }
        sl_test_barrier_destroy(&start);
        inside = push ? inside + T * count : inside - T * count;
        ck_assert_msg(sl_list_len(&q) == inside, "round %d (%s): len %zu, %llu inside", round,
                      push ? "pushes" : "pops", sl_list_len(&q), ULL(inside));
    }
    /* What is left comes out with every producer's messages in order. */
    uint64_t next[T], got = 0;
    for (unsigned i = 0; i < T; i++)
        next[i] = 0;
    unsigned char buf[40];
    bool first[T];
    for (unsigned i = 0; i < T; i++)
        first[i] = true;
    while (sl_list_try_pop(&q, buf) == SL_OK) {
        uint64_t v = sl_test_seq_low(buf, 8);
        unsigned p = (unsigned)(v >> 40);
        uint64_t s = v & ((1ull << 40) - 1);
        CHECK(p < T && sl_test_seq_is(buf, 40, v), "corrupt message %llx", ULL(v));
        CHECK(first[p] || s > next[p], "producer %u: seq %llu after %llu", p, ULL(s), ULL(next[p]));
        first[p] = false;
        next[p] = s;
        got++;
    }
    ck_assert_uint_eq(got, inside);
    ck_assert_uint_eq(sl_list_len(&q), 0);
    sl_list_destroy(&q);
}
END_TEST

/* =========================================================================
 * The SL_LIST channel
 * ========================================================================= */

typedef struct drop_rec {
    size_t esz;
    uint64_t n;
    uint64_t next;  /* the sequence number expected next */
    uint64_t bad;   /* drops out of order or corrupted */
    uint64_t first_bad_at, first_bad_low;
} drop_rec;

static void rec_drop(void *elem, void *ctx)
{
    drop_rec *d = ctx;
    if (!sl_test_seq_is(elem, d->esz, d->next) && d->bad++ == 0) {
        d->first_bad_at = d->next;
        d->first_bad_low = sl_test_seq_low(elem, d->esz);
    }
    d->n++;
    d->next++;
}

static sl_chan *mk_list(size_t esz, size_t cap, sl_drop_fn drop, void *ctx)
{
    return sl_test_chan(SL_LIST, esz, cap, drop, ctx);
}

START_TEST(test_chan_new)
{
    int sentinel;
    sl_chan *const mark = (sl_chan *)(void *)&sentinel;
    sl_chan *ch = mark;
    const size_t bad_sizes[] = {0, SL_ELEM_MAX + 1, SIZE_MAX};
    for (int i = 0; i < N_OF(bad_sizes); i++) {
        sl_chan_opts o = {.flavor = SL_LIST, .elem_size = bad_sizes[i], .capacity = 4};
        ck_assert_msg(sl_chan_new(&ch, &o) == SL_EINVAL, "SL_LIST elem_size %zu accepted",
                      bad_sizes[i]);
        ck_assert_ptr_eq(ch, mark);
    }
    /* The capacity is ignored: 0, 1 or huge all make an unbounded channel. */
    const size_t caps[] = {0, 1, 5, SIZE_MAX};
    for (int i = 0; i < N_OF(caps); i++) {
        ch = mk_list(8, caps[i], NULL, NULL);
        ck_assert_uint_eq(sl_chan_cap(ch), SIZE_MAX);
        ck_assert_int_eq(sl_chan_flavor(ch), SL_LIST);
        ck_assert_uint_eq(sl_chan_elem_size(ch), 8);
        ck_assert_uint_eq(sl_chan_len(ch), 0);
        ck_assert(!sl_chan_is_closed(ch));
        for (uint64_t v = 0; v < 100; v++)
            ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
        ck_assert_uint_eq(sl_chan_len(ch), 100);
        ck_assert_uint_eq(sl_chan_cap(ch), SIZE_MAX);
        sl_chan_free(ch);
    }
}
END_TEST

/* No send form ever returns SL_FULL or waits: a long run of sends with no
 * receiver finishes (a wait would trip the Check time-out). */
START_TEST(test_chan_never_full)
{
    const uint64_t n = sl_test_scaled(400000, 50000);
    sl_chan *ch = mk_list(8, 1, NULL, NULL);
    uint64_t t0 = sl_test_now_ns();
    uint64_t s = 0;
    uint64_t batch[100];
    while (s < n) {
        sl_status st;
        switch (s % 5) {
        case 0: st = sl_chan_send(ch, &s); break;
        case 1: st = sl_chan_try_send(ch, &s); break;
        case 2: st = sl_chan_send_for(ch, &s, 0); break;
        case 3: st = sl_chan_send_for(ch, &s, SL_FOREVER); break;
        default: {
            void *p = (void *)(uintptr_t)s;
            st = sl_chan_send_ptr(ch, &p);
            CHECK(st != SL_OK || p == NULL, "send_ptr left the pointer set");
        }
        }
        CHECK(st == SL_OK, "send %llu (form %d) returned %s", ULL(s), (int)(s % 5),
              sl_status_str(st));
        s++;
        if (s % 1000 == 0) {
            for (int i = 0; i < 100; i++)
                batch[i] = s + (uint64_t)i;
            size_t k = sl_chan_try_send_n(ch, batch, 100);
            CHECK(k == 100, "try_send_n(100) sent %zu", k);
            s += 100;
        }
    }
    uint64_t t1 = sl_test_now_ns();
    ck_assert_uint_eq(sl_chan_len(ch), s);
    ck_assert_uint_eq(sl_chan_cap(ch), SIZE_MAX);
    for (uint64_t i = 0; i < s; i++) {
        uint64_t v = ~i;
        sl_status st = (i & 1) ? sl_chan_try_recv(ch, &v) : sl_chan_recv(ch, &v);
        CHECK(st == SL_OK && v == i, "recv %llu: status %d value %llu", ULL(i), (int)st, ULL(v));
    }
    uint64_t v;
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_EMPTY);
    ck_assert_int_eq(sl_chan_recv_for(ch, &v, 1 * MS), SL_TIMEDOUT);
    ck_assert_uint_eq(sl_chan_len(ch), 0);
    fprintf(stderr, "[unit_list never_full] %llu sends with no receiver in %.3f s\n", ULL(s),
            (double)(t1 - t0) / 1e9);
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_chan_batches_and_len)
{
    sl_chan *ch = mk_list(1024, 0, NULL, NULL);
    const size_t esz = 1024;
    unsigned char *in = xmalloc(200 * esz), *out = xmalloc(200 * esz);
    uint64_t next_in = 0, next_out = 0;
    for (int round = 0; round < 30; round++) {
        size_t k = 1 + (size_t)(round * 37 % 150);
        for (size_t i = 0; i < k; i++)
            sl_test_seq_fill(in + i * esz, esz, next_in + i);
        ck_assert_uint_eq(sl_chan_try_send_n(ch, in, k), k);
        next_in += k;
        ck_assert_uint_eq(sl_chan_len(ch), next_in - next_out);
        size_t j = 1 + (size_t)(round * 53 % 120);
        size_t inside = (size_t)(next_in - next_out), want = j < inside ? j : inside;
        ck_assert_uint_eq(sl_chan_try_recv_n(ch, out, j), want);
        for (size_t i = 0; i < want; i++)
            CHECK(sl_test_seq_is(out + i * esz, esz, next_out + i), "recv_n element %zu wrong", i);
        next_out += want;
        ck_assert_uint_eq(sl_chan_len(ch), next_in - next_out);
    }
    while (next_out < next_in) {
        size_t inside = (size_t)(next_in - next_out), want = inside < 200 ? inside : 200;
        ck_assert_uint_eq(sl_chan_try_recv_n(ch, out, 200), want);
        for (size_t i = 0; i < want; i++)
            CHECK(sl_test_seq_is(out + i * esz, esz, next_out + i),
                  "final recv_n element %zu wrong", i);
        next_out += want;
    }
    ck_assert_uint_eq(sl_chan_len(ch), 0);
    ck_assert_uint_eq(sl_chan_try_recv_n(ch, out, 5), 0);
    free(in);
    free(out);
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_chan_recv_blocks_until_send)
{
    sl_chan *ch = mk_list(8, 0, NULL, NULL);
    sl_test_recv_thread t;
    atomic_init(&t.done, 0);
    sl_test_recv_start(&t, ch);
    uint64_t v = 4242;
    ck_assert_int_eq(sl_chan_send(ch, &v), SL_OK);
    pthread_join(t.thr, NULL);
    ck_assert_int_eq(t.st, SL_OK);
    ck_assert_uint_eq(t.out, 4242);

    /* Close wakes a blocked receiver with SL_CLOSED. */
    sl_test_recv_start(&t, ch);
    sl_chan_close(ch);
    pthread_join(t.thr, NULL);
    ck_assert_int_eq(t.st, SL_CLOSED);
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_chan_close)
{
    static drop_rec d;
    d = (drop_rec){.esz = 8, .next = 60};
    sl_chan *ch = mk_list(8, 0, rec_drop, &d);
    for (uint64_t v = 0; v < 100; v++)
        ck_assert_int_eq(sl_chan_send(ch, &v), SL_OK);
    sl_chan_close(ch);
    sl_chan_close(ch); /* idempotent */
    ck_assert(sl_chan_is_closed(ch));
    uint64_t x = 999;
    ck_assert_int_eq(sl_chan_send(ch, &x), SL_CLOSED);
    ck_assert_int_eq(sl_chan_try_send(ch, &x), SL_CLOSED);
    ck_assert_int_eq(sl_chan_send_for(ch, &x, 10 * MS), SL_CLOSED);
    ck_assert_uint_eq(sl_chan_try_send_n(ch, &x, 1), 0);
    ck_assert_uint_eq(sl_chan_len(ch), 100);
    ck_assert_uint_eq(d.n, 0); /* close drops nothing */
    for (uint64_t v = 0; v < 60; v++) {
        uint64_t o = ~v;
        ck_assert_int_eq(sl_chan_recv(ch, &o), SL_OK);
        ck_assert_uint_eq(o, v);
    }
    sl_chan_free(ch); /* drops 60..99 */
    ck_assert_uint_eq(d.n, 40);
    ck_assert_msg(d.bad == 0, "drop: expected %llu, got %llu", ULL(d.first_bad_at),
                  ULL(d.first_bad_low));

    ch = mk_list(8, 0, NULL, NULL);
    uint64_t v = 1;
    ck_assert_int_eq(sl_chan_send(ch, &v), SL_OK);
    sl_chan_close(ch);
    ck_assert_int_eq(sl_chan_recv(ch, &v), SL_OK);
    ck_assert_int_eq(sl_chan_recv(ch, &v), SL_CLOSED);
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_CLOSED);
    ck_assert_int_eq(sl_chan_recv_for(ch, &v, 10 * MS), SL_CLOSED);
    sl_chan_free(ch);
}
END_TEST

/* The drop function gets exactly the messages left at sl_chan_free, once
 * each, oldest first, across segment boundaries. */
static const size_t drop_sizes[] = {8, 100, 1024, 4096};

START_TEST(test_chan_drop_at_free)
{
    const size_t esz = drop_sizes[_i];
    const size_t slots = expected_slots(esz);
    static drop_rec d;
    unsigned char *buf = xmalloc(esz);
    /* (sent, received before free) — head in the first segment, mid-way, on a boundary */
    const uint64_t cases[][2] = {
        {10 * slots + 7, 0},         {10 * slots + 7, 3 * slots + 5}, {10 * slots, 2 * slots},
        {5 * slots + 1, 5 * slots},  {4 * slots, 4 * slots},          {1, 0},
        {0, 0},                      {3 * slots + 2, slots - 1},
    };
    for (int c = 0; c < N_OF(cases); c++) {
        uint64_t sent = cases[c][0], got = cases[c][1];
        d = (drop_rec){.esz = esz, .next = got};
        sl_chan *ch = mk_list(esz, 0, rec_drop, &d);
        for (uint64_t s = 0; s < sent; s++) {
            sl_test_seq_fill(buf, esz, s);
            ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_OK);
        }
        for (uint64_t s = 0; s < got; s++) {
            ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_OK);
            CHECK(sl_test_seq_is(buf, esz, s), "esz %zu: recv %llu wrong", esz, ULL(s));
        }
        if (c % 2)
            sl_chan_close(ch);
        ck_assert_uint_eq(sl_chan_len(ch), sent - got);
        sl_chan_free(ch);
        ck_assert_msg(d.n == sent - got, "esz %zu, %llu sent, %llu received: %llu dropped", esz,
                      ULL(sent), ULL(got), ULL(d.n));
        ck_assert_msg(d.bad == 0,
                      "esz %zu, %llu sent, %llu received: %llu drops out of order; first: expected "
                      "%llu, got %llu (low bytes)",
                      esz, ULL(sent), ULL(got), ULL(d.bad), ULL(d.first_bad_at),
                      ULL(d.first_bad_low));
    }
    free(buf);
}
END_TEST

static atomic_int g_freed;
static int sentinel_for_ptr_test;

static void free_drop(void *elem, void *ctx)
{
    (void)ctx;
    void *p;
    memcpy(&p, elem, sizeof p); /* elem may be unaligned */
    free(p);
    atomic_fetch_add(&g_freed, 1);
}

START_TEST(test_chan_ptr_and_evict)
{
    atomic_store(&g_freed, 0);
    sl_chan *ch = mk_list(sizeof(void *), 0, free_drop, NULL);
    for (int i = 0; i < 3000; i++) {
        void *p = malloc(16);
        ck_assert_ptr_nonnull(p);
        ck_assert_int_eq(sl_chan_send_ptr(ch, &p), SL_OK);
        ck_assert_ptr_null(p);
    }
    for (int i = 0; i < 1000; i++) {
        void *p = NULL;
        ck_assert_int_eq(sl_chan_recv(ch, &p), SL_OK);
        ck_assert_ptr_nonnull(p);
        free(p);
    }
    /* send_evict is SL_RING's alone: refused here, nothing consumed. */
    void *p = malloc(16), *ev = NULL;
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(sl_chan_send_evict(ch, &p, &ev), SL_EINVAL);
    ck_assert_ptr_null(ev);
    ck_assert_uint_eq(sl_chan_len(ch), 2000);
    free(p);
    sl_chan_free(ch);
    ck_assert_int_eq(atomic_load(&g_freed), 2000);

    /* send_ptr on a list of another message size is SL_EINVAL. */
    ch = mk_list(sizeof(void *) + 1, 0, NULL, NULL);
    p = &sentinel_for_ptr_test;
    ck_assert_int_eq(sl_chan_send_ptr(ch, &p), SL_EINVAL);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(sl_chan_len(ch), 0);
    sl_chan_free(ch);
}
END_TEST


/* Bad input never crashes (SPEC §2): NULL arguments are SL_EINVAL. */
START_TEST(test_raw_list_null_args)
{
    sl_list q;
    uint64_t v = 7, out = 0;
    ck_assert_int_eq(sl_list_init(&q, sizeof v), SL_OK);
    ck_assert_int_eq(sl_list_try_push(NULL, &v), SL_EINVAL);
    ck_assert_int_eq(sl_list_try_push(&q, NULL), SL_EINVAL);
    ck_assert_int_eq(sl_list_try_pop(NULL, &out), SL_EINVAL);
    ck_assert_int_eq(sl_list_try_push(&q, &v), SL_OK);
    ck_assert_int_eq(sl_list_try_pop(&q, NULL), SL_EINVAL);
    ck_assert_int_eq(sl_list_try_pop(&q, &out), SL_OK);
    ck_assert_uint_eq(out, 7);
    sl_list_destroy(&q);
}
END_TEST

static Suite *list_suite(void)
{
    Suite *s = suite_create("list");

    TCase *tc = tcase_create("raw");
    tcase_add_test(tc, test_raw_list_null_args);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_init_bad_input);
    tcase_add_loop_test(tc, test_fifo_across_segments, 0, N_OF(fifo_sizes));
    tcase_add_loop_test(tc, test_batches, 0, 3);
    tcase_add_loop_test(tc, test_model_random, 0, N_OF(model_sizes));
    tcase_add_test(tc, test_destroy_with_messages);
    suite_add_tcase(s, tc);

    tc = tcase_create("reclaim");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_memory_returns_after_drain);
    tcase_add_test(tc, test_enomem_at_boundary);
    tcase_add_test(tc, test_enomem_not_when_another_grew);
    tcase_add_test(tc, test_steady_state_uses_spare);
    tcase_add_test(tc, test_records_reused_after_exit);
    /* Not under TSan, whose own key destructor tears down the thread's
     * state in the last round, before this test's runs: any instrumented
     * access there faults. */
    if (!UL_TSAN)
        tcase_add_test(tc, test_record_used_in_last_destructor_round);
    /* Not under TSan, which cannot start threads in the child of a threaded
     * fork: left out there, not passed without looking. */
    if (!UL_TSAN)
        tcase_add_test(tc, test_fork_frees_other_records);
    if (!UL_TSAN)
        tcase_add_test(tc, test_fork_mid_reclaim_frees);
#if !UL_TSAN
    tcase_add_test(tc, test_fork_before_handler_registered);
#endif
    tcase_add_test(tc, test_idle_thread_holds_nothing);
    tcase_add_loop_test(tc, test_drained_at_segment_end_gives_back, 0, 2);
    tcase_add_test(tc, test_batch_renews_its_epoch);
    suite_add_tcase(s, tc);

    tc = tcase_create("threads");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_mt_segment_boundaries);
    tcase_add_test(tc, test_len_exact_when_quiescent);
    suite_add_tcase(s, tc);

    tc = tcase_create("chan");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_chan_new);
    tcase_add_test(tc, test_chan_never_full);
    tcase_add_test(tc, test_chan_batches_and_len);
    tcase_add_test(tc, test_chan_recv_blocks_until_send);
    tcase_add_test(tc, test_chan_close);
    tcase_add_loop_test(tc, test_chan_drop_at_free, 0, N_OF(drop_sizes));
    tcase_add_test(tc, test_chan_ptr_and_evict);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sl_test_run(list_suite());
}
