/*
 * tput.c — the throughput runs: P producers and C consumers move a fixed
 * number of messages, one per call or SLB_BATCH per call, and the figure is
 * messages over the time from the common start to the last message received
 * (the consumers', or the timing thread's drain behind the sentinels).
 *
 * A run may be capped in time (run->cap_ns): producers then stop early and
 * the figure is what moved in that time. That keeps a contender that
 * collapses under oversubscription from eating the whole time budget.
 *
 * How consumers know they are done without putting a shared counter on the
 * hot path:
 *   - spinning contenders: each consumer counts locally and adds its count
 *     to a shared total only when it finds the queue empty; all stop once
 *     every producer has finished and the total reaches what they sent.
 *   - blocking contenders: after every producer has finished, the timing
 *     thread sends one sentinel per consumer; a consumer stops at its first.
 *     Queues that are FIFO only per producer may hand a sentinel out before
 *     another producer's last messages, so the timing thread then drains
 *     what is left with try_pop, inside the timed interval, and verifies it
 *     like any other receiver.
 * Every received message is verified (msg.h), and the totals and checksum
 * are compared with what was sent before the figure is accepted.
 *
 * The select workload runs here too, as a blocking one: its contender's
 * queue is a pair of channels, push selects a send over both and sel_pop a
 * receive (contender.h). A producer's messages keep their order per
 * channel only, so each receiver checks order with one slb_check per
 * channel (chk[0], chk[1]); counts and checksums add up over both.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "msg.h"

typedef struct tp_shared {
    const slb_run *run;
    void *q;
    uint64_t per_producer, total; /* planned; producers may stop early */
    bool block, batch;
    slb_gate gate;
    _Atomic uint64_t sent;        /* added by each producer when it is done */
    _Atomic unsigned producers_done;
    /* Its own line: consumers add to it while others read the gate. */
    _Alignas(64) _Atomic uint64_t consumed;
} tp_shared;

typedef struct tp_thread {
    tp_shared *s;
    unsigned id;
    int cpu;                 /* -1: not pinned */
    uint64_t sent;           /* producers: messages sent */
    slb_check chk[2];        /* consumers: per channel (select; else chk[0]),
                                copied in and out, never shared */
    pthread_t tid;
} tp_thread;

/* ---- helpers shared with latency.c (declared in msg.h) ---------------- */

void slb_check_fail(const slb_check *c, const uint64_t *m, const char *what)
{
    uint64_t w = m[0];
    slb_die(c->who, "%s: received %s: producer %u, sequence %llu (word %#llx), "
            "after %llu good messages", c->where, what,
            (unsigned)(w >> SLB_SEQ_BITS), (unsigned long long)(w & SLB_SEQ_MASK),
            (unsigned long long)w, (unsigned long long)c->count);
}

uint64_t slb_expected_sum(unsigned producers, uint64_t per_producer)
{
    static struct { unsigned p; uint64_t n, sum; } memo[16];
    static unsigned used;
    for (unsigned i = 0; i < used; i++)
        if (memo[i].p == producers && memo[i].n == per_producer)
            return memo[i].sum;
    uint64_t sum = 0;
    for (unsigned p = 0; p < producers; p++)
        for (uint64_t s = 0; s < per_producer; s++)
            sum += slb_mix(slb_msg_word(p, s));
    unsigned slot = used < 16 ? used++ : (unsigned)(per_producer % 16);
    memo[slot].p = producers;
    memo[slot].n = per_producer;
    memo[slot].sum = sum;
    return sum;
}

uint64_t slb_sent_sum(unsigned producers, const uint64_t *sent, uint64_t per_producer)
{
    bool all = true;
    for (unsigned p = 0; p < producers; p++)
        all &= sent[p] == per_producer;
    if (all)
        return slb_expected_sum(producers, per_producer);
    uint64_t sum = 0;
    for (unsigned p = 0; p < producers; p++)
        for (uint64_t seq = 0; seq < sent[p]; seq++)
            sum += slb_mix(slb_msg_word(p, seq));
    return sum;
}

uint64_t slb_gate_open(slb_gate *g, unsigned n)
{
    while (atomic_load(&g->ready) < n)
        sched_yield();
    uint64_t t0 = slb_now_ns();
    atomic_store_explicit(&g->go, true, memory_order_release);
    return t0;
}

