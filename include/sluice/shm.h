/*
 * sluice/shm.h — channels between processes: a channel in a shared-memory
 * segment, with the same sl_chan handle and the same sl_chan_* calls.
 *
 * One process creates the channel in a new segment — an anonymous memfd,
 * whose descriptor it passes to others (over a Unix socket with SCM_RIGHTS,
 * or by fork), or a named POSIX shared-memory object — and the others open
 * it by descriptor or by name. Each gets its own sl_chan handle; every
 * sl_chan_* call works on it as on an in-process channel of the same flavour
 * (send, receive, the try and timed forms, the batches, close, len, cap),
 * between any threads of any processes that have it open:
 *
 *   // producer                                   // consumer (after fork)
 *   sl_chan_opts o = {.flavor = SL_SPSC,          sl_chan *ch;
 *                     .elem_size = 64,            sl_chan_shm_open_fd(&ch, fd, &o);
 *                     .capacity = 1024};          while (sl_chan_recv(ch, buf) == SL_OK)
 *   sl_chan *ch;                                      use(buf);
 *   sl_chan_shm_create(&ch, NULL, &o, 0);
 *   int fd = sl_chan_shm_fd(ch);  // pass it on
 *
 * Flavours: SL_SPSC (one sending thread and one receiving thread, in any
 * processes) and SL_MPMC (any number), any message size 1 .. SL_ELEM_MAX.
 * Not SL_LIST (its nodes are allocated and linked by pointers, which mean
 * nothing in another process), not SL_TIMER (a clock read in the receiving
 * process: make one there), and not SL_RING (its displaced messages go to
 * a drop function, which means nothing in another process, and a sender
 * killed holding one of its spare slots would take that slot for good).
 *
 * Messages are byte copies. A receive from a shared SL_MPMC channel of
 * messages over 256 bytes holds a spare slot while it copies the message
 * out; when every spare is held by sends and receives in flight (or its
 * handle could claim no record) it copies the message into the caller's
 * buffer before taking it instead, so such a receive that lost the
 * message to another receiver and then found the channel empty, closed or
 * past its deadline may have written the buffer, which is then not a
 * message. Segments of messages over 256 bytes in a ring over 64 hold
 * capacity + 64 slots; up to 256 bytes, twice the capacity.
 *
 * Pointers mean nothing in another process, so
 * sl_chan_send_ptr and its forms refuse a shared channel with SL_EINVAL, and
 * so do the constructors given a drop function. sl_chan_fd (event-loop
 * descriptors) works on a shared channel: a watcher thread in the process
 * that asked relays changes made in other processes to its eventfds
 * (sluice/chanfd.h).
 *
 * Select. sl_select and sl_select_biased take shared channels mixed with
 * in-process ones, in every form and both directions; a close in any
 * process wakes a selector in any other. Each segment holds a select bell
 * (docs/shm-layout.md, "The select bell"): every send, receive and close of
 * the channel, in any process, rings it while some thread selects on the
 * channel (the channel's `selectors` word; while nobody does, a send or
 * receive pays what it paid before: one load of that word), and a selector
 * that has to sleep waits with futex_waitv(2) on its process's bell and the
 * bell of each distinct shared segment among its cases at once. Without
 * futex_waitv (Linux before 5.16, or more than 127 distinct segments in one
 * select) it sleeps on its own process's bell in spans of at most
 * SL_SHM_LOOK_MS and looks at the segments' bells after each: a change made
 * in another process is then seen up to SL_SHM_LOOK_MS (50 ms) late, never
 * missed. A selector waiting with a shared case also looks again every
 * SL_SHM_LOOK_MS, as any waiter on a shared channel does (below).
 *
 * Lifetime. sl_chan_free unmaps this process's view and closes its
 * descriptor; it never destroys the segment, and it does not check for
 * threads still using the channel (other processes' threads are counted in
 * the same words): the caller must know its own threads are done. The
 * segment, with any messages still in it, lives while any process maps it
 * or holds a descriptor of it: a memfd goes away with its last descriptor
 * and mapping; a named object stays until sl_chan_shm_unlink (and then until
 * its last mapping goes). Close is the channel's: sl_chan_close from any
 * process closes it for all.
 *
 * Security. A segment is created with mode 0600 (only the creating user)
 * unless the caller passes another mode. Opening checks the segment's magic
 * number, its layout version, the flavour and the message size (and the
 * capacity, if the caller gives one) against the caller's expectation, and
 * that the segment is large enough for that geometry; any mismatch is
 * refused with SL_EINVAL. After open, nothing read from the segment is
 * trusted: the geometry (message size, capacity, masks, where the slots are)
 * and every pointer live in the process-local handle, and every index read
 * from the segment is masked or bounded before use. A peer process that
 * writes garbage into the segment can make that channel misbehave (lose,
 * duplicate or invent messages, report full or empty or closed wrongly,
 * wake threads for nothing, keep a call on that channel spinning for up
 * to a few laps of the ring, close it, or make it read /proc for the pids
 * it names) but never makes this process read or write outside the segment or call
 * through a pointer read from it. A memfd is sealed against shrinking and
 * growing, and sl_chan_shm_open_fd refuses any file that is not sealed
 * against shrinking, so no peer can pass one it could truncate (a file
 * with a name, which it could truncate as well, included);
 * a named object cannot be sealed, so a peer with write access that
 * truncates it makes this process's next access fault (SIGBUS): prefer the
 * memfd where peers are not trusted. The layout is
 * docs/shm-layout.md; the ordering argument, docs/guarantees.md ("Across
 * processes").
 *
 * Progress and ordering are the flavour's (sluice/chan.h) between threads
 * of different processes too: the blocking forms park on futexes shared
 * between processes; the timeouts read CLOCK_MONOTONIC, which all processes
 * share.
 *
 * Barriers. Where the kernel allows it (membarrier(2)'s global expedited
 * commands, Linux 4.16), a segment is made in asymmetric mode: the sleeping
 * side of a wait (and a receive deciding SL_CLOSED) issues
 * membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), and an SL_SPSC send or
 * receive then needs no fence. A process whose registration for it is
 * refused (old kernel, seccomp) makes fenced segments, fences on its own
 * sends and receives, and can open an asymmetric segment only if it can
 * still issue that barrier (else SL_EINVAL). The mode is the segment's,
 * fixed by its creator (docs/shm-layout.md, "The barrier mode").
 *
 * A peer that dies. A process may die anywhere — killed inside a send, a
 * receive, a park or a notify — and the others go on with the channel
 * (docs/guarantees.md, "A peer that dies", has the argument per step):
 *  - a message a dying sender was sending is delivered whole or not at all
 *    (it becomes visible in one store or compare-and-swap, after its bytes);
 *  - a message a dying receiver had taken is lost, and only that one: taken
 *    means the step that removes it (SL_MPMC's take of the cell, SL_SPSC's
 *    store of the head), or the receive returned and the process died
 *    before using it; killed before that step, the message stays for the
 *    others. At most one message per receiving thread killed, or, in a
 *    batch receive (sl_chan_recv_n and its forms), the messages that batch
 *    had taken (at most its n);
 *  - a sender's in-flight mark lives in its handle's record in the segment,
 *    with its process's identity (pid and start time, so that a reused pid
 *    is not taken for the dead process): a receiver deciding SL_CLOSED
 *    counts only the marks of living processes, so a dead sender never
 *    keeps the others from seeing SL_CLOSED (SL_MPMC: a thread sending on
 *    a handle marks a flag of its own in the record, with no locked
 *    instruction: ten flags a record, a thread's kept until it exits; a
 *    thread that finds all ten held by living threads marks the record's
 *    shared count; as in one process, a send is not async-signal-safe: a
 *    signal handler must not send on a handle whose send it interrupted);
 *  - SL_MPMC with messages over 8 bytes (the swap form): a sending
 *    process killed while it holds a spare slot (from taking it to giving
 *    back the one its cell handed it) leaves its entry naming it, the slot
 *    it took and the one its cell offered; the look that finds the process
 *    dead gives back whichever of the two is out of circulation, so the
 *    spare table is whole again. So that every entry names a process, a
 *    send on a handle that finds all SL_SHM_SENDERS records held by
 *    living handles is refused (below). A receive of up to 256 bytes holds no
 *    slot; one of more holds a spare while it copies, which comes back as
 *    a sender's does (the message it had taken is lost). (SL_SPSC and
 *    SL_MPMC of 8 bytes or less lose nothing);
 *  - a process killed while parked leaves its registration in the
 *    eventcount's waiter count until the next look finds it dead (within
 *    SL_SHM_LOOK_MS of the death while anyone waits on the channel, finds
 *    it empty or finds it full; the look then takes the registrations its record
 *    counted out again). Until then every send (for a dead receiver) or
 *    receive (for a dead sender) of that channel makes a futex wake system
 *    call with nobody asleep (a try_send and try_recv pair measured 60 ns
 *    before, 1.5 µs after, on one machine). It stays for the segment's
 *    life where the process held no record (all 64 held by living
 *    handles: a wait is not refused for want of one) or died inside the
 *    few instructions between the two counts of its registration;
 *  - a process killed while selecting on a shared channel leaves its count
 *    in the channel's `selectors` word: from then on every send, receive
 *    and close of that channel takes the select ring's slow path (an
 *    out-of-line call and a load of the segment bell's arm, nanoseconds),
 *    and the first one after an arm it left makes one futex wake system
 *    call; nobody waits on it;
 *  - a notify lost with a sender killed between moving the epoch and the
 *    futex wake, and a dead sender's mark after a close, are found by the
 *    waiters themselves: a thread parked on a shared channel wakes every
 *    SL_SHM_LOOK_MS (50 ms) to look again (a few microseconds of CPU each);
 *  - the debug builds' SL_SPSC misuse check is off on a shared channel: its
 *    word, in the segment, would stay set by a killed process, and a peer
 *    may write it at any moment; neither aborts anybody.
 * "The last sender is gone": a handle registered with sl_chan_shm_sender
 * counts as a sender until it is freed or its process dies; once senders
 * were registered and none is left, the channel closes itself (so its
 * receivers get SL_CLOSED once drained, as after sl_chan_close, and no
 * distinct status: a receiver's loop needs no new case). A free closes at
 * once; a death is found by the next look — an empty receive, a full send
 * (single or batch) or a waiter,
 * at most SL_SHM_LOOK_MS after the death plus the time to read /proc once
 * per record (microseconds). Processes are told apart by /proc/<pid>/stat;
 * where /proc does not show the process (not mounted, or mounted with
 * hidepid), only by pid (kill(pid, 0)), and a zombie or a reused pid
 * then keeps a dead sender's mark and registration alive. A reclaim cut
 * short by its process's death is finished by the next look (the record
 * names its reclaimer). A process that calls exec without freeing its
 * handles is the same process (same pid and start time): its records, and
 * its registration, last until it exits. A process whose main thread has
 * exited while other threads run is alive. A pid read in another pid (or
 * time) namespace names another process, so only the processes in the
 * segment's creator's namespaces look for deaths, and only of processes in
 * them: a process in other namespaces (a container, a sandbox with its own
 * pid namespace) may open and use the segment, is never taken for dead,
 * and its death goes unfound (its marks and its registration stay, as
 * where /proc cannot tell). A process whose /proc shows another pid
 * namespace than its own is told apart, and tells others apart, by pid
 * alone. Unregistered handles never close the channel.
 * "The last receiver is gone" is the mirror, by the same mechanism: a
 * handle registered with sl_chan_shm_receiver counts as a receiver until
 * it is freed or its process dies; once receivers were registered and none
 * is left, the channel closes itself, so a sender blocked on a full channel
 * (or parked, or selecting) gets SL_CLOSED within SL_SHM_LOOK_MS of the
 * death, and a try_send on the full channel once a look has found it (a
 * full send looks as an empty receive does). The messages inside stay
 * receivable by any handle still there (an unregistered one, or a new
 * one). A handle may hold both roles.
 */
