/*
 * pipeline.c — channels alone, no pool: source → transform workers → sink.
 *
 * Answers: the Nim RFC “Executors, multithreading, channels APIs” by Mamy
 * André-Ratsimbazafy (@mratsim): its channel taxonomy (SPSC / MPMC, list /
 * array, bounded that blocks or overwrites the oldest) and "a channel MUST
 * NOT copy": a reference sent through a channel transfers ownership.
 *
 *   sources ──work (MPMC, bounded)──▶ workers ──results (MPMC, bounded)──▶ sink
 *      ▲                                  │                                 │
 *      └──────── recycle[i] (SPSC) ───────┼─────────────────────────────────┘
 *                 notices (LIST) ─────────┴──────────────────────────────▶ sink
 *   every stage ──telemetry (RING, keeps the newest)──▶ monitor
 *
 * What it shows:
 *   - move-only messages: heap buffers whose pointer goes through the
 *     channels (sl_chan_send_ptr clears the sender's copy); buffers go back to
 *     their source for reuse, and the drop function frees whatever is still
 *     inside a channel at sl_chan_free;
 *   - sl_select: the sink waits on the results and on the notices channel at
 *     once, with a timeout that prints a "stalled" notice while the sources
 *     hiccup (they stop for --hiccup ms half-way through);
 *   - close propagating downstream: the last source to finish closes `work`;
 *     each worker sees SL_CLOSED once `work` is drained, and the last worker
 *     to leave closes `results`; the sink ends when both its inputs are closed;
 *   - an overwrite ring (SL_RING) carrying the stages' counters to a monitor
 *     that reads only every 100 ms: senders never wait, the ring keeps the
 *     newest messages, and the displaced ones are counted;
 *   - a timer channel (sl_chan_tick) paces the monitor: it blocks on the
 *     ticker instead of sleeping, and never catches up on missed ticks;
 *   - each flavour chosen for its place (comments at the channels' creation).
 * It checks that every item arrives exactly once and intact (per-source
 * sequence numbers), and that every buffer allocated is freed exactly once.
 *
 * What to watch: the notices as stages finish, "stalled" / "flowing again"
 * around the hiccup, the monitor's lines (numbers that lag: it only sees the
 * newest telemetry, so even its last look may be stale) against the final
 * counts the stages report themselves, and the final accounting.
 *
 * Run: pipeline [--items N] [--sources S] [--workers W] [--hiccup MS] [--stall MS]
 */
#include <sluice.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SOURCES 8
#define MAX_WORKERS 16
#define PAYLOAD 200
#define TELEMETRY_EVERY 256      /* items between two telemetry messages */
#define MONITOR_PERIOD_MS 100
#define RECYCLE_CAP 256          /* > 64 (work) + 64 (results) + threads */

struct item {
    unsigned source, worker;
    uint64_t seq;
    unsigned char data[PAYLOAD];
};

struct notice {
    char text[96];
};

enum stage_id { STAGE_SOURCE, STAGE_WORKER, STAGE_SINK, STAGE_COUNT };

struct telemetry {
    uint32_t stage, index;
    uint64_t count;
};

/* A stage of several threads feeding one output: the last to leave closes it. */
struct stage {
    const char *name, *output_name;
    atomic_uint members_left;
    sl_chan *output;
};

struct pipeline {
    unsigned sources, workers, stall_ms, hiccup_ms;
    uint64_t items; /* per source */
    sl_chan *work, *results, *notices, *telemetry, *recycle[MAX_SOURCES];
    struct stage source_stage, worker_stage;
    _Atomic uint64_t hiccup_until_ns; /* 0 until a source starts the hiccup */
    /* Relaxed counters: read by main after joining every thread that adds. */
    atomic_ulong allocated, freed, dropped_at_free, reused;
    atomic_ulong tele_sent, tele_evicted, tele_dropped, tele_read;
    atomic_uint errors;
    /* The stages' own final counts, exact (the monitor's may be stale): each
     * thread writes its own slot, main reads them after joining it. */
    uint64_t per_source[MAX_SOURCES], per_worker[MAX_WORKERS], delivered;
    uint8_t *seen[MAX_SOURCES];       /* the sink's: seen[s][seq] delivered already */
    uint64_t start_ns, sink_done_ns;  /* set before the threads start / by the sink */
};

