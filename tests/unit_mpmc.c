/*
 * tests/unit_mpmc.c — the raw bounded MPMC queue (sluice/mpmc.h).
 *
 * Sequential behaviour is checked against a plain array FIFO (the model),
 * including with the counters started just below the 64-bit wrap
 * (sl__mpmc_init_at); a small multi-threaded run checks exactly-once delivery
 * and per-producer order.
 */
#include "harness.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/chan.h>
#include <sluice/mpmc.h>
#include <sluice/select.h>
#include "testing.h"
#include "../channels/chan_impl.h" /* the channel's queue: its spares, held by hand */

#define Q_T sl_mpmc
#define Q_NAME "mpmc"
#define q_init sl_mpmc_init
#define q_init_at sl__mpmc_init_at
#define q_destroy sl_mpmc_destroy
#define q_push sl_mpmc_try_push
#define q_pop sl_mpmc_try_pop
#define q_push_n sl_mpmc_push_n
#define q_pop_n sl_mpmc_pop_n
#define q_len sl_mpmc_len
#define q_cap sl_mpmc_cap
#include "raw_ring_cases.h"

/* ---- what a stopped thread leaves behind ---------------------------------- */

/* A thread stopped anywhere inside try_push or try_pop leaves the ring in one
 * of three states: untouched; its cell written (push) or taken (pop), with the
 * tail or head not yet moved past it. In the last two the operation has taken
 * effect, so the others must not wait for it and must answer exactly: FULL
 * only with `capacity` messages inside, EMPTY only with none. The states are
 * made here by hand, as the cell's CAS leaves them, and mixed at random with
 * real calls that must help the lagging counters on (those branches otherwise
 * run only under contention), checked against a model FIFO. */

static sl_mpmc_cell *used_cell(sl_mpmc *q, uint64_t pos)
{
    return &q->used[pos & (q->one_lap - 1)];
}

static uint64_t next_pos(const sl_mpmc *q, uint64_t pos)
{
    if ((pos & (q->one_lap - 1)) + 1 < q->capacity)
        return pos + 1;
    return (pos & ~(q->one_lap - 1)) + q->one_lap;
}

/* A counter's front, as an operation's walk finds it (channels/cellring.h,
 * "Lazy counters"): from the counter, the first position whose stamp is
 * not more than k past it (k = 0: the tail's; 1: the head's). */
static uint64_t front_of(sl_mpmc *q, SL_ATOMIC(uint64_t) *counter, uint64_t k)
{
    uint64_t pos = atomic_load(counter);
    while ((int64_t)(atomic_load(&used_cell(q, pos)->stamp) - pos) > (int64_t)k)
        pos = next_pos(q, pos);
    return pos;
}

/* A push that wrote the cell of the tail's front and stopped before moving
 * the tail; false (and nothing done) when that cell is not free for its
 * position (full). */
static bool stopped_push(sl_mpmc *q, uint64_t v)
{
    uint64_t t = front_of(q, &q->tail, 0);
    sl_mpmc_cell *c = used_cell(q, t);
    if (atomic_load(&c->stamp) != t)
        return false;
    atomic_store(&c->value, v);
    atomic_store(&c->stamp, t + 1);
    return true;
}

/* A pop that took the cell of the head's front and stopped before moving
 * the head. */
static bool stopped_pop(sl_mpmc *q, uint64_t *v)
{
    uint64_t h = front_of(q, &q->head, 1);
    sl_mpmc_cell *c = used_cell(q, h);
    if (atomic_load(&c->stamp) != h + 1)
        return false;
    *v = atomic_load(&c->value);
    atomic_store(&c->stamp, h + q->one_lap);
    return true;
}

