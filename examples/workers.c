/*
 * workers — named workers over a shared queue, back-pressure, poison-pill
 * shutdown done right, and pluggable dispatch, on one workload.
 *
 * Answers: “Implementing a worker pool”, a Ruby blog post (November 2017)
 * that builds named workers over a shared queue. The post's asks, and how
 * sluice answers each:
 *
 *   named workers   a pool's `name` names its threads "<name>/<id>". Jobs
 *                   print the thread name (pthread_getname_np) and the id
 *                   worker_init was given; worker_init checks they agree.
 *   shared queue    run "channel": the post's Worker threads, by hand, over
 *                   one bounded SL_MPMC channel. Run "shared": a pool with
 *                   SL_DISPATCH_SHARED, one queue for every worker.
 *   poison pills    the post pushes one :done per worker, then joins them
 *   and `wait`      (`wait`). By hand, the producer closes the channel
 *                   instead: receivers get every job sent before the close,
 *                   then SL_CLOSED. Close beats N pills: it needs no count of
 *                   the workers (one started later, or gone, breaks the
 *                   count), no sentinel job value, no room in a full queue,
 *                   and no rule that a worker must stop at its first pill —
 *                   a closed channel answers SL_CLOSED to every receiver,
 *                   every time, and wakes all blocked ones at once. In the
 *                   pool, sl_pool_shutdown(SL_DRAIN) does the pills' job: submits
 *                   get SL_CLOSED from then on, every queued job still runs,
 *                   then the workers exit; sl_pool_wait_ready is `wait`.
 *   SizedQueue      back-pressure, Ruby's bounded queue: queue_capacity bounds
 *                   the pool's queue (--capacity). The producer tries
 *                   sl_pool_try_submit first and counts its SL_FULL answers,
 *                   then waits in sl_pool_submit, which blocks while full like
 *                   SizedQueue#push; the time spent there is how much the
 *                   workers slowed the producer.
 *   dispatch        round-robin: SL_DISPATCH_ROUND_ROBIN, per-worker inboxes
 *                   fed in turn. least-busy: SL_DISPATCH_LEAST_LOADED, the
 *                   shortest inbox is fed. A worker whose inbox is empty
 *                   takes from the others' before it sleeps, so the counts
 *                   printed say where jobs ran, which evens out more than
 *                   where they were put. topic: as the post's
 *                   TopicScheduler, the workers are split into one small
 *                   pool per topic (named after it: "mail/0", "download/1"),
 *                   each least-busy within itself; --workers N is split over
 *                   the three as evenly as it goes, at least one each (so N
 *                   below 3 gives 3, and the run says so). A topic's backlog never
 *                   takes another topic's workers; the cost is idle workers
 *                   in a quiet topic, and one producer feeding all three
 *                   waits on the slow topic's full queue while the others
 *                   idle (compare the topic run's producer line): give each
 *                   topic its own producer where that matters. (One pool
 *                   with key = topic would run each topic's jobs one at a
 *                   time, in order: right for a topic that is one serial
 *                   resource, not for throughput.)
 *
 * The workload: --jobs jobs, each of topic download, mail or db (in turn),
 * each sleeping a topic's cost (download is slow) as I/O would. Every run
 * checks that each job ran exactly once (a per-job counter), that the
 * per-worker counts add up, that the pool's stats agree, and in the topic
 * run that each job ran in its own topic's pool. Ends with "workers: ok".
 * Watch, per run: the first jobs' "ran on <name>/<id>" lines; the producer
 * line (how often the bounded queue said SL_FULL and how long the producer
 * then waited); the per-worker counts.
 *
 * Run: workers [--workers N] [--jobs N] [--capacity N] [--show N]
 *              [--mode all|channel|shared|round-robin|least-busy|topic]
 */
#include <sluice.h>

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_WORKERS 64u
#define NTOPICS 3u

/* Download is the slow topic; it comes first so that it gets the spare
 * workers when they do not split evenly. */
static const char *const topic_names[NTOPICS] = {"download", "mail", "db"};
static const unsigned topic_cost_us[NTOPICS] = {400, 100, 50};

typedef struct config {
    unsigned workers, jobs, capacity, show;
    const char *mode;
} config;

/* One unit of work. ran is counted by whoever runs it (relaxed: main reads
 * it after the workers are joined, which orders every increment first). */