#ifndef SLUICE_SHM_H
#define SLUICE_SHM_H

#include "sluice/chan.h"

SL_BEGIN_DECLS

/* Creates a channel in a new shared-memory segment and returns this
 * process's handle in *out. name NULL: an anonymous memfd (sealed against
 * resizing), whose descriptor sl_chan_shm_fd gives. Otherwise a named POSIX
 * shared-memory object (shm_open(3): "/" and 1 to 254 characters with no
 * other "/"; any other name is refused, by the open and the unlink too,
 * though some C libraries' shm_open takes more forms), created
 * exclusively: an existing name is refused. mode: the
 * segment's permission bits; 0 means 0600. opts as for sl_chan_new, with
 * flavor SL_SPSC or SL_MPMC and no drop function.
 * Returns SL_OK; SL_EINVAL for NULL out or opts, a flavour other than
 * SL_SPSC or SL_MPMC, a drop function, elem_size 0 or above SL_ELEM_MAX,
 * capacity 0 or above 2^40 (SL_MPMC over 8 bytes: above 2^27 - 1 up to 256
 * bytes a message, 2^28 - 66 above, so that a held spare can name its
 * slot) or a segment size that overflows, mode with bits
 * beyond 0777, a bad name or one that exists or may not be created (errno
 * says which); SL_ENOMEM when the system is out of memory or descriptors,
 * or the segment's pages cannot be had (a full /dev/shm): every page is
 * reserved here, so no process meets a missing one (SIGBUS) later.
 * Nothing is left behind on failure (a named object made is unlinked).
 * Not concurrent with an open of the same name (open after this returns). */
