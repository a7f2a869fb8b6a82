/*
 * pool/exec_idle.c — searching and sleeping workers: the wake policy, parking,
 * and the quiescence test that lets sl_exec_free stop the workers.
 *
 * State (struct sl_exec):
 *   idle        the number of workers *searching* — out of local work and
 *               looking in the other queues — plus wake tokens in flight;
 *   sleep_bits  bit i set: worker i has registered to sleep and nobody has
 *               claimed it yet;
 *   quiet       the number of workers parked in their main loop (not inside a
 *               sync or a scope), and SL__QUIET_EXIT.
 *
 * The policy is the Go scheduler's (runtime/proc.go, "Worker thread parking/
 * unparking"): a thread that publishes work wakes a sleeper only when no
 * worker is searching, and only one waker at a time (a CAS of the searching
 * count from 0 to 1 takes a "token" that the woken worker inherits); a
 * searcher that finds work and was the last searcher wakes the next sleeper,
 * so that parallelism ramps up one worker at a time as long as there is work,
 * and never a herd. A worker that gives up searching registers as a sleeper,
 * stops counting as a searcher, issues a full fence (sl_event_prepare) and
 * looks at every queue once more before it sleeps.
 *
 * Why no work is stranded (docs/exec.md, "Parking" has the long form): let P
 * publish a task and then (after a fence) read `idle` and the bits, and let a
 * worker S going to sleep set its bit and decrement `idle`, then fence, then
 * re-check every queue. In the single total order of these seq_cst steps,
 * either S's re-check comes after P's publication (S sees the task and does
 * not sleep), or P's reads come after S's registration: P sees S's bit, and
 * either sees searching == 0 and wakes someone, or sees a searcher, which in
 * turn either finds work — and, being the last, wakes a sleeper — or goes
 * through the same registration and re-check. Each step of that chain is the
 * same Dekker pair, so whenever a task is queued and a worker sleeps, some
 * worker is searching or about to re-check.
 */
#include "exec_internal.h"

#include "internal/spin.h"

bool sl__wait_done(const sl__wait *wt)
{
    if (!wt)
        return false;
    if (wt->task)  /* acquire: the task's result before our read of it */
        return atomic_load_explicit(&wt->task->state, memory_order_acquire) == SL__TASK_DONE;
    /* acquire: every task of the scope before our return from sl_scope_end */
    return atomic_load_explicit(&wt->scope->sl__pending, memory_order_acquire) == 0;
}

static bool any_sleeper(sl_exec *ex)
{
    for (unsigned i = 0; i < ex->nwords; i++)
        if (atomic_load_explicit(&ex->sleep_bits[i], memory_order_relaxed) != 0)
            return true;
    return false;
}

/* Clears worker i's sleep bit if set; true if this call cleared it (the
 * caller now owns the wake-up of i). seq_cst: the clear is the condition
 * change that the notify after it publishes (sluice/park.h). */
static bool claim(sl_exec *ex, unsigned i)
{
    uint64_t bit = (uint64_t)1 << (i & 63u);
    uint64_t old = atomic_fetch_and_explicit(&ex->sleep_bits[i >> 6], ~bit, memory_order_seq_cst);
    return (old & bit) != 0;
}

/* Claims some sleeping worker; its index, or UINT32_MAX if none. */
static unsigned claim_any(sl_exec *ex)
{
    for (unsigned wi = 0; wi < ex->nwords; wi++) {
        uint64_t bits = atomic_load_explicit(&ex->sleep_bits[wi], memory_order_relaxed);
        while (bits) {
            unsigned i = wi * 64u + (unsigned)__builtin_ctzll(bits);
            if (claim(ex, i))
                return i;
            bits &= bits - 1;
        }
    }
    return UINT32_MAX;
}

