/*
 * channels/shm.c — channels in shared-memory segments (sluice/shm.h): the
 * segment's layout, its creation and validation, and the mapping that puts
 * a process-local handle in front of it.
 *
 * The handle is a struct sl_chan whose shared part (from `hdr` on,
 * chan_impl.h) IS the segment: the segment is mapped at
 * (char *)ch + SL__CHAN_SHARED_AT, and the process-local part sits in a
 * private anonymous page just below it. So the façade reaches `closed`, the
 * eventcounts, the in-flight marks and the queue's counters at the same
 * offsets as in an in-process channel — no pointer to follow, no test of
 * which kind of channel it is — and the shared flavours' adapters
 * (chan_flavors.h) take the queue's geometry from the local part, filled in
 * here from values validated once, never from the segment.
 *
 * The layout (docs/shm-layout.md): the shared part of struct sl_chan, whose
 * offsets the assertions below pin, then from SHM_DATA_AT the queue's
 * storage: SL_SPSC's slots; SL_MPMC's used ring, then (messages over 8
 * bytes, the swap form) its spare table and capacity + spares slots. A ring
 * of cells has one_lap cells (the power of two above the capacity), not
 * just capacity: a position read from a corrupted counter, masked by
 * one_lap - 1, then still lands on a cell.
 */
#include "chan_impl.h"
#include "internal/testing.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/sysops.h"
#include "sluice/shm.h"

#define SHM_MAGIC 0x4D48534349554C53ull /* "SLUICSHM", little-endian */
#define SHM_VERSION 15u
#define SHM_CTL_AT ((size_t)72)    /* the peer-death control words */
#define SHM_BELL_AT ((size_t)88)   /* the select bell (version 4) */
#define SHM_NS_AT ((size_t)104)    /* the creator's namespaces (version 14) */
#define SHM_RECS_AT ((size_t)2048) /* the records (senders, waiters, roles) */
#define SHM_RECS SL_SHM_SENDERS
#define SHM_DATA_AT (SHM_RECS_AT + SHM_RECS * (size_t)64) /* the storage */
/* How often waiters, empty receives and full sends look for "every
 * registered sender (receiver) is gone", and for a dead sender's mark after
 * a close. */
#define SHM_LOOK_NS sl__shm_look_ns
uint64_t sl__shm_look_ns = (uint64_t)SL_SHM_LOOK_MS * 1000 * 1000; /* internal/testing.h */
#define SHM_CAP_MAX ((uint64_t)1 << 40)

/* Offsets in the segment, as docs/shm-layout.md gives them: a change here
 * is a new layout version. */
#define AT(field) (offsetof(struct sl_chan, field) - SL__CHAN_SHARED_AT)
_Static_assert(SL__CHAN_SHARED_AT % SL_CACHELINE == 0, "the shared part starts a line");
_Static_assert(AT(hdr.magic) == 0 && AT(hdr.version) == 8 && AT(hdr.flavor) == 12 &&
                   AT(hdr.elem_size) == 16 && AT(hdr.capacity) == 24 && AT(hdr.size) == 32,
               "shm layout: header");
_Static_assert(AT(closed) == 40 && AT(not_empty) == 44 && AT(not_full) == 52 &&
                   AT(selectors) == 60 && AT(drained) == 64,
               "shm layout: control words");
_Static_assert(AT(in_flight) == 128 && sizeof(((sl_chan *)0)->in_flight[0]) == 64,
               "shm layout: in-flight marks (unused since version 10: every send has a record)");
_Static_assert(AT(q.spsc.prod.index) == 1152 && AT(q.spsc.prod.peer_cache) == 1160 &&
                   AT(q.spsc.cons.index) == 1216 && AT(q.spsc.cons.peer_cache) == 1224,
               "shm layout: SL_SPSC counters");
/* free_head and free_tail (1160, 1224) are unused in a segment since layout
 * version 9: a shared SL_MPMC has no indexed form. */
_Static_assert(AT(q.mpmc.tail) == 1152 && AT(q.mpmc.free_head) == 1160 &&
                   AT(q.mpmc.head) == 1216 && AT(q.mpmc.free_tail) == 1224,
               "shm layout: SL_MPMC counters");
/* The swap form's starved word sits on the producers' line, in the raw
 * queue's own field: the pointer and sizes before it (1168..1191) are
 * unused in a segment (the handle's view has its own, validated). */
_Static_assert(AT(q.mpmc.starved) == 1192, "shm layout: SL_MPMC starved word");
_Static_assert(AT(q.spsc) + sizeof(sl_spsc) <= SHM_RECS_AT &&
                   AT(q.mpmc) + sizeof(sl_mpmc) <= SHM_RECS_AT,
               "shm layout: the counters end before the storage");

/* A segment's geometry, computed here from (flavour, message size,
 * capacity) alone: where the storage is, and how large the segment must be. */
typedef struct geometry {
    sl_flavor flavor;
    size_t elem_size;
    size_t capacity;
    size_t storage;  /* SL_SPSC: slots (a power of two); SL_MPMC: one_lap */
    size_t spares_at; /* SL_MPMC over 8 bytes (the swap form): the spare table; 0 otherwise */
    size_t spares;   /* its entries: shm_spares() */
    size_t slot_count; /* slots: capacity + spares (swap form); 0 direct */
    size_t slots_at; /* the slots; 0 for SL_MPMC direct */
    size_t size;     /* bytes the segment needs */
} geometry;

static size_t line_up(size_t n) { return (n + SL_CACHELINE - 1) & ~(size_t)(SL_CACHELINE - 1); }

/* The swap form's spare entries: one per cell up to SL__MPMC_SWAP_MAX bytes
 * a message; above, at most SHM_LARGE_SPARES, so that a channel of large
 * messages does not double its segment (a push finding every spare held by
 * pushes in progress says SL_FULL, as at any size: docs/guarantees.md). */
#define SHM_LARGE_SPARES 64u

static size_t shm_spares(uint64_t elem_size, uint64_t capacity)
{
    if (elem_size <= SL__MPMC_SWAP_MAX || capacity <= SHM_LARGE_SPARES)
        return (size_t)capacity;
    return SHM_LARGE_SPARES;
}

/* false for a geometry sluice does not make: the caller's mismatch, or a
 * segment header that no creator wrote. The limits keep every size below
 * 2^60, so nothing here overflows. */
static bool geometry_of(geometry *g, uint64_t flavor, uint64_t elem_size, uint64_t capacity)
{
    if ((flavor != SL_SPSC && flavor != SL_MPMC) || elem_size == 0 || elem_size > SL_ELEM_MAX ||
        capacity == 0 || capacity > SHM_CAP_MAX)
        return false;
    *g = (geometry){.flavor = (sl_flavor)flavor, .elem_size = elem_size, .capacity = capacity};
    if (flavor == SL_SPSC) {
        g->storage = sl__spsc_storage(elem_size, capacity);
        g->slots_at = SHM_DATA_AT;
        g->size = g->slots_at + g->storage * elem_size;
        return true;
    }
    g->storage = sl__cellring_lap(capacity);
    g->size = SHM_DATA_AT + g->storage * sizeof(sl_mpmc_cell);
    if (elem_size > sizeof(uint64_t)) {
        /* The swap form at every size: whole words per slot; a held entry
         * names a slot in 28 bits (cellring.h). */
        g->spares = shm_spares(elem_size, capacity);
        if (capacity + g->spares > SL__HELD_SLOTS_MAX)
            return false;
        g->spares_at = line_up(g->size);
        g->slots_at = line_up(g->spares_at + g->spares * sizeof(uint64_t));
        g->slot_count = capacity + g->spares;
        g->size = g->slots_at + g->slot_count * sl__mpmc_swap_stride(elem_size);
    }
    return true;
}

