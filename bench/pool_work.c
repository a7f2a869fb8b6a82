/*
 * pool_work.c — the workloads of `sl-bench pool`, and how each one checks
 * that every job ran exactly once.
 *
 * Exactly once, cheaply. A job must stay nearly empty, so it cannot bump a
 * shared counter (the line would bounce between workers and dominate the
 * figure). Instead each thread that runs jobs keeps a private tally — count,
 * sum and a mixed sum of the job values it ran — in a cache line of its own,
 * claimed on its first job of a run. After the pool's wait_idle the driver
 * adds the tallies up and compares them with what it submitted: a lost job
 * changes the count, a job run twice changes it too, and one lost plus one
 * duplicated would have to agree in both sums (values are distinct; the
 * mixed sum is a 64-bit hash). Threads outlive pools in some peers (oneTBB's
 * workers, GLib's spare threads), so a tally belongs to a run generation.
 *
 * The idle workload forks a child per run, so that the CPU it measures is
 * the pool's alone: no thread of an earlier contender (oneTBB keeps its
 * workers) lingers in the process. It runs before any other workload, while
 * the process is still single-threaded, which is what makes fork safe; if it
 * ever is not, the run happens in-process instead and says so.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "pool_bench.h"

/* ---- per-thread tallies ------------------------------------------------- */

#define MAX_TALLIES 1024u

typedef struct tally {
    /* Written only by the thread that claimed it (load + store, no RMW);
     * read by the driver after wait_idle, which orders the jobs before it. */
    _Alignas(64) _Atomic uint64_t count;
    _Atomic uint64_t sum, mixed;
} tally;

static tally tallies[MAX_TALLIES];
static _Atomic unsigned n_tallies;
static _Atomic unsigned generation = 1;
static _Thread_local unsigned my_generation;
static _Thread_local tally *my_tally;

static tally *claim_tally(void)
{
    unsigned g = atomic_load_explicit(&generation, memory_order_relaxed);
    if (my_generation != g) {
        unsigned i = atomic_fetch_add_explicit(&n_tallies, 1, memory_order_relaxed);
        if (i >= MAX_TALLIES)
            slb_die("sl-bench", "more than %u threads ran jobs in one run", MAX_TALLIES);
        my_tally = &tallies[i];
        my_generation = g;
    }
    return my_tally;
}

/* A new run: every tally empty, every thread to claim afresh. Called while
 * no job runs (before the pool exists), so relaxed stores suffice: creating
 * the pool and submitting order them before every job. */
static void reset_tallies(void)
{
    for (unsigned i = 0; i < MAX_TALLIES; i++) {
        atomic_store_explicit(&tallies[i].count, 0, memory_order_relaxed);
        atomic_store_explicit(&tallies[i].sum, 0, memory_order_relaxed);
        atomic_store_explicit(&tallies[i].mixed, 0, memory_order_relaxed);
    }
    atomic_store_explicit(&n_tallies, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&generation, 1, memory_order_relaxed);
}

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Job values: submitter in the top bits, its sequence number below, plus
 * one so that no value is 0 (GThreadPool refuses NULL data). */
#define SEQ_BITS 40
static inline uint64_t job_value(unsigned submitter, uint64_t seq)
{
    return ((uint64_t)submitter << SEQ_BITS | seq) + 1;
}

static inline void tally_job(uint64_t v)
{
    tally *t = claim_tally();
    /* Release: the driver's acquire loads after wait_idle see whole tallies
     * even if a pool's wait_idle ordered less than it promises. */
    atomic_store_explicit(&t->count, atomic_load_explicit(&t->count, memory_order_relaxed) + 1,
                          memory_order_release);
    atomic_store_explicit(&t->sum, atomic_load_explicit(&t->sum, memory_order_relaxed) + v,
                          memory_order_release);
    atomic_store_explicit(&t->mixed,
                          atomic_load_explicit(&t->mixed, memory_order_relaxed) + mix64(v),
                          memory_order_release);
}

