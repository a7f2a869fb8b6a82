/*
 * job_market.c — the Seppuku Job Market on the worker pool: players submit
 * prioritised jobs keyed by their player id; workers come and go with the
 * load, and one that dies inside a job is noticed and replaced.
 *
 * Answers: “Seppuku Job Market: Minimal Dynamic Tasking in Ada” by Diana
 * Coman (February 2019), the job market of the Eulora game server. Its
 * Job_Market maps onto one sl_pool:
 *   Add_Job          sl_pool_submit_job with key = player id: SL_OK, or a
 *                    refusal — SL_TIMEDOUT (a full board, also with
 *                    timeout 0: try once),
 *                    SL_EXISTS (SL_JOB_UNIQUE: the player already has a job
 *                    queued or running), SL_CLOSED (stopping);
 *   Get_Available    the pool runs the highest priority first and never two
 *                    jobs of one key at once (a busy key's jobs wait aside,
 *                    in submission order, without holding back other keys'
 *                    jobs — though they count against the board's capacity);
 *   Manage_Workers   min_workers / max_workers / idle_timeout_ns: workers are
 *                    spawned when every one is busy and retire after idling
 *                    ("seppuku"), never above max_workers; a worker thread
 *                    that dies inside a job is noticed by the pool, its job
 *                    reported to on_discard (SL_DISCARD_WORKER_DIED), its
 *                    key released and a replacement spawned;
 *   Stop             sl_pool_shutdown(SL_CANCEL): queued jobs go to
 *                    on_discard, running ones finish, and producers — even
 *                    ones blocked on a full board — return SL_CLOSED at once;
 *   Operating        sl_pool_get_stats, printed a few times per second.
 *
 * Three acts. 1, the board: one worker, a stopped pool, jobs of mixed
 * priorities — they run by priority, one player's jobs in submission order,
 * and each refusal happens once on purpose. 2, the market: --players threads
 * each submit --jobs jobs; a per-player in-flight counter must never exceed
 * 1, each player's jobs must start in submission order, some jobs kill their
 * worker (pthread_exit). 3, the stop: the players flood the board, the market
 * shuts down under them. Watch the Operating lines (workers growing from 1 to
 * the maximum, then trimming back) and the accounting line at the end.
 *
 * Run: job_market [--players N] [--jobs N] [--duration US] [--workers N]
 *                 [--capacity N] [--deaths N]
 */
#include <sluice.h>

#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LEVELS 4u                       /* job priorities 0 .. 3 */
#define IDLE_TIMEOUT_NS 50000000ull     /* an idle worker above the minimum retires after 50 ms */
#define SECOND 1000000000ull

enum { QUEUED, RAN, DISCARDED };

typedef struct market market;

typedef struct job_rec {
    market *m;
    unsigned player, seq, priority;
    bool seppuku;          /* this job kills its own worker thread */
    bool gated;            /* act 3: runs until the market has been stopped */
    atomic_int fate;       /* QUEUED, then RAN or DISCARDED: exactly once */
} job_rec;

typedef struct player {
    market *m;
    unsigned id;
    job_rec *recs;         /* one per accepted job, seq = index */
    unsigned accepted, cap_recs;
    uint64_t rng;
    /* Written by this player's jobs: the key guarantees they never overlap,
     * and the checks below are what would notice if they did. */
    atomic_int in_flight;  /* this player's jobs running now: never above 1 */
    atomic_int last_start; /* the seq of the last job of this player that started */
    uint64_t timedout, exists, closed; /* refusals, read after join */
    pthread_t thread;
} player;

struct market {
    unsigned players, jobs, duration_us, max_workers, capacity, deaths;
    sl_pool *pool;
    player *pl;
    pthread_barrier_t start;
    atomic_bool flood;           /* act 3: keep submitting until SL_CLOSED */
    pthread_mutex_t gate_lock;   /* act 3's jobs hold their workers until the stop */
    pthread_cond_t gate_cond;
    bool gate_open;
    atomic_uint players_done;
    atomic_ullong ran, died, cancelled, reset;
    atomic_uint threads, peak;   /* worker threads between worker_init and worker_fini */
    atomic_uint overlaps, disorders, double_fates;
};

