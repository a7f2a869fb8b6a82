/*
 * tests/fuzz/fuzz_shm.c — libFuzzer target: a channel in shared memory with
 * a hostile peer (sluice/shm.h, "Security"; docs/shm-layout.md).
 *
 * One SL_SPSC or SL_MPMC channel is created in a memfd (handle 0, "the
 * creator") and opened again from its descriptor (handle 1, "another
 * process": its own mapping of the segment, its own handle); a third
 * mapping of the same memfd is the peer's, through which the input writes
 * chosen bytes at chosen offsets — header words, control words, counters,
 * stamps, slot indices, payload, whole-segment garbage — between the
 * operations, which go through either handle.
 *
 * Input (bytes past the end read as 0):
 *   [0] bit 0: SL_MPMC (1) or SL_SPSC (0); the rest picks the message size
 *       from shm_sizes[] (8 bytes and larger; 1 and 3 for SL_MPMC's direct form)
 *   [1] the capacity, from shm_caps[] (small: wrap-around comes fast)
 *   [2 ...] operations: an opcode byte (op = byte % S_NOPS, handle =
 *       (byte / S_NOPS) & 1), then the op's argument bytes.
 *
 * What it checks, for every call:
 *   - no ASan or UBSan report: the bytes past the segment's end in the last
 *     page of each handle's mapping, and the unused bytes of the private page
 *     below it, are poisoned, so an access just outside the segment is
 *     reported, not only one that faults;
 *   - the status is one that call documents, counts are <= what was asked,
 *     sl_chan_len <= capacity, cap/flavour/elem_size never change, and a
 *     receive that fails (or the part of a batch past its count) leaves the
 *     caller's buffer untouched;
 *   - a bounded number of steps: no call sleeps or reads the clock more than
 *     S_CLOCK_MAX times (every form here is try, timeout 0, or blocking
 *     only where the model says it cannot block), and the counters in the
 *     segment move by at most what the hostile-peer limit admits: SL_SPSC's
 *     by exactly the messages moved (it has no loop), SL_MPMC's by at most
 *     S_LAPS_PER_TRY laps per element tried (shm_step_bound), checked after
 *     the call and, by a watchdog every S_DOG_MS, while it runs (a call
 *     that spins for ever is stopped with the op's name, not a time-out);
 *     libFuzzer's -timeout catches the rest;
 *   - while nothing has been written since the last reset: the sequential
 *     model of fuzz_common.h, exactly (FIFO, message bytes, full and empty,
 *     close, len).
 * The layout's offsets and sizes here are computed from docs/shm-layout.md's
 * formulas, as a reader in another language would, and checked against the
 * creator's `size` word once per input.
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sanitizer/asan_interface.h>

#include <sluice/shm.h>

#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wunused-function" /* the other targets' drivers */
#include "fuzz_common.h"
#pragma clang diagnostic pop

#include "chan_impl.h" /* SL__CHAN_SHARED_AT: where a handle maps the segment */
#include "sysops.h"

/* The layout (docs/shm-layout.md, version 10: the barrier mode in the
 * control words, the select bell after them, the records, then the
 * storage; SL_MPMC over 8 bytes in the swap form, with its spare table,
 * whose held entries a look settles, and its starved word). */
#define S_RECORDS_AT 2048u /* 64 records of 64 bytes: marks, roles, owner */
#define S_ROLES_EVER 80u   /* bit 0: a sender registered, bit 1: a receiver */
#define S_DATA_AT 6144u
#define S_CLOSED 40u
#define S_BARRIERS 84u /* the barrier mode: 0 fenced, 1 asymmetric */
#define S_BELL 88u     /* the select bell: epoch, waiters, armed */
#define S_IN_FLIGHT 128u /* unused since version 10: any value, no effect */
#define S_TAIL 1152u      /* SL_SPSC tail; SL_MPMC tail */
#define S_FREE_HEAD 1160u /* SL_MPMC; SL_SPSC: tail_cache */
#define S_HEAD 1216u      /* SL_SPSC head; SL_MPMC head */
#define S_FREE_TAIL 1224u /* SL_MPMC; SL_SPSC: head_cache */
#define S_STARVED 1192u   /* SL_MPMC swap form: the starved word (4 bytes) */
#define S_SPSC_ACTIVE_P 1200u /* unused in a segment: any value, no effect */
#define S_SPSC_ACTIVE_C 1264u

