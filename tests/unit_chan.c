/*
 * tests/unit_chan.c — the channel façade (sluice/chan.h) over SL_SPSC and
 * SL_MPMC.
 *
 * Most tests are Check loop tests run once per flavour (_i indexes
 * `flavors`); the batch receive's (sl_chan_recv_n) run over all four
 * flavours, and so do the scenarios near the end that broke other channel
 * implementations (drops, len under churn, own send then try, timed forms
 * on two threads). Blocking behaviour is checked with a helper thread that runs
 * one call; "it is blocked" is judged by the call not having returned after a
 * short sleep, never by an upper bound on time.
 */
#include "harness.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sluice/chan.h>
#include "testing.h"
#include "sysops.h"
#include "../channels/chan_impl.h" /* misuse test: sees when a receiver has parked */

static const sl_flavor flavors[] = { SL_SPSC, SL_MPMC };
#define N_FLAVORS ((int)(sizeof flavors / sizeof flavors[0]))
#define FLAVOR (flavors[_i])

static sl_chan *mk(sl_flavor f, size_t cap)
{
    return sl_test_chan(f, sizeof(uint64_t), cap, NULL, NULL);
}

static void send_u64(sl_chan *ch, uint64_t v)
{
    ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
}

static uint64_t recv_u64(sl_chan *ch)
{
    uint64_t v = UINT64_MAX;
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_OK);
    return v;
}

/* ---- a thread that runs one channel call ----------------------------------- */

enum op_kind { OP_SEND, OP_RECV, OP_SEND_FOR, OP_RECV_FOR, OP_SEND_PTR };

typedef struct op_thread {
    pthread_t thr;
    sl_chan *ch;
    enum op_kind kind;
    uint64_t val;       /* message for the send forms */
    void *ptr;          /* for OP_SEND_PTR: the pointer moved */
    uint64_t timeout;   /* for the _for forms */
    uint64_t out;       /* what a receive got */
    sl_status st;
    _Atomic int done;
} op_thread;

static void *op_main(void *arg)
{
    op_thread *o = arg;
    switch (o->kind) {
    case OP_SEND: o->st = sl_chan_send(o->ch, &o->val); break;
    case OP_RECV: o->st = sl_chan_recv(o->ch, &o->out); break;
    case OP_SEND_FOR: o->st = sl_chan_send_for(o->ch, &o->val, o->timeout); break;
    case OP_RECV_FOR: o->st = sl_chan_recv_for(o->ch, &o->out, o->timeout); break;
    case OP_SEND_PTR: o->st = sl_chan_send_ptr(o->ch, &o->ptr); break;
    }
    atomic_store(&o->done, 1);
    return NULL;
}

static void op_start(op_thread *o, sl_chan *ch, enum op_kind kind, uint64_t val, uint64_t timeout)
{
    o->ch = ch;
    o->kind = kind;
    o->val = val;
    o->ptr = NULL;
    o->timeout = timeout;
    o->out = UINT64_MAX;
    o->st = (sl_status)-1;
    atomic_store(&o->done, 0);
    ck_assert_int_eq(pthread_create(&o->thr, NULL, op_main, o), 0);
}

static void op_start_ptr(op_thread *o, sl_chan *ch, void *p)
{
    o->ch = ch;
    o->kind = OP_SEND_PTR;
    o->ptr = p;
    o->out = UINT64_MAX;
    o->st = (sl_status)-1;
    atomic_store(&o->done, 0);
    ck_assert_int_eq(pthread_create(&o->thr, NULL, op_main, o), 0);
}

/* Gives the thread time to reach its wait, then checks it is still inside. */
static void op_expect_blocked(op_thread *o, const char *what)
{
    sl_test_sleep_ns(30 * MS);
    ck_assert_msg(atomic_load(&o->done) == 0, "%s returned (status %d) instead of blocking", what,
                  (int)o->st);
}

static sl_status op_join(op_thread *o)
{
    ck_assert_int_eq(pthread_join(o->thr, NULL), 0);
    ck_assert_int_eq(atomic_load(&o->done), 1);
    return o->st;
}

/* ---- creation -------------------------------------------------------------- */

START_TEST(test_new_bad_input)
{
    const sl_flavor f = FLAVOR;
    int sentinel;
    sl_chan *const mark = (sl_chan *)(void *)&sentinel;
    sl_chan *ch = mark;
    sl_chan_opts o = { .flavor = f, .elem_size = 8, .capacity = 4 };

    ck_assert_int_eq(sl_chan_new(NULL, &o), SL_EINVAL);
    ck_assert_int_eq(sl_chan_new(&ch, NULL), SL_EINVAL);
    ck_assert_ptr_eq(ch, mark);

    const size_t bad_sizes[] = { 0, SL_ELEM_MAX + 1, SIZE_MAX };
    for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++) {
        o = (sl_chan_opts){ .flavor = f, .elem_size = bad_sizes[i], .capacity = 4 };
        ck_assert_msg(sl_chan_new(&ch, &o) == SL_EINVAL, "elem_size %zu accepted", bad_sizes[i]);
        ck_assert_ptr_eq(ch, mark);
    }
    struct { size_t esz, cap; } bad_caps[] = {
        { 8, 0 }, { 1, 0 }, { 8, SIZE_MAX }, { 1, SIZE_MAX }, { 16, SIZE_MAX / 8 },
        { 1, SIZE_MAX / 2 + 2 }, { SL_ELEM_MAX, SIZE_MAX / SL_ELEM_MAX + 1 },
    };
    for (size_t i = 0; i < sizeof bad_caps / sizeof bad_caps[0]; i++) {
        if (f == SL_MPMC && bad_caps[i].cap == 0)
            continue; /* a rendezvous channel (unit_rendezvous.c) */
        o = (sl_chan_opts){ .flavor = f, .elem_size = bad_caps[i].esz, .capacity = bad_caps[i].cap };
        ck_assert_msg(sl_chan_new(&ch, &o) == SL_EINVAL, "esz %zu cap %zu accepted", bad_caps[i].esz,
                      bad_caps[i].cap);
        ck_assert_ptr_eq(ch, mark);
    }
}
END_TEST

START_TEST(test_new_bad_flavor)
{
    int sentinel;
    sl_chan *const mark = (sl_chan *)(void *)&sentinel;
    sl_chan *ch = mark;
    const int bad[] = { 0, 99, -1, 5, 1000 };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sl_chan_opts o = { .flavor = (sl_flavor)bad[i], .elem_size = 8, .capacity = 4 };
        ck_assert_msg(sl_chan_new(&ch, &o) == SL_EINVAL, "flavor %d accepted", bad[i]);
        ck_assert_ptr_eq(ch, mark);
    }
}
END_TEST

START_TEST(test_new_reports_opts)
{
    const sl_flavor f = FLAVOR;
    const size_t caps[] = { 1, 2, 3, 5, 7, 8, 100, 1000 };
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        sl_chan *ch = sl_test_chan(f, 24, caps[i], NULL, NULL);
        ck_assert_uint_eq(sl_chan_cap(ch), caps[i]);
        ck_assert_int_eq(sl_chan_flavor(ch), f);
        ck_assert_uint_eq(sl_chan_elem_size(ch), 24);
        ck_assert_uint_eq(sl_chan_len(ch), 0);
        ck_assert(!sl_chan_is_closed(ch));
        sl_chan_free(ch);
    }
    sl_chan *ch = sl_test_chan(f, SL_ELEM_MAX, 2, NULL, NULL);
    ck_assert_uint_eq(sl_chan_elem_size(ch), SL_ELEM_MAX);
    unsigned char *in = malloc(SL_ELEM_MAX), *out = calloc(1, SL_ELEM_MAX);
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(out);
    for (size_t k = 0; k < SL_ELEM_MAX; k++) in[k] = (unsigned char)(k * 7 + 3);
    ck_assert_int_eq(sl_chan_send(ch, in), SL_OK);
    ck_assert_int_eq(sl_chan_recv(ch, out), SL_OK);
    ck_assert(memcmp(in, out, SL_ELEM_MAX) == 0);
    free(in);
    free(out);
    sl_chan_free(ch);
}
END_TEST

/* ---- bad arguments on calls -------------------------------------------------- */

START_TEST(test_null_channel)
{
    uint64_t v = 1, out = 2, ev = 3;
    void *p = &v;
    ck_assert_int_eq(sl_chan_send(NULL, &v), SL_EINVAL);
    ck_assert_int_eq(sl_chan_try_send(NULL, &v), SL_EINVAL);
    ck_assert_int_eq(sl_chan_send_for(NULL, &v, 10 * MS), SL_EINVAL);
    ck_assert_int_eq(sl_chan_send_for(NULL, &v, SL_FOREVER), SL_EINVAL);
    ck_assert_int_eq(sl_chan_send_ptr(NULL, &p), SL_EINVAL);
    ck_assert_ptr_eq(p, &v);
    ck_assert_int_eq(sl_chan_send_evict(NULL, &v, &ev), SL_EINVAL);
    ck_assert_int_eq(sl_chan_recv(NULL, &out), SL_EINVAL);
    ck_assert_int_eq(sl_chan_try_recv(NULL, &out), SL_EINVAL);
    ck_assert_int_eq(sl_chan_recv_for(NULL, &out, 10 * MS), SL_EINVAL);
    ck_assert_int_eq(sl_chan_recv_for(NULL, &out, SL_FOREVER), SL_EINVAL);
    ck_assert_uint_eq(sl_chan_try_send_n(NULL, &v, 1), 0);
    ck_assert_uint_eq(sl_chan_try_recv_n(NULL, &out, 1), 0);
    ck_assert(!sl_chan_is_closed(NULL));
    ck_assert_uint_eq(sl_chan_len(NULL), 0);
    ck_assert_uint_eq(sl_chan_cap(NULL), 0);
    ck_assert_int_eq((int)sl_chan_flavor(NULL), 0);
    ck_assert_uint_eq(sl_chan_elem_size(NULL), 0);
    sl_chan_close(NULL);
    sl_chan_free(NULL);
    ck_assert_uint_eq(out, 2);
}
END_TEST

START_TEST(test_null_elem_consumes_nothing)
{
    const sl_flavor f = FLAVOR;
    sl_chan *ch = mk(f, 4);
    send_u64(ch, 11);
    send_u64(ch, 22);
    ck_assert_int_eq(sl_chan_send(ch, NULL), SL_EINVAL);
    ck_assert_int_eq(sl_chan_try_send(ch, NULL), SL_EINVAL);
    ck_assert_int_eq(sl_chan_send_for(ch, NULL, 10 * MS), SL_EINVAL);
    ck_assert_int_eq(sl_chan_send_ptr(ch, NULL), SL_EINVAL);
    ck_assert_uint_eq(sl_chan_try_send_n(ch, NULL, 2), 0);
    ck_assert_uint_eq(sl_chan_len(ch), 2);
    ck_assert_int_eq(sl_chan_recv(ch, NULL), SL_EINVAL);
    ck_assert_int_eq(sl_chan_try_recv(ch, NULL), SL_EINVAL);
    ck_assert_int_eq(sl_chan_recv_for(ch, NULL, 10 * MS), SL_EINVAL);
    ck_assert_int_eq(sl_chan_recv_for(ch, NULL, SL_FOREVER), SL_EINVAL);
    ck_assert_uint_eq(sl_chan_try_recv_n(ch, NULL, 2), 0);
    ck_assert_uint_eq(sl_chan_len(ch), 2);
    /* n messages of 8 bytes beyond SIZE_MAX bytes: no array holds them, so
     * neither batch takes any (the buffers hold what an unchecked batch
     * would move here: the two queued, or the two that fit). */
    uint64_t batch[4] = { 0 };
    ck_assert_uint_eq(sl_chan_try_recv_n(ch, batch, SIZE_MAX / 4), 0);
    ck_assert_uint_eq(sl_chan_try_send_n(ch, batch, SIZE_MAX / 4), 0);
    ck_assert_uint_eq(batch[0], 0);
    ck_assert_uint_eq(sl_chan_len(ch), 2);
    ck_assert_uint_eq(recv_u64(ch), 11);
    ck_assert_uint_eq(recv_u64(ch), 22);
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_null_elem_never_blocks)
{
    /* Bad input is refused before any wait: a NULL buffer on an empty or full
     * channel must not park (a hang trips the Check time-out). */
    const sl_flavor f = FLAVOR;
    sl_chan *ch = mk(f, 2);
    ck_assert_int_eq(sl_chan_recv(ch, NULL), SL_EINVAL);
    ck_assert_int_eq(sl_chan_recv_for(ch, NULL, SL_FOREVER), SL_EINVAL);
    send_u64(ch, 1);
    send_u64(ch, 2);
    ck_assert_int_eq(sl_chan_send(ch, NULL), SL_EINVAL);
    ck_assert_int_eq(sl_chan_send_for(ch, NULL, SL_FOREVER), SL_EINVAL);
    ck_assert_uint_eq(sl_chan_len(ch), 2);
    sl_chan_free(ch);
}
END_TEST

