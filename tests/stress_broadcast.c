/*
 * tests/stress_broadcast.c — stress accounting for broadcast channels
 * (sluice/broadcast.h).
 *
 *   churn   senders send seq 0..N-1 each, with random send forms (send,
 *           try_send, send_for, try_send_n batches, select send cases), into
 *           a broadcast channel of capacity 1, 4 or 64; the last to finish
 *           closes it. One steady subscriber, subscribed before the first
 *           send, receives with random forms (recv, try_recv, recv_for,
 *           recv_n_for, select with a never-ready second case) until
 *           SL_CLOSED. Churners subscribe, receive a random number of
 *           messages, sometimes close their own handle, leave (free), and
 *           subscribe again, until the channel is closed. Checked: every
 *           message received is intact (never torn); each subscription sees
 *           each sender's seqs increasing, and a sender's seqs jump only
 *           across an SL_LAGGED; the jumps a subscription sees never add up
 *           to more than sl_chan_missed says; the steady subscriber's
 *           received + missed is exactly every message sent (so what it
 *           was told it missed is exactly what it did not get); no send
 *           fails; the drop function sees every message exactly once,
 *           intact (at overwrite or when the last handle is freed).
 *
 * Sizes scale with SL_STRESS_SCALE; SL_STRESS_SEED replays the random
 * choices. A watchdog reports a run that stands still for 30 s (a lost
 * wake-up); a preemptor stops the threads at random instants.
 */
#include "stress_common.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/broadcast.h"
#include "sluice/chan.h"
#include "sluice/select.h"
#include "sluice/timer.h"

#define SUITE "stress_broadcast"
#define NS 2 /* senders */
#define NC 2 /* churners */
#define BATCH 8

typedef struct bc_cfg {
    size_t cap, esz;
} bc_cfg;

static const bc_cfg cfgs[] = {{1, 24}, {4, 64}, {64, 16}};

typedef struct bc_run {
    sl_chan *bc;
    sl_chan *steady; /* subscribed before the first send */
    sl_chan *never;  /* the steady subscriber's select's second case */
    size_t esz;
    uint64_t n; /* per sender */
    uint64_t seed;
    atomic_uint senders_left;
    bitmap dropped;
    atomic_uint_fast64_t drops;
    uint64_t steady_got;
    pad_counter progress[NS + 1 + NC];
} bc_run;

static void bc_drop(void *elem, void *ctx)
{
    bc_run *r = ctx;
    uint32_t p;
    uint64_t s;
    if (!msg_read(elem, r->esz, NS, r->n, &p, &s, "drop"))
        return;
    if (bm_set(&r->dropped, p * r->n + s))
        rec_fail("sender %u seq %llu dropped twice", p, ULL(s));
    atomic_fetch_add(&r->drops, 1);
}

static sl_status send_one(bc_run *r, sl_test_rng *rng, unsigned char *m)
{
    size_t i;
    sl_select_case c = {r->bc, SL_SEL_SEND, m};
    switch (sl_test_rng_next(rng) % 4) {
    case 0: return sl_chan_send(r->bc, m);
    case 1: return sl_chan_try_send(r->bc, m);
    case 2: return sl_chan_send_for(r->bc, m, k_timeouts[sl_test_rng_next(rng) % N_TIMEOUTS]);
    default: return sl_select(&c, 1, 0, &i);
    }
}

static void *bc_sender(void *arg)
{
    worker *w = arg;
    bc_run *r = w->run;
    uint32_t p = w->idx;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (p + 1) * GOLDEN);
    unsigned char batch[BATCH * ESZ_MAX];
    for (uint64_t s = 0; s < r->n && !failed();) {
        if (sl_test_rng_next(&rng) % 8 == 0) { /* a batch: all of it goes */
            size_t k = msg_batch(batch, r->esz, p, s, r->n - s, BATCH, &rng);
            size_t sent = sl_chan_try_send_n(r->bc, batch, k);
            if (sent != k)
                rec_fail("sender %u: try_send_n sent %zu of %zu", p, sent, k);
            s += k;
        } else {
            msg_make(batch, r->esz, p, s);
            sl_status st = send_one(r, &rng, batch);
            if (st != SL_OK)
                rec_fail("sender %u seq %llu: %s", p, ULL(s), sl_status_str(st));
            s++;
        }
        atomic_store(&r->progress[p].v, s);
        sl_test_maybe_stall(&rng, 256);
    }
    if (atomic_fetch_sub(&r->senders_left, 1) == 1)
        sl_chan_close(r->bc);
    return NULL;
}

