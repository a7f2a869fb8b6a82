/*
 * msg.h — what every benchmark message carries, how receivers verify it, and
 * how a thread waits when a try operation fails. Shared by the run loops.
 *
 * Every message says who sent it and which one it is, so that a queue that
 * loses, duplicates, reorders or tears a message fails the run loudly instead
 * of producing a good-looking figure:
 *   word 0: (producer + 1) << 48 | sequence   (an 8-byte message is just this)
 *   words 1..: word0 + i * K                  (a torn copy breaks the pattern)
 * The producer field is never 0, so no message is all-zero (pointer-valued
 * peers cannot carry NULL); 0xFFFF marks the sentinel that stops a blocking
 * consumer.
 */
#ifndef SLB_MSG_H
#define SLB_MSG_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define SLB_SEQ_BITS 48
#define SLB_SEQ_MASK ((UINT64_C(1) << SLB_SEQ_BITS) - 1)
#define SLB_SENTINEL (UINT64_C(0xFFFF) << SLB_SEQ_BITS)
#define SLB_MAX_PRODUCERS 0xFFFEu
#define SLB_PAYLOAD_K UINT64_C(0x9E3779B97F4A7C15)
#define SLB_WORDS_MAX (SLB_MAX_ELEM / 8)

static inline uint64_t slb_msg_word(unsigned producer, uint64_t seq)
{
    return ((uint64_t)(producer + 1) << SLB_SEQ_BITS) | seq;
}

static inline void slb_fill(uint64_t *m, size_t words, unsigned producer, uint64_t seq)
{
    uint64_t w = slb_msg_word(producer, seq);
    m[0] = w;
    for (size_t i = 1; i < words; i++)
        m[i] = w + i * SLB_PAYLOAD_K;
}

static inline void slb_fill_sentinel(uint64_t *m, size_t words)
{
    memset(m, 0, words * 8);
    m[0] = SLB_SENTINEL;
}

/* The checksum adds a strong mix of every word 0 received: a lost message
 * and a duplicated one do not cancel out as they would in a plain sum. */
static inline uint64_t slb_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* One receiver's verification state. */
typedef struct slb_check {
    const char *who;      /* contender, for the failure message */
    const char *where;    /* workload label */
    unsigned producers;
    uint64_t per_producer;
    size_t words;
    bool fifo;            /* check per-producer order */
    bool exact;           /* ...and that none is skipped (sole receiver) */
    uint64_t *next;       /* per producer: the lowest sequence still allowed */
    uint64_t count, sum;
} slb_check;

static inline void slb_check_init(slb_check *c, const slb_run *r, unsigned producers,
                                  uint64_t per_producer, bool sole_receiver)
{
    memset(c, 0, sizeof(*c));
    c->who = r->ops->name;
    c->where = r->label;
    c->producers = producers;
    c->per_producer = per_producer;
    c->words = r->elem / 8;
    c->fifo = (r->ops->flags & SLB_FIFO) != 0;
    c->exact = c->fifo && sole_receiver;
    c->next = calloc(producers, sizeof(uint64_t));
    if (!c->next)
        slb_die(c->who, "out of memory");
}

static inline void slb_check_free(slb_check *c)
{
    free(c->next);
    c->next = NULL;
}

/* Cold: keeps the message formatting out of the receive loop. */
__attribute__((noreturn, cold)) void slb_check_fail(const slb_check *c, const uint64_t *m,
                                                    const char *what);

static inline void slb_check_msg(slb_check *c, const uint64_t *m)
{
    uint64_t w = m[0];
    unsigned p = (unsigned)(w >> SLB_SEQ_BITS);
    uint64_t seq = w & SLB_SEQ_MASK;
    if (p == 0 || p > c->producers || seq >= c->per_producer)
        slb_check_fail(c, m, "a message that was never sent");
    p -= 1;
    if (c->fifo) {
        if (c->exact ? seq != c->next[p] : seq < c->next[p])
            slb_check_fail(c, m, c->exact ? "a message out of order (or one lost)"
                                          : "a message out of per-producer order");
        c->next[p] = seq + 1;
    }
    for (size_t i = 1; i < c->words; i++)
        if (m[i] != w + i * SLB_PAYLOAD_K)
            slb_check_fail(c, m, "a torn message (payload does not match its header)");
    c->count++;
    c->sum += slb_mix(w);
}

/* The sum a correct run ends with (memoised: runs repeat the same shapes). */
uint64_t slb_expected_sum(unsigned producers, uint64_t per_producer);
/* The same when producer p sent only sent[p] messages (a run stopped early,
 * or uneven). */
uint64_t slb_sent_sum(unsigned producers, const uint64_t *sent, uint64_t per_producer);

static inline void slb_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* A consumer's work on a message it received (sl-bench chan --work): n pause
 * hints, as the Rust and Go peers spend them (bench/remote.c). */
static inline void slb_work(size_t n)
{
    for (size_t i = 0; i < n; i++)
        slb_cpu_relax();
}

/* Every spinning contender waits the same way: a short spin, then yield the
 * CPU, because with more threads than CPUs (4x4 on two cores) the thread we
 * wait for may need ours to run. */
static inline void slb_backoff(unsigned *spins)
{
    if (++*spins < 128)
        slb_cpu_relax();
    else
        sched_yield();
}

static inline void slb_send(const slb_ops *o, void *q, void *h, const void *m, bool block)
{
    if (block) {
        if (!o->push(q, h, m))
            slb_die(o->name, "blocking push failed");
        return;
    }
    unsigned spins = 0;
    while (!o->try_push(q, h, m))
        slb_backoff(&spins);
}

static inline void slb_recv(const slb_ops *o, void *q, void *h, void *m, bool block)
{
    if (block) {
        if (!o->pop(q, h, m))
            slb_die(o->name, "blocking pop failed");
        return;
    }
    unsigned spins = 0;
    while (!o->try_pop(q, h, m))
        slb_backoff(&spins);
}

/* Whether a run's time is up (end: a slb_now_ns deadline, UINT64_MAX for
 * none); looks at the clock only every 256 messages. */
static inline bool slb_time_up(uint64_t seq, uint64_t end)
{
    return (seq & 255) == 0 && end != UINT64_MAX && seq && slb_now_ns() > end;
}

/* The thread start line: every thread arrives, then all go at once, so that
 * thread creation is not timed. Waiting threads yield (there may be more of
 * them than CPUs). */
typedef struct slb_gate {
    _Atomic unsigned ready;
    _Atomic bool go;
} slb_gate;

static inline void slb_gate_wait(slb_gate *g)
{
    atomic_fetch_add(&g->ready, 1);
    while (!atomic_load_explicit(&g->go, memory_order_acquire))
        sched_yield();
}

/* Called by the timing thread: waits for n arrivals, returns the start time. */
uint64_t slb_gate_open(slb_gate *g, unsigned n);

/* Runs nothing concurrently: after the receivers are done the queue must be
 * empty; anything left is a message received twice or made up. */
void slb_expect_empty(const slb_run *r, void *q);

/* The CPU for a run's thread number `index` (producer k: 2k, consumer k:
 * 2k+1), or -1 when the run is not pinned. */
int slb_cpu_for(const slb_run *r, unsigned index);

/* Thread creation that cannot fail quietly. */
void slb_spawn(pthread_t *t, void *(*fn)(void *), void *arg, const char *who);
void slb_join(pthread_t t);

#endif /* SLB_MSG_H */
