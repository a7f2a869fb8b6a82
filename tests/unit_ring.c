/*
 * tests/unit_ring.c — the overwrite ring: raw sl_ring_* (sluice/ring.h) and
 * the SL_RING channel.
 *
 * What is checked: exactly `capacity` messages fit; every push into a full
 * ring succeeds with SL_EVICTED and displaces exactly the oldest message,
 * which goes to the caller (raw push, sl_chan_send_evict) or to the drop
 * function (every other send form) exactly once; len never exceeds the
 * capacity; random sequences agree with a model deque that drops its oldest
 * element at capacity; sl_chan_free drops the leftovers in FIFO order; the
 * same, and two producers racing two consumers, with the counters started
 * just below 2^64 (case "wrap"). Random tests print their seed; SL_TEST_SEED
 * replays one.
 */
#include "stress_common.h" /* xmalloc */

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/chan.h>
#include <sluice/ring.h>
#include "testing.h"               /* the init_at forms: counters near the wrap */
#include "../channels/chan_impl.h" /* a channel's ring: where its counters are */

/* =========================================================================
 * Raw ring
 * ========================================================================= */

START_TEST(test_init_bad_input)
{
    sl_ring r;
    ck_assert_int_eq(sl_ring_init(NULL, 8, 4), SL_EINVAL);
    ck_assert_int_eq(sl_ring_init(&r, 8, 0), SL_EINVAL);
    ck_assert_int_eq(sl_ring_init(&r, 0, 4), SL_EINVAL);
    ck_assert_int_eq(sl_ring_init(&r, 0, 0), SL_EINVAL);
    ck_assert_int_eq(sl_ring_init(&r, SL_ELEM_MAX + 1, 4), SL_EINVAL);
    ck_assert_int_eq(sl_ring_init(&r, SIZE_MAX, 4), SL_EINVAL);
    const size_t huge[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - SL_RING_SPARE + 1,
                           SIZE_MAX - SL_RING_SPARE, SIZE_MAX / 2 + 1, SIZE_MAX / 2};
    for (int i = 0; i < N_OF(huge); i++)
        ck_assert_msg(sl_ring_init(&r, 8, huge[i]) == SL_EINVAL, "capacity %zu accepted", huge[i]);

    sl_ring_destroy(NULL);
    ck_assert_uint_eq(sl_ring_len(NULL), 0);
    ck_assert_uint_eq(sl_ring_cap(NULL), 0);
    uint64_t v = 3;
    ck_assert_uint_eq(sl_ring_pop_n(NULL, &v, 1), 0);

    ck_assert_int_eq(sl_ring_init(&r, 8, 5), SL_OK);
    ck_assert_uint_eq(sl_ring_cap(&r), 5);
    ck_assert_uint_eq(sl_ring_len(&r), 0);
    ck_assert_int_eq(sl_ring_try_push(&r, &v, NULL), SL_OK);
    ck_assert_uint_eq(sl_ring_pop_n(&r, NULL, 1), 0); /* NULL out consumes nothing */
    ck_assert_uint_eq(sl_ring_len(&r), 1);
    uint64_t o = 0;
    ck_assert_int_eq(sl_ring_try_pop(&r, &o), SL_OK);
    ck_assert_uint_eq(o, 3);
    ck_assert_int_eq(sl_ring_try_pop(&r, &o), SL_EMPTY);
    sl_ring_destroy(&r);

    /* The largest message. */
    ck_assert_int_eq(sl_ring_init(&r, SL_ELEM_MAX, 1), SL_OK);
    unsigned char *in = xmalloc(SL_ELEM_MAX), *out = xmalloc(SL_ELEM_MAX);
    memset(in, 0xA5, SL_ELEM_MAX);
    ck_assert_int_eq(sl_ring_try_push(&r, in, NULL), SL_OK);
    memset(in, 0x5A, SL_ELEM_MAX);
    ck_assert_int_eq(sl_ring_try_push(&r, in, out), SL_EVICTED);
    for (size_t i = 0; i < SL_ELEM_MAX; i++)
        CHECK(out[i] == 0xA5, "evicted byte %zu wrong", i);
    ck_assert_int_eq(sl_ring_try_pop(&r, out), SL_OK);
    ck_assert(memcmp(in, out, SL_ELEM_MAX) == 0);
    free(in);
    free(out);
    sl_ring_destroy(&r);
}
END_TEST

static const size_t caps[] = {1, 2, 3, 4, 7, 100};

/* Exactly `cap` fit; every further push returns SL_EVICTED and hands back
 * exactly the oldest, in order. Over several message sizes. */
START_TEST(test_exact_capacity)
{
    const size_t cap = caps[_i];
    const size_t sizes[] = {1, 8, 24, 100, 1000};
    for (int z = 0; z < N_OF(sizes); z++) {
        const size_t esz = sizes[z];
        sl_ring r;
        ck_assert_int_eq(sl_ring_init(&r, esz, cap), SL_OK);
        ck_assert_uint_eq(sl_ring_cap(&r), cap);
        unsigned char *in = xmalloc(esz), *ev = xmalloc(esz + 16), *out = xmalloc(esz + 16);
        uint64_t next_in = 0, oldest = 0;
        for (int round = 0; round < 4; round++) {
            for (size_t i = 0; i < cap; i++) {
                sl_test_seq_fill(in, esz, next_in);
                memset(ev, 0xEE, esz + 16);
                sl_status st = sl_ring_try_push(&r, in, ev);
                CHECK(st == SL_OK, "cap %zu esz %zu: push %zu of %zu returned %d", cap, esz, i,
                      cap, (int)st);
                CHECK(ev[0] == 0xEE && ev[esz - 1] == 0xEE, "cap %zu: OK push wrote `evicted`",
                      cap);
                next_in++;
                CHECK(sl_ring_len(&r) == i + 1, "cap %zu: len %zu after %zu pushes", cap,
                      sl_ring_len(&r), i + 1);
            }
            const size_t extra = 2 * cap + 5;
            for (size_t i = 0; i < extra; i++) {
                sl_test_seq_fill(in, esz, next_in);
                memset(ev, 0xEE, esz + 16);
                sl_status st = sl_ring_try_push(&r, in, (i % 5 == 4) ? NULL : ev);
                CHECK(st == SL_EVICTED, "cap %zu esz %zu: push into a full ring returned %d", cap,
                      esz, (int)st);
                if (i % 5 != 4) {
                    CHECK(sl_test_seq_is(ev, esz, oldest),
                          "cap %zu esz %zu: evicted %llu (low bytes), the oldest is %llu", cap, esz,
                          ULL(sl_test_seq_low(ev, esz)), ULL(oldest));
                    CHECK(ev[esz] == 0xEE && ev[esz + 15] == 0xEE,
                          "cap %zu esz %zu: eviction wrote past the message", cap, esz);
                }
                oldest++;
                next_in++;
                CHECK(sl_ring_len(&r) == cap, "cap %zu: len %zu on a full ring", cap,
                      sl_ring_len(&r));
            }
            /* The newest `cap` come out in order. */
            ck_assert_uint_eq(next_in - oldest, cap);
            size_t take = round % 2 ? cap : (cap + 1) / 2;
            for (size_t i = 0; i < take; i++) {
                memset(out, 0xEE, esz + 16);
                CHECK(sl_ring_try_pop(&r, out) == SL_OK, "cap %zu: pop %zu empty", cap, i);
                CHECK(sl_test_seq_is(out, esz, oldest),
                      "cap %zu esz %zu: popped %llu, expected %llu", cap, esz,
                      ULL(sl_test_seq_low(out, esz)), ULL(oldest));
                CHECK(out[esz] == 0xEE, "cap %zu: pop wrote past the message", cap);
                oldest++;
            }
            ck_assert_uint_eq(sl_ring_len(&r), next_in - oldest);
            /* Refill the gap, then overflow again in the next round. */
            while (next_in - oldest < cap) {
                sl_test_seq_fill(in, esz, next_in++);
                ck_assert_int_eq(sl_ring_try_push(&r, in, ev), SL_OK);
            }
            ck_assert_uint_eq(sl_ring_len(&r), cap);
            /* The pushes at the top of the next round all evict: drain first. */
            while (oldest < next_in) {
                ck_assert_int_eq(sl_ring_try_pop(&r, out), SL_OK);
                CHECK(sl_test_seq_is(out, esz, oldest), "cap %zu: drain got %llu, expected %llu",
                      cap, ULL(sl_test_seq_low(out, esz)), ULL(oldest));
                oldest++;
            }
            ck_assert_int_eq(sl_ring_try_pop(&r, out), SL_EMPTY);
            ck_assert_uint_eq(sl_ring_len(&r), 0);
        }
        free(in);
        free(ev);
        free(out);
        sl_ring_destroy(&r);
    }
}
END_TEST

