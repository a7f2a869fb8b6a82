/*
 * tests/stress_lincheck.c — linearizability of the raw SL_MPMC queue, the
 * SL_RING overwrite ring and the SL_LIST list, checked history by history.
 *
 * Each round records one short concurrent history on a fresh queue: three
 * threads, released together, run four random try_push / try_pop calls each;
 * every call is stamped with its invocation and response times and its result.
 * The queue is then drained at rest, so a message that was lost, duplicated or
 * left behind shows up too. The checker (Wing & Gong's backtracking search,
 * memoized on (calls done, model state) as in Lowe, "Testing for
 * linearizability", 2017) looks for a total order of the twelve calls that
 *
 *   - respects real time: a call that returned before another was invoked
 *     comes first;
 *   - the sequential FIFO of capacity c accepts, starting from what was
 *     pushed before the round and ending with exactly what the drain found:
 *     push → SL_OK if size < c, else SL_FULL; pop → the oldest message, or
 *     SL_EMPTY if there is none. SL_LIST is unbounded: a push is always SL_OK.
 *     SL_RING never refuses: a push → SL_OK if size < c, else SL_EVICTED
 *     with the oldest message handed back (the one removed, in one step).
 *
 * What docs/guarantees.md promises, and how this file checks it:
 *
 *   - SL_EMPTY while a pop that has taken the last message (its CAS on the
 *     cell) has not returned is linearizable as it stands: the taking pop
 *     linearizes first. Strict check, no exception.
 *   - SL_FULL with 8-byte messages (kept in the cells; a call's copy happens
 *     before its push or after its pop takes effect, so it holds nothing) is
 *     exact: strict check, no exception.
 *   - SL_FULL with larger messages is relative to slots: it linearizes when every
 *     slot is full *or held by a push or pop in progress* (a push between
 *     taking a free slot and publishing it, a pop between claiming a message
 *     and giving its slot back). That is weaker than the sequential FIFO: with
 *     capacity 1, a pop that has claimed the only message lets another pop
 *     answer SL_EMPTY and, afterwards, a push answer SL_FULL, and no order of
 *     the three explains both answers. So every history is first checked
 *     strictly; one that fails and contains an SL_FULL is checked again
 *     against the documented model, in which a successful push or pop holds a
 *     slot between two events inside its interval (push: take a slot, then
 *     publish; pop: claim the oldest message, then free its slot) and SL_FULL
 *     needs size + held slots >= c. Such histories are counted and the first
 *     one of each configuration is printed; they do not fail the test. A
 *     history without SL_FULL, or one the relaxed model rejects too, fails.
 *   - SL_MPMC's swap form (9 to 256 bytes) holds spares, not ring slots, so
 *     its relaxed model differs: a push, whatever it returns, may hold one of
 *     the c spares from a first event (take) to its last: a successful one
 *     publishes (needs size < c) and then gives a spare back, a third event
 *     (the slot its cell handed it: between the two the message is in the
 *     queue and the spare still held); an SL_FULL one's second event needs
 *     size == c, and it too gives its spare back in a third event (the push
 *     found the ring full after taking a spare, and a thread preempted
 *     between that look and the give-back makes others' pushes say SL_FULL
 *     on an emptied queue). A push that holds none says SL_FULL when size == c or when
 *     c other pushes hold spares; a pop is one event (it copies before its
 *     take and holds nothing).
 *
 * Timestamps: CLOCK_MONOTONIC (the TSC through the vDSO here, synchronised
 * across cores) read immediately around the call, with a full fence between
 * the clock read and the call on either side, so that no memory access of the
 * call is performed before its invocation stamp or after its response stamp.
 * "a before b" needs resp(a) < inv(b) strictly: equal stamps count as overlap,
 * which can only hide a violation, never invent one.
 *
 * Overlap on two cores: three threads (oversubscribed with the coordinator),
 * a start flag they spin on after the barrier and again, briefly, before each
 * call, random short spins and rare yields between calls, and a mix of
 * push-heavy and pop-heavy scripts so that SL_FULL and SL_EMPTY both happen.
 * Because a ~100 ns call is almost never preempted in the middle by itself,
 * in three rounds out of four one call is also held inside the queue's own
 * message copy by a page fault (see lc_segv): a push holding a slot it has
 * not published, a pop holding a message it has claimed. Queue counters start
 * near 2^64 in half of the histories so cycles wrap inside them. The last
 * configuration breaks "fresh queue" on purpose: one list of 32-slot segments
 * (1 KiB messages), drained at rest after every round, so that rounds cross
 * segment boundaries. Message bytes beyond the first eight are checked for
 * tearing; histories use 8-, 16- or 1 KiB messages, a third each (SL_MPMC
 * keeps 8-byte messages in its cells, larger ones in slots).
 *
 * SL_STRESS_SCALE scales the number of histories; SL_STRESS_SEED fixes the
 * scripts (not the timing) of a run.
 */
#include "harness.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "sluice/list.h"
#include "sluice/mpmc.h"
#include "sluice/ring.h"
#include "spin.h"
#include "testing.h"

#define TC_TIMEOUT 150
#define LC_THREADS 3
#define LC_PER_THREAD 4
#define LC_OPS (LC_THREADS * LC_PER_THREAD)
#define LC_PREFILL_MAX 3
/* Value ids 1..15 fit in a nibble: the model queue is a packed uint64_t. */
#define LC_VALUES (LC_PREFILL_MAX + LC_OPS)
#define LC_DRAIN_MAX 32
/* Pause hints a thread waits for the others before each call (several µs),
 * and between yields while it waits for the round to start: long enough for
 * the threads that are running to line up, short enough that on two busy
 * cores a thread that is not running holds the others only briefly. */
#define LC_ALIGN_SPIN 256
#define LC_START_YIELD 256
#define LC_ESZ_MAX 1024
/* After LC_MIN_HISTORIES, a configuration stops early (and says so) past
 * this much wall time: the histories are cheap (tens of µs) on a quiet
 * machine, but an overloaded one or a sanitizer build must stay well inside
 * the Check timeout. */
#define LC_MIN_HISTORIES 2000
#define LC_TIME_CAP_NS (4ull * 1000000000ull)
#define LC_SECOND 0x80u /* in a search path: the second event of a call */
#define LC_THIRD 0x40u  /* ... its third (a swap-form push giving its spare back) */
#define GOLDEN 0x9E3779B97F4A7C15ull
#ifndef ULL
#define ULL(x) ((unsigned long long)(x))
#endif
#ifndef N_OF
#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))
#endif

_Static_assert(LC_VALUES <= 15, "value ids must fit in a nibble");
_Static_assert(LC_OPS <= 16, "call masks are 16 bits in the memo key");

/* ---- configurations ------------------------------------------------------- */

typedef enum lc_kind { LC_MPMC, LC_LIST, LC_RING } lc_kind;

typedef struct lc_cfg {
    const char *name;
    lc_kind kind;
    size_t cap;         /* SL_MPMC and SL_RING capacity; 0 for the unbounded list */
    size_t esz;         /* message size; 0: 8, 16 or 1024 bytes, per history */
    bool reuse;         /* list only: one list for every round, drained between */
    uint64_t histories; /* at SL_STRESS_SCALE 1 */
} lc_cfg;

