/*
 * tests/unit_rendezvous.c — rendezvous channels (SL_MPMC of capacity 0).
 *
 * What capacity 0 makes and refuses; a try succeeds only against a partner
 * that waits (blocked in a plain call or parked in a select), and consumes
 * nothing otherwise; a blocking send does not return before a receiver took
 * its message; timed forms follow the one timeout rule and leave the
 * message the caller's; pointer sends clear *pp only when taken; batches go
 * one message per waiting partner; close returns waiting senders their
 * message and answers SL_CLOSED everywhere after; select meets plain calls
 * and selects on both sides, performs exactly one case, never meets itself,
 * pairs many selects up, meets partners that only try, withdraws every
 * offer of a duplicated case once another case is taken, and wakes on
 * close; descriptors and evicting sends are refused; the drop
 * function never runs; the typed wrapper works.
 *
 * "It is blocked" is judged by the call not having returned after a short
 * sleep, never by an upper bound on time.
 */
#include "harness.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/chan.h>
#include <sluice/chanfd.h>
#include <sluice/select.h>

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
#include "internal/testing.h"
#include "../channels/chan_impl.h" /* the offers and the bell, to check where a stop is */
#endif


static sl_chan *mk_rdv(size_t esz, sl_drop_fn drop, void *ctx)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = esz, .capacity = 0, .drop = drop,
                      .drop_ctx = ctx};
    sl_chan *ch = NULL;
    ck_assert_int_eq(sl_chan_new(&ch, &o), SL_OK);
    return ch;
}

/* One blocking operation on its own thread: a send of `v`, or a receive. */
typedef struct party {
    pthread_t thr;
    sl_chan *ch;
    bool send;
    uint64_t v;
    uint64_t timeout; /* 0: the blocking form */
    sl_status st;
    atomic_int done;
} party;

static void *party_main(void *arg)
{
    party *p = arg;
    if (p->send)
        p->st = p->timeout ? sl_chan_send_for(p->ch, &p->v, p->timeout) : sl_chan_send(p->ch, &p->v);
    else
        p->st = p->timeout ? sl_chan_recv_for(p->ch, &p->v, p->timeout) : sl_chan_recv(p->ch, &p->v);
    atomic_store(&p->done, 1);
    return NULL;
}

/* Starts p and checks it is still blocked 30 ms later. */
static void party_start(party *p, sl_chan *ch, bool send, uint64_t v, uint64_t timeout)
{
    *p = (party){.ch = ch, .send = send, .v = v, .timeout = timeout};
    ck_assert_int_eq(pthread_create(&p->thr, NULL, party_main, p), 0);
    sl_test_sleep_ns(30 * MS);
    ck_assert_msg(!atomic_load(&p->done), "a rendezvous %s returned without a partner",
                  send ? "send" : "receive");
}

static sl_status party_join(party *p)
{
    pthread_join(p->thr, NULL);
    return p->st;
}

START_TEST(test_new_and_queries)
{
    sl_chan *ch = mk_rdv(8, NULL, NULL);
    ck_assert_uint_eq(sl_chan_cap(ch), 0);
    ck_assert_uint_eq(sl_chan_len(ch), 0);
    ck_assert_int_eq(sl_chan_flavor(ch), SL_MPMC);
    ck_assert_uint_eq(sl_chan_elem_size(ch), 8);
    sl_chan_free(ch);

    sl_chan *bad = NULL;
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 0, .capacity = 0};
    ck_assert_int_eq(sl_chan_new(&bad, &o), SL_EINVAL);
    o.elem_size = SL_ELEM_MAX + 1;
    ck_assert_int_eq(sl_chan_new(&bad, &o), SL_EINVAL);
    o = (sl_chan_opts){.flavor = SL_SPSC, .elem_size = 8, .capacity = 0};
    ck_assert_int_eq(sl_chan_new(&bad, &o), SL_EINVAL);
    o.flavor = SL_RING;
    ck_assert_int_eq(sl_chan_new(&bad, &o), SL_EINVAL);
    o.flavor = SL__RENDEZVOUS; /* reserved: only SL_MPMC of capacity 0 makes one */
    ck_assert_int_eq(sl_chan_new(&bad, &o), SL_EINVAL);
    o.flavor = SL_TIMER;
    ck_assert_int_eq(sl_chan_new(&bad, &o), SL_EINVAL);
    ck_assert_ptr_null(bad);
    o.flavor = SL_MPMC; /* the channel is the one allocation a rendezvous makes */
    sl_test_fail_allocs(1);
    ck_assert_int_eq(sl_chan_new(&bad, &o), SL_ENOMEM);
    ck_assert_uint_eq(sl_test_allocs(), 1);
    sl_test_alloc_faults_off();
    ck_assert_ptr_null(bad);
    o.flavor = SL_LIST; /* unbounded: capacity is not looked at, as before */
    ck_assert_int_eq(sl_chan_new(&bad, &o), SL_OK);
    ck_assert_uint_eq(sl_chan_cap(bad), SIZE_MAX);
    sl_chan_free(bad);
}
END_TEST

