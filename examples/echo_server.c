/*
 * echo_server — a TCP echo server on a worker pool that grows under load and
 * trims itself back when idle, with its own load generator.
 *
 * Answers: “Working With Ruby Threads” by Jesse Storimer (2013), chapter 16,
 * “Puma's Thread Pool Implementation”. What the chapter shows of Puma's
 * pool, and where it is here:
 *
 *   min / max threads  min_workers and max_workers: the pool starts at min and
 *                      spawns a worker (never above max) when a connection
 *                      finds every worker busy; past max, connections wait in
 *                      the queue (the "queued" column).
 *   auto-trim          idle_timeout_ns: a worker above min that finds no work
 *                      for that long retires. Watch "workers" climb in each
 *                      burst and fall back to min after it.
 *   `waiting`          Puma's count of idle threads is the "idle" column
 *                      (sl_pool_stats.idle); "parked" counts those asleep in
 *                      the kernel.
 *   parking            Puma's workers wait on a condition variable under the
 *                      pool's mutex. sluice's take jobs from a lock-free queue
 *                      and, when it is empty, sleep on a futex eventcount
 *                      (sluice/park.h): announce, re-check the queue, sleep.
 *                      No mutex is held to submit or take a job, and a submit
 *                      wakes at most one sleeper, none while another worker is
 *                      already looking for work.
 *   clean shutdown     stop accepting (the acceptor thread leaves, the
 *                      listening socket is closed, a later connect is refused),
 *                      then sl_pool_shutdown(SL_DRAIN) while clients are still
 *                      talking: connections in flight or queued are served to
 *                      the end, then every worker exits and is joined.
 *   per-thread state   Puma's `extra`: worker_init gives each worker its own
 *                      echo buffer and counters; worker_fini prints them, adds
 *                      them to the totals and frees the buffer.
 *
 * One job per connection: the worker that takes a connection echoes it until
 * the client hangs up, as a Puma thread owns a client while it serves it. So
 * busy workers == open connections, which is what min / max and auto-trim are
 * about, and no connection is ever served by two workers at once, with no
 * job key needed. The price: a slow client holds a worker (a receive timeout
 * bounds it), and connections beyond max wait for a free worker. A server for
 * many mostly-idle clients would instead submit one job per readable event
 * from an epoll loop, keyed by the fd so a connection's events run one at a
 * time and in order.
 *
 * Phases: idle at min -> (burst -> trim back to min) x --bursts -> shutdown
 * with connections in flight. Checked: every message came back byte for byte;
 * each burst grew the pool above min and never above max; it trimmed back to
 * min; submitted == completed, nothing discarded; the connections and bytes
 * the workers counted match the clients'; as many fds are open at the end as
 * at the start (leaks of memory are ASan's to find). Ends with "echo_server: ok".
 *
 * Run: echo_server [--port N] [--clients N] [--messages N] [--min N] [--max N]
 *                  [--idle-ms N] [--bursts N] [--burst-ms N] [--tick-ms N]
 */
#include <sluice.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ECHO_BUF 4096u /* each worker's buffer */
#define MSG_MAX 3000u  /* client messages are 1 .. MSG_MAX bytes */

typedef struct config {
    unsigned port, clients, messages, min, max, idle_ms, bursts, burst_ms, tick_ms;
} config;

/* Shared by every thread. The counters are relaxed: nothing is published
 * through them, and main reads their totals after joins and wait_ready,
 * which order every update before the read. */
typedef struct server {
    const config *cfg;
    sl_pool *pool;
    int listen_fd, stop_pipe[2];
    uint64_t t0_ns;
    _Atomic uint64_t accepted, failures;
    _Atomic uint64_t fini_connections, fini_bytes; /* summed by worker_fini */
    _Atomic unsigned phase;                        /* index into phase_names */
    _Atomic unsigned peak_workers;                 /* the sampler's, since reset */
    _Atomic unsigned run_peak_workers;             /* the sampler's, never reset */
    _Atomic bool sampler_stop;
} server;

enum { PHASE_IDLE, PHASE_BURST, PHASE_TRIM, PHASE_SHUTDOWN };
static const char *const phase_names[] = {"idle", "burst", "trim", "shutdown"};

/* Puma's `extra`: made for each worker thread by worker_init. */
typedef struct worker_state {
    server *srv;
    char buf[ECHO_BUF];
    uint64_t connections, bytes;
} worker_state;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_us(uint64_t us)
{
    struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        continue;
}