static const lc_cfg lc_cfgs[] = {
    {"mpmc cap 1", LC_MPMC, 1, 0, false, 20000},
    {"mpmc cap 2", LC_MPMC, 2, 0, false, 20000},
    {"mpmc cap 3", LC_MPMC, 3, 0, false, 20000},
    {"ring cap 1", LC_RING, 1, 0, false, 8000},
    {"ring cap 2", LC_RING, 2, 0, false, 8000},
    {"list", LC_LIST, 0, 16, false, 15000},
    {"list reused, 32-slot segments", LC_LIST, 0, 1024, true, 15000},
};

/* ---- one history ---------------------------------------------------------- */

typedef struct lc_op {
    uint8_t thread, seq; /* seq: position in the thread's program */
    bool push;
    uint8_t id;          /* push: value id pushed; pop: id popped (0: none/bad) */
    uint8_t evicted;     /* SL_RING push that said SL_EVICTED: the id handed back */
    bool evicted_torn;
    uint64_t evicted_raw;
    bool torn;           /* pop: bytes past the first eight did not match */
    bool held;           /* held inside its message copy (see lc_segv) */
    sl_status st;
    uint64_t raw;        /* pop: the first eight bytes as read */
    uint64_t inv, resp;
} lc_op;

typedef struct lc_hist {
    const lc_cfg *cfg;
    uint64_t index, salt, start;
    size_t esz;
    unsigned nvals;                  /* ids 1..nvals were pushed or prefilled */
    unsigned nops;
    lc_op ops[LC_OPS];
    unsigned npre;                   /* initial contents: ids 1..npre */
    unsigned ndrain;                 /* final contents, oldest first */
    uint8_t drain[LC_DRAIN_MAX];     /* 0: a value that is not a valid message */
    uint64_t drain_raw[LC_DRAIN_MAX];
    bool drain_overrun;              /* the drain did not end in SL_EMPTY */
} lc_hist;

/* Message bytes: the 64-bit value (salt | id), then a pattern derived from it,
 * so that a torn or stale copy of another message is recognised. */
static unsigned char lc_pad(uint64_t v, size_t i)
{
    return (unsigned char)((v >> (8 * (i & 7))) ^ (i * 131u) ^ 0x5Au);
}

static void lc_fill(unsigned char *b, size_t esz, uint64_t v)
{
    memcpy(b, &v, sizeof v);
    for (size_t i = sizeof v; i < esz; i++)
        b[i] = lc_pad(v, i);
}

static bool lc_torn(const unsigned char *b, size_t esz, uint64_t *raw)
{
    memcpy(raw, b, sizeof *raw);
    for (size_t i = sizeof *raw; i < esz; i++)
        if (b[i] != lc_pad(*raw, i))
            return true;
    return false;
}

/* The id of a message read back, or 0 if it is not one of this history's. */
static uint8_t lc_id(const lc_hist *h, uint64_t raw, bool torn)
{
    unsigned id = (unsigned)(raw & 0xFF);
    if (torn || (raw & ~(uint64_t)0xFF) != h->salt || id == 0 || id > h->nvals)
        return 0;
    return (uint8_t)id;
}

/* ---- the checker ---------------------------------------------------------- */

#define MEMO_BITS 15
#define MEMO_SIZE (1u << MEMO_BITS)

typedef struct lc_memo_ent {
    uint64_t k0, k1;
    uint32_t epoch;
} lc_memo_ent;

typedef struct lc_search {
    const lc_hist *h;
    bool relaxed;     /* SL_FULL counts slots held by calls in progress */
    bool swap;        /* ... as SL_MPMC's swap form holds them (spares) */
    bool ring;        /* SL_RING: a push into a full queue displaces its oldest */
    size_t cap;       /* 0: unbounded */
    uint32_t all;
    uint32_t pred[LC_OPS]; /* calls that responded before call j was invoked */
    uint64_t init_q, final_q;
    unsigned init_len, final_len;
    lc_memo_ent *memo;
    uint32_t epoch;
    unsigned memo_used;
    uint8_t path[3 * LC_OPS], best[3 * LC_OPS];
    unsigned depth, best_depth;
    uint64_t states;
} lc_search;

static uint64_t lc_hash(uint64_t k0, uint64_t k1)
{
    uint64_t x = k0 * GOLDEN ^ (k1 + 0x632BE59BD9B4E019ull) * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    return x * 0x94D049BB133111EBull;
}

/* Memo of states already shown to lead nowhere (the search stops at the first
 * success, so every state it revisits is a failure). */
static bool lc_memo_has(const lc_search *s, uint64_t k0, uint64_t k1)
{
    for (uint64_t i = lc_hash(k0, k1) >> (64 - MEMO_BITS);; i = (i + 1) & (MEMO_SIZE - 1)) {
        const lc_memo_ent *e = &s->memo[i];
        if (e->epoch != s->epoch)
            return false;
        if (e->k0 == k0 && e->k1 == k1)
            return true;
    }
}

static void lc_memo_add(lc_search *s, uint64_t k0, uint64_t k1)
{
    if (s->memo_used >= MEMO_SIZE / 4 * 3)
        return; /* only speed is lost: the search stays exact */
    for (uint64_t i = lc_hash(k0, k1) >> (64 - MEMO_BITS);; i = (i + 1) & (MEMO_SIZE - 1)) {
        lc_memo_ent *e = &s->memo[i];
        if (e->epoch != s->epoch) {
            *e = (lc_memo_ent){k0, k1, s->epoch};
            s->memo_used++;
            return;
        }
    }
}

static bool lc_dfs(lc_search *s, uint32_t started, uint32_t pub, uint32_t done, uint64_t q,
                   unsigned len);

/* Takes one event, recurses, and keeps the longest prefix for the report. */
static bool lc_step(lc_search *s, uint8_t ev, uint32_t started, uint32_t pub, uint32_t done,
                    uint64_t q, unsigned len)
{
    s->path[s->depth++] = ev;
    if (s->depth > s->best_depth) {
        s->best_depth = s->depth;
        memcpy(s->best, s->path, s->depth);
    }
    bool ok = lc_dfs(s, started, pub, done, q, len);
    s->depth--;
    return ok;
}

/* State: calls started and done (a call is both after its only event; in the
 * relaxed model a successful call is started, and holds a slot, between its
 * first and last events), swap-form pushes published (or decided full) and
 * not yet done (their spare still held), and the model queue: value ids
 * packed four bits each, oldest in the low nibble. */