static void run_stopped(size_t cap, uint64_t start, uint64_t seed)
{
    sl_mpmc q;
    ck_assert_int_eq(sl__mpmc_init_at(&q, sizeof(uint64_t), cap, start), SL_OK);
    uint64_t *fifo = calloc(cap, sizeof *fifo); /* the model FIFO: [lo, lo + n) mod cap */
    ck_assert_ptr_nonnull(fifo);
    size_t lo = 0, n = 0;
    uint64_t next = 1, v = 0;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, seed);
    for (unsigned step = 0; step < 4000; step++) {
        unsigned what = (unsigned)(sl_test_rng_next(&rng) % 8);
        if (what < 2) { /* a push that stops after its cell's CAS */
            if (stopped_push(&q, next)) {
                ck_assert_msg(n < cap, "cap %zu: a cell was free with the queue full", cap);
                fifo[(lo + n++) % cap] = next++;
            }
        } else if (what < 4) { /* a pop that stops after its cell's CAS */
            if (stopped_pop(&q, &v)) {
                ck_assert_msg(n > 0, "cap %zu: a written cell with the queue empty", cap);
                ck_assert_uint_eq(v, fifo[lo]);
                lo = (lo + 1) % cap, n--;
            }
        } else if (what < 6) { /* a real push: helps any lagging counter on */
            sl_status st = sl_mpmc_try_push(&q, &next);
            ck_assert_msg(st == (n < cap ? SL_OK : SL_FULL),
                          "cap %zu start %llu step %u: push returned %s with %zu inside", cap,
                          (unsigned long long)start, step, sl_status_str(st), n);
            if (st == SL_OK)
                fifo[(lo + n++) % cap] = next++;
        } else {
            sl_status st = sl_mpmc_try_pop(&q, &v);
            ck_assert_msg(st == (n > 0 ? SL_OK : SL_EMPTY),
                          "cap %zu start %llu step %u: pop returned %s with %zu inside", cap,
                          (unsigned long long)start, step, sl_status_str(st), n);
            if (st == SL_OK) {
                ck_assert_uint_eq(v, fifo[lo]);
                lo = (lo + 1) % cap, n--;
            }
        }
        ck_assert_uint_le(sl_mpmc_len(&q), cap);
    }
    /* Real calls leave no counter behind: exact length, then the model's order. */
    while (sl_mpmc_try_push(&q, &next) == SL_OK)
        fifo[(lo + n++) % cap] = next++;
    ck_assert_uint_eq(n, cap);
    ck_assert_uint_eq(sl_mpmc_len(&q), cap);
    for (; n > 0; lo = (lo + 1) % cap, n--) {
        ck_assert_int_eq(sl_mpmc_try_pop(&q, &v), SL_OK);
        ck_assert_uint_eq(v, fifo[lo]);
    }
    ck_assert_int_eq(sl_mpmc_try_pop(&q, &v), SL_EMPTY);
    ck_assert_uint_eq(sl_mpmc_len(&q), 0);
    sl_mpmc_destroy(&q);
    free(fifo);
}

