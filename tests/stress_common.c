#include "stress_common.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testing.h"

/* ---- failures seen by worker threads ------------------------------------ */

atomic_int g_failed;
atomic_uint g_fail_count;
char g_failmsg[1024];
uint64_t g_seed;
char g_test[160];

uint64_t begin_test(const char *suite, const char *fmt, ...)
{
    uint64_t s = sl_test_env_seed("SL_STRESS_SEED");
    g_seed = s;
    atomic_store(&g_failed, 0);
    atomic_store(&g_fail_count, 0);
    g_failmsg[0] = '\0';
    int len = snprintf(g_test, sizeof g_test, "%s ", suite);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_test + len, sizeof g_test - (size_t)len, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[%s] seed %llu\n", g_test, ULL(s));
    return s;
}

void rec_fail(const char *fmt, ...)
{
    atomic_fetch_add(&g_fail_count, 1);
    if (atomic_exchange(&g_failed, 1) != 0)
        return; /* the first failure explains; later ones are usually its echoes */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_failmsg, sizeof g_failmsg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[%s] FAIL (seed %llu): %s\n", g_test, ULL(g_seed), g_failmsg);
    fflush(stderr);
}

bool failed(void) { return atomic_load_explicit(&g_failed, memory_order_relaxed) != 0; }

const char *fmt_buf(const char *fmt, ...)
{
    static char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

/* ---- memory, signals and counters --------------------------------------- */

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(p);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    ck_assert_ptr_nonnull(p);
    return p;
}