static bool lc_dfs(lc_search *s, uint32_t started, uint32_t pub, uint32_t done, uint64_t q,
                   unsigned len)
{
    if (done == s->all)
        return len == s->final_len && q == s->final_q;
    uint64_t k0 = started | (uint64_t)done << 16 | (uint64_t)len << 32 | (uint64_t)pub << 40;
    if (lc_memo_has(s, k0, q))
        return false;
    s->states++;
    unsigned held = (unsigned)__builtin_popcount(started & ~done);
    for (unsigned j = 0; j < s->h->nops; j++) {
        const lc_op *op = &s->h->ops[j];
        uint32_t bit = 1u << j;
        uint8_t ev = (uint8_t)j;
        bool ok = false;
        if (done & bit)
            continue;
        if (pub & bit) {
            /* Swap form, third event: the spare given back. */
            ok = lc_step(s, ev | LC_THIRD, started, pub, done | bit, q, len);
        } else if (started & bit) {
            /* Relaxed model, second event: publish (push) or free the slot;
             * swap form: publish (the spare still held), or a held push's
             * SL_FULL. */
            ev |= LC_SECOND;
            if (op->push && op->st == SL_FULL) {
                /* Decided full; the spare goes back after (a third event). */
                if (len >= s->cap)
                    ok = lc_step(s, ev, started, pub | bit, done, q, len);
            } else if (op->push) {
                uint64_t q1 = q | (uint64_t)op->id << (4 * len);
                if (!s->swap)
                    ok = lc_step(s, ev, started, pub, done | bit, q1, len + 1);
                else if (len < s->cap)
                    ok = lc_step(s, ev, started, pub | bit, done, q1, len + 1);
            } else {
                ok = lc_step(s, ev, started, pub, done | bit, q, len);
            }
        } else if ((s->pred[j] & ~done) != 0) {
            continue; /* something that returned before j was invoked is not done */
        } else if (s->swap && op->push && (op->st == SL_OK || op->st == SL_FULL)) {
            /* Swap form: take one of the c spares (none free: only SL_FULL). */
            if (held < s->cap)
                ok = lc_step(s, ev, started | bit, pub, done, q, len);
            if (!ok && op->st == SL_FULL && (len >= s->cap || held >= s->cap))
                ok = lc_step(s, ev, started | bit, pub, done | bit, q, len);
        } else if (s->ring && op->push) {
            /* SL_RING, one event: below capacity an append; at it, the
             * oldest leaves (handed back) and the new one enters at once. */
            if (op->st == SL_OK && len < s->cap)
                ok = lc_step(s, ev, started | bit, pub, done | bit,
                             q | (uint64_t)op->id << (4 * len), len + 1);
            else if (op->st == SL_EVICTED && len == s->cap && (q & 15) == op->evicted)
                ok = lc_step(s, ev, started | bit, pub, done | bit,
                             q >> 4 | (uint64_t)op->id << (4 * (len - 1)), len);
            else
                continue;
        } else if (op->push && op->st == SL_OK) {
            if (s->relaxed) {
                if (len + held >= s->cap)
                    continue; /* no free slot to take */
                ok = lc_step(s, ev, started | bit, pub, done, q, len);
            } else {
                if (s->cap && len >= s->cap)
                    continue;
                ok = lc_step(s, ev, started | bit, pub, done | bit,
                             q | (uint64_t)op->id << (4 * len), len + 1);
            }
        } else if (op->push && op->st == SL_FULL) {
            if (!s->cap || (s->relaxed ? len + held : len) < s->cap)
                continue;
            ok = lc_step(s, ev, started | bit, pub, done | bit, q, len);
        } else if (!op->push && op->st == SL_OK) {
            if (op->id == 0 || len == 0 || (q & 15) != op->id)
                continue;
            bool two = s->relaxed && !s->swap; /* claim, then free the slot */
            ok = lc_step(s, ev, started | bit, pub, two ? done : done | bit, q >> 4, len - 1);
        } else if (!op->push && op->st == SL_EMPTY) {
            if (len != 0)
                continue;
            ok = lc_step(s, ev, started | bit, pub, done | bit, q, len);
        } else {
            continue; /* any other status is wrong in every order */
        }
        if (ok)
            return true;
    }
    lc_memo_add(s, k0, q);
    return false;
}

/* Prepares s for h; false if the drain alone already disqualifies it. */
static bool lc_search_init(lc_search *s, const lc_hist *h, lc_memo_ent *memo, uint32_t epoch)
{
    memset(s, 0, sizeof *s);
    s->h = h;
    s->cap = h->cfg->cap;
    s->ring = h->cfg->kind == LC_RING;
    s->all = (1u << h->nops) - 1;
    s->memo = memo;
    s->epoch = epoch;
    for (unsigned j = 0; j < h->nops; j++)
        for (unsigned i = 0; i < h->nops; i++)
            if (h->ops[i].resp < h->ops[j].inv)
                s->pred[j] |= 1u << i;
    for (unsigned k = 0; k < h->npre; k++)
        s->init_q |= (uint64_t)(k + 1) << (4 * k);
    s->init_len = h->npre;
    if (h->drain_overrun || h->ndrain > LC_VALUES)
        return false;
    for (unsigned k = 0; k < h->ndrain; k++) {
        if (h->drain[k] == 0)
            return false;
        s->final_q |= (uint64_t)h->drain[k] << (4 * k);
    }
    s->final_len = h->ndrain;
    return true;
}

static bool lc_search_run(lc_search *s, bool relaxed)
{
    s->relaxed = relaxed;
    /* SL_MPMC's swap form: messages of 9 to 256 bytes (channels/mpmc_swap.c). */
    s->swap = relaxed && s->h->cfg->kind == LC_MPMC && s->h->esz > sizeof(uint64_t) &&
              s->h->esz <= 256;
    s->depth = s->best_depth = 0;
    return lc_dfs(s, 0, 0, 0, s->init_q, s->init_len);
}

/* ---- reporting ------------------------------------------------------------ */

static uint64_t g_seed;
static char g_fmt[256];

static const char *lc_status_name(sl_status st)
{
    switch (st) {
    case SL_OK: return "SL_OK";
    case SL_EMPTY: return "SL_EMPTY";
    case SL_FULL: return "SL_FULL";
    case SL_EVICTED: return "SL_EVICTED";
    default: return sl_status_str(st);
    }
}

static const char *lc_op_text(const lc_hist *h, const lc_op *op)
{
    if (op->push && op->st == SL_EVICTED && op->evicted != 0) {
        snprintf(g_fmt, sizeof g_fmt, "push v%-2u -> SL_EVICTED v%u", op->id, op->evicted);
    } else if (op->push && op->st == SL_EVICTED) {
        snprintf(g_fmt, sizeof g_fmt, "push v%-2u -> SL_EVICTED, not a message of this "
                 "history: 0x%016llx%s", op->id, ULL(op->evicted_raw),
                 op->evicted_torn ? ", torn" : "");
    } else if (op->push) {
        snprintf(g_fmt, sizeof g_fmt, "push v%-2u -> %s", op->id, lc_status_name(op->st));
    } else if (op->st != SL_OK) {
        snprintf(g_fmt, sizeof g_fmt, "pop      -> %s", lc_status_name(op->st));
    } else if (op->id != 0) {
        snprintf(g_fmt, sizeof g_fmt, "pop      -> SL_OK v%u", op->id);
    } else if (op->torn && (op->raw & ~(uint64_t)0xFF) == h->salt) {
        snprintf(g_fmt, sizeof g_fmt, "pop      -> SL_OK, v%u TORN: later bytes are not v%u's",
                 (unsigned)(op->raw & 0xFF), (unsigned)(op->raw & 0xFF));
    } else {
        snprintf(g_fmt, sizeof g_fmt, "pop      -> SL_OK, not a message of this history: "
                 "0x%016llx%s (salt 0x%016llx)", ULL(op->raw), op->torn ? ", torn" : "",
                 ULL(h->salt));
    }
    return g_fmt;
}

