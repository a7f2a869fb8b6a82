/*
 * pool/exec_depth.c — how deep a waiting thread may help: the stack-depth rule.
 *
 * A thread waiting in sl_sync or sl_scope_end runs other tasks, and each of
 * those may sync and help in turn, on the same stack; nothing in the
 * algorithm bounds that nesting. So a thread past half its stack (oneTBB's
 * rule) stops taking other threads' work while it waits: it runs only what
 * is its own — its deque, its mailbox, its helper slot — and otherwise
 * sleeps until the wait is over. docs/exec.md, "Stack depth".
 */
#include "exec_internal.h"

#include <pthread.h>

/* A foreign thread's floor, found on its first need. */
static _Thread_local uintptr_t foreign_floor;
static _Thread_local bool foreign_floor_known;

/* The address below which the calling thread stops helping: the middle of
 * its stack (it grows down); 0 when unknown — the rule is then off for the
 * thread (glibc and musl always know a pthread's stack). */
uintptr_t sl__exec_help_floor(void)
{
    pthread_attr_t attr;
    void *low = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return 0;
    if (pthread_attr_getstack(&attr, &low, &size) != 0)
        low = NULL;
    pthread_attr_destroy(&attr);
    return low ? (uintptr_t)low + size / 2 : 0;
}

SL_ATOMIC(int) sl__exec_deep_workers;

bool sl__exec_too_deep(sl__worker *w)
{
    uintptr_t floor;
    /* relaxed: a test switch, set before the executor runs */
    if (w && atomic_load_explicit(&sl__exec_deep_workers, memory_order_relaxed))
        return true;
    if (w) {
        floor = w->help_floor;
    } else {
        if (!foreign_floor_known) {
            foreign_floor = sl__exec_help_floor();
            foreign_floor_known = true;
        }
        floor = foreign_floor;
    }
    /* The frame address, not a local's: a sanitizer's fake stack would lie. */
    return floor && (uintptr_t)__builtin_frame_address(0) < floor;
}

/* What may run while waiting deep: w's own deque (tasks it spawned) and its
 * mailbox (tasks sent to it); never a steal. */
static sl__task *take_own(sl__worker *w)
{
    sl__task *t = NULL;
    if (!w)
        return NULL;
    if ((t = sl__deque_take(&w->deque)) != NULL)
        return t;
    return sl_list_try_pop(&w->mailbox, &t) == SL_OK ? t : NULL;
}

static bool has_own(const sl__worker *w)
{
    return w && (!sl__deque_is_empty(&w->deque) || sl_list_len(&w->mailbox) != 0);
}

void sl__exec_wait_deep(sl__worker *w, const sl__wait *wt, sl_event *ev)
{
    if (wt->task && !sl__exec_register_waiter(wt->task, ev))
        return;
    for (;;) {
        if (sl__wait_done(wt))
            return;
        sl__task *t = take_own(w);
        if (t) {
            sl__exec_run(w, t);
            continue;
        }
        /* Full fence inside: our registration before the re-check, against
         * the completer's DONE (or zero) before its notify. */
        uint32_t key = sl_event_prepare(ev);
        if (sl__wait_done(wt) || has_own(w)) {
            sl_event_cancel(ev);
            continue;
        }
        sl_event_wait(ev, key, SL_FOREVER);
    }
}