void *xaligned(size_t bytes)
{
    size_t rounded = (bytes + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    ck_assert_ptr_nonnull(p);
    memset(p, 0, rounded ? rounded : 64);
    return p;
}

uint64_t *xnones(size_t n)
{
    uint64_t *p = xcalloc(n, sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = NONE;
    return p;
}

static void spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
    int e = pthread_create(t, NULL, fn, arg);
    ck_assert_int_eq(e, 0);
}

/* Waits until `count` reaches n (workers done, not yet joined). */
static void wait_count(atomic_uint *count, unsigned n)
{
    while (atomic_load(count) < n)
        sl_test_sleep_ns(200000);
}

void install_handler(int sig, void (*fn)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ck_assert_int_eq(sigaction(sig, &sa, NULL), 0);
}

void busy_wait(uint64_t ns)
{
    uint64_t until = sl_test_now_ns() + ns;
    while (sl_test_now_ns() < until) {
    }
}

uint64_t sum_counters(const pad_counter *c, size_t n)
{
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += atomic_load_explicit(&c[i].v, memory_order_relaxed);
    return s;
}

void print_progress(const pad_counter *c, unsigned np, unsigned nc, const char *pname,
                    const char *cname)
{
    for (unsigned i = 0; i < np + nc; i++)
        fprintf(stderr, "  %s %u: %llu\n", i < np ? pname : cname, i < np ? i : i - np,
                ULL(atomic_load_explicit(&c[i].v, memory_order_relaxed)));
}

/* ---- a set of (producer, seq) pairs ------------------------------------- */

void bm_init(bitmap *b, uint64_t nbits)
{
    b->nbits = nbits;
    b->w = xcalloc((size_t)((nbits + 63) / 64), sizeof *b->w);
}

void bm_free(bitmap *b) { free(b->w); }

bool bm_set(bitmap *b, uint64_t i)
{
    uint64_t m = 1ull << (i & 63);
    return (atomic_fetch_or_explicit(&b->w[i >> 6], m, memory_order_relaxed) & m) != 0;
}

bool bm_get(const bitmap *b, uint64_t i)
{
    return (atomic_load_explicit(&b->w[i >> 6], memory_order_relaxed) >> (i & 63)) & 1u;
}

void check_none_lost(const bitmap *seen, uint64_t n, uint64_t got, uint64_t want)
{
    if (got != want) {
        for (uint64_t i = 0; i < seen->nbits; i++)
            CHECK_MSG(bm_get(seen, i),
                      "lost: producer %llu seq %llu never received (%llu of %llu arrived)",
                      ULL(i / n), ULL(i % n), ULL(got), ULL(want));
    }
    /* Callers check duplicates (bm_set) before: these arrived exactly once. */
    if (got == want && !failed())
        sl_test_account("messages exactly once", want);
}

/* ---- FIFO per producer, and what a drop function checks ----------------- */

bool fifo_see(uint64_t *last, uint32_t p, uint64_t s, const char *who)
{
    bool ok = *last == NONE || s > *last;
    if (!ok)
        rec_fail("%s: per-producer FIFO broken: producer %u seq %llu after seq %llu", who, p,
                 ULL(s), ULL(*last));
    *last = s;
    return ok;
}

void drop_see(bitmap *drop, const bitmap *recv, uint64_t *drop_last, uint64_t newest_recv,
              uint32_t p, uint64_t s, uint64_t i)
{
    if (bm_set(drop, i))
        rec_fail("drop function: producer %u seq %llu dropped twice", p, ULL(s));
    if (bm_get(recv, i))
        rec_fail("drop function: producer %u seq %llu dropped and also received", p, ULL(s));
    if (*drop_last != NONE && s <= *drop_last)
        rec_fail("drop function: not FIFO: producer %u seq %llu dropped after seq %llu", p,
                 ULL(s), ULL(*drop_last));
    if (newest_recv != NONE && s < newest_recv)
        rec_fail("FIFO broken: producer %u seq %llu left in the channel, but seq %llu was "
                 "received", p, ULL(s), ULL(newest_recv));
    *drop_last = s;
}

void fold_newest(uint64_t *newest, const uint64_t *last, unsigned nc, unsigned np)
{
    for (unsigned c = 0; c < nc; c++)
        for (unsigned p = 0; p < np; p++) {
            uint64_t l = last[(size_t)c * np + p];
            if (l != NONE && (newest[p] == NONE || l > newest[p]))
                newest[p] = l;
        }
}

/* ---- messages: (producer, check, seq), then a pad derived from them ----- */

uint32_t msg_check(uint32_t p, uint64_t s)
{
    uint64_t x = (s + 1) * GOLDEN ^ ((uint64_t)p + 1) * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    return (uint32_t)x ^ (uint32_t)(x >> 32);
}

/* Byte i of the pad: differs from byte to byte and message to message, so a
 * copy torn between two messages shows. */
static unsigned char pad_byte(uint32_t check, size_t i)
{
    return (unsigned char)((check >> (8 * (i & 3))) ^ (uint32_t)i);
}

/* 8-byte messages (the direct form of SL_MPMC and SL_RING): producer in the
 * top 8 bits, 16 bits of check, then a 40-bit sequence number. */
#define MSG8_SEQ_BITS 40

static uint64_t msg8_make(uint32_t p, uint64_t s)
{
    return (uint64_t)p << 56 | (uint64_t)(msg_check(p, s) & 0xFFFF) << MSG8_SEQ_BITS | s;
}

void msg_make(unsigned char *b, size_t esz, uint32_t p, uint64_t s)
{
    if (esz < sizeof(msg_hdr)) {
        uint64_t w = msg8_make(p, s);
        memcpy(b, &w, sizeof w);
        return;
    }
    msg_hdr h = {p, msg_check(p, s), s};
    memcpy(b, &h, sizeof h);
    for (size_t i = sizeof h; i < esz; i++)
        b[i] = pad_byte(h.check, i);
}

size_t msg_batch(unsigned char *batch, size_t esz, uint32_t p, uint64_t s, uint64_t left,
                 size_t bmax, sl_test_rng *rng)
{
    size_t k = 1 + (size_t)(sl_test_rng_next(rng) % bmax);
    if (k > left)
        k = (size_t)left;
    for (size_t i = 0; i < k; i++)
        msg_make(batch + i * esz, esz, p, s + i);
    return k;
}

bool msg_parse(const unsigned char *b, size_t esz, unsigned np, uint64_t n, uint32_t *p,
               uint64_t *s, char *why, size_t len)
{
    msg_hdr h;
    if (esz < sizeof h) {
        uint64_t w;
        memcpy(&w, b, sizeof w);
        h.producer = (uint32_t)(w >> 56);
        h.seq = w & (((uint64_t)1 << MSG8_SEQ_BITS) - 1);
        h.check = w == msg8_make(h.producer, h.seq) ? msg_check(h.producer, h.seq) : 0;
    } else {
        memcpy(&h, b, sizeof h);
    }
    if (h.producer >= np || h.seq >= n || h.check != msg_check(h.producer, h.seq)) {
        snprintf(why, len, "corrupt message (producer %u, seq %llu, check %08x)", h.producer,
                 ULL(h.seq), h.check);
        return false;
    }
    for (size_t i = sizeof h; i < esz; i++) {
        if (b[i] != pad_byte(h.check, i)) {
            snprintf(why, len, "torn message: producer %u seq %llu, byte %zu of %zu differs",
                     h.producer, ULL(h.seq), i, esz);
            return false;
        }
    }
    *p = h.producer;
    *s = h.seq;
    return true;
}

bool msg_read(const unsigned char *b, size_t esz, unsigned np, uint64_t n, uint32_t *p,
              uint64_t *s, const char *who)
{
    char why[160];
    if (msg_parse(b, esz, np, n, p, s, why, sizeof why))
        return true;
    rec_fail("%s: %s", who, why);
    return false;
}

/* ---- channels ----------------------------------------------------------- */

const uint64_t k_timeouts[5] = {0, 1000, 20000, 200000, 2000000};

sl_status new_chan(sl_chan **ch, sl_flavor fl, size_t esz, size_t cap, sl_drop_fn drop,
                   void *ctx, bool at, uint64_t start)
{
    sl_chan_opts o = {.flavor = fl, .elem_size = esz, .capacity = cap, .drop = drop,
                      .drop_ctx = ctx};
    return at ? sl__chan_new_at(ch, &o, start) : sl_chan_new(ch, &o);
}

/* ---- the watchdog ------------------------------------------------------- */

/* With CK_FORK=no (under a debugger) the report is enough: aborting would end
 * the whole run, not the one test. */
static bool fork_mode(void)
{
    const char *v = getenv("CK_FORK");
    return !(v && strcmp(v, "no") == 0);
}

static void watchdog_report(watchdog *w, uint64_t at)
{
    fprintf(stderr,
            "[%s] no progress for %llu s at %llu operations (seed %llu): a lost wake-up, a "
            "missed close or a livelock\n",
            g_test, ULL(WATCHDOG_NS / SEC), ULL(at), ULL(g_seed));
    if (w->diag)
        w->diag(w->arg);
    fflush(stderr);
    if (fork_mode())
        ck_abort_msg("%s: no progress for 30 s at %llu operations (seed %llu); state on stderr",
                     g_test, ULL(at), ULL(g_seed));
}

static void *watchdog_main(void *p)
{
    watchdog *w = p;
    uint64_t last = w->progress(w->arg), since = sl_test_now_ns();
    bool reported = false;
    while (!atomic_load(&w->stop)) {
        sl_test_sleep_ns(5000000);
        uint64_t cur = w->progress(w->arg), now = sl_test_now_ns();
        if (cur != last) {
            last = cur;
            since = now;
            reported = false;
        } else if (!reported && now - since > WATCHDOG_NS) {
            reported = true;
            watchdog_report(w, cur);
        }
    }
    return NULL;
}

static void watchdog_start(watchdog *w, uint64_t (*progress)(void *), void (*diag)(void *),
                           void *arg)
{
    atomic_init(&w->stop, false);
    w->progress = progress;
    w->diag = diag;
    w->arg = arg;
    spawn(&w->thr, watchdog_main, w);
}

static void watchdog_stop(watchdog *w)
{
    atomic_store(&w->stop, true);
    pthread_join(w->thr, NULL);
}

/* ---- the preemptor ------------------------------------------------------ */

const preempt_timing k_preempt_brief = {10000, 140000, 1000, 40000, true};

atomic_uint_fast64_t g_preempt_hits;
/* The running preemptor's timing, for the handler (one preemptor at a time). */
static _Atomic(const preempt_timing *) g_preempt_timing;
static _Thread_local uint64_t t_preempt_rng;

/* Async-signal-safe: an xorshift per thread, an atomic counter, nanosleep;
 * errno is kept for the interrupted code. */
static void preempt_handler(int sig)
{
    (void)sig;
    int saved = errno;
    const preempt_timing *t = atomic_load_explicit(&g_preempt_timing, memory_order_acquire);
    uint64_t x = t_preempt_rng ? t_preempt_rng : ((uint64_t)(uintptr_t)&x | 1u);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    t_preempt_rng = x;
    atomic_fetch_add_explicit(&g_preempt_hits, 1, memory_order_relaxed);
    if (t->spins && x % 3 == 0) {
        for (volatile unsigned i = 0; i < 500 + (unsigned)(x % 2000); i++) {
        }
    } else {
        struct timespec ts = {0, (long)(t->nap_ns + (x >> 8) % t->nap_span_ns)};
        nanosleep(&ts, NULL);
    }
    errno = saved;
}

static void *preemptor_main(void *p)
{
    preemptor *pr = p;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, pr->seed);
    while (!atomic_load_explicit(&pr->stop, memory_order_relaxed)) {
        sl_test_sleep_ns(pr->timing->gap_ns + sl_test_rng_next(&rng) % pr->timing->gap_span_ns);
        pthread_kill(pr->targets[sl_test_rng_next(&rng) % pr->n], SIGUSR2);
        pr->sent++;
    }
    return NULL;
}