SL_API sl_status sl_chan_shm_create(sl_chan **out, const char *name, const sl_chan_opts *opts,
                                    unsigned mode);

/* Opens the channel in the segment of descriptor fd (a memfd received over
 * a Unix socket, or inherited) and returns this process's handle in *out;
 * the handle keeps its own duplicate of fd, so the caller may close fd.
 * expect: the flavour and message size the caller requires, and capacity
 * (0: any); its drop must be NULL.
 * Returns SL_OK; SL_EINVAL for NULL out or expect, a bad descriptor, a
 * segment that is not a sluice channel (magic), of another layout version,
 * flavour or message size than expected, of another capacity where one is
 * expected, or smaller than its geometry needs, or a drop function, or in
 * asymmetric barrier mode while this process cannot issue
 * membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) (see "Barriers" above), or
 * a file that is not sealed against shrinking (F_SEAL_SHRINK; errno
 * EPERM): whoever passed it could truncate it under this process's
 * mapping. Every memfd sl_chan_shm_create makes is sealed; a named object
 * cannot be, so its descriptor is refused too: open it by name
 * (sl_chan_shm_open);
 * SL_ENOMEM when out of memory or descriptors. */
SL_API sl_status sl_chan_shm_open_fd(sl_chan **out, int fd, const sl_chan_opts *expect);