/* ---- capacity, order, empty ------------------------------------------------- */

START_TEST(test_exact_capacity)
{
    const sl_flavor f = FLAVOR;
    const size_t caps[] = { 1, 2, 3, 5, 7, 8, 100, 1000 };
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        const size_t cap = caps[c];
        sl_chan *ch = mk(f, cap);
        for (int round = 0; round < 3; round++) {
            for (size_t i = 0; i < cap; i++) {
                uint64_t v = round * 10000 + i;
                ck_assert_msg(sl_chan_try_send(ch, &v) == SL_OK, "cap %zu: send %zu refused", cap, i);
                ck_assert_uint_eq(sl_chan_len(ch), i + 1);
            }
            uint64_t extra = 999999;
            ck_assert_msg(sl_chan_try_send(ch, &extra) == SL_FULL, "cap %zu: one too many accepted", cap);
            ck_assert_uint_eq(sl_chan_len(ch), cap);
            ck_assert_uint_eq(sl_chan_cap(ch), cap);
            for (size_t i = 0; i < cap; i++) {
                uint64_t v = recv_u64(ch);
                ck_assert_uint_eq(v, round * 10000 + i);
            }
            uint64_t v = 5;
            ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_EMPTY);
            ck_assert_uint_eq(sl_chan_len(ch), 0);
        }
        sl_chan_free(ch);
    }
}
END_TEST

START_TEST(test_exact_capacity_near_wrap)
{
    const sl_flavor f = FLAVOR;
    const size_t caps[] = { 1, 3, 8, 100 };
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        const size_t cap = caps[c];
        sl_chan_opts o = { .flavor = f, .elem_size = 8, .capacity = cap };
        sl_chan *ch = NULL;
        ck_assert_int_eq(sl__chan_new_at(&ch, &o, UINT64_MAX - 50), SL_OK);
        uint64_t next_in = 0, next_out = 0;
        for (int round = 0; round < 300; round++) {
            while (sl_chan_try_send(ch, &next_in) == SL_OK) next_in++;
            ck_assert_uint_eq(next_in - next_out, cap);
            ck_assert_uint_eq(sl_chan_len(ch), cap);
            size_t take = 1 + (size_t)round % cap;
            for (size_t k = 0; k < take; k++) {
                uint64_t v = UINT64_MAX;
                ck_assert_int_eq(sl_chan_recv(ch, &v), SL_OK);
                ck_assert_uint_eq(v, next_out);
                next_out++;
            }
        }
        sl_chan_free(ch);
    }
}
END_TEST

START_TEST(test_empty_try_recv)
{
    const sl_flavor f = FLAVOR;
    sl_chan *ch = mk(f, 3);
    uint64_t v = 77;
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_EMPTY);
    ck_assert_uint_eq(sl_chan_try_recv_n(ch, &v, 1), 0);
    send_u64(ch, 1);
    ck_assert_uint_eq(recv_u64(ch), 1);
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_EMPTY);
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_elem_sizes)
{
    const sl_flavor f = FLAVOR;
    const size_t sizes[] = { 1, 3, 4, 8, 16, 17, 64, 256, 1000 };
    const size_t guard = 16, cap = 4;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const size_t esz = sizes[s];
        sl_chan *ch = sl_test_chan(f, esz, cap, NULL, NULL);
        unsigned char *in = malloc(esz * cap), *out = malloc(esz * cap + guard);
        ck_assert_ptr_nonnull(in);
        ck_assert_ptr_nonnull(out);
        for (unsigned round = 0; round < 20; round++) {
            for (size_t i = 0; i < esz * cap; i++) in[i] = (unsigned char)(round * 31 + i * 13 + 1);
            /* One at a time, blocking forms. */
            for (size_t m = 0; m < cap; m++) ck_assert_int_eq(sl_chan_send(ch, in + m * esz), SL_OK);
            ck_assert_int_eq(sl_chan_try_send(ch, in), SL_FULL);
            for (size_t m = 0; m < cap; m++) {
                memset(out, 0xEE, esz + guard);
                ck_assert_int_eq(sl_chan_recv(ch, out), SL_OK);
                ck_assert_msg(memcmp(out, in + m * esz, esz) == 0, "esz %zu: message %zu corrupted", esz, m);
                for (size_t g = 0; g < guard; g++)
                    ck_assert_msg(out[esz + g] == 0xEE, "esz %zu: recv wrote past the message", esz);
            }
            /* Batches. */
            ck_assert_uint_eq(sl_chan_try_send_n(ch, in, cap), cap);
            memset(out, 0xEE, esz * cap + guard);
            ck_assert_uint_eq(sl_chan_try_recv_n(ch, out, cap + 3), cap);
            ck_assert(memcmp(out, in, esz * cap) == 0);
            for (size_t g = 0; g < guard; g++)
                ck_assert_msg(out[esz * cap + g] == 0xEE, "esz %zu: recv_n wrote past the batch", esz);
        }
        free(in);
        free(out);
        sl_chan_free(ch);
    }
}
END_TEST

START_TEST(test_batches)
{
    const sl_flavor f = FLAVOR;
    sl_chan *ch = mk(f, 10);
    uint64_t in[32], out[32];
    for (int i = 0; i < 32; i++) in[i] = 500 + (uint64_t)i;
    ck_assert_uint_eq(sl_chan_try_send_n(ch, in, 0), 0);
    ck_assert_uint_eq(sl_chan_try_recv_n(ch, out, 0), 0);
    ck_assert_uint_eq(sl_chan_try_send_n(ch, in, 7), 7);
    ck_assert_uint_eq(sl_chan_try_send_n(ch, in + 7, 7), 3); /* partial */
    ck_assert_uint_eq(sl_chan_len(ch), 10);
    ck_assert_uint_eq(sl_chan_try_send_n(ch, in + 10, 5), 0); /* full */
    ck_assert_uint_eq(sl_chan_len(ch), 10);
    for (int i = 0; i < 32; i++) out[i] = 0;
    ck_assert_uint_eq(sl_chan_try_recv_n(ch, out, 4), 4);
    for (int i = 0; i < 4; i++) ck_assert_uint_eq(out[i], 500 + (uint64_t)i);
    ck_assert_uint_eq(out[4], 0);
    ck_assert_uint_eq(sl_chan_try_send_n(ch, in + 10, 6), 4); /* partial across the wrap */
    ck_assert_uint_eq(sl_chan_try_recv_n(ch, out, 32), 10);
    for (int i = 0; i < 10; i++) ck_assert_uint_eq(out[i], 504 + (uint64_t)i);
    ck_assert_uint_eq(sl_chan_try_recv_n(ch, out, 32), 0);
    ck_assert_uint_eq(sl_chan_len(ch), 0);
    /* Closed: nothing goes in; what is inside still comes out. */
    ck_assert_uint_eq(sl_chan_try_send_n(ch, in, 3), 3);
    sl_chan_close(ch);
    ck_assert_uint_eq(sl_chan_try_send_n(ch, in, 3), 0);
    ck_assert_uint_eq(sl_chan_len(ch), 3);
    ck_assert_uint_eq(sl_chan_try_recv_n(ch, out, 2), 2);
    ck_assert_uint_eq(out[0], 500);
    ck_assert_uint_eq(out[1], 501);
    ck_assert_uint_eq(sl_chan_try_recv_n(ch, out, 5), 1);
    ck_assert_uint_eq(out[0], 502);
    ck_assert_uint_eq(sl_chan_try_recv_n(ch, out, 5), 0);
    sl_chan_free(ch);
}
END_TEST

/* ---- timeouts ------------------------------------------------------------------ */

START_TEST(test_send_for_full_times_out)
{
    const sl_flavor f = FLAVOR;
    sl_chan *ch = mk(f, 2);
    send_u64(ch, 1);
    send_u64(ch, 2);
    const uint64_t timeouts[] = { 1 * MS, 20 * MS };
    for (size_t i = 0; i < 2; i++) {
        uint64_t v = 42, t0 = sl_test_now_ns();
        sl_status st = sl_chan_send_for(ch, &v, timeouts[i]);
        uint64_t el = sl_test_now_ns() - t0;
        ck_assert_int_eq(st, SL_TIMEDOUT);
        ck_assert_msg(el >= timeouts[i], "send_for timed out after %llu ns, asked %llu",
                      (unsigned long long)el, (unsigned long long)timeouts[i]);
        ck_assert_uint_eq(sl_chan_len(ch), 2);
    }
    ck_assert_uint_eq(recv_u64(ch), 1);
    ck_assert_uint_eq(recv_u64(ch), 2);
    uint64_t v;
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_EMPTY); /* the timed-out 42 is not inside */
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_recv_for_empty_times_out)
{
    const sl_flavor f = FLAVOR;
    sl_chan *ch = mk(f, 2);
    const uint64_t timeouts[] = { 1 * MS, 20 * MS };
    for (size_t i = 0; i < 2; i++) {
        uint64_t v = 0, t0 = sl_test_now_ns();
        sl_status st = sl_chan_recv_for(ch, &v, timeouts[i]);
        uint64_t el = sl_test_now_ns() - t0;
        ck_assert_int_eq(st, SL_TIMEDOUT);
        ck_assert_msg(el >= timeouts[i], "recv_for timed out after %llu ns, asked %llu",
                      (unsigned long long)el, (unsigned long long)timeouts[i]);
        ck_assert_uint_eq(sl_chan_len(ch), 0);
    }
    /* The channel still works after a time-out. */
    send_u64(ch, 9);
    uint64_t v = 0;
    ck_assert_int_eq(sl_chan_recv_for(ch, &v, 20 * MS), SL_OK);
    ck_assert_uint_eq(v, 9);
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_timeout_zero_tries_once)
{
    const sl_flavor f = FLAVOR;
    sl_chan *ch = mk(f, 1);
    uint64_t v = 5, out = 0;
    ck_assert_int_eq(sl_chan_recv_for(ch, &out, 0), SL_TIMEDOUT);
    ck_assert_int_eq(sl_chan_send_for(ch, &v, 0), SL_OK);
    ck_assert_uint_eq(sl_chan_len(ch), 1);
    v = 6;
    ck_assert_int_eq(sl_chan_send_for(ch, &v, 0), SL_TIMEDOUT);
    ck_assert_uint_eq(sl_chan_len(ch), 1);
    ck_assert_int_eq(sl_chan_recv_for(ch, &out, 0), SL_OK);
    ck_assert_uint_eq(out, 5);
    ck_assert_int_eq(sl_chan_recv_for(ch, &out, 0), SL_TIMEDOUT);
    /* And SL_FOREVER on a ready channel just works. */
    ck_assert_int_eq(sl_chan_send_for(ch, &v, SL_FOREVER), SL_OK);
    ck_assert_int_eq(sl_chan_recv_for(ch, &out, SL_FOREVER), SL_OK);
    ck_assert_uint_eq(out, 6);
    /* Closed beats time-out. */
    sl_chan_close(ch);
    ck_assert_int_eq(sl_chan_recv_for(ch, &out, 0), SL_CLOSED);
    ck_assert_int_eq(sl_chan_send_for(ch, &v, 0), SL_CLOSED);
    ck_assert_int_eq(sl_chan_recv_for(ch, &out, 20 * MS), SL_CLOSED);
    ck_assert_int_eq(sl_chan_send_for(ch, &v, 20 * MS), SL_CLOSED);
    sl_chan_free(ch);
}
END_TEST

/* ---- close ----------------------------------------------------------------------- */

