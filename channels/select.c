/*
 * channels/select.c — select over channels of any flavour.
 *
 * Fairness: each round of sl_select tries the cases in a fresh uniformly
 * random order and performs the first that is ready; if readiness does not
 * change during the round, every ready case is first with equal probability.
 * sl_select_biased is the same code with the order left as given (no order
 * array: poll_round's `order` is NULL), so the lowest ready index wins.
 *
 * Sleeping: a selector that finds no case ready spins on rounds, then adds
 * itself to each case's channel `selectors` count and waits on one of the
 * process's bells through the await protocol (internal/await.h), its
 * condition one round over the cases, each re-check after the prepare
 * preceded by arming the bell.
 * A channel whose count is non-zero rings after every send, receive and
 * close (chan.c); a ring notifies only when the bell is armed, and takes
 * the arm, so the changes that follow a ring cost no system call until a
 * woken selector has run and armed it again (docs/guarantees.md, "The select
 * bell's arm").
 * The process has a bell per set of directions a selector can wait for:
 * receive cases only, send cases only, or both. A change says which cases
 * it can make ready (a send: receive cases; a receive: send cases; a close
 * or a rendezvous offer: both) and rings every bell whose set includes one
 * of them, so a selector is woken by the changes that can concern it, and
 * senders blocked in a select sleep through the sends of their peers.
 *
 * Shared channels (sluice/shm.h): a change made in another process cannot
 * ring this process's bell, so each segment has a bell of its own, rung by
 * the same protocol (sl__bell_ring) from every process's changes, and a
 * selector with shared cases waits on its process's bell and each distinct
 * segment's bell at once, as one event set (internal/await.h; futex_waitv),
 * arming every one of them before each re-check (sl__bells_arm).
 *
 * Rendezvous cases: a select that has to wait posts an offer on each, from
 * its first spin round on, and runs its rounds inside their protocol
 * (select_ready, rendezvous.c), so that a partner can find it.
 */
#include "sluice/select.h"

#include <stdlib.h>

#include "chan_impl.h"
#include "internal/await.h"
#include "internal/util.h"
#include "internal/sysops.h"

/* Cases up to this many need no allocation for the shuffle. */
#define SELECT_STACK_CASES 64

/* The process's bells, by the set of directions (SL__READY_*) of the
 * selectors that sleep on each; [0], for a select whose every case is
 * disabled, is never rung. `armed`: 1 while a selector that may sleep on the
 * bell has re-checked since the last ring took the arm; loaded by every
 * ring. A line each: a ring of one direction leaves the others' lines
 * alone. */
static struct process_bell {
    SL_ALIGNAS(SL_CACHELINE) sl_event ev;
    SL_ATOMIC(uint32_t) armed;
} process_bells[SL__READY_BOTH + 1];

uint32_t sl__select_waiters(void)
{
    uint32_t n = 0;
    for (unsigned b = 0; b <= SL__READY_BOTH; b++)
        n += sl_event_waiters(&process_bells[b].ev);
    return n;
}

void sl__bell_ring(sl_event *ev, SL_ATOMIC(uint32_t) *armed)
{
    /* seq_cst: the Dekker load, after the caller's change and `selectors`
     * load, against sl__bells_arm's store and fence; the load first keeps the
     * line shared while nobody arms it. */
    if (atomic_load_explicit(armed, memory_order_seq_cst) == 0)
        return;
    /* seq_cst, a read-modify-write: one ring per arm, and the notify's epoch
     * bump after it, so a selector whose arm this takes read its key before
     * the bump and wakes (docs/guarantees.md). Any value a peer wrote into a
     * shared bell's arm counts as armed: one wake more, nothing else. */
    if (atomic_exchange_explicit(armed, 0u, memory_order_seq_cst) == 0)
        return;
    SL_FI(); /* the arm taken, not yet notified */
    sl_event_notify_all(ev);
}