typedef struct job {
    unsigned id, topic;
    _Atomic unsigned ran;
    _Atomic unsigned wrong_pool; /* topic run: ran in another topic's pool */
} job;

/* What one pool's callbacks share: its name, its topic, its workers' counts. */
typedef struct pool_ctx {
    const char *name;
    int topic;                        /* -1: takes every topic */
    unsigned show;                    /* jobs with id < show print their worker */
    uint64_t per_worker[MAX_WORKERS]; /* written by worker_fini, read after free */
    unsigned workers;                 /* its size: ids run 0 .. workers-1 */
} pool_ctx;

/* Per-worker state, made by worker_init on the worker's own thread. */
typedef struct worker {
    pool_ctx *pc;
    unsigned id;
    uint64_t jobs;
} worker;

/* The producer's view of back-pressure. */
typedef struct pressure {
    uint64_t full;       /* try_submit / try_send answered SL_FULL */
    uint64_t blocked_ns; /* time then spent in the blocking call */
} pressure;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("workers: FAIL: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void check(sl_status st, const char *what)
{
    if (st != SL_OK)
        die("%s returned %s", what, sl_status_str(st));
}

/* The job's body, whoever runs it: "I/O" for the topic's cost, then count. */
static void perform(job *j, unsigned show, unsigned worker_id)
{
    unsigned us = topic_cost_us[j->topic];
    struct timespec ts = {0, (long)us * 1000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        continue;
    atomic_fetch_add_explicit(&j->ran, 1, memory_order_relaxed);
    if (j->id < show) {
        char thread[16] = "?";
        pthread_getname_np(pthread_self(), thread, sizeof(thread));
        printf("    job %u (%s) ran on %s, worker id %u\n", j->id, topic_names[j->topic],
               thread, worker_id);
    }
}

/* ---- the pool's callbacks and job --------------------------------------- */

static void *worker_init(unsigned worker_id, void *user)
{
    pool_ctx *pc = user;
    worker *w = calloc(1, sizeof(*w));
    if (!w)
        die("out of memory in worker_init");
    *w = (worker){.pc = pc, .id = worker_id};
    char want[16], got[16] = "";
    snprintf(want, sizeof(want), "%s/%u", pc->name, worker_id);
    pthread_getname_np(pthread_self(), got, sizeof(got));
    if (strcmp(want, got) != 0)
        die("worker %u of pool %s is named \"%s\", not \"%s\"", worker_id, pc->name, got, want);
    return w;
}

static void worker_fini(unsigned worker_id, void *ctx, void *user)
{
    pool_ctx *pc = user;
    worker *w = ctx;
    if (worker_id >= MAX_WORKERS)
        die("pool %s: worker id %u; ids were expected below %u", pc->name, worker_id,
            MAX_WORKERS);
    pc->per_worker[worker_id] = w->jobs; /* each id is one thread: no two writers */
    free(w);
}

static void on_discard(const sl_job *sj, sl_discard why, void *user)
{
    pool_ctx *pc = user;
    die("pool %s discarded job %u (reason %d); a drain discards nothing", pc->name,
        ((job *)sj->arg)->id, (int)why);
}

static void pool_job(void *arg, void *ctx)
{
    job *j = arg;
    worker *w = ctx;
    if (w->pc->topic >= 0 && (unsigned)w->pc->topic != j->topic)
        atomic_fetch_add_explicit(&j->wrong_pool, 1, memory_order_relaxed);
    w->jobs++;
    perform(j, w->pc->show, w->id);
}

/* A push onto the bounded queue that counts back-pressure: try first, then
 * wait for room. */
static void submit_paced(sl_pool *p, job *j, pressure *bp)
{
    sl_status st = sl_pool_try_submit(p, pool_job, j);
    if (st == SL_FULL) {
        bp->full++;
        uint64_t t = now_ns();
        st = sl_pool_submit(p, pool_job, j);
        bp->blocked_ns += now_ns() - t;
    }
    check(st, "sl_pool_submit");
}

/* ---- the checks every run makes ------------------------------------------ */

static void reset_jobs(job *jobs, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        atomic_store_explicit(&jobs[i].ran, 0, memory_order_relaxed);
        atomic_store_explicit(&jobs[i].wrong_pool, 0, memory_order_relaxed);
    }
}

static void check_exactly_once(const char *run, job *jobs, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        unsigned ran = atomic_load_explicit(&jobs[i].ran, memory_order_relaxed);
        if (ran != 1)
            die("%s: job %u ran %u times", run, i, ran);
        if (atomic_load_explicit(&jobs[i].wrong_pool, memory_order_relaxed) != 0)
            die("%s: job %u (%s) ran in another topic's pool", run, i,
                topic_names[jobs[i].topic]);
    }
}