START_TEST(test_pop_n)
{
    sl_ring r;
    ck_assert_int_eq(sl_ring_init(&r, 8, 10), SL_OK);
    uint64_t out[32];
    ck_assert_uint_eq(sl_ring_pop_n(&r, out, 5), 0);
    for (uint64_t v = 0; v < 25; v++)
        sl_ring_try_push(&r, &v, NULL); /* 15..24 remain */
    ck_assert_uint_eq(sl_ring_len(&r), 10);
    memset(out, 0, sizeof out);
    ck_assert_uint_eq(sl_ring_pop_n(&r, out, 0), 0);
    ck_assert_uint_eq(sl_ring_pop_n(&r, out, 4), 4);
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(out[i], 15 + (uint64_t)i);
    ck_assert_uint_eq(out[4], 0);
    ck_assert_uint_eq(sl_ring_pop_n(&r, out, 32), 6);
    for (int i = 0; i < 6; i++)
        ck_assert_uint_eq(out[i], 19 + (uint64_t)i);
    ck_assert_uint_eq(sl_ring_pop_n(&r, out, 32), 0);
    ck_assert_uint_eq(sl_ring_len(&r), 0);
    sl_ring_destroy(&r);
}
END_TEST

/* Random push / pop / pop_n against a model deque that drops its oldest
 * element at capacity. */
static const size_t model_caps[] = {1, 2, 3, 8, 100};

START_TEST(test_model_random)
{
    const size_t cap = model_caps[_i];
    char name[64];
    snprintf(name, sizeof name, "raw model cap %zu", cap);
    const uint64_t seed = sl_test_seed("unit_ring", name);
    sl_test_rng rng;
    sl_test_rng_seed(&rng, seed);
    const size_t esz = 16;
    sl_ring r;
    ck_assert_int_eq(sl_ring_init(&r, esz, cap), SL_OK);
    uint64_t head = 0, tail = 0; /* the model: the ring holds seqs head..tail-1 */
    unsigned char in[16], ev[16], out[16 * 40];
    const unsigned ops = (unsigned)sl_test_scaled(60000, 8000);
    unsigned bias = 50;
    for (unsigned op = 0; op < ops; op++) {
        if (op % 1000 == 0)
            bias = 10 + (unsigned)(sl_test_rng_next(&rng) % 80);
        unsigned x = (unsigned)(sl_test_rng_next(&rng) % 100);
        if (x < bias) {
            sl_test_seq_fill(in, esz, tail);
            memset(ev, 0, sizeof ev);
            bool give = sl_test_rng_next(&rng) % 4 != 0;
            sl_status st = sl_ring_try_push(&r, in, give ? ev : NULL);
            tail++;
            if (tail - head > cap) {
                CHECK(st == SL_EVICTED, "seed %llu op %u: push into a full ring returned %d",
                      ULL(seed), op, (int)st);
                CHECK(!give || sl_test_seq_is(ev, esz, head),
                      "seed %llu op %u: evicted %llu, model's oldest %llu", ULL(seed), op,
                      ULL(sl_test_seq_low(ev, esz)), ULL(head));
                head++;
            } else {
                CHECK(st == SL_OK, "seed %llu op %u: push with %llu of %zu inside returned %d",
                      ULL(seed), op, ULL(tail - 1 - head), cap, (int)st);
            }
        } else if (x < bias + (100 - bias) * 2 / 3) {
            sl_status st = sl_ring_try_pop(&r, out);
            if (head == tail) {
                CHECK(st == SL_EMPTY, "seed %llu op %u: pop on empty returned %d", ULL(seed), op,
                      (int)st);
            } else {
                CHECK(st == SL_OK && sl_test_seq_is(out, esz, head),
                      "seed %llu op %u: pop returned %d / %llu, model %llu", ULL(seed), op,
                      (int)st, ULL(sl_test_seq_low(out, esz)), ULL(head));
                head++;
            }
        } else {
            size_t k = 1 + (size_t)(sl_test_rng_next(&rng) % 40);
            size_t want = (uint64_t)k < tail - head ? k : (size_t)(tail - head);
            size_t got = sl_ring_pop_n(&r, out, k);
            CHECK(got == want, "seed %llu op %u: pop_n(%zu) with %llu inside = %zu", ULL(seed), op,
                  k, ULL(tail - head), got);
            for (size_t i = 0; i < got; i++)
                CHECK(sl_test_seq_is(out + i * esz, esz, head + i),
                      "seed %llu op %u: pop_n[%zu] wrong", ULL(seed), op, i);
            head += got;
        }
        size_t len = sl_ring_len(&r);
        CHECK(len == tail - head && len <= cap, "seed %llu op %u: len %zu, model %llu, cap %zu",
              ULL(seed), op, len, ULL(tail - head), cap);
    }
    sl_ring_destroy(&r);
}
END_TEST

/* Destroy with messages inside (ASan sees leaks). */
START_TEST(test_destroy_with_messages)
{
    sl_ring r;
    ck_assert_int_eq(sl_ring_init(&r, 40, 7), SL_OK);
    unsigned char b[40];
    for (uint64_t s = 0; s < 20; s++) {
        sl_test_seq_fill(b, 40, s);
        sl_ring_try_push(&r, b, NULL);
    }
    ck_assert_uint_eq(sl_ring_len(&r), 7);
    sl_ring_destroy(&r);
}
END_TEST

/* =========================================================================
 * The SL_RING channel
 * ========================================================================= */

/* Records every dropped message (8-byte sequence numbers). */
typedef struct drops {
    uint64_t v[4096];
    size_t n;
    size_t overflow;
} drops;

static void rec_drop(void *elem, void *ctx)
{
    drops *d = ctx;
    uint64_t x;
    memcpy(&x, elem, sizeof x); /* elem may be unaligned */
    if (d->n < sizeof d->v / sizeof d->v[0])
        d->v[d->n++] = x;
    else
        d->overflow++;
}

static sl_chan *mk_ring(size_t esz, size_t cap, sl_drop_fn drop, void *ctx)
{
    return sl_test_chan(SL_RING, esz, cap, drop, ctx);
}

START_TEST(test_chan_new)
{
    int sentinel;
    sl_chan *const mark = (sl_chan *)(void *)&sentinel;
    sl_chan *ch = mark;
    struct { size_t esz, cap; } bad[] = {
        {8, 0}, {0, 4}, {0, 0}, {SL_ELEM_MAX + 1, 4}, {8, SIZE_MAX}, {8, SIZE_MAX / 2 + 1},
        {SIZE_MAX, 1},
    };
    for (int i = 0; i < N_OF(bad); i++) {
        sl_chan_opts o = {.flavor = SL_RING, .elem_size = bad[i].esz, .capacity = bad[i].cap};
        ck_assert_msg(sl_chan_new(&ch, &o) == SL_EINVAL, "SL_RING esz %zu cap %zu accepted",
                      bad[i].esz, bad[i].cap);
        ck_assert_ptr_eq(ch, mark);
    }
    for (int i = 0; i < N_OF(caps); i++) {
        ch = mk_ring(24, caps[i], NULL, NULL);
        ck_assert_uint_eq(sl_chan_cap(ch), caps[i]);
        ck_assert_int_eq(sl_chan_flavor(ch), SL_RING);
        ck_assert_uint_eq(sl_chan_elem_size(ch), 24);
        ck_assert_uint_eq(sl_chan_len(ch), 0);
        ck_assert(!sl_chan_is_closed(ch));
        sl_chan_free(ch);
    }
}
END_TEST

/* Exactly cap fit; each send form on a full ring returns SL_EVICTED and the
 * oldest goes to the drop function, exactly once, in order. */
START_TEST(test_chan_exact_capacity)
{
    const size_t cap = caps[_i];
    static drops d;
    memset(&d, 0, sizeof d);
    sl_chan *ch = mk_ring(8, cap, rec_drop, &d);
    uint64_t next = 0;
    for (size_t i = 0; i < cap; i++) {
        ck_assert_int_eq(sl_chan_try_send(ch, &next), SL_OK);
        next++;
        ck_assert_uint_eq(sl_chan_len(ch), i + 1);
    }
    ck_assert_uint_eq(d.n, 0);
    const int forms = 5;
    for (int k = 0; k < 4 * forms; k++) {
        sl_status st;
        const char *what;
        switch (k % forms) {
        case 0: what = "sl_chan_send"; st = sl_chan_send(ch, &next); break;
        case 1: what = "sl_chan_try_send"; st = sl_chan_try_send(ch, &next); break;
        case 2: what = "sl_chan_send_for(0)"; st = sl_chan_send_for(ch, &next, 0); break;
        case 3: what = "sl_chan_send_for(10 ms)"; st = sl_chan_send_for(ch, &next, 10 * MS); break;
        default: what = "sl_chan_send_for(forever)"; st = sl_chan_send_for(ch, &next, SL_FOREVER);
        }
        ck_assert_msg(st == SL_EVICTED, "cap %zu: %s on a full ring returned %s", cap, what,
                      sl_status_str(st));
        next++;
        ck_assert_msg(d.n == (size_t)k + 1, "cap %zu: %s: %zu drops after %d evicting sends", cap,
                      what, d.n, k + 1);
        ck_assert_msg(d.v[k] == (uint64_t)k, "cap %zu: %s dropped %llu, the oldest was %d", cap,
                      what, ULL(d.v[k]), k);
        ck_assert_uint_eq(sl_chan_len(ch), cap);
    }
    /* The newest cap come out in order; nothing more is dropped. */
    for (uint64_t s = next - cap; s < next; s++) {
        uint64_t v = ~s;
        ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_OK);
        ck_assert_uint_eq(v, s);
    }
    uint64_t v;
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_EMPTY);
    size_t dropped = d.n;
    sl_chan_free(ch);
    ck_assert_uint_eq(d.n, dropped);
    ck_assert_uint_eq(d.overflow, 0);
}
END_TEST

