/*
 * channels/shm_watch.c — the watch list of shared channels with event-loop
 * descriptors (sluice/chanfd.h on a channel of sluice/shm.h), and the one
 * thread per process that follows it.
 *
 * A descriptor is an eventfd of this process, so a send, receive or close
 * made in another process cannot write it. Those changes ring the
 * segment's select bell (the descriptor counts in the channel's `selectors`
 * word, which every process's changes load), and the watcher sleeps on the
 * bells of every watched segment at once, as a selector does: registered
 * on each (sl__event_set, internal/await.h) and on this list's own
 * eventcount, it arms the bells, looks at every watched channel and makes
 * each re-armed descriptor whose end is ready readable (sl__chanfd_poke),
 * and sleeps with futex_waitv until a ring or a change of the list. It also
 * wakes at each channel's periodic look (sl__chan_ready_at), which finds a
 * dead sender, so an event loop learns that the last sender is gone as a
 * blocked receiver does. Changes made in this process signal the
 * descriptors directly (sl__chan_ring_watchers), as on any channel.
 *
 * The thread starts with the first shared channel watched and ends when
 * the list is empty (the next add starts another), asleep while nothing
 * changes. It must not outlive the watching: a process whose main thread
 * calls pthread_exit ends with its last thread, and a watcher left running
 * kept such a sender alive for good, its record and registration with it,
 * its receivers never told the last sender was gone (found by review). All
 * signals are blocked in it.
 *
 * Removal (sl_chan_free) must not unmap a segment the watcher still
 * touches: it takes the channel off the list, moves `gen` and notifies the
 * list's eventcount, then waits until the watcher has left its wait and
 * rebuilt its set from the list, or holds none for want of memory (`seen`
 * reaches that generation).
 *
 * fork(): the child has no watcher and an empty list (the atfork handlers
 * hold the lock across the fork, so the child's copy is consistent); a
 * child that wants descriptors on a shared channel opens its own handle.
 */
#include "chan_impl.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal/await.h"
#include "internal/sysops.h"
#include "internal/testing.h"

static struct {
    pthread_mutex_t lock;
    pthread_cond_t rebuilt;   /* `seen` moved */
    sl_chan **chans;          /* the watched channels, under lock */
    size_t n, cap;
    uint64_t seen;            /* the generation the watcher's set was built from */
    bool running;             /* the watcher thread exists (this process) */
    SL_ATOMIC(uint64_t) gen;  /* moved by every change of the list */
    sl_event changed;         /* notified after every move of gen */
} W = {.lock = PTHREAD_MUTEX_INITIALIZER, .rebuilt = PTHREAD_COND_INITIALIZER};

/* The watcher's view while it waits: its set, one member per watched
 * segment's bell after the list's own eventcount. */
typedef struct watch_view {
    sl_chan **chans;
    size_t n;
    uint64_t gen;
    sl_event **evs;
    SL_ATOMIC(uint32_t) **armed;
    sl__futex_word *w;
} watch_view;

/* The await's condition: the list changed (rebuild), else every watched
 * channel looked at with the bells armed first. Never true otherwise: the
 * watcher waits for ever. */
static bool watch_look(void *ctx)
{
    watch_view *v = ctx;
    /* seq_cst: against the remover's move of gen and its notify. */
    if (atomic_load_explicit(&W.gen, memory_order_seq_cst) != v->gen)
        return true;
#ifndef SL_MUTANT_SHM_WATCH_NO_ARM
    sl__bells_arm(v->armed + 1, v->n, true);
#endif
    for (size_t i = 0; i < v->n; i++)
        sl__chanfd_poke(v->chans[i]);
    return false;
}

/* The earliest periodic look among the watched channels. */
static uint64_t watch_next(void *ctx)
{
    watch_view *v = ctx;
    uint64_t at = SL_FOREVER;
    for (size_t i = 0; i < v->n; i++) {
        uint64_t t = sl__chan_ready_at(v->chans[i]);
        at = t < at ? t : at;
    }
    return at;
}

/* Under the lock: the view of the list as it is now. false when out of
 * memory (the caller naps and retries: descriptors are then late, never
 * wrong, since the first look after it looks at everything). */
static bool view_build(watch_view *v)
{
    size_t m = W.n + 1;
    void *mem = sl__alloc(0, m * (sizeof(sl_chan *) + sizeof(sl_event *) + sizeof(void *) +
                                  sizeof(sl__futex_word)));
    if (!mem)
        return false;
    v->w = mem; /* the widest first */
    v->evs = (sl_event **)(v->w + m);
    v->armed = (SL_ATOMIC(uint32_t) **)(v->evs + m);
    v->chans = (sl_chan **)(v->armed + m);
    v->n = W.n;
    v->gen = atomic_load_explicit(&W.gen, memory_order_relaxed); /* moved under the lock */
    v->evs[0] = &W.changed;
    v->armed[0] = NULL;
    for (size_t i = 0; i < W.n; i++) {
        sl__shm_bell *b = sl__shm_bell_of(W.chans[i]);
        v->chans[i] = W.chans[i];
        v->evs[i + 1] = &b->ev;
        v->armed[i + 1] = &b->armed;
    }
    return true;
}

