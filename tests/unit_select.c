/*
 * tests/unit_select.c — sl_select (sluice/select.h) over channels of every
 * flavour.
 *
 * Bad input is refused before anything happens; a poll never waits; a nil
 * (NULL-channel) case is never chosen; timeouts come no earlier than asked;
 * exactly one operation happens per call; send cases follow each flavour's
 * rules (a full SL_MPMC is not ready, a full SL_RING is and evicts, SL_LIST
 * always is); closed channels are ready with SL_CLOSED; ready cases are chosen
 * uniformly (with a generous bound: the test must never be flaky); a selector
 * blocked forever wakes on a send, on a receive that makes room and on close,
 * and sleeps without burning CPU. sl_select_biased runs the bad-input,
 * time-out and wake-up tests too, and its own: the lowest ready case wins
 * over random readiness in every flavour, no allocation at 200 cases, and
 * case 0 starves the others while it stays ready.
 *
 * "It is blocked" is judged by the call not having returned after a short
 * sleep, never by an upper bound on time.
 */
#include "harness.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sluice/chan.h>
#include <sluice/chanfd.h>
#include <sluice/select.h>

#include "../channels/chan_impl.h" /* the channels' selector counts, to check they are released */
#include "internal/sysops.h"    /* counting the selector's futex waits */
#include "internal/testing.h"   /* a sender stopped at a chosen step (faults build) */

static const sl_flavor all_flavors[] = {SL_SPSC, SL_MPMC, SL_LIST, SL_RING};

/* The tests of behaviour both selects share run over this table: sl_select,
 * then sl_select_biased (`which` in their loop index). */
typedef sl_status (*select_fn)(sl_select_case *, size_t, uint64_t, size_t *);
static const select_fn select_fns[2] = {sl_select, sl_select_biased};
static const char *const select_names[2] = {"sl_select", "sl_select_biased"};

/* Records every dropped message (8-byte values). */
typedef struct drops {
    uint64_t v[64];
    int n;
} drops;

static void rec_drop(void *elem, void *ctx)
{
    drops *d = ctx;
    uint64_t x;
    memcpy(&x, elem, sizeof x);
    if (d->n < 64)
        d->v[d->n] = x;
    d->n++;
}

static sl_chan *mk(sl_flavor f, size_t cap, sl_drop_fn drop, void *ctx)
{
    return sl_test_chan(f, 8, cap, drop, ctx);
}

static void put(sl_chan *ch, uint64_t v)
{
    ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
}

static uint64_t get(sl_chan *ch)
{
    uint64_t v = ~0ull;
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_OK);
    return v;
}

