/*
 * latency.c — the two latency runs, both between two threads pinned to
 * CPUs 0 and 1 (when there are two):
 *
 *   ping-pong: thread A sends a message on queue AB, thread B sends it back
 *     on queue BA; A times each round trip. Runs `trips` trips or until
 *     `trip_cap_ns` has passed (blocking contenders may take microseconds
 *     per trip, and the whole comparison has a time budget).
 *   stream: the producer sends a message every `gap_ns` (a moderate rate,
 *     so queues are mostly empty and what is measured is the hand-over, not
 *     queueing), noting the CLOCK_MONOTONIC time it sent message i in
 *     stamp[i]; the consumer reads the clock on receipt. The stamp lives in
 *     a side table indexed by the message's sequence because an 8-byte
 *     message has no room for it; the queue's own release/acquire makes the
 *     producer's write visible to the consumer.
 *
 * Figures: p50, p99 and p99.9 (nearest rank) of the per-message times.
 * Messages are verified like in the throughput runs, and the trip's echo
 * must come back bit for bit.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"

typedef struct lat_shared {
    const slb_run *run;
    void *ab, *ba;           /* ping-pong: A to B, B to A; stream uses ab */
    bool block;
    slb_gate gate;
    uint64_t *samples;       /* per trip / per message, nanoseconds */
    uint64_t *stamp;         /* stream: send time of message i */
    uint64_t n;              /* trips done (ping-pong) */
    uint64_t echoed;         /* ping-pong: trips B answered */
} lat_shared;

static int lat_cpu(int which)
{
    return slb_ncpu() >= 2 ? which : -1;
}

/* ---- ping-pong ---------------------------------------------------------- */

static void *ping_main(void *arg)
{
    lat_shared *s = arg;
    const slb_run *r = s->run;
    const slb_ops *o = r->ops;
    size_t words = r->elem / 8;
    if (lat_cpu(0) >= 0)
        slb_pin_self(0);
    void *hs = o->attach ? o->attach(s->ab, true) : NULL;
    void *hr = o->attach ? o->attach(s->ba, false) : NULL;
    uint64_t m[SLB_WORDS_MAX], back[SLB_WORDS_MAX];
    slb_gate_wait(&s->gate);
    uint64_t start = slb_now_ns(), i = 0;
    while (i < r->trips) {
        slb_fill(m, words, 0, i);
        uint64_t t = slb_now_ns();
        slb_send(o, s->ab, hs, m, s->block);
        slb_recv(o, s->ba, hr, back, s->block);
        uint64_t now = slb_now_ns();
        s->samples[i++] = now - t;
        if (memcmp(m, back, r->elem) != 0)
            slb_die(o->name, "%s: trip %llu came back as word %#llx", r->label,
                    (unsigned long long)(i - 1), (unsigned long long)back[0]);
        if (now - start > r->trip_cap_ns)
            break;
    }
    s->n = i;
    slb_fill_sentinel(m, words);
    slb_send(o, s->ab, hs, m, s->block);
    if (o->detach) {
        o->detach(s->ab, hs);
        o->detach(s->ba, hr);
    }
    return NULL;
}

static void *pong_main(void *arg)
{
    lat_shared *s = arg;
    const slb_run *r = s->run;
    const slb_ops *o = r->ops;
    if (lat_cpu(1) >= 0)
        slb_pin_self(1);
    void *hr = o->attach ? o->attach(s->ab, false) : NULL;
    void *hs = o->attach ? o->attach(s->ba, true) : NULL;
    slb_check chk;
    slb_check_init(&chk, r, 1, r->trips, true);
    uint64_t m[SLB_WORDS_MAX];
    slb_gate_wait(&s->gate);
    for (;;) {
        slb_recv(o, s->ab, hr, m, s->block);
        if (m[0] == SLB_SENTINEL)
            break;
        slb_check_msg(&chk, m);
        slb_send(o, s->ba, hs, m, s->block);
    }
    s->echoed = chk.count;
    slb_check_free(&chk);
    if (o->detach) {
        o->detach(s->ab, hr);
        o->detach(s->ba, hs);
    }
    return NULL;
}

/* ---- stream ------------------------------------------------------------- */

