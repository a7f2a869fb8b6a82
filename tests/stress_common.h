/*
 * tests/stress_common.h — the machinery the stress suites (and the unit
 * suites' threaded tests) share for checking many threads at once.
 *
 *   failures   worker threads do not call into Check (a failed ck_assert
 *              ends the test from the wrong thread while the others still
 *              run), so they record failures with rec_fail and the test
 *              checks ASSERT_CLEAN() after the join. Every message names the
 *              test and its seed, and SL_STRESS_SEED=seed replays the random
 *              choices.
 *   messages   (producer, check, seq) and a pad derived from them, so that a
 *              torn, corrupt or misrouted copy shows.
 *   bitmaps    one bit per (producer, seq): exactly-once accounting, and
 *              the per-producer FIFO checks one observer can make.
 *   teams      the worker threads of one run, started role by role under a
 *              watchdog (a run that makes no progress for 30 s is a lost
 *              wake-up, a missed close or a livelock: it fails with its
 *              state) and optionally a preemptor (signals workers at random
 *              instants; the handler naps a few microseconds).
 *   books      what a mixed-close round sent, received and dropped, for the
 *              suites whose channels take every send and receive form.
 */
#ifndef SLUICE_TESTS_STRESS_COMMON_H
#define SLUICE_TESTS_STRESS_COMMON_H

#include "harness.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/chan.h>

#define ESZ_MAX 64                   /* the largest message the stress suites send */
#define NONE UINT64_MAX              /* "no seq seen yet" */
#define GOLDEN 0x9E3779B97F4A7C15ull /* seeds per thread: seed ^ (idx + 1) * GOLDEN */
#define WATCHDOG_NS (30ull * SEC)

/* ---- failures seen by worker threads ------------------------------------ */

extern atomic_int g_failed;
extern atomic_uint g_fail_count;
extern char g_failmsg[1024];
extern uint64_t g_seed;  /* the running test's seed */
extern char g_test[160]; /* "suite test[case]", the prefix of every message */

/* Starts a test: takes its seed from SL_STRESS_SEED or the clock, clears the
 * failure record and prints "[suite name] seed N", the name formatted from
 * fmt. Returns the seed. */
