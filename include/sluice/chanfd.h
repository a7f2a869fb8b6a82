/*
 * sluice/chanfd.h — waiting on a channel in an event loop: a file descriptor
 * per channel end that epoll(7), poll(2), io_uring or libuv can watch next to
 * sockets.
 *
 * sl_chan_fd(ch, SL_END_RECV, &fd) gives a descriptor that is readable while
 * ch may have a message to receive (or is closed); SL_END_SEND one that is
 * readable while ch may have room to send (or is closed). Level semantics,
 * kept by a re-arm on the failing try:
 *
 *     epoll_ctl(ep, EPOLL_CTL_ADD, fd, &(struct epoll_event){.events = EPOLLIN});
 *     for (;;) {
 *         epoll_wait(ep, ...);                         // fd readable
 *         while ((st = sl_chan_try_recv(ch, &m)) == SL_OK)
 *             handle(&m);                              // drain ...
 *         if (st == SL_CLOSED) break;                  // ... until SL_EMPTY,
 *     }                                                // which re-armed fd
 *
 * The user never reads the descriptor: the receive that finds the channel
 * empty resets it, then tries once more (it may then return a message after
 * all); the send that finds it full resets it, then looks for room or a
 * close, and finding either makes it readable again (the send still says
 * SL_FULL; the loop's next try decides).
 *
 * No lost edge: after a try returned SL_EMPTY (SL_FULL), a message sent
 * (room made) or a close at any later time — also while the loop is between
 * that try and its next epoll_wait — makes the descriptor readable
 * (docs/guarantees.md, "Event-loop descriptors"). Spurious readiness is
 * possible (another thread received the message first; a re-arming try
 * that met a change signals its own descriptor): the loop's try then finds
 * nothing and re-arms it. After a close the descriptor is readable until
 * the receiver has drained and got SL_CLOSED, and for good after that. A
 * receive that finds the channel closed while a send that saw it open is
 * still landing says SL_EMPTY and re-arms it like any empty try: that
 * send's end makes it readable again (a shared channel's sender that died
 * there: the periodic look that finds it dead, sluice/shm.h).
 *
 * Cost: none while no descriptor was asked for — a send or receive already
 * loads the channel's watcher count (the one select uses) and takes its
 * slow path only when it is not zero, and a try that fails makes one call
 * that loads a field; no system call, and a successful send or receive
 * executes the same instructions as before, give or take one
 * (docs/performance.md). With a descriptor, a send or receive loads
 * the end's `armed` flag and writes the eventfd once per re-arm (one write
 * wakes the loop; later sends find the flag down and make no system call),
 * and every try that fails at that end re-arms it: a read(2), and, when a
 * change took the flag down since the last re-arm, the eventcount's heavy
 * barrier (membarrier(2) where available, sluice/park.h) and a second look.
 * A blocking send, receive or select re-arms only at its first try: its
 * later tries, while it waits, leave an end they find armed as it is and
 * make no system call there.
 *
 * Channels in shared memory (sluice/shm.h): a change made in another
 * process cannot write this process's eventfd, so the first descriptor of a
 * shared channel starts a watcher thread in this process (one per process,
 * for every shared channel with a descriptor; all signals blocked in it; it
 * ends when the last such channel is freed, and the next descriptor starts
 * another). While it runs the process has a thread of sluice's: a process
 * whose main thread calls pthread_exit with a shared channel still watched
 * does not end (free the handles first). It sleeps on the select bells of the
 * watched segments (futex_waitv(2), the bells select uses: sluice/shm.h)
 * and makes a re-armed descriptor readable when its end is ready, so a send,
 * receive or close in another process reaches the loop, as does the
 * channel closing itself when its last registered sender is gone. Changes
 * made in this process signal directly, as on any channel. Costs: the
 * thread (asleep while nothing changes, awake every 50 ms for each watched
 * channel's periodic look, as a parked receiver is), a futex wake per loop
 * wake-up from the other processes' side, and without futex_waitv (Linux
 * before 5.16) a change made in another process reaches the descriptor up
 * to 50 ms late. sl_chan_free waits until the watcher has let go of the
 * channel. After fork(), the child has no watcher: it opens its own handle
 * and asks for its own descriptor. The handle it inherited works in the
 * child, but its descriptors stay the parent's: the child's calls on it
 * neither reset nor signal them, and sl_chan_fd refuses them there.
 */
#ifndef SLUICE_CHANFD_H
#define SLUICE_CHANFD_H

#include "sluice/chan.h"

SL_BEGIN_DECLS

/* Which end of a channel a descriptor watches. */
typedef enum sl_chan_end {
    SL_END_RECV = 0, /* readable while there may be a message to receive */
    SL_END_SEND = 1, /* readable while there may be room to send */
} sl_chan_end;

/* Stores in *fd a descriptor for `end` of ch: an eventfd(2), nonblocking and
 * close-on-exec, that is readable while a try at that end may succeed (see
 * the header comment), created readable on the first call; later calls
 * return the same descriptor. The channel owns it: the caller polls it and
 * must neither read, write nor close it; sl_chan_free closes it (remove it
 * from any epoll set or libuv handle first, which must not outlive the
 * channel). Once a channel has a descriptor, its sends and receives keep
 * paying for it (a flag load each, a write per re-arm) until sl_chan_free.
 *
 * Re-arming: sl_chan_try_recv (SL_END_RECV) or sl_chan_try_send
 * (SL_END_SEND) — and every other single-message form, blocking, timed or in
 * sl_select, through the same try — re-arms the descriptor when it finds the
 * channel empty (full), then looks once more (above). The batch forms
 * (sl_chan_try_recv_n, sl_chan_recv_n, sl_chan_recv_n_for,
 * sl_chan_try_send_n) do not re-arm: end a drain with sl_chan_try_recv. The caller must drain until SL_EMPTY (SL_FULL) or
 * SL_CLOSED before waiting again, or the descriptor stays readable (a busy
 * loop, never a lost message).
 *
 * Returns SL_OK; SL_EINVAL for NULL ch or fd, an end that is neither, or a
 * timer channel (SL_TIMER: its fires come from the clock, with no event to
 * signal — give the loop a timerfd(2) instead), or a rendezvous channel
 * (capacity 0: an end is ready only while a partner is blocked in it, and
 * the loop never blocks in the channel, so loops at both ends would never
 * meet), or a fork()ed child's copy of a channel (in-process, or a shared
 * channel's handle) whose end had a descriptor in the parent (the same
 * eventfd: the two loops would take each other's wake-ups; a child opens a
 * shared channel's handle of its own) (*fd untouched); SL_ENOMEM when the system refuses a descriptor (EMFILE,
 * ENFILE, ENOMEM), or, for a shared channel, the watcher thread cannot
 * start or its list cannot grow (the channel is unchanged and works as
 * before, and a later call may succeed). Lock-free: two threads asking at
 * once race with one compare-and-swap, and the loser closes its own and
 * returns the winner's; on a shared channel it also takes the watcher's
 * list lock, briefly (so not lock-free there), and sl_chan_free waits for
 * the watcher to let go.
 * Ordering: a message sent (room made) before the call returns makes the
 * first wait on the descriptor return (it starts readable). */
SL_API sl_status sl_chan_fd(sl_chan *ch, sl_chan_end end, int *fd);

SL_END_DECLS

#endif /* SLUICE_CHANFD_H */
