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
 * The kill loop: producer and consumer processes (each a registered sender,
 * or one receiving thread in a registered receiver) are killed with SIGKILL
 * at random instants and replaced, for many rounds, while the parent holds
 * a registered sender and a registered receiver of its own (so the looks
 * that reclaim dead receivers must never close the channel while one
 * lives); then it frees its sender and kills the last producers, and the
 * consumers must learn by themselves that the last sender is gone. Before
 * that, SL_MPMC of 64 bytes (the swap form) kills its producers once with
 * none replacing them, and the spare table must be whole within a few
 * looks: every spare a killed producer held comes back. Every
 * message a producer was told was sent is received exactly once, except at
 * most one per killed consumer (the one it had taken: sluice/shm.h); the
 * message a killed producer was sending arrives once or not at all.
 *
 * The close under senders: two producer processes of twelve sending
 * threads each (more than a record's ten lanes) send while the parent
 * closes the channel at a random instant; every send that returned SL_OK
 * is received exactly once, and no other.
 *
 * Send and receive forms are mixed at random: blocking, timed (with the
 * stress suites' time-outs, 0 included), and batches. With fault injection
 * (the faults preset) each process stalls at every atomic step. Under TSan
 * the receiving threads of one process are checked against each other;
 * TSan does not see the other processes.
 */
#include "harness.h"
#include "stress_common.h"

#include <sluice/park.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sluice/select.h>
#include <sluice/shm.h>

#define MAX_PROCS 4
#define MAX_THREADS 2
#define BATCH 8
#define MSG_MAX 320 /* the largest message of k_cfgs */

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
    {SL_MPMC, 300, MPMC_PROCS, MPMC_PROCS, 2}, /* copied straight into the receiver's buffer */
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

/* A select, fair or biased, over the shared channel (case 1) and an
 * in-process channel `idle` that is never ready (empty for a receive, full
 * for a send), so that the shared case is the one taken: SL_TIMEDOUT when
 * nothing was in time, else the shared case's status. */
static sl_status select_shared(const run *r, sl_chan *ch, sl_chan *idle, sl_select_op op,
                               void *buf, sl_test_rng *rng)
{
    unsigned char other[64] = {0};
    sl_select_case c[] = {{idle, op, other}, {ch, op, buf}};
    uint64_t t = k_timeouts[sl_test_rng_next(rng) % N_TIMEOUTS];
    size_t idx = 2;
    sl_status st = sl_test_rng_next(rng) % 2 ? sl_select_biased(c, 2, t, &idx)
                                             : sl_select(c, 2, t, &idx);
    if (st != SL_TIMEDOUT && idx != 1)
        fail_at(r->t, 6); /* the never-ready case taken */
    return st;
}

/* The in-process channel of select_shared: full for a sender. */
static sl_chan *idle_chan(const run *r, bool full)
{
    sl_chan *l = NULL;
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 64, .capacity = 1};
    unsigned char one[64] = {0};
    if (sl_chan_new(&l, &o) != SL_OK || (full && sl_chan_try_send(l, one) != SL_OK))
        fail_at(r->t, 7);
    return l;
}

static void produce(const run *r, unsigned p)
{
    sl_chan *ch = open_own(r);
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed + p);
    unsigned char batch[BATCH * MSG_MAX];
    sl_chan *idle = idle_chan(r, true);
    for (uint64_t s = 0; ch && idle && s < r->n;) {
        size_t k = msg_batch(batch, r->opts.elem_size, p, s, r->n - s, BATCH, &rng);
        size_t sent = 0;
        uint64_t pick = sl_test_rng_next(&rng) % 5;
        if (pick == 4)
            sent = select_shared(r, ch, idle, SL_SEL_SEND, batch, &rng) == SL_OK;
        else if (pick == 0)
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
    sl_chan_free(idle);
    sl_chan_free(ch);
}

/* One receiver: until SL_CLOSED, checking each message and its producer's order. */
static void *receive(void *arg)
{
    const run *r = ((void **)arg)[0];
    sl_chan *ch = ((void **)arg)[1];
    sl_chan *idle = ((void **)arg)[2];
    uint64_t next[MAX_PROCS] = {0};
    unsigned char buf[BATCH * MSG_MAX];
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed ^ (uintptr_t)arg);
    for (;;) {
        size_t got = 0;
        uint64_t pick = sl_test_rng_next(&rng) % 3;
        sl_status st = pick == 0   ? sl_chan_recv_n(ch, buf, BATCH, &got)
                       : pick == 1 ? sl_chan_recv_for(ch, buf, k_timeouts[sl_test_rng_next(&rng) %
                                                                         N_TIMEOUTS])
                                   : select_shared(r, ch, idle, SL_SEL_RECV, buf, &rng);
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
    void *args[MAX_THREADS][3];
    sl_chan *idle = idle_chan(r, false);
    for (unsigned i = 0; i < r->cfg->threads; i++) {
        args[i][0] = (void *)r, args[i][1] = ch, args[i][2] = idle;
        if (pthread_create(&thr[i], NULL, receive, args[i]) != 0)
            fail_at(r->t, 5);
    }
    for (unsigned i = 0; i < r->cfg->threads; i++)
        pthread_join(thr[i], NULL);
    sl_chan_free(idle);
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

/* The books every process writes (an anonymous shared mapping, made before
 * the forks) and the channel, created in a memfd: its descriptor. */
static int books_and_channel(void **books, size_t bytes, sl_chan **ch, const sl_chan_opts *o)
{
    *books = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(*books, MAP_FAILED);
    ck_assert_int_eq(sl_chan_shm_create(ch, NULL, o, 0), SL_OK);
    return sl_chan_shm_fd(*ch);
}

START_TEST(test_exactly_once_across_processes)
{
    const shm_cfg *c = &k_cfgs[_i];
    run r = {.cfg = c, .n = sl_test_scaled(60000, 3000),
             .seed = sl_test_seed("stress_shm", "exactly_once")};
    r.opts = (sl_chan_opts){.flavor = c->flavor, .elem_size = c->esz, .capacity = 64};
    size_t bytes = sizeof(tally) + c->producers * r.n;
    sl_chan *ch;
    r.fd = books_and_channel((void **)&r.t, bytes, &ch, &r.opts);
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

/* ---- the kill loop ----------------------------------------------------------- */
#define LIFE_MAX ((uint64_t)1 << 17) /* messages one producer life may send */

typedef struct kill_tally {
    atomic_uint bad;
    atomic_uint_fast64_t sent_upto[64]; /* per producer life: sends that returned SL_OK */
    atomic_uchar seen[];                /* per message id: life * LIFE_MAX + seq */
} kill_tally;

typedef struct kill_run {
    sl_chan_opts opts;
    int fd;
    kill_tally *t;
} kill_run;

static void kill_fail(kill_tally *t, unsigned step)
{
    unsigned none = 0;
    atomic_compare_exchange_strong(&t->bad, &none, step);
}

static void kill_producer(const kill_run *r, unsigned life)
{
    sl_chan *ch;
    unsigned char buf[MSG_MAX];
    sl_status opened = sl_chan_shm_open_fd(&ch, r->fd, &r->opts);
    sl_status registered = opened == SL_OK ? sl_chan_shm_sender(ch) : opened;
    if (registered != SL_OK) {
        fprintf(stderr, "producer life %u: open or register: %s\n", life,
                sl_status_str(registered));
        kill_fail(r->t, 10);
    }
    for (uint64_t s = 0; s < LIFE_MAX; s++) {
        sl_test_seq_fill(buf, r->opts.elem_size, life * LIFE_MAX + s);
        sl_status st = s % 3 ? sl_chan_send(ch, buf) : sl_chan_send_for(ch, buf, 10 * MS);
        if (st == SL_TIMEDOUT) {
            s--;
            continue;
        }
        if (st != SL_OK)
            kill_fail(r->t, 11); /* SL_CLOSED: closed while the parent's receiver lives */
        atomic_store(&r->t->sent_upto[life], s + 1);
    }
    pause(); /* until killed */
}

static void kill_consumer(const kill_run *r)
{
    sl_chan *ch;
    unsigned char buf[MSG_MAX];
    if (sl_chan_shm_open_fd(&ch, r->fd, &r->opts) != SL_OK)
        kill_fail(r->t, 12);
    sl_status reg = sl_chan_shm_receiver(ch); /* SL_CLOSED: spawned as the run ends */
    if (reg != SL_OK && reg != SL_CLOSED)
        kill_fail(r->t, 15);
    for (uint64_t i = 0;; i++) {
        sl_status st = i % 2 ? sl_chan_recv(ch, buf) : sl_chan_recv_for(ch, buf, 5 * MS);
        if (st == SL_CLOSED)
            break;
        if (st != SL_OK)
            continue;
        uint64_t id = r->opts.elem_size >= 8 ? sl_test_seq_low(buf, r->opts.elem_size) : 0;
        if (id >= 64 * LIFE_MAX || !sl_test_seq_is(buf, r->opts.elem_size, id))
            kill_fail(r->t, 13); /* torn or foreign */
        else if (atomic_fetch_add(&r->t->seen[id], 1) != 0)
            kill_fail(r->t, 14); /* a duplicate */
    }
    sl_chan_free(ch);
}

static pid_t kill_spawn(const kill_run *r, bool producer, unsigned life)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        signal(SIGALRM, SIG_DFL);
        alarm(60);
        producer ? kill_producer(r, life) : kill_consumer(r);
        _exit(0);
    }
    return pid;
}

static void kill_reap(pid_t pid, bool killed)
{
    int ws = 0;
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    if (killed)
        ck_assert_msg(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL, "not killed: %d", ws);
    else
        ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "a consumer ended with %d", ws);
}

