/*
 * ipc_run.c — one run of `sl-bench ipc`: a timing side (the calling thread)
 * and a peer, in a fork()ed process or in a thread, over a contender's queues.
 *
 *   pingpong: the timing side sends a message on queue AB, the peer sends it
 *     back on queue BA; every round trip is timed; the figure is the median
 *     (p99 and p99.9 beside it). The echo must come back bit for bit and the
 *     peer checks every message's sequence and payload.
 *   tput: the peer sends messages as fast as the queue takes them for
 *     run_ns, then a sentinel; the timing side receives and checks each
 *     (sequence in exact order, payload, count and checksum against what the
 *     peer says it sent): messages per second from gate to sentinel.
 * Every contender uses its blocking calls, so a side that waits sleeps in the
 * kernel (a futex for sluice) as it would in a real program.
 *
 * The queues are created before the fork, so a child inherits them (the
 * descriptors of the kernel peers; the memfd of a shared-memory channel,
 * which each side opens for itself in attach). The loops, the checks, the
 * clocks and the pinning (timing side on CPU 0, peer on CPU 1) are the same
 * code for a process and a thread, so the two differ by the boundary alone.
 * Both sides meet at a start gate in a MAP_SHARED page, so neither the fork
 * nor the thread's start is timed; the peer's counts come back there too.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ipc.h"
#include "msg.h"

/* What both sides of a run touch outside the queue itself: a MAP_SHARED page,
 * so that a forked peer sees the same gate and its counts reach us. The peer
 * writes its counts last and the timing side reads them only after joining
 * or reaping it, which orders the two: their accesses are relaxed. */
struct ipc_shared {
    slb_gate gate;
    _Atomic uint64_t peer_count; /* pong: trips echoed; producer: messages sent */
    _Atomic uint64_t peer_sleeps; /* the peer's voluntary context switches in the run */
};

typedef struct ipc_job {
    const slb_run *run;
    void *ab, *ba;         /* timing side to peer, and back (ping-pong only) */
    ipc_shared *sh;
    uint64_t run_ns;       /* tput: how long the producer sends */
    uint64_t sleeps;       /* the timing side's voluntary context switches */
} ipc_job;

ipc_shared *slb_ipc_shared_new(void)
{
    ipc_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        slb_die("sl-bench", "cannot map a shared page");
    return sh;
}

void slb_ipc_shared_free(ipc_shared *sh)
{
    munmap(sh, sizeof(*sh));
}

/* The calling thread's voluntary context switches so far (0 if unknown). */
static uint64_t sleeps_now(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? (uint64_t)ru.ru_nvcsw : 0;
}

/* ---- the peer: a child process or a thread ------------------------------ */

typedef struct ipc_peer {
    bool forked;
    pid_t pid;
    pthread_t tid;
} ipc_peer;

static void peer_start(ipc_peer *p, bool forked, void *(*fn)(void *), ipc_job *job)
{
    p->forked = forked;
    if (!forked) {
        slb_spawn(&p->tid, fn, job, job->run->ops->name);
        return;
    }
    fflush(NULL); /* nothing buffered is written twice */
    pid_t parent = getpid();
    p->pid = fork();
    if (p->pid < 0)
        slb_die(job->run->ops->name, "fork failed");
    if (p->pid == 0) {
        /* A timing side stopped by the watchdog takes its peer with it; one
         * gone before the request was made is seen as a new parent. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(3);
        fn(job);
        _exit(0); /* no exit handlers: the parent owns every resource */
    }
}