static void verify_tallies(const char *who, unsigned submitters, uint64_t per_submitter)
{
    uint64_t count = 0, sum = 0, mixed = 0, want_sum = 0, want_mixed = 0;
    unsigned n = atomic_load_explicit(&n_tallies, memory_order_acquire);
    for (unsigned i = 0; i < n && i < MAX_TALLIES; i++) {
        count += atomic_load_explicit(&tallies[i].count, memory_order_acquire);
        sum += atomic_load_explicit(&tallies[i].sum, memory_order_acquire);
        mixed += atomic_load_explicit(&tallies[i].mixed, memory_order_acquire);
    }
    for (unsigned s = 0; s < submitters; s++)
        for (uint64_t i = 0; i < per_submitter; i++) {
            want_sum += job_value(s, i);
            want_mixed += mix64(job_value(s, i));
        }
    uint64_t want = (uint64_t)submitters * per_submitter;
    if (count != want)
        slb_die(who, "%llu jobs submitted, %llu ran (%s)", (unsigned long long)want,
                (unsigned long long)count, count < want ? "jobs lost" : "jobs ran twice");
    if (sum != want_sum || mixed != want_mixed)
        slb_die(who, "%llu jobs ran, but not the ones submitted: a job lost and another "
                     "run twice (checksum mismatch)", (unsigned long long)count);
}

/* ---- the jobs ----------------------------------------------------------- */

static double iters_per_us = 100;

/* The busy loop of the uneven jobs: a fixed amount of CPU work, not of wall
 * time, so that a preempted job does not shorten its successors' work. */
static void spin(uint64_t iters)
{
    volatile uint64_t n = 0;
    while (n < iters)
        n = n + 1;
}

/* The fastest of several timed trials: a trial the scheduler interrupted
 * only looks slower, so the maximum rate is the loop's own. */
void slp_calibrate(void)
{
    uint64_t iters = 1u << 16, t;
    for (;;) {
        uint64_t t0 = slb_now_ns();
        spin(iters);
        t = slb_now_ns() - t0;
        if (t >= 5000000u)
            break;
        iters *= 2;
    }
    double best = (double)iters / ((double)t / 1000.0);
    for (int trial = 0; trial < 8; trial++) {
        uint64_t t0 = slb_now_ns();
        spin(iters);
        double rate = (double)iters / ((double)(slb_now_ns() - t0) / 1000.0);
        best = rate > best ? rate : best;
    }
    iters_per_us = best;
}

double slp_spin_iters_per_us(void)
{
    return iters_per_us;
}

static void empty_job(void *arg, void *ctx)
{
    (void)ctx;
    tally_job((uint64_t)(uintptr_t)arg);
}


/* ---- throughput --------------------------------------------------------- */

typedef struct submitter {
    pthread_t thread;
    const slp_ops *ops;
    void *pool;
    unsigned id;
    uint64_t count;
    uint64_t started;   /* clock when this submitter began */
    pthread_barrier_t *start;
} submitter;

static void *submit_loop(void *arg)
{
    submitter *s = arg;
    pthread_barrier_wait(s->start);
    s->started = slb_now_ns();
    for (uint64_t i = 0; i < s->count; i++)
        s->ops->submit(s->pool, (void *)(uintptr_t)job_value(s->id, i));
    return NULL;
}

static void *make_pool(const slp_ops *c, unsigned workers, slp_job_fn fn)
{
    void *pool = c->create(workers, fn);
    if (!pool)
        slb_die(c->name, "cannot create a pool of %u workers", workers);
    return pool;
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t switches(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_nvcsw + ru.ru_nivcsw);
}

/* One run of `jobs` jobs (rounded down to whole shares): its rate, and in
 * out->extra / extra2 the process's context switches and CPU per 1000 jobs
 * (every thread: submitters, workers, the waiting driver). */
