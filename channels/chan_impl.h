/*
 * channels/chan_impl.h — the channel's layout, and what select.c shares with
 * the façade: the non-blocking send and receive, and the bell selecting
 * threads park on (internal, not installed). The flavours' adapters and the
 * flavour table are chan.c's own (chan_adapter.h: what an adapter is).
 */
#ifndef SLUICE_CHANNELS_CHAN_IMPL_H
#define SLUICE_CHANNELS_CHAN_IMPL_H

#include "sluice/chan.h"
#include "sluice/chanfd.h"
#include "sluice/list.h"
#include "sluice/mpmc.h"
#include "sluice/park.h"
#include "sluice/ring.h"
#include "sluice/spsc.h"
#include "internal/await.h"
#include "internal/spin.h"
#include "rings.h"
#include "rendezvous.h"
#include "timer.h"
#include "broadcast.h"

#include <stddef.h>

/* An event-loop descriptor of one channel end (sluice/chanfd.h, chanfd.c). */
typedef struct sl__chan_fd {
    SL_ATOMIC(int) fd1;        /* the eventfd + 1; 0 while there is none */
    SL_ATOMIC(uint32_t) armed; /* 1: reset, and the next change must signal it */
    SL_ATOMIC(unsigned) gen;   /* sl__shm_gen when it was made: in a fork()ed
                                  child's copy of the channel it is the parent's,
                                  which the child neither uses (chanfd.c, fd_here)
                                  nor, for a shared handle, uncounts (stored by
                                  every racing creator, all the same value) */
} sl__chan_fd;

/* Slots for counting senders in flight (a power of two). */
#define SL_SEND_SLOTS 16

/* The first words of a channel's shared part: in a shared-memory segment
 * they identify it (docs/shm-layout.md); an in-process channel leaves them
 * zero. Written once by the creator, magic last (release), before any
 * other process opens the segment; read once by an opener, to validate. */
typedef struct sl__shm_header {
    SL_ATOMIC(uint64_t) magic; /* SL__SHM_MAGIC once the segment is ready */
    uint32_t version;          /* SL__SHM_VERSION */
    uint32_t flavor;           /* the public sl_flavor: SL_SPSC or SL_MPMC */
    uint64_t elem_size;
    uint64_t capacity;
    uint64_t size;             /* bytes the creator made the segment */
} sl__shm_header;

/* Lanes per record: the flags SL_MPMC's sending threads mark themselves
 * in, one thread each (docs/shm-layout.md, "Records"). */
#define SL__SHM_LANES 10

/* A shared channel's mapping, process-local (channels/shm.c). */
typedef struct sl__shm_map {
    void *base;  /* the local page(s) and the segment after them */
    size_t len;
    int fd;      /* the segment's descriptor, owned by the handle; -1 none */
    /* This handle's record in the segment (docs/shm-layout.md, "Records"),
     * claimed by its first send in this process: its in-flight mark word,
     * and the process generation it was claimed in (sl__shm_gen: a
     * fork()ed child claims its own). rec -1: none (mark NULL): not yet
     * claimed, or every record was held when it tried, when a send is
     * refused and the next call tries again (refused_at, refused_gen: when
     * its last look for dead owners' records was, channels/shm_owner.c). */
    SL_ATOMIC(uint32_t) *mark;
    SL_ATOMIC(unsigned) gen; /* released after mark and rec: threads share a handle */
    int rec;
    unsigned refused_gen;
    uint64_t refused_at;
    /* SL_MPMC's sending threads' lanes in the record (channels/shm_lane.c):
     * which thread of this process owns each (0 none; else the owning
     * thread's identity word), a serial that changes with every claim of the record (a
     * thread's cached lane is good while it matches), and when the last
     * look for lanes of exited threads was. */
    SL_ATOMIC(uint64_t) lane_owner[SL__SHM_LANES];
    SL_ATOMIC(uint64_t) claim;
    SL_ATOMIC(uint64_t) lanes_looked_at;
} sl__shm_map;

