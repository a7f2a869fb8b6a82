/*
 * overwrite.c — the overwrite workload: P producers flood a bounded ring that
 * never refuses a push (when full it displaces its oldest message), and C
 * consumers take what is left.
 *
 * Such a ring cannot be timed like a queue: its producers never wait, so
 * "messages moved per second" would count messages nobody received. Two
 * figures instead:
 *   - the send rate: messages pushed per second, from the common start to the
 *     last producer's end — the cost of a push that must never block, which
 *     is what a telemetry or logging producer buys an overwrite ring for;
 *   - the fraction delivered: received by the consumers over sent; the rest
 *     was displaced. A ring that sends fast by starving its consumers shows
 *     it here.
 *
 * Verification. Every message leaves the ring exactly once: received by a
 * consumer, displaced (push_evict hands it back to the pushing producer), or
 * left inside at the end (the timing thread drains it). So:
 *   - every thread that takes messages (consumers, and producers for what
 *     they displace) checks each one's header and payload, and that each
 *     producer's sequence numbers strictly increase among the messages it
 *     takes: the ring is FIFO per producer and one thread's takes are ordered,
 *     so a repeat within a thread is a duplicate;
 *   - per producer, received + displaced + left == sent, exactly;
 *   - the checksum of everything taken equals that of everything sent, so a
 *     duplicate seen by one thread cannot hide behind a loss seen by another.
 *
 * Consumers spin with the common backoff (msg.h). One stops when a pop finds
 * the ring empty after every producer had finished: every push is then
 * complete, so whatever is still inside has been claimed by another taker.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"

/* One thread's share of the verification. */
typedef struct ow_taker {
    slb_check chk;     /* header, payload, per-producer order, count, checksum */
    uint64_t *per;     /* per producer: messages this thread took */
} ow_taker;

typedef struct ow_shared {
    const slb_run *run;
    void *q;
    uint64_t per_producer; /* planned; producers may stop early (cap_ns) */
    slb_gate gate;
    _Atomic unsigned producers_done;
} ow_shared;

typedef struct ow_thread {
    ow_shared *s;
    unsigned id;
    int cpu;                /* -1: not pinned */
    uint64_t sent, end_ns;  /* producers: messages pushed, when the last one returned */
    ow_taker take;          /* consumers: received; producers: displaced */
    pthread_t tid;
} ow_thread;

static void taker_init(ow_taker *t, const slb_run *r, uint64_t per_producer)
{
    /* Never "exact" (no sequence skipped): displacement skips by design. */
    slb_check_init(&t->chk, r, r->producers, per_producer, false);
    t->per = calloc(r->producers, sizeof(uint64_t));
    if (!t->per)
        slb_die(r->ops->name, "out of memory");
}

static void taker_free(ow_taker *t)
{
    slb_check_free(&t->chk);
    free(t->per);
}

static inline void take(ow_taker *t, const uint64_t *m)
{
    slb_check_msg(&t->chk, m); /* dies unless the producer field is in range */
    t->per[(m[0] >> SLB_SEQ_BITS) - 1]++;
}

/* ---- the threads -------------------------------------------------------- */

static void *ow_producer(void *arg)
{
    ow_thread *t = arg;
    ow_shared *s = t->s;
    const slb_ops *o = s->run->ops;
    size_t words = s->run->elem / 8;
    uint64_t m[SLB_WORDS_MAX], ev[SLB_WORDS_MAX], seq;
    if (t->cpu >= 0)
        slb_pin_self(t->cpu);
    void *h = o->attach ? o->attach(s->q, true) : NULL;
    /* A copy on this thread's stack: the thread array is shared, and a
     * neighbour's counters must not share a cache line with ours. */
    ow_taker tk = t->take;
    slb_gate_wait(&s->gate);
    uint64_t end = s->run->cap_ns ? slb_now_ns() + s->run->cap_ns : UINT64_MAX;
    for (seq = 0; seq < s->per_producer && !slb_time_up(seq, end); seq++) {
        slb_fill(m, words, t->id, seq);
        if (o->push_evict(s->q, h, m, ev))
            take(&tk, ev);
    }
    t->end_ns = slb_now_ns();
    t->sent = seq;
    t->take = tk;
    if (o->detach)
        o->detach(s->q, h);
    atomic_fetch_add(&s->producers_done, 1);
    return NULL;
}