static _Noreturn void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fputs("job_market: FAILED: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* "1 worker", "2 workers": plural(n, "worker", "workers"). */
static const char *plural(uint64_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

/* The English ordinal suffix of n: 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st. */
static const char *ordinal(unsigned n)
{
    if (n % 100 >= 11 && n % 100 <= 13)
        return "th";
    return n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
}

static void check(sl_status got, sl_status want, const char *what)
{
    if (got != want)
        fail("%s: %s, expected %s", what, sl_status_str(got), sl_status_str(want));
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * SECOND + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / SECOND), (long)(ns % SECOND)};
    nanosleep(&ts, NULL);
}

/* ---- the job and the pool's callbacks -------------------------------------- */

static void settle(job_rec *j, int fate)
{
    int expected = QUEUED;
    if (!atomic_compare_exchange_strong_explicit(&j->fate, &expected, fate, memory_order_acq_rel,
                                                 memory_order_relaxed))
        atomic_fetch_add_explicit(&j->m->double_fates, 1, memory_order_relaxed);
}

static void market_job(void *arg, void *worker_ctx)
{
    (void)worker_ctx;
    job_rec *j = arg;
    market *m = j->m;
    player *pl = &m->pl[j->player];
    /* acq_rel: if two jobs of one player ever overlapped, one of them reads
     * the other's increment (one modification order), whatever the timing. */
    if (atomic_fetch_add_explicit(&pl->in_flight, 1, memory_order_acq_rel) != 0)
        atomic_fetch_add_explicit(&m->overlaps, 1, memory_order_relaxed);
    if (atomic_exchange_explicit(&pl->last_start, (int)j->seq, memory_order_acq_rel) >= (int)j->seq)
        atomic_fetch_add_explicit(&m->disorders, 1, memory_order_relaxed);
    if (j->seppuku) {
        atomic_fetch_sub_explicit(&pl->in_flight, 1, memory_order_acq_rel);
        pthread_exit(NULL); /* the worker dies inside its job: the pool must notice */
    }
    if (j->gated) { /* keeps every worker busy, so the board fills up for the stop */
        pthread_mutex_lock(&m->gate_lock);
        while (!m->gate_open)
            pthread_cond_wait(&m->gate_cond, &m->gate_lock);
        pthread_mutex_unlock(&m->gate_lock);
    } else {
        sleep_ns((uint64_t)m->duration_us * 1000);
    }
    settle(j, RAN);
    atomic_fetch_sub_explicit(&pl->in_flight, 1, memory_order_acq_rel);
    atomic_fetch_add_explicit(&m->ran, 1, memory_order_relaxed); /* counts: read after wait_idle */
}

static void on_discard(const sl_job *job, sl_discard why, void *user)
{
    market *m = user;
    settle(job->arg, DISCARDED);
    atomic_ullong *count = why == SL_DISCARD_WORKER_DIED ? &m->died
                         : why == SL_DISCARD_CANCELLED   ? &m->cancelled : &m->reset;
    atomic_fetch_add_explicit(count, 1, memory_order_relaxed);
}

static void *worker_init(unsigned id, void *user)
{
    (void)id;
    market *m = user;
    unsigned now = atomic_fetch_add_explicit(&m->threads, 1, memory_order_relaxed) + 1;
    unsigned peak = atomic_load_explicit(&m->peak, memory_order_relaxed);
    while (now > peak && !atomic_compare_exchange_weak_explicit(&m->peak, &peak, now,
                                                                memory_order_relaxed,
                                                                memory_order_relaxed))
        continue;
    return NULL;
}