static unsigned selectors(const sl_chan *ch)
{
    return atomic_load(&((sl_chan *)(uintptr_t)ch)->selectors);
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

/* ---- a thread that runs one select ----------------------------------------- */

typedef struct sel_thread {
    pthread_t thr;
    sl_select_case cases[8];
    size_t n;
    uint64_t timeout;
    int which; /* index into select_fns */
    sl_status st;
    size_t index;
    uint64_t cpu_ns, wall_ns;
    atomic_int done;
} sel_thread;

static void *sel_main(void *arg)
{
    sel_thread *t = arg;
    uint64_t c0 = thread_cpu_ns(), w0 = sl_test_now_ns();
    t->st = select_fns[t->which](t->cases, t->n, t->timeout, &t->index);
    t->cpu_ns = thread_cpu_ns() - c0;
    t->wall_ns = sl_test_now_ns() - w0;
    atomic_store(&t->done, 1);
    return NULL;
}

/* Starts the select and checks that it blocks. */
static void sel_start(sel_thread *t, size_t n, uint64_t timeout)
{
    t->n = n;
    t->timeout = timeout;
    t->st = (sl_status)-1;
    t->index = SIZE_MAX;
    atomic_store(&t->done, 0);
    ck_assert_int_eq(pthread_create(&t->thr, NULL, sel_main, t), 0);
    sl_test_sleep_ns(30 * MS);
    ck_assert_msg(atomic_load(&t->done) == 0,
                  "%s returned %s (index %zu) instead of blocking", select_names[t->which],
                  sl_status_str(t->st), t->index);
}

static sl_status sel_join(sel_thread *t)
{
    ck_assert_int_eq(pthread_join(t->thr, NULL), 0);
    ck_assert_int_eq(atomic_load(&t->done), 1);
    return t->st;
}

/* =========================================================================
 * Bad input
 * ========================================================================= */

START_TEST(test_bad_input)
{
    const select_fn sel = select_fns[_i];
    sl_chan *a = mk(SL_MPMC, 4, NULL, NULL), *b = mk(SL_LIST, 0, NULL, NULL);
    sl_chan *r = mk(SL_RING, 1, NULL, NULL);
    put(a, 1); /* a and b are ready to receive from, r to send into */
    put(b, 2);
    put(r, 3);
    uint64_t x = 10, y = 20, z = 30;
    size_t idx = 12345;
    const uint64_t timeouts[] = {0, 5 * MS, SL_FOREVER};
    for (int t = 0; t < N_OF(timeouts); t++) {
        uint64_t to = timeouts[t];
        sl_select_case ok[2] = {{a, SL_SEL_RECV, &x}, {r, SL_SEL_SEND, &y}};
        ck_assert_int_eq(sel(NULL, 2, to, &idx), SL_EINVAL);
        ck_assert_int_eq(sel(ok, 2, to, NULL), SL_EINVAL);
        ck_assert_int_eq(sel(ok, 0, to, &idx), SL_EINVAL);
        /* More cases than a rendezvous claim word can name: refused before
         * any case is read (ASan sees a read past ok[1]). */
        ck_assert_int_eq(sel(ok, (size_t)UINT32_MAX, to, &idx), SL_EINVAL);

        /* A NULL buffer on a case with a channel, next to ready cases. */
        sl_select_case nb[3] = {{a, SL_SEL_RECV, &x}, {b, SL_SEL_RECV, NULL}, {r, SL_SEL_SEND, &y}};
        ck_assert_int_eq(sel(nb, 3, to, &idx), SL_EINVAL);
        sl_select_case nbs[2] = {{a, SL_SEL_RECV, &x}, {b, SL_SEL_SEND, NULL}};
        ck_assert_int_eq(sel(nbs, 2, to, &idx), SL_EINVAL);

        /* An op that is neither send nor receive. */
        const int bad_ops[] = {-1, 2, 7, 1000};
        for (int k = 0; k < N_OF(bad_ops); k++) {
            sl_select_case bo[3] = {{a, SL_SEL_RECV, &x}, {b, (sl_select_op)bad_ops[k], &z},
                                    {r, SL_SEL_SEND, &y}};
            ck_assert_msg(sel(bo, 3, to, &idx) == SL_EINVAL, "op %d accepted", bad_ops[k]);
        }

        /* No case with a channel at all. */
        sl_select_case none[3] = {{NULL, SL_SEL_RECV, &x}, {NULL, SL_SEL_SEND, &y},
                                  {NULL, SL_SEL_RECV, NULL}};
        ck_assert_int_eq(sel(none, 3, to, &idx), SL_EINVAL);
        ck_assert_int_eq(sel(none, 1, to, &idx), SL_EINVAL);

        /* Nothing happened. */
        ck_assert_uint_eq(x, 10);
        ck_assert_uint_eq(z, 30);
        ck_assert_uint_eq(sl_chan_len(a), 1);
        ck_assert_uint_eq(sl_chan_len(b), 1);
        ck_assert_uint_eq(sl_chan_len(r), 1);
        ck_assert_uint_eq(selectors(a) + selectors(b) + selectors(r), 0);
    }
    ck_assert_uint_eq(get(a), 1);
    ck_assert_uint_eq(get(b), 2);
    ck_assert_uint_eq(get(r), 3);
    sl_chan_free(a);
    sl_chan_free(b);
    sl_chan_free(r);
}
END_TEST

/* =========================================================================
 * Polls and time-outs
 * ========================================================================= */

START_TEST(test_poll_nothing_ready)
{
    sl_chan *e1 = mk(SL_MPMC, 2, NULL, NULL), *e2 = mk(SL_LIST, 0, NULL, NULL);
    sl_chan *e3 = mk(SL_SPSC, 2, NULL, NULL), *e4 = mk(SL_RING, 2, NULL, NULL);
    sl_chan *full = mk(SL_MPMC, 1, NULL, NULL);
    sl_chan *sfull = mk(SL_SPSC, 1, NULL, NULL);
    put(full, 5);
    put(sfull, 6);
    uint64_t b[6] = {0, 0, 0, 0, 100, 200};
    sl_select_case cs[6] = {{e1, SL_SEL_RECV, &b[0]},  {e2, SL_SEL_RECV, &b[1]},
                            {e3, SL_SEL_RECV, &b[2]},  {e4, SL_SEL_RECV, &b[3]},
                            {full, SL_SEL_SEND, &b[4]}, {sfull, SL_SEL_SEND, &b[5]}};
    const int polls = 2000;
    uint64_t t0 = sl_test_now_ns();
    for (int i = 0; i < polls; i++) {
        size_t idx = 99;
        sl_status st = sl_select(cs, 6, 0, &idx);
        CHECK(st == SL_TIMEDOUT, "poll %d with nothing ready returned %s (index %zu)", i,
              sl_status_str(st), idx);
    }
    uint64_t el = sl_test_now_ns() - t0;
    /* A poll never waits: 2000 of them take nowhere near a second. */
    ck_assert_msg(el < 2 * SEC, "%d polls took %llu ms", polls, ULL(el / MS));
    ck_assert_uint_eq(sl_chan_len(full), 1);
    ck_assert_uint_eq(sl_chan_len(sfull), 1);
    ck_assert_uint_eq(sl_chan_len(e1) + sl_chan_len(e2) + sl_chan_len(e3) + sl_chan_len(e4), 0);
    ck_assert_uint_eq(get(full), 5);
    ck_assert_uint_eq(get(sfull), 6);
    sl_chan *all[] = {e1, e2, e3, e4, full, sfull};
    for (int i = 0; i < N_OF(all); i++) {
        ck_assert_uint_eq(selectors(all[i]), 0);
        sl_chan_free(all[i]);
    }
}
END_TEST

START_TEST(test_nil_case_never_chosen)
{
    sl_chan *a = mk(SL_MPMC, 4, NULL, NULL);
    uint64_t v = 0, junk = 0;
    /* Nil cases may have any buffer, NULL included. */
    sl_select_case cs[5] = {{NULL, SL_SEL_RECV, &junk}, {NULL, SL_SEL_SEND, NULL},
                            {a, SL_SEL_RECV, &v},       {NULL, SL_SEL_RECV, NULL},
                            {NULL, SL_SEL_SEND, &junk}};
    for (uint64_t i = 0; i < 3000; i++) {
        put(a, i);
        size_t idx = 99;
        sl_status st = sl_select(cs, 5, (i & 1) ? 0 : SL_FOREVER, &idx);
        CHECK(st == SL_OK && idx == 2 && v == i, "select %llu: %s index %zu value %llu", ULL(i),
              sl_status_str(st), idx, ULL(v));
    }
    ck_assert_uint_eq(junk, 0);
    /* Only nil cases besides an empty channel: a time-out, never a nil case. */
    size_t idx = 99;
    ck_assert_int_eq(sl_select(cs, 5, 0, &idx), SL_TIMEDOUT);
    ck_assert_int_eq(sl_select(cs, 5, 2 * MS, &idx), SL_TIMEDOUT);

    /* More cases than the stack shuffle holds. */
    sl_select_case *many = calloc(200, sizeof *many);
    ck_assert_ptr_nonnull(many);
    for (int i = 0; i < 200; i++)
        many[i] = (sl_select_case){NULL, (i & 1) ? SL_SEL_SEND : SL_SEL_RECV, NULL};
    many[137] = (sl_select_case){a, SL_SEL_RECV, &v};
    for (uint64_t i = 0; i < 200; i++) {
        put(a, i);
        idx = 0;
        sl_status st = sl_select(many, 200, 0, &idx);
        CHECK(st == SL_OK && idx == 137 && v == i, "200 cases: %s index %zu", sl_status_str(st),
              idx);
    }
    ck_assert_int_eq(sl_select(many, 200, 0, &idx), SL_TIMEDOUT);
    free(many);
    ck_assert_uint_eq(selectors(a), 0);
    sl_chan_free(a);
}
END_TEST

START_TEST(test_timeout_not_early)
{
    const select_fn sel = select_fns[_i];
    sl_chan *a = mk(SL_MPMC, 1, NULL, NULL), *b = mk(SL_LIST, 0, NULL, NULL);
    sl_chan *full = mk(SL_MPMC, 1, NULL, NULL);
    put(full, 9);
    uint64_t x = 0, y = 0, s = 42;
    sl_select_case cs[3] = {{a, SL_SEL_RECV, &x}, {b, SL_SEL_RECV, &y}, {full, SL_SEL_SEND, &s}};
    const uint64_t tos[] = {1000, 100000, 1 * MS, 10 * MS, 50 * MS};
    for (int i = 0; i < N_OF(tos); i++) {
        size_t idx = 99;
        uint64_t t0 = sl_test_now_ns();
        sl_status st = sel(cs, 3, tos[i], &idx);
        uint64_t el = sl_test_now_ns() - t0;
        ck_assert_msg(st == SL_TIMEDOUT, "timeout %llu ns: %s", ULL(tos[i]), sl_status_str(st));
        ck_assert_msg(el >= tos[i], "timeout %llu ns: SL_TIMEDOUT after only %llu ns", ULL(tos[i]),
                      ULL(el));
    }
    ck_assert_uint_eq(sl_chan_len(full), 1);
    ck_assert_uint_eq(x + y, 0);
    ck_assert_uint_eq(selectors(a) + selectors(b) + selectors(full), 0);
    sl_chan_free(a);
    sl_chan_free(b);
    sl_chan_free(full);
}
END_TEST

/* =========================================================================
 * Exactly one operation
 * ========================================================================= */

START_TEST(test_exactly_one_recv)
{
    /* Two channels of the pair of flavours (_i indexes 16 pairs) hold one
     * message each: one select takes exactly one. */
    const sl_flavor fa = all_flavors[_i / 4], fb = all_flavors[_i % 4];
    int picked[2] = {0, 0};
    for (int round = 0; round < 200; round++) {
        sl_chan *a = mk(fa, 4, NULL, NULL), *b = mk(fb, 4, NULL, NULL);
        put(a, 111);
        put(b, 222);
        uint64_t x = 0, y = 0;
        sl_select_case cs[2] = {{a, SL_SEL_RECV, &x}, {b, SL_SEL_RECV, &y}};
        size_t idx = 99;
        sl_status st = sl_select(cs, 2, (round & 1) ? 0 : SL_FOREVER, &idx);
        CHECK(st == SL_OK, "%s/%s: %s", sl_test_flavor_name(fa), sl_test_flavor_name(fb),
              sl_status_str(st));
        size_t la = sl_chan_len(a), lb = sl_chan_len(b);
        CHECK(la + lb == 1, "%s/%s: %zu + %zu messages left after one select",
              sl_test_flavor_name(fa), sl_test_flavor_name(fb), la, lb);
        if (idx == 0)
            CHECK(la == 0 && x == 111 && y == 0, "%s/%s: index 0 but a len %zu x %llu y %llu",
                  sl_test_flavor_name(fa), sl_test_flavor_name(fb), la, ULL(x), ULL(y));
        else
            CHECK(idx == 1 && lb == 0 && y == 222 && x == 0,
                  "%s/%s: index %zu, b len %zu x %llu y %llu", sl_test_flavor_name(fa),
                  sl_test_flavor_name(fb), idx, lb, ULL(x), ULL(y));
        picked[idx]++;
        sl_chan_free(a);
        sl_chan_free(b);
    }
    ck_assert_msg(picked[0] > 0 && picked[1] > 0, "%s/%s: one case never chosen (%d / %d)",
                  sl_test_flavor_name(fa), sl_test_flavor_name(fb), picked[0], picked[1]);
}
END_TEST

START_TEST(test_exactly_one_send)
{
    /* Send cases into channels with room (one of each flavour): exactly one
     * gains a message. */
    int picked[4] = {0, 0, 0, 0};
    for (int round = 0; round < 400; round++) {
        sl_chan *c[4];
        uint64_t v[4];
        sl_select_case cs[4];
        for (int i = 0; i < 4; i++) {
            c[i] = mk(all_flavors[i], 2, NULL, NULL);
            v[i] = 1000 + (uint64_t)i;
            cs[i] = (sl_select_case){c[i], SL_SEL_SEND, &v[i]};
        }
        size_t idx = 99;
        sl_status st = sl_select(cs, 4, 0, &idx);
        CHECK(st == SL_OK && idx < 4, "send select: %s index %zu", sl_status_str(st), idx);
        for (int i = 0; i < 4; i++) {
            size_t want = (size_t)i == idx ? 1 : 0;
            CHECK(sl_chan_len(c[i]) == want, "send select chose %zu, but %s holds %zu", idx,
                  sl_test_flavor_name(all_flavors[i]), sl_chan_len(c[i]));
        }
        CHECK(get(c[idx]) == 1000 + idx, "wrong message sent");
        picked[idx]++;
        for (int i = 0; i < 4; i++)
            sl_chan_free(c[i]);
    }
    for (int i = 0; i < 4; i++)
        ck_assert_msg(picked[i] > 0, "send case on %s never chosen",
                      sl_test_flavor_name(all_flavors[i]));
}
END_TEST

/* =========================================================================
 * Send cases per flavour
 * ========================================================================= */

START_TEST(test_send_case_rules)
{
    static drops d;
    memset(&d, 0, sizeof d);
    sl_chan *m = mk(SL_MPMC, 2, NULL, NULL);
    sl_chan *s = mk(SL_SPSC, 1, NULL, NULL);
    sl_chan *r = mk(SL_RING, 2, rec_drop, &d);
    sl_chan *l = mk(SL_LIST, 0, NULL, NULL);
    put(m, 1);
    put(m, 2);
    put(s, 3);
    put(r, 10);
    put(r, 11);
    uint64_t vm = 50, vs = 60, vr = 70, vl = 80;
    size_t idx = 99;

    /* Full MPMC / SPSC send cases are not ready. */
    sl_select_case full[2] = {{m, SL_SEL_SEND, &vm}, {s, SL_SEL_SEND, &vs}};
    ck_assert_int_eq(sl_select(full, 2, 0, &idx), SL_TIMEDOUT);
    ck_assert_int_eq(sl_select(full, 2, 3 * MS, &idx), SL_TIMEDOUT);
    ck_assert_uint_eq(sl_chan_len(m), 2);
    ck_assert_uint_eq(sl_chan_len(s), 1);

    /* A full ring's send case is ready: it evicts the oldest to the drop
     * function and returns SL_EVICTED. Next to the full MPMC it is always the
     * one chosen. */
    sl_select_case with_ring[3] = {{m, SL_SEL_SEND, &vm}, {r, SL_SEL_SEND, &vr},
                                   {s, SL_SEL_SEND, &vs}};
    for (int i = 0; i < 20; i++) {
        idx = 99;
        vr = 70 + (uint64_t)i;
        sl_status st = sl_select(with_ring, 3, (i & 1) ? 0 : SL_FOREVER, &idx);
        ck_assert_msg(st == SL_EVICTED && idx == 1, "full ring send case: %s index %zu",
                      sl_status_str(st), idx);
        ck_assert_int_eq(d.n, i + 1);
        uint64_t want = i == 0 ? 10 : i == 1 ? 11 : 70 + (uint64_t)i - 2;
        ck_assert_msg(d.v[i] == want, "eviction %d dropped %llu, the oldest was %llu", i,
                      ULL(d.v[i]), ULL(want));
        ck_assert_uint_eq(sl_chan_len(r), 2);
    }
    ck_assert_uint_eq(sl_chan_len(m), 2);
    ck_assert_uint_eq(sl_chan_len(s), 1);
    /* A ring with room: plain SL_OK, nothing dropped. */
    ck_assert_uint_eq(get(r), 88);
    vr = 500;
    ck_assert_int_eq(sl_select(with_ring, 3, 0, &idx), SL_OK);
    ck_assert_uint_eq(idx, 1);
    ck_assert_int_eq(d.n, 20);

    /* A list's send case is always ready. */
    sl_select_case with_list[3] = {{m, SL_SEL_SEND, &vm}, {l, SL_SEL_SEND, &vl},
                                   {s, SL_SEL_SEND, &vs}};
    for (uint64_t i = 0; i < 5000; i++) {
        vl = i;
        sl_status st = sl_select(with_list, 3, (i & 1) ? SL_FOREVER : 0, &idx);
        CHECK(st == SL_OK && idx == 1, "list send case: %s index %zu", sl_status_str(st), idx);
    }
    ck_assert_uint_eq(sl_chan_len(l), 5000);
    for (uint64_t i = 0; i < 5000; i++)
        CHECK(get(l) == i, "list message %llu out of order", ULL(i));

    sl_chan *all[] = {m, s, r, l};
    for (int i = 0; i < 4; i++) {
        ck_assert_uint_eq(selectors(all[i]), 0);
        sl_chan_free(all[i]);
    }
    ck_assert_int_eq(d.n, 22); /* at free: r's leftovers 89 and 500, oldest first */
    ck_assert_uint_eq(d.v[20], 89);
    ck_assert_uint_eq(d.v[21], 500);
}
END_TEST

/* =========================================================================
 * Closed channels
 * ========================================================================= */

START_TEST(test_closed_case)
{
    const sl_flavor f = all_flavors[_i];
    sl_chan *c = mk(f, 4, NULL, NULL);
    sl_chan *e = mk(SL_MPMC, 4, NULL, NULL); /* stays empty and open */
    put(c, 1);
    put(c, 2);
    sl_chan_close(c);
    uint64_t x = 0, y = 0;
    sl_select_case cs[2] = {{e, SL_SEL_RECV, &y}, {c, SL_SEL_RECV, &x}};
    size_t idx = 99;
    /* Receive: what is inside first, then SL_CLOSED, also when waiting forever. */
    ck_assert_int_eq(sl_select(cs, 2, 0, &idx), SL_OK);
    ck_assert_uint_eq(idx, 1);
    ck_assert_uint_eq(x, 1);
    ck_assert_int_eq(sl_select(cs, 2, SL_FOREVER, &idx), SL_OK);
    ck_assert_uint_eq(x, 2);
    for (int i = 0; i < 3; i++) {
        idx = 99;
        sl_status st = sl_select(cs, 2, i == 0 ? 0 : i == 1 ? 5 * MS : SL_FOREVER, &idx);
        ck_assert_msg(st == SL_CLOSED && idx == 1, "%s closed and drained: %s index %zu",
                      sl_test_flavor_name(f), sl_status_str(st), idx);
    }
    /* Send into a closed channel: SL_CLOSED, nothing consumed. */
    uint64_t v = 7;
    sl_select_case sc[2] = {{e, SL_SEL_RECV, &y}, {c, SL_SEL_SEND, &v}};
    ck_assert_int_eq(sl_select(sc, 2, 0, &idx), SL_CLOSED);
    ck_assert_uint_eq(idx, 1);
    ck_assert_int_eq(sl_select(sc, 2, SL_FOREVER, &idx), SL_CLOSED);
    ck_assert_uint_eq(sl_chan_len(c), 0);
    ck_assert_uint_eq(selectors(c) + selectors(e), 0);
    sl_chan_free(c);
    sl_chan_free(e);
}
END_TEST

/* A full channel that is closed: its send case is ready with SL_CLOSED, not
 * refused as full (a select looks at an SL_MPMC case before trying it:
 * channels/chan.c, poll_send_with). The recv case's twin is test_closed_case's
 * closed and drained channel. */
START_TEST(test_closed_full_send_case)
{
    sl_chan *c = mk(SL_MPMC, 2, NULL, NULL);
    sl_chan *e = mk(SL_MPMC, 4, NULL, NULL); /* stays empty and open */
    put(c, 1);
    put(c, 2);
    uint64_t v = 7, y = 0;
    size_t idx = 99;
    sl_select_case sc[2] = {{e, SL_SEL_RECV, &y}, {c, SL_SEL_SEND, &v}};
    ck_assert_int_eq(sl_select(sc, 2, 0, &idx), SL_TIMEDOUT); /* full and open: refused */
    sl_chan_close(c);
    for (int i = 0; i < 3; i++) {
        idx = 99;
        sl_status st = sl_select(sc, 2, i == 0 ? 0 : i == 1 ? 5 * MS : SL_FOREVER, &idx);
        ck_assert_msg(st == SL_CLOSED && idx == 1, "closed full channel's send case: %s index %zu",
                      sl_status_str(st), idx);
    }
    ck_assert_uint_eq(sl_chan_len(c), 2);
    sl_chan_free(c);
    sl_chan_free(e);
}
END_TEST

/* =========================================================================
 * Fairness
 * ========================================================================= */

/* Always-ready receive cases of one flavour, three (the general shuffle) or
 * two (the common select's size, ordered by one draw: channels/select.c,
 * shuffle): each is chosen its share of the rounds, within a twelfth of them
 * for three cases and a twentieth for two (17 standard deviations or more at
 * 30000 rounds). */
START_TEST(test_fairness_recv)
{
    const sl_flavor f = all_flavors[_i % 4];
    const int n = _i < 4 ? 3 : 2;
    sl_chan *c[3];
    uint64_t v[3];
    sl_select_case cs[3];
    for (int i = 0; i < n; i++) {
        c[i] = mk(f, 4, NULL, NULL);
        put(c[i], (uint64_t)i);
        cs[i] = (sl_select_case){c[i], SL_SEL_RECV, &v[i]};
    }
    const int rounds = 30000;
    int count[3] = {0, 0, 0};
    for (int k = 0; k < rounds; k++) {
        size_t idx = 99;
        sl_status st = sl_select(cs, (size_t)n, 0, &idx);
        CHECK(st == SL_OK && idx < (size_t)n, "%s: %s index %zu", sl_test_flavor_name(f),
              sl_status_str(st), idx);
        CHECK(v[idx] == idx, "%s: case %zu got %llu", sl_test_flavor_name(f), idx, ULL(v[idx]));
        count[idx]++;
        put(c[idx], idx); /* always ready again */
    }
    for (int i = 0; i < n; i++) {
        ck_assert_msg(abs(count[i] - rounds / n) <= rounds / (n == 3 ? 12 : 20),
                      "%s, %d cases: case %d chosen %d of %d times (counts %d %d %d)",
                      sl_test_flavor_name(f), n, i, count[i], rounds, count[0], count[1], count[2]);
        ck_assert_uint_eq(sl_chan_len(c[i]), 1);
        sl_chan_free(c[i]);
    }
}
END_TEST

/* SL_MPMC's larger forms (a 64-byte message lives in a swapped slot, a
 * 300-byte one in an indexed slot) behind select's look: the idle cases
 * (a full channel, an empty one) are refused with their contents untouched,
 * the ready case moves the whole message, and a drained close is ready. */
START_TEST(test_large_messages)
{
    const size_t size = _i == 0 ? 64 : 300;
    sl_chan *data = sl_test_chan(SL_MPMC, size, 4, NULL, NULL);
    sl_chan *full = sl_test_chan(SL_MPMC, size, 1, NULL, NULL);
    sl_chan *empty = sl_test_chan(SL_MPMC, size, 1, NULL, NULL);
    unsigned char in[300], out[300], idle[300], other[300];
    memset(idle, 0xee, sizeof idle);
    ck_assert_int_eq(sl_chan_try_send(full, idle), SL_OK);
    for (int round = 0; round < 64; round++) {
        memset(in, round, sizeof in);
        memset(other, 0x55, sizeof other);
        size_t idx = 99;
        sl_select_case sc[2] = {{full, SL_SEL_SEND, other}, {data, SL_SEL_SEND, in}};
        ck_assert_int_eq(sl_select(sc, 2, 0, &idx), SL_OK);
        ck_assert_uint_eq(idx, 1);
        sl_select_case rc[2] = {{empty, SL_SEL_RECV, other}, {data, SL_SEL_RECV, out}};
        ck_assert_int_eq(sl_select(rc, 2, 0, &idx), SL_OK);
        ck_assert_uint_eq(idx, 1);
        ck_assert_mem_eq(out, in, size);
        for (size_t b = 0; b < size; b++) /* the refused receive wrote nothing */
            ck_assert_uint_eq(other[b], 0x55);
    }
    ck_assert_uint_eq(sl_chan_len(full), 1);
    ck_assert_int_eq(sl_chan_try_recv(full, out), SL_OK);
    ck_assert_mem_eq(out, idle, size);
    sl_chan_close(data);
    size_t idx = 99;
    sl_select_case rc[2] = {{empty, SL_SEL_RECV, other}, {data, SL_SEL_RECV, out}};
    ck_assert_int_eq(sl_select(rc, 2, SL_FOREVER, &idx), SL_CLOSED);
    ck_assert_uint_eq(idx, 1);
    sl_chan_free(data);
    sl_chan_free(full);
    sl_chan_free(empty);
}
END_TEST

START_TEST(test_fairness_send)
{
    /* Three always-ready send cases: LIST, a full RING, an MPMC kept empty. */
    sl_chan *l = mk(SL_LIST, 0, NULL, NULL), *r = mk(SL_RING, 1, NULL, NULL);
    sl_chan *m = mk(SL_MPMC, 1, NULL, NULL);
    put(r, 0);
    uint64_t a = 1, b = 2, c = 3;
    sl_select_case cs[3] = {{l, SL_SEL_SEND, &a}, {r, SL_SEL_SEND, &b}, {m, SL_SEL_SEND, &c}};
    const int rounds = 30000;
    int count[3] = {0, 0, 0};
    uint64_t o;
    for (int k = 0; k < rounds; k++) {
        size_t idx = 99;
        sl_status st = sl_select(cs, 3, 0, &idx);
        CHECK((st == SL_OK && idx != 1) || (st == SL_EVICTED && idx == 1),
              "send fairness: %s index %zu", sl_status_str(st), idx);
        count[idx]++;
        if (idx == 0)
            sl_chan_try_recv(l, &o);
        else if (idx == 2)
            sl_chan_try_recv(m, &o);
    }
    for (int i = 0; i < 3; i++)
        ck_assert_msg(count[i] >= rounds / 4 && count[i] <= rounds * 42 / 100,
                      "send case %d chosen %d of %d times (counts %d %d %d)", i, count[i], rounds,
                      count[0], count[1], count[2]);
    sl_chan_free(l);
    sl_chan_free(r);
    sl_chan_free(m);
}
END_TEST

/* =========================================================================
 * Blocking: wake-ups
 * ========================================================================= */

/* A selector blocked forever on four empty channels, one per flavour, wakes
 * on a send (of each form) into any one of them. */
START_TEST(test_wake_on_send)
{
    /* 4 channels x 4 send forms x both selects */
    const int target = _i % 4, form = (_i / 4) % 4;
    sl_chan *c[4];
    sel_thread *t = calloc(1, sizeof *t);
    ck_assert_ptr_nonnull(t);
    t->which = _i / 16;
    uint64_t buf[4] = {0, 0, 0, 0};
    for (int i = 0; i < 4; i++) {
        c[i] = mk(all_flavors[i], 4, NULL, NULL);
        t->cases[i] = (sl_select_case){c[i], SL_SEL_RECV, &buf[i]};
    }
    sel_start(t, 4, SL_FOREVER);
    /* It registers when its spin ends: on a loaded machine (sanitizers, two
     * cores) that can be later than sel_start's 30 ms, so wait for it. */
    for (uint64_t give_up = sl_test_now_ns() + 10 * SEC;
         selectors(c[3]) == 0 && sl_test_now_ns() < give_up;)
        sl_test_sleep_ns(MS);
    for (int i = 0; i < 4; i++)
        ck_assert_msg(selectors(c[i]) >= 1, "a blocked selector is not registered on %s",
                      sl_test_flavor_name(all_flavors[i]));
    uint64_t v = 4000 + (uint64_t)target, ev;
    switch (form) {
    case 0: ck_assert_int_eq(sl_chan_send(c[target], &v), SL_OK); break;
    case 1: ck_assert_int_eq(sl_chan_try_send(c[target], &v), SL_OK); break;
    case 2: ck_assert_uint_eq(sl_chan_try_send_n(c[target], &v, 1), 1); break;
    default:
        if (all_flavors[target] == SL_RING)
            ck_assert_int_eq(sl_chan_send_evict(c[target], &v, &ev), SL_OK);
        else
            ck_assert_int_eq(sl_chan_send_for(c[target], &v, 10 * MS), SL_OK);
    }
    sl_status st = sel_join(t);
    ck_assert_msg(st == SL_OK && t->index == (size_t)target && buf[target] == v,
                  "woken by a send on %s (form %d): %s index %zu value %llu",
                  sl_test_flavor_name(all_flavors[target]), form, sl_status_str(st), t->index,
                  ULL(buf[target]));
    for (int i = 0; i < 4; i++) {
        ck_assert_uint_eq(sl_chan_len(c[i]), 0);
        ck_assert_uint_eq(selectors(c[i]), 0);
        sl_chan_free(c[i]);
    }
    free(t);
}
END_TEST

/* A selector blocked on a send case into a full channel (plus empty receive
 * cases) wakes when a receive makes room, and its message is sent. */
START_TEST(test_wake_on_room)
{
    const sl_flavor f = (_i & 1) ? SL_SPSC : SL_MPMC;
    const int form = _i >> 1; /* plain receive or a batch receive */
    sl_chan *full = mk(f, 2, NULL, NULL), *e1 = mk(SL_LIST, 0, NULL, NULL);
    sl_chan *e2 = mk(SL_MPMC, 2, NULL, NULL);
    put(full, 1);
    put(full, 2);
    sel_thread *t = calloc(1, sizeof *t);
    ck_assert_ptr_nonnull(t);
    uint64_t msg = 77, b1 = 0, b2 = 0;
    t->cases[0] = (sl_select_case){e1, SL_SEL_RECV, &b1};
    t->cases[1] = (sl_select_case){full, SL_SEL_SEND, &msg};
    t->cases[2] = (sl_select_case){e2, SL_SEL_RECV, &b2};
    sel_start(t, 3, SL_FOREVER);
    uint64_t o[2] = {0, 0};
    if (form == 0)
        ck_assert_int_eq(sl_chan_recv(full, &o[0]), SL_OK);
    else
        ck_assert_uint_eq(sl_chan_try_recv_n(full, o, 1), 1);
    ck_assert_uint_eq(o[0], 1);
    sl_status st = sel_join(t);
    ck_assert_msg(st == SL_OK && t->index == 1, "woken by room on %s: %s index %zu",
                  sl_test_flavor_name(f), sl_status_str(st), t->index);
    ck_assert_uint_eq(sl_chan_len(full), 2);
    ck_assert_uint_eq(get(full), 2);
    ck_assert_uint_eq(get(full), 77);
    ck_assert_uint_eq(selectors(full) + selectors(e1) + selectors(e2), 0);
    sl_chan_free(full);
    sl_chan_free(e1);
    sl_chan_free(e2);
    free(t);
}
END_TEST

/* A selector blocked forever wakes when any one of its channels closes. */
START_TEST(test_wake_on_close)
{
    const int target = _i % 4; /* x both selects */
    sl_chan *c[4];
    sel_thread *t = calloc(1, sizeof *t);
    ck_assert_ptr_nonnull(t);
    t->which = _i / 4;
    uint64_t buf[4] = {0, 0, 0, 0};
    for (int i = 0; i < 4; i++) {
        c[i] = mk(all_flavors[i], 4, NULL, NULL);
        t->cases[i] = (sl_select_case){c[i], SL_SEL_RECV, &buf[i]};
    }
    sel_start(t, 4, SL_FOREVER);
    sl_chan_close(c[target]);
    sl_status st = sel_join(t);
    ck_assert_msg(st == SL_CLOSED && t->index == (size_t)target,
                  "woken by closing %s: %s index %zu", sl_test_flavor_name(all_flavors[target]),
                  sl_status_str(st), t->index);
    for (int i = 0; i < 4; i++) {
        ck_assert_uint_eq(selectors(c[i]), 0);
        sl_chan_free(c[i]);
    }

    /* Also a selector blocked on a send case into a full channel. */
    sl_chan *full = mk(SL_MPMC, 1, NULL, NULL);
    put(full, 1);
    uint64_t v = 2;
    t->cases[0] = (sl_select_case){full, SL_SEL_SEND, &v};
    t->cases[1] = (sl_select_case){NULL, SL_SEL_RECV, NULL};
    sel_start(t, 2, SL_FOREVER);
    sl_chan_close(full);
    st = sel_join(t);
    ck_assert_msg(st == SL_CLOSED && t->index == 0, "send case, close: %s index %zu",
                  sl_status_str(st), t->index);
    ck_assert_uint_eq(sl_chan_len(full), 1);
    sl_chan_free(full);
    free(t);
}
END_TEST

/* A timed select is woken early by a send, and the same channel may appear in
 * two cases. */
START_TEST(test_wake_timed_and_duplicate)
{
    sl_chan *a = mk(SL_MPMC, 4, NULL, NULL), *b = mk(SL_RING, 2, NULL, NULL);
    sel_thread *t = calloc(1, sizeof *t);
    ck_assert_ptr_nonnull(t);
    uint64_t x = 0, y = 0, z = 0;
    t->cases[0] = (sl_select_case){a, SL_SEL_RECV, &x};
    t->cases[1] = (sl_select_case){b, SL_SEL_RECV, &y};
    t->cases[2] = (sl_select_case){a, SL_SEL_RECV, &z};
    sel_start(t, 3, 20 * SEC);
    /* It registers when its spin ends, which on a loaded machine can be
     * after sel_start's 30 ms (seen under TSan: 0 here): wait for all three
     * cases, then count. */
    for (uint64_t give_up = sl_test_now_ns() + 10 * SEC;
         (selectors(a) < 2 || selectors(b) < 1) && sl_test_now_ns() < give_up;)
        sl_test_sleep_ns(MS);
    ck_assert_uint_eq(selectors(a), 2);
    put(a, 5);
    ck_assert_int_eq(sel_join(t), SL_OK);
    ck_assert_msg(t->index == 0 || t->index == 2, "index %zu", t->index);
    ck_assert_uint_eq(t->index == 0 ? x : z, 5);
    ck_assert_msg(t->wall_ns < 20 * SEC, "a timed select was not woken by the send");
    ck_assert_uint_eq(selectors(a) + selectors(b), 0);

    /* Several selectors on one channel: each send wakes (at least) one that
     * gets it; every message is taken exactly once. */
    sel_thread *u = calloc(3, sizeof *u);
    ck_assert_ptr_nonnull(u);
    uint64_t got[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        u[i].cases[0] = (sl_select_case){a, SL_SEL_RECV, &got[i]};
        u[i].cases[1] = (sl_select_case){b, SL_SEL_RECV, &got[i]};
        u[i].n = 2;
        u[i].timeout = SL_FOREVER;
        atomic_init(&u[i].done, 0);
        ck_assert_int_eq(pthread_create(&u[i].thr, NULL, sel_main, &u[i]), 0);
    }
    sl_test_sleep_ns(30 * MS);
    put(a, 100);
    put(b, 200);
    put(a, 300);
    uint64_t sum = 0;
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(sel_join(&u[i]), SL_OK);
        sum += got[i];
    }
    ck_assert_uint_eq(sum, 600);
    ck_assert_uint_eq(sl_chan_len(a) + sl_chan_len(b), 0);
    ck_assert_uint_eq(selectors(a) + selectors(b), 0);
    sl_chan_free(a);
    sl_chan_free(b);
    free(u);
    free(t);
}
END_TEST

