/*
 * sluice/chan.h — the channel: one façade over every flavour.
 *
 * A channel moves fixed-size messages between threads. The flavour, chosen at
 * creation, fixes how many threads may send and receive and what happens at
 * the bound:
 *
 *   | flavour | senders/receivers | capacity  | try_send   | try_recv  | order            |
 *   |---------|-------------------|-----------|------------|-----------|------------------|
 *   | SL_SPSC | 1 / 1             | bounded   | wait-free  | wait-free | FIFO             |
 *   | SL_MPMC | many / many       | bounded   | lock-free  | lock-free | linearizable FIFO|
 *   | SL_LIST | many / many       | unbounded | lock-free  | lock-free | linearizable FIFO|
 *   | SL_RING | many / many       | overwrites| lock-free* | lock-free | linearizable FIFO|
 *   | SL_TIMER| none / many       | 1 (clock) | SL_EINVAL  | lock-free | fires in time    |
 *   | SL_BROADCAST | many / each subscriber | overwrites | wait-free** | lock-free** | all, in order |
 *   | SL_MPMC | many / many       | 0: rendez-| short      | short     | hand-off, no     |
 *   |         |                   | vous      | lock***    | lock***   | queue            |
 *
 * A thread's first send on an SL_MPMC or SL_LIST channel takes a per-thread
 * record, which its sends on every such channel then use to mark themselves
 * in flight for close (docs/guarantees.md, "The channel façade"): one that
 * an exited thread gave back, or a new one (aligned_alloc and
 * pthread_setspecific; the process's first also pthread_key_create and
 * pthread_atfork). If that fails the send still goes through, counting
 * itself in the channel, and the thread's next send tries again. Once the
 * thread has its record, marking calls nothing. A thread has one record, so
 * sends on these two flavours are not async-signal-safe: a signal handler
 * must not send on an SL_MPMC or SL_LIST channel while the thread it
 * interrupted may be sending on one. Nor are broadcast sends: a handler's
 * send may need the slot that the send it interrupted is writing, and
 * waits for it for ever (with capacity 1, at once; sluice/broadcast.h).
 *
 * No send, receive, select or close is a cancellation point
 * (pthread_cancel(3)): a deferred cancel takes effect after the call
 * returns, never inside it, so a thread blocked in sl_chan_recv is
 * cancelled only once the call ends (a timed form or a close ends it).
 * sl_chan_free and the shared-memory calls that make, open or close a
 * segment's descriptor may be.
 *
 * After fork(), an in-process channel in the child is the parent's memory
 * at the fork. The child clears the records' marks of the threads it does
 * not have, but a send another thread was inside on an SL_SPSC, SL_RING or
 * broadcast channel (or on SL_MPMC or SL_LIST by a thread without a record)
 * leaves its mark in the channel itself, and the child's receivers then
 * never see SL_CLOSED on that channel once it is closed and drained. On a
 * broadcast channel that send's slot also stays mid-write: the child's
 * subscribers stop before it, and the child's sends, from the one a lap
 * after it (with a drop function, its subscribes and frees of subscribers
 * too), wait for it for ever.
 *
 * SL_LIST's sends never wait: only SL_ENOMEM or SL_CLOSED refuse them, and its
 * capacity is SIZE_MAX. SL_RING's sends never wait (*) and never fail while
 * open: into a full ring they displace the oldest message (SL_EVICTED) — to
 * the drop function, or to the caller with sl_chan_send_evict. (*) Without
 * condition for messages of at most 8 bytes; for larger ones while fewer than
 * SL_RING_SPARE operations hold a slot at once, beyond which a send yields
 * until one of them is done (sluice/ring.h). The drop function a displacing
 * send calls runs inside that send: until it returns, the send is in flight,
 * so after a close the receivers answer SL_EMPTY, not SL_CLOSED (a drop
 * function must not wait for them), and, over 8 bytes, the displaced
 * message's slot counts toward SL_RING_SPARE, once more for each send the
 * drop function makes into the same ring. SL_TIMER channels (after, tick,
 * never) carry uint64_t fire instants from the clock and refuse sends
 * (sluice/timer.h). SL_BROADCAST hands every message to every subscriber
 * (sl_chan_subscribe, sluice/broadcast.h); a subscriber that falls more than
 * the capacity behind receives SL_LAGGED and the count it lost. (**) With
 * one sender thread; with several, a send may wait for the sender a lap
 * earlier to finish its copy, and a subscriber's next message is not there
 * while its sender is mid-copy (sluice/broadcast.h, "Progress").
 *
 * Rendezvous channels (SL_MPMC with capacity 0; Go's unbuffered channel,
 * crossbeam's bounded(0)) store nothing: a message goes straight from a
 * sender to a receiver, and only while the other side waits for it.
 *   - sl_chan_send waits until a receiver has taken this message (copied it
 *     out), then returns SL_OK: sender and receiver learn it at once.
 *   - sl_chan_try_send succeeds only if a receiver is already waiting (blocked
 *     in a receive form, or waiting in a select with a receive case on this
 *     channel, spinning or parked, and not running a round over its cases
 *     at that instant: sluice/select.h);
 *     otherwise SL_FULL and nothing consumed. sl_chan_send_for waits
 *     up to the timeout for a receiver: SL_TIMEDOUT (0: at once) leaves the
 *     message the caller's. Receives mirror this (SL_EMPTY, SL_TIMEDOUT).
 *     The pointer forms clear *pp only when a receiver took the pointer.
 *   - Batches go one message per waiting partner: try_send_n sends to as many
 *     waiting receivers as there are (up to n), try_recv_n takes from as many
 *     waiting senders; recv_n waits for one sender, then takes the others
 *     already waiting (up to n).
 *   - len is always 0 and cap 0; sl_chan_flavor says SL_MPMC. The drop
 *     function never runs: nothing is ever inside.
 *   - Close: every waiting sender returns SL_CLOSED with its message not
 *     taken (still the caller's, a send_ptr's pointer too), every waiting
 *     receiver SL_CLOSED, and no operation meets a partner after it. A send
 *     racing a close either met its receiver (SL_OK on both sides) or gets
 *     SL_CLOSED — never both, never lost.
 *   - Not available: SL_SPSC, SL_RING or SL_BROADCAST with capacity 0
 *     (SL_EINVAL; a rendezvous has no single-thread fast path and nothing
 *     to overwrite or to keep for subscribers),
 *     sl_chan_send_evict (SL_EINVAL, as for every flavour but SL_RING),
 *     sl_chan_fd (SL_EINVAL: an end is ready only while a partner is blocked
 *     in it, and an event loop never blocks in a channel, so two loops at the
 *     two ends would never meet). SL_LIST ignores capacity, 0 included.
 *   (***) Progress: a hand-off takes the channel's short lock (a scan of the
 *   waiting offers, one copy, one wake; never held across a wait), so a try
 *   is blocking in the strict sense while another thread holds it, and
 *   the blocking forms depend on a partner by definition (docs/guarantees.md,
 *   "Rendezvous channels"). Ordering as for every channel: the send acts as
 *   release, the receive that gets the message as acquire.
 *
 * Which calls may overlap on one channel:
 *
 *   | call                          | SL_SPSC                        | SL_MPMC, SL_LIST, SL_RING |
 *   |-------------------------------|--------------------------------|---------------------------|
 *   | send forms                    | one sender thread at a time    | any threads               |
 *   | receive forms                 | one receiver thread at a time  | any threads               |
 *   | close, is_closed, len, cap    | any thread, any time           | same           |
 *   | free                          | no other call, ever after      | same           |
 *
 * SL_BROADCAST: sends on the send handle from any threads; receives on one
 * subscriber handle from one thread at a time (sluice/broadcast.h).
 *
 * Ownership (move-only, docs/ownership.md): a send that returns SL_OK (or
 * SL_EVICTED) moved the message's bytes — and whatever they refer to — into
 * the channel; any other status consumed nothing and the caller still owns the
 * message. Every message sent is, exactly once, received, or evicted
 * (SL_RING: handed to the displacing sender or the drop function), or dropped
 * by sl_chan_free. (SL_BROADCAST keeps each original and hands subscribers
 * copies: its drop rule is in sluice/broadcast.h.)
 *
 * Close (as in Go): after sl_chan_close, sends return SL_CLOSED (nothing
 * consumed); receivers get what is still inside, then SL_CLOSED; every blocked
 * sender and receiver wakes. A send concurrent with the close either returns
 * SL_CLOSED or its message is received before any receiver sees SL_CLOSED.
 * Either side may close.
 *
 * Blocking: the blocking forms spin briefly, then park on an eventcount
 * (sluice/park.h). A send makes no system call while no receiver sleeps (and a
 * receive none while no sender sleeps, but for one that finds the channel
 * closed and empty with a send perhaps in flight: its SL_CLOSED decision
 * issues the heavy barrier); one message wakes at most one waiting
 * receiver. Timeouts are relative nanoseconds on CLOCK_MONOTONIC. Every timed
 * form follows one rule: it makes one attempt first; 0 means that attempt
 * alone; SL_FOREVER never gives up; when the operation could not be done in
 * time it returns SL_TIMEDOUT (never SL_FULL or SL_EMPTY), consumed nothing,
 * and no earlier than asked. A final status (SL_CLOSED, SL_ENOMEM) comes as
 * soon as it is known, timeout or not.
 *
 * Ordering: a successful send acts as release and the receive that gets the
 * message as acquire: what the sender wrote before sending is visible to the
 * receiver after receiving.
 */