START_TEST(test_stopped_states)
{
    static const size_t sizes[] = {1, 2, 3, 4, 5, 7, 8};
    static const uint64_t starts[] = {0, UINT64_MAX - 50, (uint64_t)UINT32_MAX - 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (size_t j = 0; j < sizeof starts / sizeof starts[0]; j++)
            run_stopped(sizes[i], starts[j], 0x5EED + i * 16 + j);
}
END_TEST

/* The counters move once per line of cells: after every operation at
 * rest, each sits in its front's line, at or before the front (so a walk
 * is at most a line's cells), and the length is exact. Capacities below,
 * at and above a line's four cells, and a partial last line; positions
 * crossing the counters' wrap. */
static void check_lazy_counter(sl_mpmc *q, SL_ATOMIC(uint64_t) *counter, uint64_t k,
                               const char *which, size_t cap, unsigned step)
{
    uint64_t c = atomic_load(counter), f = front_of(q, counter, k);
    uint64_t in_line = (f & (q->one_lap - 1)) % 4; /* four 16-byte cells a line */
    ck_assert_msg((int64_t)(f - c) >= 0 && f - c <= in_line,
                  "cap %zu step %u: the %s counter %llu is outside its front %llu's line",
                  cap, step, which, (unsigned long long)c, (unsigned long long)f);
}

START_TEST(test_lazy_counters)
{
    static const size_t lazy_caps[] = {1, 3, 4, 5, 6, 8, 9};
    static const uint64_t starts[] = {0, UINT64_MAX - 40};
    for (size_t i = 0; i < sizeof lazy_caps / sizeof lazy_caps[0]; i++)
        for (size_t j = 0; j < 2; j++) {
            sl_mpmc q;
            size_t cap = lazy_caps[i], n = 0;
            ck_assert_int_eq(sl__mpmc_init_at(&q, sizeof(uint64_t), cap, starts[j]), SL_OK);
            sl_test_rng rng;
            sl_test_rng_seed(&rng, 0x1A2 + i * 4 + j);
            uint64_t next = 1, want = 1, v;
            for (unsigned step = 0; step < 3000; step++) {
                /* runs of pushes and of pops, so both full and empty recur */
                bool push = ((step / (cap + 2)) % 2 == 0) == (sl_test_rng_next(&rng) % 4 != 0);
                if (push) {
                    sl_status st = sl_mpmc_try_push(&q, &next);
                    ck_assert_int_eq(st, n < cap ? SL_OK : SL_FULL);
                    if (st == SL_OK)
                        next++, n++;
                } else {
                    sl_status st = sl_mpmc_try_pop(&q, &v);
                    ck_assert_int_eq(st, n > 0 ? SL_OK : SL_EMPTY);
                    if (st == SL_OK) {
                        ck_assert_uint_eq(v, want);
                        want++, n--;
                    }
                }
                ck_assert_uint_eq(sl_mpmc_len(&q), n);
                check_lazy_counter(&q, &q.tail, 0, "tail", cap, step);
                check_lazy_counter(&q, &q.head, 1, "head", cap, step);
            }
            sl_mpmc_destroy(&q);
        }
}
END_TEST

/* ---- the swap form (messages of 9 to 256 bytes) --------------------------- */

/* Every slot is in exactly one place at rest: a used-ring cell or a spare
 * entry (none is lost or doubled by the swaps). */
static void check_slots_conserved(sl_mpmc *q)
{
    size_t n = q->slot_count;
    unsigned char *seen = calloc(n, 1);
    ck_assert_ptr_nonnull(seen);
    for (size_t i = 0; i < q->capacity; i++) {
        uint64_t v = atomic_load(&q->used[i].value);
        ck_assert_msg(v < n && !seen[v], "cell %zu holds slot %llu twice or out of range", i,
                      (unsigned long long)v);
        seen[v] = 1;
    }
    for (size_t j = 0; j < q->spare_count; j++) {
        uint64_t v = atomic_load(&q->spares[j]);
        ck_assert_msg(v < n && !seen[v], "spare %zu holds slot %llu twice, out of range or none",
                      j, (unsigned long long)v);
        seen[v] = 1;
    }
    free(seen);
}

/* 24-byte messages whose three words all carry the sequence number. */
typedef struct msg24 { uint64_t w[3]; } msg24;

static msg24 m24(uint64_t seq) { return (msg24){{seq, ~seq, seq * 3}}; }

/* A push with every spare held by pushes in progress (made by hand, as a
 * push between taking its spare and putting one back leaves it) says
 * SL_FULL with the queue empty; one spare back is enough again, whichever
 * entry it is in; and the slots are all accounted for afterwards. */
START_TEST(test_swap_spares_held)
{
    static const uint64_t starts[] = {0, UINT64_MAX - 5};
    for (size_t k = 0; k < 2; k++) {
        sl_mpmc q;
        ck_assert_int_eq(sl__mpmc_init_spares(&q, sizeof(msg24), 4, starts[k], 3), SL_OK);
        ck_assert_uint_eq(q.spare_count, 3);
        ck_assert_uint_eq(q.slot_count, 7);
        for (size_t back = 0; back < 3; back++) {
            uint64_t held[3];
            for (size_t j = 0; j < 3; j++)
                held[j] = atomic_exchange(&q.spares[j], SL__MPMC_NO_SPARE);
            msg24 m = m24(1), o = m24(99);
            ck_assert_int_eq(sl_mpmc_try_push(&q, &m), SL_FULL);
            ck_assert_int_eq(sl_mpmc_try_pop(&q, &o), SL_EMPTY);
            ck_assert_uint_eq(o.w[0], 99); /* SL_EMPTY leaves out untouched */
            /* One entry back (a different one each time): the push finds it. */
            atomic_store(&q.spares[back], held[back]);
            for (uint64_t i = 0; i < 4; i++) {
                m = m24(i);
                ck_assert_int_eq(sl_mpmc_try_push(&q, &m), SL_OK);
            }
            m = m24(4);
            ck_assert_int_eq(sl_mpmc_try_push(&q, &m), SL_FULL); /* really full */
            for (uint64_t i = 0; i < 4; i++) {
                ck_assert_int_eq(sl_mpmc_try_pop(&q, &o), SL_OK);
                msg24 want = m24(i);
                ck_assert_mem_eq(&o, &want, sizeof o);
            }
            for (size_t j = 0; j < 3; j++)
                if (j != back)
                    atomic_store(&q.spares[j], held[j]);
            check_slots_conserved(&q);
        }
        sl_mpmc_destroy(&q);
    }
    /* 0 and more than the capacity both mean the capacity. */
    sl_mpmc q;
    ck_assert_int_eq(sl__mpmc_init_spares(&q, 16, 5, 0, 0), SL_OK);
    ck_assert_uint_eq(q.spare_count, 5);
    sl_mpmc_destroy(&q);
    ck_assert_int_eq(sl__mpmc_init_spares(&q, 16, 5, 0, 50), SL_OK);
    ck_assert_uint_eq(q.spare_count, 5);
    sl_mpmc_destroy(&q);
}
END_TEST

/* Which form each size takes: 9 to 256 bytes swap (spares, no free ring),
 * above that the indexed form, up to 8 the cells themselves. */
START_TEST(test_swap_form_sizes)
{
    static const size_t sizes[] = {1, 8, 9, 13, 64, 255, 256, 257, 4096};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        sl_mpmc q;
        ck_assert_int_eq(sl_mpmc_init(&q, sizes[i], 6), SL_OK);
        bool swap = sizes[i] > 8 && sizes[i] <= 256;
        ck_assert_msg((q.spares != NULL) == swap && (q.free != NULL) == (sizes[i] > 256),
                      "size %zu in the wrong form", sizes[i]);
        sl_mpmc_destroy(&q);
    }
}
END_TEST