/* Two selectors asleep on the one bell, each on its own channel: a send to
 * the first wakes both, and the second, finding nothing, sleeps again; a
 * send to its channel later must still wake it. Each re-check after a wake
 * arms the bell again (docs/guarantees.md, "The select bell's arm"): a
 * selector that slept unarmed would miss every later ring. */
static void wake_after_foreign_ring(sl_flavor f)
{
    sl_chan *a = mk(f, 4, NULL, NULL), *b = mk(f, 4, NULL, NULL);
    sel_thread *t = calloc(2, sizeof *t);
    ck_assert_ptr_nonnull(t);
    uint64_t x = 0, y = 0;
    t[0].cases[0] = (sl_select_case){a, SL_SEL_RECV, &x};
    t[1].cases[0] = (sl_select_case){b, SL_SEL_RECV, &y};
    t[1].which = 1; /* one of each select */
    sel_start(&t[0], 1, 10 * SEC);
    sel_start(&t[1], 1, 10 * SEC);
    for (uint64_t give_up = sl_test_now_ns() + 10 * SEC;
         (selectors(a) == 0 || selectors(b) == 0) && sl_test_now_ns() < give_up;)
        sl_test_sleep_ns(MS);
    put(a, 7);
    ck_assert_int_eq(sel_join(&t[0]), SL_OK);
    ck_assert_uint_eq(x, 7);
    sl_test_sleep_ns(50 * MS); /* the second has re-checked and sleeps again */
    ck_assert_msg(atomic_load(&t[1].done) == 0, "the second selector returned %s",
                  sl_status_str(t[1].st));
    put(b, 9);
    ck_assert_int_eq(sel_join(&t[1]), SL_OK);
    ck_assert_msg(y == 9 && t[1].wall_ns < 10 * SEC,
                  "%s: a selector woken by another channel's ring missed its own: it took "
                  "%llu ms, its time-out being 10 s (received %llu)",
                  sl_test_flavor_name(f), (unsigned long long)(t[1].wall_ns / MS),
                  (unsigned long long)y);
    sl_chan_free(a);
    sl_chan_free(b);
    free(t);
}