/* One subscription's view: each sender's newest seq, and the jumps. */
typedef struct view {
    uint64_t last[NS]; /* NONE before the first */
    uint64_t jumps;    /* seqs skipped between two received from one sender */
    uint64_t got;
    bool lag_since[NS]; /* an SL_LAGGED came since this sender's last message */
} view;

static void view_init(view *v)
{
    memset(v, 0, sizeof *v);
    for (unsigned p = 0; p < NS; p++)
        v->last[p] = NONE;
}

static void view_lagged(view *v)
{
    for (unsigned p = 0; p < NS; p++)
        v->lag_since[p] = true;
}

static void view_see(bc_run *r, view *v, const unsigned char *m, const char *who)
{
    uint32_t p;
    uint64_t s;
    if (!msg_read(m, r->esz, NS, r->n, &p, &s, who))
        return;
    uint64_t want = v->last[p] == NONE ? NONE : v->last[p] + 1;
    if (want != NONE && s < want)
        rec_fail("%s: sender %u seq %llu after %llu", who, p, ULL(s), ULL(v->last[p]));
    else if (want != NONE && s > want) {
        if (!v->lag_since[p])
            rec_fail("%s: sender %u jumped %llu -> %llu with no SL_LAGGED", who, p,
                     ULL(v->last[p]), ULL(s));
        v->jumps += s - want;
    }
    v->last[p] = s;
    v->lag_since[p] = false;
    v->got++;
}

/* One receive by a random form into m (room for BATCH messages): the status,
 * and how many messages arrived in *k. */
static sl_status recv_some(bc_run *r, sl_chan *rx, sl_test_rng *rng, unsigned char *m,
                           size_t *k)
{
    size_t i;
    uint64_t t = k_timeouts[sl_test_rng_next(rng) % N_TIMEOUTS];
    sl_select_case c[2] = {{rx, SL_SEL_RECV, m}, {r->never, SL_SEL_RECV, m}};
    sl_status st;
    *k = 0;
    switch (sl_test_rng_next(rng) % 5) {
    case 0: st = sl_chan_recv(rx, m); break;
    case 1: st = sl_chan_try_recv(rx, m); break;
    case 2: st = sl_chan_recv_for(rx, m, t); break;
    case 3: return sl_chan_recv_n_for(rx, m, 1 + sl_test_rng_next(rng) % BATCH, t, k);
    default:
        st = sl_select(c, 2, t, &i);
        if (st == SL_OK && i != 0)
            rec_fail("the never channel's case won");
        break;
    }
    *k = st == SL_OK;
    return st;
}

/* Receives on rx until SL_CLOSED or `budget` receives; returns the last status. */
static sl_status drain(bc_run *r, sl_chan *rx, view *v, sl_test_rng *rng, uint64_t budget,
                       pad_counter *progress, const char *who)
{
    unsigned char m[BATCH * ESZ_MAX];
    sl_status st = SL_OK;
    for (uint64_t n = 0; n < budget && !failed(); n++) {
        size_t k;
        st = recv_some(r, rx, rng, m, &k);
        if (st == SL_CLOSED)
            break;
        if (st == SL_LAGGED)
            view_lagged(v);
        else if (st != SL_OK && st != SL_EMPTY && st != SL_TIMEDOUT)
            rec_fail("%s: %s", who, sl_status_str(st));
        for (size_t j = 0; j < k; j++)
            view_see(r, v, m + j * r->esz, who);
        atomic_fetch_add(&progress->v, 1);
    }
    if (v->jumps > sl_chan_missed(rx))
        rec_fail("%s: skipped %llu seqs, told of %llu", who, ULL(v->jumps),
                 ULL(sl_chan_missed(rx)));
    return st;
}

static void *bc_steady(void *arg)
{
    worker *w = arg;
    bc_run *r = w->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN);
    view v;
    view_init(&v);
    if (drain(r, r->steady, &v, &rng, UINT64_MAX, &r->progress[w->idx], "steady") !=
            SL_CLOSED && !failed())
        rec_fail("steady: did not end with SL_CLOSED");
    r->steady_got = v.got;
    return NULL;
}

