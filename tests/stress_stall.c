/*
 * tests/stress_stall.c — lock-freedom evidence: a thread stopped at any
 * atomic step of its operation does not stop the others.
 *
 * Fault-injection builds only (the faults preset): there SL_FI() marks every
 * atomic step of the algorithms, and sl__fi_arm (internal/testing.h) stops the
 * calling thread at the k-th mark from now, inside the test's own stop
 * function, which reports the stop and blocks on the test's mutex and
 * condition variable until released. Elsewhere the suite prints a skip line
 * and exits 77, which ctest reports as skipped (SKIP_RETURN_CODE).
 *
 * For every flavour whose header claims lock- or wait-freedom, raw and through
 * the channel's try_send / try_recv, for push and for pop, and for every k
 * from 1 until the operation finishes without reaching mark k:
 *
 *   1. a fresh queue gets PREFILL messages; nothing else runs;
 *   2. a victim thread arms itself at k and starts one operation; the test
 *      waits until it is stopped at step k (so the steps before are those of
 *      an uncontended operation, the same in every run);
 *   3. the other threads must now complete their work: SL_SPSC's other side
 *      its calls (each must return: wait-free), with at least the successes
 *      the ring's contents allow; the many-to-many flavours OTHERS threads of
 *      N_OTHER successful pushes and N_OTHER successful pops each, enough to
 *      go round every ring and slot array (SL_RING_SPARE included) twice past
 *      the stopped thread. A watchdog fails the test with "others made no
 *      progress while thread stopped at step k of <op>" after STALL_WATCH_NS
 *      without one completed call, instead of hanging;
 *   4. the victim is released and its operation must complete with a status
 *      the contents allow; the queue is drained at rest and every message
 *      pushed (prefill, victim, others) must have come out exactly once —
 *      popped, displaced (SL_RING) or drained — and nothing else.
 *
 * The victim stops once per operation; SL_RING with messages over 8 bytes is
 * lock-free only while fewer than SL_RING_SPARE operations hold a slot, and one
 * stopped thread is fewer. Cost in the faults preset: about a second.
 *
 * Planted bug: compiled with -DSTALL_PLANT_LOCK, the test serialises SL_MPMC's
 * raw try_push under a mutex of its own; the victim, stopped inside the push,
 * holds it, and the watchdog must report the first step at which it stopped.
 */
#include "stress_common.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sluice/list.h"
#include "sluice/mpmc.h"
#include "sluice/ring.h"
#include "sluice/spsc.h"
#include "testing.h"

#define SUITE "stress_stall"
#define SKIP_CODE 77 /* ctest's SKIP_RETURN_CODE for this suite (tests/CMakeLists.txt) */

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT

#define TC_TIMEOUT 120
#define CAP 4
#define PREFILL 2
#define OTHERS 2
/* Each other thread's successful pushes (and pops): twice round the largest
 * slot array, capacity + SL_RING_SPARE. */
#define N_OTHER (2 * (CAP + SL_RING_SPARE) + 8)
#define STRIDE (N_OTHER + 8)  /* seqs per producer in the books */
#define NPROD (2 + OTHERS)    /* producer ids: 0 prefill, 1 victim, 2.. the others */
#define P_PREFILL 0
#define P_VICTIM 1
#define STEP_MAX 200          /* more marks than any operation has: a runaway loop */
#define STALL_WATCH_NS (10 * SEC)

typedef enum st_kind { K_SPSC, K_MPMC, K_LIST, K_RING } st_kind;

typedef struct st_cfg {
    const char *name;
    st_kind kind;
    bool chan; /* through sl_chan_try_send / sl_chan_try_recv */
    size_t esz;
} st_cfg;

static const st_cfg st_cfgs[] = {
    {"SPSC raw", K_SPSC, false, 16},
    {"MPMC raw 8B", K_MPMC, false, 8},
    {"MPMC raw 16B", K_MPMC, false, 16},
    {"LIST raw", K_LIST, false, 16},
    {"RING raw 8B", K_RING, false, 8},
    {"RING raw 64B", K_RING, false, 64},
    {"SPSC chan", K_SPSC, true, 16},
    {"MPMC chan 8B", K_MPMC, true, 8},
    {"MPMC chan 16B", K_MPMC, true, 16},
    {"LIST chan", K_LIST, true, 16},
    {"RING chan 8B", K_RING, true, 8},
    {"RING chan 64B", K_RING, true, 64},
};

enum { V_RUNNING, V_STOPPED, V_FINISHED };