/* One test for the four flavours: a planted bug that stops every wake costs
 * one test time-out, not four. */
START_TEST(test_wake_after_foreign_ring)
{
    for (size_t i = 0; i < sizeof all_flavors / sizeof all_flavors[0]; i++)
        wake_after_foreign_ring(all_flavors[i]);
}
END_TEST

/* A selector sleeps on the bell of its cases' directions: one waiting only
 * to receive sleeps through the process's receives, one waiting only to send
 * through its sends, and each still wakes for its own channel. A descriptor
 * on the busy channel keeps its `selectors` count up, so every change there
 * rings; the futex waits counted while the selector sleeps are its wake-ups
 * (each one re-checks and sleeps again). */
static atomic_uint bell_waits;

static int counting_wait(SL_ATOMIC(uint32_t) *word, uint32_t expected, uint64_t deadline_ns)
{
    atomic_fetch_add(&bell_waits, 1u);
    return sl__sys_default_ops.futex_wait(word, expected, deadline_ns);
}

START_TEST(test_bells_by_direction)
{
    static const sl_sys_ops ops = {.futex_wait = counting_wait};
    const bool sender = _i == 1; /* the selector waits to send (else to receive) */
    enum { CHANGES = 40 };
    sl_chan *mine = mk(SL_MPMC, 1, NULL, NULL), *busy = mk(SL_MPMC, CHANGES, NULL, NULL);
    int fd;
    ck_assert_int_eq(sl_chan_fd(busy, sender ? SL_END_RECV : SL_END_SEND, &fd), SL_OK);
    if (sender)
        put(mine, 1); /* full: the send case waits */
    else
        for (uint64_t i = 0; i < CHANGES; i++)
            put(busy, i); /* for the receives below */
    sel_thread *t = calloc(1, sizeof *t);
    ck_assert_ptr_nonnull(t);
    uint64_t v = 2;
    t->cases[0] = (sl_select_case){mine, sender ? SL_SEL_SEND : SL_SEL_RECV, &v};
    atomic_store(&bell_waits, 0u);
    sl_test_sys_install(&ops);
    sel_start(t, 1, SL_FOREVER);
    for (uint64_t give_up = sl_test_now_ns() + 10 * SEC;
         atomic_load(&bell_waits) == 0 && sl_test_now_ns() < give_up;)
        sl_test_sleep_ns(MS);
    unsigned before = atomic_load(&bell_waits);
    for (uint64_t i = 0; i < CHANGES; i++) {
        if (sender)
            put(busy, i);
        else
            ck_assert_uint_eq(get(busy), i);
        sl_test_sleep_ns(MS); /* a woken selector would arm and sleep again meanwhile */
    }
    unsigned woken = atomic_load(&bell_waits) - before;
    if (sender)
        ck_assert_uint_eq(get(mine), 1);
    else
        put(mine, 5);
    sl_status st = sel_join(t);
    sl_test_sys_restore();
    ck_assert_msg(st == SL_OK && t->index == 0, "its own change: %s index %zu",
                  sl_status_str(st), t->index);
    ck_assert_uint_eq(sender ? get(mine) : v, sender ? 2 : 5);
    ck_assert_msg(before >= 1 && woken <= CHANGES / 4,
                  "a selector waiting to %s was woken %u times by %d %s on another channel",
                  sender ? "send" : "receive", woken, (int)CHANGES,
                  sender ? "sends" : "receives");
    sl_chan_free(mine);
    sl_chan_free(busy);
    free(t);
}
END_TEST