static void worker_fini(unsigned id, void *ctx, void *user)
{
    (void)id;
    (void)ctx;
    market *m = user;
    atomic_fetch_sub_explicit(&m->threads, 1, memory_order_relaxed);
}

/* ---- players ----------------------------------------------------------------- */

/* Offers the player's next job. Only SL_OK consumes it (and its seq). */
static sl_status offer(player *pl, unsigned flags, uint64_t timeout_ns)
{
    market *m = pl->m;
    if (pl->accepted == pl->cap_recs)
        fail("player %u: out of job records", pl->id);
    job_rec *j = &pl->recs[pl->accepted];
    pl->rng = pl->rng * 6364136223846793005ull + 1442695040888963407ull;
    j->m = m;
    j->player = pl->id;
    j->seq = pl->accepted;
    j->priority = (unsigned)(pl->rng >> 33) % LEVELS;
    j->gated = atomic_load_explicit(&m->flood, memory_order_relaxed);
    j->seppuku = pl->id < m->deaths && j->seq == 3 && !j->gated;
    atomic_store_explicit(&j->fate, QUEUED, memory_order_relaxed); /* published by the submit */
    sl_job job = {market_job, j, j->priority, pl->id + 1u, flags}; /* key: the player (never 0) */
    sl_status st = sl_pool_submit_job(m->pool, &job, timeout_ns);
    switch (st) {
    case SL_OK: pl->accepted++; break;
    case SL_TIMEDOUT: pl->timedout++; break;
    case SL_EXISTS: pl->exists++; break;
    case SL_CLOSED: pl->closed++; break;
    default: fail("player %u: submit_job: %s", pl->id, sl_status_str(st));
    }
    return st;
}

static void *player_main(void *arg)
{
    player *pl = arg;
    market *m = pl->m;
    pthread_barrier_wait(&m->start);
    for (unsigned turn = 0; pl->accepted < m->jobs; turn++) {
        if (turn % 8 == 7) /* "only if none exist for this player", as the article's Add_Job */
            offer(pl, SL_JOB_UNIQUE, 0);
        else if (turn % 4 == 0) /* try once: a full board refuses at once */
            offer(pl, 0, 0);
        else /* wait up to 2 ms for room */
            offer(pl, 0, 2000000);
    }
    atomic_fetch_add_explicit(&m->players_done, 1, memory_order_release);
    pthread_barrier_wait(&m->start); /* act 3 */
    while (offer(pl, 0, SL_FOREVER) != SL_CLOSED)
        continue; /* blocks while the board is full; shutdown must free it */
    return NULL;
}

/* ---- act 1: the board ------------------------------------------------------- */

enum { BOARD_CAP = 16 };
typedef struct board_entry { unsigned priority, index; uint64_t key; } board_entry;
static board_entry board[BOARD_CAP + 1];
static atomic_uint board_next;
static unsigned board_order[BOARD_CAP + 1]; /* indices into board, in the order they ran */

static void board_job(void *arg, void *worker_ctx)
{
    (void)worker_ctx;
    unsigned at = atomic_fetch_add_explicit(&board_next, 1, memory_order_relaxed);
    if (at <= BOARD_CAP)
        board_order[at] = ((board_entry *)arg)->index; /* read after wait_idle */
}

static sl_status board_submit(sl_pool *pool, unsigned at, unsigned priority, uint64_t key,
                              unsigned flags, uint64_t timeout_ns)
{
    board[at] = (board_entry){priority, at, key};
    sl_job j = {board_job, &board[at], priority, key, flags};
    return sl_pool_submit_job(pool, &j, timeout_ns);
}