static void lc_print(const lc_hist *h, const lc_search *s, const char *what)
{
    FILE *f = stderr;
    uint64_t t0 = UINT64_MAX;
    for (unsigned j = 0; j < h->nops; j++)
        t0 = h->ops[j].inv < t0 ? h->ops[j].inv : t0;
    fprintf(f, "---- %s: history %llu of '%s' (seed %llu)\n", what, ULL(h->index), h->cfg->name,
            ULL(g_seed));
    if (h->cfg->kind != LC_LIST)
        fprintf(f, "  %s of capacity %zu, %zu-byte messages, counters from %llu\n",
                h->cfg->kind == LC_RING ? "overwrite ring" : "queue", h->cfg->cap, h->esz,
                ULL(h->start));
    else
        fprintf(f, "  unbounded list, %zu-byte messages\n", h->esz);
    fprintf(f, "  before the round (pushed at rest):");
    for (unsigned k = 0; k < h->npre; k++)
        fprintf(f, " v%u", k + 1);
    fprintf(f, "%s\n", h->npre ? "" : " empty");
    /* Calls in invocation order; times in ns from the first invocation. */
    bool used[LC_OPS] = {false};
    for (unsigned n = 0; n < h->nops; n++) {
        unsigned j = LC_OPS;
        for (unsigned i = 0; i < h->nops; i++)
            if (!used[i] && (j == LC_OPS || h->ops[i].inv < h->ops[j].inv))
                j = i;
        used[j] = true;
        const lc_op *op = &h->ops[j];
        fprintf(f, "  [%2u] thread %u call %u: %-40s invoked %8llu  returned %8llu%s\n", j,
                op->thread, op->seq, lc_op_text(h, op), ULL(op->inv - t0), ULL(op->resp - t0),
                op->held ? "  (held in its copy)" : "");
    }
    fprintf(f, "  drained at rest after the round:");
    for (unsigned k = 0; k < h->ndrain; k++) {
        if (h->drain[k])
            fprintf(f, " v%u", h->drain[k]);
        else
            fprintf(f, " <bad 0x%016llx>", ULL(h->drain_raw[k]));
    }
    fprintf(f, "%s%s\n", h->ndrain ? "" : " nothing",
            h->drain_overrun ? " ... (did not end in SL_EMPTY)" : "");
    if (s) {
        unsigned events = h->nops;
        for (unsigned j = 0; s->relaxed && j < h->nops; j++)
            events += s->swap ? h->ops[j].push * (h->ops[j].st == SL_OK ? 2u : 1u)
                              : h->ops[j].st == SL_OK;
        const char *model = s->relaxed ? "the held-slot model" : "the strict FIFO";
        if (s->best_depth == events)
            fprintf(f, "  an order %s accepts:", model);
        else
            fprintf(f, "  longest order %s accepts (%u of %u events):", model, s->best_depth,
                    events);
        for (unsigned k = 0; k < s->best_depth; k++) {
            unsigned j = s->best[k] & ~(LC_SECOND | LC_THIRD);
            const lc_op *op = &h->ops[j];
            fprintf(f, " [%u]%s", j,
                    (s->best[k] & LC_THIRD) ? ".back"
                    : (s->best[k] & LC_SECOND)
                        ? (op->push ? (op->st == SL_OK ? ".publish" : ".full") : ".free")
                    : (s->relaxed && op->st == SL_OK) ? (op->push ? ".take" : ".claim") : "");
        }
        fprintf(f, "\n");
    }
    fflush(f);
}

/* ---- the threads ---------------------------------------------------------- */

typedef struct lc_script {
    bool push, yield, trap;
    uint8_t id;
    uint32_t spin; /* busy iterations before the call */
} lc_script;

typedef struct lc_counter {
    _Alignas(64) atomic_uint_fast64_t v;
} lc_counter;

typedef struct lc_pool {
    const lc_cfg *cfg;
    sl_test_barrier start, done;
    _Alignas(64) atomic_uint_fast64_t arrived;
    lc_counter step[LC_PER_THREAD]; /* threads that reached call k, over all rounds */
    lc_counter progress;            /* calls completed, over all rounds */
    lc_counter stalls;              /* calls held inside by a trapped copy */
    _Alignas(64) atomic_bool stop;
    sl_mpmc *mq;
    sl_list *lq;
    sl_ring *rq;
    uint64_t salt;
    size_t esz;
    lc_script script[LC_THREADS][LC_PER_THREAD];
    lc_op rec[LC_THREADS][LC_PER_THREAD];
} lc_pool;

typedef struct lc_worker {
    lc_pool *pool;
    unsigned t;
    pthread_t thr;
} lc_worker;

/* ---- stalls inside a call ------------------------------------------------- *
 *
 * Spins only make calls overlap while two workers run at once, and on two
 * cores that other work keeps busy that is rare; a call (~100 ns) is almost
 * never preempted in the middle on its own. So in three rounds out of four
 * one call is trapped: its message buffer lies on a page the worker protects
 * just before the call (push: no access; pop: read-only), so the queue's own
 * memcpy faults, inside the call. The SIGSEGV handler holds the thread there
 * until the other workers have completed two calls (or LC_STALL_NS passed),
 * unprotects the page and returns; the copy then completes. The copy sits
 * exactly where docs/guarantees.md says a call holds a slot: an SL_MPMC push
 * between taking a free slot and publishing it, a pop between claiming the
 * oldest message and freeing its slot (and, for SL_LIST, a push between
 * claiming a position and publishing it, a pop after taking its message). */

#define LC_STALL_NS 100000u

static lc_pool *g_pool;
static size_t g_page;
static struct sigaction g_old_segv;
static _Thread_local unsigned char *volatile lc_trap_page; /* protected by this thread */

static void lc_segv(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)ctx;
    unsigned char *page = lc_trap_page, *addr = si->si_addr;
    if (!page || addr < page || addr >= page + g_page) {
        /* A real fault: put the previous handler back (the sanitizers'
         * report, or the default action) and let the access fault again. */
        sigaction(SIGSEGV, &g_old_segv, NULL);
        return;
    }
    int saved = errno;
    atomic_fetch_add_explicit(&g_pool->stalls.v, 1, memory_order_relaxed);
    uint64_t seen = atomic_load_explicit(&g_pool->progress.v, memory_order_relaxed);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(&g_pool->progress.v, memory_order_relaxed) - seen >= 2)
            break;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)t.tv_nsec -
                (uint64_t)t0.tv_nsec > LC_STALL_NS)
            break;
        /* Spin while the others may run on the other core; yield now and
         * then in case they need this one. */
        if ((i & 31) == 0)
            sched_yield();
        else
            sl_cpu_relax();
    }
    mprotect(page, g_page, PROT_READ | PROT_WRITE);
    lc_trap_page = NULL;
    errno = saved;
}