static void *stream_producer(void *arg)
{
    lat_shared *s = arg;
    const slb_run *r = s->run;
    const slb_ops *o = r->ops;
    size_t words = r->elem / 8;
    if (lat_cpu(0) >= 0)
        slb_pin_self(0);
    void *h = o->attach ? o->attach(s->ab, true) : NULL;
    uint64_t m[SLB_WORDS_MAX];
    slb_gate_wait(&s->gate);
    uint64_t start = slb_now_ns();
    for (uint64_t i = 0; i < r->msgs; i++) {
        uint64_t due = start + i * r->gap_ns, t;
        /* Spin, not sleep: a sleep's wake-up jitter is larger than the gap. */
        while ((t = slb_now_ns()) < due)
            slb_cpu_relax();
        s->stamp[i] = t;
        slb_fill(m, words, 0, i);
        slb_send(o, s->ab, h, m, s->block);
    }
    if (o->detach)
        o->detach(s->ab, h);
    return NULL;
}

static void *stream_consumer(void *arg)
{
    lat_shared *s = arg;
    const slb_run *r = s->run;
    const slb_ops *o = r->ops;
    if (lat_cpu(1) >= 0)
        slb_pin_self(1);
    void *h = o->attach ? o->attach(s->ab, false) : NULL;
    slb_check chk;
    slb_check_init(&chk, r, 1, r->msgs, true);
    uint64_t m[SLB_WORDS_MAX];
    slb_gate_wait(&s->gate);
    for (uint64_t i = 0; i < r->msgs; i++) {
        slb_recv(o, s->ab, h, m, s->block);
        uint64_t t = slb_now_ns();
        slb_check_msg(&chk, m);
        s->samples[i] = t - s->stamp[m[0] & SLB_SEQ_MASK];
    }
    slb_check_free(&chk);
    if (o->detach)
        o->detach(s->ab, h);
    return NULL;
}

/* ---- runs --------------------------------------------------------------- */

static void fill_result(uint64_t *samples, uint64_t n, slb_result *out)
{
    slb_sort_u64(samples, n);
    out->value = (double)slb_percentile(samples, n, 0.50);
    out->p99 = (double)slb_percentile(samples, n, 0.99);
    out->p999 = (double)slb_percentile(samples, n, 0.999);
}

static bool lat_setup(lat_shared *s, const slb_run *r, uint64_t n, bool two_queues)
{
    memset(s, 0, sizeof(*s));
    s->run = r;
    s->block = r->ops->kind == SLB_BLOCKING;
    s->samples = malloc(n * sizeof(uint64_t));
    s->ab = r->ops->create(r->capacity, r->elem);
    s->ba = two_queues ? r->ops->create(r->capacity, r->elem) : NULL;
    if (s->samples && s->ab && (s->ba || !two_queues))
        return true;
    free(s->samples);
    if (s->ab)
        r->ops->destroy(s->ab);
    if (s->ba)
        r->ops->destroy(s->ba);
    return false;
}

bool slb_run_pingpong(const slb_run *r, slb_result *out)
{
    lat_shared s;
    if (!lat_setup(&s, r, r->trips, true))
        return false;
    pthread_t a, b;
    slb_spawn(&b, pong_main, &s, r->ops->name);
    slb_spawn(&a, ping_main, &s, r->ops->name);
    slb_gate_open(&s.gate, 2);
    slb_join(a);
    slb_join(b);
    if (s.echoed != s.n)
        slb_die(r->ops->name, "%s: %llu trips sent, %llu echoed", r->label,
                (unsigned long long)s.n, (unsigned long long)s.echoed);
    slb_expect_empty(r, s.ab);
    slb_expect_empty(r, s.ba);
    fill_result(s.samples, s.n, out);
    out->msgs = s.n;
    r->ops->destroy(s.ab);
    r->ops->destroy(s.ba);
    free(s.samples);
    return true;
}

bool slb_run_stream(const slb_run *r, slb_result *out)
{
    lat_shared s;
    if (!lat_setup(&s, r, r->msgs, false))
        return false;
    s.stamp = malloc(r->msgs * sizeof(uint64_t));
    if (!s.stamp)
        slb_die(r->ops->name, "out of memory");
    pthread_t p, c;
    slb_spawn(&c, stream_consumer, &s, r->ops->name);
    slb_spawn(&p, stream_producer, &s, r->ops->name);
    slb_gate_open(&s.gate, 2);
    slb_join(p);
    slb_join(c);
    slb_expect_empty(r, s.ab);
    fill_result(s.samples, r->msgs, out);
    out->msgs = r->msgs;
    r->ops->destroy(s.ab);
    free(s.stamp);
    free(s.samples);
    return true;
}