START_TEST(test_try_needs_partner)
{
    sl_chan *ch = mk_rdv(8, NULL, NULL);
    uint64_t v = 7, out = 99;
    ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_FULL);
    ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_EMPTY);
    ck_assert_uint_eq(out, 99);
    ck_assert_int_eq(sl_chan_send_for(ch, &v, 0), SL_TIMEDOUT);
    ck_assert_int_eq(sl_chan_recv_for(ch, &out, 0), SL_TIMEDOUT);
    uint64_t t0 = sl_test_now_ns();
    ck_assert_int_eq(sl_chan_send_for(ch, &v, 20 * MS), SL_TIMEDOUT);
    ck_assert_uint_ge(sl_test_now_ns() - t0, 20 * MS);
    ck_assert_int_eq(sl_chan_recv_for(ch, &out, 5 * MS), SL_TIMEDOUT);
    /* The timed-out send left nothing behind: nothing can be received. */
    ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_EMPTY);
    ck_assert_uint_eq(out, 99);
    ck_assert_int_eq(sl_chan_try_send(NULL, &v), SL_EINVAL);
    ck_assert_int_eq(sl_chan_try_send(ch, NULL), SL_EINVAL);
    ck_assert_int_eq(sl_chan_send_evict(ch, &v, &out), SL_EINVAL);
    int fd = -1;
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_RECV, &fd), SL_EINVAL);
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_SEND, &fd), SL_EINVAL);
    ck_assert_int_eq(fd, -1);
    sl_chan_free(ch);
}
END_TEST

/* _i: the waiting side is 0 a blocking receive, 1 a timed one, 2 a blocking
 * send, 3 a timed one; the other side's try meets it. */
START_TEST(test_try_meets_waiter)
{
    sl_chan *ch = mk_rdv(8, NULL, NULL);
    bool waiter_sends = _i >= 2;
    party p;
    party_start(&p, ch, waiter_sends, 0xABCD, _i % 2 ? 60000 * MS : 0);
    uint64_t v = 0x1234, out = 0;
    if (waiter_sends) {
        ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_OK);
        ck_assert_uint_eq(out, 0xABCD);
    } else {
        ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
    }
    ck_assert_int_eq(party_join(&p), SL_OK);
    if (!waiter_sends)
        ck_assert_uint_eq(p.v, 0x1234);
    /* Met once: nobody waits now. */
    ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_FULL);
    ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_EMPTY);
    sl_chan_free(ch);
}
END_TEST

/* A large message, sent by a blocking send on its own thread. */
enum { BIG = 1000 };
typedef struct big_send {
    sl_chan *ch;
    unsigned char msg[BIG];
    sl_status st;
} big_send;

static void *big_send_main(void *arg)
{
    big_send *b = arg;
    b->st = sl_chan_send(b->ch, b->msg);
    return NULL;
}

/* Two blocking calls meet (the one that comes second completes the first's
 * offer), whichever comes first; the bytes arrive whole. */