static inline uint64_t lc_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A full fence; on x86 also LFENCE, which keeps later instructions (the
 * call's loads) from starting before the clock read has completed and the
 * clock read from starting before the call's accesses have (Intel SDM, RDTSC:
 * "MFENCE; LFENCE" before it, "LFENCE" after it). */
static inline void lc_stamp_fence(void)
{
    atomic_thread_fence(memory_order_seq_cst);
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("lfence" ::: "memory");
#endif
}

static inline uint64_t lc_stamp_invoke(void)
{
    uint64_t t = lc_clock();
    lc_stamp_fence();
    return t;
}

static inline uint64_t lc_stamp_response(void)
{
    lc_stamp_fence();
    return lc_clock();
}

static void lc_busy(uint32_t n)
{
    for (volatile uint32_t i = 0; i < n; i++) {
    }
}

/* Check's assertions belong to the test's own thread: workers abort. */
static void lc_protect(unsigned char *page, int prot)
{
    if (mprotect(page, g_page, prot) != 0) {
        perror("stress_lincheck: mprotect");
        abort();
    }
}

#ifdef LC_PLANT_SERIAL
static pthread_mutex_t lc_plant_serial = PTHREAD_MUTEX_INITIALIZER;
#endif

/* The call under test; `evicted` receives what an SL_RING push displaces. */
static inline sl_status lc_push(lc_pool *p, const void *b, void *evicted)
{
    switch (p->cfg->kind) {
    case LC_MPMC: return sl_mpmc_try_push(p->mq, b);
    case LC_RING: return sl_ring_try_push(p->rq, b, evicted);
    default: return sl_list_try_push(p->lq, b);
    }
}

static inline sl_status lc_pop(lc_pool *p, void *b)
{
    switch (p->cfg->kind) {
    case LC_MPMC: return sl_mpmc_try_pop(p->mq, b);
    case LC_RING: return sl_ring_try_pop(p->rq, b);
    default: return sl_list_try_pop(p->lq, b);
    }
}

static void *lc_worker_main(void *arg)
{
    lc_worker *w = arg;
    lc_pool *p = w->pool;
    _Alignas(64) unsigned char buf[LC_ESZ_MAX], evicted[LC_ESZ_MAX];
    unsigned char *trap = mmap(NULL, g_page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                               -1, 0);
    if (trap == MAP_FAILED) {
        perror("stress_lincheck: mmap");
        abort();
    }
    for (uint64_t round = 1;; round++) {
        sl_test_barrier_wait(&p->start);
        if (atomic_load(&p->stop))
            break;
        /* The barrier wakes threads one by one; the flag lines them up. On two
         * cores one of three may need a yield from the others to arrive. */
        atomic_fetch_add(&p->arrived, 1);
        for (unsigned i = 1; atomic_load(&p->arrived) < round * LC_THREADS; i++) {
            sl_cpu_relax();
            if ((i % LC_START_YIELD) == 0)
                sched_yield();
        }
        for (unsigned k = 0; k < LC_PER_THREAD; k++) {
            const lc_script *sc = &p->script[w->t][k];
            lc_op *op = &p->rec[w->t][k];
            /* Line up again before each call (briefly: a thread that is not
             * running must not hold the others), then drift apart by a random
             * spin of about a call's length, so calls overlap partly and in
             * every phase. */
            atomic_fetch_add(&p->step[k].v, 1);
            for (unsigned i = 0; i < LC_ALIGN_SPIN; i++) {
                if (atomic_load(&p->step[k].v) >= round * LC_THREADS)
                    break;
                sl_cpu_relax();
            }
            if (sc->yield)
                sched_yield();
            lc_busy(sc->spin);
            *op = (lc_op){.thread = (uint8_t)w->t, .seq = (uint8_t)k, .push = sc->push,
                          .id = sc->push ? sc->id : 0};
            const size_t esz = p->esz;
            unsigned char *b = sc->trap ? trap : buf;
            if (sc->push)
                lc_fill(b, esz, p->salt | sc->id);
            else
                memset(b, 0, esz);
            if (sc->trap) {
                lc_trap_page = trap;
                lc_protect(trap, sc->push ? PROT_NONE : PROT_READ);
            }
#ifdef LC_PLANT_SERIAL /* planted: no two calls ever overlap */
            pthread_mutex_lock(&lc_plant_serial);
#endif
            op->inv = lc_stamp_invoke();
            op->st = sc->push ? lc_push(p, b, evicted) : lc_pop(p, b);
            op->resp = lc_stamp_response();
#ifdef LC_PLANT_SERIAL
            pthread_mutex_unlock(&lc_plant_serial);
#endif
            if (sc->trap && lc_trap_page) { /* no copy happened (SL_FULL, SL_EMPTY) */
                lc_protect(trap, PROT_READ | PROT_WRITE);
                lc_trap_page = NULL;
            } else if (sc->trap) {
                op->held = true;
            }
            if (!sc->push && op->st == SL_OK)
                op->torn = lc_torn(b, esz, &op->raw);
            if (sc->push && op->st == SL_EVICTED)
                op->evicted_torn = lc_torn(evicted, esz, &op->evicted_raw);
            atomic_fetch_add_explicit(&p->progress.v, 1, memory_order_relaxed);
        }
        sl_test_barrier_wait(&p->done);
    }
    munmap(trap, g_page);
    return NULL;
}

/* ---- the coordinator ------------------------------------------------------ */

/* Random scripts: a push share and a delay scale per history, so that some
 * rounds fill the queue (SL_FULL), some drain it (SL_EMPTY), and the calls
 * overlap back to back in some and only partly in others. */
static void lc_make_scripts(lc_pool *p, lc_hist *h, sl_test_rng *rng)
{
    static const unsigned push_pct[] = {30, 50, 50, 70};
    static const uint32_t spin_max[] = {1, 16, 64, 256};
    unsigned pct = push_pct[sl_test_rng_next(rng) % 4];
#ifdef LC_PLANT_PUSH_PCT /* planted: scripts that never fill or never empty the queue */
    pct = LC_PLANT_PUSH_PCT;
#endif
    uint32_t smax = spin_max[sl_test_rng_next(rng) % 4];
    unsigned next_id = h->npre + 1;
    for (unsigned t = 0; t < LC_THREADS; t++) {
        for (unsigned k = 0; k < LC_PER_THREAD; k++) {
            lc_script *sc = &p->script[t][k];
            uint64_t r = sl_test_rng_next(rng);
            sc->push = r % 100 < pct;
            sc->id = sc->push ? (uint8_t)next_id++ : 0;
            sc->spin = (uint32_t)((r >> 8) % smax);
            sc->yield = ((r >> 40) % 64) == 0;
            sc->trap = false;
        }
    }
    /* Three rounds in four, one call is held inside its copy (see lc_segv). */
    uint64_t r = sl_test_rng_next(rng);
    if (r % 4 != 0)
        p->script[(r >> 8) % LC_THREADS][(r >> 16) % LC_PER_THREAD].trap = true;
    h->nvals = next_id - 1;
}

