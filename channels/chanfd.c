/*
 * channels/chanfd.c — event-loop descriptors (sluice/chanfd.h): an eventfd
 * per channel end, readable while a try at that end may succeed.
 *
 * A descriptor is a standing watcher of its channel: creating one adds 1 to
 * the channel's `selectors` count, which every send, receive and close
 * already loads (sl__chan_ring_selectors, chan_impl.h) and which is 0 on a
 * channel nobody selects on or watches. So a channel without a descriptor
 * pays nothing; one with a descriptor takes sl__chan_ring_selectors' slow
 * path, which calls sl__chan_ring_watchers here.
 *
 * Per end, `armed` says whether the eventfd was reset (read to 0) since it
 * was last signalled. The protocol, a Dekker pair like the eventcount's
 * (docs/guarantees.md, "Event-loop descriptors", has the argument):
 *
 *   re-arm (a try found the end empty / full; the loop's side)
 *     A1 read(fd): reset ; A2 armed = 1 (seq_cst exchange)
 *     A3 heavy barrier ; A4 look again: the receive end tries the receive
 *     once more; the send end looks for room or a close (its length and
 *     `closed`, seq_cst loads) and, finding either, signals itself
 *   signal (ring: after a state change that can make this end ready — a
 *   send or displacing send for the receive end, a receive for the send
 *   end, a close or a rendezvous offer for both; the other side's)
 *     S1 the change (seq_cst RMW, or store + sl_event_fence) ; S2 load
 *     `selectors` (seq_cst) ; S3 load armed (seq_cst) ; if 1:
 *     S4 exchange armed 0 (seq_cst) ; if it was 1: S5 write(fd, 1)
 *
 * Either A4 sees S1 (the receive's retry finds the message, or the send
 * end's look the room, and signals), or S3 sees A2 (or a later value of the flag) and the
 * descriptor is written after A1. Every change of `armed` is a
 * read-modify-write, so whatever S3 reads is in A2's release sequence and A1
 * happens before S5: the reset cannot swallow the write that follows it.
 * Only one writer per re-arm (S4's exchange), so a busy channel makes one
 * system call per loop wake-up, not one per message. A re-arm resets even
 * an end it finds armed, for a write that S5 made late (rearm below).
 *
 * Lifetime: the eventfd lives as long as the channel (sl_chan_free closes
 * it), so a sender that read its number can never write to a reused one.
 */
#include "chan_impl.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal/testing.h"
#include "internal/sysops.h"

static int fd_of(const sl__chan_fd *e)
{
    /* Acquire: pairs with the CAS that published the descriptor. */
    return atomic_load_explicit(&e->fd1, memory_order_acquire) - 1;
}

/* e's descriptor if it is this process's, else -1. A fork()ed child's copy
 * of a channel (a shared channel's handle, which it may use: it claims a
 * record of its own; or an in-process channel's copy) holds its parent's:
 * the same eventfd, shared by the fork, and a flag that the parent's
 * signals no longer move. A re-arm there read the parent's eventfd and
 * took the wake-up owed to the parent's loop, whose flag, down, then let
 * no later change write it (found by review). */
static int fd_here(const sl__chan_fd *e)
{
    int fd = fd_of(e);
#ifndef SL_MUTANT_CHANFD_FORK_INHERITED /* planted bug when defined: the parent's used */
    /* Relaxed: written before the publishing CAS, which fd_of acquired. */
    if (fd >= 0 && atomic_load_explicit(&e->gen, memory_order_relaxed) !=
                       atomic_load_explicit(&sl__shm_gen, memory_order_relaxed))
        return -1;
#endif
    return fd;
}

/* In a fork()ed child: a generation of its own, so that its copies'
 * descriptors are not taken for its own (channels/shm_owner.c moves it too, for a
 * process that mapped a segment). */
static void __attribute__((unused)) forked_child(void)
{
    /* Relaxed: the child runs only this thread now. */
    atomic_fetch_add_explicit(&sl__shm_gen, 1u, memory_order_relaxed);
}

/* At load, before any descriptor can exist: sl_chan_fd stays lock-free
 * (pthread_atfork takes a lock), and no fork can come between a first
 * descriptor and the handler. */
#ifndef SL_MUTANT_CHANFD_FORK_UNCOUNTED /* planted bug when defined: only shm_owner.c's handler */
static __attribute__((constructor)) void add_fork_handler(void)
{
    pthread_atfork(NULL, NULL, forked_child);
}
#endif