void sl__select_ring(unsigned ready)
{
#ifdef SL_MUTANT_SELECT_RING_ONE_WAY
    ready &= SL__READY_RECV; /* planted bug: a receive never wakes a selecting sender */
#endif
    for (unsigned b = SL__READY_RECV; b <= SL__READY_BOTH; b++)
        if (b & ready)
            sl__bell_ring(&process_bells[b].ev, &process_bells[b].armed);
}

/* The bells a selector waits on: this process's bell for the directions of
 * its cases, then the bell of each distinct shared segment among them
 * (sluice/shm.h), as an event set (internal/await.h) with each bell's arm
 * beside it. */
typedef struct select_bells {
    sl_event **evs;
    SL_ATOMIC(uint32_t) **armed;
    sl__futex_word *w;
    size_t n;
} select_bells;

/* Bells up to this many (the process's and 7 segments') need no allocation. */
#define SELECT_STACK_BELLS 8

/* Adds ch's segment bell to b unless it is there. */
static void bells_add(select_bells *b, sl_chan *ch)
{
    sl__shm_bell *sb = sl__shm_bell_of(ch);
    for (size_t i = 1; i < b->n; i++)
        if (b->evs[i] == &sb->ev)
            return;
    b->evs[b->n] = &sb->ev;
    b->armed[b->n++] = &sb->armed;
}

/* Fills b for the cases, in `stack` when `room` is enough, else in one
 * allocation (*heap, for the caller to free). false: out of memory. */
static bool bells_collect(select_bells *b, const sl_select_case *cases, size_t n, void *stack,
                          size_t room, void **heap)
{
    size_t shared = 0;
    for (size_t i = 0; i < n; i++)
        shared += cases[i].ch && sl__chan_is_shared(cases[i].ch);
    size_t each = sizeof *b->evs + sizeof *b->armed + sizeof *b->w;
    unsigned char *mem = stack;
    *heap = NULL;
    if (shared + 1 > room && !(mem = *heap = sl__alloc(0, (shared + 1) * each)))
        return false;
    b->w = (sl__futex_word *)mem; /* the widest first: each part stays aligned */
    b->evs = (sl_event **)(mem + (shared + 1) * sizeof *b->w);
    b->armed = (SL_ATOMIC(uint32_t) **)(mem + (shared + 1) * (sizeof *b->w + sizeof *b->evs));
    unsigned ready = 0;
    for (size_t i = 0; i < n; i++)
        if (cases[i].ch)
            ready |= cases[i].op == SL_SEL_SEND ? SL__READY_SEND : SL__READY_RECV;
#ifdef SL_MUTANT_SELECT_ONE_BELL
    ready = SL__READY_BOTH; /* planted bug: every selector wakes for every change */
#endif
    b->evs[0] = &process_bells[ready].ev;
    b->armed[0] = &process_bells[ready].armed;
    b->n = 1;
    for (size_t i = 0; i < n; i++)
        if (cases[i].ch && sl__chan_is_shared(cases[i].ch))
            bells_add(b, cases[i].ch);
    return true;
}

void sl__bells_arm(SL_ATOMIC(uint32_t) *const *armed, size_t n, bool shared)
{
    /* seq_cst: the Dekker store, in the total order with the rings' loads.
     * Stored even over a 1: the argument needs this selector's own store
     * (docs/guarantees.md), and this path is about to sleep anyway. */
    for (size_t i = 0; i < n; i++)
        atomic_store_explicit(armed[i], 1u, memory_order_seq_cst);
    SL_FI(); /* armed, not yet fenced */
    /* The arms (and the registrations before them) before the re-check, with
     * the channel's change and its `selectors` and arm loads the other side.
     * The fence part of the heavy barrier is the one a ring in another
     * process pairs with: its change is a seq_cst read-modify-write or
     * fenced there, or, in a segment of the asymmetric barrier mode, only
     * compiler-ordered: then the global barrier (docs/guarantees.md,
     * "Across processes"). */
    if (shared)
        sl__event_heavy_fence_shared();
    /* The process bell (armed[0]) is always among them: its rings come from
     * in-process changes, compiler-ordered in asymmetric mode, which the
     * shared barrier does not cover (a fence alone in a fenced segment). */
    sl_event_heavy_fence();
}