/* Pushes and pops n messages at rest so that the next round starts at a
 * later position (the reused list: across segment boundaries). */
static void lc_advance(lc_pool *p, unsigned n)
{
    _Alignas(64) unsigned char b[LC_ESZ_MAX];
    for (unsigned i = 0; i < n; i++) {
        uint64_t raw;
        lc_fill(b, p->esz, GOLDEN + i);
        ck_assert_int_eq(lc_push(p, b, NULL), SL_OK);
        memset(b, 0, p->esz);
        ck_assert_int_eq(lc_pop(p, b), SL_OK);
        ck_assert(!lc_torn(b, p->esz, &raw) && raw == GOLDEN + i);
    }
}

/* One round: set up, release the workers, wait, drain at rest, tear down. */
static void lc_round(lc_pool *p, lc_hist *h, sl_test_rng *rng)
{
    const lc_cfg *cfg = p->cfg;
    _Alignas(64) unsigned char b[LC_ESZ_MAX];
    sl_mpmc m;
    sl_ring rg;
    sl_list l;
    h->salt = (sl_test_rng_next(rng) | (1ull << 63)) & ~(uint64_t)0xFF;
    p->salt = h->salt;
    h->start = 0;
    /* Message sizes in thirds: 8 bytes (SL_MPMC keeps them in its cells),
     * 16 and 1 KiB (slots reached through index rings). With big messages a
     * pop held inside its copy has read only the first bytes of the slot, so
     * a slot handed back too early and overwritten shows up as torn. */
    static const size_t sizes[3] = {8, 16, LC_ESZ_MAX};
    h->esz = cfg->esz ? cfg->esz : sizes[sl_test_rng_next(rng) % 3];
    p->esz = h->esz;
    if (cfg->kind != LC_LIST) {
        /* Half the histories cross the counters' wrap-around on the way. */
        if (sl_test_rng_next(rng) & 1)
            h->start = UINT64_MAX - sl_test_rng_next(rng) % 48;
        if (cfg->kind == LC_MPMC) {
            ck_assert_int_eq(sl__mpmc_init_at(&m, h->esz, cfg->cap, h->start), SL_OK);
            p->mq = &m;
        } else {
            ck_assert_int_eq(sl__ring_init_at(&rg, h->esz, cfg->cap, h->start), SL_OK);
            p->rq = &rg;
        }
        h->npre = (unsigned)(sl_test_rng_next(rng) % (cfg->cap + 1));
    } else {
        if (!cfg->reuse) {
            ck_assert_int_eq(sl_list_init(&l, h->esz), SL_OK);
            p->lq = &l;
        } else if (sl_test_rng_next(rng) % 4 == 0) {
            lc_advance(p, (unsigned)(sl_test_rng_next(rng) % 24));
        }
        h->npre = (unsigned)(sl_test_rng_next(rng) % (LC_PREFILL_MAX + 1));
    }
    for (unsigned k = 0; k < h->npre; k++) {
        lc_fill(b, h->esz, h->salt | (k + 1));
        ck_assert_int_eq(lc_push(p, b, NULL), SL_OK);
    }
    lc_make_scripts(p, h, rng);

    sl_test_barrier_wait(&p->start);
    sl_test_barrier_wait(&p->done);

    h->nops = 0;
    for (unsigned t = 0; t < LC_THREADS; t++)
        for (unsigned k = 0; k < LC_PER_THREAD; k++) {
            lc_op op = p->rec[t][k];
            if (!op.push && op.st == SL_OK)
                op.id = lc_id(h, op.raw, op.torn);
            if (op.push && op.st == SL_EVICTED)
                op.evicted = lc_id(h, op.evicted_raw, op.evicted_torn);
            h->ops[h->nops++] = op;
        }
    h->ndrain = 0;
    h->drain_overrun = true;
    while (h->ndrain < LC_DRAIN_MAX) {
        uint64_t raw;
        memset(b, 0, h->esz);
        sl_status st = lc_pop(p, b);
        if (st != SL_OK) {
            h->drain_overrun = st != SL_EMPTY;
            break;
        }
        bool torn = lc_torn(b, h->esz, &raw);
        h->drain_raw[h->ndrain] = raw;
        h->drain[h->ndrain++] = lc_id(h, raw, torn);
    }
    if (cfg->kind == LC_MPMC)
        sl_mpmc_destroy(&m);
    else if (cfg->kind == LC_RING)
        sl_ring_destroy(&rg);
    else if (!cfg->reuse)
        sl_list_destroy(&l);
}

typedef struct lc_stats {
    uint64_t histories, with_full, with_empty, overlapping, pairs, relaxed_only, states;
    uint64_t full_calls, empty_calls;
    uint64_t with_held, held_overlapping; /* histories with a held call; it overlapped one */
} lc_stats;

static void lc_tally(lc_stats *st, const lc_hist *h)
{
    bool full = false, empty = false, held = false, held_overlap = false;
    uint64_t pairs = 0;
    for (unsigned i = 0; i < h->nops; i++) {
        const lc_op *a = &h->ops[i];
        /* SL_RING's full queue: a push that displaced. */
        const bool at_full = a->st == SL_FULL || a->st == SL_EVICTED;
        full |= at_full;
        empty |= a->st == SL_EMPTY;
        held |= a->held;
        st->full_calls += at_full;
        st->empty_calls += a->st == SL_EMPTY;
        for (unsigned j = i + 1; j < h->nops; j++) {
            const lc_op *b = &h->ops[j];
            if (a->thread != b->thread && !(a->resp < b->inv || b->resp < a->inv)) {
                pairs++;
                held_overlap |= a->held || b->held;
            }
        }
    }
    st->histories++;
    st->with_full += full;
    st->with_empty += empty;
    st->overlapping += pairs != 0;
    st->pairs += pairs;
    st->with_held += held;
    st->held_overlapping += held_overlap;
}

/* ---- what the histories must contain -------------------------------------- *
 *
 * A history in which no two calls overlapped, or no call saw the queue full or
 * empty, tests nothing that a sequential run does not: the checker would pass
 * a queue with no concurrency control at all. So each configuration must show,
 * in per cent of its histories (held: of those with a call held in its copy):
 *
 *                        floor   lowest share measured, 3 runs per preset on
 *                                2 cores shared with other builds:
 *                                default   asan   tsan   faults
 *   calls overlapping      10%     28%      27%    27%    59%
 *   held call overlapping  25%     66%      64%    66%    73%
 *   SL_FULL (SL_MPMC)      20%     58%      57%    57%    60%
 *   SL_EMPTY               20%     52%      51%    52%    51%
 *
 * (SL_RING, whose full queue shows as SL_EVICTED, one run per preset, the
 * lowest of its two capacities: overlapping 63%, 81%, 83%, 86%; held call
 * overlapping 59%, 62%, 68%, 70%; SL_EVICTED 68%, 68%, 68%, 69%; SL_EMPTY
 * 70%, 70%, 70%, 70%.)
 *
 * (SL_FULL and SL_EMPTY shares follow from the random scripts, so they hardly
 * move; overlap depends on timing: two workers rarely run at once on two busy
 * cores, and most overlap comes from the held calls.) The floors sit at about
 * a third of the lowest share measured in any preset, and every count is over
 * at least sl_test_scaled(LC_MIN_HISTORIES, 100)
 * histories, so that a slow or overloaded run does not fail them; a checker
 * that saw nothing (workers serialised: build with -DLC_PLANT_SERIAL) or a
 * script that never fills or empties the queue (-DLC_PLANT_PUSH_PCT=0 or =100)
 * fails them every time. Per history no floor is sound: a thread may be
 * descheduled for a whole round, and a round may legitimately end with
 * neither SL_FULL nor SL_EMPTY. */
