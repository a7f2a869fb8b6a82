/*
 * channels/shm_lane.c — which thread of this process marks itself in which
 * lane of a shared SL_MPMC handle's record (docs/shm-layout.md, "Records";
 * docs/design.md, "Shared SL_MPMC senders mark in lanes").
 *
 * A shared SL_MPMC send marks itself in flight so that a receiver deciding
 * SL_CLOSED waits for it (chan_marks.h). The record belongs to one
 * handle in one process, and that handle's threads may send at once, so the
 * record's own mark is a count: two locked read-modify-writes a send, the
 * dearest part of a shared send once its ring steps are paid. A lane is a
 * flag that one thread owns: the thread marks and unmarks it with plain
 * stores and the shared channels' fence (sl__shm_fence), as SL_SPSC marks
 * its flag, and the receiver's side is the one SL_SPSC's flag already has
 * (the mode's barrier, then a load of every record's marks).
 *
 * Ownership is process-local (the handle's lane_owner, never in the
 * segment: a peer's garbage cannot make two threads share a lane). A
 * thread takes a free lane with a compare-and-swap of its own word, which
 * no other thread ever holds: a per-process serial with the thread id
 * beside it. A lane goes to another thread only when the record is claimed
 * again (the owners are reset) or when its owner has exited, which
 * tgkill(2) with signal 0 tells by ESRCH: a thread id is free again only
 * once its thread is gone, and the serial keeps a later thread with the
 * same id from passing for the old one. A thread that finds every lane
 * owned by a living thread counts itself in the record's count as before.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "chan_impl.h"
#include "internal/sysops.h"

_Thread_local sl__shm_lane_cache sl__shm_lane_of_thread
    __attribute__((tls_model("initial-exec")));

#define LANE_TID_BITS 22 /* PID_MAX_LIMIT is 2^22: a thread id fits */
#define LANE_TID_MASK (((uint64_t)1 << LANE_TID_BITS) - 1)
/* How often a handle whose lanes are all owned looks for exited owners. */
#define LANE_LOOK_NS ((uint64_t)50 * 1000 * 1000)

/* This thread's owner word: (serial << 22) | tid, never 0, never another
 * thread's (the serial is this process's, counted from 1). */
static _Thread_local uint64_t lane_self_word __attribute__((tls_model("initial-exec")));
static SL_ATOMIC(uint64_t) lane_threads;
/* Serials of record claims: a cached lane is good while its claim is current. */
static SL_ATOMIC(uint64_t) lane_claims;

static uint64_t lane_self(void)
{
    if (!lane_self_word) {
        /* Relaxed: only uniqueness matters. */
        uint64_t n = atomic_fetch_add_explicit(&lane_threads, 1, memory_order_relaxed) + 1;
        lane_self_word = n << LANE_TID_BITS | ((uint64_t)syscall(SYS_gettid) & LANE_TID_MASK);
    }
    return lane_self_word;
}

/* Whether the thread an owner word names has exited. Conservative: only
 * ESRCH says so (a thread id reused by a living thread reads as alive). */
static bool owner_exited(uint64_t owner)
{
    int saved = errno;
    bool gone = syscall(SYS_tgkill, (pid_t)getpid(), (pid_t)(owner & LANE_TID_MASK), 0) != 0 &&
                errno == ESRCH;
    errno = saved;
    return gone;
}

static bool lane_owner_gone(uint64_t owner)
{
#ifdef SL_MUTANT_SHM_LANE_STOLEN
    (void)owner;
    return true; /* planted bug: a living thread's lane is taken from it */
#endif
    return owner_exited(owner);
}

/* The lane `me` owns, or a free one now taken; -1 when none is free. */
static int own_or_take_free(sl__shm_map *m, uint64_t me)
{
    for (int k = 0; k < SL__SHM_LANES; k++)
        /* Relaxed: only this thread ever stores `me`. */
        if (atomic_load_explicit(&m->lane_owner[k], memory_order_relaxed) == me)
            return k;
    for (int k = 0; k < SL__SHM_LANES; k++) {
        uint64_t none = 0;
        /* Relaxed: the lane's flag is 0 while nobody owns it (its last
         * owner unmarked before it exited); the CAS only decides who. A
         * load first: a thread finding every lane owned makes no locked
         * instruction. */
        if (atomic_load_explicit(&m->lane_owner[k], memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong_explicit(&m->lane_owner[k], &none, me,
                                                    memory_order_relaxed, memory_order_relaxed))
            return k;
    }
    return -1;
}

/* A lane whose owner has exited, taken; at most one look a LANE_LOOK_NS
 * per handle (a process with more sending threads than lanes would
 * otherwise make SL__SHM_LANES system calls on each cache miss). */
static int take_exited(sl__shm_map *m, uint64_t me)
{
    uint64_t now = sl__now_ns();
    /* Relaxed: a rate limit; two threads looking at once is harmless. */
    uint64_t last = atomic_load_explicit(&m->lanes_looked_at, memory_order_relaxed);
    if (last && now - last < LANE_LOOK_NS)
        return -1;
    atomic_store_explicit(&m->lanes_looked_at, now, memory_order_relaxed);
    for (int k = 0; k < SL__SHM_LANES; k++) {
        uint64_t o = atomic_load_explicit(&m->lane_owner[k], memory_order_relaxed);
        if (o && lane_owner_gone(o) &&
            atomic_compare_exchange_strong_explicit(&m->lane_owner[k], &o, me,
                                                    memory_order_relaxed, memory_order_relaxed))
            return k;
    }
    return -1;
}

int sl__shm_lane_take(sl__shm_map *m)
{
#ifdef SL_MUTANT_SHM_LANE_SHARED
    return 0; /* planted bug: every thread of the process marks in lane 0 */
#endif
    uint64_t me = lane_self();
    int k = own_or_take_free(m, me);
    return k >= 0 ? k : take_exited(m, me);
}

void sl__shm_lanes_reset(sl__shm_map *m)
{
    for (int k = 0; k < SL__SHM_LANES; k++)
        atomic_store_explicit(&m->lane_owner[k], 0, memory_order_relaxed);
    atomic_store_explicit(&m->lanes_looked_at, 0, memory_order_relaxed);
    /* Relaxed: published by the claim's release of gen (claim_locked). */
    atomic_store_explicit(&m->claim,
                          atomic_fetch_add_explicit(&lane_claims, 1, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

void sl__shm_lanes_forked(void)
{
    /* The child's one thread has another id, and its parent's lanes are not
     * its own: it takes its lanes afresh, in records it claims afresh. */
    lane_self_word = 0;
    sl__shm_lane_of_thread = (sl__shm_lane_cache){0};
}