struct sl_chan {
    /* ---- process-local: trusted, never in a shared segment --------------
     * What every operation reads and nobody writes after the constructor;
     * for a channel in shared memory (sluice/shm.h) this part lives in this
     * process's private page just below the segment, so that no word a peer
     * process can write is ever used as a size, an index bound or a
     * pointer. */
    SL_ALIGNAS(SL_CACHELINE) sl_flavor flavor;
    size_t elem_size;
    size_t capacity;
    sl_drop_fn drop;
    void *drop_ctx;
    /* Event-loop descriptors, by sl_chan_end; read only where `selectors`
     * is not zero, or where a try failed (chanfd.c). */
    sl__chan_fd fds[2];
    /* A shared channel's queue geometry, validated at open (the in-process
     * flavours keep theirs in their raw queue below), and its mapping. */
    union {
        sl__spsc_geom spsc;
        sl__mpmc_view mpmc;
    } geom;
    sl__shm_map shm;
    /* An in-process channel's counts of unwoken sleepers on not_empty and
     * not_full (internal/await.h; chan.c, chan_notify); a shared channel's
     * sleepers may be in other processes, so it keeps none. Written on the
     * way into and out of a futex sleep and by a notify that wakes: a line
     * of their own, apart from the fields above that every operation reads. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint32_t) unwoken[2];

    /* ---- shared: the control words and the raw queue --------------------
     * From `hdr` on, everything may be shared with other processes: only
     * atomics and counters, every index masked or bounded before use. For a
     * shared channel the segment is mapped exactly here (channels/shm.c).
     * Read by every operation, written only by close: one line. The two
     * eventcounts share it on purpose: in the steady state both are only read
     * (the notify fast path), so the line stays shared in every cache. */
    SL_ALIGNAS(SL_CACHELINE) sl__shm_header hdr;
    SL_ATOMIC(uint32_t) closed;
    sl_event not_empty; /* receivers park here */
    sl_event not_full;  /* senders park here */
    SL_ATOMIC(uint32_t) selectors; /* threads in sl_select on this channel, and
                                      event-loop descriptors (chanfd.c) */
    SL_ATOMIC(uint32_t) drained;    /* a receiver established "closed and empty":
                                       it stays so (later senders all see closed) */
    /* Senders between their closed-check and the end of their push, so that
     * no receiver reports SL_CLOSED while a send that saw the channel open is
     * still landing. How a sender marks itself is its flavour adapter's
     * (chan.c): a single sender's flag in slot 0, or counts in slots picked
     * per thread, a line each, so that senders on different threads do not
     * share a counter line. */
    struct {
        SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint32_t) n;
    } in_flight[SL_SEND_SLOTS];
    /* The raw queue: one member per flavour, used only by its adapter. A
     * shared channel uses only the counters of its spsc or mpmc member. */
    union {
        sl_spsc spsc;
        sl_mpmc mpmc;
        sl_list list;
        sl_ring ring;
        sl_timer_state timer;
        sl_rdv rdv;
        sl__bcast_end bcast;
    } q;
};

/* Where a channel's shared part begins: a shared channel's segment is mapped
 * at (char *)ch + SL__CHAN_SHARED_AT. */
#define SL__CHAN_SHARED_AT offsetof(struct sl_chan, hdr)

/* sl_chan_free's end for a shared channel (channels/shm.c): unmaps this
 * process's view and closes its descriptor; the segment itself stays. */
void sl__shm_release(sl_chan *ch);

/* A peer's death (channels/shm_owner.c, docs/guarantees.md "A peer that dies"):
 * the generation of this process (bumped in a fork()ed child); the slow
 * path of a shared channel's mark (claims the handle's record; NULL while
 * every record is held by a living handle, which refuses the send);
 * whether a sender is in flight, discounting the marks of dead processes;
 * the periodic look for "every registered sender (receiver) is gone" on
 * an empty receive or a full send, and the instant a waiter must look again
 * for it. */
extern SL_ATOMIC(unsigned) sl__shm_gen;
/* Whether the handle's record was claimed in this process (not in the
 * parent of a fork()ed child, nor not at all). Relaxed: the generation
 * changes only in a fork()ed child, before it runs anything else. Acquire:
 * pairs with the claimer's release of gen, so its mark and rec are
 * visible. */
static inline __attribute__((always_inline)) bool sl__shm_claimed_here(const sl_chan *ch)
{
    return atomic_load_explicit(&ch->shm.gen, memory_order_acquire) ==
           atomic_load_explicit(&sl__shm_gen, memory_order_relaxed);
}
SL_ATOMIC(uint32_t) *sl__shm_claim_mark(sl_chan *ch);