/* Installs the SIGUSR2 handler and starts signalling `targets`, which must
 * stay joinable until preemptor_stop. */
static void preemptor_start(preemptor *pr, const preempt_timing *t, pthread_t *targets, size_t n)
{
    pr->on = true;
    pr->timing = t;
    atomic_store_explicit(&g_preempt_timing, t, memory_order_release);
    install_handler(SIGUSR2, preempt_handler);
    atomic_init(&pr->stop, false);
    atomic_store(&g_preempt_hits, 0);
    pr->targets = targets;
    pr->n = n;
    pr->seed = g_seed ^ 0x9EE3Bull;
    pr->sent = 0;
    spawn(&pr->thr, preemptor_main, pr);
}

/* Stops signalling and reports the counts. The handler stays installed: a
 * signal sent just before the stop may still be pending. */
static void preemptor_stop(preemptor *pr)
{
    atomic_store(&pr->stop, true);
    pthread_join(pr->thr, NULL);
    fprintf(stderr, "[%s] preemptor: %llu signals sent, %llu handled\n", g_test,
            ULL(pr->sent), ULL(atomic_load(&g_preempt_hits)));
}

/* ---- a team: the worker threads of one run ------------------------------ */

/* Counts the worker as finished when its function returns: with a preemptor,
 * team_end waits for that before joining anyone. */