#ifndef SLUICE_CHAN_H
#define SLUICE_CHAN_H

#include "sluice/base.h"
#include "sluice/status.h"

SL_BEGIN_DECLS

typedef struct sl_chan sl_chan;
/* SL_TIMER: a timer channel, made by sl_chan_after / sl_chan_tick /
 * sl_chan_never (sluice/timer.h), never by sl_chan_new. */
/* SL_BROADCAST: every subscriber (sluice/broadcast.h) sees every message. */
/* SL__RENDEZVOUS is reserved: the library's own name for a rendezvous channel
 * (SL_MPMC with capacity 0), never accepted by sl_chan_new nor returned by
 * sl_chan_flavor. */
typedef enum sl_flavor {
    SL_SPSC = 1, SL_MPMC, SL_LIST, SL_RING, SL_TIMER,
    SL_BROADCAST, SL__RENDEZVOUS,
    /* Internal, never valid in sl_chan_opts: how the handle of a channel in
     * shared memory (sluice/shm.h) records SL_SPSC and SL_MPMC. */
    SL__SPSC_SHARED = 16, SL__MPMC_SHARED
} sl_flavor;
typedef void (*sl_drop_fn)(void *elem, void *ctx);

typedef struct sl_chan_opts {
    sl_flavor  flavor;
    size_t     elem_size;  /* bytes per message: 1 .. SL_ELEM_MAX */
    size_t     capacity;   /* bounded flavours: exactly this many messages fit (>= 1);
                              SL_MPMC: 0 makes a rendezvous channel */
    sl_drop_fn drop;       /* optional: disposes of messages the channel still owns;
                              elem points into the channel and may be unaligned */
    void      *drop_ctx;
} sl_chan_opts;