/* The hostile-peer limit (sluice/shm.h: "keep a call on that channel
 * spinning for up to a few laps of the ring"), made a number. A guarded
 * SL_MPMC ring moves a counter past a cell only while the cell's stamp is
 * ahead of it by at most 4 laps (SL__CELLRING_FAR); stamps do not change
 * under one thread, so each cell is passed on at most 4 laps, plus the lap
 * a garbage counter starts in and the step that succeeds: under 6 laps of
 * counter movement for each element a call tries. A call tries one element
 * per message it moves, one that fails, and one more look of a receive
 * that found the channel closed. */
#define S_LAPS_PER_TRY 6u
#define S_CLOCK_MAX 4u

static const size_t shm_sizes[] = {8, 16, 9, 24, 64, 65, 300, 1, 3, 8, 16};
static const size_t shm_caps[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 1, 2, 3};

enum {
    S_SEND, S_TRY_SEND, S_SEND_FOR0, S_SEND_N, S_RECV, S_TRY_RECV, S_RECV_FOR0, S_RECV_N,
    S_CLOSE, S_QUERY, S_POKE, S_FIELD, S_GARBAGE, S_RESET, S_OPEN, S_FILL, S_DRAIN,
    S_NOPS
};

/* ---- counting the system layer ------------------------------------------- */

static struct {
    unsigned waits, clocks, wakes;
} shm_sys;

static int shm_wait(SL_ATOMIC(uint32_t) *w, uint32_t e, uint64_t d)
{
    shm_sys.waits++;
    return sl__sys_default_ops.futex_wait(w, e, d);
}
static int shm_wait_shared(SL_ATOMIC(uint32_t) *w, uint32_t e, uint64_t d)
{
    shm_sys.waits++;
    return sl__sys_default_ops.futex_wait_shared(w, e, d);
}
static int shm_wake(SL_ATOMIC(uint32_t) *w, int n)
{
    shm_sys.wakes++;
    return sl__sys_default_ops.futex_wake(w, n);
}
static int shm_wake_shared(SL_ATOMIC(uint32_t) *w, int n)
{
    shm_sys.wakes++;
    return sl__sys_default_ops.futex_wake_shared(w, n);
}
static uint64_t shm_now(void)
{
    shm_sys.clocks++;
    return sl__sys_default_ops.now_ns();
}

static const sl_sys_ops shm_ops = {.futex_wait = shm_wait, .futex_wake = shm_wake,
                                   .futex_wait_shared = shm_wait_shared,
                                   .futex_wake_shared = shm_wake_shared, .now_ns = shm_now};

/* ---- the watchdog --------------------------------------------------------- */

/* A call that spins without end never reaches shm_call_end's check; every
 * S_DOG_MS the watchdog looks at the counters of the call in progress and
 * aborts as soon as one has moved past what the whole call may move (the
 * step bound for every element asked), long before libFuzzer's -timeout. */
#define S_DOG_MS 10

static struct {
    const unsigned char *raw;
    uint64_t before[4];
    uint64_t bound;
    int stride; /* 1: all four counters (SL_MPMC); 2: tail and head (SL_SPSC) */
    volatile sig_atomic_t active;
} shm_dog;

static const size_t shm_counter_at[4] = {S_TAIL, S_FREE_HEAD, S_HEAD, S_FREE_TAIL};

static void shm_dog_bark(int sig)
{
    (void)sig;
    if (!shm_dog.active)
        return;
    for (int i = 0; i < 4; i += shm_dog.stride) {
        uint64_t now = __atomic_load_n((const uint64_t *)(const void *)(shm_dog.raw +
                                                                       shm_counter_at[i]),
                                       __ATOMIC_RELAXED);
        if (now - shm_dog.before[i] > shm_dog.bound) {
            static const char msg[] = "\nsluice fuzz: MISMATCH (watchdog): a call on the "
                                      "shared channel moved a counter past the step bound "
                                      "while it ran: ";
            (void)!write(2, msg, sizeof msg - 1);
            (void)!write(2, fz_op_name, strlen(fz_op_name));
            (void)!write(2, "\n", 1);
            abort();
        }
    }
}