/* The sequential model with swap-form sizes, across the 64-bit wrap. */
START_TEST(test_swap_model_near_wrap)
{
    static const size_t scaps[] = {1, 3, 64};
    static const size_t ssizes[] = {9, 40, 256};
    static const uint64_t starts[] = {UINT64_MAX - 50, UINT64_MAX - 1000, (uint64_t)UINT32_MAX - 20};
    for (size_t c = 0; c < sizeof scaps / sizeof scaps[0]; c++)
        for (size_t e = 0; e < sizeof ssizes / sizeof ssizes[0]; e++)
            run_model(scaps[c], ssizes[e], starts[(c + e) % 3], 500 + c * 10 + e,
                      (unsigned)sl_test_scaled(1500, 800));
}
END_TEST

/* A blocked sender that slept on a SL_FULL said for want of a spare, with
 * room in the ring, is woken by the push that gives one back. Both spares of
 * a capacity-2 channel are held by hand (two pushes between taking a spare
 * and giving one back); the sender blocks; one spare comes back and a
 * try_send uses it and gives a slot back: that must wake the sender, whose
 * send then finds the slot (no receive ever comes to wake it otherwise).
 * The same for a selector whose one case is that send (loop 1): it sleeps
 * on the select bell, not on not_full, and in process it has no periodic
 * look to fall back on. */