/* Prints "name/id: count" for each worker; returns their sum. */
static uint64_t print_counts(const char *name, const uint64_t *counts, unsigned n)
{
    uint64_t sum = 0;
    printf("    per worker:");
    for (unsigned i = 0; i < n; i++) {
        printf(" %s/%u=%llu", name, i, (unsigned long long)counts[i]);
        sum += counts[i];
    }
    printf("  (sum %llu)\n", (unsigned long long)sum);
    return sum;
}

/* "1 worker", "2 workers": plural(n, "worker", "workers"). */
static const char *plural(unsigned long long n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

/* queues: how many bounded queues the producer fed (one per topic pool). */
static void print_pressure(const config *cfg, unsigned queues, const pressure *bp,
                           uint64_t elapsed_ns)
{
    printf("    producer: %u %s into %s of %u: %llu SL_FULL %s, then blocked %.1f ms of the "
           "run's %.1f ms\n", cfg->jobs, plural(cfg->jobs, "job", "jobs"),
           queues == 1 ? "a queue" : "queues", cfg->capacity, (unsigned long long)bp->full,
           plural(bp->full, "answer", "answers"), (double)bp->blocked_ns / 1e6,
           (double)elapsed_ns / 1e6);
}

/* ---- run "channel": the post's Worker threads, by hand ------------------ */

typedef struct chan_worker {
    pthread_t thread;
    unsigned id, show;
    sl_chan *queue; /* of uint32_t job indices */
    job *jobs;
    uint64_t done;  /* read by main after join */
} chan_worker;

static void *chan_worker_main(void *arg)
{
    chan_worker *w = arg;
    char name[16];
    snprintf(name, sizeof(name), "chan/%u", w->id);
    pthread_setname_np(pthread_self(), name);
    uint32_t idx;
    sl_status st;
    while ((st = sl_chan_recv(w->queue, &idx)) == SL_OK) {
        perform(&w->jobs[idx], w->show, w->id);
        w->done++;
    }
    if (st != SL_CLOSED) /* SL_CLOSED: closed and drained, the only way out */
        die("chan/%u: sl_chan_recv returned %s", w->id, sl_status_str(st));
    return NULL;
}

static void run_channel(const config *cfg, job *jobs)
{
    printf("run channel: %u hand-rolled %s on one SL_MPMC channel of %u; close is "
           "the pill\n", cfg->workers, plural(cfg->workers, "thread", "threads"), cfg->capacity);
    reset_jobs(jobs, cfg->jobs);
    sl_chan *queue;
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = sizeof(uint32_t),
                      .capacity = cfg->capacity};
    check(sl_chan_new(&queue, &o), "sl_chan_new");
    chan_worker ws[MAX_WORKERS];
    for (unsigned i = 0; i < cfg->workers; i++) {
        ws[i] = (chan_worker){.id = i, .show = cfg->show, .queue = queue, .jobs = jobs};
        if (pthread_create(&ws[i].thread, NULL, chan_worker_main, &ws[i]) != 0)
            die("cannot start a worker thread");
    }
    pressure bp = {0, 0};
    uint64_t t0 = now_ns();
    for (uint32_t i = 0; i < cfg->jobs; i++) {
        sl_status st = sl_chan_try_send(queue, &i);
        if (st == SL_FULL) {
            bp.full++;
            uint64_t t = now_ns();
            st = sl_chan_send(queue, &i); /* the bounded queue's push: waits for room */
            bp.blocked_ns += now_ns() - t;
        }
        check(st, "sl_chan_send");
    }
    sl_chan_close(queue); /* every worker drains what is left, then sees SL_CLOSED */
    uint64_t counts[MAX_WORKERS];
    for (unsigned i = 0; i < cfg->workers; i++) { /* the post's `wait` */
        pthread_join(ws[i].thread, NULL);
        counts[i] = ws[i].done;
    }
    printf("    sl_chan_close was the pill: every worker (%u) drained the channel, saw "
           "SL_CLOSED and was joined\n", cfg->workers);
    print_pressure(cfg, 1, &bp, now_ns() - t0);
    sl_chan_free(queue);
    if (print_counts("chan", counts, cfg->workers) != cfg->jobs)
        die("channel: the workers' counts do not add up to %u", cfg->jobs);
    check_exactly_once("channel", jobs, cfg->jobs);
}