/* =========================================================================
 * No busy waiting
 * ========================================================================= */

START_TEST(test_no_busy_wait)
{
    sl_chan *c[3] = {mk(SL_MPMC, 4, NULL, NULL), mk(SL_LIST, 0, NULL, NULL),
                     mk(SL_RING, 4, NULL, NULL)};
    sel_thread *t = calloc(1, sizeof *t);
    ck_assert_ptr_nonnull(t);
    uint64_t buf[3];
    for (int i = 0; i < 3; i++)
        t->cases[i] = (sl_select_case){c[i], SL_SEL_RECV, &buf[i]};
    sel_start(t, 3, SL_FOREVER);
    sl_test_sleep_ns(170 * MS); /* 200 ms blocked in all */
    ck_assert_int_eq(atomic_load(&t->done), 0);
    put(c[1], 9);
    ck_assert_int_eq(sel_join(t), SL_OK);
    ck_assert_uint_eq(t->index, 1);
    fprintf(stderr, "[unit_select no_busy_wait] blocked %.1f ms, used %.3f ms of CPU\n",
            (double)t->wall_ns / 1e6, (double)t->cpu_ns / 1e6);
    ck_assert_msg(t->wall_ns >= 190 * MS, "woke after %llu ms", ULL(t->wall_ns / MS));
    ck_assert_msg(t->cpu_ns < 20 * MS,
                  "a selector blocked for %llu ms burned %llu ms of CPU (busy waiting)",
                  ULL(t->wall_ns / MS), ULL(t->cpu_ns / MS));
    for (int i = 0; i < 3; i++)
        sl_chan_free(c[i]);
    free(t);
}
END_TEST