struct thread_arg {
    struct pipeline *p;
    unsigned index;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* "1 item", "2 items": plural(n, "item", "items"). */
static const char *plural(uint64_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

static unsigned char pattern(unsigned source, uint64_t seq, size_t i)
{
    return (unsigned char)(seq * 31u + i * 7u + source * 101u);
}

/* Something the pipeline promises did not hold: report it and close every
 * channel, so that no thread stays blocked and main can join them all. */
static void fail(struct pipeline *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("pipeline: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    atomic_fetch_add_explicit(&p->errors, 1, memory_order_relaxed);
    sl_chan_close(p->work);
    sl_chan_close(p->results);
    sl_chan_close(p->notices);
    sl_chan_close(p->telemetry);
}

static void free_item(struct pipeline *p, struct item *it)
{
    free(it);
    atomic_fetch_add_explicit(&p->freed, 1, memory_order_relaxed);
}

/* The drop function of the item channels: a buffer the channel still owns at
 * sl_chan_free. elem points at the message bytes (maybe unaligned). */
static void drop_item(void *elem, void *ctx)
{
    struct pipeline *p = ctx;
    struct item *it;
    memcpy(&it, elem, sizeof it);
    free(it);
    atomic_fetch_add_explicit(&p->dropped_at_free, 1, memory_order_relaxed);
}

/* The telemetry ring's drop function: displaced messages (and any left at
 * free) are plain values, so only counted. */
static void drop_telemetry(void *elem, void *ctx)
{
    (void)elem;
    atomic_fetch_add_explicit(&((struct pipeline *)ctx)->tele_dropped, 1, memory_order_relaxed);
}

/* After a failure closed the channels, a refused send is expected, not news. */
static bool failed_already(struct pipeline *p, sl_status st)
{
    return st == SL_CLOSED && atomic_load_explicit(&p->errors, memory_order_relaxed) != 0;
}

/* Notices go through an SL_LIST: a stage must never wait because whoever
 * reads the notices is behind, and there are few of them. */
static void post_notice(struct pipeline *p, const char *fmt, ...)
{
    struct notice n;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n.text, sizeof n.text, fmt, ap);
    va_end(ap);
    sl_status st = sl_chan_send(p->notices, &n); /* SL_LIST: never waits */
    if (st != SL_OK && !failed_already(p, st)) fail(p, "posting a notice: %s", sl_status_str(st));
}

/* Telemetry never waits either: into a full ring the send displaces the
 * oldest message (SL_EVICTED, still a success). */
static void publish(struct pipeline *p, enum stage_id stage, unsigned index, uint64_t count)
{
    struct telemetry t = {(uint32_t)stage, index, count};
    sl_status st = sl_chan_try_send(p->telemetry, &t);
    if (st == SL_EVICTED) {
        atomic_fetch_add_explicit(&p->tele_evicted, 1, memory_order_relaxed);
    } else if (st != SL_OK) {
        if (!failed_already(p, st)) fail(p, "telemetry send: %s", sl_status_str(st));
        return;
    }
    atomic_fetch_add_explicit(&p->tele_sent, 1, memory_order_relaxed);
}

static void stage_member_done(struct pipeline *p, struct stage *s)
{
    /* acq_rel: each member's sends come before its decrement, and the last
     * decrement acquires them all, so the close comes after every message of
     * the stage: a receiver that sees SL_CLOSED has had them all. The notice
     * goes first, so that it is already queued when a receiver sees the
     * close (the sink prints the notices before it reports the close). */
    if (atomic_fetch_sub_explicit(&s->members_left, 1, memory_order_acq_rel) == 1) {
        post_notice(p, "%s stage: the last one out closes %s", s->name, s->output_name);
        sl_chan_close(s->output);
    }
}

/* ---- sources ----------------------------------------------------------- */

/* Half-way, the first source to get there stops the whole source stage for
 * hiccup_ms: every source sleeps until the same deadline. */
static void maybe_hiccup(struct pipeline *p, unsigned source, uint64_t seq, bool *done)
{
    if (*done || p->hiccup_ms == 0) return;
    uint64_t until = atomic_load_explicit(&p->hiccup_until_ns, memory_order_relaxed);
    if (until == 0 && seq == p->items / 2) {
        uint64_t want = now_ns() + p->hiccup_ms * 1000000ull;
        /* relaxed: only the deadline's value matters, nothing is published with it */
        if (atomic_compare_exchange_strong_explicit(&p->hiccup_until_ns, &until, want,
                                                    memory_order_relaxed, memory_order_relaxed)) {
            until = want;
            post_notice(p, "source %u: %s for %u ms", source,
                        p->sources == 1 ? "the source stalls" : "the sources stall", p->hiccup_ms);
        }
    }
    if (until == 0) return;
    *done = true;
    uint64_t now = now_ns();
    if (now < until) sleep_ns(until - now);
}

/* A buffer: one the sink sent back, or a new one. */
static struct item *take_buffer(struct pipeline *p, unsigned source)
{
    struct item *it;
    if (sl_chan_try_recv(p->recycle[source], &it) == SL_OK) {
        atomic_fetch_add_explicit(&p->reused, 1, memory_order_relaxed);
        return it;
    }
    it = malloc(sizeof *it);
    if (it) atomic_fetch_add_explicit(&p->allocated, 1, memory_order_relaxed);
    return it;
}

static void *source_main(void *arg)
{
    struct pipeline *p = ((struct thread_arg *)arg)->p;
    unsigned me = ((struct thread_arg *)arg)->index;
    bool hiccuped = false;
    uint64_t seq;
    for (seq = 0; seq < p->items; seq++) {
        maybe_hiccup(p, me, seq, &hiccuped);
        struct item *it = take_buffer(p, me);
        if (!it) {
            fail(p, "source %u: out of memory", me);
            break;
        }
        *it = (struct item){.source = me, .seq = seq};
        for (size_t i = 0; i < PAYLOAD; i++) it->data[i] = pattern(me, seq, i);
        /* The move: on SL_OK the channel owns the buffer and `it` is NULL;
         * waits while `work` is full (back-pressure). */
        sl_status st = sl_chan_send_ptr(p->work, (void **)&it);
        if (st != SL_OK || it != NULL) {
            if (st != SL_CLOSED) fail(p, "source %u: send: %s", me, sl_status_str(st));
            free_item(p, it); /* not consumed: still ours */
            break;
        }
        if (seq % TELEMETRY_EVERY == 0) publish(p, STAGE_SOURCE, me, seq);
    }
    p->per_source[me] = seq;
    publish(p, STAGE_SOURCE, me, seq);
    /* recycle[me] stays open: the buffers the sink returns from now on pile
     * up there (RECYCLE_CAP at most, then the sink frees them) and are the
     * channel's when the pipeline ends: sl_chan_free hands them to drop_item. */
    post_notice(p, "source %u: done, %" PRIu64 " %s sent", me, seq, plural(seq, "item", "items"));
    stage_member_done(p, &p->source_stage);
    return NULL;
}

/* ---- workers ----------------------------------------------------------- */

static void *worker_main(void *arg)
{
    struct pipeline *p = ((struct thread_arg *)arg)->p;
    unsigned me = ((struct thread_arg *)arg)->index;
    uint64_t done = 0;
    for (;;) {
        struct item *it;
        sl_status st = sl_chan_recv(p->work, &it);
        if (st == SL_CLOSED) break; /* closed and drained: the sources are done */
        if (st != SL_OK) {
            fail(p, "worker %u: recv: %s", me, sl_status_str(st));
            break;
        }
        for (size_t i = 0; i < PAYLOAD; i++) it->data[i] ^= 0x5a; /* the transform */
        it->worker = me;
        st = sl_chan_send_ptr(p->results, (void **)&it);
        if (st != SL_OK) {
            if (st != SL_CLOSED) fail(p, "worker %u: send: %s", me, sl_status_str(st));
            free_item(p, it);
            break;
        }
        if (++done % TELEMETRY_EVERY == 0) publish(p, STAGE_WORKER, me, done);
    }
    p->per_worker[me] = done;
    publish(p, STAGE_WORKER, me, done);
    post_notice(p, "worker %u: input closed and drained after %" PRIu64 " %s", me, done,
                plural(done, "item", "items"));
    stage_member_done(p, &p->worker_stage);
    return NULL;
}

/* ---- the sink ---------------------------------------------------------- */

struct sink_state {
    uint64_t delivered;
    bool stalled;
    uint64_t last_result_ns;
};

/* Checks one delivered item (exactly once, intact, transformed once) and
 * gives its buffer back to its source, or frees it if the source wants no
 * more. Returns false on a broken promise. */
static bool sink_take(struct pipeline *p, struct sink_state *s, struct item *it)
{
    if (it->source >= p->sources || it->seq >= p->items || it->worker >= p->workers ||
        p->seen[it->source][it->seq]) {
        fail(p, "sink: item %u/%" PRIu64 " is unknown or a duplicate", it->source, it->seq);
        free_item(p, it);
        return false;
    }
    p->seen[it->source][it->seq] = 1;
    for (size_t i = 0; i < PAYLOAD; i++) {
        if (it->data[i] != (pattern(it->source, it->seq, i) ^ 0x5a)) {
            fail(p, "sink: item %u/%" PRIu64 " arrived damaged", it->source, it->seq);
            free_item(p, it);
            return false;
        }
    }
    if (++s->delivered % TELEMETRY_EVERY == 0) publish(p, STAGE_SINK, 0, s->delivered);
    /* SPSC back to the source: the sink is its only sender, the source its
     * only receiver. The non-blocking move: the sink must not wait for a
     * source. It clears `it` when the buffer left; SL_FULL (enough spares
     * there) consumed nothing, and the buffer is still ours. */
    unsigned source = it->source;
    if (sl_chan_try_send_ptr(p->recycle[source], (void **)&it) != SL_OK) free_item(p, it);
    return true;
}

static void sink_on_timeout(struct pipeline *p, struct sink_state *s, bool results_open)
{
    if (!results_open || s->stalled) return;
    s->stalled = true;
    printf("sink: stalled, no result for %u ms\n", p->stall_ms);
}

/* Prints the notices queued now; clears the case once notices is closed and
 * drained. */
static void print_queued_notices(sl_select_case *notices)
{
    struct notice note;
    while (notices->ch) {
        sl_status st = sl_chan_try_recv(notices->ch, &note);
        if (st != SL_OK) {
            if (st == SL_CLOSED) notices->ch = NULL;
            return;
        }
        printf("  notice: %s\n", note.text);
    }
}

static void *sink_main(void *arg)
{
    struct pipeline *p = ((struct thread_arg *)arg)->p;
    struct sink_state s = {.last_result_ns = now_ns()};
    struct item *it;
    struct notice note;
    sl_select_case cases[2] = {{p->results, SL_SEL_RECV, &it}, {p->notices, SL_SEL_RECV, &note}};
    /* A closed and drained channel is always ready (SL_CLOSED), so its case
     * is then set to NULL, which is never ready: Go's nil-channel idiom. */
    while (cases[0].ch || cases[1].ch) {
        size_t which;
        sl_status st = sl_select(cases, 2, p->stall_ms * 1000000ull, &which);
        if (st == SL_TIMEDOUT) {
            sink_on_timeout(p, &s, cases[0].ch != NULL);
        } else if (st == SL_CLOSED) {
            if (which == 0) {
                /* The last worker posted its notice before it closed results:
                 * print what is queued first, so the lines keep the order of
                 * the events (select picks at random among ready cases). */
                print_queued_notices(&cases[1]);
                printf("sink: results closed and drained: every worker has left\n");
            }
            cases[which].ch = NULL;
        } else if (st != SL_OK) {
            fail(p, "sink: select: %s", sl_status_str(st));
            break;
        } else if (which == 1) {
            printf("  notice: %s\n", note.text);
        } else {
            if (s.stalled) {
                printf("sink: flowing again after %.0f ms\n", (now_ns() - s.last_result_ns) / 1e6);
                s.stalled = false;
            }
            s.last_result_ns = now_ns();
            if (!sink_take(p, &s, it)) break;
        }
    }
    p->sink_done_ns = now_ns();
    p->delivered = s.delivered;
    publish(p, STAGE_SINK, 0, s.delivered);
    uint64_t missing = 0;
    for (unsigned i = 0; i < p->sources; i++)
        for (uint64_t q = 0; q < p->items; q++) missing += !p->seen[i][q];
    if (missing) fail(p, "sink: %" PRIu64 " items never arrived", missing);
    else printf("sink: every item delivered (%" PRIu64 "), each exactly once and intact\n",
                s.delivered);
    return NULL;
}

/* ---- the monitor ------------------------------------------------------- */

/* Prints "<label>: sources a b | workers c d e | sink f<tail>": one count
 * per stage thread. */
static void print_counts(const struct pipeline *p, const char *label, const uint64_t *sources,
                         const uint64_t *workers, uint64_t sink, const char *tail)
{
    char line[512];
    size_t len = (size_t)snprintf(line, sizeof line, "%s: sources", label);
    for (unsigned i = 0; i < p->sources; i++)
        len += (size_t)snprintf(line + len, sizeof line - len, " %" PRIu64, sources[i]);
    len += (size_t)snprintf(line + len, sizeof line - len, " | workers");
    for (unsigned i = 0; i < p->workers; i++)
        len += (size_t)snprintf(line + len, sizeof line - len, " %" PRIu64, workers[i]);
    printf("%s | sink %" PRIu64 "%s\n", line, sink, tail);
}

/* The newest count the monitor has seen from each stage thread. */
static void print_monitor(struct pipeline *p, uint64_t latest[STAGE_COUNT][MAX_WORKERS], bool last)
{
    char tail[96];
    snprintf(tail, sizeof tail, " | telemetry read %lu, displaced unread %lu",
             atomic_load_explicit(&p->tele_read, memory_order_relaxed),
             atomic_load_explicit(&p->tele_evicted, memory_order_relaxed));
    /* The ring keeps only the newest messages: a thread's final count can be
     * displaced by the others' before the monitor looks, so even the last
     * look may lag. The exact final counts come from the stages (run). */
    print_counts(p, last ? "monitor, last look (may be stale: the ring keeps only the newest)"
                         : "monitor, newest seen",
                 latest[STAGE_SOURCE], latest[STAGE_WORKER], latest[STAGE_SINK][0], tail);
}

/* A deliberately slow reader: it looks every MONITOR_PERIOD_MS, woken by a
 * ticker channel, and takes only what the ring still holds, the newest
 * messages. The ticker keeps its rhythm however long a look takes, and a
 * look that overran gets one tick, not a backlog. */
static void *monitor_main(void *arg)
{
    struct pipeline *p = ((struct thread_arg *)arg)->p;
    uint64_t latest[STAGE_COUNT][MAX_WORKERS] = {{0}};
    sl_chan *ticker;
    sl_status ts = sl_chan_tick(&ticker, MONITOR_PERIOD_MS * 1000000ull);
    if (ts != SL_OK) {
        fail(p, "monitor: sl_chan_tick: %s", sl_status_str(ts));
        return NULL;
    }
    for (;;) {
        uint64_t tick_at; /* the instant this tick was due (CLOCK_MONOTONIC ns) */
        if ((ts = sl_chan_recv(ticker, &tick_at)) != SL_OK) {
            fail(p, "monitor: ticker: %s", sl_status_str(ts));
            break;
        }
        struct telemetry t;
        sl_status st;
        unsigned got = 0;
        while ((st = sl_chan_try_recv(p->telemetry, &t)) == SL_OK) {
            got++;
            if (t.stage < STAGE_COUNT && t.index < MAX_WORKERS) latest[t.stage][t.index] = t.count;
        }
        atomic_fetch_add_explicit(&p->tele_read, got, memory_order_relaxed);
        if (got || st == SL_CLOSED) print_monitor(p, latest, st == SL_CLOSED);
        if (st == SL_CLOSED) break;
        if (st != SL_EMPTY) {
            fail(p, "monitor: recv: %s", sl_status_str(st));
            break;
        }
    }
    sl_chan_free(ticker);
    return NULL;
}

/* ---- setup, run, account ----------------------------------------------- */

static sl_status make_chan(sl_chan **out, sl_flavor flavor, size_t elem, size_t cap,
                           sl_drop_fn drop, void *ctx)
{
    sl_chan_opts o = {.flavor = flavor, .elem_size = elem, .capacity = cap, .drop = drop,
                      .drop_ctx = ctx};
    return sl_chan_new(out, &o);
}

static sl_status make_channels(struct pipeline *p)
{
    /* work: many sources, many workers → MPMC; bounded so that sources wait
     * when the workers fall behind (back-pressure) instead of piling up. */
    sl_status st = make_chan(&p->work, SL_MPMC, sizeof(struct item *), 64, drop_item, p);
    /* results: many workers, one sink → MPMC (the flavour for several
     * senders); bounded, so a slow sink slows the workers down too. */
    if (st == SL_OK) st = make_chan(&p->results, SL_MPMC, sizeof(struct item *), 64, drop_item, p);
    /* notices: a stage must never wait to report → LIST, unbounded. */
    if (st == SL_OK) st = make_chan(&p->notices, SL_LIST, sizeof(struct notice), 0, NULL, NULL);
    /* telemetry: only the newest counters matter → RING, overwrites the oldest. */
    if (st == SL_OK) st = make_chan(&p->telemetry, SL_RING, sizeof(struct telemetry), 8,
                                    drop_telemetry, p);
    /* recycle[i]: exactly one sender (the sink) and one receiver (source i)
     * → SPSC, the cheapest (wait-free). Room for more buffers than can be in
     * flight (work + results + one per thread), so that a source that was
     * blocked on `work` finds all of its buffers back. */
    for (unsigned i = 0; st == SL_OK && i < p->sources; i++)
        st = make_chan(&p->recycle[i], SL_SPSC, sizeof(struct item *), RECYCLE_CAP, drop_item, p);
    return st;
}

static void free_channels(struct pipeline *p)
{
    sl_chan_free(p->work); /* what is left inside goes to the drop functions */
    sl_chan_free(p->results);
    sl_chan_free(p->notices);
    sl_chan_free(p->telemetry);
    for (unsigned i = 0; i < p->sources; i++) sl_chan_free(p->recycle[i]);
}

/* Starts n threads running fn; returns how many started. */
static unsigned start(pthread_t *tids, struct thread_arg *args, unsigned n, struct pipeline *p,
                      void *(*fn)(void *))
{
    for (unsigned i = 0; i < n; i++) {
        args[i] = (struct thread_arg){p, i};
        if (pthread_create(&tids[i], NULL, fn, &args[i]) != 0) {
            fail(p, "pthread_create failed");
            return i;
        }
    }
    return n;
}

static void join(pthread_t *tids, unsigned n)
{
    for (unsigned i = 0; i < n; i++) pthread_join(tids[i], NULL);
}

/* The promises: every buffer freed exactly once, every telemetry message read
 * or dropped exactly once. */
static bool account(struct pipeline *p)
{
    unsigned long alloc = atomic_load_explicit(&p->allocated, memory_order_relaxed),
                  freed = atomic_load_explicit(&p->freed, memory_order_relaxed),
                  dropped = atomic_load_explicit(&p->dropped_at_free, memory_order_relaxed),
                  sent = atomic_load_explicit(&p->tele_sent, memory_order_relaxed),
                  read = atomic_load_explicit(&p->tele_read, memory_order_relaxed),
                  evicted = atomic_load_explicit(&p->tele_evicted, memory_order_relaxed),
                  tdropped = atomic_load_explicit(&p->tele_dropped, memory_order_relaxed);
    printf("buffers: %lu allocated, %lu reused from the recycle channels, %lu freed by the sink, "
           "%lu freed by drop_item at sl_chan_free\n",
           alloc, atomic_load_explicit(&p->reused, memory_order_relaxed), freed, dropped);
    printf("telemetry: %lu sent, %lu read by the monitor, %lu displaced unread, %lu left at free\n",
           sent, read, evicted, tdropped - evicted);
    bool ok = alloc == freed + dropped && sent == read + tdropped && tdropped >= evicted;
    if (!ok) fprintf(stderr, "pipeline: the accounting does not add up\n");
    return ok;
}

static bool run(struct pipeline *p)
{
    pthread_t src[MAX_SOURCES], wrk[MAX_WORKERS], sink, mon;
    struct thread_arg src_args[MAX_SOURCES], wrk_args[MAX_WORKERS], one = {p, 0};
    p->source_stage = (struct stage){"source", "work", p->sources, p->work};
    p->worker_stage = (struct stage){"worker", "results", p->workers, p->results};
    bool mon_up = pthread_create(&mon, NULL, monitor_main, &one) == 0;
    bool sink_up = mon_up && pthread_create(&sink, NULL, sink_main, &one) == 0;
    if (!sink_up) fail(p, "pthread_create failed");
    unsigned nw = sink_up ? start(wrk, wrk_args, p->workers, p, worker_main) : 0;
    unsigned ns = nw == p->workers ? start(src, src_args, p->sources, p, source_main) : 0;
    join(src, ns);
    join(wrk, nw);
    sl_chan_close(p->notices); /* every thread that posts notices has left */
    if (sink_up) pthread_join(sink, NULL);
    sl_chan_close(p->telemetry); /* ... and every one that publishes */
    if (mon_up) pthread_join(mon, NULL);
    print_counts(p, "final counts, exact (from the stages)", p->per_source, p->per_worker,
                 p->delivered, "");
    uint64_t total = 0;
    for (unsigned i = 0; i < p->workers; i++) total += p->per_worker[i];
    if (total != p->items * p->sources) fail(p, "workers transformed %" PRIu64 " items", total);
    return atomic_load_explicit(&p->errors, memory_order_relaxed) == 0;
}

/* ---- flags ------------------------------------------------------------- */

static void usage(FILE *to)
{
    fprintf(to, "usage: pipeline [--items N] [--sources S] [--workers W] [--hiccup MS] "
                "[--stall MS]\n"
                "  --items    items per source, 0..10000000 (default 20000)\n"
                "  --sources  source threads, 1..%d (default 2)\n"
                "  --workers  transform threads, 1..%d (default 3)\n"
                "  --hiccup   how long the sources stall half-way, ms, 0..10000 (default 200)\n"
                "  --stall    sink's select timeout before it reports a stall, ms, 1..10000 "
                "(default 50)\n",
            MAX_SOURCES, MAX_WORKERS);
}

/* Parses a flag's value in lo..hi; otherwise says what was wrong. */
static bool parse_num(const char *flag, const char *s, unsigned long lo, unsigned long hi,
                      unsigned long *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *s == '-' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "pipeline: --%s %s: must be %lu..%lu\n", flag, s, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

/* getopt_long itself reports an unknown option or a missing value. */
static bool parse_args(int argc, char **argv, struct pipeline *p)
{
    static const struct option longs[] = {
        {"items", required_argument, NULL, 'n'},  {"sources", required_argument, NULL, 's'},
        {"workers", required_argument, NULL, 'w'}, {"hiccup", required_argument, NULL, 'H'},
        {"stall", required_argument, NULL, 't'},  {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    unsigned long v;
    int c, at = 0;
    while ((c = getopt_long(argc, argv, "h", longs, &at)) != -1) {
        const char *flag = longs[at].name;
        switch (c) {
        case 'n': if (!parse_num(flag, optarg, 0, 10000000, &v)) return false; p->items = v; break;
        case 's': if (!parse_num(flag, optarg, 1, MAX_SOURCES, &v)) return false;
                  p->sources = (unsigned)v; break;
        case 'w': if (!parse_num(flag, optarg, 1, MAX_WORKERS, &v)) return false;
                  p->workers = (unsigned)v; break;
        case 'H': if (!parse_num(flag, optarg, 0, 10000, &v)) return false;
                  p->hiccup_ms = (unsigned)v; break;
        case 't': if (!parse_num(flag, optarg, 1, 10000, &v)) return false;
                  p->stall_ms = (unsigned)v; break;
        case 'h': usage(stdout); exit(0);
        default: return false;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "pipeline: %s: unexpected argument\n", argv[optind]);
        return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    static struct pipeline p; /* zeroed: every atomic starts at 0 */
    p.items = 20000;
    p.sources = 2;
    p.workers = 3;
    p.hiccup_ms = 200;
    p.stall_ms = 50;
    if (!parse_args(argc, argv, &p)) {
        usage(stderr);
        return 2;
    }
    sl_status st = make_channels(&p);
    for (unsigned i = 0; st == SL_OK && i < p.sources; i++)
        if (!(p.seen[i] = calloc(p.items ? p.items : 1, 1))) st = SL_ENOMEM;
    if (st != SL_OK) {
        fprintf(stderr, "pipeline: setting up: %s\n", sl_status_str(st));
        free_channels(&p);
        for (unsigned i = 0; i < p.sources; i++) free(p.seen[i]);
        return 1;
    }
    printf("pipeline: %u %s x %" PRIu64 " %s -> %u %s -> sink; %s for %u ms half-way\n",
           p.sources, plural(p.sources, "source", "sources"), p.items,
           plural(p.items, "item", "items"),
           p.workers, plural(p.workers, "worker", "workers"),
           p.sources == 1 ? "the source stalls" : "the sources stall", p.hiccup_ms);
    p.start_ns = now_ns();
    bool ok = run(&p);
    double ms = (p.sink_done_ns - p.start_ns) / 1e6;
    free_channels(&p);
    for (unsigned i = 0; i < p.sources; i++) free(p.seen[i]);
    ok = account(&p) && ok;
    if (!ok) return 1;
    /* relaxed: every source has been joined */
    bool stalled = atomic_load_explicit(&p.hiccup_until_ns, memory_order_relaxed) != 0;
    printf("pipeline: ok (%" PRIu64 " %s through in %.1f ms, %u ms of it a stall)\n",
           p.items * p.sources, plural(p.items * p.sources, "item", "items"), ms,
           stalled ? p.hiccup_ms : 0);
    return 0;
}