/* S3–S5: make the descriptor readable unless it is already. */
static void signal_end(sl__chan_fd *e)
{
    int fd = fd_here(e);
    /* seq_cst: the Dekker load after the caller's change and `selectors`
     * load; the load first keeps the line shared while nobody re-armed. */
    if (fd < 0 || atomic_load_explicit(&e->armed, memory_order_seq_cst) == 0)
        return;
    if (atomic_exchange_explicit(&e->armed, 0u, memory_order_seq_cst) == 0)
        return; /* another signaller won: it writes */
    SL_FI(); /* disarmed, not yet written */
    uint64_t one = 1;
    /* Cannot fail on a valid eventfd short of 2^64 - 2 unread signals (each
     * write follows a reset); EINTR does not occur on a nonblocking one.
     * The system call itself, not write(): that is a cancellation point,
     * and this runs inside sends and receives, between a mark and its
     * unmark. */
#ifndef SL_MUTANT_CHANFD_CANCEL_POINTS /* planted bug when defined */
    long r = syscall(SYS_write, fd, &one, sizeof one);
#else
    long r = write(fd, &one, sizeof one);
#endif
    (void)r;
}

void sl__chan_ring_watchers(sl_chan *ch, unsigned ready)
{
    sl__select_ring(ready);
    if (sl__chan_is_shared(ch)) /* selectors in other processes too */
        sl__shm_ring(ch);
    /* Only the ends the change can make ready: an end is re-armed after a
     * try on it failed, and only a change of its direction (or a close)
     * can undo that failure. */
    if (ready & SL__READY_RECV)
        signal_end(&ch->fds[SL_END_RECV]);
    if (ready & SL__READY_SEND)
        signal_end(&ch->fds[SL_END_SEND]);
}

/* What a re-arm leaves its caller to do. */
typedef enum {
    REARM_NONE,  /* nothing was re-armed: the caller's failed try stands */
    REARM_QUIET, /* reset, and the flag was up: nothing to look at again */
    REARM_CHECK, /* reset and armed after a signal or a first arming: A4 */
} rearm_result;

_Thread_local bool sl__chan_retrying __attribute__((tls_model("initial-exec")));

/* A1–A3. REARM_NONE for a descriptor that is not this process's (fd_here):
 * none to re-arm; and for a `repeat` (a later turn of the receive end's
 * loop below, after its own A1), or a blocking form's retry
 * (sl__chan_retrying), that finds the end armed: a change since the
 * re-arm that raised the flag signals it. The retry's skip is safe where a
 * try's is not: what the late write below leaves readable, the loop's own
 * next failed try resets (a try is never a retry), and the waiting thread
 * does not read the descriptor.
 *
 * A first re-arm resets even an end it finds armed. A signaller stopped
 * between S4 and S5 took down the flag of an earlier re-arm; a later one
 * raised it again, and the late write then left the descriptor readable
 * with the flag up. A re-arm that stopped at the flag made every try fail
 * without a reset, and the loop spun until the next change (found under
 * load; unit_chanfd `stale_signal`). If A2 finds the flag up, no S4 came
 * since the re-arm that raised it, whose own A4 answers for every change
 * made while it was down: what this reset wiped was written for a change
 * that re-arm looked at, so A3–A4 are not needed (REARM_QUIET); an
 * armed end costs its failed tries one read(2) each, no barrier. */
static rearm_result rearm(sl__chan_fd *e, bool repeat)
{
#ifdef SL_MUTANT_CHANFD_ARMED_SKIPS_RESET
    repeat = true; /* planted bug: an armed end is never reset */
#endif
#ifdef SL_MUTANT_CHANFD_RETRY_RESETS
    /* planted bug: a blocking form's every failed retry makes a read(2) */
#else
    repeat = repeat || sl__chan_retrying;
#endif
    if (repeat && atomic_load_explicit(&e->armed, memory_order_relaxed))
        return REARM_NONE; /* a stale 0 costs one more reset; a stale 1, one more wake */
    int fd = fd_here(e);
    if (fd < 0)
        return REARM_NONE;
#ifdef SL_MUTANT_CHANFD_QUIET_ON_LOAD
    /* Planted bug: the flag as a load before the reset saw it decides. A
     * signal between the load and the reset takes the flag down and writes;
     * the reset wipes the write, and nothing looks again. */
    if (atomic_load_explicit(&e->armed, memory_order_seq_cst)) {
        sl__eventfd_reset(fd);
        return REARM_QUIET;
    }
#endif
    sl__eventfd_reset(fd); /* A1 */
    /* seq_cst, and a read-modify-write: heads the release sequence every
     * later change of `armed` continues (the argument above). */
    if (atomic_exchange_explicit(&e->armed, 1u, memory_order_seq_cst))
        return REARM_QUIET;
    SL_FI(); /* armed, not yet fenced */
    /* The flag before the re-check, against a change whose fence is only a
     * compiler barrier (SL_SPSC in asymmetric mode: sluice/park.h). */
    sl_event_heavy_fence();
    return REARM_CHECK;
}