/* Counts the messages lost, checking the rest of the books. */
static uint64_t kill_books(const kill_tally *t, unsigned lives)
{
    uint64_t lost = 0;
    for (unsigned life = 0; life < lives; life++) {
        uint64_t upto = atomic_load(&t->sent_upto[life]);
        for (uint64_t s = 0; s < LIFE_MAX; s++) {
            unsigned char n = t->seen[life * LIFE_MAX + s];
            if (s < upto)
                lost += n == 0;
            else if (n != 0 && !(s == upto && n == 1)) /* ck_assert per message: too slow */
                ck_abort_msg("life %u message %llu never sent, received", life, ULL(s));
        }
    }
    return lost;
}

/* SL_MPMC's swap form (over 8 bytes), read from the segment as
 * docs/shm-layout.md gives it (an independent reading; cap <= 64, so as
 * many spares as cells): whether each of the 2 x cap slots is in exactly one place, a cell or a free spare entry,
 * with no entry held. Meaningful while nobody pushes. */
static bool spares_whole(int fd, size_t esz, size_t cap)
{
    size_t lap = 2;
    while (lap <= cap)
        lap *= 2;
    size_t spares_at = (6144 + 16 * lap + 63) / 64 * 64;
    size_t len = spares_at + 8 * cap;
    unsigned char *raw = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    ck_assert_ptr_ne(raw, MAP_FAILED);
    unsigned places[256] = {0};
    ck_assert_uint_le(2 * cap, 256);
    bool whole = true;
    for (size_t i = 0; i < 2 * cap && whole; i++) {
        uint64_t w;
        memcpy(&w, i < cap ? raw + 6144 + 16 * i + 8 : raw + spares_at + 8 * (i - cap), 8);
        whole = w < 2 * cap && places[w]++ == 0;
    }
    munmap(raw, len);
    return whole;
}