typedef struct st_run {
    const st_cfg *cfg;
    bool push_op;     /* the victim pushes (else pops) */
    unsigned k;       /* the mark it stops at */
    union {
        sl_spsc spsc;
        sl_mpmc mpmc;
        sl_list list;
        sl_ring ring;
    } u;
    sl_chan *ch;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int vstate;       /* V_*, under mu */
    bool release;     /* under mu */
    unsigned others_done;
    unsigned passed;  /* marks the victim passed, from sl__fi_disarm */
    sl_status vst;    /* the victim's status */
    unsigned char vbuf[ESZ_MAX];
    pad_counter calls[OTHERS]; /* calls the others completed (any status) */
    uint64_t ok_push[OTHERS], ok_pop[OTHERS];
    atomic_uchar pushed[NPROD * STRIDE]; /* 1: its push took effect */
    atomic_uchar seen[NPROD * STRIDE];   /* times it came out */
} st_run;

static const char *st_op(const st_run *r) { return r->push_op ? "push" : "pop"; }

/* ---- the queue under test -------------------------------------------------- */

/* A message came out (popped, displaced, drained): count it, once. */
static void st_account(st_run *r, const void *elem, const char *how)
{
    unsigned char b[ESZ_MAX];
    uint32_t p;
    uint64_t s;
    char who[64];
    memcpy(b, elem, r->cfg->esz); /* a drop function's elem may be unaligned */
    snprintf(who, sizeof who, "%s (%s)", r->cfg->name, how);
    if (!msg_read(b, r->cfg->esz, NPROD, STRIDE, &p, &s, who))
        return;
    if (atomic_fetch_add_explicit(&r->seen[p * STRIDE + s], 1, memory_order_relaxed) != 0)
        rec_fail("%s: producer %u seq %llu came out twice (%s)", r->cfg->name, p, ULL(s), how);
}

static void st_drop(void *elem, void *ctx) { st_account(ctx, elem, "displaced to drop"); }

static void st_init(st_run *r)
{
    const st_cfg *c = r->cfg;
    sl_status st;
    if (c->chan) {
        static const sl_flavor fl[] = {SL_SPSC, SL_MPMC, SL_LIST, SL_RING};
        sl_chan_opts o = {.flavor = fl[c->kind], .elem_size = c->esz,
                          .capacity = c->kind == K_LIST ? 0 : CAP, .drop = st_drop,
                          .drop_ctx = r};
        st = sl_chan_new(&r->ch, &o);
    } else if (c->kind == K_SPSC) {
        st = sl_spsc_init(&r->u.spsc, c->esz, CAP);
    } else if (c->kind == K_MPMC) {
        st = sl_mpmc_init(&r->u.mpmc, c->esz, CAP);
    } else if (c->kind == K_LIST) {
        st = sl_list_init(&r->u.list, c->esz);
    } else {
        st = sl_ring_init(&r->u.ring, c->esz, CAP);
    }
    CHECK_MSG(st == SL_OK, "%s: init returned %s", c->name, sl_status_str(st));
}

static void st_destroy(st_run *r)
{
    const st_cfg *c = r->cfg;
    if (c->chan)
        sl_chan_free(r->ch);
    else if (c->kind == K_SPSC)
        sl_spsc_destroy(&r->u.spsc);
    else if (c->kind == K_MPMC)
        sl_mpmc_destroy(&r->u.mpmc);
    else if (c->kind == K_LIST)
        sl_list_destroy(&r->u.list);
    else
        sl_ring_destroy(&r->u.ring);
}

#ifdef STALL_PLANT_LOCK
static pthread_mutex_t g_plant = PTHREAD_MUTEX_INITIALIZER;
static sl_status st_mpmc_push(sl_mpmc *q, const void *b)
{
    pthread_mutex_lock(&g_plant); /* the planted bug: a lock around the push */
    sl_status st = sl_mpmc_try_push(q, b);
    pthread_mutex_unlock(&g_plant);
    return st;
}
#else
#define st_mpmc_push sl_mpmc_try_push
#endif

/* One try_push of producer p's message s; SL_OK and SL_EVICTED mark it pushed
 * (a displaced message is accounted for here or in st_drop). */