/* Creates a channel. Returns SL_OK and sets *out; SL_EINVAL for NULL out or
 * opts, an unknown flavour or SL_TIMER (sluice/timer.h makes those),
 * elem_size 0 or above SL_ELEM_MAX, capacity 0 for SL_SPSC, SL_RING and
 * SL_BROADCAST, a capacity so large the storage overflows (bounded
 * flavours); SL_ENOMEM. On failure *out is untouched. SL_MPMC with capacity 0 makes a rendezvous
 * channel (above); it allocates nothing more than the channel. */
SL_API sl_status sl_chan_new(sl_chan **out, const sl_chan_opts *opts);

/* Hands every message still inside to the drop function (if any), in FIFO
 * order, then frees the channel. NULL does nothing. No other thread may be
 * using ch or use it afterwards (this includes threads blocked in it: close
 * and let them return first). A thread seen still waiting in ch, selecting on
 * it or sending into it makes sl_chan_free print what it saw and abort, in
 * every build, rather than free memory that thread will touch; a call that is
 * merely in progress without waiting is not always seen (AddressSanitizer
 * reports the rest). */
SL_API void sl_chan_free(sl_chan *ch);

/* Sends one message of elem_size bytes, waiting while the channel is full.
 * Returns SL_OK; SL_EVICTED (SL_RING was full: sent, and the oldest message
 * went to the drop function); SL_CLOSED (closed before or while waiting;
 * nothing consumed);
 * SL_ENOMEM (SL_LIST could not grow, or a shared channel's every record is
 * held: sluice/shm.h; nothing consumed); SL_EINVAL for NULL ch or elem.
 * Blocking; lock-free apart from the wait. */