void slb_expect_empty(const slb_run *r, void *q)
{
    uint64_t m[SLB_WORDS_MAX];
    if (r->ops->try_pop(q, NULL, m))
        slb_die(r->ops->name, "%s: the queue still held a message after every message "
                "sent had been received (word %#llx): a duplicate or an invented message",
                r->label, (unsigned long long)m[0]);
}

void slb_spawn(pthread_t *t, void *(*fn)(void *), void *arg, const char *who)
{
    if (pthread_create(t, NULL, fn, arg) != 0)
        slb_die(who, "cannot create a thread");
}

void slb_join(pthread_t t)
{
    pthread_join(t, NULL);
}

/* ---- producers ---------------------------------------------------------- */

static uint64_t produce_single(tp_shared *s, void *h, unsigned id, uint64_t end)
{
    const slb_ops *o = s->run->ops;
    size_t words = s->run->elem / 8;
    uint64_t m[SLB_WORDS_MAX], seq;
    for (seq = 0; seq < s->per_producer && !slb_time_up(seq, end); seq++) {
        slb_fill(m, words, id, seq);
        slb_send(o, s->q, h, m, s->block);
    }
    return seq;
}

static uint64_t produce_batched(tp_shared *s, void *h, unsigned id, uint64_t end)
{
    const slb_ops *o = s->run->ops;
    size_t words = s->run->elem / 8;
    static _Thread_local uint64_t buf[SLB_BATCH * SLB_WORDS_MAX];
    uint64_t seq;
    /* seq advances by whole batches, so slb_time_up sees every 8th batch start. */
    for (seq = 0; seq < s->per_producer && !slb_time_up(seq, end);) {
        size_t k = s->per_producer - seq < SLB_BATCH ? (size_t)(s->per_producer - seq) : SLB_BATCH;
        for (size_t i = 0; i < k; i++)
            slb_fill(buf + i * words, words, id, seq + i);
        unsigned spins = 0;
        for (size_t off = 0; off < k;) {
            size_t got = o->push_n(s->q, h, buf + off * words, k - off);
            if (got > k - off)
                slb_die(o->name, "push_n reported %zu sent of %zu", got, k - off);
            off += got;
            if (got == 0)
                slb_backoff(&spins);
            else
                spins = 0;
        }
        seq += k;
    }
    return seq;
}

static void *producer_main(void *arg)
{
    tp_thread *t = arg;
    tp_shared *s = t->s;
    const slb_ops *o = s->run->ops;
    if (t->cpu >= 0)
        slb_pin_self(t->cpu);
    void *h = o->attach ? o->attach(s->q, true) : NULL;
    slb_gate_wait(&s->gate);
    uint64_t end = s->run->cap_ns ? slb_now_ns() + s->run->cap_ns : UINT64_MAX;
    t->sent = s->batch ? produce_batched(s, h, t->id, end) : produce_single(s, h, t->id, end);
    if (o->detach)
        o->detach(s->q, h);
    /* Sent first: a consumer that sees every producer done reads the total. */
    atomic_fetch_add(&s->sent, t->sent);
    atomic_fetch_add(&s->producers_done, 1);
    return NULL;
}

/* ---- consumers ---------------------------------------------------------- */

#define LOST_AFTER_NS UINT64_C(5000000000)

/* A consumer that keeps finding the queue empty after every producer has
 * finished, while the total is short, is looking at lost messages. Five
 * seconds rule out a consumer that was descheduled before publishing its
 * count; without this the watchdog would only say "hang". */
static void check_lost(tp_shared *s, const slb_check *chk, uint64_t *idle_since,
                       unsigned *polls)
{
    if ((++*polls & 1023) != 0)
        return;
    uint64_t now = slb_now_ns();
    if (*idle_since == 0)
        *idle_since = now;
    else if (now - *idle_since > LOST_AFTER_NS)
        slb_die(s->run->ops->name, "%s: every producer finished, the queue stays empty, "
                "and only %llu of %llu messages arrived (this consumer: %llu): "
                "messages were lost", s->run->label,
                (unsigned long long)atomic_load(&s->consumed),
                (unsigned long long)atomic_load(&s->sent), (unsigned long long)chk->count);
}