START_TEST(test_blocking_meet)
{
    sl_chan *ch = mk_rdv(BIG, NULL, NULL);
    for (unsigned round = 0; round < 20; round++) {
        big_send b = {.ch = ch};
        sl_test_seq_fill(b.msg, BIG, round);
        pthread_t t;
        if (round % 2)
            ck_assert_int_eq(pthread_create(&t, NULL, big_send_main, &b), 0);
        unsigned char out[BIG] = {0};
        if (round % 2 == 0) {
            ck_assert_int_eq(pthread_create(&t, NULL, big_send_main, &b), 0);
            sl_test_sleep_ns(1 * MS);
        }
        ck_assert_int_eq(sl_chan_recv(ch, out), SL_OK);
        ck_assert(sl_test_seq_is(out, BIG, round));
        pthread_join(t, NULL);
        ck_assert_int_eq(b.st, SL_OK);
    }
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_ptr_forms)
{
    sl_chan *ch = mk_rdv(sizeof(void *), NULL, NULL);
    int x;
    void *pp = &x;
    ck_assert_int_eq(sl_chan_try_send_ptr(ch, &pp), SL_FULL);
    ck_assert_ptr_eq(pp, &x);
    ck_assert_int_eq(sl_chan_send_ptr_for(ch, &pp, 2 * MS), SL_TIMEDOUT);
    ck_assert_ptr_eq(pp, &x);
    party p;
    party_start(&p, ch, false, 0, 0);
    ck_assert_int_eq(sl_chan_send_ptr(ch, &pp), SL_OK);
    ck_assert_ptr_null(pp);
    ck_assert_int_eq(party_join(&p), SL_OK);
    ck_assert_ptr_eq((void *)(uintptr_t)p.v, &x);
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_batches)
{
    sl_chan *ch = mk_rdv(8, NULL, NULL);
    uint64_t in[3] = {11, 12, 13}, out[3] = {0};
    ck_assert_uint_eq(sl_chan_try_send_n(ch, in, 3), 0);
    ck_assert_uint_eq(sl_chan_try_recv_n(ch, out, 3), 0);
    party r[2];
    party_start(&r[0], ch, false, 0, 0);
    party_start(&r[1], ch, false, 0, 0);
    ck_assert_uint_eq(sl_chan_try_send_n(ch, in, 3), 2); /* one per waiting receiver */
    ck_assert_int_eq(party_join(&r[0]), SL_OK);
    ck_assert_int_eq(party_join(&r[1]), SL_OK);
    ck_assert_uint_eq(r[0].v + r[1].v, 23); /* 11 and 12, one each */
    party s[2];
    party_start(&s[0], ch, true, 21, 0);
    party_start(&s[1], ch, true, 22, 0);
    size_t got = 0;
    ck_assert_int_eq(sl_chan_recv_n(ch, out, 3, &got), SL_OK);
    ck_assert_uint_eq(got, 2);
    ck_assert_uint_eq(out[0], 21);
    ck_assert_uint_eq(out[1], 22);
    ck_assert_int_eq(party_join(&s[0]), SL_OK);
    ck_assert_int_eq(party_join(&s[1]), SL_OK);
    /* Blocking batch receive: waits for one sender, takes it. */
    party r2;
    party_start(&r2, ch, true, 31, 0);
    ck_assert_int_eq(sl_chan_recv_n_for(ch, out, 3, 60000 * MS, &got), SL_OK);
    ck_assert_uint_eq(got, 1);
    ck_assert_uint_eq(out[0], 31);
    ck_assert_int_eq(party_join(&r2), SL_OK);
    ck_assert_int_eq(sl_chan_recv_n_for(ch, out, 3, 2 * MS, &got), SL_TIMEDOUT);
    ck_assert_uint_eq(got, 0);
    sl_chan_free(ch);
}
END_TEST

/* _i: the waiter is 0 a sender, 1 a receiver, 2 a timed sender, 3 a timed
 * receiver. */
START_TEST(test_close_wakes_waiters)
{
    sl_chan *ch = mk_rdv(8, NULL, NULL);
    bool sends = _i % 2 == 0;
    party p;
    party_start(&p, ch, sends, 77, _i >= 2 ? 60000 * MS : 0);
    sl_chan_close(ch);
    ck_assert_int_eq(party_join(&p), SL_CLOSED);
    if (sends)
        ck_assert_uint_eq(p.v, 77); /* still the caller's: untouched */
    uint64_t v = 1, out = 0;
    ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_CLOSED);
    ck_assert_int_eq(sl_chan_recv(ch, &out), SL_CLOSED);
    ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_CLOSED);
    ck_assert_int_eq(sl_chan_send(ch, &v), SL_CLOSED);
    ck_assert_int_eq(sl_chan_send_for(ch, &v, 5 * MS), SL_CLOSED);
    sl_chan_free(ch);
}
END_TEST

/* A send racing a close: either the receiver got it (SL_OK on both sides)
 * or the sender got SL_CLOSED and the message is still its own. */
START_TEST(test_close_races_send)
{
    for (int round = 0; round < 200; round++) {
        sl_chan *ch = mk_rdv(8, NULL, NULL);
        party s = {.ch = ch, .send = true, .v = 5u + (unsigned)round};
        party r = {.ch = ch, .send = false};
        ck_assert_int_eq(pthread_create(&s.thr, NULL, party_main, &s), 0);
        ck_assert_int_eq(pthread_create(&r.thr, NULL, party_main, &r), 0);
        if (round % 4)
            sl_test_sleep_ns((uint64_t)(round % 7) * 10000);
        sl_chan_close(ch);
        sl_status ss = party_join(&s), rs = party_join(&r);
        if (ss == SL_OK) {
            ck_assert_int_eq(rs, SL_OK);
            ck_assert_uint_eq(r.v, 5u + (unsigned)round);
        } else {
            ck_assert_int_eq(ss, SL_CLOSED);
            ck_assert_int_eq(rs, SL_CLOSED);
        }
        sl_chan_free(ch);
    }
}
END_TEST

/* A drop function is accepted and never runs: nothing is ever stored. */
static void count_drop(void *elem, void *ctx)
{
    (void)elem;
    atomic_fetch_add((atomic_int *)ctx, 1);
}