START_TEST(test_close_semantics)
{
    const sl_flavor f = FLAVOR;
    sl_chan *ch = mk(f, 4);
    ck_assert(!sl_chan_is_closed(ch));
    send_u64(ch, 1);
    send_u64(ch, 2);
    send_u64(ch, 3);
    sl_chan_close(ch);
    ck_assert(sl_chan_is_closed(ch));
    sl_chan_close(ch); /* idempotent */
    ck_assert(sl_chan_is_closed(ch));
    ck_assert_uint_eq(sl_chan_len(ch), 3);

    uint64_t v = 100;
    void *p = &v;
    ck_assert_int_eq(sl_chan_send(ch, &v), SL_CLOSED);
    ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_CLOSED);
    ck_assert_int_eq(sl_chan_send_for(ch, &v, 10 * MS), SL_CLOSED);
    ck_assert_int_eq(sl_chan_send_for(ch, &v, SL_FOREVER), SL_CLOSED);
    ck_assert_uint_eq(sl_chan_try_send_n(ch, &v, 1), 0);
    ck_assert_int_eq(sl_chan_send_ptr(ch, &p), SL_CLOSED); /* elem_size is sizeof(void *) */
    ck_assert_ptr_eq(p, &v);
    ck_assert_uint_eq(sl_chan_len(ch), 3);

    /* Receivers drain, then see SL_CLOSED from every form. */
    ck_assert_int_eq(sl_chan_recv(ch, &v), SL_OK);
    ck_assert_uint_eq(v, 1);
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_OK);
    ck_assert_uint_eq(v, 2);
    ck_assert_int_eq(sl_chan_recv_for(ch, &v, 10 * MS), SL_OK);
    ck_assert_uint_eq(v, 3);
    ck_assert_uint_eq(sl_chan_len(ch), 0);
    ck_assert_int_eq(sl_chan_recv(ch, &v), SL_CLOSED);
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_CLOSED);
    ck_assert_int_eq(sl_chan_recv_for(ch, &v, 10 * MS), SL_CLOSED);
    ck_assert_int_eq(sl_chan_recv_for(ch, &v, SL_FOREVER), SL_CLOSED);
    ck_assert_int_eq(sl_chan_recv_for(ch, &v, 0), SL_CLOSED);
    ck_assert_uint_eq(sl_chan_try_recv_n(ch, &v, 4), 0);
    sl_chan_close(ch);
    ck_assert(sl_chan_is_closed(ch));
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_close_full_channel)
{
    const sl_flavor f = FLAVOR;
    sl_chan *ch = mk(f, 2);
    send_u64(ch, 1);
    send_u64(ch, 2);
    sl_chan_close(ch);
    uint64_t v = 3;
    ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_CLOSED); /* not SL_FULL */
    ck_assert_int_eq(sl_chan_send(ch, &v), SL_CLOSED);     /* and no wait */
    ck_assert_uint_eq(sl_chan_len(ch), 2);
    ck_assert_uint_eq(recv_u64(ch), 1);
    ck_assert_uint_eq(recv_u64(ch), 2);
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_CLOSED);
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_close_empty_then_recv)
{
    const sl_flavor f = FLAVOR;
    sl_chan *ch = mk(f, 2);
    sl_chan_close(ch);
    uint64_t v;
    ck_assert_int_eq(sl_chan_recv(ch, &v), SL_CLOSED); /* no wait */
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_CLOSED);
    ck_assert_uint_eq(sl_chan_len(ch), 0);
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_close_wakes_blocked_receiver)
{
    const sl_flavor f = FLAVOR;
    sl_chan *ch = mk(f, 4);
    op_thread o;
    op_start(&o, ch, OP_RECV, 0, 0);
    op_expect_blocked(&o, "recv on an empty channel");
    sl_chan_close(ch);
    ck_assert_int_eq(op_join(&o), SL_CLOSED);
    sl_chan_free(ch);

    /* The timed form too (it would say SL_TIMEDOUT if close did not wake it). */
    ch = mk(f, 4);
    op_start(&o, ch, OP_RECV_FOR, 0, 60 * SEC);
    op_expect_blocked(&o, "recv_for on an empty channel");
    sl_chan_close(ch);
    ck_assert_int_eq(op_join(&o), SL_CLOSED);
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_close_wakes_blocked_sender)
{
    const sl_flavor f = FLAVOR;
    const size_t cap = 3;
    for (int timed = 0; timed < 2; timed++) {
        sl_chan *ch = mk(f, cap);
        for (uint64_t i = 0; i < cap; i++) send_u64(ch, i);
        op_thread o;
        op_start(&o, ch, timed ? OP_SEND_FOR : OP_SEND, 0xBAD, 60 * SEC);
        op_expect_blocked(&o, timed ? "send_for on a full channel" : "send on a full channel");
        ck_assert_uint_eq(sl_chan_len(ch), cap);
        sl_chan_close(ch);
        ck_assert_int_eq(op_join(&o), SL_CLOSED);
        ck_assert_uint_eq(sl_chan_len(ch), cap);
        /* The blocked message was not consumed: only the first cap come out. */
        for (uint64_t i = 0; i < cap; i++) ck_assert_uint_eq(recv_u64(ch), i);
        uint64_t v;
        ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_CLOSED);
        sl_chan_free(ch);
    }
}
END_TEST

START_TEST(test_close_wakes_many_mpmc)
{
    /* MPMC: several blocked receivers on one channel, several blocked senders
     * on another; one close wakes them all. */
    enum { N = 4 };
    sl_chan *rx = mk(SL_MPMC, 2), *tx = mk(SL_MPMC, 2);
    send_u64(tx, 1);
    send_u64(tx, 2);
    op_thread r[N], s[N];
    for (int i = 0; i < N; i++) {
        op_start(&r[i], rx, i % 2 ? OP_RECV_FOR : OP_RECV, 0, 60 * SEC);
        op_start(&s[i], tx, i % 2 ? OP_SEND_FOR : OP_SEND, 1000 + (uint64_t)i, 60 * SEC);
    }
    sl_test_sleep_ns(30 * MS);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(atomic_load(&r[i].done), 0);
        ck_assert_int_eq(atomic_load(&s[i].done), 0);
    }
    sl_chan_close(rx);
    sl_chan_close(tx);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(op_join(&r[i]), SL_CLOSED);
        ck_assert_int_eq(op_join(&s[i]), SL_CLOSED);
    }
    ck_assert_uint_eq(sl_chan_len(tx), 2);
    ck_assert_uint_eq(recv_u64(tx), 1);
    ck_assert_uint_eq(recv_u64(tx), 2);
    sl_chan_free(rx);
    sl_chan_free(tx);
}
END_TEST

/* ---- blocking hand-offs (Go's TestChan style) --------------------------------- */

START_TEST(test_blocking_send_completes_after_recv)
{
    const sl_flavor f = FLAVOR;
    for (size_t cap = 1; cap <= 4; cap++) {
        for (int timed = 0; timed < 2; timed++) {
            sl_chan *ch = mk(f, cap);
            for (uint64_t i = 0; i < cap; i++) send_u64(ch, i);
            op_thread o;
            op_start(&o, ch, timed ? OP_SEND_FOR : OP_SEND, 777, 60 * SEC);
            op_expect_blocked(&o, "send on a full channel");
            ck_assert_uint_eq(sl_chan_len(ch), cap);
            ck_assert_uint_eq(recv_u64(ch), 0);
            ck_assert_int_eq(op_join(&o), SL_OK);
            ck_assert_uint_eq(sl_chan_len(ch), cap);
            for (uint64_t i = 1; i < cap; i++) ck_assert_uint_eq(recv_u64(ch), i);
            ck_assert_uint_eq(recv_u64(ch), 777);
            sl_chan_free(ch);
        }
    }
}
END_TEST

START_TEST(test_blocking_recv_completes_after_send)
{
    const sl_flavor f = FLAVOR;
    for (size_t cap = 1; cap <= 4; cap++) {
        for (int timed = 0; timed < 2; timed++) {
            sl_chan *ch = mk(f, cap);
            op_thread o;
            op_start(&o, ch, timed ? OP_RECV_FOR : OP_RECV, 0, 60 * SEC);
            op_expect_blocked(&o, "recv on an empty channel");
            send_u64(ch, 4242 + cap);
            ck_assert_int_eq(op_join(&o), SL_OK);
            ck_assert_uint_eq(o.out, 4242 + cap);
            ck_assert_uint_eq(sl_chan_len(ch), 0);
            sl_chan_free(ch);
        }
    }
}
END_TEST

/* A receiver whose blocking receives found a message at every first try
 * (a full receive streak: its next wait spins patiently, chan_wait.c) still
 * waits correctly: a blocking receive on the now empty channel gets the
 * message sent later, and a timed one times out, no earlier than asked. */
typedef struct streak_ctx {
    sl_chan *ch;
    int timed; /* the last receive: sl_chan_recv, or sl_chan_recv_for */
    uint64_t n, sum, last;
    sl_status st;
    _Atomic int draining_done;
} streak_ctx;

static void *streak_receiver(void *arg)
{
    streak_ctx *c = arg;
    for (uint64_t i = 0; i < c->n; i++) {
        uint64_t v;
        if (sl_chan_recv(c->ch, &v) != SL_OK)
            return (void *)1;
        c->sum += v;
    }
    atomic_store(&c->draining_done, 1);
    c->st = c->timed ? sl_chan_recv_for(c->ch, &c->last, 60 * SEC) : sl_chan_recv(c->ch, &c->last);
    return NULL;
}

START_TEST(test_recv_after_streak)
{
    const sl_flavor f = flavors[_i % N_FLAVORS];
    const int timed = _i / N_FLAVORS;
    const uint64_t n = 40;
    sl_chan *ch = mk(f, 64);
    for (uint64_t i = 1; i <= n; i++)
        send_u64(ch, i);
    streak_ctx c = {.ch = ch, .timed = timed, .n = n};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, streak_receiver, &c), 0);
    while (!atomic_load(&c.draining_done))
        sl_test_sleep_ns(MS);
    sl_test_sleep_ns(30 * MS); /* into its wait */
    send_u64(ch, 777);
    void *rv = (void *)1;
    ck_assert_int_eq(pthread_join(t, &rv), 0);
    ck_assert_ptr_null(rv);
    ck_assert_uint_eq(c.sum, n * (n + 1) / 2);
    ck_assert_int_eq(c.st, SL_OK);
    ck_assert_uint_eq(c.last, 777);
    /* This thread's own streak, then a timed receive on the empty channel. */
    for (uint64_t i = 0; i < n; i++)
        send_u64(ch, i);
    for (uint64_t i = 0, v; i < n; i++)
        ck_assert_int_eq(sl_chan_recv(ch, &v), SL_OK);
    uint64_t v, t0 = sl_test_now_ns();
    ck_assert_int_eq(sl_chan_recv_for(ch, &v, 5 * MS), SL_TIMEDOUT);
    ck_assert_uint_ge(sl_test_now_ns() - t0, 5 * MS);
    sl_chan_free(ch);
}
END_TEST

typedef struct stream_ctx {
    sl_chan *ch;
    uint64_t n;
    int mode;
} stream_ctx;

static void *stream_sender(void *arg)
{
    stream_ctx *s = arg;
    for (uint64_t i = 0; i < s->n; i++) {
        sl_status st;
        switch ((i + (uint64_t)s->mode) % 3) {
        case 0: st = sl_chan_send(s->ch, &i); break;
        case 1: st = sl_chan_send_for(s->ch, &i, SL_FOREVER); break;
        default:
            /* Yield: two spinning threads sharing one core on a loaded
             * machine would otherwise pay a time slice per message. */
            while ((st = sl_chan_try_send(s->ch, &i)) == SL_FULL)
                sched_yield();
        }
        if (st != SL_OK) return (void *)1;
    }
    return NULL;
}

START_TEST(test_stream_fifo)
{
    const sl_flavor f = FLAVOR;
    const size_t caps[] = { 1, 2, 7, 64 };
    for (size_t c = 0; c < 4; c++) {
        stream_ctx s = { .ch = mk(f, caps[c]), .n = sl_test_scaled(20000, 1000), .mode = (int)c };
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, stream_sender, &s), 0);
        for (uint64_t i = 0; i < s.n; i++) {
            uint64_t v = UINT64_MAX;
            sl_status st;
            switch (i % 3) {
            case 0: st = sl_chan_recv(s.ch, &v); break;
            case 1: st = sl_chan_recv_for(s.ch, &v, 30 * SEC); break;
            default:
                while ((st = sl_chan_try_recv(s.ch, &v)) == SL_EMPTY)
                    sched_yield();
            }
            ck_assert_int_eq(st, SL_OK);
            ck_assert_msg(v == i, "cap %zu: got %llu, expected %llu", caps[c], (unsigned long long)v,
                          (unsigned long long)i);
            ck_assert_uint_le(sl_chan_len(s.ch), caps[c]);
        }
        void *ret = (void *)2;
        ck_assert_int_eq(pthread_join(t, &ret), 0);
        ck_assert_ptr_null(ret);
        sl_chan_close(s.ch);
        uint64_t v;
        ck_assert_int_eq(sl_chan_recv(s.ch, &v), SL_CLOSED);
        sl_chan_free(s.ch);
    }
}
END_TEST

