/*
 * internal/epoch.h — epoch-based reclamation for the library's own linked
 * structures (internal, not installed; today the SL_LIST segments).
 *
 * Every thread that touches a protected structure owns a record. An
 * operation announces, in its record, the global epoch it read on entry
 * (sl__epoch_enter) and clears the announcement when it is done
 * (sl__epoch_exit). A thread that unlinks an object takes a stamp
 * (sl__epoch_stamp: the global epoch, bumped); the object may be freed once
 * sl__epoch_oldest, read after the stamp was taken, is at least the stamp:
 * every thread then inside an operation entered after the unlink, so cannot
 * hold a pointer to the object.
 *
 * The records also carry a channel sender's in-flight mark (SL_LIST and
 * SL_MPMC channels: channels/chan_marks.h, record_mark), so a thread that
 * sends on one takes a record too (sl__epoch_record), without entering.
 *
 * No helper thread and no lock: the thread that unlinks frees what is safe.
 * Records are registered lock-free on a thread's first operation and given
 * back at thread exit for reuse; an operation after that, from another
 * key's destructor, goes without one (channels/epoch.c, `exiting`). A
 * thread that cannot get a record (out of
 * memory or of pthread keys) enters anonymously through one shared counter,
 * and while any thread is inside anonymously nothing is freed.
 *
 * Progress: enter and exit are wait-free once the thread has its record
 * (registration is lock-free: one CAS push, retried only when another
 * registration won). A thread stopped inside an operation delays
 * reclamation, never another thread's operation.
 */
#ifndef SLUICE_INTERNAL_EPOCH_H
#define SLUICE_INTERNAL_EPOCH_H

#include <stdint.h>

#include "sluice/base.h"
#include "sluice/park.h"

typedef struct sl_epoch_rec {
    /* 0 outside an operation; otherwise the epoch read on entry. Written only
     * by the owning thread, read by reclaiming threads. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint64_t) announced;
    SL_ATOMIC(unsigned) owned;       /* 1 while a thread holds the record */
    /* A channel sender's in-flight mark (channels/chan_marks.h, "senders
     * in flight", record_mark): `sending` is 1 from before the sender's
     * closed-check until after its push, and `sending_on` names the channel
     * while it is. In the announcement's line, which a list operation writes
     * anyway. Written only by the owning thread. */
    SL_ATOMIC(uint32_t) sending;
    SL_ATOMIC(const void *) sending_on;
    struct sl_epoch_rec *next;       /* registry link: set before the record is
                                        published, never changed after */
    /* SL_LIST's guesses of where the owner's next push claims (channels/list.c,
     * push_claim): for the last two segments it claimed in, the most recent
     * first, its last claim there plus one. Only hints, checked by the CAS.
     * Read and written only by the owner. */
    struct {
        const void *seg;
        uint64_t next;
    } push_guess[2];
} sl_epoch_rec;

/* The global epoch (starts at 1; 0 means "outside") and the calling thread's
 * record (NULL until its first operation). Initial-exec TLS: one
 * %fs-relative load, no __tls_get_addr call. */
extern SL_ATOMIC(uint64_t) sl__epoch_global;
/* fork children this process descends from, counted in each child by the
 * library's fork handler (0 in a process that no fork made). A flag held
 * by a thread of an earlier generation is held by a thread this process
 * does not have (channels/list_segs.c, the reclaim flag). */
extern SL_ATOMIC(unsigned) sl__epoch_forks;
extern _Thread_local sl_epoch_rec *sl__epoch_self __attribute__((tls_model("initial-exec")));

/* First operation of a thread (or one after its record was given back at
 * its exit, which stays anonymous): registers and enters. Returns the
 * record, or NULL for an anonymous entry. */
sl_epoch_rec *sl__epoch_enter_slow(void);
/* The calling thread's record, taken (or allocated) on first use and given
 * back at thread exit, without entering; NULL when none could be had, and
 * once the thread's record has gone back at its exit. */
sl_epoch_rec *sl__epoch_record(void);
void sl__epoch_exit_anonymous(void);