/* "1 worker", "2 workers": plural(n, "worker", "workers"). */
static const char *plural(unsigned long long n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("echo_server: FAIL: ", stderr);
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

/* A failure off the main thread: reported now, judged at the end. */
static void note_failure(server *s, const char *what)
{
    fprintf(stderr, "echo_server: error: %s\n", what);
    atomic_fetch_add_explicit(&s->failures, 1, memory_order_relaxed);
}

/* How many file descriptors the process has open (Linux's /proc). */
static unsigned open_fds(void)
{
    unsigned n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        die("cannot list /proc/self/fd: %s", strerror(errno));
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* Sends or receives exactly n bytes; false on error, timeout or hang-up. */
static bool transfer_all(int fd, char *p, size_t n, bool sending)
{
    while (n > 0) {
        ssize_t r = sending ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

/* ---- the pool's callbacks and the job ----------------------------------- */

static void *worker_init(unsigned worker_id, void *user)
{
    (void)worker_id;
    worker_state *w = calloc(1, sizeof(*w));
    if (!w)
        die("out of memory in worker_init");
    w->srv = user;
    return w;
}

static void worker_fini(unsigned worker_id, void *ctx, void *user)
{
    server *s = user;
    worker_state *w = ctx;
    printf("    echo/%u leaves: connections served %llu, bytes echoed %llu\n", worker_id,
           (unsigned long long)w->connections, (unsigned long long)w->bytes);
    atomic_fetch_add_explicit(&s->fini_connections, w->connections, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->fini_bytes, w->bytes, memory_order_relaxed);
    free(w);
}

/* Not expected (a drain runs every queued job), but an accepted connection
 * is closed whatever becomes of its job. */
static void on_discard(const sl_job *job, sl_discard why, void *user)
{
    (void)why;
    close((int)(intptr_t)job->arg);
    note_failure(user, "a connection's job was discarded");
}

/* The job: echo one connection until the client hangs up. */
static void serve_connection(void *arg, void *ctx)
{
    int fd = (int)(intptr_t)arg;
    worker_state *w = ctx;
    for (;;) {
        ssize_t n = recv(fd, w->buf, sizeof(w->buf), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0)
            break; /* the client is done */
        if (n < 0 || !transfer_all(fd, w->buf, (size_t)n, true)) {
            note_failure(w->srv, "the server could not echo (read or write failed)");
            break;
        }
        w->bytes += (uint64_t)n;
    }
    close(fd);
    w->connections++;
}

/* ---- sockets and accepting ---------------------------------------------- */

static struct sockaddr_in loopback(unsigned port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static int listen_on(unsigned port, unsigned *bound)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = loopback(port);
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, len) != 0 || listen(fd, 256) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        die("listening on 127.0.0.1:%u: %s", port, strerror(errno));
    *bound = ntohs(a.sin_port);
    return fd;
}

/* A connected socket with a receive timeout (no peer can hang us), or -1. */
static int connect_to(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = loopback(port);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    struct timeval limit = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    return fd;
}

static void *acceptor_main(void *arg)
{
    server *s = arg;
    struct pollfd fds[2] = {{s->listen_fd, POLLIN, 0}, {s->stop_pipe[0], POLLIN, 0}};
    for (;;) {
        if (poll(fds, 2, -1) < 0 && errno != EINTR) {
            note_failure(s, "poll on the listening socket failed");
            return NULL;
        }
        if (fds[1].revents)
            return NULL; /* main asked us to stop accepting */
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue; /* EAGAIN after a spurious wake-up, or an aborted connect */
        struct timeval limit = {10, 0}; /* no client holds a worker for ever */
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
        atomic_fetch_add_explicit(&s->accepted, 1, memory_order_relaxed);
        if (sl_pool_submit(s->pool, serve_connection, (void *)(intptr_t)fd) != SL_OK) {
            close(fd); /* the pool did not take it: the fd is still ours */
            note_failure(s, "sl_pool_submit refused a connection");
        }
    }
}

/* ---- the load generator ------------------------------------------------- */

typedef struct client {
    pthread_t thread;
    server *srv;
    unsigned id, port;
    uint64_t bytes, echoed; /* written by the client, read by main after join */
    uint64_t left_ns;       /* when it hung up (now_ns); read by main after join */
} client;

/* Message i of client c: its length and bytes differ per client and message. */
static size_t msg_len(unsigned c, unsigned i)
{
    uint32_t h = (c + 1u) * 2654435761u ^ (i + 1u) * 40503u;
    return 1u + (h >> 7) % MSG_MAX;
}

static void *client_main(void *arg)
{
    client *c = arg;
    const config *cfg = c->srv->cfg;
    char out[MSG_MAX], in[MSG_MAX];
    int fd = connect_to(c->port);
    if (fd < 0) {
        note_failure(c->srv, "a client could not connect");
        return NULL;
    }
    /* Messages are spread over burst_ms so that the connections overlap. */
    uint64_t pause_us = (uint64_t)cfg->burst_ms * 1000u / cfg->messages;
    for (unsigned i = 0; i < cfg->messages; i++) {
        size_t len = msg_len(c->id, i);
        for (size_t k = 0; k < len; k++)
            out[k] = (char)(c->id * 131u + i * 31u + k * 7u);
        if (!transfer_all(fd, out, len, true) || !transfer_all(fd, in, len, false) ||
            memcmp(in, out, len) != 0)
            break;
        c->bytes += len;
        c->echoed++;
        sleep_us(pause_us);
    }
    if (c->echoed != cfg->messages)
        note_failure(c->srv, "a message did not come back byte for byte");
    close(fd);
    c->left_ns = now_ns(); /* the server's worker sees the hang-up from here on */
    return NULL;
}

static client *start_clients(server *s, unsigned n, unsigned first_id, unsigned port)
{
    client *cs = calloc(n, sizeof(*cs));
    if (!cs)
        die("out of memory");
    for (unsigned i = 0; i < n; i++) {
        cs[i] = (client){.srv = s, .id = first_id + i, .port = port};
        if (pthread_create(&cs[i].thread, NULL, client_main, &cs[i]) != 0)
            die("cannot start a client thread");
    }
    return cs;
}

/* Joins and frees the clients; adds up the messages and bytes they got back.
 * Returns when the last of them hung up (now_ns). */
static uint64_t join_clients(client *cs, unsigned n, uint64_t *messages, uint64_t *bytes)
{
    uint64_t last_left = 0;
    for (unsigned i = 0; i < n; i++) {
        pthread_join(cs[i].thread, NULL);
        *bytes += cs[i].bytes;
        *messages += cs[i].echoed;
        last_left = cs[i].left_ns > last_left ? cs[i].left_ns : last_left;
    }
    free(cs);
    return last_left;
}

/* ---- watching the pool -------------------------------------------------- */

/* Samples every 5 ms to catch the peak; prints a line every tick_ms. */
static void *sampler_main(void *arg)
{
    server *s = arg;
    uint64_t next_print = now_ns();
    while (!atomic_load_explicit(&s->sampler_stop, memory_order_relaxed)) {
        sl_pool_stats st;
        sl_pool_get_stats(s->pool, &st);
        /* Only this thread raises the peaks; main resets the burst's while
         * workers == min, and reads the run's after joining this thread. */
        if (st.workers > atomic_load_explicit(&s->peak_workers, memory_order_relaxed))
            atomic_store_explicit(&s->peak_workers, st.workers, memory_order_relaxed);
        if (st.workers > atomic_load_explicit(&s->run_peak_workers, memory_order_relaxed))
            atomic_store_explicit(&s->run_peak_workers, st.workers, memory_order_relaxed);
        if (now_ns() >= next_print) {
            unsigned phase = atomic_load_explicit(&s->phase, memory_order_relaxed);
            printf("  t=%6.3fs %-8s workers=%-3u idle=%-3u parked=%-3u running=%-3u "
                   "queued=%-3llu served=%llu\n", (double)(now_ns() - s->t0_ns) / 1e9,
                   phase_names[phase], st.workers, st.idle, st.parked, st.running,
                   (unsigned long long)st.queued, (unsigned long long)st.completed);
            fflush(stdout);
            next_print += (uint64_t)s->cfg->tick_ms * 1000000u;
        }
        sleep_us(5000);
    }
    return NULL;
}

/* A generous limit for anything that waits on threads (2 busy cores, TSan). */
static uint64_t patience_ms(const config *cfg)
{
    return 10000u + 4u * (uint64_t)cfg->idle_ms + 2u * (uint64_t)cfg->burst_ms;
}

/* Waits until the pool has exactly want live workers; returns the ms from
 * since (a now_ns time) until it saw them. */
static uint64_t wait_for_workers(server *s, unsigned want, uint64_t since)
{
    uint64_t start = now_ns();
    for (;;) {
        sl_pool_stats st;
        sl_pool_get_stats(s->pool, &st);
        uint64_t waited = (now_ns() - start) / 1000000u;
        if (st.workers == want)
            return (now_ns() - since) / 1000000u;
        if (waited > patience_ms(s->cfg))
            die("the pool has %u workers, not %u, after %llu ms", st.workers, want,
                (unsigned long long)waited);
        sleep_us(2000);
    }
}

static void set_phase(server *s, unsigned phase)
{
    atomic_store_explicit(&s->phase, phase, memory_order_relaxed);
}

/* ---- the phases --------------------------------------------------------- */

/* One burst of clients, its peak checked, then the trim back to min. */
static void run_burst(server *s, unsigned port, unsigned round, uint64_t *msgs,
                          uint64_t *bytes)
{
    const config *cfg = s->cfg;
    atomic_store_explicit(&s->peak_workers, 0, memory_order_relaxed);
    set_phase(s, PHASE_BURST);
    uint64_t last_left = join_clients(start_clients(s, cfg->clients, round * cfg->clients, port),
                                      cfg->clients, msgs, bytes);
    /* Connections stay open for burst_ms and the sampler looks every 5 ms. */
    sleep_us(10000);
    unsigned peak = atomic_load_explicit(&s->peak_workers, memory_order_relaxed);
    printf("burst %u: %u %s x %u %s echoed; the pool peaked at %u %s\n", round + 1,
           cfg->clients, plural(cfg->clients, "client", "clients"), cfg->messages,
           plural(cfg->messages, "message", "messages"), peak, plural(peak, "worker", "workers"));
    unsigned reachable = cfg->clients < cfg->max ? cfg->clients : cfg->max;
    if (reachable > cfg->min && cfg->burst_ms > 0 && peak <= cfg->min)
        die("burst %u: the pool did not grow above min (%u)", round + 1, cfg->min);
    if (peak > cfg->max)
        die("burst %u: %u workers, above max (%u)", round + 1, peak, cfg->max);

    set_phase(s, PHASE_TRIM);
    uint64_t took = wait_for_workers(s, cfg->min, last_left);
    sl_pool_stats st;
    sl_pool_get_stats(s->pool, &st);
    printf("trim: back to %u %s %llu ms after the last client left (%llu retired so far; "
           "idle timeout %u ms)\n", cfg->min, plural(cfg->min, "worker", "workers"),
           (unsigned long long)took, (unsigned long long)st.retired, cfg->idle_ms);
    set_phase(s, PHASE_IDLE);
    sleep_us(cfg->tick_ms * 1000u);
}

/* The server stops and drains while its last clients are mid-conversation:
 * max + 2 of them, so that two connections are still queued as well. */
static void run_shutdown(server *s, unsigned port, pthread_t acceptor, uint64_t *msgs,
                         uint64_t *bytes)
{
    const config *cfg = s->cfg;
    unsigned n = cfg->max + 2u;
    uint64_t expect = atomic_load_explicit(&s->accepted, memory_order_relaxed) + n;
    set_phase(s, PHASE_SHUTDOWN);
    client *cs = start_clients(s, n, cfg->bursts * cfg->clients, port);
    uint64_t start = now_ns();
    while (atomic_load_explicit(&s->accepted, memory_order_relaxed) < expect) {
        if ((now_ns() - start) / 1000000u > patience_ms(cfg))
            die("the last clients were not all accepted");
        sleep_us(1000);
    }
    /* Stop accepting: the acceptor leaves, then the listening socket goes. */
    if (write(s->stop_pipe[1], "x", 1) != 1)
        die("cannot signal the acceptor: %s", strerror(errno));
    pthread_join(acceptor, NULL);
    close(s->listen_fd);
    sl_pool_stats st;
    sl_pool_get_stats(s->pool, &st);
    check(sl_pool_shutdown(s->pool, SL_DRAIN), "sl_pool_shutdown(SL_DRAIN)");
    printf("shutdown: accepting stopped; sl_pool_shutdown(SL_DRAIN) with %u %s being served "
           "and %llu queued\n", st.running, plural(st.running, "connection", "connections"),
           (unsigned long long)st.queued);
    check(sl_pool_wait_ready(s->pool, patience_ms(cfg) * 1000000u), "waiting for the drain");
    join_clients(cs, n, msgs, bytes);
    printf("shutdown: complete; every worker has exited\n");
}

static void final_checks(server *s, uint64_t msgs, uint64_t bytes, unsigned port,
                         unsigned fds_before)
{
    const config *cfg = s->cfg;
    sl_pool_stats st;
    sl_pool_get_stats(s->pool, &st);
    unsigned long long accepted = atomic_load_explicit(&s->accepted, memory_order_relaxed);
    unsigned long long failures = atomic_load_explicit(&s->failures, memory_order_relaxed);
    uint64_t fini_conns = atomic_load_explicit(&s->fini_connections, memory_order_relaxed);
    uint64_t fini_bytes = atomic_load_explicit(&s->fini_bytes, memory_order_relaxed);
    printf("totals: %llu %s accepted; jobs: %llu submitted, %llu completed, %llu discarded; "
           "workers: %llu spawned, %llu retired by auto-trim\n", accepted,
           plural(accepted, "connection", "connections"), (unsigned long long)st.submitted,
           (unsigned long long)st.completed, (unsigned long long)st.discarded,
           (unsigned long long)st.spawned, (unsigned long long)st.retired);
    if (failures != 0)
        die("%llu errors were reported above", failures);
    if (msgs != ((uint64_t)cfg->bursts * cfg->clients + cfg->max + 2u) * cfg->messages)
        die("only %llu messages came back", (unsigned long long)msgs);
    if (st.submitted != accepted || st.completed != st.submitted || st.discarded != 0 ||
        st.queued != 0 || st.running != 0)
        die("a job was lost: %llu submitted, %llu completed",
            (unsigned long long)st.submitted, (unsigned long long)st.completed);
    if (st.workers != 0 || st.state != SL_POOL_SHUTDOWN)
        die("after the drain %u workers are still alive", st.workers);
    if (fini_conns != accepted || fini_bytes != bytes)
        die("the workers counted %llu connections and %llu bytes, the clients %llu and %llu",
            (unsigned long long)fini_conns, (unsigned long long)fini_bytes, accepted,
            (unsigned long long)bytes);
    int fd = connect_to(port); /* nobody listens there any more */
    if (fd >= 0) {
        /* Refused, unless the kernel picked the port itself as the source
         * (a TCP self-connect, which needs no listener). */
        struct sockaddr_in me;
        socklen_t len = sizeof(me);
        bool self = getsockname(fd, (struct sockaddr *)&me, &len) == 0 &&
                    ntohs(me.sin_port) == port;
        close(fd);
        if (!self)
            die("a connect after the shutdown was accepted");
    } else if (errno != ECONNREFUSED) {
        die("a connect after the shutdown failed with %s, not ECONNREFUSED", strerror(errno));
    }
    close(s->stop_pipe[0]);
    close(s->stop_pipe[1]);
    if (open_fds() != fds_before)
        die("%u file descriptors open at the start, %u at the end", fds_before, open_fds());
}

/* ---- the flags and main ------------------------------------------------- */

static const struct flag {
    const char *name;
    size_t offset;
    unsigned lo, hi;
    const char *help;
} flags[] = {
    {"port", offsetof(config, port), 0, 65535, "port on 127.0.0.1 (0: any free one)"},
    {"clients", offsetof(config, clients), 1, 512, "client threads per burst"},
    {"messages", offsetof(config, messages), 1, 1000000, "messages per client, each checked"},
    {"min", offsetof(config, min), 0, SL_POOL_MAX_WORKERS, "workers kept while idle"},
    {"max", offsetof(config, max), 1, SL_POOL_MAX_WORKERS, "workers at most"},
    {"idle-ms", offsetof(config, idle_ms), 1, 60000, "a worker above min retires after this"},
    {"bursts", offsetof(config, bursts), 0, 1000, "load bursts before the shutdown"},
    {"burst-ms", offsetof(config, burst_ms), 0, 60000, "each client spreads its messages so"},
    {"tick-ms", offsetof(config, tick_ms), 10, 10000, "print the pool's state this often"},
};
enum { NFLAGS = sizeof(flags) / sizeof(flags[0]) };

static void usage(FILE *to, const config *defaults)
{
    fputs("usage: echo_server [--help] [--FLAG N ...]\n", to);
    for (unsigned i = 0; i < NFLAGS; i++)
        fprintf(to, "  --%-9s %s (default %u)\n", flags[i].name, flags[i].help,
                *(const unsigned *)((const char *)defaults + flags[i].offset));
}

static void parse_flags(int argc, char **argv, config *cfg)
{
    const config defaults = *cfg;
    struct option opts[NFLAGS + 2] = {{"help", no_argument, NULL, 'h'}};
    for (unsigned i = 0; i < NFLAGS; i++)
        opts[i + 1] = (struct option){flags[i].name, required_argument, NULL, 0};
    int o, at;
    while ((o = getopt_long(argc, argv, "h", opts, &at)) != -1) {
        if (o == 'h') {
            usage(stdout, &defaults);
            exit(0);
        }
        char *end;
        unsigned long v = o == 0 ? strtoul(optarg, &end, 10) : 0;
        const struct flag *f = o == 0 ? &flags[at - 1] : NULL;
        /* getopt_long has already said what was wrong with an unknown
         * option or a missing value; a bad value is ours to explain. */
        if (!f || end == optarg || *end || optarg[0] == '-' || v < f->lo || v > f->hi) {
            if (f)
                fprintf(stderr, "echo_server: --%s %s: must be %u..%u\n", f->name, optarg,
                        f->lo, f->hi);
            usage(stderr, &defaults);
            exit(2);
        }
        *(unsigned *)((char *)cfg + f->offset) = (unsigned)v;
    }
    if (optind < argc || cfg->min > cfg->max) {
        if (optind < argc)
            fprintf(stderr, "echo_server: %s: unexpected argument\n", argv[optind]);
        else
            fprintf(stderr, "echo_server: --min %u is above --max %u\n", cfg->min, cfg->max);
        usage(stderr, &defaults);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    config cfg = {.port = 0, .clients = 6, .messages = 40, .min = 2, .max = 6,
                  .idle_ms = 100, .bursts = 2, .burst_ms = 500, .tick_ms = 150};
    parse_flags(argc, argv, &cfg);
    server s = {.cfg = &cfg, .t0_ns = now_ns()};
    unsigned fds_before = open_fds();
    unsigned port;
    s.listen_fd = listen_on(cfg.port, &port);
    if (pipe2(s.stop_pipe, O_CLOEXEC) != 0)
        die("pipe: %s", strerror(errno));

    /* With an idle timeout the pool starts at min_workers and spawns up to
     * max_workers on demand, as Puma's does. */
    sl_pool_opts o = {.max_workers = cfg.max, .min_workers = cfg.min,
                      .idle_timeout_ns = (uint64_t)cfg.idle_ms * 1000000u, .name = "echo",
                      .worker_init = worker_init, .worker_fini = worker_fini,
                      .on_discard = on_discard, .user = &s};
    check(sl_pool_new(&s.pool, &o), "sl_pool_new");
    printf("echo_server: listening on 127.0.0.1:%u; pool \"echo\": workers min %u, max %u, "
           "idle timeout %u ms\n", port, cfg.min, cfg.max, cfg.idle_ms);
    fflush(stdout);

    pthread_t acceptor, sampler;
    if (pthread_create(&acceptor, NULL, acceptor_main, &s) != 0 ||
        pthread_create(&sampler, NULL, sampler_main, &s) != 0)
        die("cannot start the acceptor or the sampler");
    wait_for_workers(&s, cfg.min, now_ns());
    sleep_us(2000u * cfg.tick_ms);

    uint64_t msgs = 0, bytes = 0;
    for (unsigned round = 0; round < cfg.bursts; round++)
        run_burst(&s, port, round, &msgs, &bytes);
    run_shutdown(&s, port, acceptor, &msgs, &bytes);
    atomic_store_explicit(&s.sampler_stop, true, memory_order_relaxed);
    pthread_join(sampler, NULL);
    /* The bursts' peaks and the shutdown's (its max + 2 clients) alike. */
    unsigned peak = atomic_load_explicit(&s.run_peak_workers, memory_order_relaxed);
    if (peak > cfg.max)
        die("%u workers at once, above max (%u)", peak, cfg.max);

    final_checks(&s, msgs, bytes, port, fds_before);
    sl_pool_free(s.pool);
    printf("echo_server: ok: %llu messages, %llu bytes echoed; %u %s; workers: %u at rest, "
           "%u at the peak (whole run), 0 after the shutdown; submitted == completed\n",
           (unsigned long long)msgs, (unsigned long long)bytes, cfg.bursts,
           plural(cfg.bursts, "burst", "bursts"), cfg.min, peak);
    return 0;
}