static void shm_dog_start(void)
{
    static bool started;
    if (started)
        return;
    started = true;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = shm_dog_bark;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    timer_t t;
    struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN + 1};
    struct itimerspec every = {{0, S_DOG_MS * 1000000L}, {0, S_DOG_MS * 1000000L}};
    FZ_CHECK(sigaction(SIGRTMIN + 1, &sa, NULL) == 0 &&
                 timer_create(CLOCK_MONOTONIC, &ev, &t) == 0 &&
                 timer_settime(t, 0, &every, NULL) == 0,
             "the watchdog's timer");
}

/* ---- the run ------------------------------------------------------------- */

typedef struct shm_run {
    sl_chan *h[2];         /* the creator's handle and an opener's */
    unsigned char *raw;    /* the peer's mapping of the segment */
    unsigned char *fresh;  /* the segment as created */
    size_t size, mapped;   /* its bytes, and page-rounded */
    size_t es, cap, lap;   /* lap: SL_MPMC's L, SL_SPSC's S (its slots) */
    size_t slots;          /* where the slots begin */
    size_t spares_at;      /* SL_MPMC over 8 bytes (the swap form): the spare table */
    size_t spares;         /* ... its entries */
    bool mpmc;
    int fd;
    fz_model m;
    bool corrupt;          /* written since the last reset: the model is off */
    uint64_t before[4];    /* the counters before the current call */
} shm_run;

static uint64_t shm_word(const shm_run *r, size_t off)
{
    uint64_t v;
    memcpy(&v, r->raw + off, sizeof v);
    return v;
}

static void shm_put(shm_run *r, size_t off, uint64_t v, size_t width)
{
    if (off + width > r->size)
        return;
    memcpy(r->raw + off, &v, width);
    r->corrupt = true;
}

static unsigned char *shm_seg_of(const sl_chan *ch)
{
    return (unsigned char *)(uintptr_t)ch + SL__CHAN_SHARED_AT;
}

/* The geometry from docs/shm-layout.md's formulas. */
static void shm_layout(shm_run *r)
{
    if (!r->mpmc) {
        size_t slack = r->es >= 128 ? 0 : (128 + r->es - 1) / r->es, s = 1;
        while (s < r->cap + slack)
            s <<= 1;
        r->lap = s;
        r->slots = S_DATA_AT;
        r->size = S_DATA_AT + s * r->es;
        return;
    }
    size_t l = 2;
    while (l <= r->cap)
        l <<= 1;
    r->lap = l;
    r->size = S_DATA_AT + 16 * l;
    if (r->es > 8) {
        /* The swap form: capacity spare entries (64 for messages over 256
         * bytes in a ring over 64), capacity + spares slots of whole words. */
        r->spares = r->es > 256 && r->cap > 64 ? 64 : r->cap;
        r->spares_at = (r->size + 63) & ~(size_t)63;
        r->slots = (r->spares_at + 8 * r->spares + 63) & ~(size_t)63;
        r->size = r->slots + (r->cap + r->spares) * ((r->es + 7) & ~(size_t)7);
    }
}

/* Poisons (or unpoisons) each handle's bytes past the segment's end, and
 * the unused start of the private page below it (before the handle's local
 * part): an index that ran off either end of the segment lands there
 * before it lands on another mapping. */
static void shm_poison(shm_run *r, bool on)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < 2; i++) {
        unsigned char *end = shm_seg_of(r->h[i]) + r->size;
        unsigned char *ch = (unsigned char *)r->h[i];
        unsigned char *below = (unsigned char *)((uintptr_t)ch & ~(uintptr_t)(page - 1));
        if (on) {
            ASAN_POISON_MEMORY_REGION(end, r->mapped - r->size);
            ASAN_POISON_MEMORY_REGION(below, (size_t)(ch - below));
        } else {
            ASAN_UNPOISON_MEMORY_REGION(end, r->mapped - r->size);
            ASAN_UNPOISON_MEMORY_REGION(below, (size_t)(ch - below));
        }
    }
}