/* No send form waits on a ring with no receiver. */
START_TEST(test_chan_send_never_blocks)
{
    static drops d;
    memset(&d, 0, sizeof d);
    sl_chan *ch = mk_ring(8, 1, NULL, NULL);
    const uint64_t n = sl_test_scaled(200000, 20000);
    for (uint64_t s = 0; s < n; s++) {
        sl_status st = (s & 1) ? sl_chan_send(ch, &s) : sl_chan_send_for(ch, &s, SL_FOREVER);
        CHECK(st == (s == 0 ? SL_OK : SL_EVICTED), "send %llu returned %s", ULL(s),
              sl_status_str(st));
    }
    uint64_t v = 0;
    ck_assert_int_eq(sl_chan_recv(ch, &v), SL_OK);
    ck_assert_uint_eq(v, n - 1);
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_chan_send_evict)
{
    static drops d;
    memset(&d, 0, sizeof d);
    sl_chan *ch = mk_ring(8, 3, rec_drop, &d);
    uint64_t ev = 777;
    for (uint64_t s = 0; s < 3; s++) {
        ck_assert_int_eq(sl_chan_send_evict(ch, &s, &ev), SL_OK);
        ck_assert_uint_eq(ev, 777); /* nothing displaced: untouched */
    }
    for (uint64_t s = 3; s < 20; s++) {
        ck_assert_int_eq(sl_chan_send_evict(ch, &s, &ev), SL_EVICTED);
        ck_assert_uint_eq(ev, s - 3);
        ck_assert_uint_eq(sl_chan_len(ch), 3);
    }
    ck_assert_uint_eq(d.n, 0); /* the caller got them, not the drop function */

    /* Bad input: refused, nothing consumed, nothing displaced. */
    uint64_t x = 1000;
    ev = 555;
    ck_assert_int_eq(sl_chan_send_evict(ch, &x, NULL), SL_EINVAL);
    ck_assert_int_eq(sl_chan_send_evict(ch, NULL, &ev), SL_EINVAL);
    ck_assert_int_eq(sl_chan_send_evict(NULL, &x, &ev), SL_EINVAL);
    ck_assert_uint_eq(ev, 555);
    ck_assert_uint_eq(sl_chan_len(ch), 3);
    ck_assert_uint_eq(d.n, 0);

    /* The mix: a plain send displaces to the drop function. */
    ck_assert_int_eq(sl_chan_send(ch, &x), SL_EVICTED);
    ck_assert_uint_eq(d.n, 1);
    ck_assert_uint_eq(d.v[0], 17);
    x++;
    ck_assert_int_eq(sl_chan_send_evict(ch, &x, &ev), SL_EVICTED);
    ck_assert_uint_eq(ev, 18);

    /* Closed: SL_CLOSED, nothing consumed or displaced. */
    sl_chan_close(ch);
    x = 2000;
    ev = 555;
    ck_assert_int_eq(sl_chan_send_evict(ch, &x, &ev), SL_CLOSED);
    ck_assert_uint_eq(ev, 555);
    ck_assert_uint_eq(sl_chan_len(ch), 3);
    ck_assert_uint_eq(d.n, 1);
    uint64_t want[] = {19, 1000, 1001};
    for (int i = 0; i < 3; i++) {
        uint64_t v = 0;
        ck_assert_int_eq(sl_chan_recv(ch, &v), SL_OK);
        ck_assert_uint_eq(v, want[i]);
    }
    uint64_t v;
    ck_assert_int_eq(sl_chan_recv(ch, &v), SL_CLOSED);
    sl_chan_free(ch);
    ck_assert_uint_eq(d.n, 1);

    /* Every other flavour refuses it and consumes nothing. */
    const sl_flavor others[] = {SL_SPSC, SL_MPMC, SL_LIST};
    for (int i = 0; i < N_OF(others); i++) {
        ch = sl_test_chan(others[i], 8, 1, NULL, NULL);
        uint64_t a = 1, b = 2;
        ev = 555;
        ck_assert_int_eq(sl_chan_send_evict(ch, &a, &ev), SL_EINVAL);
        ck_assert_uint_eq(sl_chan_len(ch), 0);
        ck_assert_int_eq(sl_chan_try_send(ch, &b), SL_OK);
        ck_assert_msg(sl_chan_send_evict(ch, &a, &ev) == SL_EINVAL,
                      "flavour %d: send_evict accepted", (int)others[i]);
        ck_assert_uint_eq(ev, 555);
        ck_assert_uint_eq(sl_chan_len(ch), 1);
        uint64_t o = 0;
        ck_assert_int_eq(sl_chan_try_recv(ch, &o), SL_OK);
        ck_assert_uint_eq(o, 2);
        ck_assert_int_eq(sl_chan_try_recv(ch, &o), SL_EMPTY);
        sl_chan_free(ch);
    }
}
END_TEST

/* try_send_n into a full ring: every message counts as sent, the displaced
 * ones go to the drop function, oldest first. */
START_TEST(test_chan_try_send_n)
{
    static drops d;
    memset(&d, 0, sizeof d);
    sl_chan *ch = mk_ring(8, 4, rec_drop, &d);
    uint64_t b[20];
    for (int i = 0; i < 20; i++)
        b[i] = (uint64_t)i;
    ck_assert_uint_eq(sl_chan_try_send_n(ch, b, 0), 0);
    ck_assert_uint_eq(sl_chan_try_send_n(ch, b, 3), 3); /* 0 1 2 */
    ck_assert_uint_eq(d.n, 0);
    ck_assert_uint_eq(sl_chan_try_send_n(ch, b + 3, 3), 3); /* 3 4 5: displaces 0, 1 */
    ck_assert_uint_eq(d.n, 2);
    ck_assert_uint_eq(d.v[0], 0);
    ck_assert_uint_eq(d.v[1], 1);
    ck_assert_uint_eq(sl_chan_len(ch), 4);
    ck_assert_uint_eq(sl_chan_try_send_n(ch, b + 6, 14), 14); /* displaces 2..15 */
    ck_assert_uint_eq(d.n, 16);
    for (size_t i = 0; i < 16; i++)
        ck_assert_uint_eq(d.v[i], i);
    ck_assert_uint_eq(sl_chan_len(ch), 4);
    uint64_t out[8];
    ck_assert_uint_eq(sl_chan_try_recv_n(ch, out, 8), 4);
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(out[i], 16 + (uint64_t)i);
    /* Closed: nothing sent, nothing displaced. */
    ck_assert_uint_eq(sl_chan_try_send_n(ch, b, 4), 4);
    sl_chan_close(ch);
    ck_assert_uint_eq(sl_chan_try_send_n(ch, b + 4, 4), 0);
    ck_assert_uint_eq(d.n, 16);
    ck_assert_uint_eq(sl_chan_len(ch), 4);
    sl_chan_free(ch); /* drops 0 1 2 3 */
    ck_assert_uint_eq(d.n, 20);
    for (size_t i = 16; i < 20; i++)
        ck_assert_uint_eq(d.v[i], i - 16);
}
END_TEST

/* Pointers: send_ptr on a full ring returns SL_EVICTED and clears the
 * pointer; the drop function owns the displaced pointer. */
typedef struct ptr_drops {
    void *v[16];
    int n;
} ptr_drops;

static void ptr_drop(void *elem, void *ctx)
{
    ptr_drops *d = ctx;
    void *p;
    memcpy(&p, elem, sizeof p);
    if (d->n < 16)
        d->v[d->n++] = p;
    free(p);
}