static void act_board(void)
{
    static const unsigned prio[] = {1, 3, 0, 2, 3, 1, 0, 2, 2, 3, 0, 1};
    enum { N = sizeof(prio) / sizeof(prio[0]), P99 = 99 };
    sl_pool *pool;
    sl_pool_opts o = {.max_workers = 1, .priority_levels = LEVELS, .start_stopped = true,
                      .queue_capacity = BOARD_CAP, .name = "board"};
    check(sl_pool_new(&pool, &o), SL_OK, "sl_pool_new(board)");
    unsigned n = 0;
    for (; n < N; n++) /* players 1 .. N, one job each */
        check(board_submit(pool, n, prio[n], n + 1, 0, 0), SL_OK, "board submit");
    unsigned p99_low = n, p99_high = n + 1; /* player 99: priority 0, then priority 3 */
    check(board_submit(pool, n++, 0, P99, 0, 0), SL_OK, "player 99, priority 0");
    check(board_submit(pool, n++, 3, P99, 0, 0), SL_OK, "player 99, priority 3");
    check(board_submit(pool, n, 3, P99, SL_JOB_UNIQUE, 0), SL_EXISTS, "a unique job of a busy player");
    while (n < BOARD_CAP) /* keyless fillers, priority 0, fill the board */
        check(board_submit(pool, n++, 0, 0, 0, 0), SL_OK, "filler");
    check(board_submit(pool, n, 0, 0, 0, 0), SL_TIMEDOUT, "a full board, timeout 0");
    check(board_submit(pool, n, 0, 0, 0, 1000000), SL_TIMEDOUT, "a full board, 1 ms");
    check(board_submit(pool, n, LEVELS, 0, 0, 0), SL_EINVAL, "priority out of range");
    printf("act 1, the board: %u jobs on a stopped pool of 1 worker; refused as asked: duplicate "
           "key -> SL_EXISTS, full -> SL_TIMEDOUT (timeout 0 and 1 ms), bad priority -> SL_EINVAL\n", n);
    check(sl_pool_start(pool), SL_OK, "start");
    /* Commands return at once and complete later; the next one would get
     * SL_BUSY until then, so wait for it (jobs may already be running). */
    check(sl_pool_wait_ready(pool, 30 * SECOND), SL_OK, "wait_ready(start)");
    check(sl_pool_wait_idle(pool, 30 * SECOND), SL_OK, "wait_idle(board)");
    unsigned ran = atomic_load_explicit(&board_next, memory_order_relaxed), at_low = 0, at_high = 0;
    const board_entry *prev = NULL;
    printf("  the order they ran in, each job as <priority>.<submission number, from 0>; "
           "* marks player 99's two jobs:\n  ran:");
    for (unsigned k = 0; k < ran && k < BOARD_CAP; k++) {
        const board_entry *e = &board[board_order[k]];
        printf(" %u.%u%s", e->priority, e->index, e->key == P99 ? "*" : "");
        at_low = e->index == p99_low ? k : at_low;
        at_high = e->index == p99_high ? k : at_high;
        if (e->index == p99_high)
            continue; /* held back by its key, not by its priority */
        if (prev && (prev->priority < e->priority ||
                     (prev->priority == e->priority && prev->index > e->index)))
            fail("board: %u.%u ran after %u.%u", e->priority, e->index, prev->priority, prev->index);
        prev = e;
    }
    printf("\n  higher priorities first, FIFO within a level; player 99's priority-3 job waited "
           "for its priority-0 job (it ran %u%s, after the other at %u%s): one key's jobs run in "
           "submission order\n", at_high + 1, ordinal(at_high + 1), at_low + 1,
           ordinal(at_low + 1));
    if (ran != BOARD_CAP || at_low >= at_high)
        fail("board: %u of %u jobs ran, or player 99's jobs out of order", ran, BOARD_CAP);
    check(sl_pool_shutdown(pool, SL_DRAIN), SL_OK, "shutdown(board)");
    check(sl_pool_wait_ready(pool, 30 * SECOND), SL_OK, "wait_ready(board)");
    check(board_submit(pool, 0, 0, 0, 0, 0), SL_CLOSED, "submit after shutdown");
    check(sl_pool_start(pool), SL_EINVAL, "start after shutdown");
    sl_pool_free(pool);
}