START_TEST(test_drop_never_runs)
{
    atomic_int drops = 0;
    sl_chan *ch = mk_rdv(8, count_drop, &drops);
    party p;
    party_start(&p, ch, true, 3, 0);
    uint64_t out;
    ck_assert_int_eq(sl_chan_recv(ch, &out), SL_OK);
    ck_assert_int_eq(party_join(&p), SL_OK);
    uint64_t v = 4;
    ck_assert_int_eq(sl_chan_send_for(ch, &v, 1 * MS), SL_TIMEDOUT);
    sl_chan_close(ch);
    sl_chan_free(ch);
    ck_assert_int_eq(atomic_load(&drops), 0);
}
END_TEST

SL_CHAN_TYPED(u64_chan, uint64_t);

START_TEST(test_typed)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .capacity = 0};
    u64_chan *c;
    ck_assert_int_eq(u64_chan_new(&c, &o), SL_OK);
    ck_assert_uint_eq(u64_chan_cap(c), 0);
    uint64_t v = 9, out = 0;
    ck_assert_int_eq(u64_chan_try_send(c, &v), SL_FULL);
    party p;
    party_start(&p, (sl_chan *)(void *)c, true, 42, 0);
    ck_assert_int_eq(u64_chan_recv(c, &out), SL_OK);
    ck_assert_uint_eq(out, 42);
    ck_assert_int_eq(party_join(&p), SL_OK);
    u64_chan_free(c);
}
END_TEST

/* ---- select ------------------------------------------------------------- */

/* A select on its own thread. */
typedef struct selector {
    pthread_t thr;
    sl_select_case cases[4];
    size_t n, index;
    uint64_t timeout;
    uint64_t bufs[4];
    sl_status st;
    atomic_int done;
} selector;

static void *selector_main(void *arg)
{
    selector *s = arg;
    s->st = sl_select(s->cases, s->n, s->timeout, &s->index);
    atomic_store(&s->done, 1);
    return NULL;
}

static void selector_start(selector *s)
{
    for (size_t i = 0; i < s->n; i++)
        s->cases[i].buf = &s->bufs[i];
    ck_assert_int_eq(pthread_create(&s->thr, NULL, selector_main, s), 0);
}

/* A select parked with a receive (_i even) or send case on a rendezvous
 * channel meets a plain try, then a plain blocking call. */
START_TEST(test_select_meets_plain)
{
    sl_chan *ch = mk_rdv(8, NULL, NULL);
    bool sel_sends = _i % 2;
    selector s = {.n = 1, .timeout = SL_FOREVER};
    s.cases[0] = (sl_select_case){ch, sel_sends ? SL_SEL_SEND : SL_SEL_RECV, NULL};
    s.bufs[0] = 555;
    selector_start(&s);
    sl_test_sleep_ns(30 * MS);
    ck_assert(!atomic_load(&s.done));
    uint64_t v = 666, out = 0;
    ck_assert_int_eq(sel_sends ? sl_chan_try_recv(ch, &out) : sl_chan_try_send(ch, &v), SL_OK);
    pthread_join(s.thr, NULL);
    ck_assert_int_eq(s.st, SL_OK);
    ck_assert_uint_eq(s.index, 0);
    ck_assert_uint_eq(sel_sends ? out : s.bufs[0], sel_sends ? 555 : 666);
    /* The other way round: the plain call waits, the select's poll meets it. */
    party p;
    party_start(&p, ch, !sel_sends, 777, 0);
    s.bufs[0] = 888;
    ck_assert_int_eq(sl_select(s.cases, 1, 0, &s.index), SL_OK);
    ck_assert_int_eq(party_join(&p), SL_OK);
    ck_assert_uint_eq(sel_sends ? p.v : s.bufs[0], sel_sends ? 888 : 777);
    sl_chan_free(ch);
}
END_TEST

/* Two blocking selects facing each other on one channel meet, whichever
 * parks first; repeated for the interleavings. */
START_TEST(test_select_meets_select)
{
    sl_chan *ch = mk_rdv(8, NULL, NULL);
    for (unsigned round = 0; round < 100; round++) {
        selector a = {.n = 1, .timeout = SL_FOREVER}, b = {.n = 1, .timeout = SL_FOREVER};
        a.cases[0] = (sl_select_case){ch, SL_SEL_SEND, NULL};
        b.cases[0] = (sl_select_case){ch, SL_SEL_RECV, NULL};
        a.bufs[0] = round;
        selector_start(&a);
        if (round % 3 == 0)
            sl_test_sleep_ns(1 * MS);
        selector_start(&b);
        pthread_join(a.thr, NULL);
        pthread_join(b.thr, NULL);
        ck_assert_int_eq(a.st, SL_OK);
        ck_assert_int_eq(b.st, SL_OK);
        ck_assert_uint_eq(b.bufs[0], round);
    }
    sl_chan_free(ch);
}
END_TEST

/* Two selects that start together, round after round, so that each often
 * posts its offer while the other holds its own word: the one that re-opens
 * last must find the other's offer and meet it (a pair that both sleep hangs
 * the test). */