START_TEST(test_chan_send_ptr_full)
{
    static ptr_drops d;
    memset(&d, 0, sizeof d);
    sl_chan *ch = mk_ring(sizeof(void *), 2, ptr_drop, &d);
    void *ps[5];
    for (int i = 0; i < 5; i++) {
        ps[i] = malloc(32);
        ck_assert_ptr_nonnull(ps[i]);
    }
    for (int i = 0; i < 2; i++) {
        void *p = ps[i];
        ck_assert_int_eq(sl_chan_send_ptr(ch, &p), SL_OK);
        ck_assert_ptr_null(p);
    }
    for (int i = 2; i < 5; i++) {
        void *p = ps[i];
        ck_assert_int_eq(sl_chan_send_ptr(ch, &p), SL_EVICTED);
        ck_assert_ptr_null(p);
        ck_assert_int_eq(d.n, i - 1);
        ck_assert_ptr_eq(d.v[i - 2], ps[i - 2]); /* the oldest went to drop */
    }
    void *got = NULL;
    ck_assert_int_eq(sl_chan_recv(ch, &got), SL_OK);
    ck_assert_ptr_eq(got, ps[3]);
    free(got);
    /* Another element size: SL_EINVAL, pointer untouched. */
    sl_chan *c2 = mk_ring(sizeof(void *) * 2, 2, NULL, NULL);
    void *p = ps[0];
    ck_assert_int_eq(sl_chan_send_ptr(c2, &p), SL_EINVAL);
    ck_assert_ptr_eq(p, ps[0]);
    sl_chan_free(c2);
    /* Closed: SL_CLOSED, pointer untouched. */
    sl_chan_close(ch);
    void *q = malloc(8);
    void *q0 = q;
    ck_assert_int_eq(sl_chan_send_ptr(ch, &q), SL_CLOSED);
    ck_assert_ptr_eq(q, q0);
    free(q);
    sl_chan_free(ch); /* drops ps[4] */
    ck_assert_int_eq(d.n, 4);
    ck_assert_ptr_eq(d.v[3], ps[4]);
}
END_TEST

/* The channel against the model: every send form, every receive form. */
static const size_t chan_model_caps[] = {1, 2, 5, 64};

START_TEST(test_chan_model)
{
    const size_t cap = chan_model_caps[_i];
    char name[64];
    snprintf(name, sizeof name, "chan model cap %zu", cap);
    const uint64_t seed = sl_test_seed("unit_ring", name);
    sl_test_rng rng;
    sl_test_rng_seed(&rng, seed);
    static drops d;
    memset(&d, 0, sizeof d);
    sl_chan *ch = mk_ring(8, cap, rec_drop, &d);
    uint64_t head = 0, tail = 0; /* model: head..tail-1 inside */
    size_t drops_seen = 0;       /* model: how many the drop function got */
    uint64_t batch[16];
    const unsigned ops = (unsigned)sl_test_scaled(30000, 5000);
    unsigned bias = 50;
    for (unsigned op = 0; op < ops; op++) {
        if (op % 700 == 0)
            bias = 15 + (unsigned)(sl_test_rng_next(&rng) % 70);
        if (d.n > 3000) /* keep the record small */
            d.n = drops_seen = 0;
        unsigned x = (unsigned)(sl_test_rng_next(&rng) % 100);
        unsigned form = (unsigned)(sl_test_rng_next(&rng) % 5);
        if (x < bias) {
            if (form == 4) {
                size_t k = 1 + (size_t)(sl_test_rng_next(&rng) % 16);
                for (size_t i = 0; i < k; i++)
                    batch[i] = tail + i;
                size_t sent = sl_chan_try_send_n(ch, batch, k);
                CHECK(sent == k, "seed %llu op %u: try_send_n(%zu) = %zu", ULL(seed), op, k, sent);
                for (size_t i = 0; i < k; i++) {
                    tail++;
                    if (tail - head > cap) {
                        CHECK(d.n > drops_seen && d.v[drops_seen] == head,
                              "seed %llu op %u: try_send_n: drop #%zu is %llu, model's oldest %llu",
                              ULL(seed), op, drops_seen,
                              ULL(d.n > drops_seen ? d.v[drops_seen] : ~0ull), ULL(head));
                        drops_seen++;
                        head++;
                    }
                }
                CHECK(d.n == drops_seen, "seed %llu op %u: try_send_n dropped %zu, model %zu",
                      ULL(seed), op, d.n, drops_seen);
            } else {
                uint64_t v = tail, ev = ~0ull;
                sl_status st;
                switch (form) {
                case 0: st = sl_chan_send(ch, &v); break;
                case 1: st = sl_chan_try_send(ch, &v); break;
                case 2: st = sl_chan_send_for(ch, &v, (sl_test_rng_next(&rng) & 1) ? 0 : MS); break;
                default: st = sl_chan_send_evict(ch, &v, &ev);
                }
                tail++;
                if (tail - head > cap) {
                    CHECK(st == SL_EVICTED, "seed %llu op %u: send form %u on full returned %s",
                          ULL(seed), op, form, sl_status_str(st));
                    if (form == 3) {
                        CHECK(ev == head,
                              "seed %llu op %u: send_evict handed back %llu, oldest %llu",
                              ULL(seed), op, ULL(ev), ULL(head));
                    } else {
                        CHECK(d.n == drops_seen + 1 && d.v[drops_seen] == head,
                              "seed %llu op %u: send form %u: %zu drops (model %zu), last %llu, "
                              "oldest %llu",
                              ULL(seed), op, form, d.n, drops_seen + 1,
                              ULL(d.n ? d.v[d.n - 1] : ~0ull), ULL(head));
                        drops_seen++;
                    }
                    head++;
                } else {
                    CHECK(st == SL_OK, "seed %llu op %u: send form %u returned %s", ULL(seed), op,
                          form, sl_status_str(st));
                    CHECK(form != 3 || ev == ~0ull, "seed %llu op %u: send_evict wrote evicted",
                          ULL(seed), op);
                }
                CHECK(d.n == drops_seen, "seed %llu op %u: %zu drops, model %zu", ULL(seed), op,
                      d.n, drops_seen);
            }
        } else {
            if (form == 4) {
                size_t k = 1 + (size_t)(sl_test_rng_next(&rng) % 16);
                size_t want = (uint64_t)k < tail - head ? k : (size_t)(tail - head);
                size_t got = sl_chan_try_recv_n(ch, batch, k);
                CHECK(got == want, "seed %llu op %u: try_recv_n(%zu) = %zu, model %zu", ULL(seed),
                      op, k, got, want);
                for (size_t i = 0; i < got; i++)
                    CHECK(batch[i] == head + i,
                          "seed %llu op %u: try_recv_n[%zu] = %llu, model %llu", ULL(seed), op, i,
                          ULL(batch[i]), ULL(head + i));
                head += got;
            } else {
                uint64_t v = ~0ull;
                sl_status st;
                bool blocking = form == 0 && head != tail; /* recv only when it cannot wait */
                if (blocking)
                    st = sl_chan_recv(ch, &v);
                else if (form == 2)
                    st = sl_chan_recv_for(ch, &v, (sl_test_rng_next(&rng) & 1) ? 0 : 100000);
                else
                    st = sl_chan_try_recv(ch, &v);
                if (head == tail) {
                    sl_status want = form == 2 ? SL_TIMEDOUT : SL_EMPTY;
                    CHECK(st == want, "seed %llu op %u: receive on empty returned %s", ULL(seed),
                          op, sl_status_str(st));
                } else {
                    CHECK(st == SL_OK && v == head,
                          "seed %llu op %u: receive returned %s / %llu, model %llu", ULL(seed), op,
                          sl_status_str(st), ULL(v), ULL(head));
                    head++;
                }
            }
        }
        size_t len = sl_chan_len(ch);
        CHECK(len == tail - head && len <= cap, "seed %llu op %u: len %zu, model %llu, cap %zu",
              ULL(seed), op, len, ULL(tail - head), cap);
    }
    /* Leftovers go to the drop function at free, oldest first. */
    d.n = drops_seen = 0;
    uint64_t left = tail - head;
    sl_chan_free(ch);
    ck_assert_uint_eq(d.n, left);
    for (size_t i = 0; i < d.n; i++)
        ck_assert_msg(d.v[i] == head + i, "seed %llu: drop at free #%zu = %llu, expected %llu",
                      ULL(seed), i, ULL(d.v[i]), ULL(head + i));
}
END_TEST

/* Drop at free gets the leftovers in FIFO order, after many wraps too. */
START_TEST(test_chan_drop_at_free)
{
    const size_t cap = caps[_i];
    static drops d;
    const uint64_t sent_counts[] = {0, 1, cap, cap + 1, 3 * cap + 2, 1000};
    for (int c = 0; c < N_OF(sent_counts); c++) {
        for (int take = 0; take < 3; take++) {
            memset(&d, 0, sizeof d);
            sl_chan *ch = mk_ring(8, cap, rec_drop, &d);
            uint64_t sent = sent_counts[c];
            for (uint64_t s = 0; s < sent; s++)
                sl_chan_send(ch, &s);
            uint64_t displaced = sent > cap ? sent - cap : 0;
            ck_assert_uint_eq(d.n, displaced);
            for (size_t i = 0; i < d.n; i++)
                ck_assert_uint_eq(d.v[i], i);
            uint64_t inside = sent - displaced;
            uint64_t recv = (uint64_t)take < inside ? (uint64_t)take : inside;
            for (uint64_t i = 0; i < recv; i++) {
                uint64_t v = 0;
                ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_OK);
                ck_assert_uint_eq(v, displaced + i);
            }
            if (take == 2)
                sl_chan_close(ch);
            d.n = 0;
            sl_chan_free(ch);
            ck_assert_msg(d.n == inside - recv, "cap %zu sent %llu recv %llu: %zu dropped at free",
                          cap, ULL(sent), ULL(recv), d.n);
            for (size_t i = 0; i < d.n; i++)
                ck_assert_msg(d.v[i] == displaced + recv + i,
                              "cap %zu sent %llu: drop at free #%zu = %llu, expected %llu", cap,
                              ULL(sent), i, ULL(d.v[i]), ULL(displaced + recv + i));
        }
    }
}
END_TEST