/* ---- acts 2 and 3: the market --------------------------------------------------- */

/* What the Operating lines' fields are, printed once before the first. */
static void operating_legend(void)
{
    printf("  Operating lines, the article's snapshot: waiting jobs (of them, \"on a busy key\": "
           "waiting for their player's running job),\n"
           "    idle workers, active workers (the pool's \"running\": running a job now), workers "
           "that died so far (a running total),\n"
           "    whether the board is full; after the |: live workers / maximum, and how many were "
           "spawned, retired when idle, respawned after a death\n");
}

/* The article's Operating function, from one sl_pool_get_stats snapshot. */
static sl_pool_stats operating(market *m, const char *when)
{
    sl_pool_stats st;
    sl_pool_get_stats(m->pool, &st);
    bool full = st.capacity && st.queued >= st.capacity;
    printf("Operating%-10s waiting jobs %3" PRIu64 " (%" PRIu64 " on a busy key), idle %u, "
           "active (running) %u, died so far %" PRIu64 ", full %-3s | workers %u/%u, spawned %"
           PRIu64 ", retired %" PRIu64 ", respawned %" PRIu64 "\n",
           when, st.queued, st.waiting_on_key, st.idle, st.running, st.died, full ? "yes" : "no",
           st.workers, st.max_workers, st.spawned, st.retired, st.respawned);
    fflush(stdout);
    if (st.workers > m->max_workers)
        fail("%u workers, above the maximum of %u", st.workers, m->max_workers);
    return st;
}

/* Prints Operating every 250 ms until cond holds (or fails after limit_ns). */
static sl_pool_stats watch(market *m, bool (*cond)(market *, const sl_pool_stats *),
                           uint64_t limit_ns, const char *what)
{
    uint64_t start = now_ns(), next = start;
    for (;;) {
        sl_pool_stats st;
        sl_pool_get_stats(m->pool, &st);
        if (cond(m, &st))
            return st;
        if (now_ns() >= next) {
            operating(m, ":");
            next += 250000000;
        }
        if (now_ns() - start > limit_ns)
            fail("%s did not happen in %.0f s", what, limit_ns / 1e9);
        sleep_ns(2000000);
    }
}

static bool players_done(market *m, const sl_pool_stats *st)
{
    (void)st;
    return atomic_load_explicit(&m->players_done, memory_order_acquire) == m->players;
}
static bool trimmed(market *m, const sl_pool_stats *st) { (void)m; return st->workers == 1; }
/* The board is full and the players block in submit. (Not necessarily with
 * every worker busy: the capacity counts jobs waiting for a busy key too, so
 * the players whose jobs run can fill the board by themselves — the "one
 * player hogs the queue" risk discussed in the article's comments;
 * SL_JOB_UNIQUE, the article's own rule, is the cure.) */
static bool flooded(market *m, const sl_pool_stats *st)
{
    return st->queued >= m->capacity && st->running > 0;
}

