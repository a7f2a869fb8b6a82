/*
 * tests/stress_shm.c — exactly-once delivery across processes (sluice/shm.h).
 *
 * Producer processes and consumer processes share one channel in a memfd
 * segment, each with its own handle opened from the descriptor; consumer
 * processes run several receiving threads (SL_MPMC). Every message is
 * (producer, check, seq); each receiver checks it is intact and that each
 * producer's messages reach it in order, and marks it in a tally shared by
 * all processes (an anonymous shared mapping made before the forks), which
 * catches a duplicate at once. After the producers exit the parent closes
 * the channel; the consumers drain it to SL_CLOSED; the parent then checks
 * every message was received exactly once and accounts for them.
 *
 * Send and receive forms are mixed at random: blocking, timed (with the
 * stress suites' time-outs, 0 included), and batches. With fault injection
 * (the faults preset) each process stalls at every atomic step. Under TSan
 * the receiving threads of one process are checked against each other;
 * TSan does not see the other processes.
 */
#include "harness.h"
#include "stress_common.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sluice/shm.h>

#define MAX_PROCS 4
#define MAX_THREADS 2
#define BATCH 8

typedef struct shm_cfg {
    sl_flavor flavor;
    size_t esz;
    unsigned producers, consumers, threads; /* processes, and receivers per consumer */
} shm_cfg;

#if defined(__SANITIZE_THREAD__)
#define SHM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHM_TSAN 1
#endif
#endif
#ifdef SHM_TSAN
#define MPMC_PROCS 1 /* see above: TSan's 16-byte atomics are per process */
#else
#define MPMC_PROCS 2
#endif

static const shm_cfg k_cfgs[] = {
    {SL_SPSC, 8, 1, 1, 1},
    {SL_SPSC, 64, 1, 1, 1},
    {SL_MPMC, 8, MPMC_PROCS, MPMC_PROCS, 2},
    {SL_MPMC, 64, MPMC_PROCS, MPMC_PROCS, 2},
};

/* What every process sees: in a MAP_SHARED anonymous mapping. */
typedef struct tally {
    atomic_uint bad;             /* the first failing step, 0 while none */
    atomic_uint_fast64_t received;
    atomic_uchar seen[];         /* producers * n, one per message */
} tally;

typedef struct run {
    const shm_cfg *cfg;
    sl_chan_opts opts;
    int fd;
    uint64_t n; /* messages per producer */
    tally *t;
    uint64_t seed;
} run;

static void fail_at(tally *t, unsigned step)
{
    unsigned none = 0;
    atomic_compare_exchange_strong(&t->bad, &none, step);
}

static sl_chan *open_own(const run *r)
{
    sl_chan *ch = NULL;
    if (sl_chan_shm_open_fd(&ch, r->fd, &r->opts) != SL_OK)
        fail_at(r->t, 1);
    return ch;
}

static void produce(const run *r, unsigned p)
{
    sl_chan *ch = open_own(r);
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed + p);
    unsigned char batch[BATCH * 64];
    for (uint64_t s = 0; ch && s < r->n;) {
        size_t k = msg_batch(batch, r->opts.elem_size, p, s, r->n - s, BATCH, &rng);
        size_t sent = 0;
        uint64_t pick = sl_test_rng_next(&rng) % 4;
        if (pick == 0)
            sent = sl_chan_try_send_n(ch, batch, k);
        else if (pick == 1)
            sent = sl_chan_send_for(ch, batch, k_timeouts[sl_test_rng_next(&rng) % N_TIMEOUTS]) ==
                   SL_OK;
        else
            sent = sl_chan_send(ch, batch) == SL_OK ? 1 : (fail_at(r->t, 2), 0);
        s += sent;
        if (atomic_load(&r->t->bad))
            break;
    }
    sl_chan_free(ch);
}