/* A thread's mark for a shared SL_MPMC handle (channels/shm_lane.c): the
 * lane it owns in the handle's record, a flag only it writes, or, when
 * every lane is owned by a living thread, the record's count. The last
 * one a thread found, cached: good while `ch` and `claim` match. */
typedef struct sl__shm_lane_cache {
    const sl_chan *ch;
    uint64_t claim;
    SL_ATOMIC(uint32_t) *word;
} sl__shm_lane_cache;
extern _Thread_local sl__shm_lane_cache sl__shm_lane_of_thread
    __attribute__((tls_model("initial-exec")));
/* The slow path: claims the record if need be, then a lane, and caches
 * it; NULL while every record is held (the send is refused). */
SL_ATOMIC(uint32_t) *sl__shm_claim_lane(sl_chan *ch);
/* channels/shm_lane.c, for shm_owner.c: the lane this thread owns in m's record,
 * taken if need be (-1: every lane is a living thread's); the owners
 * forgotten when the record is claimed (under the claim lock); a fork()ed
 * child's thread forgetting its identity and cached lane. */
int sl__shm_lane_take(sl__shm_map *m);
void sl__shm_lanes_reset(sl__shm_map *m);
void sl__shm_lanes_forked(void);
/* Whether a mark word is a lane (a flag) rather than a record's count:
 * the count is a record's first word, on a line boundary; lanes never are. */
static inline __attribute__((always_inline)) bool sl__shm_is_lane(const SL_ATOMIC(uint32_t) *w)
{
    return ((uintptr_t)w & (SL_CACHELINE - 1)) != 0;
}
bool sl__shm_senders_in_flight(sl_chan *ch);
void sl__shm_on_stuck(sl_chan *ch);
/* A shared channel's full send: sl__shm_on_stuck, or, when a push of
 * SL_MPMC's swap form found every spare held, the look whatever the roles
 * (spares that dead senders held come back by it). */
void sl__shm_on_full(sl_chan *ch);
uint64_t sl__shm_ready_at(const sl_chan *ch);
/* Where a thread about to wait on ev (ch's not_empty or not_full) counts
 * itself a second time: its process's record's parked count for that side
 * (claimed now if the handle has none); NULL when the records are all held. */
SL_ATOMIC(uint32_t) *sl__shm_park_account(sl_chan *ch, const sl_event *ev);

/* The barrier mode of shared channels (channels/shm.c, docs/guarantees.md
 * "Across processes"): 1 while this process's sides of shared channels may
 * order a store before a load with a compiler barrier alone, because every
 * segment it has open is in asymmetric mode (its waiters, in whatever
 * process, issue membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)) and this
 * process is registered for that barrier; 0 (a seq_cst fence) otherwise.
 * Goes from 1 to 0 only, before the handle that needs fences is returned. */
extern SL_ATOMIC(int) sl__shm_light;

/* The store-to-load fence of a shared channel's fast side: its flag mark and
 * unmark, and an SL_SPSC pop before the notify's waiter-count load. */
static inline __attribute__((always_inline)) void sl__shm_fence(void)
{
#ifdef SL_MUTANT_SHM_COMPILER_FENCE
    atomic_signal_fence(memory_order_seq_cst); /* planted bug: never a fence, whatever the mode */
    return;
#endif
    /* Relaxed: the mode is set before any handle that relies on it exists. */
    if (atomic_load_explicit(&sl__shm_light, memory_order_relaxed))
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
}

/* A select's try of a send case: as sl_chan_try_send (SL_OK, SL_EVICTED:
 * SL_RING's displaced message to the drop function, SL_FULL, SL_ENOMEM or
 * SL_CLOSED; wakes one receiver and any selecting thread), answering SL_FULL
 * on the flavour's look at a full queue without trying (chan.c). */
sl_status sl__chan_poll_send(sl_chan *ch, const void *elem);

/* One non-blocking receive: SL_OK, SL_EMPTY, SL_CLOSED once drained, or
 * SL_LAGGED (a broadcast subscriber that fell behind), or SL_EINVAL (a
 * broadcast send handle). */
sl_status sl__chan_try_recv(sl_chan *ch, void *out);