static void act_market(market *m)
{
    /* With idle_timeout_ns set the pool starts at min_workers and spawns the
     * rest on demand, never above max_workers. */
    sl_pool_opts o = {.max_workers = m->max_workers, .min_workers = 1,
                      .idle_timeout_ns = IDLE_TIMEOUT_NS, .queue_capacity = m->capacity,
                      .priority_levels = LEVELS, .name = "market", .worker_init = worker_init,
                      .worker_fini = worker_fini, .on_discard = on_discard, .user = m};
    check(sl_pool_new(&m->pool, &o), SL_OK, "sl_pool_new(market)");
    printf("act 2, the market: %u %s x %u %s of %u us, priorities 0..%u, workers 1..%u "
           "(idle ones retire after %llu ms), board of %u\n", m->players,
           plural(m->players, "player", "players"), m->jobs, plural(m->jobs, "job", "jobs"),
           m->duration_us, LEVELS - 1, m->max_workers, IDLE_TIMEOUT_NS / 1000000, m->capacity);
    operating_legend();
    for (unsigned i = 0; i < m->players; i++)
        if (pthread_create(&m->pl[i].thread, NULL, player_main, &m->pl[i]) != 0)
            fail("pthread_create");
    operating(m, " (open):");
    pthread_barrier_wait(&m->start);
    watch(m, players_done, 600 * SECOND, "the players' submitting");
    check(sl_pool_wait_idle(m->pool, 60 * SECOND), SL_OK, "wait_idle(market)");
    operating(m, " (idle):");
    unsigned peak = atomic_load_explicit(&m->peak, memory_order_relaxed);
    printf("  workers spawned on demand: up to %u at once (1 at the start, maximum %u)\n", peak, m->max_workers);
    if (peak < 2 && m->max_workers > 1 && m->players > 1)
        fail("no worker was spawned on demand");
    if (peak > m->max_workers)
        fail("%u worker threads at once, above the maximum", peak);
    for (unsigned i = 0; i < m->deaths; i++) { /* the seppuku jobs are each player's job 3 */
        int next = atomic_load_explicit(&m->pl[i].recs[4].fate, memory_order_acquire);
        printf("  player %u: job 3 killed its worker (on_discard: SL_DISCARD_WORKER_DIED); "
               "the key was released: job 4 %s\n", i, next == RAN ? "ran" : "did NOT run");
        if (next != RAN || atomic_load_explicit(&m->pl[i].recs[3].fate, memory_order_acquire) != DISCARDED)
            fail("player %u: the death was not handled", i);
    }
    sl_pool_stats st = watch(m, trimmed, 30 * SECOND, "trimming to 1 idle worker");
    printf("  idle: trimmed back to %u worker, %" PRIu64 " retired so far\n", st.workers, st.retired);

    /* Act 3: flood the board, then stop the market under the players' feet. */
    atomic_store_explicit(&m->flood, true, memory_order_relaxed); /* the barrier publishes it */
    pthread_barrier_wait(&m->start);
    watch(m, flooded, 60 * SECOND, "a full board");
    sleep_ns(20000000); /* let every player reach its blocking submit */
    sl_pool_stats full = operating(m, " (full):");
    unsigned could_run = m->players < m->max_workers ? m->players : m->max_workers;
    if (full.running < could_run)
        printf("  (only %u of a possible %u jobs running on a full board: the waiting jobs "
               "belong to players whose job is running, and a job waiting for its key counts "
               "against the capacity, so a few players can fill the board; SL_JOB_UNIQUE, one "
               "job per player, avoids it)\n", full.running, could_run);
    uint64_t t0 = now_ns();
    /* The article's Stop: no new jobs, waiting ones dropped, running ones end. */
    check(sl_pool_shutdown(m->pool, SL_CANCEL), SL_OK, "shutdown(SL_CANCEL)");
    for (unsigned i = 0; i < m->players; i++)
        pthread_join(m->pl[i].thread, NULL);
    double ms = (now_ns() - t0) / 1e6;
    sl_pool_stats st3 = operating(m, " (stop):");
    printf("act 3, the stop: shutdown(SL_CANCEL) on a full board; every player (%u), blocked in "
           "submit, got SL_CLOSED within %.2f ms, while %u running %s still not over\n",
           m->players, ms, st3.running, plural(st3.running, "job was", "jobs were"));
    pthread_mutex_lock(&m->gate_lock); /* now let the running jobs end */
    m->gate_open = true;
    pthread_cond_broadcast(&m->gate_cond);
    pthread_mutex_unlock(&m->gate_lock);
    check(sl_pool_wait_ready(m->pool, 30 * SECOND), SL_OK, "wait_ready(shutdown)");
    operating(m, " (stopped):");
    sl_job late = {market_job, NULL, 0, 1, 0};
    check(sl_pool_submit_job(m->pool, &late, SL_FOREVER), SL_CLOSED, "a submit after the stop");
    check(sl_pool_set_workers(m->pool, 1), SL_EINVAL, "a command after the stop");
}