/* The handle's local part, from g alone: the geometry the adapters use. */
static void fill_local(sl_chan *ch, const geometry *g)
{
    unsigned char *seg = (unsigned char *)ch + SL__CHAN_SHARED_AT;
    ch->flavor = g->flavor == SL_SPSC ? SL__SPSC_SHARED : SL__MPMC_SHARED;
    ch->elem_size = g->elem_size;
    ch->capacity = g->capacity;
    ch->drop = NULL;
    ch->drop_ctx = NULL;
    if (g->flavor == SL_SPSC) {
        ch->geom.spsc = (sl__spsc_geom){seg + g->slots_at, g->storage - 1, g->capacity,
                                        g->elem_size};
        return;
    }
    sl_mpmc *m = &ch->q.mpmc;
    sl__mpmc_view *v = &ch->geom.mpmc;
    memset(v, 0, sizeof *v);
    v->used = (sl__cellring){(sl_mpmc_cell *)(seg + SHM_DATA_AT), &m->head, &m->tail,
                             g->storage, g->capacity};
    v->elem_size = g->elem_size;
    if (g->slots_at) {
        v->slots = seg + g->slots_at;
        v->slot_count = g->slot_count;
    }
    if (g->spares_at) {
        v->spares = (SL_ATOMIC(uint64_t) *)(void *)(seg + g->spares_at);
        v->spare_count = g->spares;
        v->spare_mask = sl__cellring_lap(g->spares) - 1;
        v->starved = &m->starved;
        v->wake = &ch->not_full;
    }
    /* Relaxed: until the handle claims a record (sl__shm_claim_mark). */
    atomic_store_explicit(&v->holder, SL__HELD_NOBODY, memory_order_relaxed);
}

/* ---- the select bell (docs/shm-layout.md, "The select bell") -------------
 * Selectors in every process that has the segment mapped wait on it (with
 * futex_waitv beside their process's bell, select.c); every send, receive
 * and close of the channel rings it while `selectors` is not zero
 * (sl__chan_ring_watchers), with select's armed-bell protocol. A peer's
 * garbage in its words costs wake-ups: a set arm or a raised waiter count
 * makes a ring issue a futex wake; a cleared arm or shared mark delays a
 * selector until its periodic look (sl__shm_ready_at). */
_Static_assert(SHM_BELL_AT >= SHM_CTL_AT + 16 && SHM_BELL_AT % 4 == 0 &&
                   SHM_BELL_AT + sizeof(sl__shm_bell) <= AT(in_flight),
               "shm layout: the select bell sits after the control words, before the marks");
_Static_assert(offsetof(sl__shm_bell, ev.epoch) == 0 && offsetof(sl__shm_bell, ev.waiters) == 4 &&
                   offsetof(sl__shm_bell, armed) == 8,
               "shm layout: the select bell's words");
_Static_assert(SL__EVENT_SET_POLL_NS == (uint64_t)SL_SHM_LOOK_MS * 1000 * 1000,
               "a selector without futex_waitv looks as often as a shared channel's waiter");

sl__shm_bell *sl__shm_bell_of(sl_chan *ch)
{
    return (sl__shm_bell *)((unsigned char *)ch + SL__CHAN_SHARED_AT + SHM_BELL_AT);
}

void sl__shm_ring(sl_chan *ch)
{
#ifdef SL_MUTANT_SHM_SELECT_NO_BELL
    return; /* planted bug: a change never rings the segment's bell */
#endif
    sl__shm_bell *b = sl__shm_bell_of(ch);
    sl__bell_ring(&b->ev, &b->armed);
}

/* The creator's initial state of the shared part (a fresh segment reads as
 * zeros): the header, the eventcounts marked shared, the queue empty. The
 * magic goes last, released: an opener that sees it sees the rest. */
static void init_shared(sl_chan *ch, const geometry *g)
{
    ch->hdr.version = SHM_VERSION;
    ch->hdr.flavor = (uint32_t)g->flavor;
    ch->hdr.elem_size = g->elem_size;
    ch->hdr.capacity = g->capacity;
    ch->hdr.size = g->size;
    sl__event_init_shared(&ch->not_empty);
    sl__event_init_shared(&ch->not_full);
    sl__event_init_shared(&sl__shm_bell_of(ch)->ev); /* not armed: zero */
    if (g->flavor == SL_MPMC) {
        sl__mpmc_view *v = &ch->geom.mpmc;
        sl__cellring_init(v->used.cells, g->capacity, 0, false);
        if (v->spares)
            sl__mpmc_swap_fill(v->used.cells, g->capacity, v->spares, g->spares);
    }
    /* Release: everything above before an opener's acquire of the magic. */
    atomic_store_explicit(&ch->hdr.magic, SHM_MAGIC, memory_order_release);
}

/* ---- a peer that dies -------------------------------------------------------
 * docs/guarantees.md, "A peer that dies", has the argument; the words are
 * docs/shm-layout.md's "Sender records" and the control words at 72, 80.
 *
 * Every handle that sends, waits or registers claims a record: an owner
 * word naming its process ({start time, pid}: a pid reused by a later
 * process does not match), its in-flight mark, and the roles it registered
 * (ROLE_SENDER, ROLE_RECEIVER). A receiver deciding SL_CLOSED counts only
 * the marks of living owners; a look every SHM_LOOK_NS, made by an empty
 * receive, a full send or a waiter, reclaims the records of dead owners and
 * closes the channel once a role was registered and no handle of that role
 * is left (close_if_gone: senders and receivers alike). Whoever reclaims a
 * record, the look or not, decides for the roles it held (reclaim_all), as
 * a handle's free does for its own (drop_record). */
#define ROLE_SENDER 1u   /* sl_chan_shm_sender */
#define ROLE_RECEIVER 2u /* sl_chan_shm_receiver */
#define ROLES (ROLE_SENDER | ROLE_RECEIVER) /* other bits are a peer's garbage */
/* roles_ever's other bits: a count of registrations (bits 2-30), moved by
 * each, and EVER_CLOSING (bit 31), set by the decision that a role is gone.
 * The decision is a CAS from the word it read before its look at the
 * records, so a registration that came in between fails it (and the look
 * is made again), and one that comes after it reads EVER_CLOSING. */
#define EVER_UNIT (1u << 2)
#define EVER_CLOSING (1u << 31)
#define EVER_COUNT (EVER_CLOSING - EVER_UNIT)

typedef struct shm_rec {
    SL_ATOMIC(uint32_t) marks;  /* the in-flight mark (flag or count) */
    SL_ATOMIC(uint32_t) roles;  /* the registered roles: ROLE_SENDER | ROLE_RECEIVER */
    SL_ATOMIC(uint64_t) owner;  /* 0 free; OWNER_BUSY | the reclaimer's identity; else an identity */
    SL_ATOMIC(uint32_t) parked[2]; /* the owner's threads registered on not_empty, not_full */
    /* SL_MPMC: a flag per sending thread of the owner (version 11; shm_lane.c).
     * In the record's line, as the count was: the owner's threads share it. */
    SL_ATOMIC(uint32_t) lanes[SL__SHM_LANES];
} shm_rec;
_Static_assert(sizeof(shm_rec) == 64, "a record per line");
_Static_assert(offsetof(shm_rec, marks) == 0 && offsetof(shm_rec, lanes) == 24,
               "shm layout: the count on the record's line boundary, lanes off it (sl__shm_is_lane)");