static void *ow_consumer(void *arg)
{
    ow_thread *t = arg;
    ow_shared *s = t->s;
    const slb_ops *o = s->run->ops;
    uint64_t m[SLB_WORDS_MAX];
    if (t->cpu >= 0)
        slb_pin_self(t->cpu);
    void *h = o->attach ? o->attach(s->q, false) : NULL;
    ow_taker tk = t->take;
    unsigned spins = 0;
    slb_gate_wait(&s->gate);
    for (;;) {
        /* Read before the pop, so that an empty pop comes after every push. */
        bool done = atomic_load(&s->producers_done) == s->run->producers;
        if (o->try_pop(s->q, h, m)) {
            take(&tk, m);
            spins = 0;
            continue;
        }
        if (done)
            break;
        slb_backoff(&spins);
    }
    t->take = tk;
    if (o->detach)
        o->detach(s->q, h);
    return NULL;
}

/* ---- after the run ------------------------------------------------------ */

/* Per producer, everything taken must be exactly what was sent; then the
 * checksum. Returns how many the consumers received. */
static uint64_t verify(const slb_run *r, const ow_thread *th, const ow_taker *left,
                       uint64_t per_producer)
{
    unsigned np = r->producers, nt = r->producers + r->consumers;
    uint64_t sent[SLB_MAX_THREADS], sum = left->chk.sum, received = 0;
    for (unsigned p = 0; p < np; p++) {
        uint64_t took = left->per[p];
        for (unsigned i = 0; i < nt; i++)
            took += th[i].take.per[p];
        sent[p] = th[p].sent;
        if (took != sent[p])
            slb_die(r->ops->name, "%s: producer %u sent %llu messages, and %llu came out "
                    "(received, displaced or left inside): %s", r->label, p,
                    (unsigned long long)sent[p], (unsigned long long)took,
                    took < sent[p] ? "messages were lost" : "messages were duplicated");
    }
    for (unsigned i = 0; i < nt; i++) {
        sum += th[i].take.chk.sum;
        if (i >= np)
            received += th[i].take.chk.count;
    }
    if (sum != slb_sent_sum(np, sent, per_producer))
        slb_die(r->ops->name, "%s: the checksum of the messages received, displaced and "
                "left does not match what was sent (some lost and others duplicated)",
                r->label);
    return received;
}

/* Whatever the consumers left (nothing, when they stop as described above)
 * counts as taken, not as delivered. */
static void drain(const slb_run *r, void *q, ow_taker *left)
{
    uint64_t m[SLB_WORDS_MAX];
    while (r->ops->try_pop(q, NULL, m))
        take(left, m);
}

/* ---- the run ------------------------------------------------------------ */

static void start_threads(const slb_run *r, ow_shared *s, ow_thread *th)
{
    for (unsigned i = 0; i < r->producers + r->consumers; i++) {
        bool producer = i < r->producers;
        th[i].s = s;
        th[i].id = producer ? i : i - r->producers;
        /* As in tput.c: producer k on CPU 2k, consumer k on CPU 2k+1. */
        th[i].cpu = slb_cpu_for(r, producer ? 2 * th[i].id : 2 * th[i].id + 1);
        taker_init(&th[i].take, r, s->per_producer);
        slb_spawn(&th[i].tid, producer ? ow_producer : ow_consumer, &th[i], r->ops->name);
    }
}

static void fill_result(const slb_run *r, const ow_thread *th, uint64_t t0,
                        uint64_t received, slb_result *out)
{
    uint64_t sent = 0, t1 = t0 + 1;
    for (unsigned p = 0; p < r->producers; p++) {
        sent += th[p].sent;
        t1 = th[p].end_ns > t1 ? th[p].end_ns : t1;
    }
    out->msgs = sent;
    out->value = (double)sent / ((double)(t1 - t0) / 1e9) / 1e6;
    out->delivered = sent ? (double)received / (double)sent : 0;
    out->p99 = out->p999 = 0;
}

bool slb_run_overwrite(const slb_run *r, slb_result *out)
{
    unsigned nt = r->producers + r->consumers;
    ow_shared *s = aligned_alloc(64, (sizeof(ow_shared) + 63) / 64 * 64);
    ow_thread *th = calloc(nt, sizeof(ow_thread));
    void *q = r->ops->create(r->capacity, r->elem);
    if (!q || !s || !th) {
        free(s);
        free(th);
        if (q)
            r->ops->destroy(q);
        return false;
    }
    memset(s, 0, sizeof(*s));
    s->run = r;
    s->q = q;
    s->per_producer = r->msgs / r->producers;

    start_threads(r, s, th);
    uint64_t t0 = slb_gate_open(&s->gate, nt);
    for (unsigned i = 0; i < nt; i++)
        slb_join(th[i].tid);

    ow_taker left;
    taker_init(&left, r, s->per_producer);
    drain(r, q, &left);
    uint64_t received = verify(r, th, &left, s->per_producer);
    fill_result(r, th, t0, received, out);
    taker_free(&left);
    for (unsigned i = 0; i < nt; i++)
        taker_free(&th[i].take);
    r->ops->destroy(q);
    free(th);
    free(s);
    return true;
}