uint64_t begin_test(const char *suite, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Records a failure from any thread; the first one's message is kept. */
void rec_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether a failure was recorded, for workers that stop early. */
bool failed(void);
/* Formats into a static buffer, for CHECK_MSG on the test's thread only. */
const char *fmt_buf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define ASSERT_CLEAN()                                                                      \
    ck_assert_msg(atomic_load(&g_failed) == 0,                                              \
                  "%s: %s (%u failure(s) in all; seed %llu: rerun with SL_STRESS_SEED=%llu)", \
                  g_test, g_failmsg, atomic_load(&g_fail_count), ULL(g_seed), ULL(g_seed))

/* Calls into Check only on failure: a passing ck_assert_msg writes a mark to
 * the parent process, far too slow for per-message verification loops. */
#define CHECK_MSG(cond, ...)                                                                \
    do {                                                                                    \
        if (!(cond))                                                                        \
            ck_abort_msg("%s [seed %llu]: %s", g_test, ULL(g_seed), fmt_buf(__VA_ARGS__));  \
    } while (0)

/* ---- memory, signals and counters --------------------------------------- */

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
/* Zeroed, on its own cache lines (for run structs with _Alignas(64) members). */
void *xaligned(size_t bytes);
/* n words, each NONE. */
uint64_t *xnones(size_t n);

/* Installs fn for signal sig, with SA_RESTART; fn must be async-signal-safe
 * and keep errno. */
void install_handler(int sig, void (*fn)(int));
/* Spins ns without sleeping, so the thread stays on its CPU. */
void busy_wait(uint64_t ns);

/* One counter per cache line, so progress reporting does not add sharing. */
typedef struct pad_counter {
    _Alignas(64) atomic_uint_fast64_t v;
} pad_counter;

uint64_t sum_counters(const pad_counter *c, size_t n);
/* For a watchdog report: "  <pname> i: count" for the first np counters,
 * then "  <cname> i: count" for the next nc. */
void print_progress(const pad_counter *c, unsigned np, unsigned nc, const char *pname,
                    const char *cname);

/* ---- a set of (producer, seq) pairs ------------------------------------- */

typedef struct bitmap {
    atomic_uint_fast64_t *w;
    uint64_t nbits;
} bitmap;

void bm_init(bitmap *b, uint64_t nbits);
void bm_free(bitmap *b);
/* Sets bit i; returns whether it was already set. */
bool bm_set(bitmap *b, uint64_t i);
bool bm_get(const bitmap *b, uint64_t i);
/* When got != want, fails naming the first (producer, seq) of a run with n
 * seqs per producer that is missing from `seen`. */
void check_none_lost(const bitmap *seen, uint64_t n, uint64_t got, uint64_t want);

/* ---- FIFO per producer, and what a drop function checks ----------------- */

/* One observer's newest seq from producer p is *last (NONE before the first):
 * records s, failing when it is not newer. Returns false on a violation. */
bool fifo_see(uint64_t *last, uint32_t p, uint64_t s, const char *who);
/* A drop function's checks of (p, s), bit i of the books: dropped once, never
 * received, newer than the previous drop from p (*drop_last, then updated)
 * and than everything received from p (newest_recv, or NONE). */
void drop_see(bitmap *drop, const bitmap *recv, uint64_t *drop_last, uint64_t newest_recv,
              uint32_t p, uint64_t s, uint64_t i);
/* newest[p] = the largest of newest[p] and every observer's last[c][p]. */
void fold_newest(uint64_t *newest, const uint64_t *last, unsigned nc, unsigned np);

/* ---- messages: (producer, check, seq), then a pad derived from them; an
 * 8-byte message packs producer, 16 bits of check and a 40-bit seq --------- */

typedef struct msg_hdr {
    uint32_t producer;
    uint32_t check;
    uint64_t seq;
} msg_hdr;
_Static_assert(sizeof(msg_hdr) == 16, "the message header is 16 bytes");

uint32_t msg_check(uint32_t p, uint64_t s);
void msg_make(unsigned char *b, size_t esz, uint32_t p, uint64_t s);
/* Fills batch with producer p's next messages from seq s: between 1 and bmax
 * of them, at random, and at most `left`. Returns how many. */
size_t msg_batch(unsigned char *batch, size_t esz, uint32_t p, uint64_t s, uint64_t left,
                 size_t bmax, sl_test_rng *rng);
/* Reads an intact message from a producer below np with a seq below n. On a
 * bad one writes why into why[len] and returns false. */
bool msg_parse(const unsigned char *b, size_t esz, unsigned np, uint64_t n, uint32_t *p,
               uint64_t *s, char *why, size_t len);
/* msg_parse that records a bad message with rec_fail, as "who: why". */
bool msg_read(const unsigned char *b, size_t esz, unsigned np, uint64_t n, uint32_t *p,
              uint64_t *s, const char *who);

/* ---- channels ----------------------------------------------------------- */

/* The time-outs the random *_for calls pick from: 0 polls. */
extern const uint64_t k_timeouts[5];
#define N_TIMEOUTS (sizeof k_timeouts / sizeof k_timeouts[0])

/* A channel; with `at`, its counters start at `start` (sl__chan_new_at), so
 * that a run crosses their wrap-around. */
sl_status new_chan(sl_chan **ch, sl_flavor fl, size_t esz, size_t cap, sl_drop_fn drop,
                   void *ctx, bool at, uint64_t start);

/* ---- the watchdog: teams start and stop it ------------------------------ */

/* Reports a run whose progress count stands still for WATCHDOG_NS (a lost
 * wake-up, a missed close, a livelock) with its state, and fails the test. */
typedef struct watchdog {
    pthread_t thr;
    atomic_bool stop;
    uint64_t (*progress)(void *arg); /* any count that moves while the test does */
    void (*diag)(void *arg);         /* prints the test's state, or NULL */
    void *arg;
} watchdog;

/* ---- the preemptor: teams start and stop it ----------------------------- */

/* How often it signals and how long a signalled thread stays stopped. */
typedef struct preempt_timing {
    uint64_t gap_ns, gap_span_ns; /* between signals: gap_ns + rand % gap_span_ns */
    uint64_t nap_ns, nap_span_ns; /* the handler naps nap_ns + rand % nap_span_ns */
    bool spins;                   /* a third of the stops spin 500-2500 loops instead */
} preempt_timing;

/* Every 10-150 us, a 1-41 us nap or a short spin: many stops per second,
 * each short enough that blocking paths still make progress. */
extern const preempt_timing k_preempt_brief;

/* A thread that sends SIGUSR2 to one of its targets at random instants; the
 * handler naps or spins, stopping the target at an arbitrary instruction:
 * inside the nanosecond-wide windows of blocking and close paths, between a
 * failed attempt and sl_event_prepare, between a push and its notify. Futex
 * calls return EINTR for real. */
typedef struct preemptor {
    pthread_t thr;
    atomic_bool stop;
    const preempt_timing *timing;
    pthread_t *targets;
    size_t n;
    uint64_t seed, sent;
    bool on;
} preemptor;

/* Signals handled since the last start, by every target. */
extern atomic_uint_fast64_t g_preempt_hits;

/* ---- a team: the worker threads of one run ------------------------------ */

struct team;

/* What a worker thread gets: its run and its index. */
typedef struct worker {
    void *run;
    unsigned idx; /* counts up from 0 across the roles, in order */
    pthread_t thr;
    void *(*fn)(void *); /* its role's thread function, called with this worker */
    struct team *team;
    bool joined;
} worker;

typedef struct team_role {
    unsigned count;
    void *(*fn)(void *);
    bool preempt; /* the preemptor may stop these threads */
} team_role;

typedef struct team {
    worker *w; /* [n] */
    unsigned n;
    atomic_uint finished; /* workers whose function returned */
    pthread_t *targets;   /* the preemptor's, kept until it stops */
    watchdog wd;
    preemptor pr;
    uint64_t t0;
} team;

/* Starts the watchdog on run, then the workers role by role, then, with a
 * `preempt` timing, the preemptor on the roles that allow it. */
void team_start(team *t, void *run, const team_role *roles, size_t nroles,
                const preempt_timing *preempt, uint64_t (*progress)(void *),
                void (*diag)(void *));
/* Joins workers [from, to), for tests that end roles one after another;
 * not while the preemptor runs (it must not signal a joined thread). */
void team_join(team *t, unsigned from, unsigned to);
/* Waits for every worker, stops the preemptor, joins the rest, stops the
 * watchdog. Returns the seconds since the workers started. */
double team_end(team *t);

/* ---- mixed-close rounds: the books -------------------------------------- */

/* How the consumers of a round end: all drain to SL_CLOSED, some or all leave
 * once the channel is closed (the rest is for sl_chan_free). */
enum { MODE_DRAIN, MODE_PARTIAL, MODE_ABANDON, MODE_COUNT };
extern const char *const k_mode_names[MODE_COUNT];

/* One round of a mixed-close test: np producers send seq 0..n-1 with random
 * send forms, nc consumers receive with random forms, a closer closes the
 * channel at a random point and sl_chan_free drops what is left. The books
 * say for each (producer, seq) whether its send succeeded, whether that was
 * before the close began, and whether it was received or dropped. The
 * threads and the final verdict are the suite's. */
typedef struct mc_round {
    sl_chan *ch;
    sl_flavor flavor; /* for reports */
    size_t cap;       /* for reports */
    unsigned np, nc, round;
    uint64_t n;
    size_t esz;
    uint64_t seed;
    int mode;
    bitmap sent, recv, drop, preclose;
    sl_test_barrier start; /* producers, consumers and the closer */
    atomic_int close_started;
    atomic_uint producers_done;
    atomic_uint closed_seen;                /* consumers that got SL_CLOSED from a receive */
    atomic_uint_fast64_t late_after_closed; /* messages received after SL_CLOSED */
    uint64_t close_target; /* the closer waits for this many sends */
    pad_counter *progress; /* np + nc */
    uint64_t *sent_ok;     /* [np], each written by its producer */
    uint64_t *recv_cnt;    /* [nc][np] */
    uint64_t *recv_last;   /* [nc][np] newest seq each consumer got, or NONE */
    uint64_t *max_recv;    /* [np], folded from recv_last before the free */
    uint64_t *drop_cnt;    /* [np], from the drop function (main thread) */
    uint64_t *drop_last;   /* [np] */
    uint64_t drops_pre, drops_late; /* dropped at free; sent before / after the close began */
    bool *quit_early;      /* [nc] */
} mc_round;

/* A round with its mode, close point and early leavers drawn from the seed;
 * the caller creates r->ch (with mc_drop) and sets flavor and cap. */
mc_round *mc_begin(uint64_t seed, unsigned round, unsigned np, unsigned nc, uint64_t n,
                   size_t esz);
/* Frees the books (not the channel). */
void mc_end(mc_round *r);
/* Producer p's send of seq s returned SL_OK. */
void mc_mark_sent(mc_round *r, unsigned p, uint64_t s);
/* Consumer c received buf: checks it and its order, records it. */
void mc_take(mc_round *r, unsigned c, const unsigned char *buf, const char *who,
             bool after_closed);
/* The channel's drop function: checks the dropped message was sent, neither
 * received nor dropped before, and newer than anything received from its
 * producer; counts it. */
void mc_drop(void *elem, void *ctx);
uint64_t mc_progress(void *arg);
/* The watchdog's report: the round, the channel and every thread's count. */
void mc_diag(void *arg);
/* Messages received from producer p, by all consumers. */
uint64_t mc_received(const mc_round *r, unsigned p);
/* The closer's part: after the start, waits until the producers have sent
 * close_target messages (or finished), then closes, twice with `twice`
 * (close is idempotent), and checks the channel says closed. */
void mc_close_at_target(mc_round *r, bool twice);

#endif
