/*
 * pool/exec_run.c — where a task is found, and how a task is run to its
 * completion.
 *
 * Finding: one search round of a worker looks at its own mailbox, then the
 * deques — every worker's from a random victim on, then the helper slots' —
 * then the injector (tasks from foreign threads), then the other workers'
 * mailboxes. A task its own thread submitted is never run there: a worker
 * that pops one from a mailbox puts it back and re-notifies the owner
 * (docs/exec.md, "Submit never runs on its caller"). Foreign threads steal
 * from the deques only, with the same pass (exec_wait.c).
 *
 * Running: a task with a future ends by publishing DONE and waking its syncer
 * if the syncer has registered where it sleeps (WAITED); a scope task ends
 * by counting itself off its scope, the last one waking the thread in
 * sl_scope_end. Both are the notifying side of the await protocol
 * (internal/await.h): the change is a seq_cst RMW, then the notify.
 *
 * What waits, searches in a loop and parks is one layer up (exec_wait.c);
 * this file only looks once and runs.
 */
#include "exec_internal.h"

#include <sched.h>

#include "internal/util.h"

/* Steal attempts on one victim whose top moved under us before moving on. */
#define STEAL_RETRIES 4u

static void *steal_from(sl__deque *victim)
{
    void *item = NULL;
    for (unsigned i = 0; i < STEAL_RETRIES; i++) {
        sl__steal r = sl__deque_steal(victim, &item);
        if (r == SL__STEAL_OK)
            return item;
        if (r == SL__STEAL_EMPTY)
            return NULL;
    }
    return NULL;
}

/* A task from other workers' mailboxes that w did not submit, or NULL. A task
 * w submitted goes back where it was, with the owner's wake-up redone. */
static sl__task *steal_mail(sl_exec *ex, sl__worker *w, unsigned start)
{
    /* From `start` itself: it is w's own only by chance (skipped below). */
    for (unsigned k = 0; k < ex->nworkers; k++) {
        unsigned v = (start + k) % ex->nworkers;
        if (v == w->id)
            continue;
        sl__task *t = NULL;
        if (sl_list_try_pop(&ex->workers[v].mailbox, &t) != SL_OK)
            continue;
        if (t->link.submitter != w) {
            sl__exec_mail_taken(t);
            return t;
        }
        /* Back where it was (we must never run it); only a failed segment
         * allocation can refuse, and the task must not be lost: retry. */
        while (sl_list_try_push(&ex->workers[v].mailbox, &t) != SL_OK)
            sched_yield();
        sl__idle_notify_slot(&ex->idle, v);
        /* That wake check may count us as the searcher, and we cannot run
         * the task: wake another sleeper, which takes it unless v does.
         * After notify_slot's fence: a worker parking meanwhile either is
         * seen here or sees the task in its re-check (sl__exec_has_work). */
#ifndef SL_MUTANT_EXEC_OWN_MAILBOX_ONLY
        unsigned s = sl__idle_find_sleeper(&ex->idle, w->id);
        if (s < ex->nworkers)
            sl__idle_notify_slot(&ex->idle, s);
#endif
    }
    return NULL;
}

sl__task *sl__exec_steal_deques(sl_exec *ex, unsigned start, unsigned skip,
                                const sl__helper *own)
{
    unsigned n = ex->nworkers;
    for (unsigned k = 0; k < n; k++) {
        unsigned v = (start + k) % n;
        sl__task *t;
        if (v != skip && (t = steal_from(&ex->workers[v].deque)) != NULL)
            return t;
    }
    for (unsigned k = 0; k < SL__HELPER_SLOTS; k++) {
        sl__helper *h = &ex->helpers[(start / n + k) % SL__HELPER_SLOTS];
        sl__task *t;
        /* Slots are empty most of the time: look before the steal's fence. */
        if (h != own && !sl__deque_is_empty(&h->deque) && (t = steal_from(&h->deque)) != NULL)
            return t;
    }
    return NULL;
}