typedef struct shm_ctl {
    SL_ATOMIC(uint64_t) next_look;   /* CLOCK_MONOTONIC ns of the next look */
    SL_ATOMIC(uint32_t) roles_ever;  /* each role's bit, once a handle registered it */
    SL_ATOMIC(uint32_t) barriers;    /* the barrier mode (SHM_FENCED, SHM_ASYMMETRIC) */
} shm_ctl;
_Static_assert(SHM_CTL_AT >= AT(drained) + 4 && SHM_CTL_AT + sizeof(shm_ctl) <= AT(in_flight),
               "shm layout: the control words sit between drained and the marks");
_Static_assert(offsetof(shm_ctl, barriers) == 12, "shm layout: the barrier mode at 84");

/* The creator's pid and time namespaces, as the inode numbers of
 * /proc/self/ns/pid and /proc/self/ns/time (0: unknown; a kernel before
 * 5.6 has no time namespaces). A pid, and a start time, mean one process
 * only within one pid and one time namespace: only a process in the
 * creator's both ("native") judges whether an owner is dead, and only an
 * owner that is native too (owner_dead). Written once before the magic. */
typedef struct shm_ns {
    SL_ATOMIC(uint64_t) pid_ns;
    SL_ATOMIC(uint64_t) time_ns;
} shm_ns;
_Static_assert(SHM_NS_AT >= SHM_BELL_AT + sizeof(sl__shm_bell) && SHM_NS_AT % 8 == 0 &&
                   SHM_NS_AT + sizeof(shm_ns) <= AT(in_flight),
               "shm layout: the namespaces sit after the select bell, before the marks");

#define PID_BITS 22 /* PID_MAX_LIMIT is 2^22 */
/* 40 bits of start time: 348 years of 100 Hz ticks (the top two bits are
 * OWNER_BUSY and OWNER_FOREIGN). */
#define START_MASK (((uint64_t)1 << (62 - PID_BITS)) - 1)
/* The owner is not in the creator's namespaces: no process can tell its
 * pid from another's, so it counts as alive (version 14). */
#define OWNER_FOREIGN ((uint64_t)1 << 62)
/* A record being reclaimed: this bit, and the reclaiming process's identity,
 * so that a reclaim whose process died (killed in a look) is finished by
 * the next one instead of holding the record, its roles and its mark for
 * good (version 7). */
#define OWNER_BUSY ((uint64_t)1 << 63)

SL_ATOMIC(unsigned) sl__shm_gen = 1;

static void register_again(void);
static void read_own_namespaces(void);
static void close_if_gone(sl_chan *ch, uint32_t gone);

/* Threads of a process share a handle: one claims its record, under this
 * lock, which a fork() holds across (a child must not inherit it held). */
static pthread_mutex_t claim_lock = PTHREAD_MUTEX_INITIALIZER;

static void fork_prepare(void) { pthread_mutex_lock(&claim_lock); }

static void fork_parent(void) { pthread_mutex_unlock(&claim_lock); }

static void forked_child(void)
{
    pthread_mutex_unlock(&claim_lock);
    /* Relaxed: the child runs only this thread now. */
    atomic_fetch_add_explicit(&sl__shm_gen, 1u, memory_order_relaxed);
    sl__mpmc_forked_child();
    sl__shm_lanes_forked();
    read_own_namespaces();
    register_again();
}

static void add_fork_handler(void)
{
    read_own_namespaces();
    pthread_atfork(fork_prepare, fork_parent, forked_child);
}

/* A fork()ed child must not mark itself in its parent's record. */
static void watch_forks(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, add_fork_handler);
}

static shm_rec *records(const sl_chan *ch)
{
    return (shm_rec *)((unsigned char *)ch + SL__CHAN_SHARED_AT + SHM_RECS_AT);
}

static shm_ctl *control(const sl_chan *ch)
{
    return (shm_ctl *)((unsigned char *)ch + SL__CHAN_SHARED_AT + SHM_CTL_AT);
}

static shm_ns *namespaces(const sl_chan *ch)
{
    return (shm_ns *)((unsigned char *)ch + SL__CHAN_SHARED_AT + SHM_NS_AT);
}

/* This process's namespaces: read before its first shared channel and
 * again in a fork()ed child (a parent's unshare(CLONE_NEWPID) puts its
 * children, not itself, in a new pid namespace). Relaxed: written only
 * while this process runs one thread, or by every thread with the same
 * values. */
static SL_ATOMIC(uint64_t) own_pid_ns, own_time_ns;
/* Whether the /proc mounted here shows this process's pid namespace (its
 * /proc/self is getpid()). One mounted from an ancestor's (unshare without
 * a /proc of its own, a sandbox that bind-mounts the host's) shows other
 * processes under this namespace's pids: proc_state then knows nothing,
 * and kill(2), which takes pids in this namespace, judges (found by
 * review: a sender read its start time from the host's pid 2 and was
 * taken for dead by a receiver with a /proc of its own). */
static SL_ATOMIC(bool) own_proc;

static bool proc_is_own(void)
{
    char buf[24];
    ssize_t n = readlink("/proc/self", buf, sizeof buf - 1);
    if (n <= 0)
        return false; /* no /proc here: kill(2) judges */
    buf[n] = 0;
    return strtol(buf, NULL, 10) == (long)getpid();
}

static uint64_t ns_inode(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (uint64_t)sb.st_ino : 0;
}

static void read_own_namespaces(void)
{
    atomic_store_explicit(&own_pid_ns, ns_inode("/proc/self/ns/pid"), memory_order_relaxed);
    atomic_store_explicit(&own_time_ns, ns_inode("/proc/self/ns/time"), memory_order_relaxed);
    bool own = proc_is_own();
#ifdef SL_MUTANT_SHM_PROC_OF_ANOTHER
    own = true; /* planted bug: any /proc is believed */
#endif
    atomic_store_explicit(&own_proc, own, memory_order_relaxed);
}

void sl__shm_set_namespaces(uint64_t pid_ns, uint64_t time_ns)
{
    atomic_store_explicit(&own_pid_ns, pid_ns, memory_order_relaxed);
    atomic_store_explicit(&own_time_ns, time_ns, memory_order_relaxed);
}

/* A new segment's namespaces: its creator's. Relaxed: init_shared's
 * release of the magic publishes them. */
static void stamp_namespaces(sl_chan *ch)
{
    shm_ns *ns = namespaces(ch);
    atomic_store_explicit(&ns->pid_ns, atomic_load_explicit(&own_pid_ns, memory_order_relaxed),
                          memory_order_relaxed);
    atomic_store_explicit(&ns->time_ns, atomic_load_explicit(&own_time_ns, memory_order_relaxed),
                          memory_order_relaxed);
}

/* Whether this process is in the segment's creator's namespaces, where the
 * pids and start times in owner words mean what it reads in /proc. */
static bool native_here(const sl_chan *ch)
{
    const shm_ns *ns = namespaces(ch);
    /* Relaxed: written before the magic, which the open acquired. */
    return atomic_load_explicit(&ns->pid_ns, memory_order_relaxed) ==
               atomic_load_explicit(&own_pid_ns, memory_order_relaxed) &&
           atomic_load_explicit(&ns->time_ns, memory_order_relaxed) ==
               atomic_load_explicit(&own_time_ns, memory_order_relaxed);
}

/* What /proc says of pid: -1 gone (or a zombie: dead all the same), 0
 * unknown (no /proc, or one mounted with hidepid, where a missing entry
 * proves nothing: the caller asks kill), 1 alive with its start time in
 * *start. A zombie with threads left (field 20) is a process whose main
 * thread exited while others run: alive (found by review: its record was
 * reclaimed and the channel closed under its sending thread). */