/* The gate: take the wake token if nobody searches, then hand it to a sleeper. */
static void wake_one(sl_exec *ex)
{
    uint64_t none = 0;
    /* seq_cst: one step of the chain in the header comment */
    if (!atomic_compare_exchange_strong_explicit(&ex->idle, &none, 1,
                                                 memory_order_seq_cst, memory_order_relaxed))
        return; /* a searcher exists (or another waker holds the token) */
    SL_FI();
    unsigned i = claim_any(ex);
    if (i != UINT32_MAX) {
        SL_FI();
        sl_event_notify_one(&ex->workers[i].ev); /* it wakes up searching, with our token */
        return;
    }
    /* Every sleeper woke by itself meanwhile and counts as searching now. */
    atomic_fetch_sub_explicit(&ex->idle, 1, memory_order_seq_cst);
}

/* Drops one searching count; the last searcher to stop wakes a sleeper, so
 * that work it may have left behind (or that others published while it was
 * counted) gets a searcher. */
static void drop_token(sl_exec *ex)
{
    uint64_t old = atomic_fetch_sub_explicit(&ex->idle, 1,
                                             memory_order_seq_cst);
    if (old == 1 && any_sleeper(ex))
        wake_one(ex);
}

void sl__exec_idle_search_begin(sl_exec *ex, sl__worker *w)
{
    if (w->searching)
        return;
    w->searching = true;
    atomic_fetch_add_explicit(&ex->idle, 1, memory_order_seq_cst);
}

void sl__exec_idle_search_end(sl_exec *ex, sl__worker *w)
{
    if (!w->searching)
        return;
    w->searching = false;
    drop_token(ex);
}

void sl__exec_idle_notify_work(sl_exec *ex)
{
    /* relaxed: the caller's fence orders its publication before these loads */
    if (atomic_load_explicit(&ex->idle, memory_order_relaxed) != 0)
        return;
    if (any_sleeper(ex))
        wake_one(ex);
}

void sl__exec_idle_notify_mailbox(sl_exec *ex, unsigned v)
{
    uint64_t bit = (uint64_t)1 << (v & 63u);
    /* The caller's push into v's mailbox before our read of v's bit: the
     * Dekker pair with v's registration and re-check of its mailbox. */
    sl_event_fence();
    if (atomic_load_explicit(&ex->sleep_bits[v >> 6], memory_order_relaxed) & bit) {
        /* The token first, then the claim: the woken worker counts itself as
         * searching as soon as it sees its bit cleared. */
        atomic_fetch_add_explicit(&ex->idle, 1, memory_order_seq_cst);
        SL_FI();
        if (claim(ex, v)) {
            SL_FI();
            sl_event_notify_one(&ex->workers[v].ev);
            return;
        }
        drop_token(ex); /* v woke by itself; it is responsible for its mailbox */
    }
    /* v is awake (perhaps busy): let a searcher take the task from v's mailbox.
     * v may also be waiting deep (exec_depth.c), asleep on its event without
     * a sleep bit, with its own mailbox among what it still runs: ring it —
     * no system call unless it sleeps there (the fence above pairs with its
     * prepare and re-check of the mailbox). */
    sl__exec_idle_notify_work(ex);
    sl_event_notify_one(&ex->workers[v].ev);
}

unsigned sl__exec_idle_find_sleeper(sl_exec *ex, unsigned not_this)
{
    for (unsigned wi = 0; wi < ex->nwords; wi++) {
        uint64_t bits = atomic_load_explicit(&ex->sleep_bits[wi], memory_order_relaxed);
        if (wi == not_this >> 6)
            bits &= ~((uint64_t)1 << (not_this & 63u));
        if (bits)
            return wi * 64u + (unsigned)__builtin_ctzll(bits);
    }
    return SL_EXEC_MAX_THREADS;
}