static void consume_spinning(tp_shared *s, void *h, slb_check *chk)
{
    const slb_ops *o = s->run->ops;
    size_t words = s->run->elem / 8;
    bool sole = s->run->consumers == 1;
    static _Thread_local uint64_t buf[SLB_BATCH * SLB_WORDS_MAX];
    uint64_t flushed = 0, idle_since = 0;
    unsigned spins = 0, polls = 0;
    for (;;) {
        size_t got = s->batch ? o->pop_n(s->q, h, buf, SLB_BATCH)
                              : (size_t)o->try_pop(s->q, h, buf);
        if (got > 0) {
            if (got > SLB_BATCH)
                slb_die(o->name, "pop_n reported %zu messages for %u asked", got, SLB_BATCH);
            for (size_t i = 0; i < got; i++)
                slb_check_msg(chk, buf + i * words);
            slb_work(s->run->work * got);
            spins = 0;
            idle_since = 0;
            if (sole && chk->count >= s->total)
                return;
            continue;
        }
        /* Empty: publish what we have and see whether everyone is done. */
        if (chk->count != flushed) {
            atomic_fetch_add(&s->consumed, chk->count - flushed);
            flushed = chk->count;
        }
        if (atomic_load(&s->producers_done) == s->run->producers) {
            if (atomic_load(&s->consumed) >= atomic_load(&s->sent))
                return;
            check_lost(s, chk, &idle_since, &polls);
        }
        slb_backoff(&spins);
    }
}

static void consume_blocking(tp_shared *s, void *h, slb_check *chk)
{
    const slb_ops *o = s->run->ops;
    uint64_t m[SLB_WORDS_MAX];
    for (;;) {
        unsigned which = 1;
        if (o->sel_pop)
            which = o->sel_pop(s->q, h, m, true);
        else if (!o->pop(s->q, h, m))
            slb_die(o->name, "blocking pop failed");
        if (which < 1 || which > 2)
            slb_die(o->name, "a blocking select receive returned case %u", which);
        if (m[0] == SLB_SENTINEL)
            return;
        slb_check_msg(&chk[which - 1], m);
        slb_work(s->run->work);
    }
}

static void *consumer_main(void *arg)
{
    tp_thread *t = arg;
    tp_shared *s = t->s;
    const slb_ops *o = s->run->ops;
    if (t->cpu >= 0)
        slb_pin_self(t->cpu);
    void *h = o->attach ? o->attach(s->q, false) : NULL;
    slb_check chk[2] = { t->chk[0], t->chk[1] };
    slb_gate_wait(&s->gate);
    if (s->block)
        consume_blocking(s, h, chk);
    else
        consume_spinning(s, h, &chk[0]);
    t->chk[0] = chk[0];
    t->chk[1] = chk[1];
    if (o->detach)
        o->detach(s->q, h);
    return NULL;
}

/* ---- the run ------------------------------------------------------------ */

int slb_cpu_for(const slb_run *r, unsigned index)
{
    /* Producers and consumers alternate over the CPUs, so 1x1 gets CPUs 0
     * and 1 — two cores, never one core's two hardware threads by design. */
    static unsigned ncpu;
    if (!ncpu)
        ncpu = slb_ncpu();
    if (!r->pin || ncpu < 2)
        return -1;
    return (int)(index % ncpu);
}

/* After the consumers: drain what a per-producer-FIFO queue left behind the
 * sentinels (blocking runs), or insist on an empty queue (spinning runs). */
static void finish_queue(const slb_run *r, tp_shared *s, slb_check *rest)
{
    if (!s->block) {
        slb_expect_empty(r, s->q);
        return;
    }
    uint64_t m[SLB_WORDS_MAX];
    unsigned which;
    while ((which = r->ops->sel_pop ? r->ops->sel_pop(s->q, NULL, m, false)
                                    : r->ops->try_pop(s->q, NULL, m)) != 0) {
        if (m[0] == SLB_SENTINEL)
            slb_die(r->ops->name, "%s: an extra sentinel: one was delivered twice", r->label);
        slb_check_msg(&rest[which - 1], m);
    }
}