static int proc_state(uint32_t pid, uint64_t *start)
{
    if (!atomic_load_explicit(&own_proc, memory_order_relaxed))
        return 0; /* another namespace's /proc: it tells nothing of pid */
    char path[40], buf[512];
    snprintf(path, sizeof path, "/proc/%u/stat", pid);
    /* open, read and close are cancellation points, and this runs inside
     * sends, receives and reclaims (a record taken for reclaim, a mark
     * set): a cancel here would leave them so for good. */
    int cancel_state;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
    int err = errno;
    if (fd >= 0)
        close(fd);
    pthread_setcancelstate(cancel_state, NULL);
    if (fd < 0)
        return 0;
    if (n < 0 && err == ESRCH)
        return -1; /* gone between the open and the read */
    if (n <= 0)
        return 0; /* a failed read (ENOMEM, EINTR) proves nothing: the caller asks kill */
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command name may hold anything */
    unsigned long long t = 0;
    long threads = 0;
    char state = 0;
    /* state is field 3, num_threads field 20, starttime field 22 (proc(5)) */
    if (!p || sscanf(p + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
                            "%*s %ld %*s %llu", &state, &threads, &t) != 3)
        return 0;
#ifdef SL_MUTANT_SHM_ZOMBIE_LEADER_DEAD
    threads = 1; /* planted bug: a zombie main thread is the whole process */
#endif
    if (state == 'X' || (state == 'Z' && threads <= 1))
        return -1;
    *start = (uint64_t)t & START_MASK;
    return 1;
}

/* This process's identity in ch's segment, as an owner word. */
static uint64_t self_identity(const sl_chan *ch)
{
    uint32_t pid = (uint32_t)getpid();
    uint64_t start = 0;
    (void)proc_state(pid, &start); /* unknown: 0, and only the pid is checked */
    return (start << PID_BITS) | pid | (native_here(ch) ? 0 : OWNER_FOREIGN);
}

static bool reclaiming(uint64_t owner) { return (owner & OWNER_BUSY) != 0; }

/* Whether the owner word names a process that is dead: the record's owner,
 * or, while OWNER_BUSY is set, its reclaimer. Conservative: a process
 * /proc cannot tell about counts as alive unless kill says ESRCH (then a
 * zombie, and a reused pid, count as alive); so does every owner when
 * this process is not in the creator's namespaces, and a foreign owner
 * (shm_ns: its pid names another process, or none, in /proc here). */
static bool owner_dead(const sl_chan *ch, uint64_t owner)
{
#ifndef SL_MUTANT_SHM_FOREIGN_JUDGED /* planted bug when defined: pids read across namespaces */
    if ((owner & OWNER_FOREIGN) || !native_here(ch))
        return false;
#endif
#ifdef SL_MUTANT_SHM_RECLAIMER_DEATH_KEPT
    if (reclaiming(owner))
        return false; /* planted bug: a reclaim whose process died holds the record for good */
#endif
    owner &= ~(OWNER_BUSY | OWNER_FOREIGN);
    uint32_t pid = (uint32_t)(owner & ((1u << PID_BITS) - 1));
    uint64_t start = 0;
    int st = proc_state(pid, &start);
    if (st == 0)
        return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
    return st < 0 || ((owner >> PID_BITS) != 0 && start != owner >> PID_BITS);
}

/* Takes a dead owner's registrations, counted in *parked, out of ev's
 * waiter count: at most what the count holds (a peer's garbage in *parked
 * must not wrap it). */
static void discount(sl_event *ev, SL_ATOMIC(uint32_t) *parked)
{
    /* seq_cst: the updates of `waiters` are in the notify's total order. */
    uint32_t n = atomic_exchange_explicit(parked, 0u, memory_order_seq_cst);
#ifdef SL_MUTANT_SHM_PARKED_KEPT
    n = 0; /* planted bug: a dead process's parked threads stay counted */
#endif
    uint32_t w = atomic_load_explicit(&ev->waiters, memory_order_seq_cst);
    while (n && w && !atomic_compare_exchange_weak_explicit(&ev->waiters, &w, w - (n < w ? n : w),
                                                            memory_order_seq_cst,
                                                            memory_order_seq_cst)) {
    }
}

/* A record's in-flight marks: the count (or SL_SPSC's flag) and the lanes. */
static void clear_marks(shm_rec *r)
{
    /* Relaxed: the owner's release store of 0 that follows orders them. */
    atomic_store_explicit(&r->marks, 0u, memory_order_relaxed);
    for (int k = 0; k < SL__SHM_LANES; k++)
        atomic_store_explicit(&r->lanes[k], 0u, memory_order_relaxed);
}

static bool any_mark(shm_rec *r)
{
    /* seq_cst: after the caller's barrier (sl__shm_senders_in_flight); an
     * acquire of the unmark's release too. */
    bool marked = atomic_load_explicit(&r->marks, memory_order_seq_cst) != 0;
#ifndef SL_MUTANT_SHM_LANES_UNREAD /* planted bug when defined: the lanes go unread */
    for (int k = 0; k < SL__SHM_LANES && !marked; k++)
        marked = atomic_load_explicit(&r->lanes[k], memory_order_seq_cst) != 0;
#endif
    return marked;
}

/* Takes record r, whose owner `seen` is dead (or whose reclaimer, `seen`
 * with OWNER_BUSY, died before it finished), for this process: BUSY, with
 * its identity, so that no other look settles r's spare entries or clears
 * r's fields meanwhile, and no new owner claims r and writes holds in its
 * name that a settle could take for the dead one's. false: another
 * process took it first. */
static bool reclaim_take(const sl_chan *ch, shm_rec *r, uint64_t seen)
{
    /* seq_cst: one reclaimer wins; the settle and the clears come after. */
    return atomic_compare_exchange_strong_explicit(&r->owner, &seen, OWNER_BUSY | self_identity(ch),
                                                   memory_order_seq_cst, memory_order_relaxed);
}

/* Frees record r, taken by reclaim_take: its marks stop counting, the
 * owner's parked threads stop counting as waiters; the roles it held, for
 * the caller's decision (reclaim_all). Every clear is a store of 0 or an
 * exchange with 0, so a reclaim finished by another process leaves the
 * record as one that ran through would; only a parked count the dead
 * reclaimer had taken out but not yet subtracted stays in `waiters` (a
 * wake for nobody now and then, never a lost one), and the roles it had
 * cleared are decided by the next look (look_for_the_gone). */
static uint32_t reclaim_finish(sl_chan *ch, shm_rec *r)
{
    SL_FI(); /* busy, nothing cleared */
#ifndef SL_MUTANT_SHM_DEAD_MARKS_COUNT
    clear_marks(r);
#endif
    discount(&ch->not_empty, &r->parked[0]);
    discount(&ch->not_full, &r->parked[1]);
    SL_FI(); /* counts cleared, the roles not yet */
    /* Relaxed: the decision that follows is this thread's (its reads come
     * after the clear); the owner's release below orders it for a new owner. */
    uint32_t was = atomic_exchange_explicit(&r->roles, 0u, memory_order_relaxed);
    /* Release: the clears before a new owner's claim. */
    atomic_store_explicit(&r->owner, 0, memory_order_release);
    return was;
}

/* The spare entries (SL_MPMC's swap form) that the dead owners in `dead`
 * held (their pushes, and their pops over 256 bytes), settled
 * (sl__mpmc_settle_spares); the records still named by one. The caller
 * holds every record in `dead` (reclaim_take). */
static uint64_t settle_spares(sl_chan *ch, uint64_t dead)
{
    return ch->flavor == SL__MPMC_SHARED ? sl__mpmc_settle_spares(&ch->geom.mpmc, dead) : 0;
}