/* ---- runs on the pool: shared, round-robin, least-busy, topic ----------- */

typedef struct pool_run {
    const char *mode;     /* as --mode says it */
    const char *name;     /* the pool's name; NULL: one pool per topic */
    sl_dispatch dispatch;
    const char *what;
} pool_run;

static const pool_run pool_runs[] = {
    {"shared", "shared", SL_DISPATCH_SHARED, "one queue for every worker"},
    {"round-robin", "rr", SL_DISPATCH_ROUND_ROBIN, "per-worker inboxes fed in turn"},
    {"least-busy", "least", SL_DISPATCH_LEAST_LOADED, "the shortest inbox is fed"},
    {"topic", NULL, SL_DISPATCH_LEAST_LOADED, "a least-busy pool per topic"},
};

/* The topic run's split of the workers: as even as it goes, at least one each. */
static unsigned topic_share(unsigned workers, unsigned topic)
{
    unsigned n = workers / NTOPICS + (topic < workers % NTOPICS ? 1u : 0u);
    return n ? n : 1u;
}

/* What the topic run did with --workers N, and the total when it differs. */
static void print_topic_split(const config *cfg, const pool_ctx *pcs)
{
    unsigned total = 0;
    printf("    --workers %u split over the topics:", cfg->workers);
    for (unsigned t = 0; t < NTOPICS; t++) {
        printf("%s %s %u", t ? "," : "", pcs[t].name, pcs[t].workers);
        total += pcs[t].workers;
    }
    if (total != cfg->workers)
        printf(" (%u in all: each topic needs at least one)", total);
    putchar('\n');
}

static void run_pool(const config *cfg, const pool_run *r, job *jobs)
{
    unsigned npools = r->name ? 1u : NTOPICS;
    pool_ctx pcs[NTOPICS];
    sl_pool *pools[NTOPICS];
    uint64_t routed[NTOPICS] = {0};
    printf("run %s: %s\n", r->mode, r->what);
    reset_jobs(jobs, cfg->jobs);
    for (unsigned t = 0; t < npools; t++) {
        unsigned n = r->name ? cfg->workers : topic_share(cfg->workers, t);
        pcs[t] = (pool_ctx){.name = r->name ? r->name : topic_names[t],
                            .topic = r->name ? -1 : (int)t, .show = cfg->show, .workers = n};
        sl_pool_opts o = {.max_workers = n, .queue_capacity = cfg->capacity,
                          .dispatch = r->dispatch, .name = pcs[t].name,
                          .worker_init = worker_init, .worker_fini = worker_fini,
                          .on_discard = on_discard, .user = &pcs[t]};
        /* The post warns to start the workers before queuing jobs: sl_pool_new
         * returns with them started, and a job queued early waits anyway. */
        check(sl_pool_new(&pools[t], &o), "sl_pool_new");
    }
    if (!r->name)
        print_topic_split(cfg, pcs);
    pressure bp = {0, 0};
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < cfg->jobs; i++) {
        unsigned t = r->name ? 0u : jobs[i].topic; /* the topic scheduler */
        submit_paced(pools[t], &jobs[i], &bp);
        routed[t]++;
    }
    for (unsigned t = 0; t < npools; t++) /* the pills: drain, then exit */
        check(sl_pool_shutdown(pools[t], SL_DRAIN), "sl_pool_shutdown(SL_DRAIN)");
    for (unsigned t = 0; t < npools; t++) { /* the post's `wait` */
        check(sl_pool_wait_ready(pools[t], 60ull * 1000000000u), "sl_pool_wait_ready");
        sl_pool_stats st;
        sl_pool_get_stats(pools[t], &st);
        if (st.submitted != routed[t] || st.completed != routed[t] || st.discarded != 0)
            die("%s: pool %s: %llu submitted, %llu completed, %llu discarded; %llu routed",
                r->mode, pcs[t].name, (unsigned long long)st.submitted,
                (unsigned long long)st.completed, (unsigned long long)st.discarded,
                (unsigned long long)routed[t]);
        sl_pool_free(pools[t]); /* joins the threads: their counts are in */
    }
    printf("    sl_pool_shutdown(SL_DRAIN) stood in for the poison pills and sl_pool_wait_ready "
           "for `wait`: every queued job ran, none was discarded\n");
    print_pressure(cfg, npools, &bp, now_ns() - t0);
    for (unsigned t = 0; t < npools; t++)
        if (print_counts(pcs[t].name, pcs[t].per_worker, pcs[t].workers) != routed[t])
            die("%s: pool %s's worker counts do not add up", r->mode, pcs[t].name);
    check_exactly_once(r->mode, jobs, cfg->jobs);
}