/* Whether this thread is inside a receive end's re-check (A4): the try it
 * makes there finds the channel empty through the same path that re-arms,
 * and must leave the re-arm to sl__chanfd_rearm_recv's loop rather than nest one. */
static _Thread_local bool rechecking __attribute__((tls_model("initial-exec")));

/* A4 for the receive end: the receive once more, then the signal a change
 * met by the re-arm may still owe. */
static sl_status recheck(sl_chan *ch, sl__chan_fd *e, void *out)
{
#ifdef SL_MUTANT_CHANFD_NO_RECHECK
    /* Planted bug (docs/guarantees.md, "Planted bugs"): re-arm, no re-check. */
    sl_status st = SL_EMPTY;
#else
    rechecking = true;
    sl_status st = sl__chan_try_recv(ch, out);
    rechecking = false;
#endif
    /* The reset (A1) wiped every signal made before it, and a change made
     * while the flag was down, before the reset, wrote nothing: more
     * messages than the re-check takes, or a close (found by review: the
     * descriptor then stayed unreadable with a message in the channel, or
     * for good after a close). So unless the re-check found the channel
     * empty and open, which no such change leaves, signal it: spurious
     * readiness at worst, and only when a change met the re-arm. Closed
     * and empty with a send that saw it open still landing is SL_EMPTY and
     * stays unsignalled: that send's unmark rings this end after the close
     * (chan.c, send_end), and it comes after this look, which saw its
     * mark, so it finds the flag up. (The end was once signalled here
     * until the receiver could say SL_CLOSED: a loop then spun for as long
     * as the send took to land, for good in a shared channel whose sender
     * died unfound.) */
#if defined(SL_MUTANT_CHANFD_RECHECK_TAKES_ALL)
    if (st == SL_EMPTY && sl_chan_is_closed(ch)) /* planted bug: the old test */
#elif defined(SL_MUTANT_CHANFD_CLOSED_SPINS)
    if (st != SL_EMPTY || sl_chan_is_closed(ch)) /* planted bug: signalled while landing */
#else
    if (st != SL_EMPTY)
#endif
        signal_end(e);
    return st;
}

sl_status sl__chanfd_rearm_recv(sl_chan *ch, void *out)
{
#ifndef SL_MUTANT_CHANFD_RECHECK_NESTS /* planted bug when defined: one frame a re-arm */
    if (rechecking)
        return SL_EMPTY; /* the loop below arms again (its caller's empty try) */
#endif
    sl__chan_fd *e = &ch->fds[SL_END_RECV];
    for (bool repeat = false;; repeat = true) {
        /* Closed too (a send still landing): re-armed, as an open end is. */
#ifdef SL_MUTANT_CHANFD_CLOSED_SPINS
        if (sl_chan_is_closed(ch)) /* planted bug: left as the close signalled it */
            return SL_EMPTY;
#endif
        if (rearm(e, repeat) != REARM_CHECK)
            return SL_EMPTY;
        sl_status st = recheck(ch, e, out);
        /* Empty, with the flag down again: another thread signalled after
         * A2 (a send whose message another receive took first, a refused
         * send after a close, a watcher's poke). Arm again, as the nested
         * re-arm of the re-check's own empty try would have, but in this
         * frame: each turn needs another thread's completed step, so the
         * loop is lock-free, and the stack stays one frame deep however
         * many signals pass it by. */
        if (st != SL_EMPTY)
            return st;
    }
}

/* Whether `end` of ch is ready now: a message (room) to take, or closed. */
static bool end_ready(sl_chan *ch, unsigned end)
{
    if (sl_chan_is_closed(ch))
        return true;
    size_t len = sl_chan_len(ch);
    return end == SL_END_RECV ? len > 0 : len < ch->capacity;
}

sl_status sl__chanfd_full(sl_chan *ch)
{
    sl__chan_fd *e = &ch->fds[SL_END_SEND];
    if (!sl__chanfd_has(ch, SL_END_SEND) || rearm(e, false) != REARM_CHECK)
        return SL_FULL;
    /* A4 as a look, not a second send (the send path keeps no message
     * pointer past its push: the same instructions with or without a
     * descriptor): room, or a close, since the failed push makes the
     * descriptor readable again, and the loop's next try decides. */
    if (end_ready(ch, SL_END_SEND))
        signal_end(e);
    return SL_FULL;
}

/* The watcher's look (shm_watch.c) at a shared channel, after its bells'
 * arm or a wake: the state of each end, a seq_cst fence, each end's flag,
 * and, for a re-armed end, the state once more, so that a re-arm made
 * after the first look at a full (empty) end is not signalled for a room
 * (a message) already gone. A re-arm's fence before its re-check, and this
 * fence after a look that saw a change made since (in another process,
 * which rang the bell this look follows), make either that re-check see
 * the change or this flag load see the re-arm (docs/guarantees.md,
 * "Event-loop descriptors"). */