/* Reclaims the records in `dead`, each dead as its word in owners[] says:
 * takes them, settles the spare entries they name, then frees each one no
 * entry names any more, and gives the others back to the next look (their
 * owner word as it was: still dead) — freed, a new owner's holds would be
 * taken for the dead one's. Taking before settling is what makes the
 * settle's decisions hold: a look that settled a record it did not hold
 * could be preempted between its reading of a held word and its CAS,
 * while another look settled and freed the record and a new owner
 * wrote the same word again (layout version 13; docs/guarantees.md,
 * "Settling under the record").
 *
 * Whoever frees a record decides whether it held the last of a role, as a
 * handle's own free does (drop_record): every reclaim comes here, the
 * look's, a claim's that found every record held, and a closed-check's,
 * and a role cleared without the decision would wait for the next look, a
 * look period on, or two after the death when that look ran while this
 * reclaim held the record with its roles not yet cleared (found by
 * review). Closing here is safe under claim_lock: sl_chan_close only sets
 * `closed` and wakes, it never claims. */
static void reclaim_all(sl_chan *ch, const uint64_t *owners, uint64_t dead)
{
    shm_rec *rs = records(ch);
    uint64_t taken = 0;
#ifdef SL_MUTANT_SHM_SETTLE_UNHELD
    /* Planted bug: the spares settled before the records are taken. */
    uint64_t named = settle_spares(ch, dead);
#endif
    for (int i = 0; i < SHM_RECS; i++)
        if (((dead >> i) & 1) && reclaim_take(ch, &rs[i], owners[i]))
            taken |= (uint64_t)1 << i;
    if (!taken)
        return;
    SL_FI(); /* taken, their spares not yet settled */
#ifndef SL_MUTANT_SHM_SETTLE_UNHELD
    uint64_t named = settle_spares(ch, taken);
#endif
    uint32_t freed = 0;
    for (int i = 0; i < SHM_RECS; i++) {
        if (!((taken >> i) & 1))
            continue;
        if ((named >> i) & 1)
            /* Release: as the free's; the next look takes it from here. */
            atomic_store_explicit(&rs[i].owner, owners[i], memory_order_release);
        else
            freed |= reclaim_finish(ch, &rs[i]);
    }
#ifdef SL_MUTANT_SHM_RECLAIM_UNDECIDED
    freed = 0; /* planted bug: the roles a reclaim cleared wait for the next look */
#endif
    /* Relaxed: only the roles registered (a process that died between its
     * record's bit and its note_registration never registered); a
     * registration missed here is the next look's. */
    uint32_t ever = atomic_load_explicit(&control(ch)->roles_ever, memory_order_relaxed);
    close_if_gone(ch, freed & ever & ROLES);
}

/* One record's reclaim, its spares settled first. */
static void reclaim(sl_chan *ch, shm_rec *r, uint64_t seen)
{
    uint64_t owners[SHM_RECS] = {0};
    int i = (int)(r - records(ch));
    owners[i] = seen;
    reclaim_all(ch, owners, (uint64_t)1 << i);
}

/* A free record for `self`, with `reclaim` reclaiming dead owners' on a
 * second pass; -1 when all SHM_RECS are held (by living processes, as far
 * as the passes looked). */
static int claim_record(sl_chan *ch, uint64_t self, bool reclaim_dead)
{
    shm_rec *rs = records(ch);
    for (int pass = 0; pass < 1 + reclaim_dead; pass++)
        for (int i = 0; i < SHM_RECS; i++) {
            uint64_t o = atomic_load_explicit(&rs[i].owner, memory_order_acquire);
            if (pass == 1 && o != 0 && owner_dead(ch, o))
                reclaim(ch, &rs[i], o), o = atomic_load_explicit(&rs[i].owner, memory_order_acquire);
            /* seq_cst: the claim before this sender's mark and closed-check. */
            if (o == 0 && atomic_compare_exchange_strong_explicit(
                              &rs[i].owner, &o, self, memory_order_seq_cst, memory_order_relaxed))
                return i;
        }
    return -1;
}

/* The claim, under claim_lock. With every record held by a living handle
 * the handle stays without one (rec -1, holds of spares named by nobody) and
 * the next call tries again; its reads of /proc for dead owners, at most
 * once a look period while it is refused (a try_send loop would otherwise
 * read /proc 64 times a try). */
static int claim_locked(sl_chan *ch)
{
    if (sl__shm_claimed_here(ch))
        return ch->shm.rec;
    unsigned gen = atomic_load_explicit(&sl__shm_gen, memory_order_relaxed);
    uint64_t now = sl__now_ns();
    bool reclaim = ch->shm.refused_gen != gen || now - ch->shm.refused_at >= SHM_LOOK_NS;
    int i = claim_record(ch, self_identity(ch), reclaim);
    ch->shm.rec = i;
    ch->shm.mark = i < 0 ? NULL : &records(ch)[i].marks;
    if (i >= 0)
        sl__shm_lanes_reset(&ch->shm); /* a fork()ed child's copy names its parent's threads */
    if (ch->flavor == SL__MPMC_SHARED) /* the name its holds of spares go by */
        atomic_store_explicit(&ch->geom.mpmc.holder, i < 0 ? SL__HELD_NOBODY : (uint32_t)i,
                              memory_order_relaxed); /* gen's release orders it */
    if (i < 0) {
        if (reclaim)
            ch->shm.refused_at = now, ch->shm.refused_gen = gen;
        return -1;
    }
    /* Release: mark and rec before gen (sl__shm_claimed_here). */
    atomic_store_explicit(&ch->shm.gen, gen, memory_order_release);
    return i;
}

/* The handle's record in this process, claimed if need be; -1 while every
 * record is held. (ch->shm.rec is read outside the lock only once
 * sl__shm_claimed_here says so: a refused claim writes it again.) */
static int claimed_record(sl_chan *ch)
{
    if (sl__shm_claimed_here(ch))
        return ch->shm.rec;
    pthread_mutex_lock(&claim_lock);
    int rec = claim_locked(ch);
    pthread_mutex_unlock(&claim_lock);
    return rec;
}

SL_ATOMIC(uint32_t) *sl__shm_claim_mark(sl_chan *ch)
{
    int rec = claimed_record(ch);
#ifdef SL_MUTANT_SHM_SEND_WITHOUT_RECORD
    if (rec < 0)
        return &ch->in_flight[0].n; /* planted bug: an anonymous mark, the send goes ahead */
#endif
    return rec < 0 ? NULL : &records(ch)[rec].marks;
}

SL_ATOMIC(uint32_t) *sl__shm_claim_lane(sl_chan *ch)
{
    SL_ATOMIC(uint32_t) *count = sl__shm_claim_mark(ch);
    if (!count || !sl__shm_claimed_here(ch) || ch->shm.rec < 0)
        return count; /* none; or the planted bug's anonymous mark */
    int lane = sl__shm_lane_take(&ch->shm);
    SL_ATOMIC(uint32_t) *word = lane < 0 ? count : &records(ch)[ch->shm.rec].lanes[lane];
    /* Relaxed: `claim` changes only in this process's claims (claim_locked). */
    sl__shm_lane_of_thread = (sl__shm_lane_cache){
        ch, atomic_load_explicit(&ch->shm.claim, memory_order_relaxed), word};
    return word;
}

/* Whether a handle registered in `role` holds its record (a living or not
 * yet found dead process's). */
static bool role_left(const sl_chan *ch, uint32_t role)
{
    const shm_rec *rs = records(ch);
    for (int i = 0; i < SHM_RECS; i++)
        /* seq_cst: after this caller's own clear and its load of
         * roles_ever, before its CAS of it (decide_gone). */
        if (atomic_load_explicit(&rs[i].roles, memory_order_seq_cst) & role)
            return true;
    return false;
}