static double tput_once(const slp_ops *c, const slp_opts *o, unsigned submitters,
                        uint64_t jobs, slp_result *out)
{
    uint64_t share = jobs / submitters ? jobs / submitters : 1;
    submitter subs[SLP_MAX_SUBMITTERS];
    pthread_barrier_t start;
    reset_tallies();
    void *pool = make_pool(c, o->workers, empty_job);
    uint64_t sw0 = switches(), cpu0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    pthread_barrier_init(&start, NULL, submitters + 1);
    for (unsigned i = 0; i < submitters; i++) {
        subs[i] = (submitter){ .ops = c, .pool = pool, .id = i, .count = share,
                               .start = &start };
        if (pthread_create(&subs[i].thread, NULL, submit_loop, &subs[i]) != 0)
            slb_die(c->name, "cannot start submitter %u", i);
    }
    pthread_barrier_wait(&start);
    for (unsigned i = 0; i < submitters; i++)
        pthread_join(subs[i].thread, NULL);
    c->wait_idle(pool, share * submitters);
    uint64_t end = slb_now_ns();
    /* The run starts when the first submitter does: this thread may well be
     * preempted between the barrier and a clock read of its own (more
     * threads than CPUs), and would then start the clock after the work. */
    uint64_t t0 = subs[0].started;
    for (unsigned i = 1; i < submitters; i++)
        t0 = subs[i].started < t0 ? subs[i].started : t0;
    uint64_t elapsed = end > t0 ? end - t0 : 1;
    uint64_t sw = switches() - sw0, cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    c->destroy(pool);
    pthread_barrier_destroy(&start);
    verify_tallies(c->name, submitters, share);
    uint64_t ran = share * submitters;
    *out = (slp_result){ .value = (double)ran / ((double)elapsed / 1e3), /* Mjobs/s */
                         .extra = 1000.0 * (double)sw / (double)ran,
                         .extra2 = (double)cpu / (double)ran, .jobs = ran };
    return out->value;
}

void slp_run_tput(const slp_ops *c, const slp_opts *o, unsigned submitters, uint64_t jobs,
                  slp_result *out)
{
    tput_once(c, o, submitters, jobs, out);
}

#define SIZING_MIN_NS 20000000u  /* a probe shorter than this is not trusted */
#define MIN_JOBS 2000u
#define MAX_JOBS 50000000u

/* Rates span orders of magnitude (empty jobs vs the uneven mix, one peer vs
 * another), so each contender is sized by probe runs (verified, not
 * recorded) growing fourfold until one lasts SIZING_MIN_NS. */
uint64_t slp_size_tput(const slp_ops *c, const slp_opts *o, unsigned submitters)
{
    uint64_t jobs = 1000u * submitters;
    for (;;) {
        uint64_t t0 = slb_now_ns();
        slp_result probe;
        double rate = tput_once(c, o, submitters, jobs, &probe);
        if (slb_now_ns() - t0 >= SIZING_MIN_NS || jobs >= MAX_JOBS) {
            double want = rate * ((double)o->run_ns / 1e3);
            want = want < MIN_JOBS ? MIN_JOBS : want > MAX_JOBS ? MAX_JOBS : want;
            return ((uint64_t)want + submitters - 1) / submitters * submitters;
        }
        jobs *= 4;
    }
}

/* ---- wake-up latency ---------------------------------------------------- */

typedef struct wake_sample {
    _Atomic uint64_t started;  /* CLOCK_MONOTONIC ns when the job began */
    _Atomic unsigned runs;
} wake_sample;