static void shm_setup(shm_run *r, fz_in *in)
{
    uint8_t c = fz_byte(in), k = fz_byte(in);
    memset(r, 0, sizeof *r);
    r->mpmc = c & 1;
    r->es = shm_sizes[(c >> 1) % (sizeof shm_sizes / sizeof shm_sizes[0])];
    r->cap = shm_caps[k % (sizeof shm_caps / sizeof shm_caps[0])];
    shm_layout(r);
    sl_chan_opts o = {r->mpmc ? SL_MPMC : SL_SPSC, r->es, r->cap, NULL, NULL};
    fz_begin("sl_chan_shm_create", r->cap);
    FZ_CHECK(sl_chan_shm_create(&r->h[0], NULL, &o, 0) == SL_OK, "create es %zu cap %zu",
             r->es, r->cap);
    r->fd = sl_chan_shm_fd(r->h[0]);
    o.capacity = 0;
    FZ_CHECK(sl_chan_shm_open_fd(&r->h[1], r->fd, &o) == SL_OK, "open");
    struct stat sb;
    FZ_CHECK(fstat(r->fd, &sb) == 0 && (size_t)sb.st_size == r->size,
             "segment of %lld bytes, docs/shm-layout.md says %zu", (long long)sb.st_size,
             r->size);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    r->mapped = (r->size + page - 1) & ~(page - 1);
    r->raw = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
    FZ_CHECK(r->raw != MAP_FAILED, "the peer's mapping");
    FZ_CHECK(shm_word(r, 32) == r->size, "size word %llu, want %zu",
             (unsigned long long)shm_word(r, 32), r->size);
    for (int i = 0; i < 2; i++)
        FZ_CHECK(memcmp(shm_seg_of(r->h[i]), r->raw, 64) == 0, "handle %d's view", i);
    r->fresh = fz_buf(r->size);
    memcpy(r->fresh, r->raw, r->size);
    shm_poison(r, true);
    fz_model_init(&r->m, FZ_BOUNDED, r->es, r->cap);
}

static void shm_teardown(shm_run *r)
{
    shm_poison(r, false);
    sl_chan_free(r->h[1]);
    sl_chan_free(r->h[0]);
    munmap(r->raw, r->size);
    free(r->fresh);
    fz_model_free(&r->m);
}

/* ---- one call: the step bound and the invariants --------------------------- */

/* How far a counter may move in a call that moves n messages. */
static uint64_t shm_step_bound(const shm_run *r, size_t n)
{
    return r->mpmc ? (n + 2) * S_LAPS_PER_TRY * r->lap : n;
}

/* Before a call that may move up to `asked` messages. */
static void shm_call_begin(shm_run *r, size_t asked)
{
    memset(&shm_sys, 0, sizeof shm_sys);
    for (int i = 0; i < 4; i++)
        shm_dog.before[i] = r->before[i] = shm_word(r, shm_counter_at[i]);
    shm_dog.raw = r->raw;
    shm_dog.bound = shm_step_bound(r, asked);
    shm_dog.stride = r->mpmc ? 1 : 2; /* SL_SPSC's caches may jump anywhere */
    atomic_signal_fence(memory_order_seq_cst); /* the watchdog sees the above first */
    shm_dog.active = 1;
}

/* After a call that moved `sent` and `got` messages (out of `asked`). */
static void shm_call_end(shm_run *r, size_t sent, size_t got, size_t asked)
{
    shm_dog.active = 0;
    FZ_CHECK(sent <= asked && got <= asked, "moved %zu / %zu of %zu", sent, got, asked);
    FZ_CHECK(shm_sys.waits == 0, "a call that must not wait slept %u times", shm_sys.waits);
    FZ_CHECK(shm_sys.clocks <= S_CLOCK_MAX, "a call read the clock %u times", shm_sys.clocks);
    /* Two per message, two for a close (a look's too), and one for the
     * select bell: a garbage arm is taken by the first ring, and nothing in
     * this process re-arms it during the call. */
    FZ_CHECK(shm_sys.wakes <= 3 + 2 * (sent + got), "a call woke %u times for %zu messages",
             shm_sys.wakes, sent + got);
    uint64_t d[4];
    for (int i = 0; i < 4; i++)
        d[i] = shm_word(r, shm_counter_at[i]) - r->before[i];
    if (!r->mpmc) {
        /* No loop: each counter moves by exactly the messages moved. */
        FZ_CHECK(d[0] == sent && d[2] == got, "SL_SPSC tail +%llu head +%llu for %zu sent, "
                 "%zu received", (unsigned long long)d[0], (unsigned long long)d[2], sent, got);
        return;
    }
    uint64_t bound = shm_step_bound(r, sent + got);
    for (int i = 0; i < 4; i++)
        FZ_CHECK(d[i] <= bound, "SL_MPMC counter at %zu moved by %llu (bound %llu): a call "
                 "spun past the hostile-peer limit", shm_counter_at[i],
                 (unsigned long long)d[i], (unsigned long long)bound);
}