/* Under the lock, after a rebuild or a failed one: the watcher holds no set
 * but one built from the list as it is now (or none, napping), so every
 * removal so far may unmap (a free must not wait out an allocation
 * failure). */
static void list_seen(void)
{
    W.seen = atomic_load_explicit(&W.gen, memory_order_relaxed); /* moved under the lock */
    pthread_cond_broadcast(&W.rebuilt);
}

static void *watcher(void *arg)
{
    (void)arg;
    for (;;) {
        watch_view v;
        pthread_mutex_lock(&W.lock);
#ifndef SL_MUTANT_SHM_WATCHER_STAYS /* planted bug when defined: it outlives the list */
        if (W.n == 0) {
            /* Under the lock: the next add starts a watcher, and a remover
             * waiting for a rebuild sees that none runs. */
            W.running = false;
            pthread_cond_broadcast(&W.rebuilt);
            pthread_mutex_unlock(&W.lock);
            return NULL;
        }
#endif
        bool ok = view_build(&v);
#ifdef SL_MUTANT_SHM_WATCH_SEEN_ON_SUCCESS /* planted bug: a failed rebuild acknowledges nothing */
        if (ok)
#endif
        list_seen();
        pthread_mutex_unlock(&W.lock);
        if (!ok) {
            nanosleep(&(struct timespec){0, 1000000}, NULL);
            continue;
        }
        sl__event_set set = {v.evs, v.w, v.n + 1, NULL};
        (void)sl__chan_await(&set, watch_look, &v, SL_FOREVER, 0, watch_next);
        free(v.w);
    }
    return NULL;
}

/* Under the lock: starts the watcher, signals blocked in it. */
static sl_status start_watcher(void)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int r = sl__thread_create(&t, &attr, watcher, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    W.running = r == 0;
    return r == 0 ? SL_OK : SL_ENOMEM;
}

static void fork_prepare(void) { pthread_mutex_lock(&W.lock); }
static void fork_parent(void) { pthread_mutex_unlock(&W.lock); }

static void fork_child(void)
{
    /* The list and its thread are the parent's. The list's memory is the
     * child's copy, kept for reuse. */
    W.n = 0;
    W.running = false;
    /* Afresh: a parent's remover waiting in it stays counted in the copy, and
     * glibc's broadcast may then wait for it for ever (found by review). */
#ifndef SL_MUTANT_SHM_WATCH_COND_INHERITED /* planted bug when defined */
    pthread_cond_init(&W.rebuilt, NULL);
#endif
    pthread_mutex_unlock(&W.lock);
}

static void watch_init(void)
{
    sl_event_init(&W.changed);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* Moves the generation and wakes the watcher: after every change of the
 * list (under the lock). */
static uint64_t list_changed(void)
{
    /* seq_cst, a read-modify-write: the change before the notify's waiter
     * load (the await protocol). */
    uint64_t g = atomic_fetch_add_explicit(&W.gen, 1, memory_order_seq_cst) + 1;
    sl_event_notify_all(&W.changed);
    return g;
}

sl_status sl__shm_watch_add(sl_chan *ch)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, watch_init);
    sl_status st = SL_OK;
    pthread_mutex_lock(&W.lock);
    size_t i = 0;
    while (i < W.n && W.chans[i] != ch)
        i++;
    if (i == W.n && W.n == W.cap) {
        size_t cap = W.cap ? 2 * W.cap : 8;
        sl_chan **grown = sl__alloc(0, cap * sizeof *grown);
        if (grown) {
            if (W.n)
                memcpy(grown, W.chans, W.n * sizeof *grown);
            free(W.chans);
            W.chans = grown, W.cap = cap;
        } else {
            st = SL_ENOMEM;
        }
    }
    if (st == SL_OK && !W.running)
        st = start_watcher();
    if (st == SL_OK && i == W.n) {
        W.chans[W.n++] = ch;
        (void)list_changed(); /* the watcher looks at ch from its next set on */
    }
    pthread_mutex_unlock(&W.lock);
    return st;
}

void sl__shm_watch_remove(sl_chan *ch)
{
    pthread_mutex_lock(&W.lock);
    size_t i = 0;
    while (i < W.n && W.chans[i] != ch)
        i++;
    if (i < W.n) {
        W.chans[i] = W.chans[--W.n];
        uint64_t g = list_changed();
        /* Until the watcher's set no longer holds ch's bell. */
        while (W.running && W.seen < g)
            pthread_cond_wait(&W.rebuilt, &W.lock);
    }
    pthread_mutex_unlock(&W.lock);
}