/* A failing peer process has printed its reason (slb_die) and exited 2. */
static void peer_finish(ipc_peer *p, const char *who)
{
    if (!p->forked) {
        slb_join(p->tid);
        return;
    }
    int st = 0;
    if (waitpid(p->pid, &st, 0) != p->pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        slb_die(who, "the peer process failed (wait status %#x)", (unsigned)st);
}

static void *attach(const slb_ops *o, void *q, bool producer)
{
    return o->attach ? o->attach(q, producer) : NULL;
}

static void detach(const slb_ops *o, void *q, void *h)
{
    if (o->detach)
        o->detach(q, h);
}

static void pin_peer(const slb_run *r)
{
    if (r->pin)
        slb_pin_self(1);
}

/* ---- ping-pong ---------------------------------------------------------- */

static void *pong(void *arg)
{
    ipc_job *j = arg;
    const slb_run *r = j->run;
    const slb_ops *o = r->ops;
    pin_peer(r);
    void *hr = attach(o, j->ab, false), *hs = attach(o, j->ba, true);
    slb_check chk;
    slb_check_init(&chk, r, 1, r->trips, true);
    uint64_t m[SLB_WORDS_MAX];
    slb_gate_wait(&j->sh->gate);
    uint64_t s0 = sleeps_now();
    for (;;) {
        slb_recv(o, j->ab, hr, m, true);
        if (m[0] == SLB_SENTINEL)
            break;
        slb_check_msg(&chk, m);
        slb_send(o, j->ba, hs, m, true);
    }
    atomic_store_explicit(&j->sh->peer_sleeps, sleeps_now() - s0, memory_order_relaxed);
    atomic_store_explicit(&j->sh->peer_count, chk.count, memory_order_relaxed);
    slb_check_free(&chk);
    detach(o, j->ab, hr);
    detach(o, j->ba, hs);
    return NULL;
}

/* The timing side: returns the trips made, their times in samples. */
static uint64_t ping(ipc_job *j, uint64_t *samples)
{
    const slb_run *r = j->run;
    const slb_ops *o = r->ops;
    size_t words = r->elem / 8;
    void *hs = attach(o, j->ab, true), *hr = attach(o, j->ba, false);
    uint64_t m[SLB_WORDS_MAX], back[SLB_WORDS_MAX], i = 0;
    uint64_t start = slb_gate_open(&j->sh->gate, 1), s0 = sleeps_now();
    while (i < r->trips) {
        slb_fill(m, words, 0, i);
        uint64_t t = slb_now_ns();
        slb_send(o, j->ab, hs, m, true);
        slb_recv(o, j->ba, hr, back, true);
        uint64_t now = slb_now_ns();
        samples[i++] = now - t;
        if (memcmp(m, back, r->elem) != 0)
            slb_die(o->name, "%s: trip %llu came back as word %#llx", r->label,
                    (unsigned long long)(i - 1), (unsigned long long)back[0]);
        if (now - start > r->trip_cap_ns)
            break;
    }
    j->sleeps = sleeps_now() - s0;
    slb_fill_sentinel(m, words);
    slb_send(o, j->ab, hs, m, true);
    detach(o, j->ab, hs);
    detach(o, j->ba, hr);
    return i;
}

static void run_pingpong(const ipc_contender *c, ipc_job *j, slb_result *out)
{
    const slb_run *r = j->run;
    uint64_t *samples = malloc(r->trips * sizeof(uint64_t));
    if (!samples)
        slb_die(r->ops->name, "out of memory");
    ipc_peer p;
    peer_start(&p, c->forked, pong, j);
    uint64_t n = ping(j, samples);
    peer_finish(&p, r->ops->name);
    uint64_t echoed = atomic_load_explicit(&j->sh->peer_count, memory_order_relaxed);
    if (echoed != n)
        slb_die(r->ops->name, "%s: %llu trips sent, %llu echoed", r->label,
                (unsigned long long)n, (unsigned long long)echoed);
    slb_expect_empty(r, j->ab);
    slb_expect_empty(r, j->ba);
    slb_sort_u64(samples, n);
    out->value = (double)slb_percentile(samples, n, 0.50);
    out->p99 = (double)slb_percentile(samples, n, 0.99);
    out->p999 = (double)slb_percentile(samples, n, 0.999);
    out->msgs = n;
    free(samples);
}

/* ---- throughput --------------------------------------------------------- */

static void *produce(void *arg)
{
    ipc_job *j = arg;
    const slb_run *r = j->run;
    const slb_ops *o = r->ops;
    size_t words = r->elem / 8;
    pin_peer(r);
    void *h = attach(o, j->ab, true);
    uint64_t m[SLB_WORDS_MAX], i = 0;
    slb_gate_wait(&j->sh->gate);
    uint64_t end = slb_now_ns() + j->run_ns, s0 = sleeps_now();
    for (; i < SLB_SEQ_MASK && !slb_time_up(i, end); i++) {
        slb_fill(m, words, 0, i);
        slb_send(o, j->ab, h, m, true);
    }
    atomic_store_explicit(&j->sh->peer_sleeps, sleeps_now() - s0, memory_order_relaxed);
    atomic_store_explicit(&j->sh->peer_count, i, memory_order_relaxed);
    slb_fill_sentinel(m, words);
    slb_send(o, j->ab, h, m, true);
    detach(o, j->ab, h);
    return NULL;
}

static void run_tput(const ipc_contender *c, ipc_job *j, slb_result *out)
{
    const slb_run *r = j->run;
    const slb_ops *o = r->ops;
    ipc_peer p;
    peer_start(&p, c->forked, produce, j);
    slb_check chk;
    slb_check_init(&chk, r, 1, SLB_SEQ_MASK, true);
    void *h = attach(o, j->ab, false);
    uint64_t m[SLB_WORDS_MAX];
    uint64_t t0 = slb_gate_open(&j->sh->gate, 1), s0 = sleeps_now();
    for (;;) {
        slb_recv(o, j->ab, h, m, true);
        if (m[0] == SLB_SENTINEL)
            break;
        slb_check_msg(&chk, m);
    }
    uint64_t ns = slb_now_ns() - t0;
    j->sleeps = sleeps_now() - s0;
    detach(o, j->ab, h);
    peer_finish(&p, o->name);
    /* The count was stored before the sentinel was sent, and the peer has
     * exited (or been joined) since: no ordering is left to ask for. */
    uint64_t sent = atomic_load_explicit(&j->sh->peer_count, memory_order_relaxed);
    if (chk.count != sent || chk.sum != slb_expected_sum(1, sent))
        slb_die(o->name, "%s: %llu messages sent, %llu received (or a wrong checksum)",
                r->label, (unsigned long long)sent, (unsigned long long)chk.count);
    slb_check_free(&chk);
    slb_expect_empty(r, j->ab);
    out->value = ns ? (double)sent * 1e3 / (double)ns : 0; /* Mmsg/s */
    out->msgs = sent;
}

/* ---- one run ------------------------------------------------------------- */

bool slb_ipc_run(const ipc_contender *c, const slb_run *r, uint64_t run_ns, ipc_shared *sh,
                 slb_result *out, ipc_tally *tally)
{
    const slb_ops *o = c->ops;
    bool two = r->test == SLB_PINGPONG;
    memset(out, 0, sizeof(*out));
    /* Relaxed: no peer runs yet; its fork or thread start orders these
     * before everything it does. */
    atomic_store_explicit(&sh->gate.ready, 0, memory_order_relaxed);
    atomic_store_explicit(&sh->gate.go, false, memory_order_relaxed);
    atomic_store_explicit(&sh->peer_count, 0, memory_order_relaxed);
    atomic_store_explicit(&sh->peer_sleeps, 0, memory_order_relaxed);
    ipc_job j = { .run = r, .sh = sh, .run_ns = run_ns };
    j.ab = o->create(r->capacity, r->elem);
    j.ba = two ? o->create(r->capacity, r->elem) : NULL;
    bool ok = j.ab && (j.ba || !two);
    if (ok) {
        slb_watchdog_arm(r->timeout_s, "\nsl-bench: FAILED — contender '%s' did not finish "
                         "%s within %u s: a lost message or a deadlock\n", o->name, r->label,
                         r->timeout_s);
        if (two)
            run_pingpong(c, &j, out);
        else
            run_tput(c, &j, out);
        slb_watchdog_disarm();
        tally->sleeps += j.sleeps + atomic_load_explicit(&sh->peer_sleeps,
                                                         memory_order_relaxed);
        tally->moved += out->msgs;
    }
    if (j.ab)
        o->destroy(j.ab);
    if (j.ba)
        o->destroy(j.ba);
    return ok;
}