typedef struct starve_arg {
    sl_chan *ch;
    bool select; /* blocks in sl_select, its one case a send, not in sl_chan_send */
    _Atomic int tid; /* the sender thread's, for its /proc state */
    _Atomic int done;
    sl_status st;
} starve_arg;

static void *starved_sender(void *p)
{
    starve_arg *a = p;
    atomic_store(&a->tid, (int)syscall(SYS_gettid));
    msg24 m = m24(7);
    if (a->select) {
        sl_select_case c = {a->ch, SL_SEL_SEND, &m};
        size_t index = 99;
        a->st = sl_select(&c, 1, 10ull * 1000000000, &index); /* the test's limit, not forever */
        if (a->st == SL_OK && index != 0)
            a->st = SL_EINVAL;
    } else {
        a->st = sl_chan_send(a->ch, &m);
    }
    atomic_store(&a->done, 1);
    return NULL;
}

/* Whether the sender blocked where it waits: not_full, or the select bell. */
static bool sender_waits(const starve_arg *a)
{
    return a->select ? atomic_load(&a->ch->selectors) == 1 : sl_event_waiters(&a->ch->not_full) == 1;
}

START_TEST(test_swap_starved_sender_woken)
{
    sl_chan *ch;
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = sizeof(msg24), .capacity = 2};
    ck_assert_int_eq(sl_chan_new(&ch, &o), SL_OK);
    sl_mpmc *q = &ch->q.mpmc;
    ck_assert_uint_eq(q->spare_count, 2);
    uint64_t held[2];
    for (size_t j = 0; j < 2; j++)
        held[j] = atomic_exchange(&q->spares[j], SL__MPMC_NO_SPARE);
    starve_arg a = {.ch = ch, .select = _i == 1};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, starved_sender, &a), 0);
    uint64_t until = sl_test_now_ns() + 10ull * 1000000000;
    while ((!sender_waits(&a) || atomic_load(&a.tid) == 0 || !sl_test_thread_asleep(atomic_load(&a.tid))) &&
           sl_test_now_ns() < until)
        sched_yield();
    ck_assert_msg(sender_waits(&a) && sl_test_thread_asleep(atomic_load(&a.tid)), "the %s never slept",
                  a.select ? "selector" : "sender");
    ck_assert_int_eq(atomic_load(&a.done), 0);
    atomic_store(&q->spares[0], held[0]);
    msg24 m = m24(1);
    ck_assert_int_eq(sl_chan_try_send(ch, &m), SL_OK);
    until = sl_test_now_ns() + 5ull * 1000000000;
    while (!atomic_load(&a.done) && sl_test_now_ns() < until)
        sched_yield();
    ck_assert_msg(atomic_load(&a.done), "the %s slept on with room and a spare free",
                  a.select ? "selector" : "sender");
    pthread_join(t, NULL);
    ck_assert_int_eq(a.st, SL_OK);
    atomic_store(&q->spares[1], held[1]);
    for (uint64_t want = 1; want != 0; want = want == 1 ? 7 : 0) {
        ck_assert_int_eq(sl_chan_try_recv(ch, &m), SL_OK);
        ck_assert_uint_eq(m.w[0], want);
    }
    check_slots_conserved(q);
    sl_chan_free(ch);
}
END_TEST

/* ---- many producers, many consumers ---------------------------------------- */

enum { MP_PRODUCERS = 3, MP_CONSUMERS = 3 };