/* Whether no record has `role`, decided against registrations: true only
 * when roles_ever did not change from before the records' reading to the
 * CAS that sets EVER_CLOSING (a registration moves it after setting its
 * record's bit, register_role). A check and a close alone let a
 * registration land between them and be told SL_OK by a channel about to
 * close under it (found by review). */
static bool decide_gone(sl_chan *ch, uint32_t role)
{
#ifdef SL_MUTANT_SHM_GONE_WITHOUT_CAS /* planted bug: the look at the records decides alone */
    bool gone = !role_left(ch, role);
    SL_FI();
    return gone;
#endif
    SL_ATOMIC(uint32_t) *ever = &control(ch)->roles_ever;
    /* seq_cst: before role_left's loads, in the total order. */
    uint32_t seen = atomic_load_explicit(ever, memory_order_seq_cst);
    while (!role_left(ch, role)) {
        SL_FI(); /* the records read, the decision not yet taken */
        /* seq_cst: a registration's move of the word comes after its
         * record's bit; a failure reloads `seen` and the records again. */
        if (atomic_compare_exchange_strong_explicit(ever, &seen, seen | EVER_CLOSING,
                                                    memory_order_seq_cst, memory_order_seq_cst))
            return true;
    }
    return false;
}

/* "Every registered X is gone": closes the channel when, for a role in
 * `gone` (roles the caller saw a handle of leave, or saw no living handle
 * of), no record has that role any more. The one check for both sides. */
static void close_if_gone(sl_chan *ch, uint32_t gone)
{
#ifdef SL_MUTANT_SHM_RECEIVERS_IGNORED
    gone &= ~ROLE_RECEIVER; /* planted bug: the last receiver's going closes nothing */
#endif
    for (uint32_t role = ROLE_SENDER; role <= ROLE_RECEIVER; role <<= 1)
        if ((gone & role) && decide_gone(ch, role)) {
            SL_FI(); /* decided, not yet closed */
            sl_chan_close(ch);
            return;
        }
}

/* sl_chan_free's part: the record goes back; a registered sender or
 * receiver that was the last of its role closes the channel. */
static void drop_record(sl_chan *ch)
{
    if (!sl__shm_claimed_here(ch) || ch->shm.rec < 0)
        return; /* none, or the parent's (a fork()ed child's copy of the handle) */
    shm_rec *r = &records(ch)[ch->shm.rec];
    uint32_t was = atomic_exchange_explicit(&r->roles, 0u, memory_order_seq_cst);
    clear_marks(r); /* the caller's threads are done */
    atomic_store_explicit(&r->parked[0], 0u, memory_order_relaxed); /* and wait no more */
    atomic_store_explicit(&r->parked[1], 0u, memory_order_relaxed);
    /* Release: the clears before a new owner's claim. */
    atomic_store_explicit(&r->owner, 0, memory_order_release);
    close_if_gone(ch, was & ROLES);
}

/* Sets role's bit in roles_ever and moves its count (decide_gone); the
 * word it replaced. */
static uint32_t note_registration(sl_chan *ch, uint32_t role)
{
    SL_ATOMIC(uint32_t) *ever = &control(ch)->roles_ever;
    uint32_t old = atomic_load_explicit(ever, memory_order_relaxed);
    /* seq_cst: after the record's bit, before the closed load; the count
     * wraps inside its bits, never into EVER_CLOSING. */
    while (!atomic_compare_exchange_weak_explicit(
        ever, &old, (old & ~EVER_COUNT) | role | ((old + EVER_UNIT) & EVER_COUNT),
        memory_order_seq_cst, memory_order_relaxed)) {
    }
    return old;
}

/* Registers ch's handle in `role`: its record claimed, the role's bit set,
 * then the channel's closed state read (shm.h: sl_chan_shm_sender). */
static sl_status register_role(sl_chan *ch, uint32_t role)
{
    if (!ch || !sl__chan_is_shared(ch))
        return SL_EINVAL;
    int rec = claimed_record(ch);
    if (rec < 0)
        return SL_ENOMEM;
    shm_rec *r = &records(ch)[rec];
    /* seq_cst: registered before roles_ever moves (decide_gone: the last
     * of the role's free sees this, or this sees its decision). */
    atomic_fetch_or_explicit(&r->roles, role, memory_order_seq_cst);
    if (note_registration(ch, role) & EVER_CLOSING) {
        sl_chan_close(ch); /* decided before us: its closer may not have got there */
        return SL_CLOSED;
    }
    return atomic_load_explicit(&ch->closed, memory_order_seq_cst) ? SL_CLOSED : SL_OK;
}

SL_API sl_status sl_chan_shm_sender(sl_chan *ch) { return register_role(ch, ROLE_SENDER); }

SL_API sl_status sl_chan_shm_receiver(sl_chan *ch) { return register_role(ch, ROLE_RECEIVER); }

bool sl__shm_senders_in_flight(sl_chan *ch)
{
    /* The caller's load of `closed` before the marks' loads: the senders'
     * marks may be ordered by a compiler barrier alone (sl__shm_fence). */
    sl__event_heavy_fence_shared();
    shm_rec *rs = records(ch);
    for (int i = 0; i < SHM_RECS; i++) {
        if (!any_mark(&rs[i]))
            continue;
        uint64_t o = atomic_load_explicit(&rs[i].owner, memory_order_acquire);
#ifdef SL_MUTANT_SHM_DEAD_MARKS_COUNT
        return true; /* planted bug: a dead sender's mark counts as in flight */
#endif
        if (o == 0 || !owner_dead(ch, o))
            return true; /* a living sender's, or one a living reclaimer is clearing */
        reclaim(ch, &rs[i], o); /* dead: what it pushed is in the queue already */
    }
    return false;
}

/* The look for dead owners: reclaims their records (their marks stop
 * counting, their parked threads stop counting as waiters), and closes the
 * channel when a role was registered and no living handle of it is left. */
static void look_for_the_gone(sl_chan *ch)
{
    shm_rec *rs = records(ch);
    uint32_t living = 0;
    uint64_t owners[SHM_RECS], dead = 0;
    for (int i = 0; i < SHM_RECS; i++) {
        owners[i] = atomic_load_explicit(&rs[i].owner, memory_order_acquire);
        if (owners[i] == 0)
            continue;
        if (owner_dead(ch, owners[i])) /* a dead owner's, or a dead reclaimer's: finish it */
            dead |= (uint64_t)1 << i;
        else if (!reclaiming(owners[i]))
            living |= atomic_load_explicit(&rs[i].roles, memory_order_relaxed);
    }
    /* The spares of all the dead at once: one may wait for another's. The
     * roles of the records it frees are decided there; those below are the
     * rest, roles whose last record went without a decision (its process,
     * or its reclaimer, killed between the clear and the decision). */
    if (dead)
        reclaim_all(ch, owners, dead);
    /* Relaxed: a registration the look misses is found by the next one. */
    uint32_t ever = atomic_load_explicit(&control(ch)->roles_ever, memory_order_relaxed);
    close_if_gone(ch, ever & ROLES & ~living);
}

/* The look, if it is due at `now` and this caller wins it; the instant
 * of the next one. */
static uint64_t look_if_due(sl_chan *ch, uint64_t now)
{
    shm_ctl *c = control(ch);
    uint64_t at = atomic_load_explicit(&c->next_look, memory_order_relaxed);
    if (now < at && at - now <= SHM_LOOK_NS)
        return at; /* not due (a time further than a period is a peer's garbage) */
#ifndef SL_MUTANT_SHM_FOREIGN_LOOKS /* planted bug when defined: a foreign look takes the turn */
    /* A look here would judge nobody (owner_dead), yet move the next one a
     * period on for every process: a foreign poller that kept winning would
     * keep a native waiter from ever finding a death (found by review). */
    if (!native_here(ch))
        return now + SHM_LOOK_NS;
#endif
    /* Relaxed: only who looks is decided here; the look reads with its own orders. */
    if (atomic_compare_exchange_strong_explicit(&c->next_look, &at, now + SHM_LOOK_NS,
                                                memory_order_relaxed, memory_order_relaxed))
        look_for_the_gone(ch);
    return now + SHM_LOOK_NS;
}