enum { RACE_ROUNDS = 300 };
typedef struct race_side {
    sl_chan *ch;
    bool send;
    sl_test_barrier *go;
    uint64_t got[RACE_ROUNDS];
    sl_status st[RACE_ROUNDS];
} race_side;

static void *race_main(void *arg)
{
    race_side *r = arg;
    for (unsigned round = 0; round < RACE_ROUNDS; round++) {
        uint64_t v = round;
        sl_select_case c = {r->ch, r->send ? SL_SEL_SEND : SL_SEL_RECV, &v};
        size_t idx;
        sl_test_barrier_wait(r->go);
        r->st[round] = sl_select(&c, 1, SL_FOREVER, &idx);
        r->got[round] = v;
    }
    return NULL;
}

START_TEST(test_select_race)
{
    sl_chan *ch = mk_rdv(8, NULL, NULL);
    sl_test_barrier go;
    sl_test_barrier_init(&go, 2);
    race_side *side = calloc(2, sizeof *side);
    ck_assert_ptr_nonnull(side);
    pthread_t t[2];
    for (int k = 0; k < 2; k++) {
        side[k] = (race_side){.ch = ch, .send = k == 0, .go = &go};
        ck_assert_int_eq(pthread_create(&t[k], NULL, race_main, &side[k]), 0);
    }
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    for (unsigned round = 0; round < RACE_ROUNDS; round++) {
        ck_assert_int_eq(side[0].st[round], SL_OK);
        ck_assert_int_eq(side[1].st[round], SL_OK);
        ck_assert_uint_eq(side[1].got[round], round);
    }
    free(side);
    sl_test_barrier_destroy(&go);
    sl_chan_free(ch);
}
END_TEST

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
/* The one interleaving the re-check after re-opening exists for, made
 * deterministic with a stop at a chosen SL_FI() mark (internal/testing.h):
 * select A (a send case) is stopped in its last round before it sleeps,
 * its word held and its offer posted; select B (a receive case) comes,
 * finds A's offer held, posts its own and sleeps. Released, A must find
 * B's offer after re-opening; without the re-check both sleep for ever. */
/* Where A stops is found by state, not by counting marks: the stop function
 * watches every mark (re-arming itself for the next one) and stops A at the
 * second mark in a row at which A is registered on the bell with its word
 * held — in its first round after the prepare, the try inside the round
 * is the first such mark and "held and posted" the second. */
typedef struct held_stop {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopped, go, prev_held;
    sl_chan *ch;
} held_stop;

static bool held_now(const held_stop *h)
{
    /* A's offer is alone on the senders' side, linked by A itself. */
    const sl__rdv_offer *o = h->ch->q.rdv.waiting[1].first;
    return o && atomic_load(o->claim) == SL__RDV_SELF && sl__select_waiters() >= 1;
}

static void held_stop_fn(void *ctx, unsigned step)
{
    held_stop *h = ctx;
    (void)step;
    bool held = held_now(h), stop = held && h->prev_held;
    h->prev_held = held;
    if (!stop) {
        sl__fi_arm(1, held_stop_fn, h); /* watch the next mark */
        return;
    }
    pthread_mutex_lock(&h->mu);
    h->stopped = true;
    pthread_cond_broadcast(&h->cv);
    while (!h->go)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
}

typedef struct held_sel {
    pthread_t thr;
    sl_chan *ch;
    held_stop *stop; /* A arms it; B does not */
    uint64_t v;
    unsigned marks;
    sl_status st;
    atomic_int done;
} held_sel;

static void *held_main(void *arg)
{
    held_sel *x = arg;
    sl_select_case c = {x->ch, x->stop ? SL_SEL_SEND : SL_SEL_RECV, &x->v};
    size_t idx;
    if (x->stop)
        sl__fi_arm(1, held_stop_fn, x->stop);
    x->st = sl_select(&c, 1, SL_FOREVER, &idx);
    if (x->stop)
        x->marks = sl__fi_disarm();
    atomic_store(&x->done, 1);
    return NULL;
}