/* One receiver: until SL_CLOSED, checking each message and its producer's order. */
static void *receive(void *arg)
{
    const run *r = ((void **)arg)[0];
    sl_chan *ch = ((void **)arg)[1];
    uint64_t next[MAX_PROCS] = {0};
    unsigned char buf[BATCH * 64];
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (uintptr_t)arg);
    for (;;) {
        size_t got = 0;
        sl_status st = sl_test_rng_next(&rng) % 2
                           ? sl_chan_recv_n(ch, buf, BATCH, &got)
                           : sl_chan_recv_for(ch, buf, k_timeouts[sl_test_rng_next(&rng) % N_TIMEOUTS]);
        if (st == SL_OK && got == 0)
            got = 1;
        if (st == SL_CLOSED)
            return NULL;
        for (size_t i = 0; i < got; i++) {
            uint32_t p;
            uint64_t s;
            char why[128];
            if (!msg_parse(buf + i * r->opts.elem_size, r->opts.elem_size, r->cfg->producers, r->n,
                           &p, &s, why, sizeof why) || s < next[p]) {
                fail_at(r->t, 3); /* torn, foreign, or out of its producer's order */
                return NULL;
            }
            next[p] = s + 1;
            if (atomic_fetch_add(&r->t->seen[p * r->n + s], 1) != 0)
                fail_at(r->t, 4); /* a duplicate */
            atomic_fetch_add(&r->t->received, 1);
        }
    }
}

static void consume(const run *r)
{
    sl_chan *ch = open_own(r);
    if (!ch)
        return;
    pthread_t thr[MAX_THREADS];
    void *args[MAX_THREADS][2];
    for (unsigned i = 0; i < r->cfg->threads; i++) {
        args[i][0] = (void *)r, args[i][1] = ch;
        if (pthread_create(&thr[i], NULL, receive, args[i]) != 0)
            fail_at(r->t, 5);
    }
    for (unsigned i = 0; i < r->cfg->threads; i++)
        pthread_join(thr[i], NULL);
    sl_chan_free(ch);
}

static pid_t spawn(const run *r, bool producer, unsigned who)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* A hung process fails the run rather than the CI job; Check's
         * SIGALRM handler, inherited, would kill the whole process group. */
        signal(SIGALRM, SIG_DFL);
        alarm(120);
        producer ? produce(r, who) : consume(r);
        _exit(0);
    }
    return pid;
}

static void join_all(const pid_t *pids, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        int ws = 0;
        ck_assert_int_eq(waitpid(pids[i], &ws, 0), pids[i]);
        ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "a process died (signal %d)",
                      WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
    }
}

START_TEST(test_exactly_once_across_processes)
{
    const shm_cfg *c = &k_cfgs[_i];
    run r = {.cfg = c, .n = sl_test_scaled(60000, 3000),
             .seed = sl_test_seed("stress_shm", "exactly_once")};
    r.opts = (sl_chan_opts){.flavor = c->flavor, .elem_size = c->esz, .capacity = 64};
    size_t bytes = sizeof(tally) + c->producers * r.n;
    r.t = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(r.t, MAP_FAILED);
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &r.opts, 0), SL_OK);
    r.fd = sl_chan_shm_fd(ch);
    pid_t prod[MAX_PROCS], cons[MAX_PROCS];
    for (unsigned i = 0; i < c->consumers; i++)
        cons[i] = spawn(&r, false, i);
    for (unsigned i = 0; i < c->producers; i++)
        prod[i] = spawn(&r, true, i);
    join_all(prod, c->producers);
    sl_chan_close(ch);
    join_all(cons, c->consumers);
    ck_assert_msg(atomic_load(&r.t->bad) == 0, "failed at step %u", atomic_load(&r.t->bad));
    uint64_t want = c->producers * r.n;
    ck_assert_uint_eq(atomic_load(&r.t->received), want);
    for (uint64_t i = 0; i < want; i++)
        ck_assert_msg(r.t->seen[i] == 1, "message %llu received %u times", ULL(i), r.t->seen[i]);
    sl_test_account("messages exactly once across processes", want);
    sl_chan_free(ch);
    munmap(r.t, bytes);
}
END_TEST

static Suite *stress_shm_suite(void)
{
    Suite *s = suite_create("stress_shm");
    TCase *tc = tcase_create("processes");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_exactly_once_across_processes, 0, N_OF(k_cfgs));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sl_test_run(stress_shm_suite());
}