static sl_status st_push(st_run *r, unsigned p, uint64_t s)
{
    const st_cfg *c = r->cfg;
    unsigned char b[ESZ_MAX], ev[ESZ_MAX];
    sl_status st;
    msg_make(b, c->esz, p, s);
    if (c->chan)
        st = sl_chan_try_send(r->ch, b);
    else if (c->kind == K_SPSC)
        st = sl_spsc_try_push(&r->u.spsc, b);
    else if (c->kind == K_MPMC)
        st = st_mpmc_push(&r->u.mpmc, b);
    else if (c->kind == K_LIST)
        st = sl_list_try_push(&r->u.list, b);
    else if ((st = sl_ring_try_push(&r->u.ring, b, ev)) == SL_EVICTED)
        st_account(r, ev, "displaced");
    if (st == SL_OK || st == SL_EVICTED)
        atomic_store_explicit(&r->pushed[p * STRIDE + s], 1, memory_order_relaxed);
    return st;
}

/* One try_pop into out; a message that came out is accounted for. */
static sl_status st_pop(st_run *r, unsigned char *out)
{
    const st_cfg *c = r->cfg;
    sl_status st;
    if (c->chan)
        st = sl_chan_try_recv(r->ch, out);
    else if (c->kind == K_SPSC)
        st = sl_spsc_try_pop(&r->u.spsc, out);
    else if (c->kind == K_MPMC)
        st = sl_mpmc_try_pop(&r->u.mpmc, out);
    else if (c->kind == K_LIST)
        st = sl_list_try_pop(&r->u.list, out);
    else
        st = sl_ring_try_pop(&r->u.ring, out);
    if (st == SL_OK)
        st_account(r, out, "popped");
    return st;
}

/* ---- the victim ------------------------------------------------------------ */

/* The stop function sl__fi_point calls at mark k: report, then wait for the
 * test (on its mutex, never on sluice). */
static void st_stop(void *ctx, unsigned step)
{
    st_run *r = ctx;
    (void)step;
    pthread_mutex_lock(&r->mu);
    r->vstate = V_STOPPED;
    pthread_cond_broadcast(&r->cv);
    while (!r->release)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
}

static void *st_victim(void *arg)
{
    st_run *r = arg;
    /* A thread's first list operation takes a reclamation record (not the
     * steady state the progress claim is about): take it on a scratch list. */
    sl_list scratch;
    unsigned char b[ESZ_MAX];
    msg_make(b, r->cfg->esz, P_VICTIM, STRIDE - 1);
    if (sl_list_init(&scratch, r->cfg->esz) != SL_OK || sl_list_try_push(&scratch, b) != SL_OK ||
        sl_list_try_pop(&scratch, b) != SL_OK)
        rec_fail("victim: the scratch list failed");
    sl_list_destroy(&scratch);

    sl__fi_arm(r->k, st_stop, r);
    sl_status st = r->push_op ? st_push(r, P_VICTIM, 0) : st_pop(r, r->vbuf);
    unsigned passed = sl__fi_disarm();
    pthread_mutex_lock(&r->mu);
    r->vst = st;
    r->passed = passed;
    r->vstate = V_FINISHED;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* ---- the others ------------------------------------------------------------ */

typedef struct st_other {
    st_run *r;
    unsigned t;
    pthread_t thr;
} st_other;

static void st_call_done(st_run *r, unsigned t)
{
    atomic_fetch_add_explicit(&r->calls[t].v, 1, memory_order_relaxed);
}

/* SL_SPSC: the one thread on the other side. Its calls must all return; what
 * they achieve is checked by the test. */
static void st_other_spsc(st_run *r)
{
    unsigned char b[ESZ_MAX];
    for (unsigned i = 0; i < CAP + 2; i++) {
        sl_status st = r->push_op ? st_pop(r, b) : st_push(r, 2, i);
        r->ok_push[0] += !r->push_op && st == SL_OK;
        r->ok_pop[0] += r->push_op && st == SL_OK;
        st_call_done(r, 0);
    }
}

/* Many-to-many: N_OTHER rounds of one successful push, then one successful
 * pop, each retried while the queue says full or empty. */
static void st_other_mpmc(st_run *r, unsigned t)
{
    unsigned char b[ESZ_MAX];
    for (unsigned i = 0; i < N_OTHER && !failed(); i++) {
        sl_status st;
        while ((st = st_push(r, 2 + t, i)) == SL_FULL) {
            st_call_done(r, t);
            sched_yield();
        }
        if (st != SL_OK && st != SL_EVICTED)
            rec_fail("%s: other %u: push returned %s", r->cfg->name, t, sl_status_str(st));
        r->ok_push[t]++;
        st_call_done(r, t);
        while ((st = st_pop(r, b)) == SL_EMPTY) {
            st_call_done(r, t);
            sched_yield();
        }
        if (st != SL_OK)
            rec_fail("%s: other %u: pop returned %s", r->cfg->name, t, sl_status_str(st));
        r->ok_pop[t]++;
        st_call_done(r, t);
    }
}

static void *st_other_main(void *arg)
{
    st_other *o = arg;
    st_run *r = o->r;
    if (r->cfg->kind == K_SPSC)
        st_other_spsc(r);
    else
        st_other_mpmc(r, o->t);
    pthread_mutex_lock(&r->mu);
    r->others_done++;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* ---- the test -------------------------------------------------------------- */

static uint64_t st_calls(st_run *r)
{
    return sum_counters(r->calls, OTHERS);
}

/* Waits (mu held) for a signal on cv, 50 ms at most: the watchdogs' tick. */
static void st_nap(st_run *r)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&r->cv, &r->mu, &ts);
}