START_TEST(test_select_recheck_after_reopen)
{
    held_stop h = {.ch = mk_rdv(8, NULL, NULL)};
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.cv, NULL);
    held_sel a = {.ch = h.ch, .stop = &h, .v = 71}, b = {.ch = h.ch};
    ck_assert_int_eq(pthread_create(&a.thr, NULL, held_main, &a), 0);
    /* A stops within its own few rounds; not stopping means A went to
     * sleep without the state looked for (the protocol changed). */
    uint64_t until = sl_test_now_ns() + 5000 * MS;
    pthread_mutex_lock(&h.mu);
    while (!h.stopped && sl_test_now_ns() < until) {
        pthread_mutex_unlock(&h.mu);
        sl_test_sleep_ns(1 * MS);
        pthread_mutex_lock(&h.mu);
    }
    bool stopped = h.stopped;
    pthread_mutex_unlock(&h.mu);
    ck_assert_msg(stopped, "A slept without a round held after its prepare");
    ck_assert_int_eq(pthread_create(&b.thr, NULL, held_main, &b), 0);
    sl_test_sleep_ns(30 * MS); /* B rounds, skips A's held offer, posts, sleeps */
    bool b_waited = !atomic_load(&b.done);
    pthread_mutex_lock(&h.mu);
    h.go = true;
    pthread_cond_broadcast(&h.cv);
    pthread_mutex_unlock(&h.mu);
    pthread_join(a.thr, NULL); /* a hang here: A slept without finding B */
    pthread_join(b.thr, NULL);
    ck_assert(b_waited);
    ck_assert_int_eq(a.st, SL_OK);
    ck_assert_int_eq(b.st, SL_OK);
    ck_assert_uint_eq(b.v, 71);
    sl_chan_free(h.ch);
    pthread_cond_destroy(&h.cv);
    pthread_mutex_destroy(&h.mu);
}
END_TEST
#endif

/* A select with a rendezvous case and a queue case performs exactly one:
 * with a message queued and nobody at the rendezvous, the queue case; a
 * select whose send and receive cases are on one rendezvous channel never
 * meets itself. */
START_TEST(test_select_exactly_one)
{
    sl_chan *r = mk_rdv(8, NULL, NULL);
    sl_chan *q = sl_test_chan(SL_MPMC, 8, 4, NULL, NULL);
    uint64_t v = 3, bufs[2] = {0, 0};
    ck_assert_int_eq(sl_chan_try_send(q, &v), SL_OK);
    sl_select_case cs[2] = {{r, SL_SEL_RECV, &bufs[0]}, {q, SL_SEL_RECV, &bufs[1]}};
    size_t idx = 9;
    ck_assert_int_eq(sl_select(cs, 2, SL_FOREVER, &idx), SL_OK);
    ck_assert_uint_eq(idx, 1);
    ck_assert_uint_eq(bufs[1], 3);
    ck_assert_int_eq(sl_select(cs, 2, 0, &idx), SL_TIMEDOUT);
    ck_assert_int_eq(sl_select(cs, 2, 5 * MS, &idx), SL_TIMEDOUT);
    sl_select_case self[2] = {{r, SL_SEL_SEND, &bufs[0]}, {r, SL_SEL_RECV, &bufs[1]}};
    ck_assert_int_eq(sl_select(self, 2, 20 * MS, &idx), SL_TIMEDOUT);
    ck_assert_int_eq(sl_select_biased(self, 2, 5 * MS, &idx), SL_TIMEDOUT);
    /* A parked select with both: a queued message wakes it to the queue case,
     * and its rendezvous offer is withdrawn (a try meets nobody after). */
    selector s = {.n = 2, .timeout = SL_FOREVER};
    s.cases[0] = (sl_select_case){r, SL_SEL_RECV, NULL};
    s.cases[1] = (sl_select_case){q, SL_SEL_RECV, NULL};
    selector_start(&s);
    sl_test_sleep_ns(30 * MS);
    ck_assert(!atomic_load(&s.done));
    v = 4;
    ck_assert_int_eq(sl_chan_try_send(q, &v), SL_OK);
    pthread_join(s.thr, NULL);
    ck_assert_int_eq(s.st, SL_OK);
    ck_assert_uint_eq(s.index, 1);
    ck_assert_uint_eq(s.bufs[1], 4);
    ck_assert_int_eq(sl_chan_try_send(r, &v), SL_FULL);
    sl_chan_free(q);
    sl_chan_free(r);
}
END_TEST

/* A select parked on rendezvous cases wakes with SL_CLOSED at close. */
START_TEST(test_select_close)
{
    sl_chan *ch = mk_rdv(8, NULL, NULL);
    selector s = {.n = 1, .timeout = SL_FOREVER};
    s.cases[0] = (sl_select_case){ch, _i ? SL_SEL_SEND : SL_SEL_RECV, NULL};
    selector_start(&s);
    sl_test_sleep_ns(30 * MS);
    ck_assert(!atomic_load(&s.done));
    sl_chan_close(ch);
    pthread_join(s.thr, NULL);
    ck_assert_int_eq(s.st, SL_CLOSED);
    ck_assert_uint_eq(s.index, 0);
    sl_chan_free(ch);
}
END_TEST

/* More rendezvous cases than fit on the stack: the offers are allocated,
 * and a failed allocation is SL_ENOMEM with nothing done. */