static void *worker_main(void *arg)
{
    worker *w = arg;
    void *rv = w->fn(w);
    atomic_fetch_add(&w->team->finished, 1);
    return rv;
}

void team_start(team *t, void *run, const team_role *roles, size_t nroles,
                const preempt_timing *preempt, uint64_t (*progress)(void *), void (*diag)(void *))
{
    t->n = 0;
    for (size_t k = 0; k < nroles; k++)
        t->n += roles[k].count;
    t->w = xcalloc(t->n, sizeof *t->w);
    t->targets = xcalloc(t->n, sizeof *t->targets);
    atomic_init(&t->finished, 0);
    watchdog_start(&t->wd, progress, diag, run);
    t->t0 = sl_test_now_ns();
    size_t ntargets = 0;
    unsigned i = 0;
    for (size_t k = 0; k < nroles; k++)
        for (unsigned j = 0; j < roles[k].count; j++, i++) {
            worker *w = &t->w[i];
            *w = (worker){.run = run, .idx = i, .fn = roles[k].fn, .team = t};
            spawn(&w->thr, worker_main, w);
            if (roles[k].preempt)
                t->targets[ntargets++] = w->thr;
        }
    t->pr.on = false;
    if (preempt && ntargets > 0)
        preemptor_start(&t->pr, preempt, t->targets, ntargets);
}