typedef struct mp_ctx {
    sl_mpmc q;
    size_t cap;
    size_t esz;                /* 8, or more: every word carries the value (torn check) */
    uint64_t per_producer;
    _Atomic uint64_t received;
    _Atomic unsigned char *seen[MP_PRODUCERS];
    _Atomic int bad;           /* first problem found, as a code */
    _Atomic uint64_t bad_value;
    sl_test_barrier start;
} mp_ctx;

typedef struct mp_arg {
    mp_ctx *c;
    unsigned id;
} mp_arg;

#define MP_VALUE(p, i) (((uint64_t)(p) << 40) | (uint64_t)(i))
#define MP_MAX_ESZ 64
#define MP_STALL_NS (10 * 1000000000ull) /* no message received for this long: stuck */

/* Message bytes for value v: word k is v * (2k + 1), the tail bytes v's. */
static void mp_fill(unsigned char *m, size_t esz, uint64_t v)
{
    for (size_t k = 0; k * 8 < esz; k++) {
        uint64_t w = v * (2 * k + 1);
        memcpy(m + k * 8, &w, esz - k * 8 < 8 ? esz - k * 8 : 8);
    }
}

/* The value of message m, or UINT64_MAX when its words disagree (torn). */
static uint64_t mp_value(const unsigned char *m, size_t esz)
{
    uint64_t v;
    unsigned char want[MP_MAX_ESZ];
    memcpy(&v, m, 8);
    mp_fill(want, esz, v);
    return memcmp(want, m, esz) == 0 ? v : UINT64_MAX;
}

static void mp_flag(mp_ctx *c, int code, uint64_t v)
{
    int zero = 0;
    if (atomic_compare_exchange_strong(&c->bad, &zero, code)) atomic_store(&c->bad_value, v);
}

static void *mp_producer(void *arg)
{
    mp_arg *a = arg;
    mp_ctx *c = a->c;
    const size_t esz = c->esz;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, 0xC0FFEE + a->id);
    sl_test_barrier_wait(&c->start);
    unsigned char batch[8 * MP_MAX_ESZ];
    for (uint64_t i = 0; i < c->per_producer && !atomic_load(&c->bad);) {
        if (sl_test_rng_next(&rng) % 4 == 0) {
            size_t k = 0;
            for (; k < 8 && i + k < c->per_producer; k++)
                mp_fill(batch + k * esz, esz, MP_VALUE(a->id, i + k));
            size_t got = sl_mpmc_push_n(&c->q, batch, k);
            if (got > k) mp_flag(c, 1, got);
            i += got;
            if (!got) sched_yield();
        } else {
            mp_fill(batch, esz, MP_VALUE(a->id, i));
            sl_status st = sl_mpmc_try_push(&c->q, batch);
            if (st == SL_OK) {
                i++;
            } else {
                if (st != SL_FULL) mp_flag(c, 2, (uint64_t)st);
                sched_yield();
            }
        }
        if (sl_mpmc_len(&c->q) > c->cap) mp_flag(c, 3, sl_mpmc_len(&c->q));
        sl_test_maybe_stall(&rng, 2000);
    }
    return NULL;
}

static void mp_take(mp_ctx *c, const unsigned char *m, uint64_t *last)
{
    uint64_t v = mp_value(m, c->esz);
    if (v == UINT64_MAX) {
        memcpy(&v, m, 8);
        mp_flag(c, 10, v);
        return;
    }
    uint64_t p = v >> 40, i = v & (((uint64_t)1 << 40) - 1);
    if (p >= MP_PRODUCERS || i >= c->per_producer) {
        mp_flag(c, 4, v);
        return;
    }
    /* Per-producer order as seen by one consumer. */
    if (last[p] != UINT64_MAX && i <= last[p]) mp_flag(c, 5, v);
    last[p] = i;
    if (atomic_exchange(&c->seen[p][i], 1) != 0) mp_flag(c, 6, v);
    atomic_fetch_add(&c->received, 1);
}