/* ---- accounting and main ----------------------------------------------------- */

static void account(market *m)
{
    sl_pool_stats st;
    sl_pool_get_stats(m->pool, &st);
    uint64_t accepted = 0, timedout = 0, exists = 0, closed = 0, unsettled = 0;
    for (unsigned i = 0; i < m->players; i++) {
        player *pl = &m->pl[i];
        accepted += pl->accepted;
        timedout += pl->timedout, exists += pl->exists, closed += pl->closed;
        for (unsigned k = 0; k < pl->accepted; k++)
            unsettled += atomic_load_explicit(&pl->recs[k].fate, memory_order_acquire) == QUEUED;
    }
    uint64_t ran = atomic_load_explicit(&m->ran, memory_order_relaxed);
    uint64_t died = atomic_load_explicit(&m->died, memory_order_relaxed);
    uint64_t cancelled = atomic_load_explicit(&m->cancelled, memory_order_relaxed);
    uint64_t reset = atomic_load_explicit(&m->reset, memory_order_relaxed);
    printf("accounting: submitted %" PRIu64 " == completed %" PRIu64 " + discarded %" PRIu64
           " (worker died %" PRIu64 ", cancelled %" PRIu64 ", reset %" PRIu64 ")\n",
           accepted, ran, died + cancelled + reset, died, cancelled, reset);
    /* A refusal consumes nothing: the player still holds the job and offers
     * it again (act 2), or offers until the stop answers SL_CLOSED (act 3). */
    printf("  refusals, all expected (a refused player offers the same job again until it is "
           "accepted; each player's last offer meets the stop): full board (timed out) %"
           PRIu64 ", duplicate key %" PRIu64 ", stopping %" PRIu64 "\n",
           timedout, exists, closed);
    printf("  pool's count: submitted %" PRIu64 ", completed %" PRIu64 ", discarded %" PRIu64
           ", died %" PRIu64 ", respawned %" PRIu64 "; per-player overlaps %u, out-of-order starts %u\n",
           st.submitted, st.completed, st.discarded, st.died, st.respawned,
           atomic_load_explicit(&m->overlaps, memory_order_relaxed),
           atomic_load_explicit(&m->disorders, memory_order_relaxed));
    if (accepted != ran + died + cancelled + reset || unsettled ||
        atomic_load_explicit(&m->double_fates, memory_order_relaxed))
        fail("a job was lost or handled twice (%" PRIu64 " never settled)", unsettled);
    if (st.submitted != accepted || st.completed != ran || st.discarded != died + cancelled + reset)
        fail("the pool's counts disagree with the players'");
    /* A death is made good only while the backlog calls for the worker
     * (sluice/pool.h): when the dead worker's place is not wanted at that
     * moment, a later spawn for demand is no replacement, so respawned may
     * stay below died (it did in about one run in 25 on a loaded machine). */
    if (died != m->deaths || st.died != m->deaths || st.respawned > st.died)
        fail("%" PRIu64 " deaths reported, %u expected (respawned %" PRIu64 ")", died, m->deaths, st.respawned);
    if (atomic_load_explicit(&m->overlaps, memory_order_relaxed) ||
        atomic_load_explicit(&m->disorders, memory_order_relaxed))
        fail("two jobs of one player ran at once, or out of order");
    if (closed < m->players)
        fail("the players did not see the stop");
}

static void usage(FILE *f)
{
    fprintf(f, "usage: job_market [--players N] [--jobs N] [--duration US] [--workers N]\n"
               "                  [--capacity N] [--deaths N]\n"
               "  --players N    submitting threads, one key each (default 8)\n"
               "  --jobs N       jobs per player (default 100)\n"
               "  --duration US  how long each job works, in microseconds (default 5000)\n"
               "  --workers N    the most workers at once (default 4; 1 is kept while idle)\n"
               "  --capacity N   the board: jobs waiting at most (default 32)\n"
               "  --deaths N     players whose job 3 kills its worker (default 2)\n");
}

