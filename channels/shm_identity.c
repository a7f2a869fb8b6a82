/*
 * channels/shm_identity.c — owner words of a shared channel's records: a
 * process's identity in a segment ({start time, pid}, marked foreign outside
 * the creator's pid and time namespaces) and whether the process an owner
 * word names is dead, as /proc and kill(2) tell it.
 *
 * Apart from the records (channels/shm_owner.c), which only compare, store
 * and judge these words through sl__shm_self_identity and
 * sl__shm_owner_dead: what a pid means, and which /proc may be believed
 * about it, is this file's question alone (docs/guarantees.md, "A peer that
 * dies"; docs/shm-layout.md, "Sender records").
 */
#include "chan_impl.h"
#include "shm_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The creator's pid and time namespaces, as the inode numbers of
 * /proc/self/ns/pid and /proc/self/ns/time (0: unknown; a kernel before
 * 5.6 has no time namespaces). A pid, and a start time, mean one process
 * only within one pid and one time namespace: only a process in the
 * creator's both ("native") judges whether an owner is dead, and only an
 * owner that is native too (sl__shm_owner_dead). Written once before the magic. */
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

void sl__shm_read_own_namespaces(void)
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
void sl__shm_stamp_namespaces(sl_chan *ch)
{
    shm_ns *ns = namespaces(ch);
    atomic_store_explicit(&ns->pid_ns, atomic_load_explicit(&own_pid_ns, memory_order_relaxed),
                          memory_order_relaxed);
    atomic_store_explicit(&ns->time_ns, atomic_load_explicit(&own_time_ns, memory_order_relaxed),
                          memory_order_relaxed);
}

/* Whether this process is in the segment's creator's namespaces, where the
 * pids and start times in owner words mean what it reads in /proc. */
bool sl__shm_native_here(const sl_chan *ch)
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
uint64_t sl__shm_self_identity(const sl_chan *ch)
{
    uint32_t pid = (uint32_t)getpid();
    uint64_t start = 0;
    (void)proc_state(pid, &start); /* unknown: 0, and only the pid is checked */
    return (start << PID_BITS) | pid | (sl__shm_native_here(ch) ? 0 : OWNER_FOREIGN);
}

/* Whether the owner word names a process that is dead: the record's owner,
 * or, while OWNER_BUSY is set, its reclaimer. Conservative: a process
 * /proc cannot tell about counts as alive unless kill says ESRCH (then a
 * zombie, and a reused pid, count as alive); so does every owner when
 * this process is not in the creator's namespaces, and a foreign owner
 * (shm_ns: its pid names another process, or none, in /proc here). */
bool sl__shm_owner_dead(const sl_chan *ch, uint64_t owner)
{
#ifndef SL_MUTANT_SHM_FOREIGN_JUDGED /* planted bug when defined: pids read across namespaces */
    if ((owner & OWNER_FOREIGN) || !sl__shm_native_here(ch))
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