/* The per-message paths (chan.c) that the blocking and timed forms
 * (chan_wait.c) try once per look. One non-blocking send: SL_OK,
 * SL_EVICTED (the displaced message went to `displaced`), SL_FULL,
 * SL_ENOMEM or SL_CLOSED; notifies one receiver and any selector. Every
 * send form goes through it. A batch receive's try: as sl_chan_try_recv_n,
 * with its status, the count in *got. */
sl_status sl__chan_send_once(sl_chan *ch, const void *elem, sl_visit_fn displaced, void *ctx);
sl_status sl__chan_try_recv_n(sl_chan *ch, void *out, size_t n, size_t *got);

/* Whether n messages of ch's size fit in one array: a count whose bytes
 * overflow cannot be an array the caller holds (bad input, refused whole). */
static inline bool sl__chan_batch_fits(const sl_chan *ch, size_t n)
{
    return n != 0 && n <= SIZE_MAX / ch->elem_size;
}

/* A send whose displaced message (SL_RING) goes to the drop function. */
static inline sl_status sl__chan_try_send_once(sl_chan *ch, const void *elem)
{
    return sl__chan_send_once(ch, elem, ch->drop, ch->drop_ctx);
}

/* The count of unwoken sleepers that goes with ev, ch's not_empty or
 * not_full or its receivers' own event, for a notify of it and a wait on it
 * (chan.c, "waking the channel's own sleepers"); NULL: not counted. */
SL_ATOMIC(uint32_t) *sl__chan_unwoken_of(sl_chan *ch, const sl_event *ev);

/* The receive streak (chan_wait.c): a receive answered at its first try, or a
 * select answered at its first round by a receive case, counts a hit; a
 * wait for a receive takes its spin flags from the streak, which ends it
 * (SL__AWAIT_PATIENT after a full streak). */
extern _Thread_local unsigned sl__recv_streak __attribute__((tls_model("initial-exec")));

static inline void sl__recv_streak_hit(void) { sl__recv_streak += sl__recv_streak < SL_RECV_STREAK; }

unsigned sl__recv_streak_spin(void);

/* Set while this thread runs a blocking form's retries (the await after
 * the call's own first try, in chan_wait.c and select.c): a failed try there
 * leaves an event-loop descriptor it finds armed as it is (chanfd.c,
 * rearm), so a thread that waits beside a loop makes no read(2) a retry.
 * The call's first try, which a loop may use as its try, resets as any. */
extern _Thread_local bool sl__chan_retrying __attribute__((tls_model("initial-exec")));

/* A select's try of a receive case: as sl__chan_try_recv, answering
 * SL_EMPTY on the flavour's look at an empty queue without trying (chan.c). */
sl_status sl__chan_poll_recv(sl_chan *ch, void *out);

/* The earliest instant at which ch may become ready to receive without a
 * notify (a timer channel's next fire); SL_FOREVER for the queue flavours,
 * whose every change notifies. A snapshot. */
uint64_t sl__chan_ready_at(const sl_chan *ch);

/* Whether every change of ch that can make a try succeed comes with a
 * notify (the queue flavours), so that an event-loop descriptor can follow
 * it; not a timer channel, which becomes ready by the clock (chanfd.c). */
bool sl__chan_changes_notify(const sl_chan *ch);

/* Whether ch lives in a shared-memory segment (sluice/shm.h). */
bool sl__chan_is_shared(const sl_chan *ch);

/* sl__event_await_set (internal/await.h) for a wait whose condition may
 * also come true at an instant rather than by a notify: it sleeps no later
 * than next(ctx) (the minimum of sl__chan_ready_at over the channels waited
 * on), re-reads it after each such wake, and gives up only at `deadline`.
 * With next() always SL_FOREVER it is sl__event_await_set itself. */
typedef uint64_t (*sl__next_fn)(void *ctx);
sl_status sl__chan_await(const sl__event_set *set, sl__ready_fn ready, void *ctx,
                         uint64_t deadline, unsigned flags, sl__next_fn next);
/* The event-loop descriptors' hooks (chanfd.c). ring_watchers: after a
 * state change, where `selectors` was not zero: rings the select bell and
 * signals each re-armed descriptor (one out-of-line call, so that the
 * send path's frame is the same as without descriptors). The
 * rearm_* ones: a try found the channel empty (full) and its end has a
 * descriptor; re-arm it (reset it, and if its flag was down, look again):
 * rearm_recv tries the receive once more and returns its status;
 * full: a send found ch full; if the send end has a descriptor, re-arms it
 * and, since there is no message to send again, signals it if it finds
 * room or a close; returns SL_FULL. release: at sl_chan_free, closes them. */
