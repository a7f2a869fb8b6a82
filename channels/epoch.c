/*
 * channels/epoch.c — the epoch domain's records: registration, reuse at
 * thread exit, the anonymous fallback, stamping and the scan (the protocol
 * and its argument are in internal/epoch.h and docs/guarantees.md).
 *
 * The registry is a push-only singly linked list of records: a record is
 * never freed while the library is loaded, so a scan may walk it at any time
 * without protection. A thread takes a record that a finished thread gave
 * back (CAS of `owned` 0 -> 1) before it allocates a new one, so the registry
 * grows only to the largest number of threads that used lists at once.
 */
#include "internal/epoch.h"
#include "internal/await.h"
#include "internal/testing.h"
#include "internal/sysops.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint64_t) sl__epoch_global = 1;
_Thread_local sl_epoch_rec *sl__epoch_self __attribute__((tls_model("initial-exec")));

/* A record is one line: its owner writes the announcement, the mark and the
 * push guesses at every operation, and no other record may share them. */
_Static_assert(sizeof(sl_epoch_rec) == SL_CACHELINE, "an epoch record is one cache line");

static SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(sl_epoch_rec *) registry;
/* Threads inside an operation without a record. */
static SL_ATOMIC(uint64_t) anonymous;
/* The pthread key whose destructor gives a record back, plus one (0: none). */
static SL_ATOMIC(unsigned) exit_key_plus1;

/* Set when the thread's record went back at its exit (give_back). Another
 * key's destructor may still use a list after that, in this round or a
 * later one; a record taken then would need the key set again, and after
 * glibc's last round (PTHREAD_DESTRUCTOR_ITERATIONS) no destructor runs to
 * give it back: it would stay owned, one record lost per such thread. So
 * the thread goes on without one (sl__epoch_record). */
static _Thread_local bool exiting;

/* Thread exit: the record goes back for another thread to take. The thread is
 * outside every operation here, so its announcement is already 0. */
static void give_back(void *p)
{
    sl_epoch_rec *r = p;
    sl__epoch_self = NULL;
    exiting = true;
    /* Release: this thread's last exit store is seen by the next owner. */
    atomic_store_explicit(&r->owned, 0, memory_order_release);
}

SL_ATOMIC(unsigned) sl__epoch_forks;

/* fork's child has only the forking thread: every other record's owner is
 * gone, and an announcement it left would hold back reclamation forever.
 * The new generation tells each list that a reclaim flag raised before it
 * was raised by a thread the child does not have (channels/list_segs.c). */
static void child_after_fork(void)
{
    /* Relaxed: the child runs only this thread now. */
    atomic_fetch_add_explicit(&sl__epoch_forks, 1u, memory_order_relaxed);
    sl_epoch_rec *r = atomic_load_explicit(&registry, memory_order_relaxed);
    for (; r; r = r->next) {
        if (r == sl__epoch_self)
            continue;
        atomic_store_explicit(&r->announced, 0, memory_order_relaxed);
        /* A thread caught mid-send would hold "closed and drained" off forever. */
        atomic_store_explicit(&r->sending, 0u, memory_order_relaxed);
        atomic_store_explicit(&r->owned, 0u, memory_order_relaxed);
    }
    atomic_store_explicit(&anonymous, 0, memory_order_relaxed);
}

/* Unloading the library must not leave a destructor pointing into it. */
static void __attribute__((destructor)) drop_exit_key(void)
{
    unsigned k1 = atomic_exchange_explicit(&exit_key_plus1, 0u, memory_order_acq_rel);
    if (k1 != 0)
        pthread_key_delete((pthread_key_t)(k1 - 1));
}

/* The fork handler, registered once before any thread takes a record or
 * counts itself anonymous (sl__epoch_record): pthread_once holds every
 * other caller until it is in place, so no thread is inside an operation,
 * or holds a reclaim flag, that a fork's child would not hear of. (It was
 * registered by the key's CAS winner after the key was published: a thread
 * that saw the key could take a record and enter, and a fork in between
 * left the child its announcement and a generation count of 0.) glibc
 * drops it if the library is unloaded. */
static pthread_once_t fork_handler_once = PTHREAD_ONCE_INIT;
static void register_fork_handler(void)
{
#ifndef SL_MUTANT_EPOCH_ATFORK_LATE /* planted bug: registered after the key is out */
    pthread_atfork(NULL, NULL, child_after_fork);
#endif
}

/* The key with give_back as destructor, created once without a lock: racing
 * creators each make one and all but the first delete theirs. */
static int exit_key(pthread_key_t *out)
{
    unsigned k1 = atomic_load_explicit(&exit_key_plus1, memory_order_acquire);
    if (k1 == 0) {
        pthread_key_t mine;
        if (pthread_key_create(&mine, give_back) != 0)
            return -1;
        unsigned want = (unsigned)mine + 1;
        if (atomic_compare_exchange_strong_explicit(&exit_key_plus1, &k1, want,
                                                    memory_order_acq_rel,
                                                    memory_order_acquire)) {
            k1 = want;
#ifdef SL_MUTANT_EPOCH_ATFORK_LATE
            pthread_atfork(NULL, NULL, child_after_fork);
#endif
        } else {
            pthread_key_delete(mine); /* k1 now holds the winner's key */
        }
    }
    *out = (pthread_key_t)(k1 - 1);
    return 0;
}