static void shm_check_state(shm_run *r, sl_chan *ch)
{
    size_t len = sl_chan_len(ch);
    FZ_CHECK(len <= r->cap, "len %zu above capacity %zu", len, r->cap);
    FZ_CHECK(sl_chan_cap(ch) == r->cap && sl_chan_elem_size(ch) == r->es &&
                 sl_chan_flavor(ch) == (r->mpmc ? SL_MPMC : SL_SPSC),
             "the handle's geometry changed");
    if (r->corrupt)
        return;
    FZ_CHECK(len == fz_len(&r->m), "len %zu, model %zu", len, fz_len(&r->m));
    FZ_CHECK(sl_chan_is_closed(ch) == r->m.closed, "is_closed %d, model %d",
             sl_chan_is_closed(ch), r->m.closed);
}

/* ---- sends and receives -------------------------------------------------- */

static void shm_send(shm_run *r, sl_chan *ch, int op)
{
    uint8_t *b = fz_buf(r->es);
    uint64_t id = fz_new_msg(&r->m, b);
    bool can = r->m.closed || !fz_full(&r->m);
    if (op == S_SEND && (r->corrupt || !can))
        op = S_SEND_FOR0; /* blocking only where it cannot block */
    shm_call_begin(r, 1);
    sl_status st = op == S_SEND       ? sl_chan_send(ch, b)
                   : op == S_TRY_SEND ? sl_chan_try_send(ch, b)
                                      : sl_chan_send_for(ch, b, 0);
    sl_status busy = op == S_TRY_SEND ? SL_FULL : SL_TIMEDOUT;
    shm_call_end(r, st == SL_OK, 0, 1);
    /* SL_ENOMEM where the peer's garbage fills the sender records: words
     * that name living processes, or any word once the header's namespaces
     * are garbled (this process is then foreign and judges nobody, shm.h). */
    FZ_CHECK(st == SL_OK || st == busy || st == SL_CLOSED || (r->corrupt && st == SL_ENOMEM),
             "send: %s", fz_st(st));
    if (!r->corrupt) {
        sl_status want = r->m.closed ? SL_CLOSED : fz_full(&r->m) ? busy : SL_OK;
        FZ_CHECK(st == want, "send of %llu: %s, want %s", (unsigned long long)id, fz_st(st),
                 fz_st(want));
        if (st == SL_OK)
            fz_push(&r->m, id);
    }
    free(b);
}

static void shm_recv(shm_run *r, sl_chan *ch, int op)
{
    uint8_t *out = fz_buf(r->es);
    bool can = r->m.closed || fz_len(&r->m) > 0;
    if (op == S_RECV && (r->corrupt || !can))
        op = S_RECV_FOR0;
    shm_call_begin(r, 1);
    sl_status st = op == S_RECV       ? sl_chan_recv(ch, out)
                   : op == S_TRY_RECV ? sl_chan_try_recv(ch, out)
                                      : sl_chan_recv_for(ch, out, 0);
    sl_status busy = op == S_TRY_RECV ? SL_EMPTY : SL_TIMEDOUT;
    shm_call_end(r, 0, st == SL_OK, 1);
    FZ_CHECK(st == SL_OK || st == busy || st == SL_CLOSED, "recv: %s", fz_st(st));
    if (st != SL_OK)
        fz_expect_untouched(out, r->es, "a failed receive's buffer");
    if (!r->corrupt) {
        sl_status want = fz_len(&r->m) > 0 ? SL_OK : r->m.closed ? SL_CLOSED : busy;
        FZ_CHECK(st == want, "recv: %s, want %s", fz_st(st), fz_st(want));
        if (st == SL_OK)
            fz_expect_msg(out, r->es, fz_pop(&r->m), "received message");
    }
    free(out);
}

static void shm_send_n(shm_run *r, sl_chan *ch, size_t k)
{
    uint8_t *b = fz_buf(k * r->es);
    uint64_t first = r->m.next_id;
    for (size_t i = 0; i < k; i++)
        fz_new_msg(&r->m, b + i * r->es);
    shm_call_begin(r, k);
    size_t n = sl_chan_try_send_n(ch, b, k);
    shm_call_end(r, n, 0, k);
    if (!r->corrupt) {
        size_t room = r->m.closed ? 0 : r->cap - fz_len(&r->m);
        size_t want = k < room ? k : room;
        FZ_CHECK(n == want, "try_send_n(%zu): %zu, want %zu", k, n, want);
        for (size_t i = 0; i < n; i++)
            fz_push(&r->m, first + i);
    }
    free(b);
}