/* What the received checksum must be, given what each producer sent. */
static uint64_t sent_sum(const slb_run *r, const tp_thread *prod, uint64_t per_producer)
{
    uint64_t sent[SLB_MAX_THREADS];
    for (unsigned p = 0; p < r->producers; p++)
        sent[p] = prod[p].sent;
    return slb_sent_sum(r->producers, sent, per_producer);
}

static void verify_totals(const slb_run *r, const tp_thread *th, const slb_check *rest,
                          tp_shared *s)
{
    uint64_t count = 0, sum = 0, sent = atomic_load(&s->sent);
    for (unsigned c = 0; c < 2; c++) {
        count += rest[c].count;
        sum += rest[c].sum;
        for (unsigned i = r->producers; i < r->producers + r->consumers; i++) {
            count += th[i].chk[c].count;
            sum += th[i].chk[c].sum;
        }
    }
    if (count != sent)
        slb_die(r->ops->name, "%s: received %llu messages, %llu were sent", r->label,
                (unsigned long long)count, (unsigned long long)sent);
    if (sum != sent_sum(r, th, s->per_producer))
        slb_die(r->ops->name, "%s: the checksum of the received messages does not match "
                "what was sent (some lost and others duplicated)", r->label);
}

static void start_threads(const slb_run *r, tp_shared *s, tp_thread *th)
{
    for (unsigned i = 0; i < r->producers + r->consumers; i++) {
        bool producer = i < r->producers;
        th[i].s = s;
        th[i].id = producer ? i : i - r->producers;
        /* Interleave: producer k on CPU 2k, consumer k on CPU 2k+1. */
        th[i].cpu = slb_cpu_for(r, producer ? 2 * th[i].id : 2 * th[i].id + 1);
        /* A sole receiver sees every message of a channel, but a select
         * spreads each producer's sequence over two: order, not gaps. */
        bool exact = r->consumers == 1 && !r->ops->sel_pop;
        for (unsigned c = 0; c < 2 && !producer; c++)
            slb_check_init(&th[i].chk[c], r, r->producers, s->per_producer, exact);
        slb_spawn(&th[i].tid, producer ? producer_main : consumer_main, &th[i], r->ops->name);
    }
}

bool slb_run_tput(const slb_run *r, slb_result *out)
{
    tp_shared *s = aligned_alloc(64, (sizeof(tp_shared) + 63) / 64 * 64);
    tp_thread *th = calloc(r->producers + r->consumers, sizeof(tp_thread));
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
    s->total = s->per_producer * r->producers;
    s->block = r->ops->kind == SLB_BLOCKING || r->ops->kind == SLB_SELECTING;
    s->batch = r->test == SLB_BATCHED;

    start_threads(r, s, th);
    uint64_t t0 = slb_gate_open(&s->gate, r->producers + r->consumers);
    for (unsigned i = 0; i < r->producers; i++)
        slb_join(th[i].tid);
    if (s->block) {
        uint64_t m[SLB_WORDS_MAX];
        slb_fill_sentinel(m, r->elem / 8);
        for (unsigned i = 0; i < r->consumers; i++)
            slb_send(r->ops, q, NULL, m, true);
    }
    slb_check rest[2];
    for (unsigned c = 0; c < 2; c++)
        slb_check_init(&rest[c], r, r->producers, s->per_producer, false);
    for (unsigned i = r->producers; i < r->producers + r->consumers; i++)
        slb_join(th[i].tid);
    /* The drain is timed: a queue that is FIFO only per producer hands out
     * sentinels early (moodycamel's BlockingConcurrentQueue left up to all
     * of a 4x4 run's messages behind them), and messages counted as moved
     * must have been received inside the interval. */
    finish_queue(r, s, rest);
    uint64_t t1 = slb_now_ns();
    verify_totals(r, th, rest, s);
    for (unsigned c = 0; c < 2; c++) {
        slb_check_free(&rest[c]);
        for (unsigned i = r->producers; i < r->producers + r->consumers; i++)
            slb_check_free(&th[i].chk[c]);
    }
    r->ops->destroy(q);
    out->msgs = atomic_load(&s->sent);
    out->value = (double)out->msgs / ((double)(t1 - t0) / 1e9) / 1e6;
    out->p99 = out->p999 = 0;
    free(th);
    free(s);
    return true;
}