static void wake_job(void *arg, void *ctx)
{
    (void)ctx;
    wake_sample *s = arg;
    atomic_store_explicit(&s->started, slb_now_ns(), memory_order_relaxed);
    /* Release: the driver that sees runs sees started. */
    atomic_fetch_add_explicit(&s->runs, 1, memory_order_release);
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Waits (sleeping, never spinning: the pool's workers must have the CPUs)
 * until sample s has run once. */
static void await_sample(const slp_ops *c, wake_sample *s, unsigned i)
{
    uint64_t t0 = slb_now_ns();
    while (atomic_load_explicit(&s->runs, memory_order_acquire) == 0) {
        if (slb_now_ns() - t0 > 2000000000u)
            slb_die(c->name, "wake-up job %u has not started after 2 s", i);
        sleep_ns(100000);
    }
}

/*
 * The driver never waits on the pool between samples (oneTBB's
 * task_group::wait would run the job on the waiting thread): it sleeps for
 * the gap, checks that the previous job ran, and submits the next, stamping
 * the time just before submit. The gap (default 5-20 ms) is far longer than
 * any pool here spins before parking its workers.
 */
void slp_run_wake(const slp_ops *c, const slp_opts *o, uint64_t *rng, slp_result *out)
{
    unsigned n = o->samples;
    wake_sample *s = calloc(n, sizeof(*s));
    uint64_t *lat = calloc(n, sizeof(uint64_t)), *submitted_at = calloc(n, sizeof(uint64_t));
    if (!s || !lat || !submitted_at)
        slb_die("sl-bench", "out of memory");
    void *pool = make_pool(c, o->workers, wake_job);
    for (unsigned i = 0; i < n; i++) {
        uint64_t span = o->gap_max_ns - o->gap_min_ns + 1;
        sleep_ns(o->gap_min_ns + slb_rand(rng) % span);
        if (i)
            await_sample(c, &s[i - 1], i - 1);
        submitted_at[i] = slb_now_ns();
        c->submit(pool, &s[i]);
    }
    c->wait_idle(pool, n);
    c->destroy(pool);
    for (unsigned i = 0; i < n; i++) {
        if (atomic_load_explicit(&s[i].runs, memory_order_acquire) != 1)
            slb_die(c->name, "wake-up job %u ran %u times", i,
                    atomic_load_explicit(&s[i].runs, memory_order_relaxed));
        uint64_t started = atomic_load_explicit(&s[i].started, memory_order_relaxed);
        lat[i] = started > submitted_at[i] ? started - submitted_at[i] : 0;
    }
    slb_sort_u64(lat, n);
    *out = (slp_result){ .value = (double)slb_percentile(lat, n, 0.50) / 1e3,
                         .p99 = (double)slb_percentile(lat, n, 0.99) / 1e3,
                         .extra = (double)lat[n - 1] / 1e3, .jobs = n };
    free(s);
    free(lat);
    free(submitted_at);
}

/* ---- uneven jobs at a steady load --------------------------------------- */

static wake_sample *uneven_base;
static unsigned uneven_every;
static uint64_t short_iters, long_iters;

static void uneven_job(void *arg, void *ctx)
{
    (void)ctx;
    wake_sample *s = arg;
    size_t i = (size_t)(s - uneven_base);
    atomic_store_explicit(&s->started, slb_now_ns(), memory_order_relaxed);
    spin(i % uneven_every == uneven_every - 1 ? long_iters : short_iters);
    /* Release: the driver that sees runs sees started. */
    atomic_fetch_add_explicit(&s->runs, 1, memory_order_release);
}

/*
 * One submitter hands the pool jobs at a steady rate, `load` of what the
 * workers can do (workers / mean job length), in small bursts: it sleeps
 * until the next job is due and then submits every job that is due. Each
 * job stamps its start; the figure is how long jobs waited in the pool
 * (start - the stamp taken just before their submit). A short job queued
 * behind a long one in a worker's inbox waits until that worker is done or
 * another worker takes it: this is where the dispatch modes differ.
 */
void slp_run_uneven(const slp_ops *c, const slp_opts *o, slp_result *out)
{
    unsigned n = o->uneven_jobs;
    wake_sample *s = calloc(n, sizeof(*s));
    uint64_t *wait = calloc(n, sizeof(uint64_t)), *submitted_at = calloc(n, sizeof(uint64_t));
    if (!s || !wait || !submitted_at)
        slb_die("sl-bench", "out of memory");
    uneven_base = s;
    uneven_every = o->uneven_every;
    short_iters = (uint64_t)(iters_per_us * (double)o->short_ns / 1000.0);
    long_iters = (uint64_t)(iters_per_us * (double)o->long_ns / 1000.0);
    double mean_ns = ((double)(uneven_every - 1) * (double)o->short_ns + (double)o->long_ns) /
                     uneven_every;
    double gap_ns = mean_ns / ((double)o->workers * o->load);
    void *pool = make_pool(c, o->workers, uneven_job);
    uint64_t t0 = slb_now_ns();
    for (unsigned i = 0; i < n; i++) {
        uint64_t due = t0 + (uint64_t)(gap_ns * i), now = slb_now_ns();
        if (due > now + 20000u)
            sleep_ns(due - now);
        submitted_at[i] = slb_now_ns();
        c->submit(pool, &s[i]);
    }
    c->wait_idle(pool, n);
    uint64_t elapsed = slb_now_ns() - t0;
    c->destroy(pool);
    for (unsigned i = 0; i < n; i++) {
        if (atomic_load_explicit(&s[i].runs, memory_order_acquire) != 1)
            slb_die(c->name, "uneven job %u ran %u times", i,
                    atomic_load_explicit(&s[i].runs, memory_order_relaxed));
        uint64_t started = atomic_load_explicit(&s[i].started, memory_order_relaxed);
        wait[i] = started > submitted_at[i] ? started - submitted_at[i] : 0;
    }
    slb_sort_u64(wait, n);
    *out = (slp_result){ .value = (double)slb_percentile(wait, n, 0.50) / 1e3,
                         .p99 = (double)slb_percentile(wait, n, 0.99) / 1e3,
                         .extra = (double)wait[n - 1] / 1e3,
                         .extra2 = (double)n / ((double)elapsed / 1e3), .jobs = n };
    free(s);
    free(wait);
    free(submitted_at);
}

/* ---- CPU while idle ----------------------------------------------------- */

static unsigned thread_count(void)
{
    unsigned n = 0;
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "Threads: %u", &n) == 1)
            break;
    fclose(f);
    return n;
}