#define LC_FLOOR_OVERLAP_PCT 10
#define LC_FLOOR_HELD_OVERLAP_PCT 25
#define LC_FLOOR_FULL_PCT 20
#define LC_FLOOR_EMPTY_PCT 20

/* Whether part is at least pct per cent of whole. */
static bool lc_share(uint64_t part, uint64_t whole, unsigned pct)
{
    return part * 100 >= whole * pct;
}

/* The first floor this configuration's histories miss, or NULL. */
static const char *lc_floors(const lc_cfg *cfg, const lc_stats *st)
{
    if (!lc_share(st->overlapping, st->histories, LC_FLOOR_OVERLAP_PCT))
        return "too few histories with calls of different threads overlapping";
    if (!lc_share(st->held_overlapping, st->with_held, LC_FLOOR_HELD_OVERLAP_PCT))
        return "too few histories in which the call held in its copy overlapped another";
    if (cfg->cap && !lc_share(st->with_full, st->histories, LC_FLOOR_FULL_PCT))
        return cfg->kind == LC_RING ? "too few histories with an SL_EVICTED result"
                                    : "too few histories with an SL_FULL result";
    if (!lc_share(st->with_empty, st->histories, LC_FLOOR_EMPTY_PCT))
        return "too few histories with an SL_EMPTY result";
    return NULL;
}

/* Stamps that contradict program order or invoke < response would make the
 * real-time order meaningless: a harness failure, not a queue one. */
static const char *lc_sane(const lc_hist *h)
{
    for (unsigned i = 0; i < h->nops; i++) {
        const lc_op *a = &h->ops[i];
        if (!(a->inv < a->resp))
            return "a call's response stamp is not after its invocation stamp";
        if (i + 1 < h->nops && h->ops[i + 1].thread == a->thread && !(a->resp < h->ops[i + 1].inv))
            return "a thread's calls overlap in time";
        if (h->cfg->kind == LC_RING && a->push && a->st != SL_OK && a->st != SL_EVICTED)
            return "a ring push returned a status other than SL_OK / SL_EVICTED";
        if (h->cfg->kind != LC_RING && a->push && a->st != SL_OK &&
            (a->st != SL_FULL || h->cfg->cap == 0))
            return h->cfg->cap ? "a push returned a status other than SL_OK / SL_FULL"
                               : "a push on the unbounded list did not return SL_OK";
        if (!a->push && a->st != SL_OK && a->st != SL_EMPTY)
            return "a pop returned a status other than SL_OK / SL_EMPTY";
    }
    return NULL;
}

START_TEST(lincheck)
{
    const lc_cfg *cfg = &lc_cfgs[_i];
    const char *v = getenv("SL_STRESS_SEED");
    g_seed = (v && *v) ? strtoull(v, NULL, 0)
                       : (sl_test_now_ns() * GOLDEN) ^ ((uint64_t)getpid() << 17);
    if (g_seed == 0)
        g_seed = 1;
    fprintf(stderr, "[stress_lincheck %s] seed %llu\n", cfg->name, ULL(g_seed));
    sl_test_rng rng;
    sl_test_rng_seed(&rng, g_seed ^ ((uint64_t)_i * GOLDEN));

    lc_pool *p = aligned_alloc(64, (sizeof *p + 63) & ~(size_t)63);
    lc_memo_ent *memo = calloc(MEMO_SIZE, sizeof *memo);
    lc_hist *h = calloc(1, sizeof *h);
    lc_search *s = malloc(sizeof *s);
    ck_assert(p && memo && h && s);
    memset(p, 0, sizeof *p);
    p->cfg = cfg;
    atomic_init(&p->arrived, 0);
    for (unsigned k = 0; k < LC_PER_THREAD; k++)
        atomic_init(&p->step[k].v, 0);
    atomic_init(&p->stop, false);
    sl_test_barrier_init(&p->start, LC_THREADS + 1);
    sl_test_barrier_init(&p->done, LC_THREADS + 1);
    sl_list shared;
    if (cfg->kind == LC_LIST && cfg->reuse) {
        ck_assert_int_eq(sl_list_init(&shared, cfg->esz), SL_OK);
        p->lq = &shared;
    }
    atomic_init(&p->progress.v, 0);
    atomic_init(&p->stalls.v, 0);
    g_pool = p;
    g_page = (size_t)sysconf(_SC_PAGESIZE);
    ck_assert(g_page >= LC_ESZ_MAX);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = lc_segv;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGSEGV, &sa, &g_old_segv), 0);
    lc_worker w[LC_THREADS];
    for (unsigned t = 0; t < LC_THREADS; t++) {
        w[t] = (lc_worker){p, t, 0};
        ck_assert_int_eq(pthread_create(&w[t].thr, NULL, lc_worker_main, &w[t]), 0);
    }

    const uint64_t n = sl_test_scaled(cfg->histories, 100);
    const uint64_t n_min = sl_test_scaled(LC_MIN_HISTORIES, 100);
    const uint64_t t_begin = sl_test_now_ns();
    lc_stats st = {0};
    uint32_t epoch = 0;
    const char *failure = NULL;
    bool capped = false;
    for (uint64_t i = 0; i < n && !failure; i++) {
        if (i >= n_min && sl_test_now_ns() - t_begin > LC_TIME_CAP_NS) {
            capped = true;
            break;
        }
        h->cfg = cfg;
        h->index = i;
        lc_round(p, h, &rng);
        lc_tally(&st, h);
        const char *insane = lc_sane(h);
        if (insane) {
            lc_print(h, NULL, insane);
            failure = insane;
            break;
        }
        bool drain_ok = lc_search_init(s, h, memo, ++epoch);
        if (drain_ok && lc_search_run(s, false)) {
            st.states += s->states;
            continue;
        }
        bool has_full = false;
        for (unsigned j = 0; j < h->nops; j++)
            has_full |= h->ops[j].st == SL_FULL;
        if (!drain_ok) {
            lc_print(h, NULL, "NOT LINEARIZABLE (the drain at rest found a bad or extra message)");
            failure = "the drain at rest found a message that is not one of the history's";
        } else if (cfg->kind == LC_RING) {
            /* Nothing is held that a result depends on: strict only. */
            lc_print(h, s, "NOT LINEARIZABLE");
            failure = "an overwrite-ring history has no linearization";
        } else if (!has_full) {
            lc_print(h, s, "NOT LINEARIZABLE");
            failure = "a history without SL_FULL has no linearization";
        } else if (h->esz <= sizeof(uint64_t)) {
            /* In-cell messages: no slot is ever held, so SL_FULL is exact. */
            lc_print(h, s, "NOT LINEARIZABLE (8-byte messages: SL_FULL must be exact)");
            failure = "an 8-byte history with SL_FULL has no strict linearization";
        } else {
            /* Keep the strict search's longest prefix in case both fail. */
            lc_search strict = *s;
            s->epoch = ++epoch;
            s->memo_used = 0;
            if (lc_search_run(s, true)) {
                if (st.relaxed_only++ == 0) {
                    lc_print(h, &strict,
                             "not linearizable as a FIFO of capacity c, linearizable once SL_FULL "
                             "counts slots held by calls in progress (documented; first of this "
                             "run)");
                    lc_print(h, s, "the same history: the order that explains it");
                }
            } else {
                lc_print(h, &strict, "NOT LINEARIZABLE (strict)");
                lc_print(h, s, "NOT LINEARIZABLE even with held slots counted");
                failure = "a history with SL_FULL has no linearization even counting held slots";
            }
        }
        st.states += s->states;
    }
    const double secs = (double)(sl_test_now_ns() - t_begin) / 1e9;
    const char *floor_missed = failure ? NULL : lc_floors(cfg, &st);

    atomic_store(&p->stop, true);
    sl_test_barrier_wait(&p->start);
    for (unsigned t = 0; t < LC_THREADS; t++)
        pthread_join(w[t].thr, NULL);
    if (cfg->kind == LC_LIST && cfg->reuse)
        sl_list_destroy(&shared);
    sigaction(SIGSEGV, &g_old_segv, NULL);
    sl_test_barrier_destroy(&p->start);
    sl_test_barrier_destroy(&p->done);

    fprintf(stderr,
            "[stress_lincheck %s] %llu histories in %.1f s%s: %llu with %s (%llu calls), "
            "%llu with SL_EMPTY (%llu calls), %llu with calls of different threads overlapping "
            "(%.2f overlapping pairs per history), %llu calls held inside their copy (%llu of "
            "%llu histories with one: it overlapped another), %llu "
            "linearizable only with held slots counted for SL_FULL, %llu search states; %s\n",
            cfg->name, ULL(st.histories), secs, capped ? " (stopped at the time cap)" : "",
            ULL(st.with_full), cfg->kind == LC_RING ? "SL_EVICTED" : "SL_FULL", ULL(st.full_calls), ULL(st.with_empty), ULL(st.empty_calls),
            ULL(st.overlapping), st.histories ? (double)st.pairs / (double)st.histories : 0.0,
            ULL(atomic_load(&p->stalls.v)), ULL(st.held_overlapping), ULL(st.with_held),
            ULL(st.relaxed_only), ULL(st.states), failure ? "VIOLATION" : "all linearizable");
    free(s);
    free(h);
    free(memo);
    free(p);
    ck_assert_msg(failure == NULL, "%s: %s (seed %llu; the history is printed above)", cfg->name,
                  failure ? failure : "", ULL(g_seed));
    ck_assert_msg(floor_missed == NULL,
                  "%s: %s (see the counts above and the floors in lc_floors): the histories "
                  "lack what the checker is meant to check (seed %llu)",
                  cfg->name, floor_missed ? floor_missed : "", ULL(g_seed));
    sl_test_account("calls in histories checked linearizable", st.histories * LC_OPS);
}
END_TEST