/* Waits (mu held) until the victim leaves not_state. A victim that neither
 * stops nor finishes is blocked inside its uncontended operation. */
static void st_wait_victim(st_run *r, int not_state)
{
    uint64_t t0 = sl_test_now_ns();
    while (r->vstate == not_state) {
        st_nap(r);
        CHECK_MSG(r->vstate != not_state || sl_test_now_ns() - t0 < STALL_WATCH_NS,
                  "%s: the victim's %s (stop at step %u) neither stopped nor finished in %llu s",
                  r->cfg->name, st_op(r), r->k, ULL(STALL_WATCH_NS / SEC));
    }
}

/* Waits (mu held) for every other thread; fails if their completed calls
 * stand still for STALL_WATCH_NS. */
static void st_wait_others(st_run *r, unsigned nothers)
{
    uint64_t seen = st_calls(r), since = sl_test_now_ns();
    while (r->others_done < nothers) {
        st_nap(r);
        uint64_t now = st_calls(r);
        if (now != seen) {
            seen = now;
            since = sl_test_now_ns();
        }
        CHECK_MSG(sl_test_now_ns() - since < STALL_WATCH_NS,
                  "%s: others made no progress while thread stopped at step %u of %s "
                  "(%llu calls completed, none in %llu s)",
                  r->cfg->name, r->k, st_op(r), ULL(now), ULL(STALL_WATCH_NS / SEC));
    }
}

/* What the others must have achieved while the victim was stopped. */
static void st_check_others(st_run *r, unsigned nothers)
{
    ASSERT_CLEAN();
    if (r->cfg->kind == K_SPSC) {
        /* The producer stopped: the prefill is there to pop. The consumer
         * stopped: at least the free room, CAP - PREFILL, takes pushes. */
        uint64_t got = r->push_op ? r->ok_pop[0] : r->ok_push[0];
        unsigned need = r->push_op ? PREFILL : CAP - PREFILL;
        CHECK_MSG(got >= need,
                  "%s: with the %s stopped at step %u, the other side succeeded %llu times "
                  "(need %u)",
                  r->cfg->name, r->push_op ? "producer" : "consumer", r->k, ULL(got), need);
        return;
    }
    for (unsigned t = 0; t < nothers; t++)
        CHECK_MSG(r->ok_push[t] == N_OTHER && r->ok_pop[t] == N_OTHER,
                  "%s: other %u completed %llu pushes and %llu pops while the victim was "
                  "stopped at step %u of %s (need %u each)",
                  r->cfg->name, t, ULL(r->ok_push[t]), ULL(r->ok_pop[t]), r->k, st_op(r),
                  N_OTHER);
}

/* The victim's status. Push: SL_OK; SL_FULL for SL_MPMC (the others may have
 * filled it for a moment); SL_EVICTED for SL_RING. Pop: the queue never held
 * fewer than PREFILL messages the victim could take, so SL_OK. */
static void st_check_victim(st_run *r)
{
    const st_cfg *c = r->cfg;
    sl_status st = r->vst;
    bool ok = st == SL_OK || (r->push_op && ((c->kind == K_MPMC && st == SL_FULL) ||
                                             (c->kind == K_RING && st == SL_EVICTED)));
    CHECK_MSG(ok, "%s: the victim's %s (stopped at step %u) returned %s", c->name, st_op(r),
              r->k, sl_status_str(st));
}