/* A record given back by a finished thread, or NULL. */
static sl_epoch_rec *take_free_record(void)
{
    sl_epoch_rec *r = atomic_load_explicit(&registry, memory_order_acquire);
    for (; r; r = r->next) {
        unsigned free_ = 0;
        /* Acquire: the previous owner's last stores are done. */
        if (atomic_load_explicit(&r->owned, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong_explicit(&r->owned, &free_, 1u,
                                                    memory_order_acquire,
                                                    memory_order_relaxed))
            return r;
    }
    return NULL;
}

static sl_epoch_rec *new_record(void)
{
    sl_epoch_rec *r = sl__alloc(SL_CACHELINE, sizeof *r);
    if (!r)
        return NULL;
    atomic_init(&r->announced, 0);
    atomic_init(&r->owned, 1u);
    atomic_init(&r->sending, 0u);
    atomic_init(&r->sending_on, NULL);
    memset(r->push_guess, 0, sizeof r->push_guess); /* no guess yet: a NULL segment */
    r->next = atomic_load_explicit(&registry, memory_order_relaxed);
    /* Release: the record's fields are written before a scan can reach it. */
    while (!atomic_compare_exchange_weak_explicit(&registry, &r->next, r, memory_order_release,
                                                  memory_order_relaxed)) {
    }
    return r;
}

sl_epoch_rec *sl__epoch_record(void)
{
    if (sl__epoch_self)
        return sl__epoch_self;
    /* Before this thread's first announcement: the mode its barrier's fast
     * side (sl__epoch_refresh) and every scan's heavy side agree on. */
    sl__event_choose_barrier();
    pthread_once(&fork_handler_once, register_fork_handler);
#ifndef SL_MUTANT_EPOCH_EXIT_RETAKES /* planted bug when defined */
    /* Past its record's destructor: anonymous until it is gone, through the
     * shared counter, which each operation gives back as it leaves. */
    if (exiting)
        return NULL;
#endif
    pthread_key_t key;
    sl_epoch_rec *r = NULL;
    if (exit_key(&key) == 0) {
        r = take_free_record();
        if (!r)
            r = new_record();
        if (r && pthread_setspecific(key, r) != 0) {
            atomic_store_explicit(&r->owned, 0, memory_order_release);
            r = NULL;
        }
    }
    sl__epoch_self = r;
    return r;
}

sl_epoch_rec *sl__epoch_enter_slow(void)
{
    if (!sl__epoch_record()) {
        /* seq_cst: as the announcement in sl__epoch_enter. */
        atomic_fetch_add_explicit(&anonymous, 1, memory_order_seq_cst);
        return NULL;
    }
    return sl__epoch_enter();
}

void sl__epoch_exit_anonymous(void)
{
    /* Release: as the cleared announcement in sl__epoch_exit. */
    atomic_fetch_sub_explicit(&anonymous, 1, memory_order_release);
}

uint64_t sl__epoch_stamp(void)
{
    /* seq_cst: after the caller's unlink, before the scan that compares. */
    return atomic_fetch_add_explicit(&sl__epoch_global, 1, memory_order_seq_cst) + 1;
}

uint64_t sl__epoch_oldest(const sl_epoch_rec *self)
{
#ifndef SL_MUTANT_EPOCH_SCAN_UNFENCED /* planted bug when defined */
    /* The heavy side of the announcements' barrier (sl__epoch_refresh): a
     * thread whose announcement this scan misses has its root loads after
     * the barrier, which follows the caller's unlink and stamp, so they see
     * the unlink (docs/guarantees.md, "Reclamation"). */
    sl_event_heavy_fence();
#endif
    return sl__epoch_oldest_seen(self);
}

uint64_t sl__epoch_oldest_seen(const sl_epoch_rec *self)
{
    /* seq_cst: the anonymous count's increment is a seq_cst RMW, a full
     * barrier on its side. */
    if (atomic_load_explicit(&anonymous, memory_order_seq_cst) != 0)
        return 0;
    uint64_t oldest = UINT64_MAX;
    sl_epoch_rec *r = atomic_load_explicit(&registry, memory_order_acquire);
    for (; r; r = r->next) {
        if (r == self)
            continue;
        /* Acquire: a 0 read from the thread's exit (a release) makes all of
         * its operation happen before what the caller frees. */
        uint64_t e = atomic_load_explicit(&r->announced, memory_order_acquire);
        if (e != 0 && e < oldest)
            oldest = e;
    }
    return oldest;
}

size_t sl__epoch_senders_on(const void *on)
{
    size_t n = 0;
    sl_epoch_rec *r = atomic_load_explicit(&registry, memory_order_acquire);
    for (; r; r = r->next)
        /* Acquire, both: pair with the unmark's release (the push before
         * it), and with the release of a later send's `sending_on` (the
         * unmark before it, when a stale 1 is read with a newer channel). */
        if (atomic_load_explicit(&r->sending, memory_order_acquire) != 0 &&
            atomic_load_explicit(&r->sending_on, memory_order_acquire) == on)
            n++;
    return n;
}

size_t sl__epoch_records(void)
{
    size_t n = 0;
    sl_epoch_rec *r = atomic_load_explicit(&registry, memory_order_acquire);
    for (; r; r = r->next)
        n++;
    return n;
}
