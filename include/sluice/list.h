/*
 * sluice/list.h — the raw unbounded multi-producer multi-consumer list (SL_LIST).
 *
 * An unbounded FIFO of fixed-size messages for any number of producers and
 * consumers, with no blocking operations: the embeddable form under the
 * SL_LIST channel. Messages live in linked segments of many slots: one
 * allocation per segment, never one per message.
 *
 *   | operation               | may run concurrently with         |
 *   |-------------------------|-----------------------------------|
 *   | try_push, push_n        | everything except init/destroy    |
 *   | try_pop, pop_n          | everything except init/destroy    |
 *   | len                     | everything except init/destroy    |
 *   | init, destroy           | nothing                           |
 *
 * Algorithm: the segment-array queue of Correia & Ramalhete (FAAArrayQueue,
 * 2016), with message bytes stored inline. A push claims a slot of the tail
 * segment (a CAS of its counter, standing back for a moment after losing
 * one to another thread), writes the bytes, and publishes them with a CAS
 * of the slot's state from EMPTY to FULL. A pop claims a slot of the head
 * segment the same way and takes its state: if it was FULL the message is
 * the pop's; if it was still EMPTY the slot is poisoned and the late push
 * retries on a later slot. Nobody ever waits for another thread.
 *
 * Progress: every operation is lock-free; a thread stopped anywhere delays
 * nobody's operation. In steady state (the list neither growing past its
 * segments nor a thread new to lists) an operation takes no lock, creates no
 * thread and calls no library function but memcpy, for a message of a size
 * other than 4, 8, 16 or 64 bytes (those are plain moves). The exceptions,
 * exactly:
 *   - Growing: a push that finds the last segment full links a new one. It
 *     reuses the list's spare segment if there is one, else calls
 *     aligned_alloc (whose own progress is the allocator's). try_push fails
 *     only with SL_ENOMEM, when that allocation fails and a second look,
 *     after it failed, finds the list still unable to grow: no segment
 *     linked by another producer meanwhile (the push goes on into one
 *     that was) and no spare put back. Nothing is consumed.
 *   - A thread's first operation on any list takes a reclamation record:
 *     reuses one that an exited thread gave back, or calls aligned_alloc
 *     for a new one, and calls pthread_setspecific so that the record is
 *     given back when the thread exits; the first such call in the process
 *     also calls pthread_key_create and pthread_atfork. If any of these
 *     fails, the operation still runs, through a shared counter, and frees
 *     nothing while it runs; the thread's next operation tries again
 *     (pthread_once, the walk of the records, aligned_alloc: every
 *     operation of a thread that never gets one). So does every operation
 *     of a thread whose
 *     record has already been given back at its exit (a list used from
 *     another thread-specific destructor): a record taken then could
 *     outlive the destructor rounds and never be given back. Not covered:
 *     a thread whose first operation on any list (or send on an SL_LIST or
 *     SL_MPMC channel) comes in glibc's last round of destructors
 *     (PTHREAD_DESTRUCTOR_ITERATIONS), from the destructor of a key
 *     created after the library's: that round has passed the library's
 *     key, so the record it takes is never given back (one record, a
 *     cache line, kept for good per such thread; every reclaiming scan
 *     reads it).
 *   - Reclaiming: a pop that moves past a used-up segment (once per segment),
 *     a pop that finds the list empty, and a push that grows with no spare
 *     segment to reuse may read every thread's record and return unused
 *     segments to the allocator with free() (one thread at a time; the
 *     others skip it). When the records show it may free something it
 *     first calls membarrier(2) (MEMBARRIER_CMD_PRIVATE_EXPEDITED, where the
 *     kernel allows it: the heavy side of the barrier that lets every
 *     operation announce itself with a plain store).
 * Order: linearizable FIFO, hence FIFO per producer.
 * Memory: segments that every consumer has passed are reclaimed with the
 * library's own epoch scheme (no registration, no helper thread): the pop
 * that moves past a segment frees it, and any older one, once no operation
 * that entered before the move is still running; the first such segment
 * is kept as the list's spare for the next growth. A thread stopped inside
 * an operation delays the freeing (not the operations) of every list until
 * it runs again. After a burst is drained, sl_list_segments() is back to at
 * most two (the head segment and the spare) once a pop by a thread with a
 * record has found the list empty while no other operation was running (in
 * a fork's child, one more: a segment the parent was freeing at the fork;
 * and a segment each other parent thread held in a growing push, the spare
 * or a fresh allocation, is lost to the child, not freed even by
 * sl_list_destroy).
 * Not async-signal-safe: a thread's operations share its one reclamation
 * record (SL_LIST and SL_MPMC channels' sends also mark themselves in flight
 * there), so a signal handler must not operate on any list, or send on such
 * a channel, while the thread it interrupted may be inside one.
 */