/* Announces the epoch now current: at entry, and where a long operation
 * (a batch) holds no pointer into the structure, so that it stops holding
 * back what was unlinked since it entered. NULL (anonymous) is fine.
 *
 * The announcement must be ordered before this operation's loads of the
 * structure's roots, against a reclaimer's scan (a store->load pair): by
 * the asymmetric barrier, whose fast side is here (a compiler barrier where
 * membarrier works, else a seq_cst fence) and whose heavy side the scan
 * issues (sl__epoch_oldest). A locked exchange here cost every operation a
 * drain of its store buffer, on the line its previous operation wrote last
 * (docs/performance.md, "Announcements without a locked instruction"). */
static inline void sl__epoch_refresh(sl_epoch_rec *r)
{
    if (r == NULL)
        return;
    /* Acquire: an epoch read at or past an unlinker's stamp makes its unlink
     * visible to this operation's loads. */
    uint64_t e = atomic_load_explicit(&sl__epoch_global, memory_order_acquire);
    /* Release: a scan that reads this announcement also reads everything the
     * thread's earlier operations did as done before it (their exit's
     * release, which this store replaces, would otherwise be all it has). */
    atomic_store_explicit(&r->announced, e, memory_order_release);
    sl__event_fence_fast(); /* the announcement before the root loads (see above) */
}

/* Between two steps of a batch (one message pushed, the next not begun),
 * where it holds no pointer into the structure: re-announces if the epoch
 * has moved since its announcement. A batch that announced only on entry
 * held back, for as long as it ran, the freeing of every segment any list
 * unlinked meanwhile (a push_n of 20 million messages kept 15 thousand
 * segments of another list, used by a thread that never held more than one
 * message); renewed, it holds back what was unlinked during one message. The
 * epoch moves only when something is unlinked, so while nothing is this is
 * one load of a line that stays shared, and the refresh's fence comes only
 * after an unlink. Skipping it only keeps the older announcement, which
 * protects more: the load may be relaxed. */
static inline void sl__epoch_renew(sl_epoch_rec *r)
{
    if (r != NULL && atomic_load_explicit(&sl__epoch_global, memory_order_relaxed) !=
                         atomic_load_explicit(&r->announced, memory_order_relaxed))
        sl__epoch_refresh(r);
}

/* Enters a protected operation. Returns the token to pass to sl__epoch_exit.
 * Wait-free after the thread's first call. */
static inline sl_epoch_rec *sl__epoch_enter(void)
{
    sl_epoch_rec *r = sl__epoch_self;
    if (__builtin_expect(r == NULL, 0))
        return sl__epoch_enter_slow();
    sl__epoch_refresh(r);
    return r;
}

/* Leaves the operation. Release: every access of the operation happens before
 * a reclaimer that reads the cleared announcement frees anything. */
static inline void sl__epoch_exit(sl_epoch_rec *r)
{
    if (__builtin_expect(r != NULL, 1))
        atomic_store_explicit(&r->announced, 0, memory_order_release);
    else
        sl__epoch_exit_anonymous();
}

/* Stamps an object its caller has just made unreachable from every root.
 * One seq_cst RMW on the global epoch; call once per unlinked object. */
uint64_t sl__epoch_stamp(void);

/* The oldest epoch announced by a thread inside an operation, other than
 * `self` (which must hold no pointer to what the caller frees): objects with
 * a stamp <= the result may be freed. UINT64_MAX when nobody is inside; 0
 * while an anonymous thread is. Call after reading the stamps it is compared
 * with. Issues the heavy side of the announcements' barrier first
 * (sl_event_heavy_fence: a membarrier in asymmetric mode), so it is for a
 * reclaimer about to free. O(records registered). */
uint64_t sl__epoch_oldest(const sl_epoch_rec *self);

/* The same scan without the barrier: a hint, never a reason to free. An
 * announcement it reads was made (a thread is or was just inside since that
 * epoch); one it misses may still be in its thread's store buffer. A
 * reclaimer that finds here a thread inside since before its oldest stamp
 * can free nothing, and skips the barrier. */
uint64_t sl__epoch_oldest_seen(const sl_epoch_rec *self);

/* How many records are marked sending on `on` (a scan of the registry, for a
 * receiver deciding SL_CLOSED after its heavy barrier, and for a free's
 * check): loads acquire, so a push that landed before its unmark is seen. */
size_t sl__epoch_senders_on(const void *on);

#endif /* SLUICE_INTERNAL_EPOCH_H */