/* try_recv_n, recv_n (where it cannot block) or recv_n_for(0), by `form`. */
static void shm_recv_n(shm_run *r, sl_chan *ch, size_t k, unsigned form)
{
    uint8_t *out = fz_buf(k * r->es);
    size_t got = 0;
    sl_status st = SL_OK;
    bool can = r->m.closed || fz_len(&r->m) > 0;
    if (form == 1 && (r->corrupt || !can))
        form = 2;
    shm_call_begin(r, k);
    if (form == 0)
        got = sl_chan_try_recv_n(ch, out, k);
    else
        st = form == 1 ? sl_chan_recv_n(ch, out, k, &got) : sl_chan_recv_n_for(ch, out, k, 0, &got);
    shm_call_end(r, 0, got, k);
    if (form != 0 && k == 0)
        FZ_CHECK(st == SL_EINVAL && got == 0, "recv_n(0): %s, %zu", fz_st(st), got);
    else if (form != 0)
        FZ_CHECK((st == SL_OK && got >= 1) ||
                     ((st == SL_TIMEDOUT || st == SL_CLOSED) && got == 0),
                 "recv_n(_for): %s with %zu", fz_st(st), got);
    fz_expect_untouched(out + got * r->es, (k - got) * r->es, "a batch's buffer past its count");
    if (!r->corrupt) {
        size_t want = k < fz_len(&r->m) ? k : fz_len(&r->m);
        FZ_CHECK(got == want, "recv_n(%zu) form %u: %zu, want %zu", k, form, got, want);
        if (form != 0 && k > 0) {
            sl_status w = want ? SL_OK : r->m.closed ? SL_CLOSED : SL_TIMEDOUT;
            FZ_CHECK(st == w, "recv_n form %u: %s, want %s", form, fz_st(st), fz_st(w));
        }
        for (size_t i = 0; i < got; i++)
            fz_expect_msg(out + i * r->es, r->es, fz_pop(&r->m), "batch message");
    }
    free(out);
}

/* ---- the peer's writes --------------------------------------------------- */

/* The value a write puts, by kind (the input's choice); `old` is there now. */
static uint64_t shm_value(shm_run *r, fz_in *in, uint64_t old, unsigned kind)
{
    uint8_t a = fz_byte(in);
    switch (kind % 7) {
    case 0: return a;
    case 1: {
        uint64_t v = a;
        for (int i = 1; i < 8; i++)
            v |= (uint64_t)fz_byte(in) << (8 * i);
        return v;
    }
    case 2: return old + (uint64_t)(int64_t)(int8_t)a;              /* a step off */
    case 3: return old + (uint64_t)(int64_t)(int8_t)a * r->lap;     /* laps off */
    case 4: return UINT64_MAX - a;
    case 5: return (uint64_t)1 << (a % 64);
    default: return shm_word(r, shm_counter_at[a % 4]) + (a >> 2) % 3; /* another counter */
    }
}

/* A named word of the layout, by the input's choice: offset and width. */
static size_t shm_field(shm_run *r, fz_in *in, size_t *width)
{
    uint8_t f = fz_byte(in), i = fz_byte(in);
    *width = 8;
    switch (f % 14) {
    case 13: /* the select bell's words: rung whenever `selectors` (60) is not 0 */
        *width = 4;
        return S_BELL + 4 * (i % 3);
    case 12: /* a record's marks, roles or owner identity; or roles_ever */
        if ((i & 0xC0) == 0xC0 && i % 64 == 63)
            return *width = 4, S_ROLES_EVER;
        *width = i & 0x80 ? 8 : 4;
        return S_RECORDS_AT + 64 * (i % 64) + (i & 0x80 ? 8 : 4 * ((i >> 6) & 1));
    case 0: *width = 4; return 8 + 4 * (i % 2);            /* version, flavour */
    case 1: return 8 * (i % 5);                            /* magic .. size */
    case 2: *width = 4; return S_CLOSED + 4 * (i % 7);     /* closed, events, drained */
    case 3: *width = 4; return S_IN_FLIGHT + 64 * (i % 16);
    case 4:
    case 5: return shm_counter_at[i % 4];
    case 6: /* SL_SPSC's debug `active` words: never read in a segment */
        *width = 4;
        return i & 1 ? S_SPSC_ACTIVE_C : S_SPSC_ACTIVE_P;
    case 7:
    case 8: /* a used-ring cell's stamp or value (SL_SPSC: a slot's bytes) */
        return r->mpmc ? S_DATA_AT + 16 * (i % r->lap) + 8 * (f & 1)
                       : r->slots + (i % r->lap) * r->es;
    case 9:
    case 10: /* the swap form's spare entry (a slot index) or its starved word */
        if (r->spares_at && (f & 2) && (i & 1))
            return *width = 4, S_STARVED;
        if (r->spares_at)
            return r->spares_at + 8 * (i % r->spares);
        return r->mpmc ? S_DATA_AT + 16 * (i % r->lap) : shm_counter_at[i % 4];
    default: /* a slot's payload */
        if (r->slots) {
            *width = 1;
            return r->slots + (i * 7u) % (r->size - r->slots);
        }
        return S_DATA_AT + 8 + 16 * (i % r->lap);
    }
}