/* The producers killed with no new ones: within a few looks (the
 * consumers' waits make them), every spare a killed producer held is back
 * (docs/guarantees.md, "Send, holding a spare"). */
static void spares_come_back(const kill_run *r, pid_t *prod, unsigned procs)
{
    for (unsigned i = 0; i < procs; i++) {
        kill(prod[i], SIGKILL);
        kill_reap(prod[i], true);
    }
    uint64_t until = sl_now_ns() + (uint64_t)sl_test_scaled(5, 2) * 1000000000u;
    while (!spares_whole(r->fd, r->opts.elem_size, r->opts.capacity)) {
        ck_assert_msg(sl_now_ns() < until, "spares held by killed producers never came back");
        usleep(10 * 1000);
    }
}

START_TEST(test_kill_loop)
{
    const shm_cfg *c = &k_cfgs[_i];
    unsigned procs = c->flavor == SL_SPSC ? 1 : MPMC_PROCS; /* TSan: see above */
    kill_run r = {.opts = {.flavor = c->flavor, .elem_size = c->esz, .capacity = 64}};
    size_t bytes = sizeof(kill_tally) + 64 * LIFE_MAX;
    r.t = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(r.t, MAP_FAILED);
    sl_chan *ch, *rx;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &r.opts, 0), SL_OK);
    ck_assert_int_eq(sl_chan_shm_sender(ch), SL_OK); /* open while lives are replaced */
    r.fd = sl_chan_shm_fd(ch);
    ck_assert_int_eq(sl_chan_shm_open_fd(&rx, r.fd, &r.opts), SL_OK);
    ck_assert_int_eq(sl_chan_shm_receiver(rx), SL_OK); /* and while consumers die */
    sl_test_rng rng;
    sl_test_rng_seed(&rng, sl_test_seed("stress_shm", "kill_loop"));
    pid_t prod[2], cons[2];
    unsigned lives = 0, consumer_deaths = 0;
    for (unsigned i = 0; i < procs; i++)
        cons[i] = kill_spawn(&r, false, 0), prod[i] = kill_spawn(&r, true, lives++);
    unsigned rounds = (unsigned)sl_test_scaled(40, 12);
    for (unsigned round = 0; round < rounds && lives + procs < 64; round++) {
        usleep(500 + sl_test_rng_next(&rng) % 4000);
        unsigned who = (unsigned)(sl_test_rng_next(&rng) % procs);
        bool producer = sl_test_rng_next(&rng) % 2;
        pid_t *slot = producer ? &prod[who] : &cons[who];
        kill(*slot, SIGKILL);
        kill_reap(*slot, true);
        consumer_deaths += !producer;
        *slot = kill_spawn(&r, producer, producer ? lives++ : 0);
    }
    if (c->flavor == SL_MPMC && c->esz > 8) {
        spares_come_back(&r, prod, procs);
        for (unsigned i = 0; i < procs; i++)
            prod[i] = kill_spawn(&r, true, lives++);
        /* Registered (a send made) before the parent's registration goes
         * below: else the channel closes with no sender registered, and a
         * producer still starting up is refused with SL_CLOSED. */
        for (unsigned life = lives - procs, waited = 0; life < lives && waited < 10000; life++)
            while (atomic_load(&r.t->sent_upto[life]) == 0 && waited++ < 10000)
                usleep(1000);
    }
    usleep(2000);
    sl_chan_free(ch); /* the parent's registration goes; the producers' stay */
    for (unsigned i = 0; i < procs; i++) {
        kill(prod[i], SIGKILL);
        kill_reap(prod[i], true);
    }
    for (unsigned i = 0; i < procs; i++) /* they learn the last sender is gone */
        kill_reap(cons[i], false);
    sl_chan_free(rx);
    ck_assert_msg(atomic_load(&r.t->bad) == 0, "failed at step %u", atomic_load(&r.t->bad));
    uint64_t lost = kill_books(r.t, lives), sent = 0;
    for (unsigned life = 0; life < lives; life++)
        sent += atomic_load(&r.t->sent_upto[life]);
    ck_assert_msg(lost <= consumer_deaths, "%llu lost, %u consumers killed", ULL(lost),
                  consumer_deaths);
    printf("[stress_shm kill_loop] %s %zu-byte: %u producer lives, %u consumers killed, "
           "%llu sent, %llu lost\n",
           c->flavor == SL_SPSC ? "SL_SPSC" : "SL_MPMC", c->esz, lives, consumer_deaths,
           ULL(sent), ULL(lost));
    sl_test_account("messages through SIGKILLed processes", sent - lost);
    munmap(r.t, bytes);
}
END_TEST