/* Reads the flags into m; false, having said what was wrong, on a bad one. */
static bool parse_args(int argc, char **argv, market *m)
{
    const struct { const char *flag; unsigned *dst, lo, hi; } flags[] = {
        {"--players", &m->players, 1, 256},
        {"--jobs", &m->jobs, 1, 1000000},
        {"--duration", &m->duration_us, 0, 1000000},
        {"--workers", &m->max_workers, 1, SL_POOL_MAX_WORKERS},
        {"--capacity", &m->capacity, 1, 1000000},
        {"--deaths", &m->deaths, 0, 256},
    };
    size_t nflags = sizeof(flags) / sizeof(flags[0]);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            exit(0);
        }
        size_t f = 0;
        while (f < nflags && strcmp(argv[i], flags[f].flag) != 0)
            f++;
        if (f == nflags) {
            fprintf(stderr, "job_market: %s: unknown option\n", argv[i]);
            return false;
        }
        if (i + 1 == argc) {
            fprintf(stderr, "job_market: %s needs a value\n", argv[i]);
            return false;
        }
        const char *value = argv[++i];
        char *end;
        unsigned long v = strtoul(value, &end, 10);
        if (end == value || *end || value[0] == '-' || v < flags[f].lo || v > flags[f].hi) {
            fprintf(stderr, "job_market: %s %s: must be %u..%u\n", flags[f].flag, value,
                    flags[f].lo, flags[f].hi);
            return false;
        }
        *flags[f].dst = (unsigned)v;
    }
    if (m->deaths == UINT_MAX) /* not given: 2, if there are players and jobs for it */
        m->deaths = m->jobs < 5 ? 0 : m->players < 2 ? m->players : 2;
    if (m->deaths > m->players || (m->deaths && m->jobs < 5)) {
        fprintf(stderr, "job_market: --deaths %u needs at least %u players and --jobs 5 or "
                "more (each dying job is its player's job 3)\n", m->deaths, m->deaths);
        return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    market m = {.players = 8, .jobs = 100, .duration_us = 5000, .max_workers = 4,
                .capacity = 32, .deaths = UINT_MAX};
    if (!parse_args(argc, argv, &m)) {
        usage(stderr);
        return 2;
    }
    m.pl = calloc(m.players, sizeof(player));
    if (!m.pl || pthread_barrier_init(&m.start, NULL, m.players + 1) != 0 ||
        pthread_mutex_init(&m.gate_lock, NULL) != 0 || pthread_cond_init(&m.gate_cond, NULL) != 0)
        fail("out of memory");
    for (unsigned i = 0; i < m.players; i++) {
        player *pl = &m.pl[i];
        pl->m = &m;
        pl->id = i;
        pl->rng = 0x9e3779b97f4a7c15ull * (i + 1);
        /* Act 2's jobs, then act 3's: at most a full board plus the running ones. */
        pl->cap_recs = m.jobs + m.capacity + m.max_workers + 1;
        pl->recs = calloc(pl->cap_recs, sizeof(job_rec));
        atomic_init(&pl->last_start, -1);
        if (!pl->recs)
            fail("out of memory");
    }
    act_board();
    act_market(&m);
    account(&m);
    sl_pool_free(m.pool);
    if (atomic_load_explicit(&m.threads, memory_order_relaxed) != 0)
        fail("worker_fini did not run for every worker_init");
    for (unsigned i = 0; i < m.players; i++)
        free(m.pl[i].recs);
    free(m.pl);
    pthread_barrier_destroy(&m.start);
    pthread_mutex_destroy(&m.gate_lock);
    pthread_cond_destroy(&m.gate_cond);
    printf("job_market: ok (priorities, one job per player, workers on demand and trimmed, "
           "deaths replaced, stop without blocking, every job accounted for)\n");
    return 0;
}