/* MPMC: blocking senders and receivers, every message exactly once, and a
 * watcher that never sees len above cap. */
typedef struct mpmc_ctx {
    sl_chan *ch;
    uint64_t per_sender;
    unsigned senders;
    _Atomic unsigned char *seen;
    _Atomic int bad;
    _Atomic int stop_watch;
} mpmc_ctx;

typedef struct mpmc_arg { mpmc_ctx *c; unsigned id; } mpmc_arg;

static void *mpmc_sender(void *arg)
{
    mpmc_arg *a = arg;
    for (uint64_t i = 0; i < a->c->per_sender; i++) {
        uint64_t v = (uint64_t)a->id * a->c->per_sender + i;
        if (sl_chan_send(a->c->ch, &v) != SL_OK) atomic_store(&a->c->bad, 1);
    }
    return NULL;
}

static void *mpmc_receiver(void *arg)
{
    mpmc_arg *a = arg;
    uint64_t last[8];
    for (int i = 0; i < 8; i++) last[i] = UINT64_MAX;
    for (;;) {
        uint64_t v;
        sl_status st = sl_chan_recv(a->c->ch, &v);
        if (st == SL_CLOSED) break;
        if (st != SL_OK || v >= a->c->per_sender * a->c->senders) {
            atomic_store(&a->c->bad, 2);
            break;
        }
        uint64_t s = v / a->c->per_sender, i = v % a->c->per_sender;
        if (last[s] != UINT64_MAX && i <= last[s]) atomic_store(&a->c->bad, 3); /* per-sender order */
        last[s] = i;
        if (atomic_exchange(&a->c->seen[v], 1)) atomic_store(&a->c->bad, 4);   /* duplicate */
    }
    return NULL;
}

static void *len_watcher(void *arg)
{
    mpmc_ctx *c = arg;
    size_t cap = sl_chan_cap(c->ch);
    while (!atomic_load(&c->stop_watch)) {
        if (sl_chan_len(c->ch) > cap) atomic_store(&c->bad, 5);
        sched_yield();
    }
    return NULL;
}

START_TEST(test_mpmc_blocking_exactly_once)
{
    enum { S = 3, R = 3 };
    mpmc_ctx c = { .ch = mk(SL_MPMC, 4), .per_sender = sl_test_scaled(20000, 1000), .senders = S };
    c.seen = calloc(c.per_sender * S, 1);
    ck_assert_ptr_nonnull(c.seen);
    atomic_store(&c.bad, 0);
    atomic_store(&c.stop_watch, 0);
    pthread_t ts[S], tr[R], tw;
    mpmc_arg as[S], ar[R];
    ck_assert_int_eq(pthread_create(&tw, NULL, len_watcher, &c), 0);
    for (unsigned i = 0; i < R; i++) {
        ar[i] = (mpmc_arg){ &c, i };
        ck_assert_int_eq(pthread_create(&tr[i], NULL, mpmc_receiver, &ar[i]), 0);
    }
    for (unsigned i = 0; i < S; i++) {
        as[i] = (mpmc_arg){ &c, i };
        ck_assert_int_eq(pthread_create(&ts[i], NULL, mpmc_sender, &as[i]), 0);
    }
    for (unsigned i = 0; i < S; i++) pthread_join(ts[i], NULL);
    sl_chan_close(c.ch); /* receivers drain, then leave */
    for (unsigned i = 0; i < R; i++) pthread_join(tr[i], NULL);
    atomic_store(&c.stop_watch, 1);
    pthread_join(tw, NULL);
    ck_assert_msg(atomic_load(&c.bad) == 0, "problem %d (1 send failed, 2 bad recv, 3 order, 4 duplicate, 5 len>cap)",
                  atomic_load(&c.bad));
    for (uint64_t v = 0; v < c.per_sender * S; v++)
        ck_assert_msg(atomic_load(&c.seen[v]) == 1, "message %llu lost", (unsigned long long)v);
    free((void *)c.seen);
    sl_chan_free(c.ch);
}
END_TEST

/* ---- send_ptr and send_evict ----------------------------------------------------- */

START_TEST(test_send_ptr)
{
    const sl_flavor f = FLAVOR;
    sl_chan *ch = sl_test_chan(f, sizeof(void *), 2, NULL, NULL);
    int a = 1, b = 2;
    void *p = &a;
    ck_assert_int_eq(sl_chan_send_ptr(ch, &p), SL_OK);
    ck_assert_ptr_null(p);
    p = &b;
    ck_assert_int_eq(sl_chan_send_ptr(ch, &p), SL_OK);
    ck_assert_ptr_null(p);
    void *out = NULL;
    ck_assert_int_eq(sl_chan_recv(ch, &out), SL_OK);
    ck_assert_ptr_eq(out, &a);
    ck_assert_int_eq(sl_chan_recv(ch, &out), SL_OK);
    ck_assert_ptr_eq(out, &b);
    /* NULL pp */
    ck_assert_int_eq(sl_chan_send_ptr(ch, NULL), SL_EINVAL);
    ck_assert_uint_eq(sl_chan_len(ch), 0);
    /* Closed: *pp stays. */
    sl_chan_close(ch);
    p = &a;
    ck_assert_int_eq(sl_chan_send_ptr(ch, &p), SL_CLOSED);
    ck_assert_ptr_eq(p, &a);
    ck_assert_uint_eq(sl_chan_len(ch), 0);
    sl_chan_free(ch);
}
END_TEST

/* The non-blocking and timed moves: the pointer is cleared exactly when the
 * message left, and left alone on SL_FULL, SL_TIMEDOUT and SL_CLOSED. */
START_TEST(test_try_and_timed_send_ptr)
{
    const sl_flavor f = FLAVOR;
    sl_chan *ch = sl_test_chan(f, sizeof(void *), 1, NULL, NULL);
    int a = 1, b = 2;
    void *p = &a;
    ck_assert_int_eq(sl_chan_try_send_ptr(ch, &p), SL_OK);
    ck_assert_ptr_null(p);
    p = &b;
    ck_assert_int_eq(sl_chan_try_send_ptr(ch, &p), SL_FULL);
    ck_assert_ptr_eq(p, &b);
    /* The timed form's 0 is one attempt, and its answer SL_TIMEDOUT. */
    ck_assert_int_eq(sl_chan_send_ptr_for(ch, &p, 0), SL_TIMEDOUT);
    ck_assert_ptr_eq(p, &b);
    uint64_t t0 = sl_now_ns();
    ck_assert_int_eq(sl_chan_send_ptr_for(ch, &p, 20 * MS), SL_TIMEDOUT);
    ck_assert_uint_ge(sl_now_ns() - t0, 20 * MS);
    ck_assert_ptr_eq(p, &b);
    void *out = NULL;
    ck_assert_int_eq(sl_chan_recv(ch, &out), SL_OK);
    ck_assert_ptr_eq(out, &a);
    ck_assert_int_eq(sl_chan_send_ptr_for(ch, &p, 20 * MS), SL_OK);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(sl_chan_recv(ch, &out), SL_OK);
    ck_assert_ptr_eq(out, &b);
    /* Bad input and a closed channel leave the pointer alone. */
    ck_assert_int_eq(sl_chan_try_send_ptr(NULL, &p), SL_EINVAL);
    ck_assert_int_eq(sl_chan_try_send_ptr(ch, NULL), SL_EINVAL);
    ck_assert_int_eq(sl_chan_send_ptr_for(ch, NULL, 0), SL_EINVAL);
    sl_chan_close(ch);
    p = &a;
    ck_assert_int_eq(sl_chan_try_send_ptr(ch, &p), SL_CLOSED);
    ck_assert_int_eq(sl_chan_send_ptr_for(ch, &p, SL_FOREVER), SL_CLOSED);
    ck_assert_ptr_eq(p, &a);
    ck_assert_uint_eq(sl_chan_len(ch), 0);
    sl_chan_free(ch);
    /* Another element size is not a pointer channel. */
    ch = sl_test_chan(f, sizeof(uint64_t) * 2, 1, NULL, NULL);
    ck_assert_int_eq(sl_chan_try_send_ptr(ch, &p), SL_EINVAL);
    ck_assert_int_eq(sl_chan_send_ptr_for(ch, &p, 0), SL_EINVAL);
    ck_assert_ptr_eq(p, &a);
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_send_ptr_blocked_then_closed)
{
    const sl_flavor f = FLAVOR;
    sl_chan *ch = sl_test_chan(f, sizeof(void *), 1, NULL, NULL);
    int a = 1, b = 2;
    void *p = &a;
    ck_assert_int_eq(sl_chan_send_ptr(ch, &p), SL_OK);
    op_thread o;
    op_start_ptr(&o, ch, &b);
    op_expect_blocked(&o, "send_ptr on a full channel");
    sl_chan_close(ch);
    ck_assert_int_eq(op_join(&o), SL_CLOSED);
    ck_assert_ptr_eq(o.ptr, &b); /* not moved */
    void *out = NULL;
    ck_assert_int_eq(sl_chan_recv(ch, &out), SL_OK);
    ck_assert_ptr_eq(out, &a);
    ck_assert_int_eq(sl_chan_recv(ch, &out), SL_CLOSED);
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_send_ptr_blocked_then_received)
{
    const sl_flavor f = FLAVOR;
    sl_chan *ch = sl_test_chan(f, sizeof(void *), 1, NULL, NULL);
    int a = 1, b = 2;
    void *p = &a;
    ck_assert_int_eq(sl_chan_send_ptr(ch, &p), SL_OK);
    op_thread o;
    op_start_ptr(&o, ch, &b);
    op_expect_blocked(&o, "send_ptr on a full channel");
    void *out = NULL;
    ck_assert_int_eq(sl_chan_recv(ch, &out), SL_OK);
    ck_assert_ptr_eq(out, &a);
    ck_assert_int_eq(op_join(&o), SL_OK);
    ck_assert_ptr_null(o.ptr); /* moved */
    ck_assert_int_eq(sl_chan_recv(ch, &out), SL_OK);
    ck_assert_ptr_eq(out, &b);
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_send_ptr_wrong_size)
{
    const sl_flavor f = FLAVOR;
    const size_t sizes[] = { 1, 4, sizeof(void *) * 2, 64 };
    for (size_t i = 0; i < 4; i++) {
        sl_chan *ch = sl_test_chan(f, sizes[i], 2, NULL, NULL);
        int a = 1;
        void *p = &a;
        ck_assert_msg(sl_chan_send_ptr(ch, &p) == SL_EINVAL, "send_ptr on esz %zu accepted", sizes[i]);
        ck_assert_ptr_eq(p, &a);
        ck_assert_uint_eq(sl_chan_len(ch), 0);
        sl_chan_free(ch);
    }
}
END_TEST

START_TEST(test_send_evict_refused)
{
    const sl_flavor f = FLAVOR;
    sl_chan *ch = mk(f, 2);
    uint64_t v = 1, ev = 12345;
    ck_assert_int_eq(sl_chan_send_evict(ch, &v, &ev), SL_EINVAL);
    ck_assert_uint_eq(sl_chan_len(ch), 0);
    send_u64(ch, 7);
    send_u64(ch, 8);
    ck_assert_int_eq(sl_chan_send_evict(ch, &v, &ev), SL_EINVAL); /* full: still no eviction */
    ck_assert_uint_eq(ev, 12345);
    ck_assert_uint_eq(sl_chan_len(ch), 2);
    ck_assert_uint_eq(recv_u64(ch), 7);
    ck_assert_uint_eq(recv_u64(ch), 8);
    sl_chan_free(ch);
}
END_TEST

/* ---- drop function ---------------------------------------------------------------- */