/* ---- a close under many sending threads ------------------------------------
 * Producer processes of SEND_THREADS threads each, more than a record's ten
 * lanes (so a process's last threads mark the record's count), send while
 * the parent closes the channel at a random instant; receiving threads in
 * consumer processes drain it to SL_CLOSED. Every send that returned SL_OK
 * is received exactly once, in its thread's order, and no other: a
 * receiver that answered SL_CLOSED while a send that saw the channel open
 * was still landing (its mark unread, or cleared by another thread's
 * unmark) leaves that send's message unreceived, and the books show it. */
#define SEND_THREADS 12
#define CU_IDS (MAX_PROCS * SEND_THREADS)

typedef struct cu_tally {
    atomic_uint bad;
    atomic_uint_fast64_t sent[CU_IDS]; /* per sending thread: its SL_OK messages */
    atomic_uint_fast64_t received;
    atomic_uchar seen[];               /* id * n + seq */
} cu_tally;

typedef struct cu_run {
    sl_chan_opts opts;
    int fd;
    unsigned producers, consumers;
    uint64_t n, seed;
    cu_tally *t;
    sl_chan *ch;   /* a producer's handle, shared by its threads */
    unsigned proc; /* which producer process */
    sl_test_barrier start; /* a producer's threads start together */
} cu_run;