/* ---- blocking receive and close ----------------------------------------- */

START_TEST(test_chan_blocking_recv)
{
    static drops d;
    memset(&d, 0, sizeof d);
    sl_chan *ch = mk_ring(8, 2, rec_drop, &d);
    sl_test_recv_thread t;
    atomic_init(&t.done, 0);

    sl_test_recv_start(&t, ch);
    uint64_t v = 11;
    ck_assert_int_eq(sl_chan_send(ch, &v), SL_OK);
    pthread_join(t.thr, NULL);
    ck_assert_int_eq(t.st, SL_OK);
    ck_assert_uint_eq(t.out, 11);

    sl_test_recv_start(&t, ch);
    uint64_t ev = 0;
    v = 12;
    ck_assert_int_eq(sl_chan_send_evict(ch, &v, &ev), SL_OK);
    pthread_join(t.thr, NULL);
    ck_assert_int_eq(t.st, SL_OK);
    ck_assert_uint_eq(t.out, 12);

    sl_test_recv_start(&t, ch);
    uint64_t b[3] = {13, 14, 15};
    ck_assert_uint_eq(sl_chan_try_send_n(ch, b, 3), 3);
    pthread_join(t.thr, NULL);
    ck_assert_int_eq(t.st, SL_OK);
    /* 13 may have been received before 15 displaced it, or displaced first. */
    ck_assert_msg(t.out == 13 || t.out == 14, "receiver got %llu", ULL(t.out));
    ck_assert_uint_eq(sl_chan_len(ch) + 1 + d.n, 3);

    uint64_t o;
    while (sl_chan_try_recv(ch, &o) == SL_OK) {
    }
    sl_test_recv_start(&t, ch);
    sl_chan_close(ch);
    pthread_join(t.thr, NULL);
    ck_assert_int_eq(t.st, SL_CLOSED);
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_chan_close)
{
    static drops d;
    memset(&d, 0, sizeof d);
    sl_chan *ch = mk_ring(8, 4, rec_drop, &d);
    for (uint64_t s = 0; s < 6; s++)
        sl_chan_send(ch, &s); /* 2..5 inside, 0 and 1 dropped */
    ck_assert_uint_eq(d.n, 2);
    sl_chan_close(ch);
    sl_chan_close(ch);
    ck_assert(sl_chan_is_closed(ch));
    uint64_t x = 99;
    ck_assert_int_eq(sl_chan_send(ch, &x), SL_CLOSED);
    ck_assert_int_eq(sl_chan_try_send(ch, &x), SL_CLOSED);
    ck_assert_int_eq(sl_chan_send_for(ch, &x, 5 * MS), SL_CLOSED);
    ck_assert_uint_eq(d.n, 2); /* a refused send displaces nothing */
    ck_assert_uint_eq(sl_chan_len(ch), 4);
    for (uint64_t s = 2; s < 6; s++) {
        uint64_t v = 0;
        ck_assert_int_eq((s & 1) ? sl_chan_recv(ch, &v) : sl_chan_try_recv(ch, &v), SL_OK);
        ck_assert_uint_eq(v, s);
    }
    ck_assert_int_eq(sl_chan_recv(ch, &x), SL_CLOSED);
    ck_assert_int_eq(sl_chan_try_recv(ch, &x), SL_CLOSED);
    ck_assert_int_eq(sl_chan_recv_for(ch, &x, 5 * MS), SL_CLOSED);
    ck_assert_uint_eq(sl_chan_try_recv_n(ch, &x, 1), 0);
    sl_chan_free(ch);
    ck_assert_uint_eq(d.n, 2);
}
END_TEST


/* Bad input never crashes (SPEC §2): NULL arguments are SL_EINVAL. */
START_TEST(test_raw_ring_null_args)
{
    sl_ring q;
    uint64_t v = 7, out = 0;
    ck_assert_int_eq(sl_ring_init(&q, sizeof v, 4), SL_OK);
    ck_assert_int_eq(sl_ring_try_push(NULL, &v, NULL), SL_EINVAL);
    ck_assert_int_eq(sl_ring_try_push(&q, NULL, NULL), SL_EINVAL);
    ck_assert_int_eq(sl_ring_try_pop(NULL, &out), SL_EINVAL);
    ck_assert_int_eq(sl_ring_try_push(&q, &v, NULL), SL_OK);
    ck_assert_int_eq(sl_ring_try_pop(&q, NULL), SL_EINVAL);
    ck_assert_int_eq(sl_ring_try_pop(&q, &out), SL_OK);
    ck_assert_uint_eq(out, 7);
    sl_ring_destroy(&q);
}
END_TEST

/* Two pushes race into a full ring. The first swaps the oldest message out
 * of cell(t) and stops before moving the head; the second helps the tail on,
 * displaces the next message and tries to move the head from *its* displaced
 * position, which is not the head's yet; then the first moves the head one
 * step, onto the cell the second displaced. Later displacing pushes must not
 * leave the head there: at rest it must rest on the oldest message, or it
 * falls one cell further behind with every push and the next pop walks them
 * all (lock-free still, but a pop's cost grows with the pushes before it). */
START_TEST(test_displaced_head_at_rest)
{
    enum { CAP = 4, PUSHES = 1000 };
    sl_ring r;
    ck_assert_int_eq(sl_ring_init(&r, sizeof(uint64_t), CAP), SL_OK);
    sl_mpmc *q = &r.q;
    uint64_t v, out;
    for (v = 0; v < CAP; v++)
        ck_assert_int_eq(sl_ring_try_push(&r, &v, NULL), SL_OK);
    /* The first push's double-width CAS, by hand: (h + 1, 0) -> (t + 1, CAP). */
    uint64_t h = atomic_load(&q->head), t = atomic_load(&q->tail);
    ck_assert_uint_lt((h & (q->one_lap - 1)) + 1, CAP); /* next(h) == h + 1 */
    sl_mpmc_cell *c = &q->used[t & (q->one_lap - 1)];
    ck_assert_uint_eq(atomic_load(&c->stamp), h + 1);
    atomic_store(&c->value, v++);
    atomic_store(&c->stamp, t + 1);
    /* The second push, for real: it displaces message 1. */
    ck_assert_int_eq(sl_ring_try_push(&r, &v, &out), SL_EVICTED);
    ck_assert_uint_eq(out, 1);
    v++;
    /* The first push moves the head from its own position, h, unless the
     * second one has moved it past h already. */
    uint64_t expect = h;
    atomic_compare_exchange_strong(&q->head, &expect, h + 1);
    for (uint64_t k = 0; k < PUSHES; k++, v++) {
        ck_assert_int_eq(sl_ring_try_push(&r, &v, &out), SL_EVICTED);
        ck_assert_uint_eq(out, k + 2); /* the oldest, in order */
    }
    uint64_t head = atomic_load(&q->head);
    ck_assert_msg(atomic_load(&q->used[head & (q->one_lap - 1)].stamp) == head + 1,
                  "at rest the head (position %llu) is not on the oldest message (tail %llu)",
                  (unsigned long long)head, (unsigned long long)atomic_load(&q->tail));
    for (uint64_t k = v - CAP; k < v; k++) {
        ck_assert_int_eq(sl_ring_try_pop(&r, &out), SL_OK);
        ck_assert_uint_eq(out, k);
    }
    ck_assert_int_eq(sl_ring_try_pop(&r, &out), SL_EMPTY);
    sl_ring_destroy(&r);
}
END_TEST

/* =========================================================================
 * Across the counters' wrap
 * ========================================================================= */

/* Positions are free-running 64-bit counters. These runs start them
 * WRAP_BELOW positions short of 2^64 (init rounds down to a lap boundary: at
 * most 15 positions more for these capacities, and the free ring of slot
 * indices, for messages over 8 bytes, at most 255), so each run crosses the
 * wrap within its first few hundred positions, in both rings, then goes on
 * for many laps: every displacement, pop and batch near and past the wrap
 * sees a stamp and a counter on either side of it. */