SL_API sl_status sl_chan_send(sl_chan *ch, const void *elem);

/* Sends one message if there is room now. Returns SL_OK, SL_EVICTED (SL_RING),
 * SL_FULL, SL_CLOSED, SL_ENOMEM (as sl_chan_send) or SL_EINVAL; nothing consumed unless
 * SL_OK or SL_EVICTED. Never blocks; the flavour's
 * progress guarantee (table above), plus a notify that makes a system call
 * only when a receiver sleeps. */
SL_API sl_status sl_chan_try_send(sl_chan *ch, const void *elem);

/* Sends, waiting at most timeout_ns for room (0: one attempt; SL_FOREVER: no
 * limit). Returns SL_OK, SL_EVICTED (SL_RING), SL_TIMEDOUT (no room in time,
 * also for 0 on a full channel: nothing consumed, no earlier than asked),
 * SL_CLOSED, SL_ENOMEM (as sl_chan_send) or SL_EINVAL. */
SL_API sl_status sl_chan_send_for(sl_chan *ch, const void *elem, uint64_t timeout_ns);

/* The move for pointer channels (elem_size == sizeof(void *)): sends *pp,
 * waiting while full, and on SL_OK or SL_EVICTED sets *pp = NULL. Any other
 * status leaves *pp as it was. SL_EINVAL for NULL ch or pp, or another
 * elem_size. */
SL_API sl_status sl_chan_send_ptr(sl_chan *ch, void **pp);

/* As sl_chan_send_ptr, without waiting: SL_FULL (and *pp as it was) when
 * there is no room now; otherwise as sl_chan_try_send. */
SL_API sl_status sl_chan_try_send_ptr(sl_chan *ch, void **pp);

/* As sl_chan_send_ptr, waiting at most timeout_ns (0: one attempt;
 * SL_FOREVER: no limit): SL_TIMEDOUT (and *pp as it was) when no room came in
 * time, also for 0 on a full channel; otherwise as sl_chan_send_for. */
SL_API sl_status sl_chan_send_ptr_for(sl_chan *ch, void **pp, uint64_t timeout_ns);

/* Overwrite-ring send that hands the displaced message to the caller: returns
 * SL_OK, or SL_EVICTED with the oldest message copied to *evicted (which the
 * caller now owns); SL_CLOSED (nothing consumed); SL_EINVAL for NULL ch, elem
 * or evicted, and on every flavour but SL_RING. Never waits (*): with
 * messages over 8 bytes, only while fewer than SL_RING_SPARE operations hold
 * a slot (above; sluice/ring.h). */
SL_API sl_status sl_chan_send_evict(sl_chan *ch, const void *elem, void *evicted);