/* ---- the flags and main ------------------------------------------------- */

static void usage(FILE *to)
{
    fputs("usage: workers [options]\n"
          "  --workers N   workers per run, 1..64 (default 4); the topic run splits them\n"
          "                over its three topic pools, at least one each (N < 3 gives 3)\n"
          "  --jobs N      jobs in the workload (default 600)\n"
          "  --capacity N  queue bound (back-pressure): jobs waiting at most, per queue\n"
          "                (default 8)\n"
          "  --show N      the first N jobs print their worker (default 3)\n"
          "  --mode M      all (default), channel, shared, round-robin, least-busy, topic\n",
          to);
}

/* A flag's value in lo..hi; otherwise says what was wrong. */
static bool parse_uint(const char *flag, const char *s, unsigned lo, unsigned hi, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi) {
        fprintf(stderr, "workers: --%s %s: must be %u..%u\n", flag, s, lo, hi);
        return false;
    }
    *out = (unsigned)v;
    return true;
}

static bool mode_known(const char *m)
{
    if (!strcmp(m, "all") || !strcmp(m, "channel"))
        return true;
    for (size_t i = 0; i < sizeof(pool_runs) / sizeof(pool_runs[0]); i++)
        if (!strcmp(m, pool_runs[i].mode))
            return true;
    return false;
}

static void parse_flags(int argc, char **argv, config *cfg)
{
    static const struct option opts[] = {
        {"workers", required_argument, NULL, 'w'}, {"jobs", required_argument, NULL, 'j'},
        {"capacity", required_argument, NULL, 'c'}, {"show", required_argument, NULL, 's'},
        {"mode", required_argument, NULL, 'm'},    {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    /* getopt_long itself reports an unknown option or a missing value. */
    int at = 0;
    for (int o; (o = getopt_long(argc, argv, "h", opts, &at)) != -1;) {
        const char *flag = opts[at].name;
        bool ok;
        switch (o) {
        case 'w': ok = parse_uint(flag, optarg, 1, MAX_WORKERS, &cfg->workers); break;
        case 'j': ok = parse_uint(flag, optarg, 1, 10000000, &cfg->jobs); break;
        case 'c': ok = parse_uint(flag, optarg, 1, 1000000, &cfg->capacity); break;
        case 's': ok = parse_uint(flag, optarg, 0, 10000000, &cfg->show); break;
        case 'm':
            ok = mode_known(cfg->mode = optarg);
            if (!ok)
                fprintf(stderr, "workers: --mode %s: must be all, channel, shared, round-robin, "
                        "least-busy or topic\n", optarg);
            break;
        case 'h': usage(stdout); exit(0);
        default: ok = false; break;
        }
        if (!ok) {
            usage(stderr);
            exit(2);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "workers: %s: unexpected argument\n", argv[optind]);
        usage(stderr);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    config cfg = {.workers = 4, .jobs = 600, .capacity = 8, .show = 3, .mode = "all"};
    parse_flags(argc, argv, &cfg);
    job *jobs = calloc(cfg.jobs, sizeof(*jobs));
    if (!jobs)
        die("out of memory");
    for (unsigned i = 0; i < cfg.jobs; i++) {
        jobs[i].id = i;
        jobs[i].topic = i % NTOPICS;
    }
    bool all = !strcmp(cfg.mode, "all");
    unsigned runs = 0;
    if (all || !strcmp(cfg.mode, "channel")) {
        run_channel(&cfg, jobs);
        runs++;
    }
    for (size_t i = 0; i < sizeof(pool_runs) / sizeof(pool_runs[0]); i++)
        if (all || !strcmp(cfg.mode, pool_runs[i].mode)) {
            run_pool(&cfg, &pool_runs[i], jobs);
            runs++;
        }
    free(jobs);
    printf("workers: ok: %u %s x %u %s, every job ran exactly once in every run\n", runs,
           plural(runs, "run", "runs"), cfg.jobs, plural(cfg.jobs, "job", "jobs"));
    return 0;
}