static _Thread_local uint64_t select_rng __attribute__((tls_model("initial-exec")));

static __attribute__((noinline, cold)) void seed_rng(void)
{
    /* From the clock and the TLS address: threads started together differ. */
    select_rng = (sl_now_ns() ^ (uint64_t)(uintptr_t)&select_rng ^ 0x9E3779B97F4A7C15ull) | 1;
}

/* A draw in [0, n). Inline: a draw a round, about a tenth of a two-case
 * select's own work when it was a call. */
static inline __attribute__((always_inline)) size_t rng_below(size_t n)
{
    if (__builtin_expect(select_rng == 0, 0)) /* first use on this thread */
        seed_rng();
    return (size_t)sl__rand_below(&select_rng, n);
}

/* The arguments both selects refuse with SL_EINVAL, before anything happens. */
static bool cases_valid(const sl_select_case *cases, size_t n, const size_t *index)
{
    if (!cases || !index || n == 0 || n > SL__RDV_CASES_MAX)
        return false;
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        if (cases[i].op != SL_SEL_SEND && cases[i].op != SL_SEL_RECV)
            return false;
        if (!cases[i].ch)
            continue;
        if (!cases[i].buf)
            return false;
        any = true;
    }
    return any;
}

/* A uniformly random permutation of 0..n-1 into order. */
static void shuffle(size_t *order, size_t n)
{
    if (n == 2) { /* the common select (a data case, a quit case): one draw, no loops */
        order[0] = rng_below(2);
#ifdef SL_MUTANT_SELECT_PAIR_BIASED
        order[0] = rng_below(4) != 0; /* planted bug: case 1 first three times in four */
#endif
        order[1] = order[0] ^ 1;
    } else {
        for (size_t i = 0; i < n; i++)
            order[i] = i;
        for (size_t i = n - 1; i > 0; i--) { /* Fisher–Yates */
            size_t j = rng_below(i + 1);
            size_t t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }
#ifdef SL_MUTANT_SELECT_NO_SHUFFLE
    for (size_t i = 0; i < n; i++)
        order[i] = i; /* planted bug: the first ready case always wins */
#endif
}

/* One round: in a fresh random order, or with order NULL (biased) in the
 * order given. Returns the first final status (setting *index) or
 * SL_TIMEDOUT if no case was ready. A select's `first` round answered by a
 * receive case counts in the receive streak (chan_wait.c). */
static sl_status poll_round(sl_select_case *cases, size_t n, size_t *order, size_t *index,
                            bool first)
{
#ifdef SL_MUTANT_SELECT_BIASED_SHUFFLES
    size_t mutant_order[SELECT_STACK_CASES]; /* planted bug: the biased select shuffles too */
    if (!order && n <= SELECT_STACK_CASES)
        order = mutant_order;
#endif
    if (order)
        shuffle(order, n);
    for (size_t k = 0; k < n; k++) {
        size_t i = order ? order[k] : k;
        sl_select_case *c = &cases[i];
        if (!c->ch)
            continue;
        sl_status st = c->op == SL_SEL_SEND ? sl__chan_poll_send(c->ch, c->buf)
                                            : sl__chan_poll_recv(c->ch, c->buf);
#ifdef SL_MUTANT_SELECT_CLOSED_NOT_READY
        if (st == SL_CLOSED)
            continue; /* planted bug: a closed channel never makes its case ready */
#endif
        if (st != SL_FULL && st != SL_EMPTY) {
            if (first && st == SL_OK && c->op == SL_SEL_RECV)
                sl__recv_streak_hit();
            *index = i;
            return st;
        }
    }
    return SL_TIMEDOUT;
}

static void set_registered(sl_select_case *cases, size_t n, bool on)
{
#ifdef SL_MUTANT_SELECT_NO_REGISTER
    return; /* planted bug: no channel knows to ring the bell */
#endif
    for (size_t i = 0; i < n; i++) {
        if (!cases[i].ch)
            continue;
        /* seq_cst: in the total order with the channels' `selectors` loads. */
        if (on)
            atomic_fetch_add_explicit(&cases[i].ch->selectors, 1u, memory_order_seq_cst);
        else
            atomic_fetch_sub_explicit(&cases[i].ch->selectors, 1u, memory_order_seq_cst);
    }
    SL_FI();
    /* No barrier here: every re-check that may precede a sleep follows
     * sl__bells_arm's, which orders these registrations too. Leaving needs none:
     * a channel that still sees the count only rings the bell once more. */
}

/* The await's condition: one round over the cases, ready once one was. */
typedef struct select_ctx {
    sl_select_case *cases;
    size_t n;
    size_t *order;
    size_t *index;
    sl_status st;          /* the last round's */
    sl__rdv_select *rdv;   /* offers on rendezvous cases, once registered; or NULL */
    unsigned looks;        /* rounds in the wait (select_recheck) */
    uint64_t deadline;     /* the select's, absolute */
    select_bells bells;    /* what the wait sleeps on */
} select_ctx;

static bool select_round(void *ctx)
{
    select_ctx *w = ctx;
    w->st = poll_round(w->cases, w->n, w->order, w->index, false);
    return w->st != SL_TIMEDOUT;
}

/* With rendezvous cases, the round runs inside their offers' protocol
 * (rendezvous.c): a partner must be able to find a selector that sleeps. */
static bool select_ready(void *ctx)
{
    select_ctx *w = ctx;
    return w->rdv ? sl__rdv_select_ready(w->rdv, select_round, w) : select_round(w);
}

/* The wait's condition: the bell armed, then one round. The wait's first look
 * comes before its prepare and needs no arm (the re-check after the prepare
 * arms); every later one may be the re-check before a sleep, unless the
 * deadline has passed: no sleep follows such a look (await.h), and the arm's
 * heavy barrier (a membarrier where the process's waiters use them) would be
 * paid once per select whose time ran out in its spin. */
static bool select_recheck(void *ctx)
{
    select_ctx *w = ctx;
#ifdef SL_MUTANT_SELECT_ARM_ONCE
    bool later = w->looks++ == 1; /* planted bug: only the first re-check arms the bell */
#else
    bool later = w->looks++ > 0;
#endif
#ifdef SL_MUTANT_PARK_SLEEPS_PAST_DEADLINE
    if (later) /* planted bug: a look after the deadline arms too */
#else
    if (later && !sl__deadline_passed(w->deadline))
#endif
        sl__bells_arm(w->bells.armed, w->bells.n, w->bells.n > 1);
    return select_ready(ctx);
}

/* The deadline hook: the earliest instant a receive case may become ready
 * without ringing the bell (a timer's next fire), so the wait wakes then;
 * and for a shared channel's case of either direction, its periodic look
 * (sluice/shm.h: a ring lost with a killed process, a dead sender). */
static uint64_t select_next(void *ctx)
{
    select_ctx *w = ctx;
    uint64_t at = SL_FOREVER;
    for (size_t i = 0; i < w->n; i++) {
        const sl_select_case *c = &w->cases[i];
        uint64_t t = c->ch && (c->op == SL_SEL_RECV || sl__chan_is_shared(c->ch))
                         ? sl__chan_ready_at(c->ch)
                         : SL_FOREVER;
        at = t < at ? t : at;
    }
    return at;
}

/* Registered on the cases' channels, waits on the bells (the await
 * protocol, internal/await.h) until a round is ready or the deadline. */
static sl_status select_sleep(select_ctx *w, uint64_t deadline)
{
    _Alignas(sl__futex_word) unsigned char stack[SELECT_STACK_BELLS *
                        (sizeof(sl_event *) + sizeof(void *) + sizeof(sl__futex_word))];
    void *heap;
    if (!bells_collect(&w->bells, w->cases, w->n, stack, SELECT_STACK_BELLS, &heap))
        return SL_ENOMEM;
    /* Registered before the first prepare, and still race-free: a notifier
     * changes state before it loads `selectors` and the arm, our arm and
     * re-check follow the registration; the rest is the await protocol
     * (internal/await.h). */
    set_registered(w->cases, w->n, true);
    sl__event_set set = {w->bells.evs, w->bells.w, w->bells.n, NULL};
    sl_status st = sl__chan_await(&set, select_recheck, w, deadline, 0, select_next);
    free(heap);
    return st;
}

/* The spin flags of a select whose first round found nothing: a select
 * with a receive case is a receive that found nothing, and ends the
 * receive streak (chan_wait.c), spinning patiently after a full one. */
static unsigned select_spin(const sl_select_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (cases[i].ch && cases[i].op == SL_SEL_RECV)
            return sl__recv_streak_spin() & SL__AWAIT_PATIENT;
    return 0;
}

/* Out of line: a select answered by its first round sets up no wait. */
static __attribute__((noinline)) sl_status select_wait(sl_select_case *cases, size_t n,
                                                       size_t *order, uint64_t deadline,
                                                       size_t *index)
{
    select_ctx w = {cases, n, order, index, SL_TIMEDOUT, NULL, 0, deadline, {0}};
    /* Offers on rendezvous cases go up with the first round of the spin, so
     * a partner can meet this select while it spins (rendezvous.c). */
    sl__rdv_select rdv;
    sl_status rs = sl__rdv_select_begin(&rdv, cases, n);
    if (rs == SL_ENOMEM)
        return rs;
    w.rdv = rs == SL_OK ? &rdv : NULL;
    /* Spin before registering: a select answered within the spin pays no
     * heavy fence. */
    sl_status st = SL_OK;
    bool registered = false;
    sl__chan_retrying = true; /* every round from here is a retry (chan_impl.h) */
    if (!sl__await_spin(select_ready, &w, deadline, select_spin(cases, n))) {
        st = select_sleep(&w, deadline);
        registered = st != SL_ENOMEM;
    }
    sl__chan_retrying = false;
    if (w.rdv && sl__rdv_select_end(w.rdv, index))
        st = w.st = SL_OK; /* a partner took one of the offers */
    if (registered)
        set_registered(cases, n, false);
    if (st == SL_ENOMEM)
        return st;
    return st == SL_OK ? w.st : SL_TIMEDOUT;
}

/* The round, then the wait, shared by both selects: `order` is the fair
 * select's shuffle space, NULL for the biased one. One wait path: a hook for
 * either select goes here or in select_wait, never in a copy. */
static inline __attribute__((always_inline)) sl_status
select_run(sl_select_case *cases, size_t n, size_t *order, uint64_t timeout_ns, size_t *index)
{
    sl_status st = poll_round(cases, n, order, index, true);
    if (st == SL_TIMEDOUT && timeout_ns != 0)
        st = select_wait(cases, n, order, sl_deadline_after(timeout_ns), index);
    return st;
}

SL_API sl_status sl_select(sl_select_case *cases, size_t n, uint64_t timeout_ns, size_t *index)
{
    if (!cases_valid(cases, n, index))
        return SL_EINVAL;
    size_t stack_order[SELECT_STACK_CASES];
    size_t *order = n <= SELECT_STACK_CASES ? stack_order : sl__alloc(0, n * sizeof *order);
    if (!order)
        return SL_ENOMEM;
    sl_status st = select_run(cases, n, order, timeout_ns, index);
    if (order != stack_order)
        free(order);
    return st;
}

SL_API sl_status sl_select_biased(sl_select_case *cases, size_t n, uint64_t timeout_ns,
                                  size_t *index)
{
    if (!cases_valid(cases, n, index))
        return SL_EINVAL;
    return select_run(cases, n, NULL, timeout_ns, index);
}