/* Receives the oldest message into out, waiting while the channel is empty.
 * Returns SL_OK; SL_CLOSED once the channel is closed and drained; SL_EINVAL
 * for NULL ch or out; SL_LAGGED (a broadcast subscriber that fell behind:
 * nothing received, sluice/broadcast.h). Blocking. */
SL_API sl_status sl_chan_recv(sl_chan *ch, void *out);

/* Receives a message if one is there now. Returns SL_OK, SL_EMPTY (empty:
 * open, or closed while a send that saw it open is still landing, whose
 * message a later call receives), SL_CLOSED (closed and drained), SL_LAGGED
 * (broadcast) or SL_EINVAL. Never blocks. */
SL_API sl_status sl_chan_try_recv(sl_chan *ch, void *out);

/* Receives, waiting at most timeout_ns (0: one attempt; SL_FOREVER: no
 * limit). Returns SL_OK, SL_TIMEDOUT (nothing came in time, also for 0 on an
 * empty channel; no earlier than asked), SL_CLOSED, SL_LAGGED (broadcast) or
 * SL_EINVAL. */
SL_API sl_status sl_chan_recv_for(sl_chan *ch, void *out, uint64_t timeout_ns);

/* Sends up to n messages from the array elems, in order, without waiting;
 * returns how many were sent (0 if closed, full, refused as sl_chan_send's
 * SL_ENOMEM, or on bad input: NULL ch or elems, n == 0, or n * elem_size
 * beyond SIZE_MAX; then nothing is sent). The ones
 * not sent are still the caller's. SL_RING counts displacing sends as sent
 * (the displaced messages go to the drop function). One notify covers the
 * batch. */
SL_API size_t sl_chan_try_send_n(sl_chan *ch, const void *elems, size_t n);

/* Receives up to n messages into the array out, in order, without waiting;
 * returns how many: 0 when the channel is empty, closed and drained, or on
 * bad input (NULL ch or out, n == 0, or n * elem_size beyond SIZE_MAX; then
 * nothing is received). sl_chan_is_closed does not tell the first two apart:
 * a closed channel still answers 0 while a send that saw it open is landing,
 * and that message is received later. sl_chan_try_recv (SL_CLOSED) or
 * sl_chan_recv_n_for with a timeout of 0 (SL_CLOSED, not SL_TIMEDOUT) says
 * "closed and drained". */
SL_API size_t sl_chan_try_recv_n(sl_chan *ch, void *out, size_t n);

/* Batch receive that waits: waits until at least one message is there, then
 * receives up to n of them into the array out (n * elem_size bytes), in
 * order, in one batch, and sets *got to how many. Returns
 *   SL_OK        *got messages (1 .. n) were received;
 *   SL_CLOSED    the channel is closed and drained (*got 0);
 *   SL_LAGGED    a broadcast subscriber fell behind (*got 0; a batch stops
 *                before a lag, so the lag comes first in the next call);
 *   SL_EINVAL    NULL ch, out or got, n == 0, or n * elem_size beyond
 *                SIZE_MAX (*got 0 when got is not NULL); nothing received.
 * It never waits for more than one message: it takes what is there (up to n)
 * as soon as there is anything. A message it receives wakes at most one
 * waiting sender per message, as sl_chan_try_recv_n. Blocking; the batch
 * itself is one sl_chan_try_recv_n, with that flavour's progress guarantee
 * and the receive's acquire ordering for every message in it. For SL_SPSC
 * the caller is the one receiver thread, as for every receive form. */
SL_API sl_status sl_chan_recv_n(sl_chan *ch, void *out, size_t n, size_t *got);

/* As sl_chan_recv_n, waiting at most timeout_ns (0: one attempt; SL_FOREVER:
 * no limit): SL_TIMEDOUT (*got 0) when no message came in time, also for 0 on
 * an empty channel; nothing received, no earlier than asked. */
SL_API sl_status sl_chan_recv_n_for(sl_chan *ch, void *out, size_t n, uint64_t timeout_ns,
                                    size_t *got);