/* The checker's model on histories written by hand: each could fail if the
 * model grew too lax or too strict. */
typedef struct lc_known {
    unsigned thread;
    bool push;
    unsigned id;
    sl_status st;
    uint64_t inv, resp;
} lc_known;

static bool lc_known_accepted(const lc_known *ops, unsigned nops, size_t esz, unsigned drained,
                              bool relaxed)
{
    static lc_hist h;
    static lc_search s;
    static lc_memo_ent memo[MEMO_SIZE];
    memset(&h, 0, sizeof h);
    h.cfg = &lc_cfgs[0]; /* SL_MPMC, capacity 1 */
    h.esz = esz;
    h.nops = nops;
    for (unsigned j = 0; j < nops; j++) {
        h.ops[j] = (lc_op){.thread = (uint8_t)ops[j].thread, .push = ops[j].push,
                           .id = (uint8_t)ops[j].id, .st = ops[j].st, .inv = ops[j].inv,
                           .resp = ops[j].resp};
        h.nvals += ops[j].push;
    }
    h.ndrain = drained != 0;
    h.drain[0] = (uint8_t)drained;
    memset(memo, 0, sizeof memo);
    ck_assert(lc_search_init(&s, &h, memo, 1));
    return lc_search_run(&s, relaxed);
}

START_TEST(model_knows_a_held_full)
{
    /* Capacity 1, 16-byte messages. Thread 0's push of v1 took the spare v4's
     * push gave back, found the ring full (v4 in it), and was preempted
     * before giving the spare back; meanwhile v4 was popped and two pushes
     * said SL_FULL on the empty queue. Linearizable only with the spare
     * counted as held from the take to the give-back, which comes after the
     * push decided it was full. */
    static const lc_known held_full[] = {
        {0, true, 1, SL_FULL, 80, 104365},   {0, true, 2, SL_OK, 104655, 105086},
        {0, false, 2, SL_OK, 105216, 105697}, {0, true, 3, SL_OK, 105957, 106217},
        {1, true, 4, SL_OK, 0, 390},          {1, true, 5, SL_FULL, 8052, 8202},
        {1, true, 6, SL_FULL, 43785, 43965},  {1, false, 0, SL_EMPTY, 51576, 51696},
        {2, true, 7, SL_FULL, 17576, 17686},  {2, true, 8, SL_FULL, 25287, 25387},
        {2, false, 4, SL_OK, 32999, 33409},   {2, true, 9, SL_FULL, 41121, 41601},
    };
    ck_assert(!lc_known_accepted(held_full, N_OF(held_full), 16, 3, false));
    ck_assert(lc_known_accepted(held_full, N_OF(held_full), 16, 3, true));
    /* The same with 8-byte messages (kept in the cells: no spares) is not. */
    ck_assert(!lc_known_accepted(held_full, N_OF(held_full), 8, 3, true));
    /* SL_FULL on an empty queue with no call in progress is never explained. */
    static const lc_known bare_full[] = {
        {0, true, 1, SL_OK, 0, 10},
        {0, false, 1, SL_OK, 20, 30},
        {0, true, 2, SL_FULL, 40, 50},
    };
    ck_assert(!lc_known_accepted(bare_full, N_OF(bare_full), 16, 0, true));
}
END_TEST

static Suite *stress_lincheck_suite(void)
{
    Suite *s = suite_create("stress_lincheck");
    TCase *tc = tcase_create("lincheck");
    tcase_set_timeout(tc, TC_TIMEOUT);
    tcase_add_loop_test(tc, lincheck, 0, N_OF(lc_cfgs));
    suite_add_tcase(s, tc);
    TCase *model = tcase_create("model");
    tcase_add_test(model, model_knows_a_held_full);
    suite_add_tcase(s, model);
    return s;
}

int main(void) { return sl_test_run(stress_lincheck_suite()); }