typedef struct cu_sender {
    cu_run *r;
    unsigned id;
} cu_sender;

static void *cu_send(void *arg)
{
    cu_sender *a = arg;
    cu_run *r = a->r;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r->seed + a->id);
    unsigned char batch[BATCH * MSG_MAX];
    sl_test_barrier_wait(&r->start);
    for (uint64_t s = 0; s < r->n;) {
        size_t k = msg_batch(batch, r->opts.elem_size, a->id, s, r->n - s, BATCH, &rng);
        size_t sent = 0;
        sl_status st = SL_OK;
        uint64_t pick = sl_test_rng_next(&rng) % 3;
        if (pick == 0)
            sent = sl_chan_try_send_n(r->ch, batch, k);
        else if ((st = pick == 1 ? sl_chan_send(r->ch, batch)
                                 : sl_chan_send_for(r->ch, batch, 1000000)) == SL_OK)
            sent = 1;
        s += sent;
        atomic_store(&r->t->sent[a->id], s);
        if (st == SL_CLOSED || (sent == 0 && pick == 0 && sl_chan_is_closed(r->ch)))
            break;
    }
    return NULL;
}

static void cu_produce(cu_run *r)
{
    if (sl_chan_shm_open_fd(&r->ch, r->fd, &r->opts) != SL_OK) {
        atomic_store(&r->t->bad, 1);
        return;
    }
    pthread_t thr[SEND_THREADS];
    cu_sender a[SEND_THREADS];
    sl_test_barrier_init(&r->start, SEND_THREADS);
    for (unsigned k = 0; k < SEND_THREADS; k++) {
        a[k] = (cu_sender){r, r->proc * SEND_THREADS + k};
        if (pthread_create(&thr[k], NULL, cu_send, &a[k]) != 0)
            atomic_store(&r->t->bad, 2);
    }
    for (unsigned k = 0; k < SEND_THREADS; k++)
        pthread_join(thr[k], NULL);
    sl_chan_free(r->ch);
}

static void *cu_receive(void *arg)
{
    cu_run *r = arg;
    uint64_t next[CU_IDS] = {0};
    unsigned char buf[MSG_MAX];
    unsigned ids = r->producers * SEND_THREADS;
    for (;;) {
        sl_status st = sl_chan_recv(r->ch, buf);
        if (st == SL_CLOSED)
            return NULL;
        uint32_t p;
        uint64_t s;
        char why[128];
        if (st != SL_OK || !msg_parse(buf, r->opts.elem_size, ids, r->n, &p, &s, why, sizeof why) ||
            s < next[p]) {
            atomic_store(&r->t->bad, 3); /* failed, torn, foreign, or out of order */
            return NULL;
        }
        next[p] = s + 1;
        if (atomic_fetch_add(&r->t->seen[p * r->n + s], 1) != 0)
            atomic_store(&r->t->bad, 4); /* a duplicate */
        atomic_fetch_add(&r->t->received, 1);
    }
}