/* sl_chan_shm_open_fd for the named object `name` (made by
 * sl_chan_shm_create), opened read-write, less the seal, which a named
 * object cannot have (see "Security" above): SL_EINVAL also for a name not
 * of the create's form, or one that does not exist or the caller may not
 * open (errno says which). */
SL_API sl_status sl_chan_shm_open(sl_chan **out, const char *name, const sl_chan_opts *expect);

/* Removes the name of a named segment: later opens by name fail; processes
 * that have it open keep using it, and the segment goes with its last
 * handle. Returns SL_OK, or SL_EINVAL (NULL, a name not of the form above,
 * or no such name: errno). */
SL_API sl_status sl_chan_shm_unlink(const char *name);

/* Registers ch's handle as one of the channel's senders. From the first
 * registration on, the channel closes itself (as sl_chan_close, for every
 * process) once no registered sender is left: each has been freed
 * (sl_chan_free), or its process has died — found by a receiver's empty
 * look or a waiter within SL_SHM_LOOK_MS of the death (see "A peer that
 * dies" above). Registration is per handle and per process: a fork()ed
 * child registers its own. Idempotent.
 * Returns SL_OK; SL_CLOSED when the channel is closed already (also when
 * its last registered sender was found gone just before: registration does
 * not reopen it); SL_EINVAL for NULL or an in-process channel; SL_ENOMEM
 * when SL_SHM_SENDERS living handles hold every sender record. Lock-free
 * apart from the reads of /proc its first call may make to reclaim the
 * records of dead processes. */
SL_API sl_status sl_chan_shm_sender(sl_chan *ch);

/* Registers ch's handle as one of the channel's receivers: the mirror of
 * sl_chan_shm_sender. From the first registration on, the channel closes
 * itself (as sl_chan_close, for every process: its senders then get
 * SL_CLOSED, the messages inside stay receivable) once no registered
 * receiver is left: each has been freed (sl_chan_free: at once), or its
 * process has died — found by a waiter (a blocked, parked or selecting
 * sender), a full send or an empty receive within SL_SHM_LOOK_MS of the
 * death (see "A peer that dies" above). Per handle and per process (a
 * fork()ed child registers its own); idempotent; a handle may also be a
 * registered sender (one record holds both).
 * Returns SL_OK; SL_CLOSED when the channel is closed already (registration
 * does not reopen it); SL_EINVAL for NULL or an in-process channel;
 * SL_ENOMEM when SL_SHM_SENDERS living handles hold every record. Progress
 * as sl_chan_shm_sender's. Ordering: the decision that the last receiver
 * is gone is a compare-and-swap on a word each registration moves after
 * setting its role, so either that decision sees the registration (and
 * does not close) or the registration sees the decision (SL_CLOSED). */
SL_API sl_status sl_chan_shm_receiver(sl_chan *ch);