/* Drains at rest; every message pushed came out exactly once, nothing else. */
static void st_books(st_run *r)
{
    unsigned char b[ESZ_MAX];
    unsigned n = 0;
    while (st_pop(r, b) == SL_OK)
        CHECK_MSG(++n <= NPROD * STRIDE, "%s: the drain does not end", r->cfg->name);
    ASSERT_CLEAN();
    uint64_t total = 0;
    for (unsigned p = 0; p < NPROD; p++)
        for (unsigned s = 0; s < STRIDE; s++) {
            unsigned in = atomic_load(&r->pushed[p * STRIDE + s]);
            unsigned out = atomic_load(&r->seen[p * STRIDE + s]);
            CHECK_MSG(in == out,
                      "%s, victim's %s stopped at step %u: producer %u seq %u %s", r->cfg->name,
                      st_op(r), r->k, p, s,
                      in ? "was pushed and never came out (lost)" : "came out, never pushed");
            total += in;
        }
    sl_test_account("messages exactly once, one thread stopped mid-call", total);
}

/* One k: true if the victim stopped at step k (so k + 1 is worth trying). */
static bool st_one(const st_cfg *cfg, bool push_op, unsigned k)
{
    st_run *r = xaligned(sizeof *r);
    r->cfg = cfg;
    r->push_op = push_op;
    r->k = k;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    st_init(r);
    for (unsigned s = 0; s < PREFILL; s++)
        CHECK_MSG(st_push(r, P_PREFILL, s) == SL_OK, "%s: prefill", cfg->name);

    pthread_t victim;
    const unsigned nothers = cfg->kind == K_SPSC ? 1 : OTHERS;
    st_other o[OTHERS];
    CHECK_MSG(pthread_create(&victim, NULL, st_victim, r) == 0, "pthread_create");
    pthread_mutex_lock(&r->mu);
    st_wait_victim(r, V_RUNNING);
    const bool stopped = r->vstate == V_STOPPED;
    pthread_mutex_unlock(&r->mu);
    if (stopped) {
        for (unsigned t = 0; t < nothers; t++) {
            o[t] = (st_other){r, t, 0};
            CHECK_MSG(pthread_create(&o[t].thr, NULL, st_other_main, &o[t]) == 0,
                      "pthread_create");
        }
        pthread_mutex_lock(&r->mu);
        st_wait_others(r, nothers);
        pthread_mutex_unlock(&r->mu);
        for (unsigned t = 0; t < nothers; t++)
            pthread_join(o[t].thr, NULL);
        st_check_others(r, nothers);
        pthread_mutex_lock(&r->mu);
        r->release = true;
        pthread_cond_broadcast(&r->cv);
        st_wait_victim(r, V_STOPPED);
        pthread_mutex_unlock(&r->mu);
    }
    pthread_join(victim, NULL);
    CHECK_MSG(stopped == (r->passed >= k), "%s: the victim passed %u marks, stop at %u %s",
              cfg->name, r->passed, k, stopped ? "reported" : "not reported");
    st_check_victim(r);
    st_books(r);
    st_destroy(r);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
    return stopped;
}

START_TEST(stalled)
{
    const st_cfg *cfg = &st_cfgs[_i / 2];
    const bool push_op = _i % 2 == 0;
    begin_test(SUITE, "stalled[%s %s]", cfg->name, push_op ? "push" : "pop");
    uint64_t t0 = sl_test_now_ns();
    unsigned k = 1;
    while (st_one(cfg, push_op, k))
        CHECK_MSG(++k <= STEP_MAX, "%s: the %s passed over %u marks", cfg->name,
                  push_op ? "push" : "pop", STEP_MAX);
    /* An operation without a single mark would make this suite vacuous. */
    CHECK_MSG(k > 1, "%s: the %s passed no SL_FI() mark", cfg->name, push_op ? "push" : "pop");
    fprintf(stderr, "[%s] stopped at each of %u steps; the others completed their work every "
            "time (%.0f ms)\n", g_test, k - 1, (double)(sl_test_now_ns() - t0) / 1e6);
}
END_TEST

static Suite *stress_stall_suite(void)
{
    Suite *s = suite_create(SUITE);
    sl_test_loop_case(s, "stalled", TC_TIMEOUT, stalled, 2 * N_OF(st_cfgs));
    return s;
}

int main(void) { return sl_test_run(stress_stall_suite()); }

#else

int main(void)
{
    printf("[" SUITE "] skipped: needs SL_FI() marks, i.e. a SLUICE_FAULT_INJECT build "
           "(cmake --preset faults)\n");
    return SKIP_CODE;
}

#endif