static void shm_poke(shm_run *r, fz_in *in)
{
    size_t off = (fz_byte(in) | (size_t)fz_byte(in) << 8) % r->size;
    unsigned kind = fz_byte(in);
    if (kind % 8 == 7) { /* one byte, anywhere */
        shm_put(r, off, fz_byte(in), 1);
        return;
    }
    off &= ~(size_t)7;
    if (off + 8 <= r->size)
        shm_put(r, off, shm_value(r, in, shm_word(r, off), kind), 8);
}

static void shm_poke_field(shm_run *r, fz_in *in)
{
    size_t width, off = shm_field(r, in, &width);
    uint64_t old = 0;
    if (off + width > r->size) /* a last small slot: a word would reach past the end */
        width = r->size - off;
    memcpy(&old, r->raw + off, width);
    shm_put(r, off, shm_value(r, in, old, fz_byte(in)), width);
}

/* Garbage over the whole segment, the control part or the storage, every
 * byte or one word in eight, from a generator seeded by the input. */
static void shm_garbage(shm_run *r, fz_in *in)
{
    uint64_t seed = fz_byte(in);
    uint8_t how = fz_byte(in);
    size_t from = (how & 3) == 2 ? S_DATA_AT : 0, to = (how & 3) == 1 ? S_DATA_AT : r->size;
    for (size_t off = from; off + 8 <= to; off += 8) {
        uint64_t v = fz_mix(seed * 0x9E3779B97F4A7C15ull + off);
        if ((how & 4) && (v & 7))
            continue;
        if (how & 8)
            v %= 2 * r->lap; /* small: near the counters' and stamps' range */
        shm_put(r, off, v, 8);
    }
}

/* A third open of the segment: refused (SL_EINVAL) where the header no
 * longer matches, or the caller expects another channel; a good header
 * opens, and the new handle keeps the invariants. */
static void shm_open_again(shm_run *r, fz_in *in)
{
    uint8_t v = fz_byte(in);
    sl_chan_opts e = {r->mpmc ? SL_MPMC : SL_SPSC, r->es, v & 1 ? r->cap : 0, NULL, NULL};
    bool wrong = (v >> 1) % 4 != 0;
    if ((v >> 1) % 4 == 1)
        e.flavor = r->mpmc ? SL_SPSC : SL_MPMC;
    else if ((v >> 1) % 4 == 2)
        e.elem_size = r->es + 1;
    else if ((v >> 1) % 4 == 3)
        e.capacity = r->cap + 1;
    sl_chan *c = NULL;
    sl_status st = sl_chan_shm_open_fd(&c, r->fd, &e);
    /* The header, and the barrier mode (which an open checks too). */
    bool intact = memcmp(r->raw, r->fresh, S_CLOSED) == 0 &&
                  memcmp(r->raw + S_BARRIERS, r->fresh + S_BARRIERS, 4) == 0;
    /* (A garbled header may describe the other channel the caller expects.) */
    if (intact && wrong)
        FZ_CHECK(st == SL_EINVAL, "an open expecting another channel: %s", fz_st(st));
    else if (intact)
        FZ_CHECK(st == SL_OK, "an open of an intact header: %s", fz_st(st));
    else
        FZ_CHECK(st == SL_OK || st == SL_EINVAL, "an open of a garbled header: %s", fz_st(st));
    if (st != SL_OK)
        return;
    /* A garbled capacity that still makes sense opens (the caller asked for
     * any): a channel of that geometry, inside the segment's size. */
    FZ_CHECK(sl_chan_elem_size(c) == e.elem_size && (!intact || sl_chan_cap(c) == r->cap),
             "the third handle: elem_size %zu capacity %zu", sl_chan_elem_size(c),
             sl_chan_cap(c));
    FZ_CHECK(sl_chan_len(c) <= sl_chan_cap(c), "the third handle's len");
    sl_chan_free(c);
}