typedef struct drop_rec {
    uint64_t magic;
    size_t n;
    uint64_t vals[2048];
} drop_rec;

#define DROP_MAGIC 0x0D50D50D50ull

static void rec_drop(void *elem, void *ctx)
{
    drop_rec *r = ctx;
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(r->magic, DROP_MAGIC);
    ck_assert_ptr_nonnull(elem);
    uint64_t v;
    memcpy(&v, elem, sizeof v);
    if (r->n < sizeof r->vals / sizeof r->vals[0]) r->vals[r->n] = v;
    r->n++;
}

START_TEST(test_drop_leftovers_in_order)
{
    const sl_flavor f = FLAVOR;
    static drop_rec r;
    r = (drop_rec){ .magic = DROP_MAGIC };
    sl_chan *ch = sl_test_chan(f, 8, 8, rec_drop, &r);
    for (uint64_t i = 10; i < 15; i++) send_u64(ch, i);
    ck_assert_uint_eq(recv_u64(ch), 10);
    ck_assert_uint_eq(recv_u64(ch), 11);
    ck_assert_uint_eq(r.n, 0); /* never for received messages, never before free */
    sl_chan_close(ch);
    ck_assert_uint_eq(r.n, 0); /* close drops nothing */
    sl_chan_free(ch);
    ck_assert_uint_eq(r.n, 3);
    ck_assert_uint_eq(r.vals[0], 12);
    ck_assert_uint_eq(r.vals[1], 13);
    ck_assert_uint_eq(r.vals[2], 14);
}
END_TEST

START_TEST(test_drop_full_across_wrap)
{
    const sl_flavor f = FLAVOR;
    static drop_rec r;
    const size_t cap = 5;
    r = (drop_rec){ .magic = DROP_MAGIC };
    sl_chan_opts o = { .flavor = f, .elem_size = 8, .capacity = cap, .drop = rec_drop, .drop_ctx = &r };
    sl_chan *ch = NULL;
    ck_assert_int_eq(sl__chan_new_at(&ch, &o, UINT64_MAX - 2), SL_OK);
    uint64_t next = 0;
    for (int round = 0; round < 7; round++) {
        while (sl_chan_try_send(ch, &next) == SL_OK) next++;
        ck_assert_uint_eq(recv_u64(ch), next - cap);
        ck_assert_uint_eq(recv_u64(ch), next - cap + 1);
    }
    while (sl_chan_try_send(ch, &next) == SL_OK) next++;
    ck_assert_uint_eq(r.n, 0);
    sl_chan_free(ch);
    ck_assert_uint_eq(r.n, cap);
    for (size_t i = 0; i < cap; i++) ck_assert_uint_eq(r.vals[i], next - cap + i);
}
END_TEST

/* Messages bigger than any stack buffer the channel may use for dropping. */
START_TEST(test_drop_large_elems)
{
    const sl_flavor f = FLAVOR;
    static drop_rec r;
    const size_t esz = 1000;
    r = (drop_rec){ .magic = DROP_MAGIC };
    sl_chan *ch = sl_test_chan(f, esz, 4, rec_drop, &r);
    unsigned char *m = calloc(1, esz);
    ck_assert_ptr_nonnull(m);
    for (uint64_t i = 0; i < 4; i++) {
        memcpy(m, &i, sizeof i);
        m[esz - 1] = (unsigned char)i;
        ck_assert_int_eq(sl_chan_try_send(ch, m), SL_OK);
    }
    ck_assert_int_eq(sl_chan_try_recv(ch, m), SL_OK);
    free(m);
    sl_chan_free(ch);
    ck_assert_uint_eq(r.n, 3);
    for (size_t i = 0; i < 3; i++) ck_assert_uint_eq(r.vals[i], i + 1);
}
END_TEST

START_TEST(test_drop_none_left)
{
    const sl_flavor f = FLAVOR;
    static drop_rec r;
    r = (drop_rec){ .magic = DROP_MAGIC };
    sl_chan *ch = sl_test_chan(f, 8, 4, rec_drop, &r);
    for (uint64_t i = 0; i < 20; i++) {
        send_u64(ch, i);
        ck_assert_uint_eq(recv_u64(ch), i);
    }
    sl_chan_free(ch);
    ck_assert_uint_eq(r.n, 0);

    /* An empty, never-used channel drops nothing either. */
    ch = sl_test_chan(f, 8, 4, rec_drop, &r);
    sl_chan_free(ch);
    ck_assert_uint_eq(r.n, 0);
}
END_TEST

START_TEST(test_no_drop_fn_with_leftovers)
{
    const sl_flavor f = FLAVOR;
    sl_chan *ch = mk(f, 4);
    send_u64(ch, 1);
    send_u64(ch, 2);
    sl_chan_free(ch); /* discards unseen; ASan checks the channel is freed */
}
END_TEST

static void free_drop(void *elem, void *ctx)
{
    void *p;
    memcpy(&p, elem, sizeof p);
    free(p);
    atomic_fetch_add((_Atomic int *)ctx, 1);
}

START_TEST(test_drop_owns_pointers)
{
    /* Ownership end to end: heap objects moved in with send_ptr; those not
     * received are freed by the drop function (ASan reports any leak). */
    const sl_flavor f = FLAVOR;
    static _Atomic int freed;
    atomic_store(&freed, 0);
    sl_chan *ch = sl_test_chan(f, sizeof(void *), 6, free_drop, (void *)&freed);
    for (int i = 0; i < 6; i++) {
        int *obj = malloc(sizeof *obj);
        ck_assert_ptr_nonnull(obj);
        *obj = i;
        void *p = obj;
        ck_assert_int_eq(sl_chan_send_ptr(ch, &p), SL_OK);
        ck_assert_ptr_null(p);
    }
    for (int i = 0; i < 2; i++) {
        int *obj = NULL;
        ck_assert_int_eq(sl_chan_recv(ch, &obj), SL_OK);
        ck_assert_int_eq(*obj, i);
        free(obj);
    }
    sl_chan_free(ch);
    ck_assert_int_eq(atomic_load(&freed), 4);
}
END_TEST

/* ---- system calls only when someone sleeps ---------------------------------------- */

START_TEST(test_no_syscalls_without_waiters)
{
    const sl_flavor f = FLAVOR;
    sl_chan *ch = mk(f, 8);
    atomic_store(&sl_test_futex_waits, 0);
    atomic_store(&sl_test_futex_wakes, 0);
    sl_test_sys_install(&sl_test_counting_ops);
    uint64_t buf[8];
    for (uint64_t i = 0; i < 2000; i++) {
        uint64_t v = i;
        ck_assert_int_eq(sl_chan_send(ch, &v), SL_OK);
        ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
        ck_assert_int_eq(sl_chan_send_for(ch, &v, 10 * MS), SL_OK);
        ck_assert_int_eq(sl_chan_recv(ch, &v), SL_OK);
        ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_OK);
        ck_assert_int_eq(sl_chan_recv_for(ch, &v, 10 * MS), SL_OK);
        for (int k = 0; k < 8; k++) buf[k] = i;
        ck_assert_uint_eq(sl_chan_try_send_n(ch, buf, 3), 3);
        ck_assert_uint_eq(sl_chan_try_recv_n(ch, buf, 3), 3);
        ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_EMPTY);
    }
    sl_test_sys_restore();
    ck_assert_uint_eq(atomic_load(&sl_test_futex_wakes), 0);
    ck_assert_uint_eq(atomic_load(&sl_test_futex_waits), 0);
    sl_chan_free(ch);
}
END_TEST

/* ---- one wake-up per sleeper ------------------------------------------------------
 * A woken sleeper stays counted in `waiters` until it runs; every notify in
 * between used to be a FUTEX_WAKE for nobody (a whole time slice of them when
 * the two share a CPU). The in-process channel counts its unwoken sleepers
 * (internal/await.h): a notify makes the call only for a sleeper that no
 * notify has woken yet, and never leaves one asleep. */

/* Waits up to 2 s for ch to count n unwoken sleepers on not_empty and,
 * with `in_kernel`, for that thread to sleep in the kernel (counted, it may
 * not have made the futex call yet; a send then wakes nobody, and the
 * sleeper's EAGAIN comes later than the test's next sends). */
static bool await_unwoken(sl_chan *ch, uint32_t n, const sl_test_sleeper *in_kernel)
{
    for (int i = 0; i < 2000; i++) {
        bool asleep = !in_kernel || sl_test_thread_asleep(atomic_load(&in_kernel->tid));
        if (atomic_load(&ch->unwoken[0]) == n && asleep)
            return true;
        sl_test_sleep_ns(1 * MS);
    }
    return false;
}

static bool await_got(_Atomic int *got, int n, long ms)
{
    for (long i = 0; i < ms; i++) {
        if (atomic_load(got) >= n)
            return true;
        sl_test_sleep_ns(1 * MS);
    }
    return atomic_load(got) >= n;
}

START_TEST(test_one_wake_per_sleeper)
{
    sl_chan *ch = mk(FLAVOR, 64);
    _Atomic int got = 0;
    atomic_store(&sl_test_futex_waits, 0);
    atomic_store(&sl_test_futex_wakes, 0);
    atomic_store(&sl_test_late_riser, 1);
    sl_test_sys_install(&sl_test_counting_ops);
    sl_test_sleeper r = {.ch = ch, .got = &got};
    sl_test_sleeper_start(&r);
    ck_assert_msg(await_unwoken(ch, 1, &r), "the receiver never slept counted (%u)",
                  (unsigned)atomic_load(&ch->unwoken[0]));
    for (uint64_t i = 0; i < 32; i++)
        send_u64(ch, i); /* all within the receiver's 100 ms between wake-up and return */
    unsigned long wakes = atomic_load(&sl_test_futex_wakes);
    pthread_join(r.thr, NULL);
    atomic_store(&sl_test_late_riser, 0);
    sl_test_sys_restore();
    ck_assert_int_eq(r.st, SL_OK);
    ck_assert_msg(wakes == 1, "%lu FUTEX_WAKE calls for one sleeper and 32 sends", wakes);
    uint32_t left = atomic_load(&ch->unwoken[0]);
    ck_assert_msg(left == 0, "%u unwoken sleepers counted with nobody asleep", (unsigned)left);
    for (uint64_t i = 1; i < 32; i++)
        ck_assert_uint_eq(recv_u64(ch), i);
    sl_chan_free(ch);
}
END_TEST

/* Two receivers asleep on an MPMC channel; one send wakes one of them, and
 * the second send, once the first has run, must still wake the other: the
 * count must not lose it to the first one's return. */
START_TEST(test_every_sleeper_woken)
{
    sl_chan *ch = mk(SL_MPMC, 64);
    _Atomic int got = 0;
    /* The real futex calls: an injected spurious 0 leaves the count high. */
    sl_test_sys_install(&sl_test_counting_ops);
    sl_test_sleeper r[2] = {{.ch = ch, .got = &got}, {.ch = ch, .got = &got}};
    for (int i = 0; i < 2; i++)
        sl_test_sleeper_start(&r[i]);
    bool both = await_unwoken(ch, 2, NULL);
    send_u64(ch, 1);
    bool first = await_got(&got, 1, 2000);
    sl_test_sleep_ns(20 * MS); /* the woken one has returned and settled its count */
    send_u64(ch, 2);
    bool second = await_got(&got, 2, 1000);
    for (int i = 0; i < 2; i++)
        pthread_join(r[i].thr, NULL);
    sl_test_sys_restore();
    ck_assert_msg(both, "two receivers never slept counted (%u)",
                  (unsigned)atomic_load(&ch->unwoken[0]));
    ck_assert_msg(first, "the first send woke nobody");
    uint32_t left = atomic_load(&ch->unwoken[0]);
    ck_assert_msg(second, "the second send left the other receiver asleep (count %u)",
                  (unsigned)left);
    ck_assert_msg(left == 0, "%u unwoken sleepers counted with nobody asleep", (unsigned)left);
    sl_chan_free(ch);
}
END_TEST

/* ---- against a model --------------------------------------------------------------- */