START_TEST(test_select_many_offers)
{
    enum { N = 6 };
    sl_chan *ch[N];
    uint64_t bufs[N];
    sl_select_case cs[N];
    for (int i = 0; i < N; i++) {
        ch[i] = mk_rdv(8, NULL, NULL);
        cs[i] = (sl_select_case){ch[i], SL_SEL_RECV, &bufs[i]};
    }
    size_t idx = N;
    ck_assert_int_eq(sl_select(cs, N, 2 * MS, &idx), SL_TIMEDOUT);
    sl_test_fail_allocs(UINT64_MAX);
    ck_assert_int_eq(sl_select(cs, N, 2 * MS, &idx), SL_ENOMEM);
    sl_test_alloc_faults_off();
    ck_assert_uint_eq(idx, N);
    party p;
    party_start(&p, ch[4], true, 44, 0);
    ck_assert_int_eq(sl_select(cs, N, SL_FOREVER, &idx), SL_OK);
    ck_assert_uint_eq(idx, 4);
    ck_assert_uint_eq(bufs[4], 44);
    ck_assert_int_eq(party_join(&p), SL_OK);
    for (int i = 0; i < N; i++)
        sl_chan_free(ch[i]);
}
END_TEST


/* Eight selects, each with a send of its own id and a receive on one
 * channel: they pair up, each returns SL_OK, none receives its own id, and
 * the ids received are exactly the ids sent. */
START_TEST(test_select_selects_pair_up)
{
    enum { N = 8 };
    for (unsigned round = 0; round < 10; round++) {
        sl_chan *ch = mk_rdv(8, NULL, NULL);
        selector s[N];
        for (unsigned k = 0; k < N; k++) {
            s[k] = (selector){.n = 2, .timeout = 10 * SEC};
            s[k].cases[0] = (sl_select_case){ch, SL_SEL_SEND, NULL};
            s[k].cases[1] = (sl_select_case){ch, SL_SEL_RECV, NULL};
            s[k].bufs[0] = 1000 + k;
            selector_start(&s[k]);
        }
        unsigned sent = 0, got = 0; /* bit sets of ids */
        for (unsigned k = 0; k < N; k++) {
            pthread_join(s[k].thr, NULL);
            ck_assert_int_eq(s[k].st, SL_OK);
            if (s[k].index == 0) {
                sent |= 1u << k;
                continue;
            }
            uint64_t from = s[k].bufs[1] - 1000;
            ck_assert_msg(from < N && from != k, "select %u received id %llu", k,
                          ULL(s[k].bufs[1]));
            got |= 1u << from;
        }
        ck_assert_uint_eq(sent, got);
        sl_chan_free(ch);
    }
}
END_TEST

/* A select with a receive on a and a send on b, run twice against a thread
 * that sends on a, then receives on b: each round performs one, the two
 * rounds both. */
static void *send_a_recv_b(void *arg)
{
    sl_chan **ab = arg;
    uint64_t v = 7;
    sl_test_sleep_ns(1 * MS);
    if (sl_chan_send(ab[0], &v) != SL_OK || sl_chan_recv(ab[1], &v) != SL_OK || v != 9)
        abort(); /* the select below then hangs: no Check call from here */
    return NULL;
}

START_TEST(test_select_both_directions_in_turn)
{
    for (unsigned round = 0; round < 10; round++) {
        sl_chan *ab[2] = {mk_rdv(8, NULL, NULL), mk_rdv(8, NULL, NULL)};
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, send_a_recv_b, ab), 0);
        int done[2] = {0, 0};
        for (int k = 0; k < 2; k++) {
            uint64_t in = 0, out = 9;
            size_t idx = 99;
            sl_select_case c[2] = {{ab[0], SL_SEL_RECV, &in}, {ab[1], SL_SEL_SEND, &out}};
            ck_assert_int_eq(sl_select(c, 2, 10 * SEC, &idx), SL_OK);
            ck_assert(idx < 2 && (idx == 1 || in == 7));
            done[idx]++;
        }
        ck_assert(done[0] == 1 && done[1] == 1);
        pthread_join(t, NULL);
        sl_chan_free(ab[0]);
        sl_chan_free(ab[1]);
    }
}
END_TEST

/* Partners that only ever try (a try_send on a, a try_recv on b, in loops)
 * against one thread's select on both: the select's offers meet the tries,
 * so both partners succeed and the select completes twice. */
typedef struct trier {
    pthread_t thr;
    sl_chan *ch;
    bool send;
    atomic_bool *stop;
    bool met;
} trier;

static void *trier_main(void *arg)
{
    trier *t = arg;
    uint64_t v = 3;
    while (!atomic_load(t->stop)) {
        if ((t->send ? sl_chan_try_send(t->ch, &v) : sl_chan_try_recv(t->ch, &v)) == SL_OK) {
            t->met = true;
            return NULL;
        }
        sched_yield();
    }
    return NULL;
}