/* =========================================================================
 * Every flavour in one call
 * ========================================================================= */

START_TEST(test_all_flavours_one_call)
{
    static drops d;
    memset(&d, 0, sizeof d);
    sl_chan *rx[4], *tx[4];
    uint64_t rbuf[4] = {0, 0, 0, 0}, sbuf[4] = {0, 0, 0, 0};
    sl_select_case cs[8];
    for (int i = 0; i < 4; i++) {
        rx[i] = mk(all_flavors[i], 2, NULL, NULL);
        tx[i] = mk(all_flavors[i], 1, all_flavors[i] == SL_RING ? rec_drop : NULL, &d);
        if (all_flavors[i] != SL_LIST && all_flavors[i] != SL_RING)
            put(tx[i], 1); /* full: not ready */
        cs[2 * i] = (sl_select_case){rx[i], SL_SEL_RECV, &rbuf[i]};
        cs[2 * i + 1] = (sl_select_case){tx[i], SL_SEL_SEND, &sbuf[i]};
    }
    /* Only the list and ring send cases are ready now. */
    const size_t ring_tx = 7, list_tx = 5;
    for (int k = 0; k < 20; k++) {
        size_t idx = 99;
        sbuf[2] = sbuf[3] = 500 + (uint64_t)k;
        sl_status st = sl_select(cs, 8, 0, &idx);
        ck_assert_msg((idx == list_tx && st == SL_OK) ||
                          (idx == ring_tx && (st == SL_OK || st == SL_EVICTED)),
                      "only list/ring sends ready: %s index %zu", sl_status_str(st), idx);
        uint64_t o;
        if (idx == list_tx)
            ck_assert_int_eq(sl_chan_try_recv(tx[2], &o), SL_OK);
    }
    /* Make the ring's and list's send cases unavailable: nil them. */
    cs[list_tx].ch = NULL;
    cs[ring_tx].ch = NULL;
    size_t idx = 99;
    ck_assert_int_eq(sl_select(cs, 8, 0, &idx), SL_TIMEDOUT);
    /* One receive at a time, in each flavour. */
    for (int i = 0; i < 4; i++) {
        put(rx[i], 900 + (uint64_t)i);
        idx = 99;
        sl_status st = sl_select(cs, 8, (i & 1) ? 0 : SL_FOREVER, &idx);
        ck_assert_msg(st == SL_OK && idx == (size_t)(2 * i) && rbuf[i] == 900 + (uint64_t)i,
                      "recv from %s: %s index %zu", sl_test_flavor_name(all_flavors[i]),
                      sl_status_str(st), idx);
    }
    /* Room in the SPSC and MPMC send channels, one at a time. */
    for (int i = 0; i < 2; i++) {
        uint64_t o;
        ck_assert_int_eq(sl_chan_try_recv(tx[i], &o), SL_OK);
        sbuf[i] = 700 + (uint64_t)i;
        idx = 99;
        sl_status st = sl_select(cs, 8, SL_FOREVER, &idx);
        ck_assert_msg(st == SL_OK && idx == (size_t)(2 * i + 1), "send to %s: %s index %zu",
                      sl_test_flavor_name(all_flavors[i]), sl_status_str(st), idx);
        ck_assert_uint_eq(get(tx[i]), 700 + (uint64_t)i);
        put(tx[i], 1);
    }
    /* Everything ready at once: every case gets chosen sometimes. */
    cs[list_tx].ch = tx[2];
    cs[ring_tx].ch = tx[3];
    uint64_t o;
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(sl_chan_try_recv(tx[i], &o), SL_OK);
    int count[8] = {0};
    for (int k = 0; k < 8000; k++) {
        for (int i = 0; i < 4; i++)
            if (sl_chan_len(rx[i]) == 0)
                put(rx[i], (uint64_t)i);
        for (int i = 0; i < 2; i++)
            if (sl_chan_len(tx[i]) != 0)
                ck_assert_int_eq(sl_chan_try_recv(tx[i], &o), SL_OK);
        idx = 99;
        sl_status st = sl_select(cs, 8, 0, &idx);
        CHECK((st == SL_OK || (st == SL_EVICTED && idx == ring_tx)) && idx < 8,
              "all ready: %s index %zu", sl_status_str(st), idx);
        count[idx]++;
        if (idx == list_tx)
            sl_chan_try_recv(tx[2], &o);
    }
    for (int i = 0; i < 8; i++)
        ck_assert_msg(count[i] > 8000 / 8 / 2, "case %d (%s %s) chosen %d of 8000 times", i,
                      sl_test_flavor_name(all_flavors[i / 2]), (i & 1) ? "send" : "recv", count[i]);
    for (int i = 0; i < 4; i++) {
        ck_assert_uint_eq(selectors(rx[i]) + selectors(tx[i]), 0);
        sl_chan_free(rx[i]);
        sl_chan_free(tx[i]);
    }
}
END_TEST

/* =========================================================================
 * Biased select: the first ready case in the order given
 * ========================================================================= */

/* Cases 1, 3, 4 receive from channels of flavour f, case 2 sends into a
 * bounded SL_MPMC, case 5 sends into an SL_LIST (always ready), case 0 is
 * nil. Each round readies a random subset; the biased select must take the
 * lowest ready case, and only it. */