static void chan_model(sl_flavor f, size_t cap, uint64_t start, uint64_t seed)
{
    sl_chan_opts o = { .flavor = f, .elem_size = 8, .capacity = cap };
    sl_chan *ch = NULL;
    ck_assert_int_eq(sl__chan_new_at(&ch, &o, start), SL_OK);
    uint64_t *m = calloc(cap, sizeof *m);
    ck_assert_ptr_nonnull(m);
    size_t head = 0, n = 0;
    uint64_t next = 0;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, seed);
    uint64_t buf[80];
    for (unsigned step = 0; step < 3000; step++) {
        uint64_t r = sl_test_rng_next(&rng);
        bool fill = (step / 50) % 2 == 0;
        unsigned op = (unsigned)(r % 6);
        if (op == 1 && !fill) op = 2;
        switch (op) {
        case 0: case 1: {
            sl_status st = sl_chan_try_send(ch, &next);
            ck_assert_int_eq(st, n < cap ? SL_OK : SL_FULL);
            if (st == SL_OK) { m[(head + n) % cap] = next++; n++; }
            break;
        }
        case 2: {
            uint64_t v = UINT64_MAX;
            sl_status st = sl_chan_try_recv(ch, &v);
            ck_assert_int_eq(st, n ? SL_OK : SL_EMPTY);
            if (st == SL_OK) {
                ck_assert_uint_eq(v, m[head]);
                head = (head + 1) % cap;
                n--;
            }
            break;
        }
        case 3: {
            size_t k = (size_t)(r >> 8) % (cap + 3 < 80 ? cap + 3 : 80);
            for (size_t i = 0; i < k; i++) buf[i] = next + i;
            size_t got = sl_chan_try_send_n(ch, buf, k);
            ck_assert_uint_eq(got, k < cap - n ? k : cap - n);
            for (size_t i = 0; i < got; i++) { m[(head + n) % cap] = next++; n++; }
            break;
        }
        case 4: {
            size_t k = (size_t)(r >> 8) % (cap + 3 < 80 ? cap + 3 : 80);
            size_t got = sl_chan_try_recv_n(ch, buf, k);
            ck_assert_uint_eq(got, k < n ? k : n);
            for (size_t i = 0; i < got; i++) {
                ck_assert_uint_eq(buf[i], m[head]);
                head = (head + 1) % cap;
                n--;
            }
            break;
        }
        default:
            break;
        }
        ck_assert_uint_eq(sl_chan_len(ch), n);
    }
    free(m);
    sl_chan_free(ch);
}

START_TEST(test_model_random)
{
    const sl_flavor f = FLAVOR;
    const size_t caps[] = { 1, 2, 3, 5, 8, 61 };
    const uint64_t starts[] = { 0, UINT64_MAX - 50, UINT64_MAX };
    for (size_t c = 0; c < 6; c++)
        for (size_t s = 0; s < 3; s++) chan_model(f, caps[c], starts[s], 1 + c * 7 + s);
}
END_TEST

/* ---- the typed wrapper --------------------------------------------------------------- */

typedef struct point {
    int32_t x, y;
    double w;
    char tag[5];
} point;

SL_CHAN_TYPED(point_chan, point);
/* A pointer element type spelled directly: the macro writes `T const *`, so
 * the send forms take `int *const *` (`const T *` would read `const int **`). */
SL_CHAN_TYPED(iptr_chan, int *);

START_TEST(test_typed)
{
    const sl_flavor f = FLAVOR;
    point_chan *pc = NULL;
    ck_assert_int_eq(point_chan_new(&pc, NULL), SL_EINVAL);
    ck_assert_ptr_null(pc);
    sl_chan_opts o = { .flavor = f, .elem_size = 1 /* overridden */, .capacity = 3 };
    ck_assert_int_eq(point_chan_new(&pc, &o), SL_OK);
    ck_assert_ptr_nonnull(pc);
    ck_assert_uint_eq(sl_chan_elem_size((const sl_chan *)(const void *)pc), sizeof(point));
    ck_assert_uint_eq(point_chan_cap(pc), 3);
    ck_assert_uint_eq(point_chan_len(pc), 0);
    ck_assert(!point_chan_is_closed(pc));

    point a = { 1, -2, 0.5, "abcd" }, b = { 3, 4, -1.25, "wxyz" }, c = { 5, 6, 7.0, "q" }, got;
    ck_assert_int_eq(point_chan_send(pc, &a), SL_OK);
    ck_assert_int_eq(point_chan_try_send(pc, &b), SL_OK);
    ck_assert_int_eq(point_chan_send_for(pc, &c, 10 * MS), SL_OK);
    ck_assert_int_eq(point_chan_try_send(pc, &c), SL_FULL);
    ck_assert_int_eq(point_chan_send_for(pc, &c, 1 * MS), SL_TIMEDOUT);
    ck_assert_uint_eq(point_chan_len(pc), 3);
    ck_assert_int_eq(point_chan_send_evict(pc, &c, &got), SL_EINVAL);
    ck_assert_int_eq(point_chan_send_ptr(pc, &c), SL_EINVAL); /* not a pointer channel */
    ck_assert_uint_eq(point_chan_len(pc), 3);

    memset(&got, 0, sizeof got);
    ck_assert_int_eq(point_chan_recv(pc, &got), SL_OK);
    ck_assert(got.x == 1 && got.y == -2 && got.w == 0.5 && strcmp(got.tag, "abcd") == 0);
    ck_assert_int_eq(point_chan_try_recv(pc, &got), SL_OK);
    ck_assert(got.x == 3 && got.y == 4 && got.w == -1.25 && strcmp(got.tag, "wxyz") == 0);
    ck_assert_int_eq(point_chan_recv_for(pc, &got, 10 * MS), SL_OK);
    ck_assert(got.x == 5 && got.y == 6 && got.w == 7.0 && strcmp(got.tag, "q") == 0);
    ck_assert_int_eq(point_chan_try_recv(pc, &got), SL_EMPTY);
    ck_assert_int_eq(point_chan_recv_for(pc, &got, 1 * MS), SL_TIMEDOUT);

    point arr[4] = { a, b, c, a }, out[4];
    ck_assert_uint_eq(point_chan_try_send_n(pc, arr, 4), 3);
    ck_assert_uint_eq(point_chan_try_recv_n(pc, out, 4), 3);
    ck_assert(out[0].x == 1 && out[1].x == 3 && out[2].x == 5);
    size_t n_got = 0;
    ck_assert_uint_eq(point_chan_try_send_n(pc, arr, 2), 2);
    ck_assert_int_eq(point_chan_recv_n(pc, out, 4, &n_got), SL_OK);
    ck_assert(n_got == 2 && out[0].x == 1 && out[1].x == 3);
    ck_assert_int_eq(point_chan_recv_n_for(pc, out, 4, 1 * MS, &n_got), SL_TIMEDOUT);
    ck_assert_uint_eq(n_got, 0);

    point_chan_close(pc);
    ck_assert(point_chan_is_closed(pc));
    ck_assert_int_eq(point_chan_send(pc, &a), SL_CLOSED);
    ck_assert_int_eq(point_chan_recv(pc, &got), SL_CLOSED);
    point_chan_free(pc);
    point_chan_free(NULL);
    point_chan_close(NULL);

    /* A typed pointer channel and its move; every wrapper is used (clang's
     * -Wunused-function flags unused static inline functions in a .c file). */
    iptr_chan *ic = NULL;
    ck_assert_int_eq(iptr_chan_new(&ic, &o), SL_OK);
    ck_assert_uint_eq(iptr_chan_cap(ic), 3);
    ck_assert_uint_eq(sl_chan_elem_size((const sl_chan *)(const void *)ic), sizeof(int *));
    int x = 9, y = 10, z = 11;
    int *px = &x;
    ck_assert_int_eq(iptr_chan_send_ptr(ic, &px), SL_OK);
    ck_assert_ptr_null(px);
    int *const py = &y, *const pz = &z;
    ck_assert_int_eq(iptr_chan_send(ic, &py), SL_OK);
    ck_assert_int_eq(iptr_chan_try_send(ic, &pz), SL_OK);
    ck_assert_int_eq(iptr_chan_send_for(ic, &pz, 1 * MS), SL_TIMEDOUT);
    int *ev = NULL;
    ck_assert_int_eq(iptr_chan_send_evict(ic, &pz, &ev), SL_EINVAL);
    ck_assert_ptr_null(ev);
    ck_assert_uint_eq(iptr_chan_len(ic), 3);
    int *pw = &x;
    ck_assert_int_eq(iptr_chan_try_send_ptr(ic, &pw), SL_FULL);
    ck_assert_int_eq(iptr_chan_send_ptr_for(ic, &pw, 1 * MS), SL_TIMEDOUT);
    ck_assert_ptr_eq(pw, &x);
    int *rx = NULL;
    ck_assert_int_eq(iptr_chan_recv(ic, &rx), SL_OK);
    ck_assert_ptr_eq(rx, &x);
    ck_assert_int_eq(iptr_chan_try_recv(ic, &rx), SL_OK);
    ck_assert_ptr_eq(rx, &y);
    ck_assert_int_eq(iptr_chan_recv_for(ic, &rx, 10 * MS), SL_OK);
    ck_assert_ptr_eq(rx, &z);
    int *ptrs[3] = { &x, &y, &z }, *rptrs[3] = { NULL, NULL, NULL };
    ck_assert_uint_eq(iptr_chan_try_send_n(ic, ptrs, 3), 3);
    ck_assert_uint_eq(iptr_chan_try_recv_n(ic, rptrs, 3), 3);
    ck_assert(rptrs[0] == &x && rptrs[1] == &y && rptrs[2] == &z);
    n_got = 0;
    ck_assert_uint_eq(iptr_chan_try_send_n(ic, ptrs, 2), 2);
    ck_assert_int_eq(iptr_chan_recv_n_for(ic, rptrs, 3, 0, &n_got), SL_OK);
    ck_assert(n_got == 2 && rptrs[0] == &x && rptrs[1] == &y);
    ck_assert_int_eq(iptr_chan_recv_n_for(ic, rptrs, 3, 0, &n_got), SL_TIMEDOUT);
    ck_assert_int_eq(iptr_chan_recv_n(ic, rptrs, 0, &n_got), SL_EINVAL);
    ck_assert(!iptr_chan_is_closed(ic));
    iptr_chan_close(ic);
    ck_assert(iptr_chan_is_closed(ic));
    px = &x;
    ck_assert_int_eq(iptr_chan_send_ptr(ic, &px), SL_CLOSED);
    ck_assert_ptr_eq(px, &x);
    iptr_chan_free(ic);
}
END_TEST

/* ---- blocking batch receive (sl_chan_recv_n, sl_chan_recv_n_for) ------------------ */

/* Every flavour: _i indexes this table in the recv_n tests. */
static const sl_flavor recv_n_flavors[] = { SL_SPSC, SL_MPMC, SL_LIST, SL_RING };
#define RN_FLAVOR (recv_n_flavors[_i])

/* One batch receive on its own thread. */
typedef struct recv_n_thread {
    pthread_t thr;
    sl_chan *ch;
    uint64_t buf[16];
    size_t n, got;
    uint64_t timeout;
    sl_status st;
    _Atomic int done;
} recv_n_thread;

static void *recv_n_main(void *arg)
{
    recv_n_thread *t = arg;
    t->st = t->timeout == SL_FOREVER ? sl_chan_recv_n(t->ch, t->buf, t->n, &t->got)
                                     : sl_chan_recv_n_for(t->ch, t->buf, t->n, t->timeout, &t->got);
    atomic_store(&t->done, 1);
    return NULL;
}

/* Starts the batch receive and checks that it blocks. */
static void recv_n_start(recv_n_thread *t, sl_chan *ch, size_t n, uint64_t timeout)
{
    memset(t->buf, 0, sizeof t->buf);
    t->ch = ch;
    t->n = n;
    t->got = 999;
    t->timeout = timeout;
    t->st = (sl_status)-1;
    atomic_store(&t->done, 0);
    ck_assert_int_eq(pthread_create(&t->thr, NULL, recv_n_main, t), 0);
    sl_test_sleep_ns(30 * MS);
    ck_assert_msg(atomic_load(&t->done) == 0, "recv_n returned %s (got %zu) instead of blocking",
                  sl_status_str(t->st), t->got);
}

static sl_status recv_n_join(recv_n_thread *t)
{
    ck_assert_int_eq(pthread_join(t->thr, NULL), 0);
    return t->st;
}