/* ---- the driver ---------------------------------------------------------- */

/* A batch's length: up to twice the ring's storage (SL_SPSC keeps more
 * slots than its capacity), so that a batch that believed a corrupted
 * counter would run past the storage. */
static size_t shm_batch(const shm_run *r, uint8_t a) { return a % (2 * r->lap + 3); }

static void shm_op(shm_run *r, fz_in *in)
{
    uint8_t b = fz_byte(in);
    int op = b % S_NOPS;
    sl_chan *ch = r->h[(b / S_NOPS) & 1];
    uint8_t a;
    switch (op) {
    case S_SEND: fz_begin("send", 0); shm_send(r, ch, op); break;
    case S_TRY_SEND: fz_begin("try_send", 0); shm_send(r, ch, op); break;
    case S_SEND_FOR0: fz_begin("send_for(0)", 0); shm_send(r, ch, op); break;
    case S_RECV: fz_begin("recv", 0); shm_recv(r, ch, op); break;
    case S_TRY_RECV: fz_begin("try_recv", 0); shm_recv(r, ch, op); break;
    case S_RECV_FOR0: fz_begin("recv_for(0)", 0); shm_recv(r, ch, op); break;
    case S_SEND_N:
        a = fz_byte(in);
        fz_begin("try_send_n", shm_batch(r, a));
        shm_send_n(r, ch, shm_batch(r, a));
        break;
    case S_RECV_N:
        a = fz_byte(in);
        fz_begin("try_recv_n / recv_n(_for 0)", a);
        shm_recv_n(r, ch, shm_batch(r, a >> 2), a & 3 ? (a & 3) - 1u : 0);
        break;
    case S_CLOSE:
        fz_begin("close", 0);
        shm_call_begin(r, 0);
        sl_chan_close(ch);
        shm_call_end(r, 0, 0, 0);
        FZ_CHECK(sl_chan_is_closed(ch), "not closed after close"); /* nothing between */
        r->m.closed = true;
        break;
    case S_QUERY: fz_begin("query", 0); break;
    case S_POKE: fz_begin("poke", 0); shm_poke(r, in); break;
    case S_FIELD: fz_begin("poke a field", 0); shm_poke_field(r, in); break;
    case S_GARBAGE: fz_begin("garbage", 0); shm_garbage(r, in); break;
    case S_RESET:
        fz_begin("reset", 0);
        memcpy(r->raw, r->fresh, r->size);
        fz_model_free(&r->m);
        fz_model_init(&r->m, FZ_BOUNDED, r->es, r->cap);
        r->corrupt = false;
        break;
    case S_OPEN: fz_begin("open again", 0); shm_open_again(r, in); break;
    case S_FILL:
        fz_begin("fill", 0);
        for (size_t i = 0; i <= r->cap; i++)
            shm_send(r, ch, S_TRY_SEND);
        break;
    default:
        fz_begin("drain", 0);
        for (size_t i = 0; i <= r->cap; i++)
            shm_recv(r, ch, S_TRY_RECV);
        break;
    }
    shm_check_state(r, r->h[0]);
    shm_check_state(r, r->h[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_trace_init();
    fz_in in = {data, size, 0};
    shm_run r;
    fz_op_index = 0;
    shm_setup(&r, &in);
    if (fz_trace)
        fprintf(stderr, "sluice fuzz: shared %s elem_size %zu capacity %zu segment %zu\n",
                r.mpmc ? "SL_MPMC" : "SL_SPSC", r.es, r.cap, r.size);
    shm_dog_start();
    sl__sys_set_ops(&shm_ops);
    while (fz_more(&in))
        shm_op(&r, &in);
    sl__sys_set_ops(NULL);
    shm_teardown(&r);
    return 0;
}