sl__task *sl__exec_search(sl__worker *w)
{
    sl_exec *ex = w->ex;
    sl__task *t = NULL;
    if (sl_list_try_pop(&w->mailbox, &t) == SL_OK) {
        sl__exec_mail_taken(t);
        return t;
    }
    unsigned n = ex->nworkers;
    unsigned start = (unsigned)sl__rand_below(&w->rng, n * SL__HELPER_SLOTS);
    if ((t = sl__exec_steal_deques(ex, start, w->id, NULL)) != NULL)
        return t;
    if (sl_list_try_pop(&ex->injector, &t) == SL_OK)
        return t;
    return n > 1 ? steal_mail(ex, w, start) : NULL;
}

bool sl__exec_has_work(sl_exec *ex, const sl__worker *w)
{
    /* Every mailbox, not only w's own: a submit into a busy worker's mailbox
     * may find a searcher counted (and wake nobody), and that searcher's
     * last look must include the mailbox, or it sleeps while the task waits
     * for the busy owner. Only beyond w's own submissions, which w may not
     * run: it would spin on them instead of sleeping. */
    size_t mail = 0;
    for (unsigned i = 0; i < ex->nworkers; i++) {
        const sl__worker *v = &ex->workers[i];
        if (!sl__deque_is_empty(&v->deque))
            return true;
        size_t len = sl_list_len(&v->mailbox);
        if (len != 0 && (!w || v == w))
            return true;
        if (v != w)
            mail += len;
    }
#ifndef SL_MUTANT_EXEC_OWN_MAILBOX_ONLY /* planted bug: others' mailboxes are their owners' */
    if (w && mail > atomic_load_explicit(&w->mailed, memory_order_relaxed))
        return true;
#endif
    for (unsigned i = 0; i < SL__HELPER_SLOTS; i++)
        if (!sl__deque_is_empty(&ex->helpers[i].deque))
            return true;
    return sl_list_len(&ex->injector) != 0;
}

/* One task of s has completed: the last one (its decrement reaches zero,
 * which the scope's own count keeps it from doing before sl_scope_end) wakes
 * the thread there, then says it is through with the scope and the event
 * (SL__SCOPE_RELEASED), which the waiter waits for before it returns: the
 * scope may live on its stack, and the event may be a worker's of another
 * executor, freed as soon as the waiter's caller frees that executor. */
static void scope_count_off(sl_scope *s)
{
    sl_event *sleep = s->sl__sleep;
    SL_FI();
    /* release: the task's effects before the zero the waiter acquires;
     * seq_cst: the zero before the notify's read of the waiter count */
    if (atomic_fetch_sub_explicit(&s->sl__pending, 1, memory_order_seq_cst) != 1)
        return;
    sl_event_notify_all(sleep);
    SL_FI();
    /* release: our last accesses to s and its event before the waiter's return */
    atomic_store_explicit(&s->sl__pending, SL__SCOPE_RELEASED, memory_order_release);
}

void sl__exec_run(sl_exec *ex, sl__worker *w, sl__task *t)
{
    sl_scope *scope = t->scope;
    t->fn(t->args_size ? t->payload : NULL,
          t->ret_size ? t->payload + sl__task_ret_offset(t) : NULL);
    SL_FI();
    if (scope) {
        sl__task_free(ex, w, t);
        scope_count_off(scope);
        return;
    }
    /* release: the result before DONE. acquire on failure: the syncer's
     * event pointer, stored before its WAITED. */
    uint32_t st = SL__TASK_PENDING;
    if (atomic_compare_exchange_strong_explicit(&t->state, &st, SL__TASK_DONE,
                                                memory_order_seq_cst, memory_order_acquire))
        return;
    /* WAITED: the syncer may sleep on its event. It leaves once it sees the
     * completion, but not before our last store (exec_wait.c, settle): the
     * record then goes back to a cache, and the event may be a worker's of
     * another executor, which the syncer's caller may then free.
     * seq_cst: NOTIFYING (with the result, release) before the notify's
     * read of the waiter count (sluice/park.h). */
    atomic_store_explicit(&t->state, SL__TASK_NOTIFYING, memory_order_seq_cst);
    SL_FI();
    sl_event_notify_one(atomic_load_explicit(&t->sleep, memory_order_relaxed));
    SL_FI();
    /* release: our last accesses to the record and the event before the
     * syncer's return */
    atomic_store_explicit(&t->state, SL__TASK_DONE, memory_order_release);
}