/* Bad input is refused at every timeout, with *got 0 and nothing received. */
START_TEST(test_recv_n_bad_input)
{
    sl_chan *ch = sl_test_chan(RN_FLAVOR, 8, 4, NULL, NULL);
    send_u64(ch, 7);
    uint64_t out[4] = { 0, 0, 0, 0 };
    const uint64_t tos[] = { 0, 5 * MS, SL_FOREVER };
    for (int i = 0; i < N_OF(tos); i++) {
        size_t got = 77;
        ck_assert_int_eq(sl_chan_recv_n_for(NULL, out, 4, tos[i], &got), SL_EINVAL);
        ck_assert_uint_eq(got, 0);
        got = 77;
        ck_assert_int_eq(sl_chan_recv_n_for(ch, NULL, 4, tos[i], &got), SL_EINVAL);
        ck_assert_uint_eq(got, 0);
        ck_assert_int_eq(sl_chan_recv_n_for(ch, out, 4, tos[i], NULL), SL_EINVAL);
        got = 77;
        ck_assert_int_eq(sl_chan_recv_n_for(ch, out, 0, tos[i], &got), SL_EINVAL);
        ck_assert_uint_eq(got, 0);
        got = 77;
        /* n messages of 8 bytes beyond SIZE_MAX bytes: no array holds them. */
        ck_assert_int_eq(sl_chan_recv_n_for(ch, out, SIZE_MAX / 4, tos[i], &got), SL_EINVAL);
        ck_assert_uint_eq(got, 0);
    }
    size_t got = 77;
    ck_assert_int_eq(sl_chan_recv_n(ch, out, 0, &got), SL_EINVAL);
    ck_assert_uint_eq(got, 0);
    ck_assert_int_eq(sl_chan_recv_n(ch, NULL, 2, &got), SL_EINVAL);
    ck_assert_int_eq(sl_chan_recv_n(ch, out, 2, NULL), SL_EINVAL);
    ck_assert_uint_eq(out[0], 0);
    ck_assert_uint_eq(sl_chan_len(ch), 1);
    ck_assert_uint_eq(recv_u64(ch), 7);
    sl_chan_free(ch);
}
END_TEST

/* What is there comes out in order, up to n; nothing there is SL_TIMEDOUT
 * (no earlier than asked); closed is SL_CLOSED once drained, at once. */
START_TEST(test_recv_n_statuses)
{
    sl_chan *ch = sl_test_chan(RN_FLAVOR, 8, 16, NULL, NULL);
    uint64_t in[12], out[16];
    for (int i = 0; i < 12; i++) in[i] = 100 + (uint64_t)i;
    size_t got = 0;
    ck_assert_uint_eq(sl_chan_try_send_n(ch, in, 3), 3);
    memset(out, 0, sizeof out);
    ck_assert_int_eq(sl_chan_recv_n(ch, out, 8, &got), SL_OK); /* n larger than available */
    ck_assert_uint_eq(got, 3);
    for (int i = 0; i < 3; i++) ck_assert_uint_eq(out[i], 100 + (uint64_t)i);
    ck_assert_uint_eq(out[3], 0);
    got = 77;
    ck_assert_int_eq(sl_chan_recv_n_for(ch, out, 8, 0, &got), SL_TIMEDOUT);
    ck_assert_uint_eq(got, 0);
    const uint64_t tos[] = { 1 * MS, 20 * MS };
    for (int i = 0; i < N_OF(tos); i++) {
        uint64_t t0 = sl_test_now_ns();
        got = 77;
        ck_assert_int_eq(sl_chan_recv_n_for(ch, out, 8, tos[i], &got), SL_TIMEDOUT);
        uint64_t el = sl_test_now_ns() - t0;
        ck_assert_uint_eq(got, 0);
        ck_assert_msg(el >= tos[i], "recv_n_for timed out after %llu ns, asked %llu", ULL(el),
                      ULL(tos[i]));
    }
    ck_assert_uint_eq(sl_chan_try_send_n(ch, in, 10), 10);
    ck_assert_int_eq(sl_chan_recv_n_for(ch, out, 4, 0, &got), SL_OK); /* fewer than available */
    ck_assert_uint_eq(got, 4);
    ck_assert_int_eq(sl_chan_recv_n_for(ch, out + 4, 16, SL_FOREVER, &got), SL_OK);
    ck_assert_uint_eq(got, 6);
    for (int i = 0; i < 10; i++) ck_assert_uint_eq(out[i], 100 + (uint64_t)i);
    /* Closed with two inside: they come out, then SL_CLOSED at every timeout. */
    ck_assert_uint_eq(sl_chan_try_send_n(ch, in + 10, 2), 2);
    sl_chan_close(ch);
    ck_assert_int_eq(sl_chan_recv_n(ch, out, 1, &got), SL_OK);
    ck_assert(got == 1 && out[0] == 110);
    ck_assert_int_eq(sl_chan_recv_n_for(ch, out, 5, 5 * MS, &got), SL_OK);
    ck_assert(got == 1 && out[0] == 111);
    const uint64_t ctos[] = { 0, 10 * SEC, SL_FOREVER };
    for (int i = 0; i < N_OF(ctos); i++) {
        got = 77;
        uint64_t t0 = sl_test_now_ns();
        ck_assert_int_eq(sl_chan_recv_n_for(ch, out, 5, ctos[i], &got), SL_CLOSED);
        ck_assert_uint_eq(got, 0);
        ck_assert_msg(sl_test_now_ns() - t0 < 5 * SEC, "SL_CLOSED waited for the timeout");
    }
    ck_assert_uint_eq(sl_chan_try_recv_n(ch, out, 5), 0);
    sl_chan_free(ch);
}
END_TEST

/* A blocked batch receive wakes on a send (of each form) and takes what came;
 * a timed one is woken early. */
START_TEST(test_recv_n_wakes_on_send)
{
    const sl_flavor f = recv_n_flavors[_i % 4];
    const int form = _i / 4;
    sl_chan *ch = sl_test_chan(f, 8, 8, NULL, NULL);
    static recv_n_thread t;
    recv_n_start(&t, ch, 8, form == 2 ? 20 * SEC : SL_FOREVER);
    uint64_t in[3] = { 41, 42, 43 };
    size_t sent = 1;
    if (form == 0)
        ck_assert_int_eq(sl_chan_send(ch, &in[0]), SL_OK);
    else
        ck_assert_uint_eq(sl_chan_try_send_n(ch, in, sent = 3), 3);
    ck_assert_int_eq(recv_n_join(&t), SL_OK);
    ck_assert_msg(t.got >= 1 && t.got <= sent, "got %zu of %zu", t.got, sent);
    /* The batch and what it left make the messages sent, in order. */
    uint64_t rest[3] = { 0, 0, 0 };
    size_t left = sl_chan_try_recv_n(ch, rest, 3);
    ck_assert_uint_eq(t.got + left, sent);
    for (size_t i = 0; i < sent; i++)
        ck_assert_uint_eq(i < t.got ? t.buf[i] : rest[i - t.got], in[i]);
    ck_assert_uint_eq(t.buf[t.got], 0); /* nothing written past what it took */
    sl_chan_free(ch);
}
END_TEST

/* A blocked batch receive, plain or timed, wakes on close with SL_CLOSED. */
START_TEST(test_recv_n_close_while_waiting)
{
    sl_chan *ch = sl_test_chan(recv_n_flavors[_i % 4], 8, 4, NULL, NULL);
    static recv_n_thread t;
    recv_n_start(&t, ch, 4, _i < 4 ? SL_FOREVER : 20 * SEC);
    sl_chan_close(ch);
    ck_assert_int_eq(recv_n_join(&t), SL_CLOSED);
    ck_assert_uint_eq(t.got, 0);
    ck_assert_uint_eq(sl_event_waiters(&ch->not_empty), 0);
    sl_chan_free(ch);
}
END_TEST

/* Producers on a small channel, one consumer in batches: every message once,
 * FIFO per producer, nothing after SL_CLOSED. */
typedef struct rn_prod {
    pthread_t thr;
    sl_chan *ch;
    uint64_t id, count;
} rn_prod;

static void *rn_producer(void *arg)
{
    rn_prod *p = arg;
    for (uint64_t s = 0; s < p->count; s++) {
        uint64_t v = p->id << 32 | s;
        if (sl_chan_send(p->ch, &v) != SL_OK)
            return (void *)1;
    }
    return NULL;
}

START_TEST(test_recv_n_fifo_per_producer)
{
    const sl_flavor f = _i ? SL_LIST : SL_MPMC;
    enum { PRODUCERS = 3 };
    const uint64_t count = sl_test_scaled(20000, 500);
    sl_chan *ch = sl_test_chan(f, 8, 8, NULL, NULL);
    rn_prod p[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++) {
        p[i] = (rn_prod){ .ch = ch, .id = (uint64_t)i, .count = count };
        ck_assert_int_eq(pthread_create(&p[i].thr, NULL, rn_producer, &p[i]), 0);
    }
    uint64_t next[PRODUCERS] = { 0 }, total = 0, batches = 0, buf[5];
    while (total < PRODUCERS * count) {
        size_t got = 0;
        sl_status st = sl_chan_recv_n_for(ch, buf, 5, 10 * SEC, &got);
        CHECK(st == SL_OK && got >= 1 && got <= 5, "recv_n: %s got %zu after %llu",
              sl_status_str(st), got, ULL(total));
        for (size_t k = 0; k < got; k++) {
            uint64_t id = buf[k] >> 32, s = buf[k] & 0xffffffffu;
            CHECK(id < PRODUCERS && s == next[id], "message %llu of producer %llu, expected %llu",
                  ULL(s), ULL(id), ULL(id < PRODUCERS ? next[id] : 0));
            next[id]++;
        }
        total += got;
        batches++;
    }
    for (int i = 0; i < PRODUCERS; i++) {
        void *r = NULL;
        ck_assert_int_eq(pthread_join(p[i].thr, &r), 0);
        ck_assert_ptr_null(r);
    }
    sl_chan_close(ch);
    size_t got = 77;
    ck_assert_int_eq(sl_chan_recv_n(ch, buf, 5, &got), SL_CLOSED);
    ck_assert_uint_eq(got, 0);
    fprintf(stderr, "[unit_chan recv_n_fifo %s] %llu messages in %llu batches\n",
            sl_test_flavor_name(f), ULL(total), ULL(batches));
    sl_chan_free(ch);
}
END_TEST

/* ---- suite ------------------------------------------------------------------------------ */

/* ---- misuse: freeing a channel a thread is still blocked in ------------------ */

/* The receiver parks; freeing the channel under it must abort with a message
 * (SIGABRT), never free memory the receiver will touch when it wakes. */
START_TEST(test_free_while_receiver_waits_aborts)
{
    sl_chan *ch = mk(FLAVOR, 4);
    static op_thread o;
    op_start(&o, ch, OP_RECV, 0, 0);
    uint64_t give_up = sl_now_ns() + 10 * SEC;
    while (sl_event_waiters(&ch->not_empty) == 0 && sl_now_ns() < give_up)
        sl_test_sleep_ns(MS);
    ck_assert_msg(sl_event_waiters(&ch->not_empty) > 0, "the receiver never parked");
    sl_chan_free(ch);
    ck_abort_msg("sl_chan_free returned while a receiver was parked in the channel");
}
END_TEST

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
/* A sender stopped past its closed-check (it saw the channel open) while the
 * channel is closed: a non-blocking receiver gets 0 / SL_EMPTY with
 * sl_chan_is_closed true, and the send then returns SL_OK with its message
 * still to be received. So 0 and is_closed are not "closed and drained"
 * (sluice/chan.h, sl_chan_try_recv_n, said so once); SL_CLOSED from
 * sl_chan_try_recv or sl_chan_recv_n_for(0) is, and no message comes after
 * it. */