void sl__chan_ring_watchers(sl_chan *ch, unsigned ready);
sl_status sl__chanfd_rearm_recv(sl_chan *ch, void *out);
sl_status sl__chanfd_full(sl_chan *ch);
void sl__chanfd_release(sl_chan *ch);

/* A selecting thread may wait for this channel: ring the bells of the
 * cases the change can make ready (SL__READY_*). The caller's state change
 * was a seq_cst RMW or fenced, so this seq_cst load cannot miss a selector
 * whose registration came before its re-check (select.c). Every change of
 * a channel's state that a select may wait for calls this (chan.c's sends,
 * receives and close; rendezvous.c's offers). */
static inline void sl__chan_ring_selectors(sl_chan *ch, unsigned ready)
{
#ifdef SL_MUTANT_CHAN_NO_SELECT_BELL
    return; /* planted bug: no change of the channel rings the select bell */
#endif
    if (atomic_load_explicit(&ch->selectors, memory_order_seq_cst) != 0)
        sl__chan_ring_watchers(ch, ready); /* the bells, and any descriptor (chanfd.c) */
}

/* Whether `end` of ch has a descriptor. Relaxed: a descriptor made after
 * this look starts readable, so a try that misses it loses nothing. */
static inline bool sl__chanfd_has(const sl_chan *ch, sl_chan_end end)
{
    return atomic_load_explicit(&ch->fds[end].fd1, memory_order_relaxed) != 0;
}

/* Which select cases a change can make ready: receive cases (a send, a
 * displacing send), send cases (a receive), or both (a close, a rendezvous
 * offer). */
#define SL__READY_RECV 1u
#define SL__READY_SEND 2u
#define SL__READY_BOTH 3u

/* Threads blocked in sl_select park on one of the process's bells, the one
 * for the directions of their cases; a channel with selectors rings, on
 * every state change, the bells of the directions it can make ready,
 * through sl__select_ring (select.c), which notifies a bell only while a
 * selector has armed it since its last ring. waiters: how many threads wait
 * on the bells now (tests). */
void sl__select_ring(unsigned ready);
uint32_t sl__select_waiters(void);

/* The armed-bell protocol of sl__select_ring (select.c; docs/guarantees.md,
 * "The select bell's arm") for any bell: notifies all of ev's waiters only
 * while `armed` is set, and takes the arm. */
void sl__bell_ring(sl_event *ev, SL_ATOMIC(uint32_t) *armed);
/* A waiter's side of it: arms the n bells, then the heavy barrier (the
 * shared one, sl__event_heavy_fence_shared, when a bell is a segment's);
 * after the registration on their eventcounts, before each re-check. */
void sl__bells_arm(SL_ATOMIC(uint32_t) *const *armed, size_t n, bool shared);

/* A shared segment's select bell (docs/shm-layout.md, "The select bell"):
 * a selector in any process that has a case on the segment's channel waits
 * on it beside the process bell (select.c), and every change of the channel
 * rings it while the channel's `selectors` count is not zero. Words a peer
 * writes: a garbage value costs wake-ups, nothing else. */
typedef struct sl__shm_bell {
    sl_event ev;               /* shared: its futex calls reach every process */
    SL_ATOMIC(uint32_t) armed; /* 1: a selector re-checks since the last ring */
} sl__shm_bell;
sl__shm_bell *sl__shm_bell_of(sl_chan *ch);
void sl__shm_ring(sl_chan *ch);

/* Event-loop descriptors of shared channels (shm_watch.c): the watcher
 * thread relays changes made in other processes. add: ch joins the watch
 * list (once; starts the thread with the first), SL_ENOMEM when the list
 * cannot grow or the thread cannot start. remove: ch leaves it, and the
 * call returns once the watcher no longer touches ch. poke (chanfd.c): the
 * watcher's look at ch: each re-armed descriptor whose end is ready (a
 * message or room, or closed) is made readable. */
sl_status sl__shm_watch_add(sl_chan *ch);
void sl__shm_watch_remove(sl_chan *ch);
void sl__chanfd_poke(sl_chan *ch);

#endif /* SLUICE_CHANNELS_CHAN_IMPL_H */