#define WRAP_BELOW 100u
#define WRAP_START ((uint64_t)0 - WRAP_BELOW)
#define WRAP_MAX_CAP 9
#define WRAP_BATCH 12
#define WRAP_ESZ_MAX 1024
/* The direct form (the value in the cell: a part of the word, and all of
 * it) and the indexed form (a slot: just over a word, whole words, and
 * large messages with and without a part of a word at the end). A
 * message's producer sits at bit 40, so 7 bytes still hold it. */
static const size_t wrap_sizes[] = {7, 8, 9, 24, 257, 1024};

/* A message's value: its producer from bit 40 up, its number below. */
#define WRAP_MSG(p, s) (((uint64_t)(p) << 40) | (uint64_t)(s))
#define WRAP_NUM(v) ((v) & (((uint64_t)1 << 40) - 1))

/* Whether the counters have crossed the wrap since WRAP_START. */
static bool wrapped(const sl_ring *r)
{
    return atomic_load(&r->q.tail) < WRAP_START && atomic_load(&r->q.head) < WRAP_START;
}

/* ---- one thread against a sequential model --------------------------------- */

/* The displaced messages a target saw, in order (the drop function's, and
 * those handed back). */
typedef struct wrap_log {
    uint64_t v[4 * WRAP_BATCH];
    size_t n;
    size_t esz;
    bool bad; /* a torn message, or more than fit */
} wrap_log;

static void wrap_log_add(wrap_log *l, const unsigned char *m)
{
    uint64_t v = sl_test_seq_low(m, l->esz);
    if (!sl_test_seq_is(m, l->esz, v) || l->n == N_OF(l->v))
        l->bad = true;
    else
        l->v[l->n++] = v;
}

static void wrap_drop(void *elem, void *ctx) { wrap_log_add(ctx, elem); }

/* The ring under test, raw or the SL_RING channel, with one push, a batch
 * push, one pop and a batch pop each. */
typedef struct wrap_target {
    sl_ring raw;
    sl_chan *ch; /* NULL: the raw ring */
    wrap_log log;
} wrap_target;

static void wt_open(wrap_target *t, bool chan, size_t esz, size_t cap)
{
    memset(t, 0, sizeof *t);
    t->log.esz = esz;
    if (chan) {
        sl_chan_opts o = {.flavor = SL_RING, .elem_size = esz, .capacity = cap,
                          .drop = wrap_drop, .drop_ctx = &t->log};
        ck_assert_int_eq(sl__chan_new_at(&t->ch, &o, WRAP_START), SL_OK);
    } else {
        ck_assert_int_eq(sl__ring_init_at(&t->raw, esz, cap, WRAP_START), SL_OK);
    }
}

static const sl_ring *wt_ring(const wrap_target *t) { return t->ch ? &t->ch->q.ring : &t->raw; }

/* One push; `see`: the displaced message is handed back (raw, and
 * sl_chan_send_evict) or goes to the drop function (sl_chan_try_send);
 * without it the raw ring discards it unseen. */
static sl_status wt_push(wrap_target *t, const unsigned char *m, bool see)
{
    unsigned char ev[WRAP_ESZ_MAX];
    sl_status st;
    if (t->ch)
        st = see ? sl_chan_send_evict(t->ch, m, ev) : sl_chan_try_send(t->ch, m);
    else
        st = sl_ring_try_push(&t->raw, m, see ? ev : NULL);
    if (st == SL_EVICTED && see)
        wrap_log_add(&t->log, ev);
    return st;
}

/* n pushes; every displaced message is seen. How many went. */
static size_t wt_push_n(wrap_target *t, const unsigned char *m, size_t n)
{
    if (t->ch)
        return sl_chan_try_send_n(t->ch, m, n);
    size_t i = 0;
    while (i < n && wt_push(t, m + i * t->log.esz, true) != SL_EINVAL)
        i++;
    return i;
}

static sl_status wt_pop(wrap_target *t, unsigned char *out)
{
    return t->ch ? sl_chan_try_recv(t->ch, out) : sl_ring_try_pop(&t->raw, out);
}

static size_t wt_pop_n(wrap_target *t, unsigned char *out, size_t n)
{
    return t->ch ? sl_chan_try_recv_n(t->ch, out, n) : sl_ring_pop_n(&t->raw, out, n);
}

static size_t wt_len(const wrap_target *t)
{
    return t->ch ? sl_chan_len(t->ch) : sl_ring_len(&t->raw);
}

static void wt_close(wrap_target *t)
{
    if (t->ch)
        sl_chan_free(t->ch);
    else
        sl_ring_destroy(&t->raw);
}

/* The model: a deque of capacity `cap` whose push at capacity drops its
 * oldest, and the displacements it expects the target to have shown. */
typedef struct wrap_model {
    uint64_t q[WRAP_MAX_CAP];
    size_t first, n, cap;
    uint64_t drops[4 * WRAP_BATCH];
    size_t ndrops;
} wrap_model;

/* Returns whether it dropped one; the dropped message is expected in the
 * target's log when `seen`. */
static bool model_push(wrap_model *m, uint64_t v, bool seen)
{
    bool full = m->n == m->cap;
    if (full) {
        if (seen)
            m->drops[m->ndrops++] = m->q[m->first];
        m->first = (m->first + 1) % m->cap;
        m->n--;
    }
    m->q[(m->first + m->n++) % m->cap] = v;
    return full;
}

static uint64_t model_pop(wrap_model *m)
{
    uint64_t v = m->q[m->first];
    m->first = (m->first + 1) % m->cap;
    m->n--;
    return v;
}

/* A program of pushes (displacing and not), pops and batches, checked step
 * by step against the model: each answer, each message, each displaced
 * message handed over, the length. Then whatever is left, drained: every
 * message pushed was popped, displaced or left, exactly once. */
static void wrap_sequential(bool chan, size_t esz, size_t cap)
{
    char name[64];
    snprintf(name, sizeof name, "wrap %s cap %zu esz %zu", chan ? "chan" : "raw", cap, esz);
    const uint64_t seed = sl_test_seed("unit_ring", name);
    sl_test_rng rng;
    sl_test_rng_seed(&rng, seed);
    static wrap_target t;
    wt_open(&t, chan, esz, cap);
    wrap_model m = {.cap = cap};
    unsigned char buf[WRAP_BATCH * WRAP_ESZ_MAX];
    uint64_t pushed = 0, popped = 0, displaced = 0;
    const unsigned ops = (unsigned)sl_test_scaled(3000, 1000);
    unsigned bias = 50;
    for (unsigned op = 0; op < ops; op++) {
        if (op % 200 == 0) /* runs of mostly full (displacing) and mostly empty */
            bias = 15 + (unsigned)(sl_test_rng_next(&rng) % 70);
        unsigned x = (unsigned)(sl_test_rng_next(&rng) % 100);
        bool batch = sl_test_rng_next(&rng) % 4 == 0;
        size_t k = 1 + (size_t)(sl_test_rng_next(&rng) % WRAP_BATCH);
        if (x < bias && batch) {
            for (size_t i = 0; i < k; i++)
                sl_test_seq_fill(buf + i * esz, esz, pushed + i);
            size_t sent = wt_push_n(&t, buf, k);
            CHECK(sent == k, "%s seed %llu op %u: batch push of %zu sent %zu", name, ULL(seed),
                  op, k, sent);
            for (size_t i = 0; i < k; i++)
                displaced += model_push(&m, pushed++, true);
        } else if (x < bias) {
            bool see = sl_test_rng_next(&rng) % 4 != 0;
            sl_test_seq_fill(buf, esz, pushed);
            sl_status st = wt_push(&t, buf, see || chan); /* the channel always hands it on */
            bool full = model_push(&m, pushed++, see || chan);
            displaced += full;
            CHECK(st == (full ? SL_EVICTED : SL_OK), "%s seed %llu op %u: push with %zu of %zu "
                  "inside returned %s", name, ULL(seed), op, m.n - !full, cap, sl_status_str(st));
        } else if (batch) {
            size_t want = k < m.n ? k : m.n;
            size_t got = wt_pop_n(&t, buf, k);
            CHECK(got == want, "%s seed %llu op %u: batch pop of %zu with %zu inside took %zu",
                  name, ULL(seed), op, k, m.n, got);
            for (size_t i = 0; i < got; i++) {
                uint64_t v = model_pop(&m);
                CHECK(sl_test_seq_is(buf + i * esz, esz, v), "%s seed %llu op %u: batch pop "
                      "[%zu] is %llu, model %llu", name, ULL(seed), op, i,
                      ULL(sl_test_seq_low(buf + i * esz, esz)), ULL(v));
            }
            popped += got;
        } else {
            sl_status st = wt_pop(&t, buf);
            if (m.n == 0) {
                CHECK(st == SL_EMPTY, "%s seed %llu op %u: pop from empty returned %s", name,
                      ULL(seed), op, sl_status_str(st));
            } else {
                uint64_t v = model_pop(&m);
                CHECK(st == SL_OK && sl_test_seq_is(buf, esz, v), "%s seed %llu op %u: pop "
                      "returned %s / %llu, model %llu", name, ULL(seed), op, sl_status_str(st),
                      ULL(sl_test_seq_low(buf, esz)), ULL(v));
                popped++;
            }
        }
        CHECK(!t.log.bad && t.log.n == m.ndrops, "%s seed %llu op %u: %zu displaced seen, model "
              "%zu%s", name, ULL(seed), op, t.log.n, m.ndrops, t.log.bad ? " (torn)" : "");
        for (size_t i = 0; i < m.ndrops; i++)
            CHECK(t.log.v[i] == m.drops[i], "%s seed %llu op %u: displaced #%zu is %llu, model's "
                  "oldest %llu", name, ULL(seed), op, i, ULL(t.log.v[i]), ULL(m.drops[i]));
        t.log.n = m.ndrops = 0;
        size_t len = wt_len(&t);
        CHECK(len == m.n, "%s seed %llu op %u: len %zu, model %zu", name, ULL(seed), op, len, m.n);
    }
    CHECK(wrapped(wt_ring(&t)), "%s: %llu pushes did not cross the wrap", name, ULL(pushed));
    uint64_t left = m.n;
    while (m.n) {
        uint64_t v = model_pop(&m);
        CHECK(wt_pop(&t, buf) == SL_OK && sl_test_seq_is(buf, esz, v),
              "%s seed %llu: drain: not %llu", name, ULL(seed), ULL(v));
    }
    CHECK(wt_pop(&t, buf) == SL_EMPTY, "%s seed %llu: drained, not empty", name, ULL(seed));
    CHECK(popped + displaced + left == pushed, "%s: %llu popped + %llu displaced + %llu left, "
          "%llu pushed", name, ULL(popped), ULL(displaced), ULL(left), ULL(pushed));
    wt_close(&t);
}