START_TEST(test_biased_lowest_ready)
{
    const sl_flavor f = all_flavors[_i];
    sl_chan *rx[3] = {mk(f, 2, NULL, NULL), mk(f, 2, NULL, NULL), mk(f, 2, NULL, NULL)};
    sl_chan *bounded = mk(SL_MPMC, 1, NULL, NULL), *list = mk(SL_LIST, 0, NULL, NULL);
    uint64_t r[3] = {0, 0, 0}, sb = 0, sl = 0, junk = 0;
    sl_select_case cs[6] = {{NULL, SL_SEL_RECV, &junk},   {rx[0], SL_SEL_RECV, &r[0]},
                            {bounded, SL_SEL_SEND, &sb},   {rx[1], SL_SEL_RECV, &r[1]},
                            {rx[2], SL_SEL_RECV, &r[2]},   {list, SL_SEL_SEND, &sl}};
    sl_test_rng rng;
    sl_test_rng_seed(&rng, sl_test_seed("unit_select", "biased_lowest_ready"));
    int chosen[6] = {0};
    for (uint64_t k = 0; k < 4000; k++) {
        unsigned mask = (unsigned)(sl_test_rng_next(&rng) & 15); /* rx0, room, rx1, rx2 */
        const size_t slot_of[4] = {1, 2, 3, 4};
        size_t want = 5;
        for (int b = 3; b >= 0; b--)
            if (mask & (1u << b))
                want = slot_of[b];
        for (int i = 0; i < 3; i++)
            if (mask & (1u << (i ? i + 1 : 0)))
                put(rx[i], 1000 * k + (uint64_t)i);
        if (!(mask & 2))
            put(bounded, 1); /* full: its send case is not ready */
        sb = 2000 + k;
        sl = 3000 + k;
        size_t idx = 99;
        sl_status st = sl_select_biased(cs, 6, (k & 1) ? 0 : SL_FOREVER, &idx);
        CHECK(st == SL_OK && idx == want, "%s round %llu ready mask %x: %s index %zu, want %zu",
              sl_test_flavor_name(f), ULL(k), mask, sl_status_str(st), idx, want);
        chosen[idx]++;
        /* Exactly the chosen operation happened; put the rest back. */
        for (int i = 0; i < 3; i++) {
            size_t slot = (size_t)(i ? i + 2 : 1);
            bool was = (mask & (1u << (i ? i + 1 : 0))) != 0;
            CHECK(sl_chan_len(rx[i]) == (size_t)(was && slot != want), "rx%d len %zu", i,
                  sl_chan_len(rx[i]));
            if (slot == want)
                CHECK(r[i] == 1000 * k + (uint64_t)i, "rx%d got %llu", i, ULL(r[i]));
            else if (was)
                (void)get(rx[i]);
        }
        if (want == 2)
            CHECK(get(bounded) == 2000 + k, "the bounded send case's message");
        else if (!(mask & 2))
            (void)get(bounded);
        CHECK(sl_chan_len(bounded) == 0, "bounded len %zu", sl_chan_len(bounded));
        if (want == 5)
            CHECK(get(list) == 3000 + k, "the list send case's message");
        CHECK(sl_chan_len(list) == 0, "list len %zu", sl_chan_len(list));
    }
    ck_assert_int_eq(chosen[0], 0);
    for (int i = 1; i < 6; i++) /* every case was the lowest ready sometimes */
        ck_assert_msg(chosen[i] > 50, "case %d chosen %d times", i, chosen[i]);
    ck_assert_uint_eq(junk, 0);
    sl_chan *all[] = {rx[0], rx[1], rx[2], bounded, list};
    for (int i = 0; i < N_OF(all); i++) {
        ck_assert_uint_eq(selectors(all[i]), 0);
        sl_chan_free(all[i]);
    }
}
END_TEST

/* Biased select has no order to shuffle: 200 cases need no allocation, so it
 * works where every allocation fails (the fair select reports SL_ENOMEM). */
START_TEST(test_biased_many_cases_no_alloc)
{
    /* SL_MPMC: once this thread has its record (its first send takes it,
     * sluice/chan.h), its operations never allocate (an SL_LIST's may). */
    sl_chan *a = mk(SL_MPMC, 4, NULL, NULL), *b = mk(SL_MPMC, 4, NULL, NULL);
    put(a, 0);
    ck_assert_uint_eq(get(a), 0);
    sl_select_case *many = calloc(200, sizeof *many);
    ck_assert_ptr_nonnull(many);
    uint64_t va = 0, vb = 0;
    for (int i = 0; i < 200; i++)
        many[i] = (sl_select_case){NULL, SL_SEL_RECV, NULL};
    many[37] = (sl_select_case){a, SL_SEL_RECV, &va};
    many[150] = (sl_select_case){b, SL_SEL_RECV, &vb};
    sl_test_fail_allocs(UINT64_MAX);
    size_t idx = 200;
    ck_assert_int_eq(sl_select(many, 200, 0, &idx), SL_ENOMEM);
    ck_assert_uint_eq(idx, 200);
    sl_test_fail_allocs(UINT64_MAX); /* resets the count of attempts */
    for (uint64_t k = 0; k < 100; k++) {
        put(a, k);
        put(b, k);
        sl_status st = sl_select_biased(many, 200, 0, &idx);
        CHECK(st == SL_OK && idx == 37 && va == k, "%s index %zu", sl_status_str(st), idx);
        CHECK(sl_test_allocs() == 0, "biased select allocated");
        st = sl_select_biased(many, 200, SL_FOREVER, &idx);
        CHECK(st == SL_OK && idx == 150 && vb == k, "%s index %zu", sl_status_str(st), idx);
        CHECK(sl_test_allocs() == 0, "biased select allocated");
    }
    ck_assert_int_eq(sl_select_biased(many, 200, 1 * MS, &idx), SL_TIMEDOUT);
    sl_test_alloc_faults_off();
    free(many);
    sl_chan_free(a);
    sl_chan_free(b);
}
END_TEST

/* A blocked biased select wakes on the lower-priority channel too; and while
 * case 0 stays ready, case 1 is never taken (the starvation it promises). */
START_TEST(test_biased_wake_and_starve)
{
    sl_chan *hi = mk(SL_MPMC, 4, NULL, NULL), *lo = mk(SL_LIST, 0, NULL, NULL);
    sel_thread *t = calloc(1, sizeof *t);
    ck_assert_ptr_nonnull(t);
    uint64_t h = 0, l = 0;
    t->which = 1;
    t->cases[0] = (sl_select_case){hi, SL_SEL_RECV, &h};
    t->cases[1] = (sl_select_case){lo, SL_SEL_RECV, &l};
    sel_start(t, 2, SL_FOREVER);
    put(lo, 5);
    ck_assert_int_eq(sel_join(t), SL_OK);
    ck_assert(t->index == 1 && l == 5);
    for (uint64_t k = 0; k < 3000; k++) {
        put(lo, k);
        if (sl_chan_len(hi) == 0)
            put(hi, k);
        size_t idx = 99;
        sl_status st = sl_select_biased(t->cases, 2, 0, &idx);
        CHECK(st == SL_OK && idx == 0, "round %llu: %s index %zu", ULL(k), sl_status_str(st), idx);
    }
    ck_assert_uint_eq(sl_chan_len(lo), 3000);
    ck_assert_uint_eq(selectors(hi) + selectors(lo), 0);
    sl_chan_free(hi);
    sl_chan_free(lo);
    free(t);
}
END_TEST

static void *put_later(void *ch)
{
    sl_test_sleep_ns(30 * MS);
    put(ch, 777);
    return NULL;
}

/* The receive streak (chan_wait.c) counts a select answered at its first round
 * by a receive case, and no other: a send case's answer and a select that
 * had to wait do not add to it, and a select with a receive case that
 * finds nothing ends it. After a full streak the select waits patiently,
 * and still gets a message sent while it waits, and its timeout is kept. */
START_TEST(test_select_receive_streak)
{
    const int which = _i;
    sl_chan *in = mk(SL_MPMC, 64, NULL, NULL), *out = mk(SL_MPMC, 64, NULL, NULL);
    uint64_t v = 0, w = 5;
    size_t idx;
    sl_select_case recv_case = {in, SL_SEL_RECV, &v}, send_case = {out, SL_SEL_SEND, &w};
    ck_assert_int_eq(select_fns[which](&recv_case, 1, 0, &idx), SL_TIMEDOUT);
    ck_assert_uint_eq(sl__recv_streak, 0);
    for (uint64_t i = 1; i <= SL_RECV_STREAK + 2; i++)
        put(in, i);
    for (unsigned i = 1; i <= SL_RECV_STREAK + 2; i++) {
        ck_assert_int_eq(select_fns[which](&recv_case, 1, SL_FOREVER, &idx), SL_OK);
        ck_assert_uint_eq(v, i);
        ck_assert_uint_eq(sl__recv_streak, i < SL_RECV_STREAK ? i : SL_RECV_STREAK);
    }
    ck_assert_int_eq(select_fns[which](&send_case, 1, SL_FOREVER, &idx), SL_OK);
    ck_assert_uint_eq(sl__recv_streak, SL_RECV_STREAK); /* a send: neither */
    /* A full streak, then a timed select on the empty channel: it waits
     * patiently, times out no earlier than asked, and ends the streak. */
    uint64_t t0 = sl_test_now_ns();
    ck_assert_int_eq(select_fns[which](&recv_case, 1, 5 * MS, &idx), SL_TIMEDOUT);
    ck_assert_uint_ge(sl_test_now_ns() - t0, 5 * MS);
    ck_assert_uint_eq(sl__recv_streak, 0);
    /* A full streak again, then a select that must wait for its message. */
    for (uint64_t i = 1; i <= SL_RECV_STREAK; i++)
        put(in, i);
    for (unsigned i = 1; i <= SL_RECV_STREAK; i++)
        ck_assert_int_eq(select_fns[which](&recv_case, 1, SL_FOREVER, &idx), SL_OK);
    ck_assert_uint_eq(sl__recv_streak, SL_RECV_STREAK);
    pthread_t sender;
    ck_assert_int_eq(pthread_create(&sender, NULL, put_later, in), 0);
    ck_assert_int_eq(select_fns[which](&recv_case, 1, SL_FOREVER, &idx), SL_OK);
    ck_assert_uint_eq(v, 777);
    ck_assert_uint_eq(sl__recv_streak, 0);
    ck_assert_int_eq(pthread_join(sender, NULL), 0);
    sl_chan_free(in);
    sl_chan_free(out);
}
END_TEST