void sl__chanfd_poke(sl_chan *ch)
{
    bool ready[2] = {end_ready(ch, SL_END_RECV), end_ready(ch, SL_END_SEND)};
    atomic_thread_fence(memory_order_seq_cst);
    for (unsigned i = 0; i < 2; i++)
        /* seq_cst: after the fence, as signal_end's own load. */
        if (ready[i] && atomic_load_explicit(&ch->fds[i].armed, memory_order_seq_cst) &&
            end_ready(ch, i))
            signal_end(&ch->fds[i]);
}

/* Publishes fd as the descriptor of e, or closes it when another thread
 * published one first; the descriptor in use either way. It starts
 * signalled (the eventfd at 1, `armed` 0 from sl_chan_new): whatever was
 * sent before the watcher count took effect is found by the first try after
 * the first wait. */
static int publish(sl_chan *ch, sl__chan_fd *e, int fd)
{
    /* Counted as a watcher before anyone can hold the descriptor: seq_cst,
     * then the heavy barrier, so every later change's `selectors` load sees
     * the watcher, or the change is visible to every re-check that follows
     * (as select's registration, select.c). */
    atomic_fetch_add_explicit(&ch->selectors, 1u, memory_order_seq_cst);
    /* A shared channel's changes in other processes may be only
     * compiler-ordered (asymmetric mode): the global barrier too, as a
     * selector with a shared case issues after its registration (select.c). */
#ifndef SL_MUTANT_CHANFD_PRIVATE_BARRIER /* planted bug when defined */
    if (sl__chan_is_shared(ch))
        sl__event_heavy_fence_shared();
#endif
    sl_event_heavy_fence();
    SL_FI(); /* counted, not yet published */
    int none = 0;
    /* Relaxed, before the CAS that publishes it: racing creators all store
     * this process's generation. */
    atomic_store_explicit(&e->gen, atomic_load_explicit(&sl__shm_gen, memory_order_relaxed),
                          memory_order_relaxed);
    /* acq_rel: publishes the descriptor (and the count before it) to the
     * threads that acquire it; on failure acquires the winner's. */
    if (atomic_compare_exchange_strong_explicit(&e->fd1, &none, fd + 1, memory_order_acq_rel,
                                                memory_order_acquire))
        return fd;
    close(fd);
    /* seq_cst like every update of the count; the winner's stays. */
    atomic_fetch_sub_explicit(&ch->selectors, 1u, memory_order_seq_cst);
    return none - 1;
}

SL_API sl_status sl_chan_fd(sl_chan *ch, sl_chan_end end, int *fd)
{
    if (!ch || !fd || (end != SL_END_RECV && end != SL_END_SEND) || !sl__chan_changes_notify(ch))
        return SL_EINVAL;
    sl__chan_fd *e = &ch->fds[end];
    int have = fd_of(e), made = -1;
    if (have >= 0 && fd_here(e) < 0)
        return SL_EINVAL; /* a fork()ed child's copy: its parent's descriptor */
    if (have < 0 && (made = sl__eventfd(1)) < 0)
        return SL_ENOMEM;
    /* A shared channel's changes in other processes reach this process's
     * descriptors through the watcher: watched before the descriptor is
     * published, and a refusal leaves nothing made (the eventfd unseen). */
    if (sl__chan_is_shared(ch) && sl__shm_watch_add(ch) != SL_OK) {
        if (made >= 0)
            close(made);
        return SL_ENOMEM;
    }
    if (have < 0)
        have = publish(ch, e, made);
    *fd = have;
    return SL_OK;
}

void sl__chanfd_release(sl_chan *ch)
{
    if (sl__chan_is_shared(ch))
        sl__shm_watch_remove(ch); /* before the segment goes */
    unsigned gen = atomic_load_explicit(&sl__shm_gen, memory_order_relaxed);
    for (unsigned i = 0; i < 2; i++) {
        int fd = fd_of(&ch->fds[i]);
        if (fd < 0)
            continue;
        close(fd);
        atomic_store_explicit(&ch->fds[i].fd1, 0, memory_order_relaxed); /* free is alone */
        /* A fork()ed child's copy of a shared channel's handle: the count in
         * the segment is the parent's descriptor's. */
        /* Relaxed: free is alone, after every creator. */
        if (atomic_load_explicit(&ch->fds[i].gen, memory_order_relaxed) != gen &&
            sl__chan_is_shared(ch))
            continue;
        /* seq_cst like every update of the count (select.c). */
        atomic_fetch_sub_explicit(&ch->selectors, 1u, memory_order_seq_cst);
    }
}