static void *mp_consumer(void *arg)
{
    mp_arg *a = arg;
    mp_ctx *c = a->c;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, 0xBEEF + a->id);
    uint64_t last[MP_PRODUCERS];
    for (int p = 0; p < MP_PRODUCERS; p++) last[p] = UINT64_MAX;
    const uint64_t total = c->per_producer * MP_PRODUCERS;
    sl_test_barrier_wait(&c->start);
    unsigned char batch[8 * MP_MAX_ESZ];
    /* Stuck: 50 s in all, or MP_STALL_NS in which no consumer received
     * anything (a correct run receives every few microseconds, a stall of
     * the whole run means a lost message: reported then, not at 50 s). */
    uint64_t now = sl_test_now_ns(), moved_at = now, seen = 0, r;
    const uint64_t give_up = now + 50 * 1000000000ull;
    while ((r = atomic_load(&c->received)) < total && !atomic_load(&c->bad)) {
        now = sl_test_now_ns();
        if (r != seen) {
            seen = r;
            moved_at = now;
        }
        if (now > give_up || now - moved_at > MP_STALL_NS) {
            mp_flag(c, 9, r);
            break;
        }
        if (sl_test_rng_next(&rng) % 4 == 0) {
            size_t got = sl_mpmc_pop_n(&c->q, batch, 8);
            if (got > 8) {
                mp_flag(c, 7, got);
                break;
            }
            for (size_t k = 0; k < got; k++) mp_take(c, batch + k * c->esz, last);
            if (!got) sched_yield();
        } else {
            sl_status st = sl_mpmc_try_pop(&c->q, batch);
            if (st == SL_OK) mp_take(c, batch, last);
            else {
                if (st != SL_EMPTY) mp_flag(c, 8, (uint64_t)st);
                sched_yield();
            }
        }
        sl_test_maybe_stall(&rng, 2000);
    }
    return NULL;
}

static void run_many_sized(size_t cap, size_t esz, uint64_t start, uint64_t per_producer)
{
    static mp_ctx c;
    c.cap = cap;
    c.esz = esz;
    c.per_producer = sl_test_scaled(per_producer, 2000);
    atomic_store(&c.received, 0);
    atomic_store(&c.bad, 0);
    for (int p = 0; p < MP_PRODUCERS; p++) {
        c.seen[p] = calloc(c.per_producer, 1);
        ck_assert_ptr_nonnull(c.seen[p]);
    }
    ck_assert_int_eq(sl__mpmc_init_at(&c.q, esz, cap, start), SL_OK);
    sl_test_barrier_init(&c.start, MP_PRODUCERS + MP_CONSUMERS);
    pthread_t t[MP_PRODUCERS + MP_CONSUMERS];
    mp_arg args[MP_PRODUCERS + MP_CONSUMERS];
    for (unsigned k = 0; k < MP_PRODUCERS + MP_CONSUMERS; k++) {
        args[k].c = &c;
        args[k].id = k < MP_PRODUCERS ? k : k - MP_PRODUCERS;
        ck_assert_int_eq(pthread_create(&t[k], NULL, k < MP_PRODUCERS ? mp_producer : mp_consumer,
                                        &args[k]), 0);
    }
    for (unsigned k = 0; k < MP_PRODUCERS + MP_CONSUMERS; k++) pthread_join(t[k], NULL);
    sl_test_barrier_destroy(&c.start);
    int bad = atomic_load(&c.bad);
    ck_assert_msg(bad == 0, "cap %zu start %llu: problem %d with value %#llx "
                  "(1/7 batch count, 2/8 status, 3 len>cap, 4 foreign, 5 order, 6 duplicate, 9 stuck: value = received, 10 torn)",
                  cap, (unsigned long long)start, bad, (unsigned long long)atomic_load(&c.bad_value));
    ck_assert_uint_eq(atomic_load(&c.received), c.per_producer * MP_PRODUCERS);
    for (int p = 0; p < MP_PRODUCERS; p++) {
        for (uint64_t i = 0; i < c.per_producer; i++)
            ck_assert_msg(atomic_load(&c.seen[p][i]) == 1, "message %d/%llu lost", p,
                          (unsigned long long)i);
        free((void *)c.seen[p]);
    }
    ck_assert_uint_eq(sl_mpmc_len(&c.q), 0);
    unsigned char m[MP_MAX_ESZ] = {0};
    ck_assert_int_eq(sl_mpmc_try_pop(&c.q, m), SL_EMPTY);
    if (c.q.spares)
        check_slots_conserved(&c.q);
    /* Still exact after the concurrent phase. */
    for (size_t i = 0; i < cap; i++) ck_assert_int_eq(sl_mpmc_try_push(&c.q, m), SL_OK);
    ck_assert_int_eq(sl_mpmc_try_push(&c.q, m), SL_FULL);
    ck_assert_uint_eq(sl_mpmc_len(&c.q), cap);
    sl_mpmc_destroy(&c.q);
}