START_TEST(test_wrap_model)
{
    const size_t cap = (size_t)_i;
    for (int s = 0; s < N_OF(wrap_sizes); s++) {
        wrap_sequential(false, wrap_sizes[s], cap);
        wrap_sequential(true, wrap_sizes[s], cap);
    }
}
END_TEST

/* ---- two producers and two consumers ---------------------------------------- */

/* Producers send with every form (a displaced message comes back to the
 * sender, or to the drop function, which runs in the sender's thread);
 * consumers receive one at a time and in batches. Every thread that takes
 * messages checks each (whole, from a producer, not taken before: a byte
 * per message, exchanged) and that each producer's numbers rise among the
 * messages it takes: the ring is FIFO, and one thread's takes, received or
 * displaced, are in position order. At the end every message sent was taken
 * exactly once. */
#define RACE_PRODUCERS 2
#define RACE_CONSUMERS 2

typedef struct wrap_race {
    sl_chan *ch;
    size_t esz, cap;
    uint64_t deadline, min_per, max_per;
    _Atomic unsigned char *seen[RACE_PRODUCERS];
    _Atomic uint64_t sent[RACE_PRODUCERS];
    _Atomic unsigned producers_done;
    _Atomic int bad;
    _Atomic uint64_t bad_value;
    sl_test_barrier start;
} wrap_race;

typedef struct wrap_taker {
    wrap_race *r;
    unsigned id;
    uint64_t last[RACE_PRODUCERS]; /* the last number taken from each (NONE: none yet) */
    uint64_t took;
    pthread_t tid;
} wrap_taker;

/* The sending thread's taker, for the drop function. */
static _Thread_local wrap_taker *race_self;

static void race_flag(wrap_race *r, int code, uint64_t v)
{
    int zero = 0;
    if (atomic_compare_exchange_strong(&r->bad, &zero, code))
        atomic_store(&r->bad_value, v);
}

static void race_take(wrap_taker *t, const unsigned char *m)
{
    wrap_race *r = t->r;
    uint64_t v = sl_test_seq_low(m, r->esz), p = v >> 40, s = WRAP_NUM(v);
    if (!sl_test_seq_is(m, r->esz, v))
        race_flag(r, 1, v);
    else if (p >= RACE_PRODUCERS || s >= r->max_per)
        race_flag(r, 2, v);
    else if (t->last[p] != NONE && s <= t->last[p])
        race_flag(r, 3, v);
    else if (atomic_exchange(&r->seen[p][s], 1) != 0)
        race_flag(r, 4, v);
    else {
        t->last[p] = s;
        t->took++;
    }
}

static void race_drop(void *elem, void *ctx)
{
    (void)ctx;
    race_take(race_self, elem);
}

static void *race_producer(void *arg)
{
    wrap_taker *t = arg;
    wrap_race *r = t->r;
    race_self = t;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, 0x5EED0 + t->id);
    unsigned char buf[8 * WRAP_ESZ_MAX], ev[WRAP_ESZ_MAX];
    sl_test_barrier_wait(&r->start);
    uint64_t s = 0;
    while (s < r->max_per && (s < r->min_per || sl_test_now_ns() < r->deadline) &&
           !atomic_load(&r->bad)) {
        unsigned form = (unsigned)(sl_test_rng_next(&rng) % 4);
        if (form == 0) {
            size_t k = 1 + (size_t)(sl_test_rng_next(&rng) % 8);
            if (k > r->max_per - s)
                k = (size_t)(r->max_per - s);
            for (size_t i = 0; i < k; i++)
                sl_test_seq_fill(buf + i * r->esz, r->esz, WRAP_MSG(t->id, s + i));
            size_t sent = sl_chan_try_send_n(r->ch, buf, k);
            if (sent != k)
                race_flag(r, 5, sent);
            s += k;
        } else {
            sl_test_seq_fill(buf, r->esz, WRAP_MSG(t->id, s));
            sl_status st = form == 1 ? sl_chan_send_evict(r->ch, buf, ev)
                                     : sl_chan_try_send(r->ch, buf);
            if (st == SL_EVICTED && form == 1)
                race_take(t, ev);
            else if (st != SL_OK && st != SL_EVICTED)
                race_flag(r, 6, (uint64_t)st);
            s++;
        }
        if (sl_chan_len(r->ch) > r->cap)
            race_flag(r, 7, sl_chan_len(r->ch));
        sl_test_maybe_stall(&rng, 1000);
    }
    atomic_store(&r->sent[t->id], s);
    atomic_fetch_add(&r->producers_done, 1);
    return NULL;
}

static void *race_consumer(void *arg)
{
    wrap_taker *t = arg;
    wrap_race *r = t->r;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, 0xC0DE0 + t->id);
    unsigned char buf[8 * WRAP_ESZ_MAX];
    sl_test_barrier_wait(&r->start);
    while (!atomic_load(&r->bad)) {
        /* Read before the pop: once every producer is done, every push is
         * complete, and a pop that finds the ring empty ends the run. */
        bool done = atomic_load(&r->producers_done) == RACE_PRODUCERS;
        size_t got;
        if (sl_test_rng_next(&rng) % 3 == 0) {
            got = sl_chan_try_recv_n(r->ch, buf, 1 + (size_t)(sl_test_rng_next(&rng) % 8));
        } else {
            sl_status st = sl_chan_try_recv(r->ch, buf);
            got = st == SL_OK;
            if (st != SL_OK && st != SL_EMPTY)
                race_flag(r, 8, (uint64_t)st);
        }
        for (size_t i = 0; i < got; i++)
            race_take(t, buf + i * r->esz);
        if (!got) {
            if (done)
                break;
            sched_yield();
        }
        sl_test_maybe_stall(&rng, 1000);
    }
    return NULL;
}