static void *bc_churner(void *arg)
{
    worker *w = arg;
    bc_run *r = w->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (w->idx + 1) * GOLDEN);
    char who[32];
    snprintf(who, sizeof who, "churner %u", w->idx);
    for (bool ended = false; !ended && !failed();) {
        sl_chan *rx = NULL;
        sl_status st = sl_chan_subscribe(r->bc, &rx);
        if (st != SL_OK) {
            rec_fail("%s: subscribe: %s", who, sl_status_str(st));
            break;
        }
        view v;
        view_init(&v);
        ended = drain(r, rx, &v, &rng, 1 + sl_test_rng_next(&rng) % 64, &r->progress[w->idx],
                      who) == SL_CLOSED;
        if (!ended && sl_test_rng_next(&rng) % 4 == 0) {
            sl_chan_close(rx); /* ends this subscription alone */
            unsigned char m[ESZ_MAX];
            if ((st = sl_chan_try_recv(rx, m)) != SL_CLOSED)
                rec_fail("%s: %s from a closed subscription", who, sl_status_str(st));
        }
        /* The channel stays open while a sender is left: leave, join again. */
        ended = ended || atomic_load(&r->senders_left) == 0;
        sl_chan_free(rx);
    }
    return NULL;
}

static uint64_t bc_progress(void *arg)
{
    bc_run *r = arg;
    return sum_counters(r->progress, NS + 1 + NC);
}

static void bc_diag(void *arg)
{
    bc_run *r = arg;
    fprintf(stderr, "  BROADCAST: len %zu, steady len %zu missed %llu, senders left %u\n",
            sl_chan_len(r->bc), sl_chan_len(r->steady), ULL(sl_chan_missed(r->steady)),
            atomic_load(&r->senders_left));
    print_progress(r->progress, NS, 1 + NC, "sender", "subscriber");
}

START_TEST(churn)
{
    const bc_cfg *cfg = &cfgs[_i];
    bc_run *r = xaligned(sizeof *r);
    r->seed = begin_test(SUITE, "churn[cap %zu, %zu bytes]", cfg->cap, cfg->esz);
    r->esz = cfg->esz;
    r->n = sl_test_scaled(4000, 500);
    atomic_store(&r->senders_left, NS);
    bm_init(&r->dropped, NS * r->n);
    ck_assert_int_eq(new_chan(&r->bc, SL_BROADCAST, r->esz, cfg->cap, bc_drop, r, false, 0),
                     SL_OK);
    ck_assert_int_eq(sl_chan_subscribe(r->bc, &r->steady), SL_OK);
    ck_assert_int_eq(sl_chan_never(&r->never), SL_OK);

    const team_role roles[] = {{NS, bc_sender, true}, {1, bc_steady, true}, {NC, bc_churner, true}};
    team t;
    team_start(&t, r, roles, N_OF(roles), &k_preempt_brief, bc_progress, bc_diag);
    team_end(&t);
    ASSERT_CLEAN();

    uint64_t total = NS * r->n, missed = sl_chan_missed(r->steady);
    CHECK_MSG(r->steady_got + missed == total, "steady: received %llu + missed %llu != %llu",
              ULL(r->steady_got), ULL(missed), ULL(total));
    fprintf(stderr, "[%s] steady subscriber: %llu received, %llu missed\n", g_test,
            ULL(r->steady_got), ULL(missed));
    sl_chan_free(r->steady);
    sl_chan_free(r->bc); /* the last handle: drops what is held */
    ASSERT_CLEAN();
    uint64_t drops = atomic_load(&r->drops);
    check_none_lost(&r->dropped, r->n, drops, total);
    CHECK_MSG(drops == total, "dropped %llu of %llu", ULL(drops), ULL(total));
    sl_test_account("broadcast messages received or missed, and dropped once", 2 * total);
    sl_chan_free(r->never);
    bm_free(&r->dropped);
    free(r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create(SUITE);
    sl_test_loop_case(s, "churn", 180, churn, N_OF(cfgs));
    return sl_test_run(s);
}