static void run_many(size_t cap, uint64_t start)
{
    run_many_sized(cap, sizeof(uint64_t), start, 30000);
}

START_TEST(test_many_threads)
{
    run_many(16, 0);
}
END_TEST

START_TEST(test_many_threads_tiny)
{
    run_many(1, 0);
}
END_TEST

START_TEST(test_many_threads_near_wrap)
{
    run_many(4, UINT64_MAX - 3000);
}
END_TEST

/* The swap form: a pop's copy races the next lap's writes into the slot it
 * read (a message whose words disagree is torn), a spare goes back twice or
 * not at all (lost or duplicated messages, slots not conserved). */
START_TEST(test_many_threads_swap)
{
    run_many_sized(1, 64, 0, 10000);
    run_many_sized(3, 24, UINT64_MAX - 3000, 5000);
    run_many_sized(16, 13, 0, 5000);
}
END_TEST

static Suite *mpmc_suite(void)
{
    Suite *s = suite_create(Q_NAME);

    TCase *tc = tcase_create("init");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_init_bad_input);
    tcase_add_test(tc, test_init_limits_ok);
    tcase_add_test(tc, test_destroy_null);
    tcase_add_test(tc, test_try_null_args);
    suite_add_tcase(s, tc);

    tc = tcase_create("sequential");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_exact_capacity);
    tcase_add_test(tc, test_exact_capacity_near_wrap);
    tcase_add_test(tc, test_fifo_interleaved);
    tcase_add_test(tc, test_batch_partial);
    tcase_add_test(tc, test_elem_sizes);
    tcase_add_test(tc, test_wrap_sequential);
    tcase_add_test(tc, test_model_random);
    tcase_add_test(tc, test_model_random_near_wrap);
    tcase_add_test(tc, test_stopped_states);
    tcase_add_test(tc, test_lazy_counters);
    tcase_add_test(tc, test_swap_spares_held);
    tcase_add_test(tc, test_swap_form_sizes);
    tcase_add_test(tc, test_swap_model_near_wrap);
    suite_add_tcase(s, tc);

    tc = tcase_create("threads");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_many_threads_swap); /* first: the swap form's planted bugs */
    tcase_add_test(tc, test_two_threads_fifo);
    tcase_add_test(tc, test_two_threads_fifo_near_wrap);
    tcase_add_test(tc, test_many_threads);
    tcase_add_test(tc, test_many_threads_tiny);
    tcase_add_test(tc, test_many_threads_near_wrap);
    suite_add_tcase(s, tc);

    tc = tcase_create("starve"); /* its own case: the planted bug's check */
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_swap_starved_sender_woken, 0, 2); /* sl_chan_send, sl_select */
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    return sl_test_run(mpmc_suite());
}