/* Closes ch: idempotent, wakes every waiter. NULL does nothing. Acts as
 * release; a receiver that sees SL_CLOSED sees every message sent before.
 * Wait-free apart from its wakes: one atomic exchange, then a FUTEX_WAKE
 * only where threads sleep; it issues no membarrier (docs/guarantees.md). */
SL_API void sl_chan_close(sl_chan *ch);

/* Whether ch has been closed. false for NULL. */
SL_API bool sl_chan_is_closed(const sl_chan *ch);
/* Messages inside now: a snapshot, never above sl_chan_cap. 0 for NULL. */
SL_API size_t sl_chan_len(const sl_chan *ch);
/* The capacity: exactly opts->capacity for bounded flavours (0 for a
 * rendezvous channel), SIZE_MAX for SL_LIST; 0 for NULL. */
SL_API size_t sl_chan_cap(const sl_chan *ch);
/* The flavour ch was created with (SL_MPMC for a rendezvous channel: tell
 * it by sl_chan_cap == 0); 0 for NULL. */
SL_API sl_flavor sl_chan_flavor(const sl_chan *ch);
/* The message size ch was created with; 0 for NULL. */
SL_API size_t sl_chan_elem_size(const sl_chan *ch);

SL_END_DECLS

#include "sluice/chanfd.h" /* sl_chan_fd, for the typed wrapper's name_fd */

/*
 * SL_CHAN_TYPED(name, T) declares a typed channel `name` over sl_chan:
 * name_new(name **out, const sl_chan_opts *opts) (elem_size = sizeof(T)),
 * name_free, name_close, name_is_closed, name_len, name_cap, name_fd (sl_chan_fd),
 * and name_X for every
 * send and receive form sl_chan_X, taking T * / const T * instead of void *.
 * Usable at file scope in C and C++. T is one type name that `const *` may
 * follow: an array or function type needs a typedef, and an array is best
 * wrapped in a struct (with `typedef int quad[4]`, C before C23 sees
 * `quad *` and `quad const *` as different types, so a pedantic build wants
 * a cast at each send).
 */
#if defined(__GNUC__)
#define SL_TYPED_FN static inline __attribute__((unused))
#else
#define SL_TYPED_FN static inline
#endif
/* `T const *` rather than `const T *`, so that pointer element types
 * (T = int *) give `int *const *`, which an `int **` converts to.
 * Every parameter and local is named sl_*_, in the library's namespace: a
 * program's file-scope name `c` or `t` is not shadowed (-Wshadow), and an
 * element type named like one (`typedef ... out;`) is not hidden by it, which
 * would make sizeof(T) the size of that parameter. */