/* The main loop's count of parked workers: leaving fails once EXIT is set. */
static bool quiet_leave(sl_exec *ex)
{
    uint64_t q = atomic_load_explicit(&ex->quiet, memory_order_relaxed);
    do {
        if (q & SL__QUIET_EXIT)
            return false;
        /* seq_cst: ordered against sl__exec_idle_quiesce's CAS that sets EXIT */
    } while (!atomic_compare_exchange_weak_explicit(&ex->quiet, &q, q - 1, memory_order_seq_cst,
                                                    memory_order_relaxed));
    return true;
}

/* After the re-check, in the main loop: exit, or tell sl_exec_free that all
 * workers may now be parked. Returns false when the worker must exit. */
static bool quiet_check(sl_exec *ex)
{
    uint64_t q = atomic_load_explicit(&ex->quiet, memory_order_seq_cst);
    if (q & SL__QUIET_EXIT)
        return false;
    /* seq_cst: Dekker with sl_exec_free's store of stopping and load of quiet */
    SL_FI();
    if (atomic_load_explicit(&ex->stopping, memory_order_seq_cst) &&
        q == atomic_load_explicit(&ex->started, memory_order_relaxed))
        sl_event_notify_all(&ex->freer);
    return true;
}

bool sl__exec_idle_park(sl_exec *ex, sl__worker *w, const sl__wait *wt)
{
    uint64_t bit = (uint64_t)1 << (w->id & 63u);
    SL_ATOMIC(uint64_t) *word = &ex->sleep_bits[w->id >> 6];
    if (!wt)
        atomic_fetch_add_explicit(&ex->quiet, 1, memory_order_seq_cst);
    /* Register as a sleeper, then stop counting as a searcher (in this order
     * a waker always sees one of the two). */
    atomic_fetch_or_explicit(word, bit, memory_order_seq_cst);
    SL_FI();
    atomic_fetch_sub_explicit(&ex->idle, 1, memory_order_seq_cst);
    w->searching = false;
    SL_FI();
    /* Full fence inside: the registration above before the re-check below. */
    uint32_t key = sl_event_prepare(&w->ev);
    SL_FI();
    /* Stay awake if a waker has claimed us already (its notify may have come
     * before our prepare), if there is work, or if our wait is over. */
    bool awake = !(atomic_load_explicit(word, memory_order_seq_cst) & bit) ||
                 sl__exec_has_work(ex, w) || sl__wait_done(wt);
    bool keep = wt || quiet_check(ex);
    if (awake || !keep)
        sl_event_cancel(&w->ev);
    else
        sl_event_wait(&w->ev, key, SL_FOREVER);
    if (!wt && (!keep || !quiet_leave(ex)))
        return false; /* EXIT: the executor is quiescent and being freed */
    if (claim(ex, w->id)) {
        /* Nobody claimed us: woken by a completion, a stray notify, or the
         * re-check. Count as searching again unless our wait is over. */
        if (!sl__wait_done(wt))
            sl__exec_idle_search_begin(ex, w);
    } else {
        /* A waker claimed us and gave us its searching token. */
        w->searching = true;
    }
    return true;
}

void sl__exec_idle_quiesce(sl_exec *ex)
{
    uint64_t n = atomic_load_explicit(&ex->started, memory_order_relaxed);
    for (;;) {
        uint32_t key = sl_event_prepare(&ex->freer);
        uint64_t q = atomic_load_explicit(&ex->quiet, memory_order_seq_cst);
        if (q == n && !sl__exec_has_work(ex, NULL)) {
            /* seq_cst: a worker's quiet_leave after this CAS fails and exits */
            bool done = atomic_compare_exchange_strong_explicit(
                &ex->quiet, &q, n | SL__QUIET_EXIT, memory_order_seq_cst, memory_order_relaxed);
            sl_event_cancel(&ex->freer);
            if (done)
                break;
            continue;
        }
        sl_event_wait(&ex->freer, key, SL_FOREVER);
    }
    /* Every worker is parked or about to re-check: wake them to exit. */
    for (unsigned i = 0; i < n; i++)
        sl_event_notify_one(&ex->workers[i].ev);
}