/* CPU (ns) and context switches of every thread but the calling one. The
 * CPU comes from the process and thread CPU clocks, which are the same
 * totals getrusage reports as user + sys, but exact to the nanosecond:
 * getrusage splits them into user and sys by tick sampling, and the split
 * sums of two calls can even go backwards. The switches are getrusage's. */
static void others_usage(uint64_t *cpu_ns, uint64_t *switches)
{
    struct rusage all, mine;
    uint64_t mine0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t process = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    uint64_t mine1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    getrusage(RUSAGE_SELF, &all);
    getrusage(RUSAGE_THREAD, &mine);
    /* This thread's clock read on both sides of the process clock: what it
     * spent in between is its own, not the pool's. */
    *cpu_ns = process - (mine0 + mine1) / 2;
    *switches = (uint64_t)(all.ru_nvcsw + all.ru_nivcsw - mine.ru_nvcsw - mine.ru_nivcsw);
}

/* The pool is used first (one burst of jobs, so that lazily started workers
 * exist), then left alone to settle, then measured. */
static void idle_in_process(const slp_ops *c, const slp_opts *o, slp_result *out)
{
    unsigned burst = 4 * o->workers;
    reset_tallies();
    void *pool = make_pool(c, o->workers, empty_job);
    for (unsigned i = 0; i < burst; i++)
        c->submit(pool, (void *)(uintptr_t)job_value(0, i));
    c->wait_idle(pool, burst);
    verify_tallies(c->name, 1, burst);
    sleep_ns(o->settle_ns);
    uint64_t cpu0, sw0, cpu1, sw1;
    others_usage(&cpu0, &sw0);
    sleep_ns(o->idle_ns);
    others_usage(&cpu1, &sw1);
    unsigned threads = thread_count();
    c->destroy(pool);
    double cpu_us = cpu1 > cpu0 ? (double)(cpu1 - cpu0) / 1e3 : 0;
    *out = (slp_result){ .value = cpu_us, .extra = (double)(sw1 - sw0),
                         .extra2 = threads ? threads - 1 : 0, .jobs = burst };
}

void slp_run_idle(const slp_ops *c, const slp_opts *o, slp_result *out)
{
    if (thread_count() != 1) {
        static bool told;
        if (!told)
            fprintf(stderr, "sl-bench: idle runs in-process (threads exist already): "
                            "other pools' threads count too\n");
        told = true;
        idle_in_process(c, o, out);
        return;
    }
    int fds[2];
    if (pipe(fds) != 0)
        slb_die("sl-bench", "pipe failed");
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        slb_die("sl-bench", "fork failed");
    if (pid == 0) {
        close(fds[0]);
        alarm(o->timeout_s);
        slp_result r;
        idle_in_process(c, o, &r);
        _exit(write(fds[1], &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 1);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], out, sizeof(*out));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got != (ssize_t)sizeof(*out) || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        slb_die(c->name, "the idle run's child failed (status 0x%x)", (unsigned)status);
}