static void cu_consume(cu_run *r)
{
    if (sl_chan_shm_open_fd(&r->ch, r->fd, &r->opts) != SL_OK) {
        atomic_store(&r->t->bad, 5);
        return;
    }
    pthread_t thr[MAX_THREADS];
    for (unsigned i = 0; i < MAX_THREADS; i++)
        if (pthread_create(&thr[i], NULL, cu_receive, r) != 0)
            atomic_store(&r->t->bad, 6);
    for (unsigned i = 0; i < MAX_THREADS; i++)
        pthread_join(thr[i], NULL);
    sl_chan_free(r->ch);
}

static pid_t cu_spawn(cu_run *r, bool producer, unsigned proc)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        signal(SIGALRM, SIG_DFL); /* as spawn() */
        alarm(120);
        r->proc = proc;
        producer ? cu_produce(r) : cu_consume(r);
        _exit(0);
    }
    return pid;
}

static const size_t k_cu_sizes[] = {8, 64};

START_TEST(test_close_under_senders)
{
    cu_run r = {.producers = MPMC_PROCS, .consumers = MPMC_PROCS,
                .n = sl_test_scaled(100000, 20000),
                .seed = sl_test_seed("stress_shm", "close_under_senders")};
    r.opts = (sl_chan_opts){.flavor = SL_MPMC, .elem_size = k_cu_sizes[_i % 2], .capacity = 64};
    size_t bytes = sizeof(cu_tally) + (size_t)CU_IDS * r.n;
    sl_chan *ch;
    r.fd = books_and_channel((void **)&r.t, bytes, &ch, &r.opts);
    pid_t prod[MAX_PROCS], cons[MAX_PROCS];
    for (unsigned i = 0; i < r.consumers; i++)
        cons[i] = cu_spawn(&r, false, i);
    for (unsigned i = 0; i < r.producers; i++)
        prod[i] = cu_spawn(&r, true, i);
    sl_test_rng rng;
    sl_test_rng_seed(&rng, r.seed);
    usleep(2000 + sl_test_rng_next(&rng) % 20000); /* the senders under way */
    sl_chan_close(ch);
    join_all(prod, r.producers);
    join_all(cons, r.consumers);
    ck_assert_msg(atomic_load(&r.t->bad) == 0, "failed at step %u", atomic_load(&r.t->bad));
    uint64_t sent = 0;
    unsigned cut = 0; /* threads the close stopped (a fast one may finish first) */
    for (unsigned id = 0; id < r.producers * SEND_THREADS; id++) {
        uint64_t ok = atomic_load(&r.t->sent[id]);
        cut += ok < r.n;
        uint64_t s = 0;
        while (s < r.n && r.t->seen[id * r.n + s] == (s < ok))
            s++;
        ck_assert_msg(s == r.n, "thread %u: message %llu received %u times (%llu sent with SL_OK)",
                      id, ULL(s), s < r.n ? r.t->seen[id * r.n + s] : 0, ULL(ok));
        sent += ok;
    }
    ck_assert_uint_eq(atomic_load(&r.t->received), sent);
    ck_assert_msg(cut > 0, "every thread sent all %llu before the close: close it sooner", ULL(r.n));
    printf("[stress_shm close_under_senders] %zu-byte: %u x %u sending threads (%u stopped by the "
           "close), %llu sent before it, each received once\n",
           r.opts.elem_size, r.producers, SEND_THREADS, cut, ULL(sent));
    sl_test_account("messages sent under a close, across processes", sent);
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
    tcase_add_loop_test(tc, test_close_under_senders, 0, 4);
    suite_add_tcase(s, tc);
    tc = tcase_create("kill");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_kill_loop, 0, N_OF(k_cfgs));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sl_test_run(stress_shm_suite());
}