/* The most handles that send into, wait on, or register with one shared
 * channel at once (living processes' handles; a dead process's record is
 * reclaimed; a receiving handle holds a record from its first wait, for its
 * parked count, from sl_chan_shm_receiver, or, with SL_MPMC messages over
 * 256 bytes, from its first receive that finds a message, to name the
 * spare it holds), and how often a dead sender
 * or receiver is looked for, in milliseconds (docs/shm-layout.md).
 * A handle claims its record at its first send; when every record is held
 * by a living handle, the send is refused: sl_chan_send, sl_chan_try_send,
 * sl_chan_send_for and a select's send case return SL_ENOMEM (SL_CLOSED
 * once the channel is closed),
 * sl_chan_try_send_n returns 0, nothing is consumed, and the handle's next
 * send tries again (it succeeds once a record is freed, or once a look
 * finds a holder dead: at most once every SL_SHM_LOOK_MS while refused).
 * Every message in flight thus has a record to answer for its in-flight
 * mark and for the spare slot it holds, so a killed sender never leaves
 * either behind for good. A wait or a receive is not refused: a waiter with
 * no record goes uncounted in its record (a death then leaves a wake-up for
 * nobody per notify), and a receive over 256 bytes copies first. */
#define SL_SHM_SENDERS 64
#define SL_SHM_LOOK_MS 50

/* The descriptor of ch's segment, owned by ch (closed by sl_chan_free):
 * send it over a Unix socket (SCM_RIGHTS duplicates it) or dup it. -1 for
 * NULL or an in-process channel. Wait-free. */
SL_API int sl_chan_shm_fd(const sl_chan *ch);

/* The typed form: after SL_CHAN_TYPED(name, T) (sluice/chan.h),
 * SL_CHAN_SHM_TYPED(name, T) adds name_shm_create, name_shm_open and
 * name_shm_open_fd, the calls above with elem_size sizeof(T) (the opts'
 * elem_size is ignored, as in name_new); every other name_* call works on
 * the result, name_shm_fd gives the descriptor, name_shm_sender registers a
 * sender and name_shm_receiver a receiver. Parameters are named sl_*_, as in
 * SL_CHAN_TYPED and for the same reasons. */
#define SL_CHAN_SHM_TYPED(name, T)                                                   \
    SL_TYPED_FN sl_chan_opts name##_shm_opts_(const sl_chan_opts *sl_opts_)          \
    {                                                                                \
        sl_chan_opts sl_o_ = *sl_opts_;                                              \
        sl_o_.elem_size = sizeof(T);                                                 \
        return sl_o_;                                                                \
    }                                                                                \
    SL_TYPED_FN sl_status name##_shm_create(name **sl_out_, const char *sl_name_,    \
                                            const sl_chan_opts *sl_opts_,            \
                                            unsigned sl_mode_)                       \
    {                                                                                \
        sl_chan_opts sl_o_;                                                          \
        if (!sl_opts_) return SL_EINVAL;                                             \
        sl_o_ = name##_shm_opts_(sl_opts_);                                          \
        return sl_chan_shm_create((sl_chan **)(void *)sl_out_, sl_name_, &sl_o_, sl_mode_); \
    }                                                                                \
    SL_TYPED_FN sl_status name##_shm_open(name **sl_out_, const char *sl_name_,      \
                                          const sl_chan_opts *sl_expect_)            \
    {                                                                                \
        sl_chan_opts sl_o_;                                                          \
        if (!sl_expect_) return SL_EINVAL;                                           \
        sl_o_ = name##_shm_opts_(sl_expect_);                                        \
        return sl_chan_shm_open((sl_chan **)(void *)sl_out_, sl_name_, &sl_o_);      \
    }                                                                                \
    SL_TYPED_FN sl_status name##_shm_open_fd(name **sl_out_, int sl_fd_,             \
                                             const sl_chan_opts *sl_expect_)         \
    {                                                                                \
        sl_chan_opts sl_o_;                                                          \
        if (!sl_expect_) return SL_EINVAL;                                           \
        sl_o_ = name##_shm_opts_(sl_expect_);                                        \
        return sl_chan_shm_open_fd((sl_chan **)(void *)sl_out_, sl_fd_, &sl_o_);     \
    }                                                                                \
    SL_TYPED_FN int name##_shm_fd(const name *sl_c_)                                 \
    { return sl_chan_shm_fd((const sl_chan *)(const void *)sl_c_); }                 \
    SL_TYPED_FN sl_status name##_shm_sender(name *sl_c_)                             \
    { return sl_chan_shm_sender((sl_chan *)(void *)sl_c_); }                         \
    SL_TYPED_FN sl_status name##_shm_receiver(name *sl_c_)                           \
    { return sl_chan_shm_receiver((sl_chan *)(void *)sl_c_); }                       \
    typedef int name##_shm_typed_ /* so that the use takes a semicolon */

SL_END_DECLS

#endif /* SLUICE_SHM_H */
