/*
 * tests/fuzz/fuzz_common.h — the sequential reference model shared by the
 * libFuzzer targets (fuzz_spsc.c, fuzz_mpmc.c, fuzz_list.c, fuzz_ring.c).
 *
 * Each target reads its input as a configuration header followed by a
 * sequence of operations, runs them on ONE thread against either the raw ring
 * (sl_<flavour>_*) or the channel (sl_chan_*), and compares every result with
 * a plain deque that follows the flavour's rules. Any difference aborts with a
 * message naming the operation, which libFuzzer reports as a crash.
 *
 * Input layout (bytes past the end read as 0):
 *
 *   [0] mode    bit 0: 1 = raw ring, 0 = channel
 *               bit 1: channel with a drop function
 *               bits 2-3: start of the ring counters (SPSC, MPMC and RING,
 *                         via the test hooks in include/internal/testing.h): 0 = 0,
 *                         1 = UINT64_MAX - off, 2 = 2^32 - off, 3 = 2^63 - off
 *               bits 4-7: off / 3 (counters start up to 45 below the wrap)
 *   [1] [2] elem_size: [1] < 0x40 picks from fz_sizes[], else
 *               1 + ((([1] - 0x40) << 8) | [2]) % FZ_ELEM_MAX
 *   [3] capacity: < 0x80 picks from fz_caps[] (power-of-two edges), else
 *               1 + [3] % 70
 *   [4 ...] operations: an opcode byte (taken modulo the op table's size),
 *               then the op's argument byte if it has one.
 *
 * Messages: message number `id` (1, 2, 3 ... in send order) fills its
 * elem_size bytes with its own pattern: the id itself in the first (up to) 8
 * bytes, then words mixed from id and offset, so that a torn, stale, or
 * misordered copy differs from what the model expects.
 *
 * Model rules (SPEC §2–3, docs/ownership.md):
 *   - bounded flavours hold exactly `capacity` messages: a send into a full
 *     channel is SL_FULL (try), SL_TIMEDOUT (timed) and consumes nothing;
 *   - SL_RING never refuses an open send: into a full ring it displaces the
 *     oldest message, returns SL_EVICTED and hands the displaced message to the
 *     caller (raw push with a buffer, sl_chan_send_evict) or to the drop
 *     function (every other channel send form);
 *   - SL_LIST is unbounded (the harness stops sending at FZ_LIST_MAX to bound
 *     memory) and reports capacity SIZE_MAX;
 *   - close: sends return SL_CLOSED and consume nothing; receives drain what is
 *     inside, then return SL_CLOSED;
 *   - bad input (NULL arguments, zero counts, the wrong flavour or elem_size)
 *     returns SL_EINVAL (or 0 for the batch forms) and changes nothing;
 *   - sl_chan_free hands exactly the leftover messages to the drop function,
 *     oldest first; the drop function is called at no other time (except for
 *     SL_RING evictions, which are checked message by message).
 *   - a receive that fails leaves its output buffer untouched; a batch receive
 *     fills exactly a prefix of its buffer.
 *
 * Blocking forms are used only where a single thread cannot block: send into
 * a channel with room (or closed, or SL_RING), recv from a non-empty or closed
 * channel; otherwise the op falls back to its timed form with timeout 0.
 *
 * Set SLUICE_FUZZ_TRACE=1 to print every operation (to replay a crash:
 * SLUICE_FUZZ_TRACE=1 ./fuzz_ring crash-...).
 */
#ifndef SLUICE_FUZZ_COMMON_H
#define SLUICE_FUZZ_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/chan.h>
#include <sluice/select.h>

#include "testing.h" /* channels/: sl__chan_new_at and the raw *_init_at hooks */

#define FZ_ELEM_MAX 300
#define FZ_LIST_MAX 4096 /* the model stops sending to SL_LIST here */
#define FZ_BATCH_MAX 64

/* The harness's byte loops (message patterns, comparisons) are kept out of
 * libFuzzer's coverage and comparison tracing: they would dominate the run
 * time and add nothing but noise to the feedback. */
#if defined(__clang__)
#define FZ_NOCOV __attribute__((no_sanitize("coverage"), noinline))
#else
#define FZ_NOCOV
#endif

/* ---- failure and trace --------------------------------------------------- */

static int fz_trace = -1;
static const char *fz_op_name = "setup";
static size_t fz_op_index;

static void fz_trace_init(void)
{
    if (fz_trace < 0) {
        const char *v = getenv("SLUICE_FUZZ_TRACE");
        fz_trace = v && *v && *v != '0';
    }
}