#define SL_CHAN_TYPED(name, T)                                                      \
    typedef struct name name;                                                       \
    SL_TYPED_FN sl_status name##_new(name **sl_out_, const sl_chan_opts *sl_opts_) \
    {                                                                               \
        sl_chan_opts sl_o_;                                                         \
        if (!sl_opts_) return SL_EINVAL;                                            \
        sl_o_ = *sl_opts_;                                                          \
        sl_o_.elem_size = sizeof(T);                                                \
        return sl_chan_new((sl_chan **)(void *)sl_out_, &sl_o_);                    \
    }                                                                               \
    SL_TYPED_FN void name##_free(name *sl_c_) { sl_chan_free((sl_chan *)(void *)sl_c_); } \
    SL_TYPED_FN void name##_close(name *sl_c_) { sl_chan_close((sl_chan *)(void *)sl_c_); } \
    SL_TYPED_FN bool name##_is_closed(const name *sl_c_)                            \
    { return sl_chan_is_closed((const sl_chan *)(const void *)sl_c_); }             \
    SL_TYPED_FN size_t name##_len(const name *sl_c_)                                \
    { return sl_chan_len((const sl_chan *)(const void *)sl_c_); }                   \
    SL_TYPED_FN size_t name##_cap(const name *sl_c_)                                \
    { return sl_chan_cap((const sl_chan *)(const void *)sl_c_); }                   \
    SL_TYPED_FN sl_status name##_fd(name *sl_c_, sl_chan_end sl_end_, int *sl_fd_)  \
    { return sl_chan_fd((sl_chan *)(void *)sl_c_, sl_end_, sl_fd_); }               \
    SL_TYPED_FN sl_status name##_send(name *sl_c_, T const *sl_e_)                  \
    { return sl_chan_send((sl_chan *)(void *)sl_c_, sl_e_); }                       \
    SL_TYPED_FN sl_status name##_try_send(name *sl_c_, T const *sl_e_)              \
    { return sl_chan_try_send((sl_chan *)(void *)sl_c_, sl_e_); }                   \
    SL_TYPED_FN sl_status name##_send_for(name *sl_c_, T const *sl_e_, uint64_t sl_t_) \
    { return sl_chan_send_for((sl_chan *)(void *)sl_c_, sl_e_, sl_t_); }            \
    SL_TYPED_FN sl_status name##_send_ptr(name *sl_c_, T *sl_pp_)                   \
    { return sl_chan_send_ptr((sl_chan *)(void *)sl_c_, (void **)(void *)sl_pp_); } \
    SL_TYPED_FN sl_status name##_try_send_ptr(name *sl_c_, T *sl_pp_)               \
    { return sl_chan_try_send_ptr((sl_chan *)(void *)sl_c_, (void **)(void *)sl_pp_); } \
    SL_TYPED_FN sl_status name##_send_ptr_for(name *sl_c_, T *sl_pp_, uint64_t sl_t_) \
    {                                                                               \
        return sl_chan_send_ptr_for((sl_chan *)(void *)sl_c_, (void **)(void *)sl_pp_, \
                                    sl_t_);                                         \
    }                                                                               \
    SL_TYPED_FN sl_status name##_send_evict(name *sl_c_, T const *sl_e_, T *sl_ev_) \
    { return sl_chan_send_evict((sl_chan *)(void *)sl_c_, sl_e_, sl_ev_); }         \
    SL_TYPED_FN sl_status name##_recv(name *sl_c_, T *sl_o_)                        \
    { return sl_chan_recv((sl_chan *)(void *)sl_c_, sl_o_); }                       \
    SL_TYPED_FN sl_status name##_try_recv(name *sl_c_, T *sl_o_)                    \
    { return sl_chan_try_recv((sl_chan *)(void *)sl_c_, sl_o_); }                   \
    SL_TYPED_FN sl_status name##_recv_for(name *sl_c_, T *sl_o_, uint64_t sl_t_)    \
    { return sl_chan_recv_for((sl_chan *)(void *)sl_c_, sl_o_, sl_t_); }            \
    SL_TYPED_FN size_t name##_try_send_n(name *sl_c_, T const *sl_e_, size_t sl_n_) \
    { return sl_chan_try_send_n((sl_chan *)(void *)sl_c_, sl_e_, sl_n_); }          \
    SL_TYPED_FN size_t name##_try_recv_n(name *sl_c_, T *sl_o_, size_t sl_n_)       \
    { return sl_chan_try_recv_n((sl_chan *)(void *)sl_c_, sl_o_, sl_n_); }          \
    SL_TYPED_FN sl_status name##_recv_n(name *sl_c_, T *sl_o_, size_t sl_n_, size_t *sl_g_) \
    { return sl_chan_recv_n((sl_chan *)(void *)sl_c_, sl_o_, sl_n_, sl_g_); }       \
    SL_TYPED_FN sl_status name##_recv_n_for(name *sl_c_, T *sl_o_, size_t sl_n_,    \
                                            uint64_t sl_t_, size_t *sl_g_)          \
    { return sl_chan_recv_n_for((sl_chan *)(void *)sl_c_, sl_o_, sl_n_, sl_t_, sl_g_); } \
    typedef int name##_sl_typed_end_ /* swallows the caller's semicolon */

#endif /* SLUICE_CHAN_H */