START_TEST(test_select_meets_trying_partners)
{
    for (unsigned round = 0; round < 10; round++) {
        sl_chan *a = mk_rdv(8, NULL, NULL), *b = mk_rdv(8, NULL, NULL);
        atomic_bool stop = false;
        trier ta = {.ch = a, .send = true, .stop = &stop}, tb = {.ch = b, .stop = &stop};
        ck_assert_int_eq(pthread_create(&ta.thr, NULL, trier_main, &ta), 0);
        ck_assert_int_eq(pthread_create(&tb.thr, NULL, trier_main, &tb), 0);
        sl_select_case c[2];
        uint64_t in = 0, out = 4;
        c[0] = (sl_select_case){a, SL_SEL_RECV, &in};
        c[1] = (sl_select_case){b, SL_SEL_SEND, &out};
        sl_status st[2];
        size_t idx[2] = {99, 99};
        for (int k = 0; k < 2; k++)
            st[k] = sl_select(c, 2, 10 * SEC, &idx[k]);
        atomic_store(&stop, true);
        pthread_join(ta.thr, NULL);
        pthread_join(tb.thr, NULL);
        ck_assert_msg(st[0] == SL_OK && st[1] == SL_OK && idx[0] != idx[1] && ta.met && tb.met,
                      "round %u: %s/%s, cases %zu %zu, partners met %d %d", round,
                      sl_status_str(st[0]), sl_status_str(st[1]), idx[0], idx[1], ta.met, tb.met);
        sl_chan_free(a);
        sl_chan_free(b);
    }
}
END_TEST

/* A select parked with channel c in two receive cases and d in a third is
 * taken through d; its offers on c must all be gone, so the next send on c
 * reaches a second select parked on c alone. */
START_TEST(test_select_duplicate_offers_withdrawn)
{
    sl_chan *c = mk_rdv(8, NULL, NULL), *d = mk_rdv(8, NULL, NULL);
    for (unsigned round = 0; round < 10; round++) {
        selector s1 = {.n = 3, .timeout = 10 * SEC}, s2 = {.n = 1, .timeout = 10 * SEC};
        s1.cases[0] = (sl_select_case){c, SL_SEL_RECV, NULL};
        s1.cases[1] = (sl_select_case){c, SL_SEL_RECV, NULL};
        s1.cases[2] = (sl_select_case){d, SL_SEL_RECV, NULL};
        s2.cases[0] = (sl_select_case){c, SL_SEL_RECV, NULL};
        selector_start(&s1);
        uint64_t seven = 7, eight = 8;
        ck_assert_int_eq(sl_chan_send(d, &seven), SL_OK);
        pthread_join(s1.thr, NULL);
        ck_assert_int_eq(s1.st, SL_OK);
        ck_assert_uint_eq(s1.index, 2);
        ck_assert_uint_eq(s1.bufs[2], 7);
        selector_start(&s2);
        ck_assert_int_eq(sl_chan_send(c, &eight), SL_OK);
        pthread_join(s2.thr, NULL);
        ck_assert_int_eq(s2.st, SL_OK);
        ck_assert_uint_eq(s2.bufs[0], 8);
    }
    sl_chan_free(c);
    sl_chan_free(d);
}
END_TEST

static Suite *rendezvous_suite(void)
{
    Suite *s = suite_create("rendezvous");
    TCase *tc = tcase_create("plain");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_new_and_queries);
    tcase_add_test(tc, test_try_needs_partner);
    tcase_add_loop_test(tc, test_try_meets_waiter, 0, 4);
    tcase_add_test(tc, test_blocking_meet);
    tcase_add_test(tc, test_ptr_forms);
    tcase_add_test(tc, test_batches);
    tcase_add_loop_test(tc, test_close_wakes_waiters, 0, 4);
    tcase_add_test(tc, test_close_races_send);
    tcase_add_test(tc, test_drop_never_runs);
    tcase_add_test(tc, test_typed);
    suite_add_tcase(s, tc);
    tc = tcase_create("select");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_select_meets_plain, 0, 2);
    tcase_add_test(tc, test_select_meets_select);
    tcase_add_test(tc, test_select_race);
    tcase_add_test(tc, test_select_exactly_one);
    tcase_add_loop_test(tc, test_select_close, 0, 2);
    tcase_add_test(tc, test_select_many_offers);
    tcase_add_test(tc, test_select_selects_pair_up);
    tcase_add_test(tc, test_select_both_directions_in_turn);
    tcase_add_test(tc, test_select_meets_trying_partners);
    tcase_add_test(tc, test_select_duplicate_offers_withdrawn);
    suite_add_tcase(s, tc);
#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
    tc = tcase_create("held"); /* a hang is the failure: a short time-out */
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, test_select_recheck_after_reopen);
    suite_add_tcase(s, tc);
#endif
    return s;
}

int main(void) { return sl_test_run(rendezvous_suite()); }