/* The look, if one is wanted: for registered roles, for waiters counted
 * that may be dead ones, or (`starved`) for spares that dead senders may
 * hold; otherwise it reads no clock. Relaxed: a look missed now is made by
 * the next empty receive, full send or waiter. */
static void look_if_wanted(sl_chan *ch, bool starved)
{
    if (atomic_load_explicit(&ch->closed, memory_order_relaxed))
        return;
    if (starved || atomic_load_explicit(&control(ch)->roles_ever, memory_order_relaxed) ||
        atomic_load_explicit(&ch->not_empty.waiters, memory_order_relaxed) ||
        atomic_load_explicit(&ch->not_full.waiters, memory_order_relaxed))
        (void)look_if_due(ch, sl__now_ns());
}

void sl__shm_on_stuck(sl_chan *ch) { look_if_wanted(ch, false); }

void sl__shm_on_full(sl_chan *ch)
{
    /* Relaxed: a raised flag stays raised until a give-back, so a look
     * missed now is made by the next full send. Only here: an empty
     * receive does not read the producers' line the flag sits on. */
    SL_ATOMIC(uint32_t) *starved =
        ch->flavor == SL__MPMC_SHARED ? ch->geom.mpmc.starved : NULL; /* swap form only */
    look_if_wanted(ch, starved && atomic_load_explicit(starved, memory_order_relaxed));
}

SL_ATOMIC(uint32_t) *sl__shm_park_account(sl_chan *ch, const sl_event *ev)
{
    int rec = claimed_record(ch);
    if (rec < 0)
        return NULL; /* every record held: a death here stays counted (shm.h) */
    return &records(ch)[rec].parked[ev == &ch->not_full];
}

uint64_t sl__shm_ready_at(const sl_chan *ch)
{
    sl_chan *c = (sl_chan *)(uintptr_t)ch; /* a look may close it */
    /* Relaxed: a stale answer costs one period of latency, never a wake-up.
     * `closed` too: `drained` alone, a peer's garbage on an open channel,
     * would end every waiter's periodic look in this process. */
    if (atomic_load_explicit(&ch->drained, memory_order_relaxed) &&
        atomic_load_explicit(&ch->closed, memory_order_relaxed))
        return SL_FOREVER; /* closed and drained: nobody waits */
#ifdef SL_MUTANT_SHM_NO_LOOK
    return SL_FOREVER; /* planted bug: a waiter sleeps until a notify, however long */
#endif
    /* Every waiter looks again each period: for a dead sender's mark after
     * a close, for a notify lost with a process killed between its epoch
     * bump and its futex wake, and for dead owners' records: their
     * registered senders and receivers and their parked threads
     * (docs/guarantees.md). */
    uint64_t now = sl__now_ns();
    if (atomic_load_explicit(&ch->closed, memory_order_relaxed))
        return now + SHM_LOOK_NS;
    return look_if_due(c, now);
}

/* ---- the barrier mode -------------------------------------------------------
 * docs/guarantees.md, "Across processes", has the argument; the word is
 * docs/shm-layout.md's "The barrier mode" (offset 84). The creator writes it
 * before the magic, and it never changes:
 *   SHM_ASYMMETRIC  the creator registered for membarrier's global expedited
 *                   command: every waiter, in whatever process, issues
 *                   MEMBARRIER_CMD_GLOBAL_EXPEDITED, so a registered
 *                   process's fast side needs only a compiler barrier;
 *   SHM_FENCED      the creator could not register (old kernel, seccomp):
 *                   every fast side fences, every waiter fences.
 * A process that opens an asymmetric segment without having registered
 * fences on its own fast side and must still issue the global barrier as a
 * waiter; one that cannot issue it is refused (SL_EINVAL): it could not keep
 * the others' fast sides correct. */
#define SHM_FENCED 0u
#define SHM_ASYMMETRIC 1u

SL_ATOMIC(int) sl__shm_light;
static SL_ATOMIC(int) shm_registered; /* this process registered (global expedited) */

/* Once per process, before its first shared channel: registration. */
static void register_global(void)
{
    if (sl__membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) != 0)
        return; /* fences on this process's fast sides, from the start */
    atomic_store_explicit(&shm_registered, 1, memory_order_relaxed);
    atomic_store_explicit(&sl__shm_light, 1, memory_order_relaxed);
}

static pthread_once_t register_once = PTHREAD_ONCE_INIT;

/* The mode a new segment gets from this process. */
static uint32_t creator_mode(void)
{
    pthread_once(&register_once, register_global);
    if (!atomic_load_explicit(&shm_registered, memory_order_relaxed))
        return SHM_FENCED;
    atomic_store_explicit(&sl__event_global, 1, memory_order_relaxed);
    return SHM_ASYMMETRIC;
}

/* An opener's part, before its handle exists: false when this process cannot
 * take part in a segment of that mode. Each decision only adds barriers. */
static bool join_mode(uint32_t mode)
{
    pthread_once(&register_once, register_global);
    if (mode == SHM_FENCED) {
        /* This process's fast sides fence from now on, on every segment:
         * this one's waiters rely on them. */
        atomic_store_explicit(&sl__shm_light, 0, memory_order_relaxed);
        return true;
    }
    if (mode != SHM_ASYMMETRIC)
        return false;
    /* Not registered: its own sides fence (sl__shm_light is 0), but as a
     * waiter it must still force the others' barrier: it must be able to. */
    if (!atomic_load_explicit(&shm_registered, memory_order_relaxed) &&
        sl__membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) != 0)
        return false;
    atomic_store_explicit(&sl__event_global, 1, memory_order_relaxed);
    return true;
}

/* A fork()ed child inherits the flags but maybe not the kernel's
 * registration: it registers again, or fences from now on (it has run
 * nothing yet). */
static void register_again(void)
{
    if (atomic_load_explicit(&shm_registered, memory_order_relaxed) &&
        sl__membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) != 0)
        atomic_store_explicit(&sl__shm_light, 0, memory_order_relaxed);
}

static size_t page_up(size_t n, size_t page) { return (n + page - 1) & ~(page - 1); }

/* Maps `size` bytes of fd behind a private page for the handle's local
 * part; the handle owns fd from here on (also on failure: closed). */