static void wrap_race_run(size_t esz, size_t cap, uint64_t run_ns)
{
    static wrap_race r;
    memset(&r, 0, sizeof r);
    r.esz = esz;
    r.cap = cap;
    r.min_per = sl_test_scaled(2000, 500); /* many laps past the wrap, however slow */
    r.max_per = (uint64_t)1 << 21;
    for (int p = 0; p < RACE_PRODUCERS; p++)
        r.seen[p] = xcalloc(r.max_per, 1);
    sl_chan_opts o = {.flavor = SL_RING, .elem_size = esz, .capacity = cap, .drop = race_drop};
    ck_assert_int_eq(sl__chan_new_at(&r.ch, &o, WRAP_START), SL_OK);
    sl_test_barrier_init(&r.start, RACE_PRODUCERS + RACE_CONSUMERS + 1);
    wrap_taker th[RACE_PRODUCERS + RACE_CONSUMERS + 1]; /* the last: this thread's drain */
    for (unsigned k = 0; k < N_OF(th); k++) {
        th[k] = (wrap_taker){.r = &r, .id = k < RACE_PRODUCERS ? k : k - RACE_PRODUCERS};
        for (int p = 0; p < RACE_PRODUCERS; p++)
            th[k].last[p] = NONE;
    }
    for (unsigned k = 0; k < RACE_PRODUCERS + RACE_CONSUMERS; k++)
        ck_assert_int_eq(pthread_create(&th[k].tid, NULL,
                                        k < RACE_PRODUCERS ? race_producer : race_consumer,
                                        &th[k]), 0);
    r.deadline = sl_test_now_ns() + run_ns; /* before the barrier releases them */
    sl_test_barrier_wait(&r.start);
    for (unsigned k = 0; k < RACE_PRODUCERS + RACE_CONSUMERS; k++)
        pthread_join(th[k].tid, NULL);
    sl_test_barrier_destroy(&r.start);
    /* What the consumers left (a race at the end), and the drop at free. */
    wrap_taker *me = &th[N_OF(th) - 1];
    race_self = me;
    unsigned char buf[WRAP_ESZ_MAX];
    while (sl_chan_try_recv(r.ch, buf) == SL_OK)
        race_take(me, buf);
    int bad = atomic_load(&r.bad);
    ck_assert_msg(bad == 0, "cap %zu esz %zu: problem %d with %#llx (1 torn, 2 foreign, "
                  "3 order, 4 twice, 5 batch count, 6/8 status, 7 len > cap)", cap, esz, bad,
                  ULL(atomic_load(&r.bad_value)));
    ck_assert_msg(wrapped(&r.ch->q.ring), "cap %zu esz %zu: did not cross the wrap", cap, esz);
    uint64_t took = 0, sent = 0;
    for (unsigned k = 0; k < N_OF(th); k++)
        took += th[k].took;
    for (int p = 0; p < RACE_PRODUCERS; p++) {
        uint64_t n = atomic_load(&r.sent[p]);
        sent += n;
        for (uint64_t s = 0; s < n; s++)
            CHECK(atomic_load(&r.seen[p][s]) == 1,
                  "cap %zu esz %zu: message %d/%llu neither received nor displaced", cap, esz, p,
                  ULL(s));
        free((void *)r.seen[p]);
    }
    ck_assert_uint_eq(took, sent);
    /* Still exact: capacity messages fit, the next displaces one. */
    memset(buf, 0, sizeof buf);
    for (size_t i = 0; i < cap; i++)
        ck_assert_int_eq(sl_chan_try_send(r.ch, buf), SL_OK);
    ck_assert_uint_eq(sl_chan_len(r.ch), cap);
    ck_assert_int_eq(sl_chan_send_evict(r.ch, buf, buf), SL_EVICTED);
    ck_assert_uint_eq(sl_chan_len(r.ch), cap);
    for (size_t i = 0; i < cap; i++) /* none left for the drop function at free */
        ck_assert_int_eq(sl_chan_try_recv(r.ch, buf), SL_OK);
    ck_assert_int_eq(sl_chan_try_recv(r.ch, buf), SL_EMPTY);
    sl_chan_free(r.ch);
}

START_TEST(test_wrap_race)
{
    const size_t cap = (size_t)_i;
    for (int s = 0; s < N_OF(wrap_sizes); s++)
        wrap_race_run(wrap_sizes[s], cap, 40 * MS);
}
END_TEST

/* ---- the stated bound on slot holders ------------------------------------ */

/* sluice/ring.h: with messages over 8 bytes a push is lock-free while fewer
 * than SL_RING_SPARE operations hold a slot, and yields past that until one
 * is done; a displacing send's drop function holds the displaced slot while
 * it runs. So, on a full ring: with SL_RING_SPARE - 1 sends parked in their
 * drop functions, one more send completes; with SL_RING_SPARE parked, one
 * more waits until a drop returns. Both edges of the bound, exactly. */
typedef struct bound_run {
    sl_chan *ch;
    atomic_int parked;  /* sends inside a drop function that waits */
    atomic_int release; /* lets them return */
    atomic_int done;    /* the probing send returned */
    atomic_int wrong;   /* sends that did not say SL_EVICTED */
} bound_run;

static _Thread_local bool bound_parks; /* this thread's drops wait for release */

static void bound_drop(void *elem, void *ctx)
{
    (void)elem;
    bound_run *b = ctx;
    if (!bound_parks)
        return;
    atomic_fetch_add(&b->parked, 1);
    while (!atomic_load(&b->release))
        sl_test_sleep_ns(MS / 4);
}

static void *bound_parker(void *arg)
{
    bound_run *b = arg;
    bound_parks = true;
    unsigned char m[16] = {1};
    if (sl_chan_send(b->ch, m) != SL_EVICTED)
        atomic_fetch_add(&b->wrong, 1);
    return NULL;
}

static void *bound_prober(void *arg)
{
    bound_run *b = arg;
    unsigned char m[16] = {2};
    if (sl_chan_send(b->ch, m) != SL_EVICTED)
        atomic_fetch_add(&b->wrong, 1);
    atomic_store(&b->done, 1);
    return NULL;
}

/* Whether one more send completes within `ns`, with `held` sends parked in
 * their drop functions (released afterwards either way). */
static bool bound_send_completes(size_t cap, int held, uint64_t ns)
{
    static bound_run b;
    memset(&b, 0, sizeof b);
    sl_chan_opts o = {.flavor = SL_RING, .elem_size = 16, .capacity = cap, .drop = bound_drop,
                      .drop_ctx = &b};
    ck_assert_int_eq(sl_chan_new(&b.ch, &o), SL_OK);
    unsigned char m[16] = {0};
    for (size_t i = 0; i < cap; i++)
        ck_assert_int_eq(sl_chan_send(b.ch, m), SL_OK);
    pthread_t *t = xmalloc((size_t)held * sizeof *t), probe;
    for (int i = 0; i < held; i++) {
        ck_assert_int_eq(pthread_create(&t[i], NULL, bound_parker, &b), 0);
        while (atomic_load(&b.parked) < i + 1) /* one at a time: each displaces */
            sched_yield();
    }
    ck_assert_int_eq(pthread_create(&probe, NULL, bound_prober, &b), 0);
    uint64_t end = sl_test_now_ns() + ns;
    while (!atomic_load(&b.done) && sl_test_now_ns() < end)
        sl_test_sleep_ns(MS / 4);
    bool completed = atomic_load(&b.done);
    atomic_store(&b.release, 1);
    pthread_join(probe, NULL);
    for (int i = 0; i < held; i++)
        pthread_join(t[i], NULL);
    ck_assert_int_eq(atomic_load(&b.wrong), 0);
    ck_assert_uint_eq(sl_chan_len(b.ch), cap);
    sl_chan_free(b.ch);
    free(t);
    return completed;
}

START_TEST(test_spare_bound)
{
    const size_t cap = _i ? 3 : 1;
    /* Below the bound a send must not wait at all; give it ample time. */
    ck_assert_msg(bound_send_completes(cap, SL_RING_SPARE - 1, 5000 * MS),
                  "cap %zu: a send waited with %d slots held", cap, SL_RING_SPARE - 1);
    /* At the bound it yields until a drop returns: it cannot have completed. */
    ck_assert_msg(!bound_send_completes(cap, SL_RING_SPARE, 100 * MS),
                  "cap %zu: a send completed with %d slots held: more spare slots than stated",
                  cap, SL_RING_SPARE);
}
END_TEST

static Suite *ring_suite(void)
{
    Suite *s = suite_create("ring");

    TCase *tc = tcase_create("raw");
    tcase_add_test(tc, test_raw_ring_null_args);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_init_bad_input);
    tcase_add_loop_test(tc, test_exact_capacity, 0, N_OF(caps));
    tcase_add_test(tc, test_pop_n);
    tcase_add_loop_test(tc, test_model_random, 0, N_OF(model_caps));
    tcase_add_test(tc, test_destroy_with_messages);
    tcase_add_test(tc, test_displaced_head_at_rest);
    suite_add_tcase(s, tc);

    tc = tcase_create("chan");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_chan_new);
    tcase_add_loop_test(tc, test_chan_exact_capacity, 0, N_OF(caps));
    tcase_add_test(tc, test_chan_send_never_blocks);
    tcase_add_test(tc, test_chan_send_evict);
    tcase_add_test(tc, test_chan_try_send_n);
    tcase_add_test(tc, test_chan_send_ptr_full);
    tcase_add_loop_test(tc, test_chan_model, 0, N_OF(chan_model_caps));
    tcase_add_loop_test(tc, test_chan_drop_at_free, 0, N_OF(caps));
    suite_add_tcase(s, tc);

    tc = tcase_create("blocking");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_chan_blocking_recv);
    tcase_add_test(tc, test_chan_close);
    tcase_add_loop_test(tc, test_spare_bound, 0, 2);
    suite_add_tcase(s, tc);

    tc = tcase_create("wrap");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_wrap_model, 1, WRAP_MAX_CAP + 1);
    tcase_add_loop_test(tc, test_wrap_race, 1, WRAP_MAX_CAP + 1);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sl_test_run(ring_suite());
}