void team_join(team *t, unsigned from, unsigned to)
{
    if (t->pr.on)
        ck_abort_msg("team_join with the preemptor running (it must not signal a joined thread)");
    for (unsigned i = from; i < to; i++)
        if (!t->w[i].joined) {
            pthread_join(t->w[i].thr, NULL);
            t->w[i].joined = true;
        }
}

double team_end(team *t)
{
    if (t->pr.on) {
        wait_count(&t->finished, t->n);
        preemptor_stop(&t->pr);
        t->pr.on = false;
    }
    team_join(t, 0, t->n);
    double secs = (double)(sl_test_now_ns() - t->t0) / 1e9;
    watchdog_stop(&t->wd);
    free(t->w);
    free(t->targets);
    return secs;
}

/* ---- mixed-close rounds: the books -------------------------------------- */

const char *const k_mode_names[MODE_COUNT] = {"drain", "partial", "abandon"};

/* Draws from the round's own rng in a fixed order, so a seed replays the
 * same mode, close point and leavers. */
mc_round *mc_begin(uint64_t seed, unsigned round, unsigned np, unsigned nc, uint64_t n,
                   size_t esz)
{
    sl_test_rng rng;
    sl_test_rng_seed(&rng, seed ^ (round + 1) * 0xD1B54A32D192ED03ull);
    mc_round *r = xaligned(sizeof *r);
    r->np = np;
    r->nc = nc;
    r->round = round;
    r->n = n;
    r->esz = esz;
    r->seed = seed;
    r->mode = (int)(sl_test_rng_next(&rng) % MODE_COUNT);
    uint64_t total = (uint64_t)np * n;
    bm_init(&r->sent, total);
    bm_init(&r->recv, total);
    bm_init(&r->drop, total);
    bm_init(&r->preclose, total);
    sl_test_barrier_init(&r->start, np + nc + 1);
    atomic_init(&r->close_started, 0);
    atomic_init(&r->producers_done, 0);
    atomic_init(&r->closed_seen, 0);
    atomic_init(&r->late_after_closed, 0);
    /* Mostly in the middle; sometimes at once; sometimes after the producers. */
    uint64_t pick = sl_test_rng_next(&rng) % 8;
    r->close_target = pick == 0 ? 0 : pick == 1 ? total + 1 : sl_test_rng_next(&rng) % (total + 1);
    r->progress = xaligned((np + nc) * sizeof *r->progress);
    r->sent_ok = xcalloc(np, sizeof(uint64_t));
    r->recv_cnt = xcalloc((size_t)nc * np, sizeof(uint64_t));
    r->recv_last = xnones((size_t)nc * np);
    r->max_recv = xnones(np);
    r->drop_cnt = xcalloc(np, sizeof(uint64_t));
    r->drop_last = xnones(np);
    r->quit_early = xcalloc(nc, sizeof(bool));
    for (unsigned c = 0; c < nc; c++)
        r->quit_early[c] = r->mode == MODE_ABANDON ||
                           (r->mode == MODE_PARTIAL && (sl_test_rng_next(&rng) & 1));
    return r;
}