static sl_status map_handle(sl_chan **out, int fd, size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t local = page_up(SL__CHAN_SHARED_AT, page);
    size_t len = local + page_up(size, page);
    unsigned char *base = mmap(NULL, len, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        close(fd);
        return SL_ENOMEM;
    }
    if (mmap(base + local, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
        MAP_FAILED) {
        int e = errno;
        munmap(base, len);
        close(fd);
        errno = e;
        return e == ENOMEM ? SL_ENOMEM : SL_EINVAL;
    }
    sl_chan *ch = (sl_chan *)(base + local - SL__CHAN_SHARED_AT);
    /* gen 0: no record yet; the first send claims one (sl__shm_claim_mark). */
    ch->shm.base = base;
    ch->shm.len = len;
    ch->shm.fd = fd;
    ch->shm.mark = NULL;
    atomic_init(&ch->shm.gen, 0u);
    ch->shm.rec = -1;
    ch->shm.refused_gen = 0; /* never refused */
    watch_forks();
    *out = ch;
    return SL_OK;
}

void sl__shm_release(sl_chan *ch)
{
    drop_record(ch);
    sl__shm_map m = ch->shm; /* the handle goes with the mapping */
    close(m.fd);
    munmap(m.base, m.len);
}

/* A failed system call's status: out of a resource, or the caller's. */
static sl_status errno_status(void)
{
    return errno == ENOMEM || errno == ENOSPC || errno == EMFILE || errno == ENFILE
               ? SL_ENOMEM
               : SL_EINVAL;
}

/* The segment's pages reserved now: a tmpfs that is full (a container's
 * small /dev/shm) or out of memory refuses the creation (ENOSPC, ENOMEM)
 * instead of raising SIGBUS in whichever process first touches a page it
 * cannot have, in the middle of a send. A file system without fallocate
 * is left as it was. */
static bool reserve_pages(int fd, size_t size)
{
#ifdef SL_MUTANT_SHM_PAGES_UNRESERVED /* planted bug: pages found missing at first touch */
    return (void)fd, (void)size, true;
#endif
    int r;
    while ((r = fallocate(fd, 0, 0, (off_t)size)) != 0 && errno == EINTR) {
    }
    return r == 0 || errno == EOPNOTSUPP || errno == ENOSYS;
}

/* Whether name has the one form shm.h admits: "/" and 1 to 254 characters
 * with no other "/". glibc's shm_open takes a name without the leading
 * "/" as well (POSIX leaves it to the implementation), so without this
 * check such a name worked here and meant something else elsewhere. Sets
 * errno (EINVAL) when it refuses. */
static bool name_ok(const char *name)
{
    size_t n = name ? strnlen(name, 256) : 0;
    bool ok = n >= 2 && n <= 255 && name[0] == '/' && !memchr(name + 1, '/', n - 1);
    if (!ok)
        errno = EINVAL;
    return ok;
}

/* A new segment's descriptor: a sealable memfd, or the named object made
 * exclusively; exactly `mode` (no umask), sized. -1 on failure (errno). */
static int make_segment(const char *name, unsigned mode, size_t size)
{
    int fd = name ? shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, (mode_t)mode)
                  : memfd_create("sluice-chan", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -1;
    bool ok = fchmod(fd, (mode_t)mode) == 0 && ftruncate(fd, (off_t)size) == 0 &&
              reserve_pages(fd, size);
    /* A memfd cannot change size from now on: no peer can shrink it under
     * another process's mapping (SIGBUS) or grow it. */
    if (ok && !name)
        ok = fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0;
    if (!ok) {
        int e = errno;
        close(fd);
        if (name)
            shm_unlink(name);
        errno = e;
        return -1;
    }
    return fd;
}

SL_API sl_status sl_chan_shm_create(sl_chan **out, const char *name, const sl_chan_opts *opts,
                                    unsigned mode)
{
    geometry g;
    if (!out || !opts || opts->drop || (mode & ~0777u) || (name && !name_ok(name)) ||
        !geometry_of(&g, (uint64_t)opts->flavor, opts->elem_size, opts->capacity))
        return SL_EINVAL;
    int fd = make_segment(name, mode ? mode : 0600u, g.size);
    if (fd < 0)
        return errno_status();
    sl_chan *ch;
    sl_status st = map_handle(&ch, fd, g.size);
    if (st != SL_OK) {
        if (name)
            shm_unlink(name);
        return st;
    }
    fill_local(ch, &g);
    /* Relaxed: init_shared's release of the magic publishes it. */
    atomic_store_explicit(&control(ch)->barriers, creator_mode(), memory_order_relaxed);
    stamp_namespaces(ch);
    init_shared(ch, &g);
    *out = ch;
    return SL_OK;
}

/* The header's fields, read once from a read-only look at the segment's
 * first bytes; false when the segment is too short to hold them, or no
 * creator has finished it (no magic). */
static bool read_header(int fd, size_t file_size, sl__shm_header *h)
{
    if (file_size < SHM_DATA_AT)
        return false;
    sl__shm_header *seg = mmap(NULL, SHM_DATA_AT, PROT_READ, MAP_SHARED, fd, 0);
    if (seg == MAP_FAILED)
        return false;
    /* Acquire: pairs with the creator's release of the magic. */
    uint64_t magic = atomic_load_explicit(&seg->magic, memory_order_acquire);
    /* The rest as bytes: a peer may be writing them; they are checked. */
    memcpy((unsigned char *)h + sizeof h->magic, (unsigned char *)seg + sizeof h->magic,
           sizeof *h - sizeof h->magic);
    atomic_init(&h->magic, magic);
    munmap(seg, SHM_DATA_AT);
    return magic == SHM_MAGIC;
}

/* Validates the segment of fd (owned) against expect, and maps it. */
static sl_status open_owned(sl_chan **out, int fd, const sl_chan_opts *expect)
{
    struct stat sb;
    sl__shm_header h;
    geometry g;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < 0 ||
        !read_header(fd, (size_t)sb.st_size, &h) || h.version != SHM_VERSION ||
        h.flavor != (uint64_t)expect->flavor || h.elem_size != expect->elem_size ||
        (expect->capacity && h.capacity != expect->capacity) ||
        !geometry_of(&g, h.flavor, h.elem_size, h.capacity) || (size_t)sb.st_size < g.size) {
        close(fd);
        return SL_EINVAL;
    }
    sl_chan *ch;
    sl_status st = map_handle(&ch, fd, g.size);
    if (st != SL_OK)
        return st;
    fill_local(ch, &g); /* from g: no size or index read from the segment after this */
    /* Relaxed: written before the magic, which read_header acquired. */
    if (!join_mode(atomic_load_explicit(&control(ch)->barriers, memory_order_relaxed))) {
        sl__shm_release(ch);
        return SL_EINVAL;
    }
    *out = ch;
    return SL_OK;
}

/* Whether no holder of fd can shrink its file under this process's mapping
 * (SIGBUS on the next access) without a name to its door: a file with no
 * name (a memfd, or an unlinked object) must be sealed against shrinking,
 * as every memfd sl_chan_shm_create makes is, since the peer that passed it
 * could truncate it otherwise. A named object cannot be sealed; it is
 * taken as sl_chan_shm_open takes its name (sluice/shm.h says what a peer
 * with write access can do to it). */
static bool sealed_or_named(int fd)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return false;
    if (sb.st_nlink > 0)
        return true;
#ifdef SL_MUTANT_SHM_UNSEALED_FD
    return true; /* planted bug: a peer's unsealed memfd is mapped */
#endif
    int seals = fcntl(fd, F_GET_SEALS);
    return seals >= 0 && (seals & F_SEAL_SHRINK);
}

SL_API sl_status sl_chan_shm_open_fd(sl_chan **out, int fd, const sl_chan_opts *expect)
{
    if (!out || !expect || expect->drop || fd < 0)
        return SL_EINVAL;
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0)
        return errno_status();
    if (!sealed_or_named(own)) {
        close(own);
        errno = EPERM;
        return SL_EINVAL;
    }
    return open_owned(out, own, expect);
}

SL_API sl_status sl_chan_shm_open(sl_chan **out, const char *name, const sl_chan_opts *expect)
{
    if (!out || !expect || !name_ok(name) || expect->drop)
        return SL_EINVAL;
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        return errno_status();
    return open_owned(out, fd, expect);
}

SL_API sl_status sl_chan_shm_unlink(const char *name)
{
    if (!name_ok(name) || shm_unlink(name) != 0)
        return SL_EINVAL;
    return SL_OK;
}

SL_API int sl_chan_shm_fd(const sl_chan *ch)
{
    return ch && sl__chan_is_shared(ch) ? ch->shm.fd : -1;
}