#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
/* A sender stopped at each of its steps in turn (marked in flight, say)
 * while the channel is closed and a selector with a receive case looks:
 * the look sees the close but the sender's mark, says empty, and sleeps on
 * the bell. The sender then goes on, finds the channel closed, and unmarks:
 * the selector must wake and answer SL_CLOSED (or take the message, where
 * the sender got in before the close), not sleep to its deadline (2 s,
 * where its last look would find the close: it must answer within 1; a
 * woken one answers in milliseconds even on a loaded machine, and the
 * planted bugs that sleep to the deadline cost 2 s per flavour, not 5). A
 * stress_flavors run hung on this for good, in a select without deadline.
 * A send that returned SL_OK must have been received: a selector that said
 * SL_CLOSED while the sender, past its closed-check, had still to push did
 * not see its mark (the marks in the threads' records, chan_marks.h). */
START_TEST(test_close_with_sender_in_flight)
{
    const sl_flavor flavors[] = {SL_MPMC, SL_SPSC, SL_LIST, SL_RING};
    const sl_flavor f = flavors[_i];
    unsigned k = 1;
    for (;; k++) {
        sl_test_gated_send g = {.ch = mk(f, 4, NULL, NULL), .k = k, .value = 42};
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, sl_test_send_gated, &g), 0);
        sl_test_wait_stopped(&g);
        sl_chan_close(g.ch);
        sel_thread *s = calloc(1, sizeof *s);
        ck_assert_ptr_nonnull(s);
        uint64_t got = 0;
        s->cases[0] = (sl_select_case){g.ch, SL_SEL_RECV, &got};
        s->n = 1, s->timeout = 2 * SEC; /* it may answer at once: no sel_start */
        ck_assert_int_eq(pthread_create(&s->thr, NULL, sel_main, s), 0);
        sl_test_sleep_ns(30 * MS); /* the selector into its sleep */
        atomic_store(&g.gate.go, 1);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        sl_status st = sel_join(s);
        ck_assert_msg((st == SL_CLOSED && g.st != SL_OK) ||
                          (st == SL_OK && got == 42 && g.st == SL_OK),
                      "%s, sender stopped at step %u (it returned %s): the selector returned %s",
                      sl_test_flavor_name(f), k, sl_status_str(g.st), sl_status_str(st));
        /* Its deadline's last look would find the close too: woken, it
         * answers long before. */
        ck_assert_msg(s->wall_ns < 1 * SEC,
                      "%s, sender stopped at step %u: the selector slept %llu ms, to its deadline",
                      sl_test_flavor_name(f), k, (unsigned long long)(s->wall_ns / MS));
        free(s);
        sl_chan_free(g.ch);
        if (g.passed < k)
            break;
    }
    ck_assert_uint_gt(k, 2);
}
END_TEST
#endif


/* A message is in the channel when a poll starts; another thread closes the
 * channel (and, but on SL_SPSC, takes the message) meanwhile. At every
 * instant the case is ready (the message, or the close once it is gone), so
 * the poll never answers SL_TIMEDOUT. */
typedef struct racing_poll {
    pthread_t thr;
    sl_chan *ch;
    select_fn fn;
    sl_status st;
} racing_poll;

static void *racing_poll_main(void *arg)
{
    racing_poll *p = arg;
    uint64_t v = 0;
    size_t idx;
    sl_select_case c = {p->ch, SL_SEL_RECV, &v};
    p->st = p->fn(&c, 1, 0, &idx);
    return NULL;
}

START_TEST(test_poll_sees_message_racing_close)
{
    const sl_flavor f = all_flavors[_i];
    const uint64_t rounds = sl_test_scaled(1000, 50);
    for (uint64_t round = 0; round < rounds; round++) {
        sl_chan *ch = mk(f, 1, NULL, NULL);
        put(ch, 1);
        racing_poll p = {.ch = ch, .fn = select_fns[round & 1]};
        ck_assert_int_eq(pthread_create(&p.thr, NULL, racing_poll_main, &p), 0);
        sl_chan_close(ch);
        uint64_t v;
        if (f != SL_SPSC) /* the poller is its one receiver */
            (void)sl_chan_try_recv(ch, &v);
        pthread_join(p.thr, NULL);
        CHECK(p.st == SL_OK || p.st == SL_CLOSED, "%s round %llu, %s: %s",
              sl_test_flavor_name(f), ULL(round), select_names[round & 1], sl_status_str(p.st));
        sl_chan_free(ch);
    }
}
END_TEST

/* One channel in several cases of one select: each case is chosen, the
 * message lands in the chosen case's buffer, and two send cases with
 * different messages each send their own. */
START_TEST(test_duplicate_cases_each_chosen)
{
    const sl_flavor f = all_flavors[_i];
    sl_chan *ch = mk(f, 8, NULL, NULL);
    int recv_hits[3] = {0, 0, 0}, send_hits[2] = {0, 0};
    for (uint64_t round = 0; round < 600; round++) {
        uint64_t in[3] = {0, 0, 0};
        size_t idx = 99;
        put(ch, round + 1);
        sl_select_case rc[3] = {{ch, SL_SEL_RECV, &in[0]}, {ch, SL_SEL_RECV, &in[1]},
                                {ch, SL_SEL_RECV, &in[2]}};
        ck_assert_int_eq(sl_select(rc, 3, 0, &idx), SL_OK);
        CHECK(idx < 3 && in[idx] == round + 1 && in[0] + in[1] + in[2] == round + 1,
              "%s: recv case %zu got %llu %llu %llu", sl_test_flavor_name(f), idx, ULL(in[0]),
              ULL(in[1]), ULL(in[2]));
        recv_hits[idx]++;
        uint64_t out[2] = {10, 20};
        sl_select_case sc[2] = {{ch, SL_SEL_SEND, &out[0]}, {ch, SL_SEL_SEND, &out[1]}};
        ck_assert_int_eq(sl_select(sc, 2, 0, &idx), SL_OK);
        CHECK(idx < 2 && get(ch) == out[idx], "%s: send case %zu", sl_test_flavor_name(f), idx);
        send_hits[idx]++;
    }
    ck_assert_msg(recv_hits[0] && recv_hits[1] && recv_hits[2] && send_hits[0] && send_hits[1],
                  "%s: a duplicate case never chosen (%d %d %d / %d %d)", sl_test_flavor_name(f),
                  recv_hits[0], recv_hits[1], recv_hits[2], send_hits[0], send_hits[1]);
    sl_chan_free(ch);
}
END_TEST

static Suite *select_suite(void)
{
    Suite *s = suite_create("select");

    TCase *tc = tcase_create("input");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_bad_input, 0, 2);
    tcase_add_test(tc, test_poll_nothing_ready);
    tcase_add_test(tc, test_nil_case_never_chosen);
    tcase_add_loop_test(tc, test_timeout_not_early, 0, 2);
    suite_add_tcase(s, tc);

    tc = tcase_create("semantics");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_exactly_one_recv, 0, 16);
    tcase_add_test(tc, test_exactly_one_send);
    tcase_add_test(tc, test_send_case_rules);
    tcase_add_loop_test(tc, test_closed_case, 0, 4);
    tcase_add_test(tc, test_closed_full_send_case);
    tcase_add_loop_test(tc, test_fairness_recv, 0, 8);
    tcase_add_test(tc, test_fairness_send);
    tcase_add_loop_test(tc, test_large_messages, 0, 2);
    tcase_add_test(tc, test_all_flavours_one_call);
    tcase_add_loop_test(tc, test_poll_sees_message_racing_close, 0, 4);
    tcase_add_loop_test(tc, test_duplicate_cases_each_chosen, 0, 4);
    suite_add_tcase(s, tc);

    tc = tcase_create("biased");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_biased_lowest_ready, 0, 4);
    tcase_add_test(tc, test_biased_many_cases_no_alloc);
    tcase_add_test(tc, test_biased_wake_and_starve);
    suite_add_tcase(s, tc);

    /* Apart from "blocking", so that a planted bug that hangs every wait
     * (scripts/mutants.sh) times out in 14 cases rather than 46. */
    tc = tcase_create("wake_on_send");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_wake_on_send, 0, 32);
    suite_add_tcase(s, tc);

    tc = tcase_create("blocking");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_wake_on_room, 0, 4);
    tcase_add_loop_test(tc, test_wake_on_close, 0, 8);
    tcase_add_test(tc, test_wake_timed_and_duplicate);
    tcase_add_test(tc, test_wake_after_foreign_ring);
    tcase_add_test(tc, test_no_busy_wait);
    tcase_add_loop_test(tc, test_select_receive_streak, 0, 2);
    suite_add_tcase(s, tc);

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
    tc = tcase_create("close_in_flight");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_close_with_sender_in_flight, 0, 4);
    suite_add_tcase(s, tc);
#endif

    tc = tcase_create("bells");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_bells_by_direction, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sl_test_run(select_suite());
}