START_TEST(test_try_recv_n_closed_means_drained)
{
    const sl_flavor f = flavors[_i];
    for (unsigned k = 1;; k++) {
        sl_test_gated_send g = {.ch = mk(f, 4), .k = k, .value = 42};
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, sl_test_send_gated, &g), 0);
        sl_test_wait_stopped(&g);
        sl_chan_close(g.ch);
        uint64_t out[4];
        size_t got = 0;
        sl_status batch_st = sl_chan_recv_n_for(g.ch, out, 4, 0, &got);
        uint64_t one = 0;
        sl_status one_st = sl_chan_try_recv(g.ch, &one);
        atomic_store(&g.gate.go, 1);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        uint64_t late = 0;
        sl_status late_st = sl_chan_try_recv(g.ch, &late);
        bool received = got == 1 || one_st == SL_OK || late_st == SL_OK;
        ck_assert_msg(received == (g.st == SL_OK),
                      "%s, step %u: send %s, receives %s/%s/%s", sl_test_flavor_name(f), k,
                      sl_status_str(g.st), sl_status_str(batch_st), sl_status_str(one_st),
                      sl_status_str(late_st));
        if (batch_st == SL_CLOSED || one_st == SL_CLOSED)
            ck_assert_msg(late_st != SL_OK,
                          "%s, step %u: SL_CLOSED, then message %llu", sl_test_flavor_name(f),
                          k, (unsigned long long)late);
        sl_chan_free(g.ch);
        if (g.passed < k)
            break;
    }
}
END_TEST
#endif

static void teardown_ops(void)
{
    sl_test_sys_restore();
}


/* ---- scenarios that broke other channel implementations ------------------- */

/* Every flavour with a bound and a drop function, for the tests below. */
static const sl_flavor every_flavor[] = { SL_SPSC, SL_MPMC, SL_LIST, SL_RING };

static void count_drop(void *elem, void *ctx)
{
    uint64_t v;
    memcpy(&v, elem, sizeof v);
    if (v != 0x5eed)
        abort(); /* a torn or foreign message: no Check call from a drop */
    (*(long *)ctx)++;
}

/* Random runs of sends and receives, then free: every message the channel
 * took is, exactly once, received, evicted to the drop function (SL_RING)
 * or dropped at free. */
START_TEST(test_drop_random_exactly_once)
{
    const sl_flavor f = every_flavor[_i];
    sl_test_rng rng;
    sl_test_rng_seed(&rng, 0x1f00 + (uint64_t)_i);
    for (int round = 0; round < 100; round++) {
        long dropped = 0, taken = 0, received = 0, evicted = 0;
        sl_chan *ch = sl_test_chan(f, sizeof(uint64_t), 20, count_drop, &dropped);
        int sends = (int)(sl_test_rng_next(&rng) % 50), recvs = (int)(sl_test_rng_next(&rng) % 50);
        uint64_t v = 0x5eed;
        for (int k = 0; k < sends; k++) {
            sl_status st = sl_chan_try_send(ch, &v);
            taken += st == SL_OK || st == SL_EVICTED;
            evicted += st == SL_EVICTED;
        }
        for (int k = 0; k < recvs; k++)
            received += sl_chan_try_recv(ch, &v) == SL_OK;
        CHECK(dropped == evicted, "%s: %ld dropped before free, %ld evicted",
              sl_test_flavor_name(f), dropped, evicted);
        sl_chan_free(ch);
        CHECK(dropped == taken - received, "%s round %d: %ld dropped, %ld taken, %ld received",
              sl_test_flavor_name(f), round, dropped, taken, received);
    }
}
END_TEST

/* Each thread sends, then at once tries to receive: its own send came
 * before its try, so (every thread doing the same) the channel holds at
 * least one message at the try, which must find one. */
typedef struct send_then_take {
    pthread_t thr;
    sl_chan *ch;
    uint64_t n;
    uint64_t misses;
} send_then_take;

static void *send_then_take_main(void *arg)
{
    send_then_take *t = arg;
    uint64_t v = 1;
    for (uint64_t k = 0; k < t->n; k++) {
        if (sl_chan_send(t->ch, &v) != SL_OK || sl_chan_try_recv(t->ch, &v) != SL_OK)
            t->misses++;
    }
    return NULL;
}

START_TEST(test_own_send_then_try_recv)
{
    const sl_flavor f = every_flavor[1 + _i]; /* many senders: not SL_SPSC */
    enum { T = 4 };
    sl_chan *ch = mk(f, T); /* room for every thread's message: SL_RING never evicts */
    send_then_take t[T];
    for (int k = 0; k < T; k++) {
        t[k] = (send_then_take){ .ch = ch, .n = sl_test_scaled(5000, 200) };
        ck_assert_int_eq(pthread_create(&t[k].thr, NULL, send_then_take_main, &t[k]), 0);
    }
    for (int k = 0; k < T; k++) {
        pthread_join(t[k].thr, NULL);
        ck_assert_msg(t[k].misses == 0, "%s: thread %d found nothing %llu times after its send",
                      sl_test_flavor_name(f), k, ULL(t[k].misses));
    }
    ck_assert_uint_eq(sl_chan_len(ch), 0);
    sl_chan_free(ch);
}
END_TEST

/* Threads try to send and receive at random while the main thread reads
 * sl_chan_len: never above the capacity (0 on a rendezvous channel). */
typedef struct len_churn {
    pthread_t thr;
    sl_chan *ch;
    bool sender;
    atomic_bool *stop;
} len_churn;

static void *len_churn_main(void *arg)
{
    len_churn *c = arg;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, (uint64_t)(uintptr_t)c);
    uint64_t v = 2;
    while (!atomic_load_explicit(c->stop, memory_order_relaxed)) {
        if (sl_test_rng_next(&rng) & 1)
            continue;
        if (c->sender)
            (void)sl_chan_try_send(c->ch, &v);
        else
            (void)sl_chan_try_recv(c->ch, &v);
    }
    return NULL;
}

START_TEST(test_len_within_cap_under_churn)
{
    static const size_t caps[] = { 3, 3, 0, 3 }; /* SPSC, MPMC, rendezvous, RING */
    const sl_flavor f = _i == 2 ? SL_MPMC : every_flavor[_i == 3 ? 3 : _i];
    const int threads = f == SL_SPSC ? 2 : 4;
    sl_chan *ch = mk(f, caps[_i]);
    atomic_bool stop = false;
    len_churn c[4];
    for (int k = 0; k < threads; k++) {
        c[k] = (len_churn){ .ch = ch, .sender = k & 1, .stop = &stop };
        ck_assert_int_eq(pthread_create(&c[k].thr, NULL, len_churn_main, &c[k]), 0);
    }
    size_t worst = 0;
    for (uint64_t end = sl_test_now_ns() + 50 * MS; sl_test_now_ns() < end;) {
        size_t n = sl_chan_len(ch);
        worst = n > worst ? n : worst;
    }
    atomic_store(&stop, true);
    for (int k = 0; k < threads; k++)
        pthread_join(c[k].thr, NULL);
    ck_assert_msg(worst <= caps[_i], "%s cap %zu: len read %zu", sl_test_flavor_name(f),
                  caps[_i], worst);
    sl_chan_free(ch);
}
END_TEST

/* Two threads that use only the timed forms, with short timeouts and
 * pauses on both sides, so that many attempts time out mid-stream: every
 * message arrives once and in order (a timed-out attempt consumed nothing). */
typedef struct timed_sender {
    pthread_t thr;
    sl_chan *ch;
    uint64_t n;
    sl_status bad;
} timed_sender;

static void *timed_sender_main(void *arg)
{
    timed_sender *t = arg;
    for (uint64_t k = 0; k < t->n; k++) {
        if (k % 2 == 0)
            sl_test_sleep_ns(200000);
        sl_status st;
        while ((st = sl_chan_send_for(t->ch, &k, 100000)) == SL_TIMEDOUT)
            ;
        if (st != SL_OK) {
            t->bad = st;
            return NULL;
        }
    }
    return NULL;
}

START_TEST(test_timed_forms_two_threads)
{
    static const size_t caps[] = { 2, 2, 0, 2 }; /* SPSC, MPMC, rendezvous, LIST */
    const sl_flavor f = _i == 3 ? SL_LIST : flavors[_i == 0 ? 0 : 1];
    sl_chan *ch = mk(f, caps[_i]);
    timed_sender t = { .ch = ch, .n = sl_test_scaled(150, 30) };
    ck_assert_int_eq(pthread_create(&t.thr, NULL, timed_sender_main, &t), 0);
    uint64_t k = 0;
    for (; k < t.n; k++) {
        if (k % 3 == 0)
            sl_test_sleep_ns(200000);
        uint64_t v = UINT64_MAX;
        sl_status st;
        while ((st = sl_chan_recv_for(ch, &v, 100000)) == SL_TIMEDOUT)
            ;
        if (st != SL_OK || v != k)
            break;
    }
    pthread_join(t.thr, NULL);
    ck_assert_msg(k == t.n && t.bad == SL_OK, "%s cap %zu: stream stopped at %llu of %llu (%s)",
                  sl_test_flavor_name(f), caps[_i], ULL(k), ULL(t.n), sl_status_str(t.bad));
    sl_chan_free(ch);
}
END_TEST

static Suite *chan_suite(void)
{
    Suite *s = suite_create("chan");

    TCase *tc = tcase_create("new");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_new_bad_input, 0, N_FLAVORS);
    tcase_add_test(tc, test_new_bad_flavor);
    tcase_add_loop_test(tc, test_new_reports_opts, 0, N_FLAVORS);
    tcase_add_test(tc, test_null_channel);
    tcase_add_loop_test(tc, test_null_elem_consumes_nothing, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_null_elem_never_blocks, 0, N_FLAVORS);
    suite_add_tcase(s, tc);

    tc = tcase_create("nonblocking");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_exact_capacity, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_exact_capacity_near_wrap, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_empty_try_recv, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_elem_sizes, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_batches, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_model_random, 0, N_FLAVORS);
    suite_add_tcase(s, tc);

    tc = tcase_create("timeouts");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_send_for_full_times_out, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_recv_for_empty_times_out, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_timeout_zero_tries_once, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_timed_forms_two_threads, 0, 4);
    suite_add_tcase(s, tc);

    tc = tcase_create("close");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_close_semantics, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_close_full_channel, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_close_empty_then_recv, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_close_wakes_blocked_receiver, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_close_wakes_blocked_sender, 0, N_FLAVORS);
    tcase_add_test(tc, test_close_wakes_many_mpmc);
#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
    tcase_add_loop_test(tc, test_try_recv_n_closed_means_drained, 0, N_FLAVORS);
#endif
    suite_add_tcase(s, tc);

    tc = tcase_create("blocking");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_blocking_send_completes_after_recv, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_blocking_recv_completes_after_send, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_recv_after_streak, 0, 2 * N_FLAVORS);
    tcase_add_loop_test(tc, test_stream_fifo, 0, N_FLAVORS);
    tcase_add_test(tc, test_mpmc_blocking_exactly_once);
    tcase_add_loop_test(tc, test_own_send_then_try_recv, 0, 3);
    tcase_add_loop_test(tc, test_len_within_cap_under_churn, 0, 4);
    suite_add_tcase(s, tc);

    tc = tcase_create("ptr");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_send_ptr, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_send_ptr_blocked_then_closed, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_try_and_timed_send_ptr, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_send_ptr_blocked_then_received, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_send_ptr_wrong_size, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_send_evict_refused, 0, N_FLAVORS);
    suite_add_tcase(s, tc);

    tc = tcase_create("drop");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_drop_leftovers_in_order, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_drop_full_across_wrap, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_drop_large_elems, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_drop_none_left, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_no_drop_fn_with_leftovers, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_drop_owns_pointers, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_drop_random_exactly_once, 0, 4);
    suite_add_tcase(s, tc);

    tc = tcase_create("syscalls");
    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, NULL, teardown_ops);
    tcase_add_loop_test(tc, test_no_syscalls_without_waiters, 0, N_FLAVORS);
    tcase_add_loop_test(tc, test_one_wake_per_sleeper, 0, N_FLAVORS);
    tcase_add_test(tc, test_every_sleeper_woken);
    suite_add_tcase(s, tc);

    tc = tcase_create("misuse");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test_raise_signal(tc, test_free_while_receiver_waits_aborts, SIGABRT, 0,
                                     N_FLAVORS);
    suite_add_tcase(s, tc);

    tc = tcase_create("recv_n");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_recv_n_bad_input, 0, 4);
    tcase_add_loop_test(tc, test_recv_n_statuses, 0, 4);
    tcase_add_loop_test(tc, test_recv_n_wakes_on_send, 0, 12);
    tcase_add_loop_test(tc, test_recv_n_close_while_waiting, 0, 8);
    tcase_add_loop_test(tc, test_recv_n_fifo_per_producer, 0, 2);
    suite_add_tcase(s, tc);

    tc = tcase_create("typed");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_typed, 0, N_FLAVORS);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sl_test_run(chan_suite());
}
