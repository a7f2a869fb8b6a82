/*
 * render.c — a tile renderer on the worker pool: a small ray-traced scene
 * (four spheres on a checkered floor, shadows and reflections) cut into
 * tiles, rendered by every core and assembled into a binary PPM.
 *
 * Answers: “Implementing a Worker pool in Nim — Part 1”, a blog post on the
 * worker pool behind the author's ray tracer. What the post asks, and where
 * to see it here:
 *   - all cores by default: --workers 0 (the default) leaves max_workers 0,
 *     and the pool's stats say what that resolved to (stats.max_workers);
 *   - the start / stop (pause) / shutdown state machine, commands that return
 *     at once, completion seen both by polling sl_pool_ready (immediate-mode
 *     UIs) and by the on_state callback (retained-mode UIs): every command
 *     prints how long the call took and when each of the two saw it complete;
 *   - queueWork / tryRecvResult: tiles go in with sl_pool_submit, results come
 *     back on one sluice channel (SL_LIST) that the main thread drains with
 *     sl_chan_try_recv and sl_chan_recv_for; the pool's callbacks and the
 *     key/signal thread post to the same channel, so one loop sees everything;
 *   - progress: a bar from the tiles received and sl_pool_get_stats;
 *   - control: keys p r + - c q on a terminal; without one, SIGUSR1 toggles
 *     pause, SIGUSR2 takes one worker away each time (from 1 it wraps back to
 *     the maximum), SIGINT/SIGTERM cancel (shutdown(SL_CANCEL); tiles that
 *     never ran come back via on_discard; the exit status is still 0);
 *   - no busy-waiting: the post's workers spin on cpuRelax() when the queue is
 *     empty. A sluice worker searches for a few microseconds, then sleeps in
 *     the kernel on the pool's eventcount (a futex, sluice/park.h) until a
 *     submit or a command wakes it; the demo shows them parked while paused;
 *   - reset (purge the queue) while stopped, in act 2 of the demo.
 *
 * Run: render [--size WxH] [--tile N] [--samples N] [--workers N] [-o FILE]
 *      render --demo   (scripted, non-interactive; checks everything above,
 *                       compares with a single-threaded render, ends "render: ok")
 */
#include <sluice.h>

#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

/* ---- the scene ------------------------------------------------------------ */