__attribute__((noreturn, format(printf, 1, 2))) static void fz_fail(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "\nsluice fuzz: MISMATCH at op #%zu (%s): ", fz_op_index, fz_op_name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

#define FZ_CHECK(cond, ...)                                                                  \
    do {                                                                                     \
        if (!(cond))                                                                         \
            fz_fail(__VA_ARGS__);                                                            \
    } while (0)

static void fz_begin(const char *name, unsigned long long arg)
{
    fz_op_name = name;
    fz_op_index++;
    if (fz_trace)
        fprintf(stderr, "  #%zu %s %llu\n", fz_op_index, name, arg);
}

static const char *fz_st(sl_status s) { return sl_status_str(s); }

/* ---- input --------------------------------------------------------------- */

typedef struct fz_in {
    const uint8_t *p;
    size_t n, i;
} fz_in;

static uint8_t fz_byte(fz_in *in) { return in->i < in->n ? in->p[in->i++] : 0; }
static bool fz_more(const fz_in *in) { return in->i < in->n; }

static const size_t fz_sizes[] = {1,  2,  3,  4,  5,  7,   8,   9,   12,  15,  16,
                                  17, 24, 31, 32, 33, 48,  63,  64,  65,  96,  127,
                                  128, 129, 192, 255, 256, 257, 299, 300, sizeof(void *)};
static const size_t fz_caps[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  15, 16,  17,
                                 31, 32, 33, 63, 64, 65, 127, 128, 129, 1, 2, 3};

typedef struct fz_config {
    bool raw;
    bool drop;
    uint64_t start;
    size_t elem_size;
    size_t capacity;
} fz_config;

static fz_config fz_read_config(fz_in *in)
{
    fz_config c;
    uint8_t m = fz_byte(in), e1 = fz_byte(in), e2 = fz_byte(in), k = fz_byte(in);
    c.raw = m & 1;
    c.drop = (m >> 1) & 1;
    uint64_t off = (uint64_t)(m >> 4) * 3;
    switch ((m >> 2) & 3) {
    case 1: c.start = UINT64_MAX - off; break;
    case 2: c.start = ((uint64_t)1 << 32) - off; break;
    case 3: c.start = ((uint64_t)1 << 63) - off; break;
    default: c.start = 0; break;
    }
    if (e1 < 0x40)
        c.elem_size = fz_sizes[e1 % (sizeof fz_sizes / sizeof fz_sizes[0])];
    else
        c.elem_size = 1 + ((((size_t)e1 - 0x40) << 8) | e2) % FZ_ELEM_MAX;
    if (k < 0x80)
        c.capacity = fz_caps[k % (sizeof fz_caps / sizeof fz_caps[0])];
    else
        c.capacity = 1 + (size_t)k % 70;
    return c;
}

/* ---- messages ------------------------------------------------------------ */

FZ_NOCOV static uint64_t fz_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

FZ_NOCOV static void fz_fill(uint8_t *b, size_t es, uint64_t id)
{
    for (size_t i = 0; i < es && i < 8; i++)
        b[i] = (uint8_t)(id >> (8 * i));
    for (size_t i = 8; i < es; i += 8) {
        uint64_t w = fz_mix(id * 0x100000001B3ull + i);
        size_t m = es - i < 8 ? es - i : 8;
        memcpy(b + i, &w, m);
    }
}

/* The id in a message's first bytes (for messages only). */
FZ_NOCOV static uint64_t fz_id_of(const uint8_t *b, size_t es)
{
    uint64_t id = 0;
    for (size_t i = 0; i < es && i < 8; i++)
        id |= (uint64_t)b[i] << (8 * i);
    return id;
}

FZ_NOCOV static void fz_expect_msg(const uint8_t *got, size_t es, uint64_t id, const char *what)
{
    uint8_t want[FZ_ELEM_MAX];
    fz_fill(want, es, id);
    for (size_t i = 0; i < es; i++)
        FZ_CHECK(got[i] == want[i],
                 "%s: expected message %llu (elem_size %zu), byte %zu is 0x%02x, want 0x%02x "
                 "(the bytes look like message %llu)",
                 what, (unsigned long long)id, es, i, got[i], want[i],
                 (unsigned long long)fz_id_of(got, es));
}

#define FZ_SENTINEL 0xA5

FZ_NOCOV static void fz_expect_untouched(const uint8_t *b, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        FZ_CHECK(b[i] == FZ_SENTINEL, "%s: byte %zu of a buffer that must stay untouched was written",
                 what, i);
}

/* Buffers sized exactly, so that ASan catches a copy of more than elem_size. */
FZ_NOCOV static uint8_t *fz_buf(size_t n)
{
    uint8_t *b = malloc(n ? n : 1);
    if (!b)
        abort();
    memset(b, FZ_SENTINEL, n ? n : 1);
    return b;
}

/* ---- the model: a deque of message ids ----------------------------------- */

typedef struct fz_model {
    uint64_t *ids;
    size_t head, tail, alloc;
    uint64_t next_id;
    size_t es;
    size_t cap;   /* SIZE_MAX: unbounded */
    int kind;     /* FZ_BOUNDED, FZ_UNBOUNDED, FZ_OVERWRITE */
    bool closed;
} fz_model;

enum { FZ_BOUNDED, FZ_UNBOUNDED, FZ_OVERWRITE };

static void fz_model_init(fz_model *m, int kind, size_t es, size_t cap)
{
    memset(m, 0, sizeof *m);
    m->kind = kind;
    m->es = es;
    m->cap = kind == FZ_UNBOUNDED ? SIZE_MAX : cap;
    m->next_id = 1;
    m->alloc = 64;
    m->ids = malloc(m->alloc * sizeof *m->ids);
    if (!m->ids)
        abort();
}

static void fz_model_free(fz_model *m) { free(m->ids); }

static size_t fz_len(const fz_model *m) { return m->tail - m->head; }
static bool fz_full(const fz_model *m) { return m->kind != FZ_UNBOUNDED && fz_len(m) >= m->cap; }
/* The harness's own limit for SL_LIST, to bound memory. */
static bool fz_at_limit(const fz_model *m)
{
    return m->kind == FZ_UNBOUNDED && fz_len(m) >= FZ_LIST_MAX;
}

static void fz_push(fz_model *m, uint64_t id)
{
    if (m->tail == m->alloc) {
        if (m->head > 0) {
            memmove(m->ids, m->ids + m->head, fz_len(m) * sizeof *m->ids);
            m->tail -= m->head;
            m->head = 0;
        }
        if (m->tail == m->alloc) {
            m->alloc *= 2;
            m->ids = realloc(m->ids, m->alloc * sizeof *m->ids);
            if (!m->ids)
                abort();
        }
    }
    m->ids[m->tail++] = id;
}

static uint64_t fz_pop(fz_model *m)
{
    if (m->head == m->tail)
        fz_fail("model: pop from empty (harness bug)");
    return m->ids[m->head++];
}

/* A fresh message: its id and its bytes in b. */
static uint64_t fz_new_msg(fz_model *m, uint8_t *b)
{
    uint64_t id = m->next_id++;
    fz_fill(b, m->es, id);
    return id;
}

/* ---- the drop function's log --------------------------------------------- */

typedef struct fz_drops {
    uint8_t *bytes;
    size_t count, alloc, es;
    /* ids the model expects the drop function to have received, in order */
    uint64_t *want;
    size_t nwant, wantalloc;
} fz_drops;

static fz_drops fz_droplog;
static int fz_drop_ctx_marker;

static void fz_drop_fn(void *elem, void *ctx)
{
    fz_drops *d = &fz_droplog;
    FZ_CHECK(ctx == &fz_drop_ctx_marker, "drop function called with ctx %p, want %p", ctx,
             (void *)&fz_drop_ctx_marker);
    FZ_CHECK(elem != NULL, "drop function called with NULL elem");
    if (d->count == d->alloc) {
        d->alloc = d->alloc ? 2 * d->alloc : 16;
        d->bytes = realloc(d->bytes, d->alloc * d->es);
        if (!d->bytes)
            abort();
    }
    memcpy(d->bytes + d->count * d->es, elem, d->es);
    d->count++;
}

static void fz_drops_reset(size_t es)
{
    fz_drops *d = &fz_droplog;
    free(d->bytes);
    free(d->want);
    memset(d, 0, sizeof *d);
    d->es = es;
}

static void fz_drops_expect(uint64_t id)
{
    fz_drops *d = &fz_droplog;
    if (d->nwant == d->wantalloc) {
        d->wantalloc = d->wantalloc ? 2 * d->wantalloc : 16;
        d->want = realloc(d->want, d->wantalloc * sizeof *d->want);
        if (!d->want)
            abort();
    }
    d->want[d->nwant++] = id;
}

/* The drop function got exactly the expected messages since the last check. */
static void fz_drops_check(const char *what)
{
    fz_drops *d = &fz_droplog;
    FZ_CHECK(d->count == d->nwant, "%s: drop function called %zu times, want %zu", what, d->count,
             d->nwant);
    for (size_t i = 0; i < d->count; i++)
        fz_expect_msg(d->bytes + i * d->es, d->es, d->want[i], what);
    d->count = 0;
    d->nwant = 0;
}

/* ---- the channel driver (every flavour) ---------------------------------- */

enum {
    C_SEND, C_TRY_SEND, C_SEND_FOR0, C_SEND_FOR1, C_TRY_SEND_N, C_SEND_PTR, C_SEND_EVICT,
    C_RECV, C_TRY_RECV, C_RECV_FOR0, C_RECV_FOR1, C_TRY_RECV_N,
    C_CLOSE, C_QUERY, C_BAD, C_FILL, C_DRAIN, C_SELECT,
};

/* Opcode byte -> op; sends and receives weighted up, close rare. */
static const uint8_t fz_chan_ops[] = {
    C_SEND,   C_TRY_SEND,  C_SEND_FOR0, C_SEND_FOR1, C_TRY_SEND_N, C_SEND_PTR,   C_SEND_EVICT,
    C_RECV,   C_TRY_RECV,  C_RECV_FOR0, C_RECV_FOR1, C_TRY_RECV_N, C_QUERY,      C_BAD,
    C_FILL,   C_DRAIN,     C_SELECT,    C_TRY_SEND,  C_TRY_RECV,   C_TRY_SEND_N, C_TRY_RECV_N,
    C_SEND,   C_RECV,      C_SELECT,    C_BAD,       C_SEND_EVICT, C_SEND_PTR,   C_FILL,
    C_DRAIN,  C_TRY_SEND,  C_TRY_RECV,  C_CLOSE,
};

typedef struct fz_chan_run {
    sl_chan *ch;
    fz_model m;
    sl_flavor flavor;
    bool drop;
} fz_chan_run;

static bool fz_ring(const fz_chan_run *r) { return r->flavor == SL_RING; }

/* After a successful (or evicting) send of id: the model's side. `to_caller`
 * is where the displaced message went for SL_RING (NULL: the drop function).
 * Returns the status the send must have returned. */
static sl_status fz_model_send(fz_chan_run *r, uint64_t id, uint8_t *to_caller,
                               uint64_t *evicted_id)
{
    sl_status want = SL_OK;
    if (r->m.kind == FZ_OVERWRITE && fz_full(&r->m)) {
        uint64_t old = fz_pop(&r->m);
        want = SL_EVICTED;
        if (evicted_id)
            *evicted_id = old;
        if (!to_caller && r->drop)
            fz_drops_expect(old);
    }
    fz_push(&r->m, id);
    return want;
}

/* What a send must return now, before it happens: SL_CLOSED, SL_FULL (for the
 * bounded flavours when full; the caller maps it to its form), or SL_OK /
 * SL_EVICTED (which fz_model_send applies). */
static sl_status fz_send_outcome(const fz_chan_run *r)
{
    if (r->m.closed)
        return SL_CLOSED;
    if (r->m.kind == FZ_BOUNDED && fz_full(&r->m))
        return SL_FULL;
    return r->m.kind == FZ_OVERWRITE && fz_full(&r->m) ? SL_EVICTED : SL_OK;
}

static void fz_check_state(fz_chan_run *r, const char *what)
{
    size_t len = sl_chan_len(r->ch);
    FZ_CHECK(len == fz_len(&r->m), "%s: sl_chan_len %zu, model %zu", what, len, fz_len(&r->m));
    bool closed = sl_chan_is_closed(r->ch);
    FZ_CHECK(closed == r->m.closed, "%s: sl_chan_is_closed %d, model %d", what, closed,
             r->m.closed);
    fz_drops_check(what);
}

/* One send through form `op` (C_SEND, C_TRY_SEND, C_SEND_FOR0/1, C_SEND_PTR). */
static void fz_chan_send(fz_chan_run *r, int op)
{
    if (fz_at_limit(&r->m))
        return;
    size_t es = r->m.es;
    uint8_t *b = fz_buf(es);
    uint64_t id = fz_new_msg(&r->m, b);
    sl_status pre = fz_send_outcome(r);
    sl_status st, want;
    if (op == C_SEND_PTR) {
        void *p;
        if (es != sizeof(void *)) {
            p = (void *)(uintptr_t)0x1234;
            st = sl_chan_send_ptr(r->ch, &p);
            FZ_CHECK(st == SL_EINVAL, "send_ptr on elem_size %zu: %s, want SL_EINVAL", es,
                     fz_st(st));
            FZ_CHECK(p == (void *)(uintptr_t)0x1234, "send_ptr SL_EINVAL changed the pointer");
            free(b);
            return;
        }
        if (pre == SL_FULL) { /* would block */
            free(b);
            return;
        }
        memcpy(&p, b, sizeof p);
        void *orig = p;
        st = sl_chan_send_ptr(r->ch, &p);
        if (pre == SL_CLOSED) {
            FZ_CHECK(st == SL_CLOSED, "send_ptr on closed: %s", fz_st(st));
            FZ_CHECK(p == orig, "send_ptr SL_CLOSED changed the pointer");
        } else {
            want = fz_model_send(r, id, NULL, NULL);
            FZ_CHECK(st == want, "send_ptr: %s, want %s", fz_st(st), fz_st(want));
            FZ_CHECK(p == NULL, "send_ptr %s left the pointer set", fz_st(st));
        }
        free(b);
        return;
    }
    if (op == C_SEND && pre == SL_FULL)
        op = C_SEND_FOR0; /* sl_chan_send would block */
    switch (op) {
    case C_SEND: st = sl_chan_send(r->ch, b); break;
    case C_TRY_SEND: st = sl_chan_try_send(r->ch, b); break;
    case C_SEND_FOR0: st = sl_chan_send_for(r->ch, b, 0); break;
    default: st = sl_chan_send_for(r->ch, b, 1); break;
    }
    if (pre == SL_CLOSED)
        want = SL_CLOSED;
    else if (pre == SL_FULL)
        want = op == C_TRY_SEND ? SL_FULL : SL_TIMEDOUT;
    else
        want = fz_model_send(r, id, NULL, NULL);
    FZ_CHECK(st == want, "send form %d of message %llu: %s, want %s (len %zu cap %zu)", op,
             (unsigned long long)id, fz_st(st), fz_st(want), fz_len(&r->m), r->m.cap);
    free(b);
}

static void fz_chan_send_evict(fz_chan_run *r)
{
    size_t es = r->m.es;
    uint8_t *b = fz_buf(es), *ev = fz_buf(es);
    uint64_t id = fz_new_msg(&r->m, b);
    sl_status st = sl_chan_send_evict(r->ch, b, ev);
    if (!fz_ring(r)) {
        FZ_CHECK(st == SL_EINVAL, "send_evict on flavour %d: %s, want SL_EINVAL", r->flavor,
                 fz_st(st));
        fz_expect_untouched(ev, es, "send_evict SL_EINVAL");
    } else if (r->m.closed) {
        FZ_CHECK(st == SL_CLOSED, "send_evict on closed: %s", fz_st(st));
        fz_expect_untouched(ev, es, "send_evict SL_CLOSED");
    } else {
        uint64_t old = 0;
        sl_status want = fz_model_send(r, id, ev, &old);
        FZ_CHECK(st == want, "send_evict of %llu: %s, want %s", (unsigned long long)id,
                 fz_st(st), fz_st(want));
        if (want == SL_EVICTED)
            fz_expect_msg(ev, es, old, "send_evict's displaced message");
        else
            fz_expect_untouched(ev, es, "send_evict SL_OK");
    }
    free(b);
    free(ev);
}

static void fz_chan_send_n(fz_chan_run *r, size_t k)
{
    size_t es = r->m.es;
    if (r->m.kind == FZ_UNBOUNDED && fz_len(&r->m) + k > FZ_LIST_MAX)
        return;
    uint8_t *b = fz_buf(k * es);
    uint64_t first = r->m.next_id;
    for (size_t i = 0; i < k; i++)
        fz_new_msg(&r->m, b + i * es);
    size_t want;
    if (r->m.closed || k == 0)
        want = 0;
    else if (r->m.kind == FZ_BOUNDED)
        want = k < r->m.cap - fz_len(&r->m) ? k : r->m.cap - fz_len(&r->m);
    else
        want = k;
    size_t got = sl_chan_try_send_n(r->ch, b, k);
    FZ_CHECK(got == want, "try_send_n(%zu): %zu sent, want %zu (len %zu cap %zu closed %d)", k,
             got, want, fz_len(&r->m), r->m.cap, r->m.closed);
    for (size_t i = 0; i < want; i++)
        fz_model_send(r, first + i, NULL, NULL);
    free(b);
}

/* One receive through form `op` (C_RECV, C_TRY_RECV, C_RECV_FOR0/1). */
static void fz_chan_recv(fz_chan_run *r, int op)
{
    size_t es = r->m.es;
    uint8_t *out = fz_buf(es);
    bool empty = fz_len(&r->m) == 0;
    if (op == C_RECV && empty && !r->m.closed)
        op = C_RECV_FOR0; /* sl_chan_recv would block */
    sl_status st;
    switch (op) {
    case C_RECV: st = sl_chan_recv(r->ch, out); break;
    case C_TRY_RECV: st = sl_chan_try_recv(r->ch, out); break;
    case C_RECV_FOR0: st = sl_chan_recv_for(r->ch, out, 0); break;
    default: st = sl_chan_recv_for(r->ch, out, 1); break;
    }
    if (!empty) {
        uint64_t id = fz_pop(&r->m);
        FZ_CHECK(st == SL_OK, "recv form %d: %s, want SL_OK with message %llu", op, fz_st(st),
                 (unsigned long long)id);
        fz_expect_msg(out, es, id, "received message");
    } else {
        sl_status want = r->m.closed ? SL_CLOSED : op == C_TRY_RECV ? SL_EMPTY : SL_TIMEDOUT;
        FZ_CHECK(st == want, "recv form %d on empty: %s, want %s", op, fz_st(st), fz_st(want));
        fz_expect_untouched(out, es, "failed receive's buffer");
    }
    free(out);
}

/* A batch receive of up to k: form 0 sl_chan_try_recv_n, 1 and 2
 * sl_chan_recv_n_for with 0 and 1 ns, 3 sl_chan_recv_n (recv_n_for(0) where
 * it would block). */
static void fz_chan_recv_n(fz_chan_run *r, size_t k, unsigned form)
{
    size_t es = r->m.es;
    uint8_t *out = fz_buf(k * es);
    size_t want = k < fz_len(&r->m) ? k : fz_len(&r->m), got = 0;
    if (form == 3 && want == 0 && !r->m.closed)
        form = 1;
    if (form == 0) {
        got = sl_chan_try_recv_n(r->ch, out, k);
    } else {
        sl_status st = form == 3 ? sl_chan_recv_n(r->ch, out, k, &got)
                                 : sl_chan_recv_n_for(r->ch, out, k, form - 1, &got);
        sl_status want_st = k == 0     ? SL_EINVAL
                            : want     ? SL_OK
                            : r->m.closed ? SL_CLOSED
                                          : SL_TIMEDOUT;
        FZ_CHECK(st == want_st, "recv_n form %u (%zu): %s, want %s", form, k, fz_st(st),
                 fz_st(want_st));
    }
    FZ_CHECK(got == want, "recv_n form %u (%zu): %zu, want %zu", form, k, got, want);
    for (size_t i = 0; i < got; i++)
        fz_expect_msg(out + i * es, es, fz_pop(&r->m), "try_recv_n message");
    fz_expect_untouched(out + got * es, (k - got) * es, "try_recv_n past the count");
    free(out);
}

/* Bad input: SL_EINVAL (or 0) and nothing changes. */
static void fz_chan_bad(fz_chan_run *r, uint8_t v)
{
    size_t es = r->m.es;
    uint8_t *b = fz_buf(es), *ev = fz_buf(es);
    fz_fill(b, es, 0xBADBAD);
    sl_chan *ch = r->ch;
    sl_status st = SL_OK;
    size_t n;
    void *p = (void *)(uintptr_t)0x5678;
    switch (v % 20) {
    case 0: st = sl_chan_try_send(NULL, b); break;
    case 1: st = sl_chan_try_send(ch, NULL); break;
    case 2: st = sl_chan_send(ch, NULL); break;
    case 3: st = sl_chan_send(NULL, b); break;
    case 4: st = sl_chan_send_for(ch, NULL, 0); break;
    case 5: st = sl_chan_send_ptr(ch, NULL); break;
    case 6:
        st = sl_chan_send_ptr(NULL, &p);
        FZ_CHECK(p == (void *)(uintptr_t)0x5678, "send_ptr(NULL, &p) changed p");
        break;
    case 7: st = sl_chan_send_evict(ch, NULL, ev); break;
    case 8: st = sl_chan_send_evict(ch, b, NULL); break;
    case 9: st = sl_chan_send_evict(NULL, b, ev); break;
    case 10: st = sl_chan_recv(ch, NULL); break;
    case 11: st = sl_chan_try_recv(ch, NULL); break;
    case 12: st = sl_chan_recv_for(ch, NULL, 0); break;
    case 13: st = sl_chan_recv(NULL, ev); break;
    case 14: st = sl_chan_try_recv(NULL, ev); break;
    case 15: st = sl_chan_recv_for(NULL, ev, 1); break;
    case 16:
        n = sl_chan_try_send_n(ch, NULL, 3) + sl_chan_try_send_n(NULL, b, 1) +
            sl_chan_try_send_n(ch, b, 0);
        FZ_CHECK(n == 0, "try_send_n with bad input sent %zu", n);
        st = SL_EINVAL;
        break;
    case 17:
        n = sl_chan_try_recv_n(ch, NULL, 3) + sl_chan_try_recv_n(NULL, ev, 1) +
            sl_chan_try_recv_n(ch, ev, 0);
        FZ_CHECK(n == 0, "try_recv_n with bad input received %zu", n);
        st = SL_EINVAL;
        break;
    case 18: {
        size_t idx = 77;
        sl_select_case good = {ch, SL_SEL_RECV, ev};
        sl_select_case nullbuf[2] = {{ch, SL_SEL_SEND, NULL}, {ch, SL_SEL_RECV, ev}};
        sl_select_case badop = {ch, (sl_select_op)7, ev};
        sl_select_case nochan[2] = {{NULL, SL_SEL_SEND, b}, {NULL, SL_SEL_RECV, ev}};
        sl_status s[5] = {sl_select(NULL, 1, 0, &idx), sl_select(&good, 1, 0, NULL),
                          sl_select(nullbuf, 2, 0, &idx), sl_select(&badop, 1, 0, &idx),
                          sl_select(nochan, 2, 0, &idx)};
        for (int i = 0; i < 5; i++)
            FZ_CHECK(s[i] == SL_EINVAL, "bad select #%d: %s, want SL_EINVAL", i, fz_st(s[i]));
        st = sl_select(&good, 0, 0, &idx);
        FZ_CHECK(idx == 77, "bad select wrote *index");
        break;
    }
    default:
        /* NULL everywhere a channel is read */
        sl_chan_close(NULL);
        sl_chan_free(NULL);
        FZ_CHECK(!sl_chan_is_closed(NULL) && sl_chan_len(NULL) == 0 && sl_chan_cap(NULL) == 0 &&
                     sl_chan_flavor(NULL) == 0 && sl_chan_elem_size(NULL) == 0,
                 "queries on NULL");
        if (es != sizeof(void *)) {
            st = sl_chan_send_ptr(ch, &p);
            FZ_CHECK(p == (void *)(uintptr_t)0x5678, "send_ptr on wrong elem_size changed p");
        } else {
            st = SL_EINVAL;
        }
        break;
    }
    FZ_CHECK(st == SL_EINVAL, "bad input #%u: %s, want SL_EINVAL", v % 20, fz_st(st));
    fz_expect_untouched(ev, es, "bad input's output buffer");
    free(b);
    free(ev);
}

/* Creation with bad options: SL_EINVAL and *out untouched. */
static void fz_chan_bad_new(fz_chan_run *r, uint8_t v)
{
    sl_chan *sentinel = (sl_chan *)(uintptr_t)0xdead0, *out = sentinel;
    sl_chan_opts o = {r->flavor, r->m.es, r->m.cap == SIZE_MAX ? 4 : r->m.cap, NULL, NULL};
    bool bounded = r->flavor != SL_LIST;
    sl_status st;
    switch (v % 8) {
    case 0: st = sl_chan_new(NULL, &o); break;
    case 1: st = sl_chan_new(&out, NULL); break;
    case 2: o.flavor = (sl_flavor)0; st = sl_chan_new(&out, &o); break;
    case 3: /* past the last flavour, or the reserved SL__RENDEZVOUS (SL_MPMC of capacity 0 makes one) */
        o.flavor = (sl_flavor)(v & 8 ? SL__RENDEZVOUS : SL__RENDEZVOUS + 1 + v / 16);
        st = sl_chan_new(&out, &o);
        break;
    case 4: o.elem_size = 0; st = sl_chan_new(&out, &o); break;
    case 5: o.elem_size = SL_ELEM_MAX + 1 + v; st = sl_chan_new(&out, &o); break;
    case 6:
        o.capacity = 0;
        st = sl_chan_new(&out, &o);
        if (!bounded) { /* SL_LIST ignores the capacity */
            FZ_CHECK(st == SL_OK, "SL_LIST with capacity 0: %s, want SL_OK", fz_st(st));
            FZ_CHECK(sl_chan_cap(out) == SIZE_MAX, "SL_LIST cap %zu", sl_chan_cap(out));
            sl_chan_free(out);
            return;
        }
        if (r->flavor == SL_MPMC) { /* a rendezvous channel: nothing is ever inside */
            static unsigned char x[SL_ELEM_MAX];
            FZ_CHECK(st == SL_OK, "SL_MPMC with capacity 0: %s, want SL_OK", fz_st(st));
            FZ_CHECK(sl_chan_cap(out) == 0 && sl_chan_len(out) == 0, "rendezvous cap %zu len %zu",
                     sl_chan_cap(out), sl_chan_len(out));
            FZ_CHECK(sl_chan_try_send(out, x) == SL_FULL, "rendezvous try_send without a receiver");
            sl_chan_free(out);
            return;
        }
        break;
    default:
        o.capacity = v & 8 ? SIZE_MAX : SIZE_MAX / 2 + 1;
        if (!bounded)
            return;
        st = sl_chan_new(&out, &o);
        break;
    }
    FZ_CHECK(st == SL_EINVAL, "sl_chan_new bad options #%u: %s, want SL_EINVAL", v % 8,
             fz_st(st));
    FZ_CHECK(out == sentinel, "sl_chan_new failure wrote *out");
}

/* Select over up to two send cases, one receive case and a nil case on this
 * channel (optionally padded with nil cases past select's on-stack limit):
 * exactly one ready case happens, or SL_TIMEDOUT when none is ready. */
static void fz_chan_select(fz_chan_run *r, uint8_t v)
{
    size_t es = r->m.es;
    if (fz_at_limit(&r->m))
        return;
    enum { FEW = 4, MANY = 70 };
    sl_select_case cases[MANY];
    uint64_t ids[FEW] = {0};
    uint8_t *bufs[FEW] = {0};
    size_t n = 0;
    bool has_chan = false;
    for (int c = 0; c < 4; c++) {
        if (!(v & (1u << c)))
            continue;
        bufs[n] = fz_buf(es);
        if (c == 0 || c == 3) { /* send */
            ids[n] = fz_new_msg(&r->m, bufs[n]);
            cases[n] = (sl_select_case){r->ch, SL_SEL_SEND, bufs[n]};
            has_chan = true;
        } else if (c == 1) {
            cases[n] = (sl_select_case){r->ch, SL_SEL_RECV, bufs[n]};
            has_chan = true;
        } else {
            cases[n] = (sl_select_case){NULL, (v & 16) ? SL_SEL_SEND : SL_SEL_RECV, bufs[n]};
        }
        n++;
    }
    size_t few = n;
    if (v & 64) /* more cases than select keeps on its stack: nil ones */
        for (; n < MANY; n++)
            cases[n] = (sl_select_case){NULL, SL_SEL_RECV, NULL};
    uint64_t timeout = (v & 32) ? 1 : 0;
    size_t idx = SIZE_MAX;
    sl_status pre_send = fz_send_outcome(r);
    bool send_ready = pre_send != SL_FULL;
    bool recv_ready = fz_len(&r->m) > 0 || r->m.closed;
    sl_status st = sl_select(cases, n, timeout, &idx);
    bool any_ready = false;
    for (size_t i = 0; i < few; i++)
        if (cases[i].ch)
            any_ready |= cases[i].op == SL_SEL_SEND ? send_ready : recv_ready;
    if (!has_chan) {
        FZ_CHECK(st == SL_EINVAL, "select without a channel: %s, want SL_EINVAL", fz_st(st));
        FZ_CHECK(idx == SIZE_MAX, "select SL_EINVAL wrote *index");
    } else if (!any_ready) {
        FZ_CHECK(st == SL_TIMEDOUT, "select with nothing ready: %s (index %zu)", fz_st(st), idx);
    } else {
        FZ_CHECK(idx < few && cases[idx].ch, "select %s chose index %zu of %zu", fz_st(st), idx,
                 n);
        if (cases[idx].op == SL_SEL_SEND) {
            FZ_CHECK(send_ready, "select performed a send that was not ready: %s", fz_st(st));
            sl_status want = pre_send == SL_CLOSED ? SL_CLOSED
                                                   : fz_model_send(r, ids[idx], NULL, NULL);
            FZ_CHECK(st == want, "select send: %s, want %s", fz_st(st), fz_st(want));
        } else {
            FZ_CHECK(recv_ready, "select performed a receive that was not ready: %s", fz_st(st));
            if (fz_len(&r->m) > 0) {
                uint64_t id = fz_pop(&r->m);
                FZ_CHECK(st == SL_OK, "select recv: %s, want SL_OK", fz_st(st));
                fz_expect_msg(bufs[idx], es, id, "select's received message");
            } else {
                FZ_CHECK(st == SL_CLOSED, "select recv on closed: %s", fz_st(st));
            }
        }
    }
    for (size_t i = 0; i < few; i++) {
        if (cases[i].op == SL_SEL_RECV && !(i == idx && st == SL_OK))
            fz_expect_untouched(bufs[i], es, "select's unchosen receive buffer");
        free(bufs[i]);
    }
}

/* Runs the channel part of a target: flavour from the target, the rest from
 * the input. */
static void fz_run_chan(sl_flavor flavor, const fz_config *cfg, fz_in *in)
{
    fz_chan_run r;
    memset(&r, 0, sizeof r);
    r.flavor = flavor;
    r.drop = cfg->drop;
    int kind = flavor == SL_LIST ? FZ_UNBOUNDED : flavor == SL_RING ? FZ_OVERWRITE : FZ_BOUNDED;
    fz_model_init(&r.m, kind, cfg->elem_size, cfg->capacity);
    fz_drops_reset(cfg->elem_size);
    sl_chan_opts o = {flavor, cfg->elem_size, cfg->capacity, cfg->drop ? fz_drop_fn : NULL,
                      cfg->drop ? &fz_drop_ctx_marker : NULL};
    fz_op_index = 0;
    fz_begin("sl_chan_new", cfg->capacity);
    sl_status st = sl__chan_new_at(&r.ch, &o, cfg->start);
    FZ_CHECK(st == SL_OK, "sl_chan_new(flavour %d, elem_size %zu, capacity %zu): %s", flavor,
             cfg->elem_size, cfg->capacity, fz_st(st));
    size_t want_cap = flavor == SL_LIST ? SIZE_MAX : cfg->capacity;
    FZ_CHECK(sl_chan_cap(r.ch) == want_cap, "cap %zu, want %zu", sl_chan_cap(r.ch), want_cap);
    FZ_CHECK(sl_chan_flavor(r.ch) == flavor, "flavor %d", sl_chan_flavor(r.ch));
    FZ_CHECK(sl_chan_elem_size(r.ch) == cfg->elem_size, "elem_size %zu",
             sl_chan_elem_size(r.ch));
    fz_check_state(&r, "after new");

    while (fz_more(in)) {
        uint8_t op = fz_chan_ops[fz_byte(in) % sizeof fz_chan_ops];
        uint8_t arg;
        switch (op) {
        case C_SEND: fz_begin("send", 0); fz_chan_send(&r, C_SEND); break;
        case C_TRY_SEND: fz_begin("try_send", 0); fz_chan_send(&r, C_TRY_SEND); break;
        case C_SEND_FOR0: fz_begin("send_for(0)", 0); fz_chan_send(&r, C_SEND_FOR0); break;
        case C_SEND_FOR1: fz_begin("send_for(1ns)", 1); fz_chan_send(&r, C_SEND_FOR1); break;
        case C_SEND_PTR: fz_begin("send_ptr", 0); fz_chan_send(&r, C_SEND_PTR); break;
        case C_SEND_EVICT: fz_begin("send_evict", 0); fz_chan_send_evict(&r); break;
        case C_TRY_SEND_N:
            arg = fz_byte(in);
            fz_begin("try_send_n", arg % (FZ_BATCH_MAX + 1));
            fz_chan_send_n(&r, arg % (FZ_BATCH_MAX + 1));
            break;
        case C_RECV: fz_begin("recv", 0); fz_chan_recv(&r, C_RECV); break;
        case C_TRY_RECV: fz_begin("try_recv", 0); fz_chan_recv(&r, C_TRY_RECV); break;
        case C_RECV_FOR0: fz_begin("recv_for(0)", 0); fz_chan_recv(&r, C_RECV_FOR0); break;
        case C_RECV_FOR1: fz_begin("recv_for(1ns)", 1); fz_chan_recv(&r, C_RECV_FOR1); break;
        case C_TRY_RECV_N:
            arg = fz_byte(in);
            fz_begin("try_recv_n / recv_n(_for)", arg);
            fz_chan_recv_n(&r, arg % (FZ_BATCH_MAX + 1), arg / (FZ_BATCH_MAX + 1));
            break;
        case C_CLOSE:
            fz_begin("close", 0);
            sl_chan_close(r.ch);
            r.m.closed = true;
            break;
        case C_QUERY:
            arg = fz_byte(in);
            fz_begin("query, bad sl_chan_new", arg);
            FZ_CHECK(sl_chan_cap(r.ch) == want_cap, "cap %zu, want %zu", sl_chan_cap(r.ch),
                     want_cap);
            FZ_CHECK(sl_chan_flavor(r.ch) == flavor, "flavor %d", sl_chan_flavor(r.ch));
            fz_chan_bad_new(&r, arg);
            /* any value, known or not, has a name */
            FZ_CHECK(sl_status_str((sl_status)arg) != NULL &&
                         sl_status_str((sl_status)(arg * 0x01010101u)) != NULL,
                     "sl_status_str(%u) is NULL", arg);
            break;
        case C_BAD:
            arg = fz_byte(in);
            fz_begin("bad input", arg % 20);
            fz_chan_bad(&r, arg);
            break;
        case C_FILL: {
            /* try_send until full (bounded), or `arg` sends (list, ring) */
            arg = fz_byte(in);
            fz_begin("fill", arg);
            size_t k = r.m.kind == FZ_BOUNDED ? r.m.cap + 1 : arg;
            for (size_t i = 0; i < k; i++)
                fz_chan_send(&r, C_TRY_SEND);
            break;
        }
        case C_DRAIN: {
            fz_begin("drain", 0);
            size_t k = fz_len(&r.m) + 1;
            for (size_t i = 0; i < k; i++)
                fz_chan_recv(&r, C_TRY_RECV);
            break;
        }
        default:
            arg = fz_byte(in);
            fz_begin("select", arg);
            fz_chan_select(&r, arg);
            break;
        }
        fz_check_state(&r, fz_op_name);
    }

    fz_begin("sl_chan_free", fz_len(&r.m));
    if (r.drop)
        while (fz_len(&r.m) > 0)
            fz_drops_expect(fz_pop(&r.m));
    sl_chan_free(r.ch);
    fz_drops_check("sl_chan_free's drops");
    fz_model_free(&r.m);
    fz_drops_reset(0);
}

/* ---- the raw ring driver ------------------------------------------------- */

/* A flavour's raw operations, behind one interface. */
typedef struct fz_raw_ops {
    const char *name;
    int kind;
    /* init with (es, cap, start); NULL on failure (with *st) */
    void *(*create)(size_t es, size_t cap, uint64_t start, sl_status *st);
    void (*destroy)(void *q);
    /* one push; evicted only for the overwrite ring (may be NULL) */
    sl_status (*push)(void *q, const void *elem, void *evicted);
    sl_status (*pop)(void *q, void *out);
    size_t (*push_n)(void *q, const void *elems, size_t n); /* NULL: none */
    size_t (*pop_n)(void *q, void *out, size_t n);
    size_t (*len)(const void *q);
    size_t (*cap)(const void *q); /* NULL: unbounded */
    /* flavour-specific bad-init checks, variant v */
    void (*bad_init)(size_t es, uint8_t v);
} fz_raw_ops;

enum { R_PUSH, R_PUSH_EV, R_POP, R_PUSH_N, R_POP_N, R_QUERY, R_BAD, R_FILL, R_DRAIN };
static const uint8_t fz_raw_op_table[] = {R_PUSH, R_PUSH_EV, R_POP,  R_PUSH_N, R_POP_N,
                                          R_QUERY, R_BAD,    R_FILL, R_DRAIN,  R_PUSH,
                                          R_POP,  R_PUSH_N,  R_POP_N, R_PUSH_EV, R_POP};

static void fz_raw_push(const fz_raw_ops *ops, void *q, fz_model *m, bool with_ev)
{
    if (fz_at_limit(m))
        return;
    size_t es = m->es;
    uint8_t *b = fz_buf(es), *ev = fz_buf(es);
    uint64_t id = fz_new_msg(m, b);
    sl_status st = ops->push(q, b, with_ev ? ev : NULL);
    sl_status want = SL_OK;
    uint64_t old = 0;
    if (fz_full(m)) {
        if (m->kind == FZ_OVERWRITE) {
            want = SL_EVICTED;
            old = fz_pop(m);
            fz_push(m, id);
        } else {
            want = SL_FULL;
        }
    } else {
        fz_push(m, id);
    }
    FZ_CHECK(st == want, "%s push of %llu: %s, want %s (len %zu cap %zu)", ops->name,
             (unsigned long long)id, fz_st(st), fz_st(want), fz_len(m), m->cap);
    if (want == SL_EVICTED && with_ev)
        fz_expect_msg(ev, es, old, "displaced message");
    else
        fz_expect_untouched(ev, es, "evicted buffer of a non-evicting push");
    free(b);
    free(ev);
}

static void fz_raw_pop(const fz_raw_ops *ops, void *q, fz_model *m)
{
    size_t es = m->es;
    uint8_t *out = fz_buf(es);
    sl_status st = ops->pop(q, out);
    if (fz_len(m) > 0) {
        uint64_t id = fz_pop(m);
        FZ_CHECK(st == SL_OK, "%s pop: %s, want SL_OK with %llu", ops->name, fz_st(st),
                 (unsigned long long)id);
        fz_expect_msg(out, es, id, "popped message");
    } else {
        FZ_CHECK(st == SL_EMPTY, "%s pop on empty: %s, want SL_EMPTY", ops->name, fz_st(st));
        fz_expect_untouched(out, es, "failed pop's buffer");
    }
    free(out);
}

static void fz_raw_push_n(const fz_raw_ops *ops, void *q, fz_model *m, size_t k)
{
    size_t es = m->es;
    if (!ops->push_n) { /* the ring has no batch push: k single pushes */
        for (size_t i = 0; i < k; i++)
            fz_raw_push(ops, q, m, i & 1);
        return;
    }
    if (m->kind == FZ_UNBOUNDED && fz_len(m) + k > FZ_LIST_MAX)
        return;
    uint8_t *b = fz_buf(k * es);
    uint64_t first = m->next_id;
    for (size_t i = 0; i < k; i++)
        fz_new_msg(m, b + i * es);
    size_t room = m->kind == FZ_BOUNDED ? m->cap - fz_len(m) : k;
    size_t want = k < room ? k : room;
    size_t got = ops->push_n(q, b, k);
    FZ_CHECK(got == want, "%s push_n(%zu): %zu, want %zu (len %zu cap %zu)", ops->name, k, got,
             want, fz_len(m), m->cap);
    for (size_t i = 0; i < want; i++)
        fz_push(m, first + i);
    free(b);
}

static void fz_raw_pop_n(const fz_raw_ops *ops, void *q, fz_model *m, size_t k)
{
    size_t es = m->es;
    uint8_t *out = fz_buf(k * es);
    size_t want = k < fz_len(m) ? k : fz_len(m);
    size_t got = ops->pop_n(q, out, k);
    FZ_CHECK(got == want, "%s pop_n(%zu): %zu, want %zu", ops->name, k, got, want);
    for (size_t i = 0; i < got; i++)
        fz_expect_msg(out + i * es, es, fz_pop(m), "pop_n message");
    fz_expect_untouched(out + got * es, (k - got) * es, "pop_n past the count");
    free(out);
}

static void fz_raw_bad(const fz_raw_ops *ops, void *q, fz_model *m, uint8_t v)
{
    size_t es = m->es;
    uint8_t *b = fz_buf(es), *out = fz_buf(es);
    fz_fill(b, es, 0xBADBAD);
    sl_status st = SL_EINVAL;
    size_t n = 0;
    switch (v % 10) {
    case 0: st = ops->push(NULL, b, out); break;
    case 1: st = ops->push(q, NULL, out); break;
    case 2: st = ops->pop(NULL, out); break;
    case 3: st = ops->pop(q, NULL); break;
    case 4:
        if (ops->push_n)
            n = ops->push_n(NULL, b, 1) + ops->push_n(q, NULL, 2) + ops->push_n(q, b, 0);
        break;
    case 5: n = ops->pop_n(NULL, out, 1) + ops->pop_n(q, NULL, 2) + ops->pop_n(q, out, 0); break;
    case 6:
        n = ops->len(NULL) + (ops->cap ? ops->cap(NULL) : 0);
        ops->destroy(NULL);
        break;
    default: ops->bad_init(es, v); break;
    }
    FZ_CHECK(st == SL_EINVAL, "%s bad input #%u: %s, want SL_EINVAL", ops->name, v % 10,
             fz_st(st));
    FZ_CHECK(n == 0, "%s bad input #%u: count %zu, want 0", ops->name, v % 10, n);
    fz_expect_untouched(out, es, "bad input's output buffer");
    free(b);
    free(out);
}

static void fz_run_raw(const fz_raw_ops *ops, const fz_config *cfg, fz_in *in)
{
    fz_model m;
    fz_model_init(&m, ops->kind, cfg->elem_size, cfg->capacity);
    fz_op_index = 0;
    fz_begin("init", cfg->capacity);
    sl_status st = SL_OK;
    void *q = ops->create(cfg->elem_size, cfg->capacity, cfg->start, &st);
    FZ_CHECK(q && st == SL_OK, "%s init(elem_size %zu, capacity %zu): %s", ops->name,
             cfg->elem_size, cfg->capacity, fz_st(st));
    if (ops->cap)
        FZ_CHECK(ops->cap(q) == cfg->capacity, "%s cap %zu, want %zu", ops->name, ops->cap(q),
                 cfg->capacity);
    while (fz_more(in)) {
        uint8_t op = fz_raw_op_table[fz_byte(in) % sizeof fz_raw_op_table], arg;
        switch (op) {
        case R_PUSH: fz_begin("push", 0); fz_raw_push(ops, q, &m, false); break;
        case R_PUSH_EV: fz_begin("push(evicted buf)", 1); fz_raw_push(ops, q, &m, true); break;
        case R_POP: fz_begin("pop", 0); fz_raw_pop(ops, q, &m); break;
        case R_PUSH_N:
            arg = fz_byte(in);
            fz_begin("push_n", arg % (FZ_BATCH_MAX + 1));
            fz_raw_push_n(ops, q, &m, arg % (FZ_BATCH_MAX + 1));
            break;
        case R_POP_N:
            arg = fz_byte(in);
            fz_begin("pop_n", arg % (FZ_BATCH_MAX + 1));
            fz_raw_pop_n(ops, q, &m, arg % (FZ_BATCH_MAX + 1));
            break;
        case R_QUERY:
            fz_begin("query", 0);
            if (ops->cap)
                FZ_CHECK(ops->cap(q) == cfg->capacity, "%s cap %zu, want %zu", ops->name,
                         ops->cap(q), cfg->capacity);
            break;
        case R_BAD:
            arg = fz_byte(in);
            fz_begin("bad input", arg % 10);
            fz_raw_bad(ops, q, &m, arg);
            break;
        case R_FILL: {
            arg = fz_byte(in);
            fz_begin("fill", arg);
            size_t k = m.kind == FZ_BOUNDED ? m.cap + 1 : arg;
            for (size_t i = 0; i < k; i++)
                fz_raw_push(ops, q, &m, i & 1);
            break;
        }
        default: {
            fz_begin("drain", 0);
            size_t k = fz_len(&m) + 1;
            for (size_t i = 0; i < k; i++)
                fz_raw_pop(ops, q, &m);
            break;
        }
        }
        size_t len = ops->len(q);
        FZ_CHECK(len == fz_len(&m), "%s len %zu, model %zu", ops->name, len, fz_len(&m));
    }
    fz_begin("destroy", fz_len(&m));
    ops->destroy(q);
    fz_model_free(&m);
}

/* Allocates a raw ring struct with its cache-line alignment. */
static void *fz_aligned(size_t size)
{
    void *p = aligned_alloc(SL_CACHELINE, (size + SL_CACHELINE - 1) & ~(size_t)(SL_CACHELINE - 1));
    if (!p)
        abort();
    memset(p, 0, size);
    return p;
}

/* The entry point every target shares. */
static int fz_main(sl_flavor flavor, const fz_raw_ops *ops, const uint8_t *data, size_t size)
{
    fz_trace_init();
    fz_in in = {data, size, 0};
    fz_config cfg = fz_read_config(&in);
    if (fz_trace)
        fprintf(stderr, "sluice fuzz: %s %s elem_size %zu capacity %zu start %llu drop %d\n",
                ops->name, cfg.raw ? "raw" : "channel", cfg.elem_size, cfg.capacity,
                (unsigned long long)cfg.start, cfg.drop);
    if (cfg.raw)
        fz_run_raw(ops, &cfg, &in);
    else
        fz_run_chan(flavor, &cfg, &in);
    return 0;
}

#endif /* SLUICE_FUZZ_COMMON_H */