#ifndef SLUICE_LIST_H
#define SLUICE_LIST_H

#include "sluice/base.h"
#include "sluice/status.h"

SL_BEGIN_DECLS

typedef struct sl_list_seg sl_list_seg; /* private */

typedef struct sl_list {
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(sl_list_seg *) head; /* consumers' segment */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(sl_list_seg *) tail; /* producers' segment */
    /* Read-only after init. */
    SL_ALIGNAS(SL_CACHELINE) size_t elem_size;
    size_t seg_slots;                     /* slots per segment */
    /* A segment's slots in groups: each group holds the states of its
     * group_slots slots, then their messages (channels/list.c). */
    size_t group_slots;
    size_t group_bytes;
    size_t word_bytes;                    /* a message's place: elem_size in 8-byte words */
    uint64_t group_recip;                 /* 2^32 / group_slots, rounded down, + 1 */
    /* Written about once per segment: growth and reclamation. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(sl_list_seg *) oldest; /* first not yet freed */
    SL_ATOMIC(sl_list_seg *) spare;       /* an empty segment kept for growth */
    SL_ATOMIC(uint64_t) segs_live;        /* allocated and not yet freed */
    SL_ATOMIC(unsigned) reclaiming;       /* 2g + 1 while a thread of fork generation g frees segments */
} sl_list;

/* Initialises q for messages of elem_size bytes. Returns SL_OK; SL_EINVAL for
 * NULL q or elem_size 0 or above SL_ELEM_MAX; SL_ENOMEM. */
SL_API sl_status sl_list_init(sl_list *q, size_t elem_size);

/* Frees every segment (unlinked ones and the spare included); messages
 * inside are discarded unseen. NULL is fine. No other thread may use q. */
SL_API void sl_list_destroy(sl_list *q);

/* Appends one message. Returns SL_OK, SL_ENOMEM (a new segment was needed,
 * none could be allocated, and no other producer had linked one by the time
 * the allocation failed; nothing consumed), or SL_EINVAL for NULL q or
 * elem. Lock-free (allocates only to grow, see above); acts as release, and
 * the publishing step is a seq_cst RMW. */
SL_API sl_status sl_list_try_push(sl_list *q, const void *elem);

/* Moves the oldest message into out. Returns SL_OK, SL_EMPTY, or SL_EINVAL
 * for NULL q or out. Lock-free;
 * acts as acquire (pairs with the push). */
SL_API sl_status sl_list_try_pop(sl_list *q, void *out);

/* Appends up to n messages in order; returns how many (short only on
 * SL_ENOMEM; 0 for NULL q or elems). Lock-free. */
SL_API size_t sl_list_push_n(sl_list *q, const void *elems, size_t n);
/* Pops up to n messages in order; returns how many (0 for NULL q or out).
 * Lock-free. */
SL_API size_t sl_list_pop_n(sl_list *q, void *out, size_t n);

/* Messages inside now: a snapshot; 0 exactly when empty at rest. 0 for NULL. */
SL_API size_t sl_list_len(const sl_list *q);

/* Segments allocated and not yet freed (including the spare and unlinked
 * ones no thread has been able to free yet): what the list costs in
 * memory, in units of segments. 0 for NULL. */
SL_API size_t sl_list_segments(const sl_list *q);

SL_END_DECLS

#endif /* SLUICE_LIST_H */