typedef struct { double x, y, z; } vec3;
static vec3 v3(double x, double y, double z) { return (vec3){x, y, z}; }
static vec3 add(vec3 a, vec3 b) { return v3(a.x + b.x, a.y + b.y, a.z + b.z); }
static vec3 sub(vec3 a, vec3 b) { return v3(a.x - b.x, a.y - b.y, a.z - b.z); }
static vec3 scale(vec3 a, double s) { return v3(a.x * s, a.y * s, a.z * s); }
static double dot(vec3 a, vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static vec3 unit(vec3 a) { return scale(a, 1.0 / sqrt(dot(a, a))); }

typedef struct { vec3 center; double radius; vec3 color; double mirror; } sphere;
static const sphere spheres[] = {
    {{0.0, 1.0, 0.0}, 1.0, {0.9, 0.2, 0.2}, 0.3},
    {{-2.1, 0.7, 1.0}, 0.7, {0.2, 0.8, 0.3}, 0.1},
    {{2.0, 0.8, 0.6}, 0.8, {0.2, 0.4, 0.9}, 0.5},
    {{0.9, 0.35, -1.6}, 0.35, {0.95, 0.85, 0.2}, 0.0},
};

typedef struct { double t; vec3 normal, color; double mirror; } hit;

/* The nearest surface along o + t*d (t = INFINITY when the ray escapes). */
static hit intersect(vec3 o, vec3 d)
{
    hit h = {INFINITY, {0, 1, 0}, {0, 0, 0}, 0};
    for (size_t i = 0; i < sizeof(spheres) / sizeof(spheres[0]); i++) {
        const sphere *s = &spheres[i];
        vec3 oc = sub(o, s->center);
        double b = dot(oc, d), disc = b * b - dot(oc, oc) + s->radius * s->radius;
        double t = disc < 0 ? -1 : -b - sqrt(disc);
        if (t > 1e-6 && t < h.t)
            h = (hit){t, unit(sub(add(o, scale(d, t)), s->center)), s->color, s->mirror};
    }
    double t = d.y < 0 ? -o.y / d.y : -1; /* the floor, y = 0 */
    if (t > 1e-6 && t < h.t) {
        vec3 p = add(o, scale(d, t));
        bool light = ((long)floor(p.x) + (long)floor(p.z)) & 1;
        h = (hit){t, v3(0, 1, 0), light ? v3(0.9, 0.9, 0.85) : v3(0.2, 0.2, 0.3), 0.15};
    }
    return h;
}

static vec3 trace(vec3 o, vec3 d, int depth)
{
    hit h = intersect(o, d);
    if (isinf(h.t)) /* the sky: white at the horizon, blue above */
        return add(scale(v3(1, 1, 1), 1 - fabs(d.y)), scale(v3(0.4, 0.6, 1.0), fabs(d.y)));
    vec3 p = add(add(o, scale(d, h.t)), scale(h.normal, 1e-7));
    vec3 light = unit(v3(-0.8, 1.0, 0.3));
    double diffuse = fmax(0.0, dot(h.normal, light));
    if (diffuse > 0 && !isinf(intersect(p, light).t))
        diffuse = 0; /* in shadow */
    vec3 c = scale(h.color, 0.15 + 0.85 * diffuse);
    if (h.mirror > 0 && depth < 3) {
        vec3 r = sub(d, scale(h.normal, 2 * dot(d, h.normal)));
        c = add(scale(c, 1 - h.mirror), scale(trace(p, r, depth + 1), h.mirror));
    }
    return c;
}

/* ---- tiles, events, the renderer ------------------------------------------ */

typedef struct renderer renderer;
typedef struct tile { renderer *owner; unsigned index, x0, y0, w, h; } tile;

/* Everything the main thread hears arrives as one of these on one channel. */
enum { EV_TILE, EV_DISCARD, EV_STATE, EV_CONTROL };
typedef struct event {
    int kind;
    int detail;        /* EV_DISCARD: sl_discard; EV_STATE: sl_pool_state; EV_CONTROL: key */
    unsigned tile;
    uint8_t *pixels;   /* EV_TILE: the tile's RGB bytes, moved to the receiver */
} event;

struct renderer {
    unsigned width, height, tile_size, samples, workers, max_workers;
    tile *tiles;
    unsigned ntiles;
    sl_chan *events;        /* SL_LIST: posting never waits, so a job never blocks on it */
    atomic_uint lost;       /* events that could not be posted (no memory): a failure */
    bool tty_out;
};

static void shade_tile(const renderer *r, const tile *t, uint8_t *px)
{
    unsigned n = r->samples;
    double aspect = (double)r->width / r->height;
    for (unsigned y = t->y0; y < t->y0 + t->h; y++) {
        for (unsigned x = t->x0; x < t->x0 + t->w; x++) {
            vec3 sum = v3(0, 0, 0);
            for (unsigned sy = 0; sy < n; sy++) {
                for (unsigned sx = 0; sx < n; sx++) {
                    double u = ((x + (sx + 0.5) / n) / r->width) * 2 - 1;
                    double v = 1 - ((y + (sy + 0.5) / n) / r->height) * 2;
                    vec3 d = unit(v3(u * aspect * 0.55, v * 0.55 - 0.12, 1));
                    sum = add(sum, trace(v3(0, 1.3, -5.5), d, 0));
                }
            }
            double c[3] = {sum.x, sum.y, sum.z};
            for (int k = 0; k < 3; k++)
                *px++ = (uint8_t)(255.0 * sqrt(fmin(1.0, c[k] / (n * n))) + 0.5);
        }
    }
}

static void post(renderer *r, const event *e)
{
    if (sl_chan_send(r->events, e) != SL_OK) {
        free(e->pixels);
        atomic_fetch_add_explicit(&r->lost, 1, memory_order_relaxed); /* a count; read after joins */
    }
}

/* The job (the post's workProc): render one tile, send the result back. */
static void render_tile(void *arg, void *worker_ctx)
{
    (void)worker_ctx;
    tile *t = arg;
    uint8_t *px = malloc((size_t)t->w * t->h * 3);
    if (px)
        shade_tile(t->owner, t, px);
    post(t->owner, &(event){EV_TILE, 0, t->index, px}); /* NULL pixels: reported as a failure */
}

static void on_discard(const sl_job *job, sl_discard why, void *user)
{
    post(user, &(event){EV_DISCARD, (int)why, ((tile *)job->arg)->index, NULL});
}

static void on_state(sl_pool *p, sl_pool_state now, void *user)
{
    (void)p;
    post(user, &(event){EV_STATE, (int)now, 0, NULL});
}

/* ---- output, failure ------------------------------------------------------ */

static bool bar_shown; /* main thread only: a \r progress line needs a newline first */

static void say(const char *fmt, ...)
{
    if (bar_shown)
        putchar('\n');
    bar_shown = false;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

static _Noreturn void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fputs("render: FAILED: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* "1 worker", "2 workers": plural(n, "worker", "workers"). */
static const char *plural(unsigned long n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

static double clock_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }

static const char *state_name(int s)
{
    return s == SL_POOL_RUNNING ? "RUNNING" : s == SL_POOL_STOPPED ? "STOPPED" : "SHUTDOWN";
}

/* ---- one render: the pool, the image, the command in progress ------------- */

enum { QUEUED, RENDERED, DISCARDED };

typedef struct session {
    renderer *r;
    sl_pool *pool;
    uint8_t *image;
    unsigned char *fate;            /* per tile: QUEUED, RENDERED, DISCARDED */
    unsigned submitted, rendered, reset, cancelled;
    const char *cmd;                /* the command in progress, NULL when none */
    char cmd_name[32];
    int cmd_expect;                 /* the state its on_state must report */
    double cmd_at, call_us, call_cpu_us, polled_at, notified_at;
    unsigned commands, polled, notified;
    bool cancel_wanted, shut;
    double next_draw;
} session;

static void session_begin(session *s, renderer *r, bool start_stopped)
{
    *s = (session){.r = r};
    s->image = calloc((size_t)r->width * r->height, 3);
    s->fate = calloc(r->ntiles, 1);
    if (!s->image || !s->fate)
        fail("out of memory");
    sl_pool_opts o = {.max_workers = r->workers, /* 0: every online CPU */
                      .start_stopped = start_stopped, .name = "render",
                      .on_state = on_state, .on_discard = on_discard, .user = r};
    sl_status st = sl_pool_new(&s->pool, &o);
    if (st != SL_OK)
        fail("sl_pool_new: %s", sl_status_str(st));
    sl_pool_stats stats;
    sl_pool_get_stats(s->pool, &stats);
    r->max_workers = stats.max_workers; /* --workers 0 resolved to the CPU count */
}

static void session_end(session *s)
{
    sl_pool_free(s->pool); /* shut down already: joins the threads */
    free(s->image);
    free(s->fate);
}

/* queueWork: returns at once (the queue is unbounded). */
static void submit(session *s, unsigned i)
{
    sl_status st = sl_pool_submit(s->pool, render_tile, &s->r->tiles[i]);
    if (st != SL_OK)
        fail("sl_pool_submit: %s", sl_status_str(st));
    s->fate[i] = QUEUED;
    s->submitted++;
}

/* Issues a command (op: the key that asks for it) and times the call; false,
 * and why, when the pool refused it. */
static bool issue(session *s, int op, unsigned n)
{
    sl_pool_stats st;
    sl_pool_get_stats(s->pool, &st);
    double t0 = now_s(), cpu0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    sl_status rc = op == 'r' ? sl_pool_start(s->pool)
                 : op == 'p' ? sl_pool_stop(s->pool)
                 : op == 'w' ? sl_pool_set_workers(s->pool, n)
                 : op == 'z' ? sl_pool_reset(s->pool)
                             : sl_pool_shutdown(s->pool, op == 'c' ? SL_CANCEL : SL_DRAIN);
    s->cmd_at = now_s();
    s->call_cpu_us = (clock_s(CLOCK_THREAD_CPUTIME_ID) - cpu0) * 1e6;
    if (op == 'w')
        snprintf(s->cmd_name, sizeof(s->cmd_name), "set_workers(%u)", n);
    else
        snprintf(s->cmd_name, sizeof(s->cmd_name), "%s", op == 'r' ? "start" : op == 'p' ? "stop"
                 : op == 'z' ? "reset" : op == 'c' ? "shutdown(SL_CANCEL)" : "shutdown(SL_DRAIN)");
    if (rc != SL_OK) {
        say("  %s refused: %s", s->cmd_name, sl_status_str(rc));
        return false;
    }
    s->cmd = s->cmd_name;
    s->call_us = (s->cmd_at - t0) * 1e6;
    s->cmd_expect = op == 'r' ? SL_POOL_RUNNING : op == 'p' || op == 'z' ? SL_POOL_STOPPED
                  : op == 'w' ? (int)st.state : SL_POOL_SHUTDOWN;
    s->polled_at = s->notified_at = 0;
    s->commands++;
    s->shut = s->shut || op == 'c' || op == 'd';
    return true;
}

static void handle(session *s, const event *e);

/* The immediate-mode half: poll sl_pool_ready once per loop turn. */
static void poll_ready(session *s)
{
    if (s->cmd && !s->polled_at && sl_pool_ready(s->pool)) {
        s->polled_at = now_s();
        s->polled++;
    }
}

/* A command is complete once both halves have seen it. */
static void poll_command(session *s)
{
    poll_ready(s);
    if (s->cmd && s->polled_at && s->notified_at) {
        say("  %s: the call took %.0f us (%.0f us of CPU); ready (polled) %.2f ms later, "
            "on_state(%s) %.2f ms later", s->cmd, s->call_us, s->call_cpu_us,
            (s->polled_at - s->cmd_at) * 1e3, state_name(s->cmd_expect),
            (s->notified_at - s->cmd_at) * 1e3);
        /* The call never waits; on a busy machine the workers it wakes may
         * preempt the caller, which is the gap between wall and CPU time. */
        if (s->call_us > 1000 && s->call_us > 10 * s->call_cpu_us)
            say("    (the call does not wait: it used %.0f us of CPU; the rest is this thread "
                "preempted by the workers it woke, the machine's cores being busy)",
                s->call_cpu_us);
        s->cmd = NULL;
        if (s->cancel_wanted && !s->shut)
            issue(s, 'c', 0);
    }
}

static void draw(session *s, bool force)
{
    double t = now_s();
    if (!force && t < s->next_draw)
        return;
    s->next_draw = t + (s->r->tty_out ? 0.1 : 0.5);
    sl_pool_stats st;
    sl_pool_get_stats(s->pool, &st);
    char bar[31];
    unsigned fill = s->submitted ? (unsigned)(30ull * s->rendered / s->r->ntiles) : 0;
    for (unsigned i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[30] = '\0';
    /* While a command is in progress the state is on its way from one to
     * the next (a start's workers may run before the state says RUNNING),
     * so the line names the command instead. */
    char state[48];
    if (st.busy)
        snprintf(state, sizeof(state), "%s in progress", s->cmd ? s->cmd : "a command");
    else
        snprintf(state, sizeof(state), "%s", state_name(st.state));
    /* On a terminal the bar redraws itself in place; elsewhere, one line each 0.5 s. */
    bool tty = s->r->tty_out;
    printf("%sprogress [%s] %u/%u tiles, %s, workers %u (target %u), running %u, parked %u, queued %" PRIu64 "%s",
           tty ? "\r" : "", bar, s->rendered, s->r->ntiles, state, st.workers, st.target,
           st.running, st.parked, st.queued, tty ? "    " : "\n");
    bar_shown = tty;
    fflush(stdout);
}

/* A key or a signal, turned into a command that returns at once. */
static void control(session *s, int key)
{
    if (key == 'c' || key == 'q')
        s->cancel_wanted = true;
    if (s->shut)
        return;
    if (s->cmd) {
        say("  '%c': a command is in progress (%s)%s", key, s->cmd,
            s->cancel_wanted ? "; the cancel follows it" : "");
        return;
    }
    sl_pool_stats st;
    sl_pool_get_stats(s->pool, &st);
    unsigned n = st.target;
    if (key == 't') /* SIGUSR1 */
        key = st.state == SL_POOL_RUNNING ? 'p' : 'r';
    if (key == 'w') /* SIGUSR2: one fewer, from 1 back to the maximum */
        n = n > 1 ? n - 1 : s->r->max_workers;
    else if (key == '+' || key == '-')
        n = key == '+' ? n + 1 : n > 1 ? n - 1 : 1;
    if (key == 'p' || key == 'r' || key == 'c' || key == 'q')
        issue(s, key == 'q' ? 'c' : key, 0);
    else if (n != st.target)
        issue(s, 'w', n);
}

static void handle(session *s, const event *e)
{
    const renderer *r = s->r;
    if (e->kind == EV_CONTROL) {
        control(s, e->detail);
        return;
    }
    if (e->kind == EV_STATE) {
        if (!s->cmd || s->notified_at || e->detail != s->cmd_expect)
            fail("on_state(%s) that no command of ours explains", state_name(e->detail));
        s->notified_at = now_s();
        s->notified++;
        return;
    }
    if (e->tile >= r->ntiles || s->fate[e->tile] != QUEUED)
        fail("tile %u came back twice", e->tile);
    if (e->kind == EV_DISCARD) {
        s->fate[e->tile] = DISCARDED;
        if (e->detail == SL_DISCARD_RESET)
            s->reset++;
        else if (e->detail == SL_DISCARD_CANCELLED)
            s->cancelled++;
        else
            fail("tile %u discarded for reason %d", e->tile, e->detail);
        return;
    }
    const tile *t = &r->tiles[e->tile];
    if (!e->pixels)
        fail("tile %u: no memory for its pixels", e->tile);
    for (unsigned y = 0; y < t->h; y++)
        memcpy(s->image + ((size_t)(t->y0 + y) * r->width + t->x0) * 3,
               e->pixels + (size_t)y * t->w * 3, (size_t)t->w * 3);
    free(e->pixels);
    s->fate[e->tile] = RENDERED;
    s->rendered++;
}

/* One loop turn: an event or the timeout, then the command poll and the bar. */
static void pump(session *s, uint64_t timeout_ns)
{
    event e;
    if (atomic_load_explicit(&s->r->lost, memory_order_relaxed))
        fail("an event could not be posted (out of memory)");
    sl_status st = sl_chan_recv_for(s->r->events, &e, timeout_ns);
    poll_ready(s); /* before the event: on_state comes after ready turns true */
    if (st == SL_OK)
        handle(s, &e);
    else if (st != SL_TIMEDOUT)
        fail("sl_chan_recv_for: %s", sl_status_str(st));
    poll_command(s);
    draw(s, false);
}

/* tryRecvResult until the channel is empty. */
static void drain(session *s)
{
    event e;
    while (sl_chan_try_recv(s->r->events, &e) == SL_OK)
        handle(s, &e);
    poll_command(s);
}

static void wait_command(session *s)
{
    for (double end = now_s() + 60; s->cmd;) {
        if (now_s() > end)
            fail("%s did not complete in 60 s", s->cmd);
        pump(s, 5000000);
    }
}

/* The demo's commands: issued, then waited for (the loop keeps pumping). */
static void run_command(session *s, int op, unsigned n)
{
    if (!issue(s, op, n))
        fail("%s was refused", s->cmd_name);
    wait_command(s);
}

static void pump_until_rendered(session *s, unsigned n)
{
    for (double end = now_s() + 120; s->rendered < n;) {
        if (now_s() > end)
            fail("only %u of %u tiles after 120 s", s->rendered, n);
        pump(s, 20000000);
    }
}

/* ---- checks and the image ------------------------------------------------- */

static uint64_t checksum(const uint8_t *b, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static void reference_render(const renderer *r, uint8_t *img)
{
    uint8_t *px = malloc((size_t)r->tile_size * r->tile_size * 3);
    if (!px)
        fail("out of memory");
    for (unsigned i = 0; i < r->ntiles; i++) {
        const tile *t = &r->tiles[i];
        shade_tile(r, t, px);
        for (unsigned y = 0; y < t->h; y++)
            memcpy(img + ((size_t)(t->y0 + y) * r->width + t->x0) * 3, px + (size_t)y * t->w * 3,
                   (size_t)t->w * 3);
    }
    free(px);
}

static void write_ppm(const renderer *r, const uint8_t *img, const char *path)
{
    FILE *f = fopen(path, "wb");
    size_t n = (size_t)r->width * r->height * 3;
    if (!f || fprintf(f, "P6\n%u %u\n255\n", r->width, r->height) < 0 ||
        fwrite(img, 1, n, f) != n || fclose(f) != 0)
        fail("cannot write %s", path);
}

/* While stopped: nothing completes for 100 ms and every worker sleeps. */
static void check_paused(session *s)
{
    drain(s); /* stop completed only after the last running tile was sent */
    unsigned before = s->rendered;
    double cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    for (double end = now_s() + 0.1; now_s() < end;)
        pump(s, 10000000);
    double cpu = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0) * 1e3;
    sl_pool_stats st;
    for (double end = now_s() + 10;; pump(s, 10000000)) {
        sl_pool_get_stats(s->pool, &st); /* a worker may still be on its way to the futex */
        if (st.parked == st.workers || now_s() > end)
            break;
    }
    say("  paused at %u/%u tiles: %u completed in 100 ms; %u/%u workers parked in the kernel, "
        "%u running, %" PRIu64 " queued; process cpu %.1f ms in those 100 ms",
        before, s->r->ntiles, s->rendered - before, st.parked, st.workers, st.running, st.queued, cpu);
    if (s->rendered != before || st.state != SL_POOL_STOPPED || st.running != 0 ||
        st.parked != st.workers || st.queued != s->submitted - before)
        fail("the paused pool was not at rest");
}

/* ---- the demo: act 1 pauses, resizes and finishes; act 2 resets and cancels */

static void demo_act1(renderer *r, uint8_t *reference, const char *out)
{
    session s;
    session_begin(&s, r, true);
    for (unsigned i = 0; i < r->ntiles; i++)
        submit(&s, i);
    say("act 1: %u %s queued on a stopped pool of %u %s", r->ntiles,
        plural(r->ntiles, "tile", "tiles"), r->max_workers,
        plural(r->max_workers, "worker", "workers"));
    run_command(&s, 'r', 0);
    pump_until_rendered(&s, r->ntiles / 3);
    run_command(&s, 'p', 0);
    check_paused(&s);
    if (r->max_workers > 1) {
        run_command(&s, 'w', r->max_workers - 1);
        sl_pool_stats st;
        sl_pool_get_stats(s.pool, &st);
        say("  now %u %s (target %u)", st.workers, plural(st.workers, "worker", "workers"),
            st.target);
        if (st.workers != r->max_workers - 1 || st.target != r->max_workers - 1)
            fail("set_workers(%u) left %u workers", r->max_workers - 1, st.workers);
    }
    run_command(&s, 'r', 0);
    pump_until_rendered(&s, r->ntiles);
    draw(&s, true);
    run_command(&s, 'd', 0);
    size_t n = (size_t)r->width * r->height * 3;
    uint64_t got = checksum(s.image, n), want = checksum(reference, n);
    say("  image %016" PRIx64 ", single-threaded render %016" PRIx64 ": %s", got, want,
        got == want ? "equal" : "DIFFERENT");
    unsigned commands = r->max_workers > 1 ? 5 : 4; /* one worker: nothing to take away */
    if (got != want || s.commands != commands || s.polled != commands || s.notified != commands)
        fail("act 1: image or command count wrong (%u commands)", s.commands);
    write_ppm(r, s.image, out);
    session_end(&s);
}

static void demo_act2(renderer *r, const uint8_t *reference)
{
    session s;
    session_begin(&s, r, false);
    for (unsigned i = 0; i < r->ntiles; i++)
        submit(&s, i);
    say("act 2: %u %s on a running pool; pause at a quarter, reset, re-queue, cancel", r->ntiles,
        plural(r->ntiles, "tile", "tiles"));
    pump_until_rendered(&s, r->ntiles / 4);
    run_command(&s, 'p', 0);
    run_command(&s, 'z', 0);
    drain(&s);
    say("  reset: %u queued %s came back through on_discard(SL_DISCARD_RESET); "
        "%u rendered + %u reset == %u submitted", s.reset, plural(s.reset, "tile", "tiles"),
        s.rendered, s.reset, s.submitted);
    if (s.rendered + s.reset != s.submitted)
        fail("act 2: reset accounting");
    if (s.reset == 0)
        say("  (every tile was done before the stop arrived: nothing was left to reset)");
    for (unsigned i = 0; i < r->ntiles; i++) /* on_discard gave them back: nothing is lost */
        if (s.fate[i] == DISCARDED)
            submit(&s, i);
    run_command(&s, 'r', 0);
    pump_until_rendered(&s, s.rendered + 1); /* cancel early: most re-queued tiles still wait */
    handle(&s, &(event){EV_CONTROL, 'c', 0, NULL}); /* as if the user pressed c */
    wait_command(&s);
    drain(&s);
    draw(&s, true);
    sl_pool_stats st;
    sl_pool_get_stats(s.pool, &st);
    say("  cancel: %u rendered + %u discarded (SL_DISCARD_CANCELLED) == %u %s; "
        "pool: submitted %" PRIu64 " = completed %" PRIu64 " + discarded %" PRIu64 " (reset + cancelled)%s",
        s.rendered, s.cancelled, r->ntiles, plural(r->ntiles, "tile", "tiles"), st.submitted,
        st.completed, st.discarded,
        s.cancelled ? "" : " (every tile was done before the cancel arrived)");
    if (s.rendered + s.cancelled != r->ntiles || st.submitted != s.submitted ||
        st.completed != s.rendered || st.discarded != s.reset + s.cancelled)
        fail("act 2: cancel accounting");
    for (unsigned i = 0; i < r->ntiles; i++) { /* what was rendered matches the reference */
        const tile *t = &r->tiles[i];
        for (unsigned y = 0; s.fate[i] == RENDERED && y < t->h; y++) {
            size_t at = ((size_t)(t->y0 + y) * r->width + t->x0) * 3;
            if (memcmp(s.image + at, reference + at, (size_t)t->w * 3) != 0)
                fail("act 2: tile %u differs from the reference", i);
        }
    }
    session_end(&s);
}

/* ---- interactive run ------------------------------------------------------ */

static int render_once(renderer *r, const char *out)
{
    session s;
    session_begin(&s, r, true);
    for (unsigned i = 0; i < r->ntiles; i++)
        submit(&s, i);
    say("%u %s queued on a stopped pool of %u %s; start", r->ntiles,
        plural(r->ntiles, "tile", "tiles"), r->max_workers,
        plural(r->max_workers, "worker", "workers"));
    if (!issue(&s, 'r', 0))
        fail("start was refused");
    while (s.rendered + s.reset + s.cancelled < s.submitted || s.cmd)
        pump(&s, 50000000);
    if (!s.shut) {
        run_command(&s, 'd', 0);
    }
    draw(&s, true);
    write_ppm(r, s.image, out);
    /* A cancel is one of the outcomes the user can ask for, not a failure:
     * the exit status is 0 either way, 1 only when a check failed. */
    if (s.cancelled)
        say("render: cancelled: %u/%u tiles rendered, %u discarded; partial image in %s "
            "(exit status 0: a cancel is a normal outcome)", s.rendered, r->ntiles, s.cancelled,
            out);
    else
        say("render: ok %ux%u, %u %s, checksum %016" PRIx64 ", wrote %s", r->width, r->height,
            r->ntiles, plural(r->ntiles, "tile", "tiles"),
            checksum(s.image, (size_t)r->width * r->height * 3), out);
    session_end(&s);
    return 0;
}

/* ---- keys and signals: a thread that turns them into EV_CONTROL events ----- */

typedef struct input { renderer *r; int sigfd, quit[2]; bool keys; pthread_t thread; } input;
static struct termios saved_tty;

static void restore_tty(void) { tcsetattr(0, TCSANOW, &saved_tty); }

static void *input_main(void *arg)
{
    input *in = arg;
    struct pollfd fds[3] = {{in->quit[0], POLLIN, 0}, {in->sigfd, POLLIN, 0}, {0, POLLIN, 0}};
    for (;;) {
        if (poll(fds, in->keys ? 3 : 2, -1) < 0 || fds[0].revents)
            return NULL;
        struct signalfd_siginfo si;
        if (fds[1].revents && read(in->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
            int key = si.ssi_signo == SIGUSR1 ? 't' : si.ssi_signo == SIGUSR2 ? 'w' : 'c';
            post(in->r, &(event){EV_CONTROL, key, 0, NULL});
        }
        char c;
        ssize_t n = in->keys && fds[2].revents ? read(0, &c, 1) : 1;
        if (n <= 0)
            in->keys = false; /* end of input: stop polling it */
        else if (in->keys && fds[2].revents && c && strchr("pr+-cq", c))
            post(in->r, &(event){EV_CONTROL, c, 0, NULL});
    }
}

static void input_start(input *in, renderer *r, bool keys)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    /* Blocked before any thread starts, so every thread inherits the mask and
     * the signals are only ever read from the signalfd: no handler runs. */
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    *in = (input){.r = r, .keys = keys};
    if ((in->sigfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0 || pipe(in->quit) != 0)
        fail("signalfd / pipe");
    if (keys && tcgetattr(0, &saved_tty) == 0) {
        struct termios raw = saved_tty;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        raw.c_cc[VMIN] = 1;
        raw.c_cc[VTIME] = 0;
        tcsetattr(0, TCSANOW, &raw);
        atexit(restore_tty);
    }
    if (pthread_create(&in->thread, NULL, input_main, in) != 0)
        fail("pthread_create");
}

static void input_stop(input *in)
{
    if (write(in->quit[1], "q", 1) != 1)
        fail("write");
    pthread_join(in->thread, NULL);
    close(in->quit[0]);
    close(in->quit[1]);
    close(in->sigfd);
}

/* ---- main ----------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: render [--size WxH] [--tile N] [--samples N] [--workers N] [-o FILE] [--demo]\n"
               "  --size WxH    image size, each side 1..8192 (default 1024x768)\n"
               "  --tile N      tile edge in pixels, 1..1024 (default 32)\n"
               "  --samples N   N x N samples per pixel, 1..16 (default 6)\n"
               "  --workers N   pool size, 0 = every CPU (default 0)\n"
               "  -o FILE       output PPM (default render.ppm)\n"
               "  --demo        scripted run: pause, resize, resume, reset, cancel, checks\n"
               "keys (on a terminal): p pause, r resume, + one worker more, - one worker fewer,\n"
               "  c or q cancel\n"
               "signals (kill -USR1 PID ...; the pid is printed at the start):\n"
               "  SIGUSR1          pause if running, resume if paused\n"
               "  SIGUSR2          one worker fewer each time; from 1 it wraps back to the\n"
               "                   maximum (--workers, or one per CPU)\n"
               "  SIGINT, SIGTERM  cancel: shutdown(SL_CANCEL); tiles not yet rendered are\n"
               "                   discarded and the partial image is written\n"
               "exit status: 0 when the image was rendered or the render was cancelled (a\n"
               "  cancel is a normal outcome), 1 when a check failed, 2 for bad options\n");
}

/* s as an unsigned in lo..hi, up to the end of s or to stop. */
static bool read_uint(const char *s, char stop, unsigned lo, unsigned hi, unsigned *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (end == s || *end != stop || *s == '-' || v < lo || v > hi)
        return false;
    *out = (unsigned)v;
    return true;
}

/* A flag's value in lo..hi; otherwise says what was wrong. */
static bool parse_uint(const char *flag, const char *s, unsigned lo, unsigned hi, unsigned *out)
{
    if (!s)
        fprintf(stderr, "render: %s needs a value\n", flag);
    else if (!read_uint(s, '\0', lo, hi, out))
        fprintf(stderr, "render: %s %s: must be %u..%u\n", flag, s, lo, hi);
    else
        return true;
    return false;
}

/* --size WxH: both sides 1..8192. */
static bool parse_size(const char *s, renderer *r)
{
    const char *x = s ? strchr(s, 'x') : NULL;
    if (!s)
        fprintf(stderr, "render: --size needs a value\n");
    else if (!x || !read_uint(s, 'x', 1, 8192, &r->width) ||
             !read_uint(x + 1, '\0', 1, 8192, &r->height))
        fprintf(stderr, "render: --size %s: must be WxH, each side 1..8192\n", s);
    else
        return true;
    return false;
}

/* Reads the flags; false, having said what was wrong, on a bad one. */
static bool parse_args(int argc, char **argv, renderer *r, const char **out, bool *demo)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--demo")) {
            *demo = true;
            continue;
        } else if (!strcmp(a, "--size")) {
            ok = parse_size(v, r);
        } else if (!strcmp(a, "--tile")) {
            ok = parse_uint(a, v, 1, 1024, &r->tile_size);
        } else if (!strcmp(a, "--samples")) {
            ok = parse_uint(a, v, 1, 16, &r->samples);
        } else if (!strcmp(a, "--workers")) {
            ok = parse_uint(a, v, 0, SL_POOL_MAX_WORKERS, &r->workers);
        } else if (!strcmp(a, "-o")) {
            if (!v)
                fprintf(stderr, "render: -o needs a file name\n");
            ok = v != NULL;
            *out = v;
        } else {
            fprintf(stderr, "render: %s: unknown option\n", a);
            return false;
        }
        if (!ok)
            return false;
        i++; /* the flag's value */
    }
    return true;
}

int main(int argc, char **argv)
{
    renderer r = {.width = 1024, .height = 768, .tile_size = 32, .samples = 6, .tty_out = isatty(1)};
    const char *out = "render.ppm";
    bool demo = false;
    if (!parse_args(argc, argv, &r, &out, &demo)) {
        usage(stderr);
        return 2;
    }
    unsigned cols = (r.width + r.tile_size - 1) / r.tile_size, rows = (r.height + r.tile_size - 1) / r.tile_size;
    if ((uint64_t)cols * rows > 1u << 20) {
        fprintf(stderr, "render: --size %ux%u in tiles of %u px makes %llu tiles: at most %u\n",
                r.width, r.height, r.tile_size, (unsigned long long)cols * rows, 1u << 20);
        usage(stderr);
        return 2;
    }
    r.ntiles = cols * rows;
    r.tiles = calloc(r.ntiles, sizeof(tile));
    sl_chan_opts co = {.flavor = SL_LIST, .elem_size = sizeof(event)};
    sl_status st = sl_chan_new(&r.events, &co);
    if (!r.tiles || st != SL_OK)
        fail("setup: %s", sl_status_str(st));
    for (unsigned i = 0; i < r.ntiles; i++) {
        unsigned x0 = i % cols * r.tile_size, y0 = i / cols * r.tile_size;
        r.tiles[i] = (tile){&r, i, x0, y0, r.width - x0 < r.tile_size ? r.width - x0 : r.tile_size,
                            r.height - y0 < r.tile_size ? r.height - y0 : r.tile_size};
    }
    bool keys = !demo && isatty(0);
    input in;
    input_start(&in, &r, keys);
    char workers[32] = "a worker per CPU";
    if (r.workers)
        snprintf(workers, sizeof(workers), "%u %s", r.workers,
                 plural(r.workers, "worker", "workers"));
    say("render: %ux%u, %u %s of %u px, %ux%u samples, %s; pid %ld", r.width, r.height, r.ntiles,
        plural(r.ntiles, "tile", "tiles"), r.tile_size, r.samples, r.samples, workers,
        (long)getpid());
    if (keys)
        say("keys: p pause, r resume, + / - workers, c or q cancel");
    say("signals: kill -USR1 (pause/resume), -USR2 (one worker fewer; from 1 back to all), "
        "-INT or -TERM (cancel)");
    int rc = 0;
    if (demo) {
        uint8_t *reference = malloc((size_t)r.width * r.height * 3);
        if (!reference)
            fail("out of memory");
        reference_render(&r, reference);
        demo_act1(&r, reference, out);
        demo_act2(&r, reference);
        free(reference);
    } else {
        rc = render_once(&r, out);
    }
    input_stop(&in);
    if (atomic_load_explicit(&r.lost, memory_order_relaxed)) /* every poster has been joined */
        fail("%u events could not be posted", atomic_load_explicit(&r.lost, memory_order_relaxed));
    if (demo)
        say("render: ok (image equals the single-threaded render; pause, resize, reset and cancel "
            "accounted for; wrote %s)", out);
    sl_chan_free(r.events);
    free(r.tiles);
    return rc;
}