void mc_end(mc_round *r)
{
    sl_test_barrier_destroy(&r->start);
    bm_free(&r->sent);
    bm_free(&r->recv);
    bm_free(&r->drop);
    bm_free(&r->preclose);
    free(r->progress);
    free(r->sent_ok);
    free(r->recv_cnt);
    free(r->recv_last);
    free(r->max_recv);
    free(r->drop_cnt);
    free(r->drop_last);
    free(r->quit_early);
    free(r);
}

void mc_mark_sent(mc_round *r, unsigned p, uint64_t s)
{
    uint64_t i = (uint64_t)p * r->n + s;
    if (bm_set(&r->sent, i))
        rec_fail("producer %u: seq %llu reported sent twice (test bug)", p, ULL(s));
    /* seq_cst: ordered against the closer's store of close_started. */
    if (atomic_load(&r->close_started) == 0)
        bm_set(&r->preclose, i);
}

void mc_take(mc_round *r, unsigned c, const unsigned char *buf, const char *who,
             bool after_closed)
{
    uint32_t p;
    uint64_t s;
    if (!msg_read(buf, r->esz, r->np, r->n, &p, &s, who))
        return;
    fifo_see(&r->recv_last[(size_t)c * r->np + p], p, s, who);
    uint64_t i = (uint64_t)p * r->n + s;
    if (bm_set(&r->recv, i))
        rec_fail("%s: duplicate: producer %u seq %llu received twice", who, p, ULL(s));
    r->recv_cnt[(size_t)c * r->np + p]++;
    if (after_closed)
        atomic_fetch_add(&r->late_after_closed, 1);
}

void mc_drop(void *elem, void *ctx)
{
    mc_round *r = ctx;
    uint32_t p;
    uint64_t s;
    if (!msg_read(elem, r->esz, r->np, r->n, &p, &s, "drop function"))
        return;
    uint64_t i = (uint64_t)p * r->n + s;
    if (!bm_get(&r->sent, i))
        rec_fail("drop function: producer %u seq %llu dropped, but its send failed", p, ULL(s));
    drop_see(&r->drop, &r->recv, &r->drop_last[p], r->max_recv[p], p, s, i);
    r->drop_cnt[p]++;
    if (bm_get(&r->preclose, i))
        r->drops_pre++;
    else
        r->drops_late++;
}

uint64_t mc_progress(void *arg)
{
    mc_round *r = arg;
    return sum_counters(r->progress, r->np + r->nc);
}

void mc_diag(void *arg)
{
    mc_round *r = arg;
    fprintf(stderr,
            "  round %u, mode %s, %s %u/%u cap %zu: len %zu, closed %d (close_started %d), "
            "producers done %u, consumers saw SL_CLOSED %u\n",
            r->round, k_mode_names[r->mode], sl_test_flavor_name(r->flavor), r->np, r->nc,
            r->cap, sl_chan_len(r->ch), (int)sl_chan_is_closed(r->ch),
            atomic_load(&r->close_started), atomic_load(&r->producers_done),
            atomic_load(&r->closed_seen));
    print_progress(r->progress, r->np, r->nc, "producer (next seq)", "consumer (got)");
}

uint64_t mc_received(const mc_round *r, unsigned p)
{
    uint64_t n = 0;
    for (unsigned c = 0; c < r->nc; c++)
        n += r->recv_cnt[(size_t)c * r->np + p];
    return n;
}

void mc_close_at_target(mc_round *r, bool twice)
{
    sl_test_barrier_wait(&r->start);
    while (sum_counters(r->progress, r->np) < r->close_target &&
           atomic_load(&r->producers_done) < r->np && !failed())
        sl_test_sleep_ns(10000);
    atomic_store(&r->close_started, 1);
    sl_chan_close(r->ch);
    if (twice)
        sl_chan_close(r->ch);
    if (!sl_chan_is_closed(r->ch))
        rec_fail("sl_chan_is_closed is false after sl_chan_close");
}
