/*
 * tests/unit_shm.c — channels between processes (sluice/shm.h).
 *
 * Every exchange runs between fork()ed processes, each with its own handle
 * (opened by descriptor, by name, or from a descriptor passed over a Unix
 * socket with SCM_RIGHTS). A child checks what it sees itself and reports
 * by its exit status (it never calls into Check); alarm() ends a child that
 * hangs, so a wake-up that never crosses the process boundary fails the
 * test instead of hanging it.
 *
 * Checked: SL_SPSC and SL_MPMC with 8- and 64-byte messages, each message
 * exactly once and in order, with the blocking forms parked across
 * processes (a sender blocked on a full channel, a receiver on an empty
 * one); the try and timed forms on full and empty; a close made in one
 * process seen in another, by a blocked receiver too; the descriptor passed
 * with SCM_RIGHTS; named segments (create, open, exclusive create, unlink,
 * modes); every refusal (flavour, drop function, sizes, mode, magic,
 * version, flavour/size/capacity mismatch, a short segment, send_ptr,
 * the internal flavours); a segment scribbled with garbage between
 * operations, which the process survives with sane answers (under ASan in
 * that preset); select over shared and in-process channels woken from
 * another process (the segment's bell, futex_waitv and its fallback); and
 * event-loop descriptors of shared channels (the watcher thread).
 *
 * Under TSan: the handles, mappings and each process's own paths are
 * checked; TSan does not see the other process's accesses. Every exchange
 * here has one sending and one receiving process at a time, so SL_MPMC's
 * 16-byte CAS, which TSan emulates under a lock of its own process, is
 * still atomic where it races (stress_shm.c says more).
 */
#include "harness.h"
#include "stress_common.h"
#include "internal/testing.h"
#include "internal/sysops.h"
#include "../channels/chan_impl.h" /* sl__shm_on_stuck: a look, run by hand */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sluice/chanfd.h>
#include <sluice/park.h>
#include <sluice/select.h>
#include <sluice/shm.h>

/* Seconds after which a child still running is hung (SL_SHM_CHILD_ALARM:
 * the planted-bug run shortens it). */
static unsigned child_alarm(void) { return sl_test_env_uint("SL_SHM_CHILD_ALARM", 20); }

/* The largest message the exchange helpers carry. */
#define MSG_MAX 320

static const struct {
    sl_flavor flavor;
    size_t esz;
} k_cfg[] = {{SL_SPSC, 8}, {SL_SPSC, 64}, {SL_MPMC, 8}, {SL_MPMC, 64}};

static sl_chan_opts opts_of(int i, size_t cap)
{
    return (sl_chan_opts){.flavor = k_cfg[i].flavor, .elem_size = k_cfg[i].esz, .capacity = cap};
}

/* How long a survivor waits for what must come (SL_SHM_WAIT_S: the
 * planted-bug run shortens it). */
static uint64_t survivor_wait(void) { return sl_test_env_uint("SL_SHM_WAIT_S", 10) * SEC; }

/* The first bytes of fd's segment, mapped read-write, to corrupt. */
static unsigned char *map_raw(int fd, size_t len)
{
    unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ck_assert_ptr_ne(p, MAP_FAILED);
    return p;
}

/* Waits until the u32 at off in raw reads want (a child's registration). */
static void await_word(const unsigned char *raw, size_t off, uint32_t want)
{
    for (int i = 0; i < 10000; i++) {
        if (atomic_load((const _Atomic uint32_t *)(const void *)(raw + off)) == want)
            return;
        sl_test_sleep_ns(MS);
    }
    ck_abort_msg("the word at %zu never read %u", off, want);
}

/* Runs fn(arg) in a child process; its return value is the exit status. */
static pid_t spawn(int (*fn)(void *), void *arg)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* Check's SIGALRM handler, inherited, would kill the whole process
         * group, the test with it: the child's hang must end the child. */
        signal(SIGALRM, SIG_DFL);
        alarm(child_alarm());
        _exit(fn(arg));
    }
    return pid;
}

static void join_ok(pid_t pid)
{
    int ws = 0;
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    ck_assert_msg(WIFEXITED(ws), "child killed by signal %d (a hang ends in SIGALRM)",
                  WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
    ck_assert_msg(WEXITSTATUS(ws) == 0, "child failed at step %d", WEXITSTATUS(ws));
}

/* ---- a consumer process ---------------------------------------------------- */
typedef struct consumer_arg {
    int fd;
    sl_chan_opts opts;
    uint64_t n;         /* messages to expect, in order, then SL_CLOSED */
    const char *name;   /* open by name instead of fd */
} consumer_arg;

static int consume(void *p)
{
    consumer_arg *a = p;
    sl_chan *ch;
    sl_status st = a->name ? sl_chan_shm_open(&ch, a->name, &a->opts)
                           : sl_chan_shm_open_fd(&ch, a->fd, &a->opts);
    if (st != SL_OK)
        return 1;
    unsigned char buf[MSG_MAX];
    for (uint64_t i = 0; i < a->n; i++) {
        /* Alternate the forms: blocking, timed, batch of one. */
        size_t got = 1;
        st = i % 3 == 0   ? sl_chan_recv(ch, buf)
             : i % 3 == 1 ? sl_chan_recv_for(ch, buf, 10 * SEC)
                          : sl_chan_recv_n(ch, buf, 1, &got);
        if (st != SL_OK || got != 1)
            return 2;
        if (!sl_test_seq_is(buf, a->opts.elem_size, i))
            return 3;
    }
    if (sl_chan_recv(ch, buf) != SL_CLOSED)
        return 4;
    sl_chan_free(ch);
    return 0;
}

/* Sends 0 .. n-1 with the blocking send (the channel is small, so the
 * sender parks on full), then closes. */
static void produce(sl_chan *ch, size_t esz, uint64_t n)
{
    unsigned char buf[MSG_MAX];
    for (uint64_t i = 0; i < n; i++) {
        sl_test_seq_fill(buf, esz, i);
        ck_assert_int_eq(i % 2 ? sl_chan_send(ch, buf) : sl_chan_send_for(ch, buf, 10 * SEC),
                         SL_OK);
    }
    sl_chan_close(ch);
}

START_TEST(test_exchange)
{
    sl_chan_opts o = opts_of(_i, 4);
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    ck_assert_int_eq(sl_chan_flavor(ch), o.flavor);
    ck_assert_uint_eq(sl_chan_cap(ch), 4);
    ck_assert_uint_eq(sl_chan_elem_size(ch), o.elem_size);
    uint64_t n = sl_test_scaled(10000, 2000);
    consumer_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o, .n = n};
    pid_t pid = spawn(consume, &a);
    produce(ch, o.elem_size, n);
    join_ok(pid);
    sl_chan_free(ch);
}
END_TEST

/* The segment's size for an SL_MPMC channel, from docs/shm-layout.md's
 * formulas (an independent reading of the layout): the used ring's one_lap
 * cells from byte 6144; then, over 8 bytes (the swap form), the spare table
 * (capacity words, or 64 when messages are over 256 bytes and the capacity
 * over 64) and capacity + spares slots of whole words. */
static size_t mpmc_layout_size(size_t esz, size_t cap, size_t *spares_at, size_t *slots_at)
{
    size_t lap = 2, line = 64;
    while (lap <= cap)
        lap *= 2;
    size_t cells_end = 6144 + lap * 16;
    if (esz <= 8)
        return *spares_at = *slots_at = 0, cells_end;
    size_t spares = esz > 256 && cap > 64 ? 64 : cap;
    *spares_at = (cells_end + line - 1) / line * line;
    *slots_at = (*spares_at + spares * 8 + line - 1) / line * line;
    return *slots_at + (cap + spares) * ((esz + 7) / 8 * 8);
}

/* SL_MPMC by message size (the swap form at every size over 8 bytes, with
 * fewer spares than cells for large messages in a large ring): each gets
 * the segment size its layout gives, and carries messages across fork() in
 * order, whole. */
static const size_t k_mpmc_sizes[] = {9, 100, 256, 257, 300};

/* The size a channel's header records. */
static uint64_t segment_size(size_t esz, size_t cap)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = esz, .capacity = cap};
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    unsigned char *raw = map_raw(sl_chan_shm_fd(ch), 64);
    uint64_t size;
    memcpy(&size, raw + 32, 8);
    munmap(raw, 64);
    sl_chan_free(ch);
    return size;
}

START_TEST(test_mpmc_forms_by_size)
{
    size_t esz = k_mpmc_sizes[_i], spares_at, slots_at;
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = esz, .capacity = 3};
    sl_chan *ch;
    ck_assert_uint_eq(segment_size(esz, 3), mpmc_layout_size(esz, 3, &spares_at, &slots_at));
    ck_assert_uint_eq(segment_size(esz, 100),
                      mpmc_layout_size(esz, 100, &spares_at, &slots_at));
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    unsigned char buf[MSG_MAX];
    sl_test_seq_fill(buf, esz, 5);
    ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_OK);
    memset(buf, 0, sizeof buf);
    ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_OK);
    ck_assert_msg(sl_test_seq_is(buf, esz, 5), "%zu-byte message not whole", esz);
    uint64_t n = sl_test_scaled(3000, 600);
    consumer_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o, .n = n};
    pid_t pid = spawn(consume, &a);
    produce(ch, esz, n);
    join_ok(pid);
    sl_chan_free(ch);
}
END_TEST

/* ---- parking across processes -------------------------------------------- */
typedef struct park_arg {
    int fd;
    sl_chan_opts opts;
} park_arg;

/* Blocks in a receive with no deadline twice: woken by a send, then by the
 * close, both made by the parent after this child has had time to park. */
static int park_recv(void *p)
{
    park_arg *a = p;
    sl_chan *ch;
    if (sl_chan_shm_open_fd(&ch, a->fd, &a->opts) != SL_OK)
        return 1;
    unsigned char buf[MSG_MAX];
    if (sl_chan_recv(ch, buf) != SL_OK || !sl_test_seq_is(buf, a->opts.elem_size, 7))
        return 2;
    if (sl_chan_recv(ch, buf) != SL_CLOSED)
        return 3;
    if (sl_chan_try_send(ch, buf) != SL_CLOSED || !sl_chan_is_closed(ch))
        return 4;
    sl_chan_free(ch);
    return 0;
}

START_TEST(test_park_and_close_across)
{
    /* No periodic look for the child: the send and the close must wake it
     * through the shared futex, which a look would otherwise stand in for
     * (50 ms later) and so hide a wake that never crosses the process. */
    const uint64_t look = sl__shm_look_ns;
    sl__shm_look_ns = 3600 * SEC;
    sl_chan_opts o = opts_of(_i, 2);
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    park_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o};
    pid_t pid = spawn(park_recv, &a);
    unsigned char buf[MSG_MAX];
    sl_test_seq_fill(buf, o.elem_size, 7);
    /* Long enough that the child's spin is over and it sleeps in the futex
     * (if it were not, the test would pass without parking: never falsely fail). */
    sl_test_sleep_ns(50 * MS);
    ck_assert_int_eq(sl_chan_send(ch, buf), SL_OK);
    sl_test_sleep_ns(50 * MS);
    sl_chan_close(ch);
    join_ok(pid);
    sl_chan_free(ch);
    sl__shm_look_ns = look;
}
END_TEST

/* Finds the channel full, then blocks in a send until the parent receives. */
static int park_send(void *p)
{
    park_arg *a = p;
    sl_chan *ch;
    if (sl_chan_shm_open_fd(&ch, a->fd, &a->opts) != SL_OK)
        return 1;
    unsigned char buf[MSG_MAX];
    sl_test_seq_fill(buf, a->opts.elem_size, 99);
    if (sl_chan_len(ch) != sl_chan_cap(ch) || sl_chan_try_send(ch, buf) != SL_FULL ||
        sl_chan_send_for(ch, buf, 0) != SL_TIMEDOUT)
        return 2;
    if (sl_chan_send(ch, buf) != SL_OK)
        return 3;
    sl_chan_free(ch);
    return 0;
}

START_TEST(test_full_empty_timed)
{
    sl_chan_opts o = opts_of(_i, 3);
    sl_chan *ch;
    unsigned char buf[MSG_MAX];
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_EMPTY);
    ck_assert_int_eq(sl_chan_recv_for(ch, buf, 5 * MS), SL_TIMEDOUT);
    for (uint64_t i = 0; i < 3; i++) {
        sl_test_seq_fill(buf, o.elem_size, i);
        ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_OK);
    }
    ck_assert_int_eq(sl_chan_send_for(ch, buf, 5 * MS), SL_TIMEDOUT);
    park_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o};
    pid_t pid = spawn(park_send, &a);
    /* Until the child has parked in its send (not_full.waiters,
     * docs/shm-layout.md), after its checks of the full channel: a fixed
     * sleep let a child slow to start find it no longer full. */
    unsigned char *raw = map_raw(a.fd, 64);
    await_word(raw, 56, 1);
    munmap(raw, 64);
    ck_assert_int_eq(sl_chan_recv(ch, buf), SL_OK);
    ck_assert(sl_test_seq_is(buf, o.elem_size, 0));
    join_ok(pid);
    unsigned char four[4 * 64];
    size_t got = 0;
    ck_assert_int_eq(sl_chan_recv_n_for(ch, four, 4, 0, &got), SL_OK);
    ck_assert_uint_eq(got, 3);
    ck_assert(sl_test_seq_is(four, o.elem_size, 1));
    ck_assert(sl_test_seq_is(four + o.elem_size, o.elem_size, 2));
    ck_assert(sl_test_seq_is(four + 2 * o.elem_size, o.elem_size, 99));
    ck_assert_uint_eq(sl_chan_len(ch), 0);
    sl_chan_free(ch);
}
END_TEST

/* ---- the descriptor over a Unix socket ----------------------------------- */
static void send_fd(int sock, int fd)
{
    char byte = 'c';
    struct iovec iov = {&byte, 1};
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int))];
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
                       .msg_controllen = sizeof u.b};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    ck_assert_int_eq(sendmsg(sock, &m, 0), 1);
}

static int recv_fd(int sock)
{
    char byte;
    struct iovec iov = {&byte, 1};
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int))];
    } u;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
                       .msg_controllen = sizeof u.b};
    if (recvmsg(sock, &m, 0) != 1)
        return -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (!c || c->cmsg_type != SCM_RIGHTS)
        return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

static int socket_consumer(void *p)
{
    consumer_arg *a = p;
    a->fd = recv_fd(a->fd); /* the socket, then the segment */
    if (a->fd < 0)
        return 10;
    int r = consume(a);
    close(a->fd);
    return r;
}

START_TEST(test_scm_rights)
{
    int sv[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    sl_chan_opts o = opts_of(_i, 8);
    /* The child exists before the segment: the descriptor reaches it only
     * through the socket. */
    consumer_arg a = {.fd = sv[1], .opts = o, .n = 1000};
    pid_t pid = spawn(socket_consumer, &a);
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    send_fd(sv[0], sl_chan_shm_fd(ch));
    produce(ch, o.elem_size, 1000);
    join_ok(pid);
    sl_chan_free(ch);
    close(sv[0]);
    close(sv[1]);
}
END_TEST

/* ---- named segments -------------------------------------------------------- */
static const char *test_name(void)
{
    static char name[64];
    snprintf(name, sizeof name, "/sluice-unit-shm-%d", (int)getpid());
    return name;
}

static unsigned mode_of(const sl_chan *ch)
{
    struct stat sb;
    ck_assert_int_eq(fstat(sl_chan_shm_fd(ch), &sb), 0);
    return (unsigned)sb.st_mode & 0777u;
}

START_TEST(test_named)
{
    const char *name = test_name();
    sl_chan_opts o = opts_of(_i, 16);
    sl_chan *ch, *again;
    sl_chan_shm_unlink(name); /* a leftover of a killed run */
    ck_assert_int_eq(sl_chan_shm_create(&ch, name, &o, 0), SL_OK);
    ck_assert_uint_eq(mode_of(ch), 0600);
    ck_assert_int_eq(sl_chan_shm_create(&again, name, &o, 0), SL_EINVAL);
    ck_assert_int_eq(errno, EEXIST);
    consumer_arg a = {.opts = o, .n = 500, .name = name};
    pid_t pid = spawn(consume, &a);
    produce(ch, o.elem_size, 500);
    join_ok(pid);
    ck_assert_int_eq(sl_chan_shm_unlink(name), SL_OK);
    ck_assert_int_eq(sl_chan_shm_open(&again, name, &o), SL_EINVAL);
    ck_assert_int_eq(errno, ENOENT);
    ck_assert_int_eq(sl_chan_shm_unlink(name), SL_EINVAL);
    sl_chan_free(ch);
    /* Another mode, exactly (no umask), on both kinds. */
    ck_assert_int_eq(sl_chan_shm_create(&ch, name, &o, 0640), SL_OK);
    ck_assert_uint_eq(mode_of(ch), 0640);
    ck_assert_int_eq(sl_chan_shm_unlink(name), SL_OK);
    sl_chan_free(ch);
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    ck_assert_uint_eq(mode_of(ch), 0600);
    sl_chan_free(ch);
}
END_TEST

/* ---- refusals --------------------------------------------------------------- */
static void drop_nothing(void *elem, void *ctx) { (void)elem, (void)ctx; }

START_TEST(test_create_refusals)
{
    sl_chan *ch = NULL;
    sl_chan_opts o = {.flavor = SL_SPSC, .elem_size = 8, .capacity = 4};
    ck_assert_int_eq(sl_chan_shm_create(NULL, NULL, &o, 0), SL_EINVAL);
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, NULL, 0), SL_EINVAL);
    sl_flavor bad[] = {SL_LIST, SL_RING, SL_TIMER, SL__SPSC_SHARED, SL__MPMC_SHARED, 0, 77};
    for (int i = 0; i < N_OF(bad); i++) {
        sl_chan_opts b = o;
        b.flavor = bad[i];
        ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &b, 0), SL_EINVAL);
        /* The internal flavours are not sl_chan_new's either. */
        ck_assert_int_eq(sl_chan_new(&ch, &b) == SL_OK, bad[i] == SL_LIST || bad[i] == SL_RING);
        if (bad[i] == SL_LIST || bad[i] == SL_RING)
            sl_chan_free(ch);
        ch = NULL;
    }
    sl_chan_opts b = o;
    b.drop = drop_nothing;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &b, 0), SL_EINVAL);
    b = o, b.elem_size = 0;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &b, 0), SL_EINVAL);
    b = o, b.elem_size = SL_ELEM_MAX + 1;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &b, 0), SL_EINVAL);
    b = o, b.capacity = 0;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &b, 0), SL_EINVAL);
    b = o, b.capacity = ((size_t)1 << 40) + 1;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &b, 0), SL_EINVAL);
    /* SL_MPMC's swap form (over 8 bytes): a held spare names its slot in 28
     * bits, so capacity + spares slots stay at most 2^28 - 2 (spares: the
     * capacity, or 64 for messages over 256 bytes): the first capacity
     * refused, each side of 256 bytes. */
    b = (sl_chan_opts){.flavor = SL_MPMC, .elem_size = 16, .capacity = (size_t)1 << 27};
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &b, 0), SL_EINVAL);
    b = (sl_chan_opts){.flavor = SL_MPMC, .elem_size = 300, .capacity = ((size_t)1 << 28) - 65};
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &b, 0), SL_EINVAL);
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 01600), SL_EINVAL);
    ck_assert_int_eq(sl_chan_shm_create(&ch, "no-slash/in/middle", &o, 0), SL_EINVAL);
    ck_assert_ptr_null(ch);
    ck_assert_int_eq(sl_chan_shm_unlink(NULL), SL_EINVAL);
    ck_assert_int_eq(sl_chan_shm_fd(NULL), -1);
    /* An in-process channel has no segment. */
    ck_assert_int_eq(sl_chan_new(&ch, &o), SL_OK);
    ck_assert_int_eq(sl_chan_shm_fd(ch), -1);
    sl_chan_free(ch);
}
END_TEST

/* fallocate, interposed: ENOSPC while `fallocate_full` is set (a full
 * tmpfs), the system call otherwise. */
static atomic_int fallocate_full;
int fallocate(int fd, int mode, off_t offset, off_t len)
{
    if (atomic_load(&fallocate_full)) {
        errno = ENOSPC;
        return -1;
    }
    return (int)syscall(SYS_fallocate, fd, mode, offset, len);
}

static int open_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; fd++)
        n += fcntl(fd, F_GETFD) != -1;
    return n;
}

/* A segment whose pages cannot be had (a full /dev/shm, no memory) refuses
 * the creation with SL_ENOMEM, leaving no name, descriptor or handle: it
 * raised SIGBUS in the first process to touch a missing page instead. */
START_TEST(test_create_without_space)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 64, .capacity = 4096};
    const char *name = test_name();
    int fds = open_fds();
    atomic_store(&fallocate_full, 1);
    sl_chan *ch = (sl_chan *)&o;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_ENOMEM);
    ck_assert_int_eq(sl_chan_shm_create(&ch, name, &o, 0), SL_ENOMEM);
    atomic_store(&fallocate_full, 0);
    ck_assert_ptr_eq(ch, (sl_chan *)&o); /* *out untouched */
    ck_assert_int_eq(open_fds(), fds);
    int fd = shm_open(name, O_RDONLY, 0);
    ck_assert_msg(fd < 0 && errno == ENOENT, "the refused segment's name was left behind");
    /* With room, the same calls succeed. */
    ck_assert_int_eq(sl_chan_shm_create(&ch, name, &o, 0), SL_OK);
    ck_assert_int_eq(sl_chan_shm_unlink(name), SL_OK);
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_use_refusals)
{
    sl_chan_opts o = {.flavor = k_cfg[_i].flavor, .elem_size = sizeof(void *), .capacity = 4};
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    void *p = &o;
    ck_assert_int_eq(sl_chan_send_ptr(ch, &p), SL_EINVAL);
    ck_assert_int_eq(sl_chan_try_send_ptr(ch, &p), SL_EINVAL);
    ck_assert_int_eq(sl_chan_send_ptr_for(ch, &p, MS), SL_EINVAL);
    ck_assert_ptr_eq(p, &o); /* nothing consumed */
    ck_assert_uint_eq(sl_chan_len(ch), 0);
    uint64_t v, evicted;
    ck_assert_int_eq(sl_chan_send_evict(ch, &v, &evicted), SL_EINVAL);
    sl_chan_free(ch);
}
END_TEST

static sl_status open_with(int fd, sl_flavor f, size_t esz, size_t cap)
{
    sl_chan_opts e = {.flavor = f, .elem_size = esz, .capacity = cap};
    sl_chan *ch = NULL;
    sl_status st = sl_chan_shm_open_fd(&ch, fd, &e);
    if (st == SL_OK)
        sl_chan_free(ch);
    else
        ck_assert_ptr_null(ch);
    return st;
}

/* One header word at `off` changed to `bad`: refused; put back: opens. */
static void check_word(int fd, unsigned char *raw, size_t off, size_t width, uint64_t bad)
{
    uint64_t keep = 0;
    memcpy(&keep, raw + off, width);
    memcpy(raw + off, &bad, width);
    ck_assert_int_eq(open_with(fd, SL_MPMC, 64, 0), SL_EINVAL);
    memcpy(raw + off, &keep, width);
    ck_assert_int_eq(open_with(fd, SL_MPMC, 64, 0), SL_OK);
}

START_TEST(test_open_refusals)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 64, .capacity = 10};
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    int fd = sl_chan_shm_fd(ch);
    ck_assert_int_eq(open_with(fd, SL_MPMC, 64, 10), SL_OK);
    ck_assert_int_eq(open_with(fd, SL_MPMC, 64, 0), SL_OK);
    ck_assert_int_eq(open_with(fd, SL_SPSC, 64, 10), SL_EINVAL);
    ck_assert_int_eq(open_with(fd, SL_MPMC, 8, 10), SL_EINVAL);
    ck_assert_int_eq(open_with(fd, SL_MPMC, 64, 11), SL_EINVAL);
    sl_chan_opts e = o;
    e.drop = drop_nothing;
    sl_chan *other;
    ck_assert_int_eq(sl_chan_shm_open_fd(&other, fd, &e), SL_EINVAL);
    ck_assert_int_eq(sl_chan_shm_open_fd(&other, -1, &o), SL_EINVAL);
    ck_assert_int_eq(sl_chan_shm_open_fd(NULL, fd, &o), SL_EINVAL);
    ck_assert_int_eq(sl_chan_shm_open_fd(&other, fd, NULL), SL_EINVAL);
    ck_assert_int_eq(sl_chan_shm_open(&other, NULL, &o), SL_EINVAL);
    /* Names outside shm.h's form, though glibc's shm_open takes some. */
    char long_name[258] = "/";
    memset(long_name + 1, 'n', 255);
    const char *bad_names[] = {"sluice-noslash", "", "/", "/a/b", "//x", long_name};
    for (size_t i = 0; i < N_OF(bad_names); i++) {
        sl_chan *made = NULL;
        errno = 0;
        ck_assert_int_eq(sl_chan_shm_create(&made, bad_names[i], &o, 0), SL_EINVAL);
        ck_assert_int_eq(errno, EINVAL);
        ck_assert_ptr_null(made);
        ck_assert_int_eq(sl_chan_shm_open(&other, bad_names[i], &o), SL_EINVAL);
        ck_assert_int_eq(sl_chan_shm_unlink(bad_names[i]), SL_EINVAL);
    }
    ck_assert_int_eq(access("/dev/shm/sluice-noslash", F_OK), -1); /* nothing made */
    unsigned char *raw = map_raw(fd, 64);
    check_word(fd, raw, 0, 8, 0x1234);            /* magic */
    check_word(fd, raw, 8, 4, 1);                 /* version: the one before peer death */
    check_word(fd, raw, 8, 4, 2);                 /* the one before the barrier mode */
    check_word(fd, raw, 8, 4, 4);                 /* the one before registered receivers */
    check_word(fd, raw, 8, 4, 5);                 /* the one before the shared swap form */
    check_word(fd, raw, 8, 4, 6);                 /* the one before reclaims name their process */
    check_word(fd, raw, 8, 4, 7);                 /* the one before held spares name theirs */
    check_word(fd, raw, 8, 4, 8);                 /* the one before large messages swapped */
    check_word(fd, raw, 8, 4, 9);                 /* the one with anonymous marks */
    check_word(fd, raw, 8, 4, 10);                /* the one before lanes */
    check_word(fd, raw, 8, 4, 11);                /* the one before lazy counters */
    check_word(fd, raw, 8, 4, 12);                /* the one that settled unheld records */
    check_word(fd, raw, 12, 4, SL_LIST);          /* flavour: not shareable */
    check_word(fd, raw, 16, 8, 0);                /* message size 0 */
    check_word(fd, raw, 24, 8, 0);                /* capacity 0 */
    check_word(fd, raw, 24, 8, (uint64_t)1 << 50); /* a geometry far beyond the segment */
    check_word(fd, raw, 24, 8, 11);               /* one message more than fits */
    munmap(raw, 64);
    /* A file that is not a channel at all, and one too short for a header. */
    int junk = memfd_create("junk", MFD_CLOEXEC);
    ck_assert_int_ge(junk, 0);
    ck_assert_int_eq(open_with(junk, SL_MPMC, 64, 0), SL_EINVAL);
    ck_assert_int_eq(ftruncate(junk, 1 << 20), 0);
    ck_assert_int_eq(open_with(junk, SL_MPMC, 64, 0), SL_EINVAL);
    close(junk);
    ck_assert_int_eq(open_with(STDIN_FILENO, SL_MPMC, 64, 0), SL_EINVAL);
    /* The memfd is sealed: no peer can shrink it under a mapping. */
    ck_assert_int_ne(ftruncate(fd, 100), 0);
    sl_chan_free(ch);
}
END_TEST

/* A copy of segment fd's bytes in a new memfd made with `flags`. */
static int copy_segment(int fd, unsigned flags)
{
    struct stat sb;
    ck_assert_int_eq(fstat(fd, &sb), 0);
    unsigned char *raw = map_raw(fd, (size_t)sb.st_size);
    int copy = memfd_create("copy", MFD_CLOEXEC | flags);
    ck_assert_int_ge(copy, 0);
    ck_assert_int_eq(pwrite(copy, raw, (size_t)sb.st_size, 0), sb.st_size);
    munmap(raw, (size_t)sb.st_size);
    return copy;
}

/* Descriptors a peer may pass that are no channel's segment, or that this
 * process could not map writable: each refused with SL_EINVAL, and none
 * leaves a descriptor or a mapping behind. */
static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    int n = 0, c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

START_TEST(test_open_odd_descriptors)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 64, .capacity = 10};
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    int fd = sl_chan_shm_fd(ch), p[2], sv[2];
    char self[40];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    int sealed_copy = copy_segment(fd, MFD_ALLOW_SEALING);
    ck_assert_int_eq(fcntl(sealed_copy, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_FUTURE_WRITE), 0);
    int odd[] = {open("/tmp", O_RDONLY | O_DIRECTORY), p[0], p[1], sv[0],
                 open(self, O_RDONLY), open(self, O_PATH), open("/dev/zero", O_RDWR),
                 sealed_copy};
    int maps = count_lines("/proc/self/maps"), fds = open_fds();
    for (size_t i = 0; i < N_OF(odd); i++) {
        ck_assert_int_ge(odd[i], 0);
        ck_assert_msg(open_with(odd[i], SL_MPMC, 64, 0) == SL_EINVAL, "descriptor %zu opened", i);
    }
    ck_assert_int_eq(open_with(1 << 30, SL_MPMC, 64, 0), SL_EINVAL); /* never open */
    ck_assert_int_eq(count_lines("/proc/self/maps"), maps);
    ck_assert_int_eq(open_fds(), fds);
    for (size_t i = 0; i < N_OF(odd); i++)
        close(odd[i]);
    close(sv[1]);
    sl_chan_free(ch);
}
END_TEST

/* A descriptor must be sealed against shrinking: the peer that passed it
 * could truncate it under the opener's mapping (SIGBUS) otherwise. The same
 * segment's bytes, in memfds sealed in different ways and in named files. */
START_TEST(test_open_unsealed)
{
    sl_chan_opts o = opts_of(_i, 10);
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    int fd = sl_chan_shm_fd(ch);
    ck_assert_int_eq(open_with(fd, o.flavor, o.elem_size, 10), SL_OK);
    /* Sealable, not sealed: refused until F_SEAL_SHRINK is there. */
    int copy = copy_segment(fd, MFD_ALLOW_SEALING);
    errno = 0;
    ck_assert_int_eq(open_with(copy, o.flavor, o.elem_size, 10), SL_EINVAL);
    ck_assert_int_eq(errno, EPERM);
    ck_assert_int_eq(fcntl(copy, F_ADD_SEALS, F_SEAL_GROW), 0);
    ck_assert_int_eq(open_with(copy, o.flavor, o.elem_size, 10), SL_EINVAL);
    ck_assert_int_eq(fcntl(copy, F_ADD_SEALS, F_SEAL_SHRINK), 0);
    ck_assert_int_eq(open_with(copy, o.flavor, o.elem_size, 10), SL_OK);
    close(copy);
    /* Never sealable: refused for good. */
    copy = copy_segment(fd, 0);
    ck_assert_int_eq(open_with(copy, o.flavor, o.elem_size, 10), SL_EINVAL);
    close(copy);
    sl_chan_free(ch);
    /* A file with a name is no safer: the peer that passes one it made can
     * truncate it as well (found by review: a linked file was taken as a
     * named object, so a peer refused its unsealed memfd passed a file in
     * /tmp instead, truncated it, and the opener died of SIGBUS). A named
     * object's descriptor is refused with or without its name; the name
     * opens it. */
    const char *name = test_name();
    sl_chan_shm_unlink(name); /* a leftover of a killed run */
    ck_assert_int_eq(sl_chan_shm_create(&ch, name, &o, 0), SL_OK);
    errno = 0;
    ck_assert_int_eq(open_with(sl_chan_shm_fd(ch), o.flavor, o.elem_size, 10), SL_EINVAL);
    ck_assert_int_eq(errno, EPERM);
    sl_chan *by_name;
    ck_assert_int_eq(sl_chan_shm_open(&by_name, name, &o), SL_OK);
    sl_chan_free(by_name);
    ck_assert_int_eq(sl_chan_shm_unlink(name), SL_OK);
    ck_assert_int_eq(open_with(sl_chan_shm_fd(ch), o.flavor, o.elem_size, 10), SL_EINVAL);
    char path[] = "/tmp/sluice-unit-shm-XXXXXX";
    int file = mkstemp(path);
    ck_assert_int_ge(file, 0);
    struct stat sb;
    ck_assert_int_eq(fstat(sl_chan_shm_fd(ch), &sb), 0);
    unsigned char *raw = map_raw(sl_chan_shm_fd(ch), (size_t)sb.st_size);
    ck_assert_int_eq(pwrite(file, raw, (size_t)sb.st_size, 0), sb.st_size);
    munmap(raw, (size_t)sb.st_size);
    errno = 0;
    ck_assert_int_eq(open_with(file, o.flavor, o.elem_size, 10), SL_EINVAL);
    ck_assert_int_eq(errno, EPERM);
    unlink(path);
    close(file);
    sl_chan_free(ch);
}
END_TEST

static void set_word(unsigned char *raw, size_t off, uint64_t v) { memcpy(raw + off, &v, 8); }

/* A swap-form SL_MPMC segment and the peer's mapping of it (*size bytes),
 * with every spare entry set to `spare` (UINT64_MAX: none). */
typedef struct swap_seg {
    sl_chan *ch;
    unsigned char *raw;
    size_t size, spares_at;
} swap_seg;

static swap_seg swap_segment(size_t esz, size_t cap, uint64_t spare)
{
    swap_seg g;
    size_t slots_at;
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = esz, .capacity = cap};
    g.size = mpmc_layout_size(esz, cap, &g.spares_at, &slots_at);
    ck_assert_int_eq(sl_chan_shm_create(&g.ch, NULL, &o, 0), SL_OK);
    g.raw = map_raw(sl_chan_shm_fd(g.ch), g.size);
    for (size_t j = 0; j < cap; j++)
        set_word(g.raw, g.spares_at + 8 * j, spare);
    return g;
}

/* The swap form's spare table holds a peer's garbage: an entry is taken
 * only if its index is in range (SL_FULL when none is: the garbage is
 * skipped, never written through), and an index out of range in a written cell makes the pop say
 * SL_EMPTY with nothing copied. Put back sound, the channel works again. */
START_TEST(test_spare_garbage)
{
    enum { CAP = 4 };
    /* Just past the slots (2 x CAP), and far outside the segment. */
    swap_seg g = swap_segment(64, CAP, 2 * CAP);
    sl_chan *ch = g.ch;
    unsigned char *raw = g.raw, msg[64], out[64];
    sl_test_seq_fill(msg, 64, 5);
    const uint64_t bad[] = {2 * CAP, (uint64_t)1 << 40};
    for (int b = 0; b < 2; b++) {
        for (size_t j = 0; j < CAP; j++)
            set_word(raw, g.spares_at + 8 * j, bad[b]);
        for (int k = 0; k < CAP + 2; k++)
            ck_assert_int_eq(sl_chan_try_send(ch, msg), SL_FULL);
        ck_assert_uint_eq(sl_chan_len(ch), 0);
    }
    for (size_t j = 0; j < CAP; j++) /* sound again: slot CAP + j */
        set_word(raw, g.spares_at + 8 * j, CAP + j);
    ck_assert_int_eq(sl_chan_try_send(ch, msg), SL_OK);
    /* The written cell (position 0, cell 0) names a slot out of range. */
    set_word(raw, 6144 + 8, (uint64_t)1 << 40);
    memset(out, 0xA5, sizeof out);
    ck_assert_int_eq(sl_chan_try_recv(ch, out), SL_EMPTY);
    for (size_t i = 0; i < sizeof out; i++)
        ck_assert_uint_eq(out[i], 0xA5); /* nothing copied */
    munmap(raw, g.size);
    sl_chan_free(ch);
}
END_TEST

/* A peer that writes into an SL_SPSC segment's debug words (producer_active
 * at 1200, consumer_active at 1264: docs/shm-layout.md), here without
 * pause while this process sends and receives: the calls go on, never
 * abort as a second producer or consumer would in one process (found by
 * review: a shared channel cleared the word and then checked it, and a
 * write landing between the two aborted the caller). */
typedef struct {
    unsigned char *raw;
    atomic_bool stop;
} active_writer;

static void *write_active(void *p)
{
    active_writer *w = p;
    while (!atomic_load_explicit(&w->stop, memory_order_relaxed)) {
        atomic_store_explicit((_Atomic uint32_t *)(void *)(w->raw + 1200), 1u,
                              memory_order_relaxed);
        atomic_store_explicit((_Atomic uint32_t *)(void *)(w->raw + 1264), 1u,
                              memory_order_relaxed);
    }
    return NULL;
}

START_TEST(test_spsc_debug_words_garbage)
{
    sl_chan_opts o = {.flavor = SL_SPSC, .elem_size = 16, .capacity = 4};
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    active_writer w = {.raw = map_raw(sl_chan_shm_fd(ch), 4096)};
    atomic_init(&w.stop, false);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, write_active, &w), 0);
    unsigned char msg[4 * 16], out[4 * 16];
    sl_test_seq_fill(msg, sizeof msg, 3);
    for (int i = 0; i < 40000; i++) {
        ck_assert_int_eq(sl_chan_try_send(ch, msg), SL_OK);
        ck_assert_int_eq(sl_chan_try_recv(ch, out), SL_OK);
        ck_assert_uint_eq(sl_chan_try_send_n(ch, msg, 4), 4);
        ck_assert_uint_eq(sl_chan_try_recv_n(ch, out, 4), 4);
    }
    atomic_store(&w.stop, true);
    pthread_join(t, NULL);
    ck_assert_mem_eq(out, msg, sizeof msg);
    munmap(w.raw, 4096);
    sl_chan_free(ch);
}
END_TEST

/* The swap form's slots at rest, read from the segment: each of the
 * 2 x cap once, in a cell or a free spare entry, and no entry held. */
static void check_slots_whole(int fd, size_t esz, size_t cap, unsigned k, int round)
{
    size_t spares_at, slots_at, size = mpmc_layout_size(esz, cap, &spares_at, &slots_at);
    unsigned char *raw = map_raw(fd, size);
    unsigned count[16] = {0};
    ck_assert_uint_le(2 * cap, N_OF(count));
    for (size_t i = 0; i < 2 * cap; i++) {
        uint64_t w;
        memcpy(&w, i < cap ? raw + 6144 + 16 * i + 8 : raw + spares_at + 8 * (i - cap), 8);
        ck_assert_msg(w < 2 * cap, "step %u round %d: %s %zu holds %llx", k, round,
                      i < cap ? "cell" : "spare entry", i < cap ? i : i - cap, ULL(w));
        count[w]++;
    }
    for (size_t j = 0; j < 2 * cap; j++)
        ck_assert_msg(count[j] == 1, "step %u round %d: slot %zu is in %u places", k, round, j,
                      count[j]);
    munmap(raw, size);
}

/* What a sending process that held no record (all 64 held) leaves when it
 * is killed holding a spare: an entry held by nobody, or, as here, empty.
 * With every spare lost so, sends say SL_FULL (the timed one SL_TIMEDOUT)
 * though the ring is empty; one spare back and they go on, as many as the
 * capacity (a send needs one spare at a time). */
START_TEST(test_spares_all_lost)
{
    enum { CAP = 3 };
    swap_seg g = swap_segment(24, CAP, UINT64_MAX); /* "none": held by the dead */
    sl_chan *ch = g.ch;
    unsigned char msg[24], out[24];
    sl_test_seq_fill(msg, 24, 1);
    ck_assert_int_eq(sl_chan_try_send(ch, msg), SL_FULL);
    ck_assert_int_eq(sl_chan_send_for(ch, msg, 10 * 1000 * 1000), SL_TIMEDOUT);
    ck_assert_uint_eq(sl_chan_len(ch), 0);
    set_word(g.raw, g.spares_at + 8 * 1, CAP + 1); /* one spare left */
    for (uint64_t i = 0; i < CAP; i++) {
        sl_test_seq_fill(msg, 24, i);
        ck_assert_int_eq(sl_chan_try_send(ch, msg), SL_OK);
    }
    ck_assert_int_eq(sl_chan_try_send(ch, msg), SL_FULL); /* the ring, now */
    for (uint64_t i = 0; i < CAP; i++) {
        ck_assert_int_eq(sl_chan_try_recv(ch, out), SL_OK);
        ck_assert(sl_test_seq_is(out, 24, i));
    }
    munmap(g.raw, g.size);
    sl_chan_free(ch);
}
END_TEST

static int reap(pid_t pid);

/* A child that claims a record (its first send) and exits: the record's
 * owner is then a dead process. */
static int claim_and_exit(void *p)
{
    const swap_seg *g = p;
    sl_chan *ch;
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 24};
    unsigned char msg[24] = {0};
    if (sl_chan_shm_open_fd(&ch, sl_chan_shm_fd(g->ch), &o) != SL_OK)
        return 1;
    return sl_chan_try_send(ch, msg) == SL_OK && sl_chan_try_recv(ch, msg) == SL_OK ? 0 : 2;
}

/* An entry held by record `rec` (docs/shm-layout.md, "The spare table"):
 * the slot the push took, and the slot its cell offered (all ones: none). */
static uint64_t held_entry(unsigned rec, uint64_t offer, uint64_t took)
{
    return (uint64_t)1 << 63 | (uint64_t)rec << 56 | offer << 28 | took;
}

/* Spare entries held by a process now dead (record 0), each left as a death
 * at one point of a send leaves it, come back by the look: _i 0, killed
 * after taking the spare, before any CAS (every entry), the look made by a
 * send that finds no spare, with no role registered; 1, killed after its
 * cell's CAS took the slot (entry 0: the offer is what comes back); 2,
 * killed before that CAS (the slot it took comes back); 3, two of its
 * threads, the second's CAS having taken the first's published slot out of
 * the cell again (the first's entry is settled once the second's gives
 * that slot back: a second pass). The slots are then whole, and the
 * capacity too. */
START_TEST(test_spares_of_the_dead)
{
    enum { CAP = 3 };
    const uint64_t look = sl__shm_look_ns;
    swap_seg g = swap_segment(24, CAP, UINT64_MAX);
    for (size_t j = 0; j < CAP; j++) /* sound again: slot CAP + j */
        set_word(g.raw, g.spares_at + 8 * j, CAP + j);
    ck_assert_int_eq(reap(spawn(claim_and_exit, &g)), 0); /* record 0, dead */
    unsigned char msg[24], out[24];
    sl__shm_look_ns = 0;
    if (_i == 0) {
        for (size_t j = 0; j < CAP; j++) {
            uint64_t took;
            memcpy(&took, g.raw + g.spares_at + 8 * j, 8);
            set_word(g.raw, g.spares_at + 8 * j, held_entry(0, (1u << 28) - 1, took));
        }
        ck_assert_int_eq(sl_chan_try_send(g.ch, msg), SL_FULL); /* no spare: it looks */
    } else {
        /* Entry 0 as if its push had taken its slot and read cell 0's. */
        uint64_t took, offer;
        memcpy(&took, g.raw + g.spares_at, 8);
        memcpy(&offer, g.raw + 6144 + 8, 8);
        if (_i == 1) { /* the CAS happened: `took` is in the cell, `offer` in the dead hand */
            set_word(g.raw, 6144 + 8, took);
            set_word(g.raw, g.spares_at, held_entry(0, offer, took));
        } else if (_i == 2) { /* no CAS: `took` died in the hand, `offer` is still the cell's */
            set_word(g.raw, g.spares_at, held_entry(0, offer, took));
        } else { /* two threads: the second's CAS swapped the first's slot out again */
            uint64_t second;
            memcpy(&second, g.raw + g.spares_at + 8, 8);
            set_word(g.raw, 6144 + 8, second);
            set_word(g.raw, g.spares_at, held_entry(0, offer, took));
            set_word(g.raw, g.spares_at + 8, held_entry(0, took, second));
        }
        ck_assert_int_eq(sl_chan_shm_receiver(g.ch), SL_OK); /* its empty receives look */
        ck_assert_int_eq(sl_chan_try_recv(g.ch, out), SL_EMPTY);
    }
    check_slots_whole(sl_chan_shm_fd(g.ch), 24, CAP, 0, _i);
    for (uint64_t i = 0; i < CAP; i++) {
        sl_test_seq_fill(msg, 24, i);
        ck_assert_int_eq(sl_chan_try_send(g.ch, msg), SL_OK);
    }
    for (uint64_t i = 0; i < CAP; i++) {
        ck_assert_int_eq(sl_chan_try_recv(g.ch, out), SL_OK);
        ck_assert(sl_test_seq_is(out, 24, i));
    }
    sl__shm_look_ns = look;
    munmap(g.raw, g.size);
    sl_chan_free(g.ch);
}
END_TEST

/* A named segment can be truncated (no seals): the next open refuses it. */
START_TEST(test_short_segment)
{
    const char *name = test_name();
    sl_chan_opts o = {.flavor = SL_SPSC, .elem_size = 64, .capacity = 100};
    sl_chan *ch;
    sl_chan_shm_unlink(name);
    ck_assert_int_eq(sl_chan_shm_create(&ch, name, &o, 0), SL_OK);
    int fd = sl_chan_shm_fd(ch);
    struct stat sb;
    ck_assert_int_eq(fstat(fd, &sb), 0);
    sl_chan_free(ch); /* no mapping of ours is left to fault */
    sl_chan *again;
    ck_assert_int_eq(sl_chan_shm_open(&again, name, &o), SL_OK);
    fd = sl_chan_shm_fd(again);
    sl_chan_free(again);
    int raw = shm_open(name, O_RDWR, 0);
    ck_assert_int_ge(raw, 0);
    ck_assert_int_eq(ftruncate(raw, sb.st_size - 1), 0);
    ck_assert_int_eq(sl_chan_shm_open(&again, name, &o), SL_EINVAL);
    ck_assert_int_eq(ftruncate(raw, 1000), 0);
    ck_assert_int_eq(sl_chan_shm_open(&again, name, &o), SL_EINVAL);
    close(raw);
    ck_assert_int_eq(sl_chan_shm_unlink(name), SL_OK);
}
END_TEST

/* ---- a peer that writes garbage -------------------------------------------- */
/* Random words over the control words, the counters and (SL_MPMC) the
 * cells, then operations with every non-blocking form: the process must
 * not fault, and the answers stay in range (a process that fails to bound
 * an index faults here, or, under ASan, reports the access). The SPSC debug build's
 * `active` words are left alone: a peer setting them makes that build's
 * misuse check abort, as documented. */
static void scribble(unsigned char *raw, size_t len, sl_test_rng *r, bool spsc)
{
    for (uint64_t k = 1 + sl_test_rng_next(r) % 4; k > 0; k--) {
        size_t off = 40 + (sl_test_rng_next(r) % ((len - 48) / 8)) * 8;
        if (spsc && (off % 64) == 48 && off >= 1152 && off < 1280)
            continue; /* sl_spsc_side.active, debug builds */
        uint64_t v = sl_test_rng_next(r);
        /* Small values reach more branches; large ones, a stamp or a
         * counter far from the others (a guarded ring gives up there). */
        if (sl_test_rng_next(r) % 2)
            v %= 64;
        memcpy(raw + off, &v, 8);
    }
}

/* A few valid operations, so that the scribble meets a live state: a
 * partly full ring, counters mid-lap, written and taken cells. */
static void some_traffic(sl_chan *ch, sl_test_rng *r, unsigned char *buf)
{
    for (uint64_t k = sl_test_rng_next(r) % 8; k > 0; k--)
        (void)sl_chan_try_send(ch, buf);
    for (uint64_t k = sl_test_rng_next(r) % 8; k > 0; k--)
        (void)sl_chan_try_recv(ch, buf);
}

START_TEST(test_garbage)
{
    sl_chan_opts o = opts_of(_i, 5);
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    /* The whole segment: the control part, counters, sender records, the
     * cells, the spare table (SL_MPMC's swap form) and the slots. */
    struct stat sb;
    ck_assert_int_eq(fstat(sl_chan_shm_fd(ch), &sb), 0);
    size_t len = (size_t)sb.st_size;
    unsigned char *raw = map_raw(sl_chan_shm_fd(ch), len);
    /* Each round starts from the fresh segment (a scribbled counter can
     * leave a ring that refuses everything for good, and then later
     * scribbles would meet nothing alive). */
    unsigned char *fresh = xmalloc(len);
    memcpy(fresh, raw, len);
    sl_test_rng r;
    sl_test_rng_seed(&r, sl_test_seed("shm", "garbage"));
    /* Batches longer than any ring's storage (SL_SPSC stores 8 or 32 slots
     * here): a batch that believed a corrupted counter would run past it. */
    unsigned char buf[64 * 40];
    memset(buf, 0, sizeof buf);
    uint64_t rounds = sl_test_scaled(2000, 400);
    for (uint64_t round = 0; round < rounds; round++) {
        memcpy(raw, fresh, len);
        some_traffic(ch, &r, buf);
        scribble(raw, len, &r, o.flavor == SL_SPSC);
        for (int k = 0; k < 3; k++) {
            sl_status s1 = sl_chan_try_send(ch, buf);
            sl_status s2 = sl_chan_try_recv(ch, buf);
            size_t sent = sl_chan_try_send_n(ch, buf, 40);
            size_t got = sl_chan_try_recv_n(ch, buf, 40);
            ck_assert(s1 == SL_OK || s1 == SL_FULL || s1 == SL_CLOSED);
            ck_assert(s2 == SL_OK || s2 == SL_EMPTY || s2 == SL_CLOSED);
            ck_assert_uint_le(sent, 40);
            ck_assert_uint_le(got, 40);
            ck_assert_uint_le(sl_chan_len(ch), 5);
            ck_assert_int_ne(sl_chan_recv_for(ch, buf, 0), SL_EINVAL);
        }
    }
    free(fresh);
    munmap(raw, len);
    sl_chan_free(ch);
}
END_TEST

/* ---- a peer that dies ------------------------------------------------------ */

/* The exit status of a child, or 128 + the signal that ended it. */
static int reap(pid_t pid)
{
    int ws = 0;
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
}

typedef struct death_arg {
    int fd;
    sl_chan_opts opts;
    int op;      /* what the child does (enum below) */
    unsigned k;  /* fault injection: the step at which it dies */
    uint64_t v;  /* the message it sends */
} death_arg;

enum { DIE_SEND, DIE_RECV, DIE_PARK, DIE_NOTIFY, SENDER_KILLED, SENDER_FREED };

/* A registered sender: three messages, then killed (no sl_chan_free) or freed. */
static int registered_sender(void *p)
{
    death_arg *a = p;
    sl_chan *ch;
    unsigned char buf[MSG_MAX];
    if (sl_chan_shm_open_fd(&ch, a->fd, &a->opts) != SL_OK)
        return 1;
    if (sl_chan_shm_sender(ch) != SL_OK || sl_chan_shm_sender(ch) != SL_OK)
        return 2;
    for (uint64_t i = 0; i < 3; i++) {
        sl_test_seq_fill(buf, a->opts.elem_size, i);
        if (sl_chan_send(ch, buf) != SL_OK)
            return 3;
    }
    if (a->op == SENDER_KILLED)
        raise(SIGKILL);
    sl_chan_free(ch);
    return 0;
}

/* The receiver's end, by form: blocked, timed, or polling with the try form. */
static sl_status recv_by_form(sl_chan *ch, void *buf, int form)
{
    if (form == 0)
        return sl_chan_recv(ch, buf);
    if (form == 1)
        return sl_chan_recv_for(ch, buf, survivor_wait());
    sl_status st = SL_EMPTY;
    for (uint64_t i = 0; i < survivor_wait() / MS && st == SL_EMPTY; i++)
        if ((st = sl_chan_try_recv(ch, buf)) == SL_EMPTY)
            usleep(1000);
    return st;
}

/* Receivers learn that the last registered sender is gone, killed or freed,
 * in each form; the channel is then closed for every process. _i: the
 * configuration, the form, killed or freed. */
START_TEST(test_last_sender_gone)
{
    int cfg = _i % 4, form = (_i / 4) % 3;
    sl_chan_opts o = opts_of(cfg, 8);
    sl_chan *ch;
    unsigned char buf[MSG_MAX];
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    /* Nobody registered yet: empty, not closed. */
    ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_EMPTY);
    death_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o, .op = _i < 12 ? SENDER_KILLED : SENDER_FREED};
    pid_t pid = spawn(registered_sender, &a);
    for (uint64_t i = 0; i < 3; i++) {
        ck_assert_int_eq(sl_chan_recv_for(ch, buf, 10 * SEC), SL_OK);
        ck_assert(sl_test_seq_is(buf, o.elem_size, i));
    }
    ck_assert_int_eq(recv_by_form(ch, buf, form), SL_CLOSED);
    ck_assert_int_eq(reap(pid), a.op == SENDER_KILLED ? 128 + SIGKILL : 0);
    ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_CLOSED);
    ck_assert_int_eq(sl_chan_shm_sender(ch), SL_CLOSED);
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_sender_refusals)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 8, .capacity = 4};
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_sender(NULL), SL_EINVAL);
    ck_assert_int_eq(sl_chan_new(&ch, &o), SL_OK);
    ck_assert_int_eq(sl_chan_shm_sender(ch), SL_EINVAL);
    sl_chan_free(ch);
    /* A registered sender that frees its handle closes the channel: one
     * process, two handles. */
    sl_chan *rx, *tx;
    ck_assert_int_eq(sl_chan_shm_create(&rx, NULL, &o, 0), SL_OK);
    ck_assert_int_eq(sl_chan_shm_open_fd(&tx, sl_chan_shm_fd(rx), &o), SL_OK);
    ck_assert_int_eq(sl_chan_shm_sender(tx), SL_OK);
    uint64_t v = 7;
    ck_assert_int_eq(sl_chan_send(tx, &v), SL_OK);
    sl_chan_free(tx);
    ck_assert_int_eq(sl_chan_try_recv(rx, &v), SL_OK);
    ck_assert_int_eq(sl_chan_try_recv(rx, &v), SL_CLOSED);
    sl_chan_free(rx);
}
END_TEST

/* ---- the last receiver is gone ---- */
enum { RECEIVER_KILLED, RECEIVER_FREED };

/* A registered receiver: tells the parent (one byte on `pipe`), waits
 * until the parent has filled the channel, lets it block in its send, then
 * is killed (no sl_chan_free) or frees its handle. */
static int registered_receiver(void *p)
{
    death_arg *a = p;
    sl_chan *ch;
    if (sl_chan_shm_open_fd(&ch, a->fd, &a->opts) != SL_OK)
        return 1;
    if (sl_chan_shm_receiver(ch) != SL_OK || sl_chan_shm_receiver(ch) != SL_OK)
        return 2;
    char c = 1;
    if (write((int)a->v, &c, 1) != 1)
        return 3;
    while (sl_chan_len(ch) < a->opts.capacity)
        usleep(1000);
    usleep(20 * 1000); /* the parent's send is (most likely) parked by now */
    if (a->op == RECEIVER_KILLED)
        raise(SIGKILL);
    sl_chan_free(ch);
    return 0;
}

/* The sender's end, by form: blocked, timed, selecting, or polling with the
 * try form. */
static sl_status send_by_form(sl_chan *ch, const void *buf, int form)
{
    if (form == 0)
        return sl_chan_send(ch, buf);
    if (form == 1)
        return sl_chan_send_for(ch, buf, survivor_wait());
    if (form == 3) {
        sl_select_case c[] = {{NULL, SL_SEL_RECV, NULL}, {ch, SL_SEL_SEND, (void *)buf}};
        size_t idx = 0;
        sl_status st = sl_select(c, 2, survivor_wait(), &idx);
        return st == SL_CLOSED && idx != 1 ? SL_EINVAL : st;
    }
    sl_status st = SL_FULL;
    for (uint64_t i = 0; i < survivor_wait() / MS && st == SL_FULL; i++)
        if ((st = sl_chan_try_send(ch, buf)) == SL_FULL)
            usleep(1000);
    return st;
}

/* A sender blocked on a full channel learns that the last registered
 * receiver is gone, killed or freed, in each form: its send returns
 * SL_CLOSED, and the messages inside stay receivable. _i: the
 * configuration, the form, killed or freed. */
START_TEST(test_last_receiver_gone)
{
    int cfg = _i % 4, form = (_i / 4) % 4;
    const uint64_t look = sl__shm_look_ns;
    sl__shm_look_ns = 5 * MS; /* a prompt look: the test stays short */
    sl_chan_opts o = opts_of(cfg, 4);
    sl_chan *ch;
    unsigned char buf[MSG_MAX];
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    death_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o, .v = (uint64_t)ready[1],
                   .op = _i < 16 ? RECEIVER_KILLED : RECEIVER_FREED};
    pid_t pid = spawn(registered_receiver, &a);
    char c;
    ck_assert_int_eq(read(ready[0], &c, 1), 1); /* registered */
    for (uint64_t i = 0; i < o.capacity; i++) {
        sl_test_seq_fill(buf, o.elem_size, i);
        ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_OK);
    }
    sl_test_seq_fill(buf, o.elem_size, 99);
    ck_assert_int_eq(send_by_form(ch, buf, form), SL_CLOSED);
    ck_assert_int_eq(reap(pid), a.op == RECEIVER_KILLED ? 128 + SIGKILL : 0);
    /* Closed for everyone; what was sent stays, in order, then SL_CLOSED. */
    ck_assert_int_eq(sl_chan_shm_receiver(ch), SL_CLOSED);
    for (uint64_t i = 0; i < o.capacity; i++) {
        ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_OK);
        ck_assert(sl_test_seq_is(buf, o.elem_size, i));
    }
    ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_CLOSED);
    sl_chan_free(ch);
    close(ready[0]);
    close(ready[1]);
    sl__shm_look_ns = look;
}
END_TEST

/* The batch forms are receives and sends too: a receiver polling with
 * sl_chan_try_recv_n learns that the last registered sender is gone, and a
 * sender polling a full channel with sl_chan_try_send_n that the last
 * registered receiver is (found by review: neither batch made the look, so
 * a polling loop of batches never saw the channel close). _i: the
 * configuration, then the direction. */
START_TEST(test_last_peer_gone_batch)
{
    int cfg = _i % 4;
    bool recv_side = _i < 4;
    const uint64_t look = sl__shm_look_ns;
    sl__shm_look_ns = 5 * MS; /* a prompt look: the test stays short */
    sl_chan_opts o = opts_of(cfg, 4);
    sl_chan *ch;
    unsigned char buf[4 * MSG_MAX];
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    death_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o, .v = (uint64_t)ready[1],
                   .op = recv_side ? SENDER_KILLED : RECEIVER_KILLED};
    pid_t pid = spawn(recv_side ? registered_sender : registered_receiver, &a);
    size_t got = 0;
    if (recv_side) {
        ck_assert_int_eq(reap(pid), 128 + SIGKILL); /* three sent, then killed */
        for (uint64_t i = 0; i < survivor_wait() / MS && !sl_chan_is_closed(ch); i++) {
            got += sl_chan_try_recv_n(ch, buf, 4);
            usleep(1000);
        }
        got += sl_chan_try_recv_n(ch, buf, 4);
        ck_assert_uint_eq(got, 3);
    } else {
        char c;
        ck_assert_int_eq(read(ready[0], &c, 1), 1); /* registered */
        for (uint64_t i = 0; i < o.capacity; i++) {
            sl_test_seq_fill(buf, o.elem_size, i);
            ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_OK);
        }
        ck_assert_int_eq(reap(pid), 128 + SIGKILL);
        for (uint64_t i = 0; i < survivor_wait() / MS && !sl_chan_is_closed(ch); i++) {
            ck_assert_uint_eq(sl_chan_try_send_n(ch, buf, 4), 0);
            usleep(1000);
        }
    }
    ck_assert_msg(sl_chan_is_closed(ch), "%s %zu-byte: a polling %s never learnt that the "
                  "last registered %s is gone", k_cfg[cfg].flavor == SL_SPSC ? "SL_SPSC" : "SL_MPMC",
                  k_cfg[cfg].esz, recv_side ? "try_recv_n" : "try_send_n",
                  recv_side ? "sender" : "receiver");
    close(ready[0]);
    close(ready[1]);
    sl_chan_free(ch);
    sl__shm_look_ns = look;
}
END_TEST

/* An unregistered receiver (it waited, so it held a record) dies: nothing
 * closes while a registered one lives; that one's free then closes the
 * channel at once. */
static int unregistered_receiver(void *p)
{
    death_arg *a = p;
    sl_chan *ch;
    unsigned char buf[MSG_MAX];
    if (sl_chan_shm_open_fd(&ch, a->fd, &a->opts) != SL_OK)
        return 1;
    if (sl_chan_recv_for(ch, buf, MS) != SL_TIMEDOUT) /* a wait: claims a record */
        return 2;
    raise(SIGKILL);
    return 3;
}

START_TEST(test_unregistered_receiver_dies)
{
    const uint64_t look = sl__shm_look_ns;
    sl__shm_look_ns = MS; /* many looks within the wait below */
    sl_chan_opts o = opts_of(_i, 2);
    sl_chan *tx, *rx;
    unsigned char buf[64] = {0};
    ck_assert_int_eq(sl_chan_shm_create(&tx, NULL, &o, 0), SL_OK);
    ck_assert_int_eq(sl_chan_shm_receiver(NULL), SL_EINVAL);
    ck_assert_int_eq(sl_chan_shm_open_fd(&rx, sl_chan_shm_fd(tx), &o), SL_OK);
    ck_assert_int_eq(sl_chan_shm_receiver(rx), SL_OK);
    death_arg a = {.fd = sl_chan_shm_fd(tx), .opts = o};
    ck_assert_int_eq(reap(spawn(unregistered_receiver, &a)), 128 + SIGKILL);
    ck_assert_int_eq(sl_chan_try_send(tx, buf), SL_OK);
    ck_assert_int_eq(sl_chan_try_send(tx, buf), SL_OK);
    ck_assert_int_eq(sl_chan_send_for(tx, buf, 30 * MS), SL_TIMEDOUT); /* looked, still open */
    ck_assert_int_eq(sl_chan_try_send(tx, buf), SL_FULL);
    sl_chan_free(rx); /* the last registered receiver: closed at once */
    ck_assert_int_eq(sl_chan_try_send(tx, buf), SL_CLOSED);
    ck_assert_int_eq(sl_chan_try_recv(tx, buf), SL_OK);
    ck_assert_int_eq(sl_chan_try_recv(tx, buf), SL_OK);
    ck_assert_int_eq(sl_chan_try_recv(tx, buf), SL_CLOSED);
    sl_chan_free(tx);
    sl__shm_look_ns = look;
}
END_TEST

START_TEST(test_receiver_refusal)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 8, .capacity = 4};
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_new(&ch, &o), SL_OK);
    ck_assert_int_eq(sl_chan_shm_receiver(ch), SL_EINVAL);
    uint64_t v = 5;
    ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK); /* nothing consumed, still open */
    sl_chan_free(ch);
}
END_TEST

/* A child takes every record (SL_SHM_SENDERS handles, one send each) and
 * dies holding them. On the way, a handle with no record left for it: its
 * sends and registrations are refused with nothing consumed (no message
 * goes in without a record to answer for its mark and its spare), until a
 * record is free again, when its next send claims that one. */
static int hold_all_records(void *p)
{
    death_arg *a = p;
    uint64_t v = 1;
    sl_chan *held[SL_SHM_SENDERS];
    for (int i = 0; i < SL_SHM_SENDERS; i++)
        if (sl_chan_shm_open_fd(&held[i], a->fd, &a->opts) != SL_OK ||
            sl_chan_try_send(held[i], &v) != SL_OK)
            return 1;
    sl_chan *extra;
    if (sl_chan_shm_open_fd(&extra, a->fd, &a->opts) != SL_OK)
        return 2;
    if (sl_chan_shm_sender(extra) != SL_ENOMEM || sl_chan_shm_receiver(extra) != SL_ENOMEM)
        return 3;
    uint64_t w = 2, batch[2] = {2, 2};
    sl_select_case c = {extra, SL_SEL_SEND, &w};
    size_t index = 9;
    if (sl_chan_try_send(extra, &w) != SL_ENOMEM || sl_chan_send(extra, &w) != SL_ENOMEM ||
        sl_chan_send_for(extra, &w, 10 * MS) != SL_ENOMEM || sl_chan_try_send_n(extra, batch, 2) != 0 ||
        sl_select(&c, 1, 10 * MS, &index) != SL_ENOMEM)
        return 4;
    if (sl_chan_len(extra) != SL_SHM_SENDERS)
        return 5; /* a refused send consumed nothing */
    sl_chan_free(held[0]); /* its record is free: the next send claims it */
    if (sl_chan_try_send(extra, &v) != SL_OK || sl_chan_shm_sender(extra) != SL_OK)
        return 6;
    raise(SIGKILL);
    return 7;
}

/* The records of a dead process are reclaimed when a new sender needs one
 * (hold_all_records's refusals first). The first one reclaimed is the
 * child's last registered sender's: that reclaim closes the channel, and
 * the registration whose claim made it says so (it does not reopen it). */
START_TEST(test_sender_records_full)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 8, .capacity = 128};
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    death_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o};
    ck_assert_int_eq(reap(spawn(hold_all_records, &a)), 128 + SIGKILL);
    ck_assert_uint_eq(sl_chan_len(ch), SL_SHM_SENDERS + 1);
    ck_assert_int_eq(sl_chan_shm_sender(ch), SL_CLOSED);
    uint64_t v;
    while (sl_chan_try_recv(ch, &v) == SL_OK)
        ck_assert_uint_eq(v, 1);
    ck_assert_int_eq(sl_chan_recv_for(ch, &v, survivor_wait()), SL_CLOSED);
    sl_chan_free(ch);
}
END_TEST

/* A child that takes every record (one send per handle), says so on a
 * pipe, and exits without freeing them when the parent says: a death
 * holding all 64 records, at a moment the parent chooses. */
typedef struct holder_arg {
    int fd;
    sl_chan_opts opts;
    int ready[2], go[2]; /* pipes: child to parent, parent to child */
} holder_arg;

static int hold_records_until_told(void *p)
{
    holder_arg *a = p;
    uint64_t v = 3;
    char c = 1;
    for (int i = 0; i < SL_SHM_SENDERS; i++) {
        sl_chan *ch;
        if (sl_chan_shm_open_fd(&ch, a->fd, &a->opts) != SL_OK || sl_chan_try_send(ch, &v) != SL_OK)
            return 1;
    }
    if (write(a->ready[1], &c, 1) != 1 || read(a->go[0], &c, 1) != 1)
        return 2;
    return 0; /* dies holding every record */
}

/* Refused for want of a record, a send on a closed channel says SL_CLOSED,
 * as any send there does. Every record held by this very process. */
START_TEST(test_refused_send_closed)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 8, .capacity = 128};
    sl_chan *ch, *h[SL_SHM_SENDERS], *extra;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    uint64_t v = 5;
    for (int i = 0; i < SL_SHM_SENDERS; i++) {
        ck_assert_int_eq(sl_chan_shm_open_fd(&h[i], sl_chan_shm_fd(ch), &o), SL_OK);
        ck_assert_int_eq(sl_chan_try_send(h[i], &v), SL_OK);
    }
    ck_assert_int_eq(sl_chan_shm_open_fd(&extra, sl_chan_shm_fd(ch), &o), SL_OK);
    ck_assert_int_eq(sl_chan_try_send(extra, &v), SL_ENOMEM);
    sl_chan_close(ch);
    ck_assert_int_eq(sl_chan_try_send(extra, &v), SL_CLOSED);
    ck_assert_int_eq(sl_chan_send(extra, &v), SL_CLOSED);
    ck_assert_uint_eq(sl_chan_len(ch), SL_SHM_SENDERS);
    for (int i = 0; i < SL_SHM_SENDERS; i++)
        sl_chan_free(h[i]);
    sl_chan_free(extra);
    sl_chan_free(ch);
}
END_TEST

/* A handle refused for want of a record looks for dead holders' records at
 * most once a look period: with the period long, a send right after every
 * holder died is still refused (no reads of /proc); with it zero, the next
 * send reclaims a dead holder's record and goes in. */
START_TEST(test_refused_sender_looks_again)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 8, .capacity = 128};
    sl_chan *ch, *extra;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    holder_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o};
    ck_assert_int_eq(pipe(a.ready), 0);
    ck_assert_int_eq(pipe(a.go), 0);
    const uint64_t look = sl__shm_look_ns;
    sl__shm_look_ns = 3600 * SEC;
    pid_t pid = spawn(hold_records_until_told, &a);
    char c;
    ck_assert_int_eq(read(a.ready[0], &c, 1), 1);
    ck_assert_int_eq(sl_chan_shm_open_fd(&extra, sl_chan_shm_fd(ch), &o), SL_OK);
    uint64_t v = 4;
    ck_assert_int_eq(sl_chan_try_send(extra, &v), SL_ENOMEM); /* its holders live */
    ck_assert_int_eq(write(a.go[1], &c, 1), 1);
    ck_assert_int_eq(reap(pid), 0);
    ck_assert_int_eq(sl_chan_try_send(extra, &v), SL_ENOMEM); /* not looked again yet */
    ck_assert_uint_eq(sl_chan_len(ch), SL_SHM_SENDERS);
    sl__shm_look_ns = 0;
    ck_assert_int_eq(sl_chan_try_send(extra, &v), SL_OK); /* a dead holder's record */
    ck_assert_uint_eq(sl_chan_len(ch), SL_SHM_SENDERS + 1);
    sl__shm_look_ns = look;
    for (int i = 0; i < 2; i++)
        close(a.ready[i]), close(a.go[i]);
    sl_chan_free(extra);
    sl_chan_free(ch);
}
END_TEST

/* A registered sender: one message, says so on `ready`, and is killed when
 * the parent writes `go`. */
static int sender_killed_when_told(void *p)
{
    holder_arg *a = p;
    sl_chan *ch;
    uint64_t v = 1;
    char c = 1;
    if (sl_chan_shm_open_fd(&ch, a->fd, &a->opts) != SL_OK || sl_chan_shm_sender(ch) != SL_OK ||
        sl_chan_try_send(ch, &v) != SL_OK)
        return 1;
    if (write(a->ready[1], &c, 1) != 1 || read(a->go[0], &c, 1) != 1)
        return 2;
    raise(SIGKILL);
    return 3;
}

/* The last registered sender's record, reclaimed by a claim that found
 * every record held (not by a look), closes the channel there and then: the
 * reclaim takes the record's roles away, so the decision that the role is
 * gone is the reclaimer's to make (found by review: the claim cleared the
 * roles and left the close to the next look, a look period later, here an
 * hour, and later still when a look raced the claim). */
START_TEST(test_reclaim_closes)
{
    const uint64_t look = sl__shm_look_ns;
    sl__shm_look_ns = 3600 * SEC; /* one look below, then none: only the reclaim can close */
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 8, .capacity = 128};
    sl_chan *ch, *h[SL_SHM_SENDERS - 1], *extra;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    holder_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o};
    ck_assert_int_eq(pipe(a.ready), 0);
    ck_assert_int_eq(pipe(a.go), 0);
    pid_t pid = spawn(sender_killed_when_told, &a);
    char c;
    ck_assert_int_eq(read(a.ready[0], &c, 1), 1);
    uint64_t v = 0;
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_OK);
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_EMPTY); /* the look: the sender lives */
    ck_assert_int_eq(write(a.go[1], &c, 1), 1);
    ck_assert_int_eq(reap(pid), 128 + SIGKILL);
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_EMPTY); /* no look due: open */
    for (int i = 0; i < SL_SHM_SENDERS - 1; i++) { /* every record held, the dead one's too */
        ck_assert_int_eq(sl_chan_shm_open_fd(&h[i], sl_chan_shm_fd(ch), &o), SL_OK);
        ck_assert_int_eq(sl_chan_try_send(h[i], &v), SL_OK);
    }
    ck_assert_int_eq(sl_chan_shm_open_fd(&extra, sl_chan_shm_fd(ch), &o), SL_OK);
    sl_status st = sl_chan_try_send(extra, &v); /* claims the dead sender's record */
    ck_assert_msg(st == SL_CLOSED && sl_chan_is_closed(ch),
                  "the last registered sender's record reclaimed by a claim: the send said %d, "
                  "the channel is %s", (int)st, sl_chan_is_closed(ch) ? "closed" : "open");
    for (int i = 0; i < SL_SHM_SENDERS - 1; i++)
        ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_OK);
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_CLOSED);
    sl__shm_look_ns = look;
    for (int i = 0; i < 2; i++)
        close(a.ready[i]), close(a.go[i]);
    for (int i = 0; i < SL_SHM_SENDERS - 1; i++)
        sl_chan_free(h[i]);
    sl_chan_free(extra);
    sl_chan_free(ch);
}
END_TEST

/* Record churn in one process, for ThreadSanitizer and the books: the main
 * thread holds all records but two; CHURNERS threads each open a handle,
 * send one message (again after every SL_ENOMEM: the refusal must consume
 * nothing), and free it, over and over; SHARERS threads send through one
 * handle they share, which may be refused and later claim, its claim and
 * its refusals racing. One receiver checks every message exactly once, in
 * each thread's order. */
enum { CHURNERS = 4, SHARERS = 2, CHURN_HELD = SL_SHM_SENDERS - 3 };

typedef struct churn_arg {
    int fd;
    sl_chan_opts opts;
    sl_chan *shared; /* the sharers' handle */
    unsigned id;     /* thread number: the message's first word */
    uint64_t n, refused;
    int bad;
} churn_arg;

static bool churn_send(sl_chan *ch, churn_arg *a, uint64_t seq)
{
    uint64_t m[3] = {a->id, seq, ~seq};
    uint64_t until = sl_now_ns() + 20 * SEC;
    sl_status st;
    while ((st = sl_chan_try_send(ch, m)) != SL_OK) {
        if ((st != SL_ENOMEM && st != SL_FULL) || sl_now_ns() > until)
            return false;
        a->refused += st == SL_ENOMEM;
        sched_yield();
    }
    return true;
}

static void *churner(void *p)
{
    churn_arg *a = p;
    for (uint64_t i = 0; i < a->n && !a->bad; i++) {
        sl_chan *h = a->shared;
        if (!h && sl_chan_shm_open_fd(&h, a->fd, &a->opts) != SL_OK)
            a->bad = 1;
        else if (!churn_send(h, a, i))
            a->bad = 2;
        if (h && !a->shared)
            sl_chan_free(h);
    }
    return NULL;
}

START_TEST(test_record_churn)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 24, .capacity = 64};
    sl_chan *ch, *held[CHURN_HELD], *shared;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    const int fd = sl_chan_shm_fd(ch);
    uint64_t m[3];
    ck_assert_int_eq(sl_chan_try_send(ch, m), SL_OK); /* the receiving handle's record */
    ck_assert_int_eq(sl_chan_try_recv(ch, m), SL_OK);
    for (int i = 0; i < CHURN_HELD; i++) {
        ck_assert_int_eq(sl_chan_shm_open_fd(&held[i], fd, &o), SL_OK);
        ck_assert_int_eq(sl_chan_try_send(held[i], m), SL_OK);
        ck_assert_int_eq(sl_chan_try_recv(ch, m), SL_OK);
    }
    ck_assert_int_eq(sl_chan_shm_open_fd(&shared, fd, &o), SL_OK);
    const uint64_t n = sl_test_scaled(300, 60);
    churn_arg a[CHURNERS + SHARERS];
    pthread_t t[CHURNERS + SHARERS];
    for (unsigned i = 0; i < CHURNERS + SHARERS; i++) {
        a[i] = (churn_arg){.fd = fd, .opts = o, .id = i, .n = n,
                           .shared = i < CHURNERS ? NULL : shared};
        ck_assert_int_eq(pthread_create(&t[i], NULL, churner, &a[i]), 0);
    }
    uint64_t next[CHURNERS + SHARERS] = {0}, got = 0, until = sl_now_ns() + 60 * SEC;
    while (got < n * (CHURNERS + SHARERS) && sl_now_ns() < until) {
        if (sl_chan_recv_for(ch, m, 10 * MS) != SL_OK)
            continue;
        ck_assert_msg(m[0] < CHURNERS + SHARERS && m[2] == ~m[1], "a torn or foreign message");
        ck_assert_msg(m[1] == next[m[0]], "thread %llu: message %llu where %llu was due", ULL(m[0]),
                      ULL(m[1]), ULL(next[m[0]]));
        next[m[0]]++, got++;
    }
    uint64_t refused = 0;
    for (unsigned i = 0; i < CHURNERS + SHARERS; i++) {
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
        ck_assert_msg(a[i].bad == 0, "thread %u failed (%d)", i, a[i].bad);
        refused += a[i].refused;
    }
    ck_assert_uint_eq(got, n * (CHURNERS + SHARERS));
    ck_assert_int_eq(sl_chan_try_recv(ch, m), SL_EMPTY); /* nothing more: refusals sent nothing */
    printf("[shm churn] %llu messages through handles opened and freed under a full record "
           "table, %llu sends refused (SL_ENOMEM) and sent again\n",
           ULL(got), ULL(refused));
    for (int i = 0; i < CHURN_HELD; i++)
        sl_chan_free(held[i]);
    sl_chan_free(shared);
    sl_chan_free(ch);
}
END_TEST

/* A receive of SL_MPMC messages over 256 bytes claims its handle's record
 * (to name the spare it holds) only once it finds a message: as many
 * handles as there are records polling an empty channel leave every record
 * free for a sender, and the first receive that finds one claims one. */
START_TEST(test_empty_polls_claim_no_record)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 300, .capacity = 4};
    sl_chan *ch, *h[SL_SHM_SENDERS], *tx;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    unsigned char buf[MSG_MAX];
    for (int i = 0; i < SL_SHM_SENDERS; i++) {
        ck_assert_int_eq(sl_chan_shm_open_fd(&h[i], sl_chan_shm_fd(ch), &o), SL_OK);
        ck_assert_int_eq(sl_chan_try_recv(h[i], buf), SL_EMPTY);
    }
    ck_assert_int_eq(sl_chan_shm_open_fd(&tx, sl_chan_shm_fd(ch), &o), SL_OK);
    ck_assert_int_eq(sl_chan_shm_sender(tx), SL_OK); /* a record was free */
    sl_test_seq_fill(buf, o.elem_size, 9);
    ck_assert_int_eq(sl_chan_try_send(tx, buf), SL_OK);
    memset(buf, 0, sizeof buf);
    ck_assert_int_eq(sl_chan_try_recv(h[0], buf), SL_OK); /* claims one, holds a spare */
    ck_assert(sl_test_seq_is(buf, o.elem_size, 9));
    for (int i = 0; i < SL_SHM_SENDERS; i++)
        sl_chan_free(h[i]);
    sl_chan_free(tx);
    sl_chan_free(ch);
}
END_TEST

/* This process's start time, as /proc/self/stat gives it (field 22). */
static uint64_t self_start(void)
{
    char buf[512];
    FILE *f = fopen("/proc/self/stat", "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    unsigned long long t = 0;
    ck_assert_int_eq(sscanf(strrchr(buf, ')') + 1, " %*c %*s %*s %*s %*s %*s %*s %*s %*s %*s "
                                                  "%*s %*s %*s %*s %*s %*s %*s %*s %*s %llu",
                            &t),
                     1);
    return t;
}

/* Sender record 0 (docs/shm-layout.md): its mark and owner set by hand. */
#define LANES 10 /* a record's lanes (SL__SHM_LANES) */

/* Record 0's owner, and its mark: the count at 0 (where == 0), or the flag
 * of lane where - 1 (docs/shm-layout.md, "Records": lanes from 24). */
static unsigned g_mark_at;
static void set_record(unsigned char *raw, uint32_t marks, uint64_t owner)
{
    memcpy(raw + 2048 + (g_mark_at ? 24 + 4 * (g_mark_at - 1) : 0), &marks, 4);
    memcpy(raw + 2048 + 8, &owner, 8);
}

/* A mark counts while its owner lives, and not once its pid belongs to
 * another process (a different start time) or to none; the count and every
 * lane alike (a receiver that read the count alone would say SL_CLOSED
 * under a living sender's lane). */
#define MARK_PLACES 3 /* the count, the first lane, the last */
START_TEST(test_mark_owner_identity)
{
    sl_chan_opts o = opts_of(_i / MARK_PLACES, 4);
    g_mark_at = (unsigned)(_i % MARK_PLACES) == 2 ? LANES : (unsigned)(_i % MARK_PLACES);
    sl_chan *ch;
    unsigned char buf[MSG_MAX];
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    unsigned char *raw = map_raw(sl_chan_shm_fd(ch), 4096);
    uint64_t me = ((self_start() << 22) | (uint64_t)getpid());
    sl_chan_close(ch);
    set_record(raw, 1, me); /* this process, in flight: not closed yet */
    ck_assert_int_eq(sl_chan_recv_for(ch, buf, 60 * MS), SL_TIMEDOUT);
    set_record(raw, 1, me + (1ull << 22)); /* the pid reused by another process */
    ck_assert_int_eq(sl_chan_recv_for(ch, buf, survivor_wait()), SL_CLOSED);
    munmap(raw, 4096);
    sl_chan_free(ch);
    /* A pid with no process (a reaped child's), the start time unknown. */
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    raw = map_raw(sl_chan_shm_fd(ch), 4096);
    pid_t gone = fork();
    ck_assert_int_ge(gone, 0);
    if (gone == 0)
        _exit(0);
    ck_assert_int_eq(reap(gone), 0);
    set_record(raw, 1, (uint64_t)gone);
    sl_chan_close(ch);
    ck_assert_int_eq(sl_chan_recv_for(ch, buf, survivor_wait()), SL_CLOSED);
    munmap(raw, 4096);
    sl_chan_free(ch);
}
END_TEST

/* A process killed while parked leaves its waiter count: the others go on. */
static int park_forever(void *p)
{
    death_arg *a = p;
    sl_chan *ch;
    unsigned char buf[MSG_MAX];
    if (sl_chan_shm_open_fd(&ch, a->fd, &a->opts) != SL_OK)
        return 1;
    (void)sl_chan_recv(ch, buf);
    return 2;
}

START_TEST(test_killed_while_parked)
{
    sl_chan_opts o = opts_of(_i, 2);
    sl_chan *ch;
    unsigned char buf[MSG_MAX];
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    death_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o};
    pid_t pid = spawn(park_forever, &a);
    usleep(50 * 1000); /* let it park (a shorter stay dies earlier: either way) */
    kill(pid, SIGKILL);
    ck_assert_int_eq(reap(pid), 128 + SIGKILL);
    /* A receiver parked in another process still wakes for each send. */
    pid_t rx = spawn(consume, &(consumer_arg){.fd = a.fd, .opts = o, .n = 50});
    produce(ch, o.elem_size, 50);
    join_ok(rx);
    ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_CLOSED);
    sl_chan_free(ch);
}
END_TEST

/* The shared futex wakes this process makes (through the system layer). */
static _Atomic unsigned long n_wakes;

static int counting_wake_shared(SL_ATOMIC(uint32_t) *word, int count)
{
    atomic_fetch_add(&n_wakes, 1);
    return sl__sys_default_ops.futex_wake_shared(word, count);
}

static const sl_sys_ops counting_wake_ops = {.futex_wake_shared = counting_wake_shared};

/* A process killed while parked: its registration is discounted at the next
 * look (its record's parked count), and then a send makes no system call.
 * The planted bug SHM_PARKED_KEPT leaves it counted. */
START_TEST(test_killed_parked_discounted)
{
    sl_chan_opts o = opts_of(_i, 4);
    sl_chan *ch;
    unsigned char buf[MSG_MAX];
    const uint64_t look = sl__shm_look_ns;
    sl__shm_look_ns = 3600 * SEC; /* the child sleeps in the futex, registered */
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    death_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o};
    pid_t pid = spawn(park_forever, &a);
    unsigned char *raw = map_raw(a.fd, 4096);
    await_word(raw, 48, 1);        /* not_empty.waiters */
    await_word(raw, 2048 + 16, 1); /* and its record's parked count (record 0) */
    kill(pid, SIGKILL);
    ck_assert_int_eq(reap(pid), 128 + SIGKILL);
    sl_test_sys_install(&counting_wake_ops);
    sl_test_seq_fill(buf, o.elem_size, 1);
    ck_assert_int_eq(sl_chan_send(ch, buf), SL_OK);
    ck_assert_uint_eq(atomic_load(&n_wakes), 1); /* the leak: a wake for nobody */
    ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_OK);
    /* An empty receive after a period looks, and finds the owner dead. */
    sl__shm_look_ns = MS;
    sl_test_sleep_ns(5 * MS);
    ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_EMPTY);
    sl__shm_look_ns = look;
    uint32_t waiters_left = atomic_load((_Atomic uint32_t *)(void *)(raw + 48));
    ck_assert_uint_eq(waiters_left, 0);
    atomic_store(&n_wakes, 0);
    for (int i = 0; i < 100; i++) {
        ck_assert_int_eq(sl_chan_send(ch, buf), SL_OK);
        ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_OK);
    }
    ck_assert_uint_eq(atomic_load(&n_wakes), 0);
    sl_test_sys_restore();
    munmap(raw, 4096);
    sl_chan_free(ch);
}
END_TEST

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
/* ---- a death at every step (fault-injection builds) ---------------------- */
static void die_here(void *ctx, unsigned step)
{
    (void)ctx, (void)step;
    _exit(100);
}

/* One send, receive or parked receive, dying at its k-th SL_FI() step;
 * 0 when it finished before step k. */
static int die_at_step(void *p)
{
    death_arg *a = p;
    sl_chan *ch;
    unsigned char buf[MSG_MAX];
    if (sl_chan_shm_open_fd(&ch, a->fd, &a->opts) != SL_OK)
        return 1;
    sl_test_seq_fill(buf, a->opts.elem_size, a->v);
    sl__fi_arm(a->k, die_here, NULL);
    sl_status st = a->op == DIE_SEND || a->op == DIE_NOTIFY ? sl_chan_send(ch, buf)
                   : a->op == DIE_RECV ? sl_chan_recv(ch, buf)
                                       : sl_chan_recv_for(ch, buf, 5 * MS);
    sl__fi_disarm();
    return st == (a->op == DIE_PARK ? SL_TIMEDOUT : SL_OK) ? 0 : 2;
}

/* What the survivor finds after the child died at step k (or finished):
 * messages 0 .. n-1 were queued before; the child sent n (DIE_SEND) or took
 * one (DIE_RECV). Each queued message comes out once and in order, except
 * the one a receiving child took; the child's own message whole or not at
 * all; the capacity whole (a spare a dead sender held is one of capacity:
 * the others go round); and then the close reads as closed. */
static void survive(sl_chan *ch, const sl_chan_opts *o, int op, uint64_t n)
{
    unsigned char buf[MSG_MAX];
    uint64_t first = 0, got = 0;
    while (sl_chan_try_recv(ch, buf) == SL_OK) {
        if (got == 0 && op == DIE_RECV && !sl_test_seq_is(buf, o->elem_size, 0))
            first = 1; /* the dying receiver took message 0: that one only */
        ck_assert(sl_test_seq_is(buf, o->elem_size, first + got));
        got++;
    }
    if (op == DIE_SEND)
        ck_assert(got == n || got == n + 1);
    else if (op == DIE_RECV)
        ck_assert_uint_eq(first + got, n);
    else
        ck_assert_uint_eq(got, 0);
    size_t room = 0;
    while (sl_chan_try_send(ch, buf) == SL_OK)
        room++;
    ck_assert_uint_eq(room, o->capacity);
    for (size_t i = 0; i < room; i++)
        ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_OK);
    sl_chan_close(ch);
    ck_assert_int_eq(sl_chan_recv_for(ch, buf, survivor_wait()), SL_CLOSED);
}

/* A receiver parked in its own process: exits 10 + the message it got. */
static int parked_receiver(void *p)
{
    death_arg *a = p;
    sl_chan *ch;
    unsigned char buf[MSG_MAX];
    if (sl_chan_shm_open_fd(&ch, a->fd, &a->opts) != SL_OK)
        return 1;
    if (sl_chan_recv(ch, buf) != SL_OK)
        return 2;
    for (uint64_t v = 0; v < 2; v++)
        if (sl_test_seq_is(buf, a->opts.elem_size, v))
            return 10 + (int)v;
    return 3;
}

/* A sender killed at step k while a receiver is parked in a third process
 * (its notify may die between the epoch bump and the futex wake): a
 * message it published still reaches the receiver (by the period's look at
 * worst); one it did not publish is not there, and the parent's own send
 * then wakes the receiver. */
static void notify_death(sl_chan *ch, death_arg *a)
{
    unsigned char buf[MSG_MAX];
    pid_t rx = spawn(parked_receiver, a);
    unsigned char *raw = map_raw(a->fd, 64);
    /* not_empty.waiters (docs/shm-layout.md): wait until it has parked. */
    while (__atomic_load_n((uint32_t *)(void *)(raw + 48), __ATOMIC_SEQ_CST) == 0)
        usleep(1000);
    munmap(raw, 64);
    int st = reap(spawn(die_at_step, a));
    ck_assert_msg(st == 0 || st == 100, "child at step %u: status %d", a->k, st);
    if (sl_chan_len(ch) == 0) { /* not published, or taken already */
        sl_test_seq_fill(buf, a->opts.elem_size, 1);
        ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_OK);
    }
    int got = reap(rx);
    ck_assert_msg(got == 10 || got == 11, "receiver: status %d", got);
    /* 10: the dead sender's message; the parent's, if sent, is queued. */
    size_t left = sl_chan_len(ch);
    ck_assert_uint_le(left, got == 10 ? 1 : 0);
    if (left)
        ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_OK);
    a->op = st; /* what the caller's loop needs: finished or died */
}

/* _i: the configuration and the operation. For k = 1, 2, ... a child dies
 * at its k-th step, until one finishes. */
START_TEST(test_death_at_every_step)
{
    int cfg = _i % 5, op = _i / 5;
    unsigned k = 1;
    for (;; k++) {
        /* Configuration 4: SL_MPMC with messages over 256 bytes. */
        sl_chan_opts o = cfg < 4 ? opts_of(cfg, 4)
                                 : (sl_chan_opts){.flavor = SL_MPMC, .elem_size = 300, .capacity = 4};
        sl_chan *ch;
        unsigned char buf[MSG_MAX];
        ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
        uint64_t n = op == DIE_PARK || op == DIE_NOTIFY ? 0 : 2;
        for (uint64_t i = 0; i < n; i++) {
            sl_test_seq_fill(buf, o.elem_size, i);
            ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_OK);
        }
        death_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o, .op = op, .k = k, .v = n};
        if (op == DIE_NOTIFY) {
            notify_death(ch, &a);
            survive(ch, &o, DIE_PARK, 0);
            sl_chan_free(ch);
            if (a.op == 0)
                break;
            continue;
        }
        int st = reap(spawn(die_at_step, &a));
        ck_assert_msg(st == 0 || st == 100, "child at step %u: status %d", k, st);
        survive(ch, &o, op, n);
        sl_chan_free(ch);
        if (st == 0)
            break;
    }
    ck_assert_uint_gt(k, 2); /* it died at least at one step before finishing */
    printf("[shm death] %s %zu-byte %s: killed at each of steps 1..%u\n",
           cfg < 4 && k_cfg[cfg].flavor == SL_SPSC ? "SL_SPSC" : "SL_MPMC",
           cfg < 4 ? k_cfg[cfg].esz : 300,
           op == DIE_SEND ? "send" : op == DIE_RECV ? "receive" : op == DIE_PARK ? "parked receive" : "send to a parked receiver", k - 1);
}
END_TEST
#endif

/* A sender process whose main thread exits while its sending thread runs
 * on: /proc then shows the process as a zombie (its main thread), with
 * threads left. It is alive: the looks that run meanwhile (the receiver
 * waits in sl_chan_recv) must not reclaim its record and close the channel
 * under its sender (found by review: every send then said SL_CLOSED, 0 of
 * 20 received; planted bug SHM_ZOMBIE_LEADER_DEAD). Then it exits, and
 * the receiver gets every message, then SL_CLOSED. */
static sl_chan *zl_ch;

static void *zl_send_later(void *p)
{
    (void)p;
    sl_test_sleep_ns(300 * MS); /* six looks and more see the zombie main thread */
    unsigned char m[MSG_MAX] = {0};
    for (uint64_t i = 0; i < 20; i++) {
        memcpy(m, &i, sizeof i);
        if (sl_chan_send(zl_ch, m) != SL_OK)
            _exit(3);
    }
    sl_chan_free(zl_ch);
    _exit(0);
}

static int main_thread_exits(void *p)
{
    zl_ch = p;
    if (sl_chan_shm_sender(zl_ch) != SL_OK)
        return 2;
    pthread_t t;
    if (pthread_create(&t, NULL, zl_send_later, NULL) != 0)
        return 4;
    pthread_exit(NULL);
}

/* Messages numbered 0, 1, ... received in order until a receive fails
 * (its status in *st, 10 s without one a failure too): how many came. */
static uint64_t recv_numbered(sl_chan *ch, sl_status *st)
{
    unsigned char m[MSG_MAX];
    uint64_t got = 0, v;
    while ((*st = sl_chan_recv_for(ch, m, 10 * SEC)) == SL_OK) {
        memcpy(&v, m, sizeof v);
        ck_assert_uint_eq(v, got);
        got++;
    }
    return got;
}

START_TEST(test_sender_main_thread_exits)
{
    sl_chan_opts o = opts_of(_i, 64);
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    pid_t pid = spawn(main_thread_exits, ch);
    sl_status st;
    uint64_t got = recv_numbered(ch, &st);
    int rc = reap(pid);
    ck_assert_msg(rc == 0 && got == 20 && st == SL_CLOSED,
                  "%s %zu-byte: %llu of 20 received, then %d; the sender's status %d (3: a "
                  "send refused, closed under it)",
                  o.flavor == SL_SPSC ? "SL_SPSC" : "SL_MPMC", o.elem_size, ULL(got), st, rc);
    sl_chan_free(ch);
}
END_TEST

/* Pids, and start times, mean one process only within one pid and one time
 * namespace (docs/shm-layout.md, "Namespaces"). A process outside the
 * segment's creator's namespaces judges no owner dead, and an owner outside
 * them is judged by nobody: a pid read across namespaces names another
 * process, or none, and a living sender would be taken for dead (its
 * records reclaimed, the channel closed under it; planted bug
 * SHM_FOREIGN_JUDGED). The test hook stands in for the namespaces here;
 * test_other_pid_namespace_sender uses real ones where it can. */
static int send_one_and_die(void *p)
{
    sl_chan *ch = p;
    unsigned char m[MSG_MAX] = {7};
    if (sl_chan_shm_sender(ch) != SL_OK)
        return 2;
    return sl_chan_send(ch, m) == SL_OK ? 0 : 3; /* exits holding its record */
}

static int foreign_send_one_and_die(void *p)
{
    sl__shm_set_namespaces(1, 1);
    return send_one_and_die(p);
}

static uint64_t ns_inode_of(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (uint64_t)sb.st_ino : 0;
}

/* The one message, then `then` within `wait_ns`. */
static void recv_one_then(sl_chan *ch, sl_status then, uint64_t wait_ns, const char *who)
{
    unsigned char m[MSG_MAX];
    ck_assert_int_eq(sl_chan_recv_for(ch, m, 10 * SEC), SL_OK);
    ck_assert_uint_eq(m[0], 7);
    sl_status st = sl_chan_recv_for(ch, m, wait_ns);
    ck_assert_msg(st == then, "%s: %s after the message, not %s", who, sl_status_str(st),
                  sl_status_str(then));
}

START_TEST(test_foreign_namespaces_judge_nobody)
{
    const uint64_t look = sl__shm_look_ns;
    sl__shm_look_ns = 5 * MS; /* twenty looks in every 100 ms wait below */
    sl_chan_opts o = {.flavor = _i ? SL_MPMC : SL_SPSC, .elem_size = 8, .capacity = 4};
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    ck_assert_int_eq(reap(spawn(send_one_and_die, ch)), 0);
    sl__shm_set_namespaces(1, 1); /* this process is foreign now */
    recv_one_then(ch, SL_TIMEDOUT, 100 * MS, "a foreign receiver, its native sender dead");
    sl__shm_set_namespaces(ns_inode_of("/proc/self/ns/pid"), ns_inode_of("/proc/self/ns/time"));
    ck_assert_int_eq(sl_chan_recv_for(ch, (unsigned char[MSG_MAX]){0}, 10 * SEC), SL_CLOSED);
    sl_chan_free(ch);

    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    ck_assert_int_eq(reap(spawn(foreign_send_one_and_die, ch)), 0);
    recv_one_then(ch, SL_TIMEDOUT, 100 * MS, "a native receiver, its foreign sender dead");
    sl_chan_free(ch);
    sl__shm_look_ns = look;
}
END_TEST

/* The sender in a pid namespace of its own, as pid 1 with its own /proc
 * (where it reads its own start time): the receiver's looks, reading pid 1
 * in its /proc, would find another process started at another time. The
 * sender sends 20 messages over 400 ms (eighty looks), then frees its
 * handle: the receiver gets all 20, then SL_CLOSED. Needs the right to
 * make pid and mount namespaces (root, or unprivileged user namespaces):
 * without it the case says so and checks nothing. */
#define NS_UNAVAILABLE 10

/* A /proc of this pid namespace's own, in this mount namespace only. */
static bool mount_own_proc(void)
{
    return mount("none", "/proc", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
           mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0;
}

/* A registered sender's 20 numbered messages over 400 ms (eighty looks at
 * the 5 ms period these tests set), then its free: 0, or the failing step. */
static int send_twenty_slowly(void *p)
{
    unsigned char m[MSG_MAX] = {0};
    if (sl_chan_shm_sender(p) != SL_OK)
        return 2;
    for (uint64_t i = 0; i < 20; i++) {
        sl_test_sleep_ns(20 * MS);
        memcpy(m, &i, sizeof i);
        if (sl_chan_send(p, m) != SL_OK)
            return 3;
    }
    sl_chan_free(p);
    return 0;
}

/* fn(arg) run as pid 1 of a new pid namespace (with the namespaces in
 * `more` too), by a child that makes them: its status, or NS_UNAVAILABLE
 * where they cannot be made (neither as root nor in a user namespace). */
static int as_namespace_init(int (*fn)(void *), void *arg, int more)
{
    if (unshare(CLONE_NEWPID | more) != 0 && unshare(CLONE_NEWUSER | CLONE_NEWPID | more) != 0)
        return NS_UNAVAILABLE;
    pid_t init = fork();
    if (init < 0)
        return NS_UNAVAILABLE;
    if (init == 0)
        _exit(fn(arg));
    return reap(init);
}

static int send_as_namespace_init(void *p)
{
    if (!mount_own_proc())
        return NS_UNAVAILABLE;
    return getpid() != 1 ? 2 : send_twenty_slowly(p);
}

static int in_new_pid_namespace(void *p)
{
    return as_namespace_init(send_as_namespace_init, p, CLONE_NEWNS);
}

START_TEST(test_other_pid_namespace_sender)
{
    const uint64_t look = sl__shm_look_ns;
    sl__shm_look_ns = 5 * MS;
    sl_chan_opts o = {.flavor = _i ? SL_MPMC : SL_SPSC, .elem_size = 8, .capacity = 4};
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    pid_t pid = spawn(in_new_pid_namespace, ch);
    sl_status st;
    uint64_t got = recv_numbered(ch, &st);
    int rc = reap(pid);
    if (rc == NS_UNAVAILABLE && got == 0) {
        printf("[shm namespaces] no pid namespace could be made here: case not run\n");
    } else {
        ck_assert_msg(rc == 0 && got == 20 && st == SL_CLOSED,
                      "%llu of 20 received, then %s; the sender's status %d (3: a send refused, "
                      "closed under it)",
                      ULL(got), sl_status_str(st), rc);
    }
    sl_chan_free(ch);
    sl__shm_look_ns = look;
}
END_TEST

/* A foreign process polling an empty channel must not take the periodic
 * look's turn from the native processes: its look judges nobody, and while
 * it kept winning, a native receiver never found that the last sender had
 * died (found by review; planted bug SHM_FOREIGN_LOOKS). A native sender
 * registers and dies; a foreign child polls with try_recv for 1.5 s; this
 * process, native, must get SL_CLOSED well within that, at the default
 * look period. */
static int foreign_poller(void *p)
{
    sl__shm_set_namespaces(1, 1);
    unsigned char m[MSG_MAX];
    uint64_t end = sl_test_now_ns() + 1500 * MS;
    while (sl_test_now_ns() < end)
        if (sl_chan_try_recv(p, m) == SL_OK)
            return 2;
    return 0;
}

static int register_and_die(void *p)
{
    return sl_chan_shm_sender(p) == SL_OK ? 0 : 2;
}

START_TEST(test_foreign_poller_takes_no_look)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 8, .capacity = 4};
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    ck_assert_int_eq(reap(spawn(register_and_die, ch)), 0);
    pid_t poller = spawn(foreign_poller, ch);
    sl_test_sleep_ns(100 * MS); /* the poller at work */
    uint64_t t0 = sl_test_now_ns();
    sl_status st = sl_chan_recv_for(ch, (unsigned char[MSG_MAX]){0}, 1200 * MS);
    uint64_t waited = sl_test_now_ns() - t0;
    ck_assert_int_eq(reap(poller), 0);
    ck_assert_msg(st == SL_CLOSED, "%s after %llu ms beside a foreign poller, not SL_CLOSED",
                  sl_status_str(st), ULL(waited / MS));
    sl_chan_free(ch);
}
END_TEST

/* Every process in one pid namespace (so all native), the creator and the
 * sender with the /proc of the namespace above (their /proc/self is not
 * their pid), the receiver with a /proc of its own. The sender must not
 * take its start time from the host's process of its pid, which the
 * receiver's looks would find started at another time: taken for dead, the
 * channel closed under it (found by review; planted bug
 * SHM_PROC_OF_ANOTHER). Run in a child that makes the namespaces; returns
 * NS_UNAVAILABLE where it cannot. */
static int proc_receiver(void *p)
{
    if (unshare(CLONE_NEWNS) != 0 || !mount_own_proc())
        return NS_UNAVAILABLE;
    sl_status st;
    uint64_t got = recv_numbered(p, &st);
    return got == 20 && st == SL_CLOSED ? 0 : 20 + (int)(got < 20 ? got : 20);
}

static int proc_creator(void *p)
{
    (void)p;
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 8, .capacity = 4};
    sl_chan *ch;
    if (sl_chan_shm_create(&ch, NULL, &o, 0) != SL_OK)
        return 4;
    pid_t r = spawn(proc_receiver, ch);
    sl_test_sleep_ns(50 * MS); /* its /proc mounted before the sender starts */
    pid_t s = spawn(send_twenty_slowly, ch);
    int rs = reap(s), rr = reap(r);
    return rr == NS_UNAVAILABLE ? NS_UNAVAILABLE : rr ? rr : rs;
}

static int in_pid_namespace_host_proc(void *p)
{
    return as_namespace_init(proc_creator, p, 0);
}

START_TEST(test_proc_of_another_namespace)
{
    const uint64_t look = sl__shm_look_ns;
    sl__shm_look_ns = 5 * MS;
    int rc = reap(spawn(in_pid_namespace_host_proc, NULL));
    sl__shm_look_ns = look;
    if (rc == NS_UNAVAILABLE) {
        printf("[shm namespaces] no pid namespace could be made here: case not run\n");
        return;
    }
    ck_assert_msg(rc == 0, "status %d (20 + n: the receiver got n of 20, then SL_CLOSED or a "
                           "wait of 10 s; 3: a send refused, closed under it)", rc);
}
END_TEST

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
/* A fork()ed child's receive of messages over 256 bytes on the handle it
 * inherited, which names its parent's record until the child claims one of
 * its own. The child stops at every step of its receive; at step k the
 * parent takes the message that was there, at step k + d it sends
 * another (d = 1, 2, 3; k = 1, 2, ... until the receive ends first). So the receive's
 * look may see a message, its view's check (which would claim a record)
 * none, and its pop one again: the pop must then hold no spare in the
 * parent's name, which the parent's death would have a look settle as the
 * parent's, under the child's copy, leaving the slot in two places (found
 * by review; planted bug SHM_POP_HOLDS_UNCLAIMED). */
enum { FH_SIZE = 300, FH_CAP = 4 };
/* The spare table of that geometry (docs/shm-layout.md): L = 8 cells. */
#define FH_SPARES_AT 6272

typedef struct fork_hold {
    sl_chan *ch;
    const unsigned char *raw;
    unsigned rec;          /* the parent's record */
    int stopped[2], go[2]; /* pipes: child to parent, parent to child */
    bool held;             /* the child's: a spare seen held in rec's name */
} fork_hold;

static bool spare_held_by(const unsigned char *raw, unsigned rec)
{
    for (int j = 0; j < FH_CAP; j++) {
        uint64_t w = atomic_load((_Atomic uint64_t *)(void *)(raw + FH_SPARES_AT + 8 * j));
        if ((w >> 63) && ((w >> 56) & 127u) == rec)
            return true;
    }
    return false;
}

/* At every step: the check, then a stop for the parent's move. */
static void stop_every_step(void *ctx, unsigned step)
{
    (void)step;
    fork_hold *f = ctx;
    f->held |= spare_held_by(f->raw, f->rec);
    char b = 's';
    ck_assert_int_eq(write(f->stopped[1], &b, 1), 1);
    ck_assert_int_eq(read(f->go[0], &b, 1), 1);
    sl__fi_arm(1, stop_every_step, ctx);
}

static int receive_inherited(void *p)
{
    fork_hold *f = p;
    unsigned char out[FH_SIZE];
    sl__fi_arm(1, stop_every_step, f);
    sl_status st = sl_chan_try_recv(f->ch, out);
    sl__fi_disarm();
    char b = 'e';
    if (write(f->stopped[1], &b, 1) != 1)
        return 4;
    if (st == SL_OK && ((out[0] != 0x5A && out[0] != 0x5B) || out[FH_SIZE - 1] != out[0]))
        return 2; /* not one of the two messages, whole */
    return st != SL_OK && st != SL_EMPTY ? 3 : f->held ? 1 : 0;
}

/* One child's receive with the parent's moves at steps k and k + d;
 * returns the steps the child stopped at. */
static unsigned fork_hold_round(fork_hold *f, unsigned k, unsigned d)
{
    unsigned char msg[FH_SIZE];
    memset(msg, 0x5A, sizeof msg);
    ck_assert_int_eq(sl_chan_try_send(f->ch, msg), SL_OK);
    ck_assert_int_eq(pipe(f->stopped), 0);
    ck_assert_int_eq(pipe(f->go), 0);
    pid_t pid = spawn(receive_inherited, f);
    unsigned steps = 0;
    char b;
    for (;;) {
        ck_assert_int_eq(read(f->stopped[0], &b, 1), 1);
        if (b != 's')
            break;
        steps++;
        if (steps == k) /* the message goes before the child's pop sees it */
            (void)sl_chan_try_recv(f->ch, msg);
        if (steps == k + d) { /* and another comes */
            memset(msg, 0x5B, sizeof msg);
            ck_assert_int_eq(sl_chan_try_send(f->ch, msg), SL_OK);
        }
        ck_assert_int_eq(write(f->go[1], &b, 1), 1);
    }
    int rc = reap(pid);
    ck_assert_msg(rc == 0, "moves at steps %u and %u: the child's receive %s (status %d)", k,
                  k + d, rc == 1 ? "held a spare in its parent's name" : "failed", rc);
    while (sl_chan_try_recv(f->ch, msg) == SL_OK) /* what the child left */
        ck_assert(msg[0] == 0x5A || msg[0] == 0x5B);
    for (int i = 0; i < 2; i++)
        close(f->stopped[i]), close(f->go[i]);
    return steps;
}

START_TEST(test_forked_large_pop_holds_nothing_unclaimed)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = FH_SIZE, .capacity = FH_CAP};
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    unsigned char msg[FH_SIZE] = {0};
    ck_assert_int_eq(sl_chan_try_send(ch, msg), SL_OK); /* this process claims a record */
    ck_assert_int_eq(sl_chan_try_recv(ch, msg), SL_OK);
    fork_hold f = {.ch = ch, .raw = map_raw(sl_chan_shm_fd(ch), 8192), .rec = 64};
    for (unsigned i = 0; i < 64; i++)
        if (atomic_load((_Atomic uint64_t *)(void *)(f.raw + 2048 + 64 * i + 8)) != 0)
            f.rec = i;
    ck_assert_uint_lt(f.rec, 64);
    unsigned k = 1;
    for (unsigned d = 1; d <= 3; d++)
        for (k = 1; k <= fork_hold_round(&f, k, d);)
            k++;
    ck_assert_uint_gt(k, 3); /* the receive had steps enough for both moves */
    printf("[shm death] forked 300-byte receive, the parent's moves at each of steps 1..%u\n",
           k - 1);
    munmap((void *)f.raw, 8192);
    sl_chan_free(ch);
}
END_TEST
#endif

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
/* A look that settles a dead holder's spare entry and is stopped at its
 * first step (after it took the dead record, layout version 13), while
 * another look runs and a new process sends: the record cannot be freed,
 * claimed again and held in anew under the stopped look, whose decision
 * would then be applied to the new owner's hold (found by review: a look
 * that settled a record it did not hold, stopped between its read of the
 * held word and its CAS, gave back a slot a new owner of the record held,
 * and a message was read twice and another lost; planted bug
 * SHM_SETTLE_UNHELD). D dies holding a spare with its offer recorded; N
 * sends while the look A is stopped. */
enum { SU_SIZE = 24, SU_CAP = 2 };

static bool offer_recorded(sl_chan *ch)
{
    for (int j = 0; j < SU_CAP; j++) {
        uint64_t w = atomic_load(&ch->geom.mpmc.spares[j]);
        if ((w >> 63) && ((w >> 28) & ((1u << 28) - 1)) != (1u << 28) - 1)
            return true;
    }
    return false;
}

static sl_chan *su_ch; /* each process's own handle, for the hooks */

static void die_at_offer(void *ctx, unsigned step)
{
    (void)step;
    if (offer_recorded(su_ch))
        _exit(0); /* killed right there: its spare held, its CAS not made */
    sl__fi_arm(1, die_at_offer, ctx);
}

static int send_and_die(void *p)
{
    unsigned char m[SU_SIZE] = {0};
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = SU_SIZE};
    if (sl_chan_shm_open_fd(&su_ch, *(int *)p, &o) != SL_OK)
        return 1;
    if (sl_chan_try_send(su_ch, m) != SL_OK || sl_chan_try_recv(su_ch, m) != SL_OK)
        return 2; /* its record claimed */
    sl__fi_arm(1, die_at_offer, NULL);
    (void)sl_chan_try_send(su_ch, m);
    return 3;
}

typedef struct su_pipes {
    int fd, go[2], held[2]; /* to N, from N */
} su_pipes;

static su_pipes *su_p;

static void stop_at_offer(void *ctx, unsigned step)
{
    (void)step;
    if (!offer_recorded(su_ch)) {
        sl__fi_arm(1, stop_at_offer, ctx);
        return;
    }
    char b = 'o';
    ck_assert_int_eq(write(su_p->held[1], &b, 1), 1);
    ck_assert_int_eq(read(su_p->go[0], &b, 1), 1);
}

static int send_when_told(void *p)
{
    su_p = p;
    unsigned char m[SU_SIZE];
    memset(m, 0xBB, sizeof m);
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = SU_SIZE};
    if (sl_chan_shm_open_fd(&su_ch, su_p->fd, &o) != SL_OK)
        return 1;
    char b;
    if (read(su_p->go[0], &b, 1) != 1)
        return 2;
    sl__fi_arm(1, stop_at_offer, NULL);
    sl_status st = sl_chan_try_send(su_ch, m);
    sl__fi_disarm();
    return st == SL_OK ? 0 : 4;
}

typedef struct su_look {
    sl_chan *ch;
    sl_test_barrier stopped, go;
} su_look;

static void look_stops(void *ctx, unsigned step)
{
    (void)step;
    su_look *l = ctx;
    sl_test_barrier_wait(&l->stopped);
    sl_test_barrier_wait(&l->go);
}

static void *look_stopped_at_its_first_step(void *p)
{
    su_look *l = p;
    sl__fi_arm(1, look_stops, l);
    sl__shm_on_stuck(l->ch); /* a look: due at once (sl__shm_look_ns 0) */
    sl__fi_disarm();
    return NULL;
}

START_TEST(test_settle_under_the_record)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = SU_SIZE, .capacity = SU_CAP};
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    su_ch = ch;
    su_pipes pp = {.fd = sl_chan_shm_fd(ch)};
    ck_assert_int_eq(pipe(pp.go), 0);
    ck_assert_int_eq(pipe(pp.held), 0);
    pid_t n = spawn(send_when_told, &pp);
    ck_assert_int_eq(reap(spawn(send_and_die, &pp.fd)), 0); /* D: dead, holding */
    uint64_t look = sl__shm_look_ns;
    sl__shm_look_ns = 0;
    ck_assert_int_eq(sl_chan_shm_receiver(ch), SL_OK); /* its empty receives look */
    su_look l = {.ch = ch};
    sl_test_barrier_init(&l.stopped, 2);
    sl_test_barrier_init(&l.go, 2);
    pthread_t a;
    ck_assert_int_eq(pthread_create(&a, NULL, look_stopped_at_its_first_step, &l), 0);
    sl_test_barrier_wait(&l.stopped);
    unsigned char out[SU_SIZE], msg[SU_SIZE];
    ck_assert_int_eq(sl_chan_try_recv(ch, out), SL_EMPTY); /* B: another look */
    char b = 'g';
    ck_assert_int_eq(write(pp.go[1], &b, 1), 1); /* N sends, stops with its offer said */
    ck_assert_int_eq(read(pp.held[0], &b, 1), 1);
    sl_test_barrier_wait(&l.go); /* A goes on */
    pthread_join(a, NULL);
    memset(msg, 0xAA, sizeof msg);
    ck_assert_int_eq(sl_chan_try_send(ch, msg), SL_OK);
    ck_assert_int_eq(write(pp.go[1], &b, 1), 1); /* N finishes its send */
    ck_assert_int_eq(reap(n), 0);
    int aa = 0, bb = 0, other = 0;
    for (int i = 0; i < 4 && sl_chan_try_recv(ch, out) == SL_OK; i++)
        *(out[0] == 0xAA ? &aa : out[0] == 0xBB ? &bb : &other) += 1;
    ck_assert_msg(aa == 1 && bb == 1 && other == 0,
                  "received 0xAA x%d, 0xBB x%d, another x%d: each sent once", aa, bb, other);
    sl__shm_look_ns = look;
    for (int i = 0; i < 2; i++)
        close(pp.go[i]), close(pp.held[i]);
    sl_test_barrier_destroy(&l.stopped);
    sl_test_barrier_destroy(&l.go);
    sl_chan_free(ch);
}
END_TEST
#endif

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
/* A free stopped at its k-th fault-injection step (SL_FI) until `go`. */
typedef struct free_gated {
    sl_chan *ch;
    unsigned k, passed;
    sl_test_gate gate;
} free_gated;

static void *free_gated_run(void *p)
{
    free_gated *f = p;
    sl__fi_arm(f->k, sl_test_gate_stop, &f->gate);
    sl_chan_free(f->ch);
    f->passed = sl__fi_disarm();
    atomic_store(&f->gate.stopped, 1);
    return NULL;
}

/* A handle registers while the last registered handle of its role is freed,
 * the free stopped at each of its steps: either the registration says
 * SL_CLOSED, or the channel stays open (a registered handle is left); and
 * SL_CLOSED only with the channel closed. _i: SL_SPSC or SL_MPMC, the
 * sender or the receiver role. */
START_TEST(test_register_races_last_free)
{
    sl_chan_opts o = opts_of(_i / 2 ? 2 : 0, 4);
    sl_status (*reg)(sl_chan *) = _i % 2 ? sl_chan_shm_receiver : sl_chan_shm_sender;
    for (unsigned k = 1;; k++) {
        sl_chan *ch, *last, *late;
        ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
        ck_assert_int_eq(sl_chan_shm_open_fd(&last, sl_chan_shm_fd(ch), &o), SL_OK);
        ck_assert_int_eq(sl_chan_shm_open_fd(&late, sl_chan_shm_fd(ch), &o), SL_OK);
        ck_assert_int_eq(reg(last), SL_OK);
        free_gated f = {.ch = last, .k = k};
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, free_gated_run, &f), 0);
        while (!atomic_load(&f.gate.stopped))
            sl_test_sleep_ns(MS / 10);
        sl_status st = reg(late); /* while the free is stopped at step k */
        atomic_store(&f.gate.go, 1);
        pthread_join(t, NULL);
        bool closed = sl_chan_is_closed(ch);
        ck_assert_msg(st == (closed ? SL_CLOSED : SL_OK),
                      "step %u: the registration said %d, the channel %s", k, (int)st,
                      closed ? "closed" : "open");
        sl_chan_free(late);
        sl_chan_free(ch);
        if (f.passed < k)
            break; /* the free ran through without reaching step k */
    }
}
END_TEST
#endif

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
/* A registered sender that exits without freeing its handle: its record
 * stays held by a dead owner, with the sender's role. */
static int register_and_exit(void *p)
{
    death_arg *a = p;
    sl_chan *ch;
    if (sl_chan_shm_open_fd(&ch, a->fd, &a->opts) != SL_OK)
        return 1;
    return sl_chan_shm_sender(ch) == SL_OK ? 0 : 2;
}

/* An empty receive whose look reclaims the dead sender's record (and
 * closes the channel), dying at its k-th SL_FI() step; 0 when it finished. */
static int die_in_look(void *p)
{
    death_arg *a = p;
    sl_chan *ch;
    unsigned char buf[MSG_MAX];
    if (sl_chan_shm_open_fd(&ch, a->fd, &a->opts) != SL_OK)
        return 1;
    sl__fi_arm(a->k, die_here, NULL);
    sl_status st = sl_chan_try_recv(ch, buf);
    sl__fi_disarm();
    return st == SL_CLOSED ? 0 : 2;
}

/* A process killed inside a look, at each of its steps — in the middle of
 * reclaiming a dead owner's record among them — never wedges the others:
 * the next look finishes that reclaim, the channel closes once its last
 * registered sender is gone, and the record is free again. */
START_TEST(test_death_in_a_look)
{
    const uint64_t look = sl__shm_look_ns;
    sl__shm_look_ns = MS; /* every empty receive after a millisecond looks */
    unsigned k = 1;
    for (;; k++) {
        sl_chan_opts o = opts_of(_i, 4);
        sl_chan *ch;
        unsigned char buf[MSG_MAX];
        ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
        death_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o, .k = k};
        ck_assert_int_eq(reap(spawn(register_and_exit, &a)), 0);
        sl_test_sleep_ns(2 * MS);
        int st = reap(spawn(die_in_look, &a));
        ck_assert_msg(st == 0 || st == 100, "child at step %u: status %d", k, st);
        ck_assert_msg(sl_chan_recv_for(ch, buf, survivor_wait()) == SL_CLOSED,
                      "the channel stayed open after a death at step %u", k);
        unsigned char *raw = map_raw(a.fd, 4096);
        uint64_t owner = atomic_load((_Atomic uint64_t *)(void *)(raw + 2048 + 8));
        /* Or this process's own: a death after the reclaim, before the
         * close, lets its receive wait, claiming the record the look freed. */
        bool ours = owner >> 62 == 0 && (owner & ((1u << 22) - 1)) == (uint64_t)getpid();
        ck_assert_msg(owner == 0 || ours, "record 0 still held after a death at step %u: %llx",
                      k, ULL(owner));
        munmap(raw, 4096);
        sl_chan_free(ch);
        if (st == 0)
            break;
    }
    sl__shm_look_ns = look;
    ck_assert_uint_gt(k, 2);
    printf("[shm death] %s %zu-byte look: killed at each of steps 1..%u\n",
           k_cfg[_i].flavor == SL_SPSC ? "SL_SPSC" : "SL_MPMC", k_cfg[_i].esz, k - 1);
}
END_TEST
#endif

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
/* n sends and receives by the parent with the queue never empty nor full,
 * so with no look, after a child that sent message v (or died before):
 * the cells go round. Then the receives that find the queue empty (the
 * first one looks). Message v comes out once at most, whole. */
static void laps_then_look(sl_chan *ch, const sl_chan_opts *o, int n, uint64_t v)
{
    unsigned char buf[MSG_MAX];
    bool got = false;
    for (int i = 0; i < n; i++) {
        sl_test_seq_fill(buf, o->elem_size, 100 + (uint64_t)i);
        ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_OK);
        ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_OK);
        if (!got && sl_test_seq_is(buf, o->elem_size, v)) {
            got = true;
            ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_OK);
        }
        ck_assert(sl_test_seq_is(buf, o->elem_size, 100 + (uint64_t)i));
    }
    sl__shm_look_ns = 0; /* every empty receive looks */
    while (sl_chan_try_recv(ch, buf) == SL_OK) {
        ck_assert(!got && sl_test_seq_is(buf, o->elem_size, v));
        got = true;
    }
}

/* Senders killed at each step of a send of the swap form, three times as
 * many as there are spares, never use the spare table up: the look that
 * finds each dead gives back the slot out of circulation, whether it looks
 * at once or after the cells have gone round (so that the slot it must see
 * has moved on). Receivers too, over 256 bytes, where a receive holds a
 * spare while it copies the message's slot out (channels/mpmc_swap.c,
 * pop_swap_large): the message it took is lost, its spare is not. */
static const struct {
    size_t esz;
    int op;
} k_holders[] = {{24, DIE_SEND}, {64, DIE_SEND}, {300, DIE_SEND}, {300, DIE_RECV}};

START_TEST(test_spare_holder_dies)
{
    enum { CAP = 2, ROUNDS = 3 * CAP };
    const uint64_t look = sl__shm_look_ns;
    unsigned k = 1;
    for (;; k++) {
        sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = k_holders[_i].esz, .capacity = CAP};
        sl_chan *ch;
        ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
        ck_assert_int_eq(sl_chan_shm_receiver(ch), SL_OK); /* its empty receives look */
        int st = 0;
        for (int round = 0; round < ROUNDS; round++) {
            sl__shm_look_ns = 3600 * SEC; /* no look until the laps are done */
            death_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o, .op = k_holders[_i].op, .k = k,
                           .v = (uint64_t)round};
            if (a.op == DIE_RECV) { /* the message the child takes, or dies before taking */
                unsigned char buf[MSG_MAX];
                sl_test_seq_fill(buf, o.elem_size, a.v);
                ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_OK);
            }
            st = reap(spawn(die_at_step, &a));
            ck_assert_msg(st == 0 || st == 100, "child at step %u: status %d", k, st);
            laps_then_look(ch, &o, round % 2 ? 2 * CAP + 1 : 0, (uint64_t)round);
            check_slots_whole(a.fd, o.elem_size, CAP, k, round);
        }
        sl_chan_free(ch);
        if (st == 0)
            break;
    }
    sl__shm_look_ns = look;
    ck_assert_uint_gt(k, 2);
    printf("[shm death] SL_MPMC %d-byte %s holding a spare: killed %d times at each of steps "
           "1..%u\n", (int)k_holders[_i].esz, k_holders[_i].op == DIE_SEND ? "send" : "receive",
           ROUNDS, k - 1);
}
END_TEST

/* A receive of messages over 256 bytes owns the message's slot from its take
 * until it gives it back, after its copy: stopped for 20 ms at each of its
 * steps in turn while the main thread keeps trying to send (one spare, so a
 * send needs the slot the receive holds), it still returns the message it
 * took, whole. */
typedef struct slow_receive {
    sl_chan *ch;
    unsigned k, passed;
    sl_status st;
    unsigned char buf[MSG_MAX];
} slow_receive;

static void stall(void *ctx, unsigned step)
{
    (void)ctx, (void)step;
    usleep(20 * 1000);
}

static void *receive_slowly(void *p)
{
    slow_receive *r = p;
    sl__fi_arm(r->k, stall, NULL);
    r->st = sl_chan_try_recv(r->ch, r->buf);
    r->passed = sl__fi_disarm();
    return NULL;
}

/* A sender stopped for 20 ms at each of its steps in turn, on a channel of
 * one spare: while it holds that spare (its message published, its cell's
 * slot not yet given back, at one of those steps) a receive finds no spare
 * to take and copies the message first instead (channels/mpmc_swap.c,
 * pop_copy_large): it still gets the message, whole, and never SL_EMPTY
 * for want of a spare. */
typedef struct slow_send {
    sl_chan *ch;
    unsigned k, passed;
    sl_status st;
} slow_send;

static void *send_slowly(void *p)
{
    slow_send *w = p;
    unsigned char buf[MSG_MAX];
    sl_test_seq_fill(buf, 300, 1);
    sl__fi_arm(w->k, stall, NULL);
    w->st = sl_chan_try_send(w->ch, buf);
    w->passed = sl__fi_disarm();
    return NULL;
}

START_TEST(test_receive_while_spare_held)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 300, .capacity = 1};
    unsigned k = 1;
    for (;; k++) {
        slow_send w = {.k = k};
        ck_assert_int_eq(sl_chan_shm_create(&w.ch, NULL, &o, 0), SL_OK);
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, send_slowly, &w), 0);
        unsigned char buf[MSG_MAX];
        memset(buf, 0, sizeof buf); /* no earlier round's bytes */
        sl_status st;
        uint64_t until = sl_now_ns() + 10 * SEC;
        while ((st = sl_chan_try_recv(w.ch, buf)) == SL_EMPTY && sl_now_ns() < until)
            sched_yield();
        ck_assert_msg(st == SL_OK, "sender stopped at step %u (it returned %d): receive %d", k,
                      (int)w.st, (int)st);
        ck_assert_msg(sl_test_seq_is(buf, o.elem_size, 1), "sender stopped at step %u: torn", k);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        ck_assert_int_eq(w.st, SL_OK);
        sl_chan_free(w.ch);
        if (w.passed < k)
            break;
    }
    ck_assert_uint_gt(k, 3);
}
END_TEST

START_TEST(test_receiver_owns_its_slot)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 300, .capacity = 1};
    unsigned k = 1;
    for (;; k++) {
        slow_receive r = {.k = k};
        ck_assert_int_eq(sl_chan_shm_create(&r.ch, NULL, &o, 0), SL_OK);
        unsigned char buf[MSG_MAX];
        sl_test_seq_fill(buf, o.elem_size, 1);
        ck_assert_int_eq(sl_chan_try_send(r.ch, buf), SL_OK);
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, receive_slowly, &r), 0);
        uint64_t sent = 0, until = sl_now_ns() + 40 * MS;
        while (sl_now_ns() < until) {
            sl_test_seq_fill(buf, o.elem_size, 2 + sent);
            sent += sl_chan_try_send(r.ch, buf) == SL_OK;
            if (sent)
                break; /* the ring is full again: nothing more to try */
        }
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        ck_assert_int_eq(r.st, SL_OK);
        ck_assert_msg(sl_test_seq_is(r.buf, o.elem_size, 1),
                      "stopped at step %u, the receive returned bytes not of the message it took", k);
        sl_chan_free(r.ch);
        if (r.passed < k)
            break;
    }
    ck_assert_uint_gt(k, 3);
    printf("[shm death] SL_MPMC 300-byte receive stopped at each of steps 1..%u: its message whole\n",
           k - 1);
}
END_TEST
#endif

/* ---- a close racing with batches --------------------------------------------
 * A sender process sends batches of 5 with try_send_n until it sees the
 * channel closed, and reports how many messages the batches counted; the
 * parent receives with recv_n_for, closes after `at` messages, and drains
 * to SL_CLOSED: it must have every counted message, once each, in order.
 * The periodic look is off, so a wake lost between the processes hangs to
 * the 5 s limit. 30 rounds, scaled by SL_STRESS_SCALE (at least 4); in the
 * fault-injection build, whose stalls widen the close's window, they catch
 * RECV_N_NO_LAST_LOOK in most runs. */
static const struct {
    sl_flavor flavor;
    size_t esz;
} k_race[] = {{SL_SPSC, 8},  {SL_SPSC, 64},  {SL_SPSC, 4096}, {SL_MPMC, 8},
              {SL_MPMC, 64}, {SL_MPMC, 256}, {SL_MPMC, 257},  {SL_MPMC, 4096}};

typedef struct race_arg {
    int fd, pipe;
    sl_chan_opts opts;
} race_arg;

static int batch_sender(void *p)
{
    race_arg *a = p;
    sl_chan *ch;
    if (sl_chan_shm_open_fd(&ch, a->fd, &a->opts) != SL_OK)
        return 1;
    size_t esz = a->opts.elem_size;
    unsigned char *buf = malloc(5 * esz);
    if (!buf)
        return 3;
    uint64_t sent = 0;
    for (;;) {
        for (uint64_t i = 0; i < 5; i++)
            sl_test_seq_fill(buf + i * esz, esz, sent + i);
        size_t k = sl_chan_try_send_n(ch, buf, 5);
        sent += k;
        if (k == 0 && sl_chan_is_closed(ch))
            break;
    }
    free(buf);
    if (write(a->pipe, &sent, sizeof sent) != sizeof sent)
        return 2;
    sl_chan_free(ch);
    return 0;
}

START_TEST(test_batch_close_race)
{
    sl_chan_opts o = {.flavor = k_race[_i].flavor, .elem_size = k_race[_i].esz, .capacity = 16};
    size_t esz = o.elem_size;
    unsigned char *buf = malloc(7 * esz);
    ck_assert_ptr_nonnull(buf);
    uint64_t look = sl__shm_look_ns;
    sl__shm_look_ns = 3600 * SEC; /* no periodic look to hide a lost wake */
    const int rounds = (int)sl_test_scaled(30, 4);
    for (int round = 0; round < rounds; round++) {
        sl_chan *ch;
        ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
        int pp[2];
        ck_assert_int_eq(pipe(pp), 0);
        race_arg a = {.fd = sl_chan_shm_fd(ch), .pipe = pp[1], .opts = o};
        pid_t pid = spawn(batch_sender, &a);
        uint64_t got = 0, at = 500 + (uint64_t)round * 37;
        bool closed = false;
        for (;;) {
            size_t k = 0;
            sl_status st = sl_chan_recv_n_for(ch, buf, 7, 5 * SEC, &k);
            if (st == SL_CLOSED)
                break;
            ck_assert_msg(st == SL_OK, "round %d: %s after %llu", round, sl_status_str(st),
                          (unsigned long long)got);
            for (size_t i = 0; i < k; i++)
                ck_assert_msg(sl_test_seq_is(buf + i * esz, esz, got + i),
                              "round %d: message %llu", round, (unsigned long long)(got + i));
            got += k;
            if (!closed && got >= at) {
                sl_chan_close(ch);
                closed = true;
            }
        }
        join_ok(pid);
        uint64_t sent = 0;
        ck_assert_int_eq(read(pp[0], &sent, sizeof sent), (ssize_t)sizeof sent);
        ck_assert_msg(got == sent, "round %d: %llu received of %llu counted sent", round,
                      (unsigned long long)got, (unsigned long long)sent);
        close(pp[0]), close(pp[1]);
        sl_chan_free(ch);
    }
    sl__shm_look_ns = look;
    free(buf);
}
END_TEST

/* ---- lanes: a flag per sending thread (channels/shm_lane.c) ---------------- */
#define LANE_WAVES 3
#define LANE_THREADS (LANES + 4) /* more than the lanes: some count in the record */

typedef struct lane_sender {
    sl_chan *ch;
    unsigned id;
    uint64_t n;
    int bad;
    sl_test_barrier *start;
} lane_sender;

static void *lane_send_run(void *p)
{
    lane_sender *a = p;
    if (a->start)
        sl_test_barrier_wait(a->start);
    for (uint64_t i = 0; i < a->n; i++) {
        uint64_t m = (uint64_t)a->id << 40 | i;
        if (sl_chan_send(a->ch, &m) != SL_OK)
            a->bad = 1;
    }
    return NULL;
}

/* Waves of more threads than a record has lanes send on one handle at once,
 * each wave's threads exiting before the next starts (their lanes are taken
 * again by the next wave's, after the look for exited owners); every
 * message arrives once, each thread's in order, and the channel closes
 * only once all have landed. */
START_TEST(test_lanes_many_threads)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 8, .capacity = 64};
    sl_chan *ch, *rx;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    ck_assert_int_eq(sl_chan_shm_open_fd(&rx, sl_chan_shm_fd(ch), &o), SL_OK);
    const uint64_t n = sl_test_scaled(3000, 300);
    uint64_t next[LANE_WAVES * LANE_THREADS] = {0}, got = 0;
    for (unsigned w = 0; w < LANE_WAVES; w++) {
        lane_sender a[LANE_THREADS];
        pthread_t t[LANE_THREADS];
        sl_test_barrier start;
        sl_test_barrier_init(&start, LANE_THREADS);
        for (unsigned i = 0; i < LANE_THREADS; i++) {
            a[i] = (lane_sender){.ch = ch, .id = w * LANE_THREADS + i, .n = n, .start = &start};
            ck_assert_int_eq(pthread_create(&t[i], NULL, lane_send_run, &a[i]), 0);
        }
        uint64_t m, until = sl_now_ns() + 60 * SEC;
        while (got < (w + 1) * LANE_THREADS * n && sl_now_ns() < until) {
            if (sl_chan_recv_for(rx, &m, 10 * MS) != SL_OK)
                continue;
            uint64_t id = m >> 40, seq = m & (((uint64_t)1 << 40) - 1);
            ck_assert_msg(id < (w + 1) * LANE_THREADS, "a foreign message %llx", ULL(m));
            ck_assert_msg(seq == next[id], "thread %llu: message %llu where %llu was due", ULL(id),
                          ULL(seq), ULL(next[id]));
            next[id]++, got++;
        }
        for (unsigned i = 0; i < LANE_THREADS; i++) {
            ck_assert_int_eq(pthread_join(t[i], NULL), 0);
            ck_assert_msg(!a[i].bad, "wave %u thread %u: a send failed", w, i);
        }
        sl_test_barrier_destroy(&start);
        sl_test_sleep_ns(60 * MS); /* past the handle's rate limit on looks for exited owners */
    }
    ck_assert_uint_eq(got, LANE_WAVES * LANE_THREADS * n);
    sl_chan_close(ch);
    uint64_t m;
    ck_assert_int_eq(sl_chan_recv_for(rx, &m, survivor_wait()), SL_CLOSED);
    sl_chan_free(rx);
    sl_chan_free(ch);
}
END_TEST

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
/* Sends once, then stays alive (its lane owned) until released. */
typedef struct lane_holder {
    sl_chan *ch;
    sl_test_barrier *sent, *release;
} lane_holder;

static void *lane_hold(void *p)
{
    lane_holder *h = p;
    uint64_t v = 7;
    (void)sl_chan_send(h->ch, &v);
    sl_test_barrier_wait(h->sent);
    sl_test_barrier_wait(h->release);
    return NULL;
}

static void *lane_send_once(void *ch)
{
    uint64_t v = 8;
    (void)sl_chan_send(ch, &v);
    return NULL;
}

/* Stops a send at each of its steps in turn, its thread holding the first
 * lane; the other lanes' owners, alive, send a message each, and one more
 * thread, finding no free lane, sends too; all theirs are received, the
 * channel closed. A receive must not then answer SL_CLOSED while the
 * stopped send can still land: its lane is its own (no other thread's
 * unmark clears it, and a thread finds no lane free of a living owner),
 * and the receiver reads it. */
START_TEST(test_lanes_close_in_flight)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 8, .capacity = 64};
    unsigned k = 1;
    for (;; k++) {
        sl_test_gated_send g = {.k = k, .value = 42};
        ck_assert_int_eq(sl_chan_shm_create(&g.ch, NULL, &o, 0), SL_OK);
        ck_assert_int_eq(sl_chan_shm_sender(g.ch), SL_OK); /* the record claimed: no lock in a step */
        pthread_t t, hold[LANES - 1], late;
        ck_assert_int_eq(pthread_create(&t, NULL, sl_test_send_gated, &g), 0);
        sl_test_wait_stopped(&g);
        sl_test_barrier sent, release;
        sl_test_barrier_init(&sent, LANES);
        sl_test_barrier_init(&release, LANES);
        lane_holder h = {.ch = g.ch, .sent = &sent, .release = &release};
        for (unsigned i = 0; i < LANES - 1; i++)
            ck_assert_int_eq(pthread_create(&hold[i], NULL, lane_hold, &h), 0);
        sl_test_barrier_wait(&sent);
        ck_assert_int_eq(pthread_create(&late, NULL, lane_send_once, g.ch), 0);
        ck_assert_int_eq(pthread_join(late, NULL), 0);
        uint64_t v, got42 = 0, others = 0;
        while (sl_chan_try_recv(g.ch, &v) == SL_OK)
            v == 42 ? got42++ : others++;
        const uint64_t pushed_before = got42; /* the stopped send's, if it had pushed */
        sl_chan_close(g.ch);
        sl_status early = sl_chan_try_recv(g.ch, &v);
        if (early == SL_OK)
            v == 42 ? got42++ : others++;
        atomic_store(&g.gate.go, 1);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        sl_test_barrier_wait(&release);
        for (unsigned i = 0; i < LANES - 1; i++)
            ck_assert_int_eq(pthread_join(hold[i], NULL), 0);
        while (sl_chan_try_recv(g.ch, &v) == SL_OK)
            v == 42 ? got42++ : others++;
        ck_assert_msg(!(early == SL_CLOSED && g.st == SL_OK && !pushed_before),
                      "a receive said SL_CLOSED under a send stopped at step %u, which then "
                      "landed (SL_OK)", k);
        ck_assert_msg(got42 == (g.st == SL_OK),
                      "send stopped at step %u returned %s; its message received %llu times", k,
                      sl_status_str(g.st), ULL(got42));
        ck_assert_uint_eq(others, LANES);
        sl_test_barrier_destroy(&sent);
        sl_test_barrier_destroy(&release);
        sl_chan_free(g.ch);
        if (g.passed < k)
            break;
    }
    ck_assert_uint_gt(k, 3);
    printf("[shm lanes] SL_MPMC send stopped at each of steps 1..%u under %u other senders: "
           "never taken for landed\n", k - 1, LANES);
}
END_TEST
#endif

/* ---- the typed form -------------------------------------------------------- */
typedef struct pair {
    uint64_t a, b;
} pair;
SL_CHAN_TYPED(pair_chan, pair);
SL_CHAN_SHM_TYPED(pair_chan, pair);

static int typed_child(void *p)
{
    pair_chan *c;
    sl_chan_opts o = {.flavor = SL_MPMC}; /* elem_size comes from the type */
    if (pair_chan_shm_open_fd(&c, *(int *)p, &o) != SL_OK)
        return 1;
    pair v = {3, 4};
    if (pair_chan_shm_sender(c) != SL_OK || pair_chan_shm_receiver(c) != SL_OK ||
        pair_chan_send(c, &v) != SL_OK)
        return 2;
    pair_chan_free(c);
    return 0;
}

START_TEST(test_typed)
{
    pair_chan *c;
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 1, .capacity = 2};
    ck_assert_int_eq(pair_chan_shm_create(&c, NULL, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(pair_chan_shm_create(&c, NULL, &o, 0), SL_OK);
    ck_assert_uint_eq(sl_chan_elem_size((sl_chan *)(void *)c), sizeof(pair));
    int fd = pair_chan_shm_fd(c);
    pid_t pid = spawn(typed_child, &fd);
    pair v;
    ck_assert_int_eq(pair_chan_recv_for(c, &v, 10 * SEC), SL_OK);
    ck_assert(v.a == 3 && v.b == 4);
    join_ok(pid);
    /* the child freed its registered handle: the channel closed itself */
    ck_assert_int_eq(pair_chan_recv_for(c, &v, 10 * SEC), SL_CLOSED);
    ck_assert_int_eq(pair_chan_shm_open(&c, NULL, &o), SL_EINVAL);
    pair_chan_free(c);
}
END_TEST

/* ---- select over shared and in-process channels ----------------------------
 * A selector in one process, its shared case changed by another: woken by
 * the segment's bell, never by the periodic look (lengthened here, as in the
 * park tests, so that a ring that never crosses the process fails instead of
 * arriving 50 ms late). _i: the configuration, and biased (_i >= 4). */
typedef struct sel_arg {
    int fd;
    sl_chan_opts opts;
    int what; /* SEL_SEND_THEN_CLOSE, SEL_RECV_THEN_CLOSE */
} sel_arg;

enum { SEL_SEND_THEN_CLOSE, SEL_RECV_THEN_CLOSE };

/* Whether the parent sleeps in its select on the segment of fd: registered
 * on the segment's bell (bell.waiters, docs/shm-layout.md) and in the
 * kernel's sleeping state. The child acts only then, so that the parent's
 * wake-ups come through the bell whatever the load (a fixed pause let a
 * descheduled parent find the change without sleeping). */
static void await_parent_asleep(int fd)
{
    const unsigned char *raw = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    if (raw == MAP_FAILED)
        _exit(5);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)getppid());
    for (int i = 0; i < 20000; i++) {
        if (atomic_load((const _Atomic uint32_t *)(const void *)(raw + 92)) != 0 &&
            sl_test_task_asleep(path)) {
            munmap((void *)raw, 4096);
            return;
        }
        sl_test_sleep_ns(MS / 2);
    }
    _exit(6); /* the parent never slept in 10 s */
}

/* The child: once the parent sleeps in its select, sends message 7 (or
 * takes message 0 from the full channel); once the parent has taken that
 * change and sleeps again, closes. */
static int sel_peer(void *p)
{
    sel_arg *a = p;
    sl_chan *ch;
    unsigned char buf[MSG_MAX];
    if (sl_chan_shm_open_fd(&ch, a->fd, &a->opts) != SL_OK)
        return 1;
    await_parent_asleep(a->fd);
    if (a->what == SEL_SEND_THEN_CLOSE) {
        sl_test_seq_fill(buf, a->opts.elem_size, 7);
        if (sl_chan_try_send(ch, buf) != SL_OK)
            return 2;
    } else if (sl_chan_try_recv(ch, buf) != SL_OK || !sl_test_seq_is(buf, a->opts.elem_size, 0)) {
        return 3;
    }
    /* The close only once the parent's select took the change (the message
     * received, or the room refilled), whenever its wake came. */
    size_t after = a->what == SEL_SEND_THEN_CLOSE ? 0 : sl_chan_cap(ch);
    while (sl_chan_len(ch) != after)
        sl_test_sleep_ns(MS);
    await_parent_asleep(a->fd);
    sl_chan_close(ch);
    sl_chan_free(ch);
    return 0;
}

static sl_status select_by(bool biased, sl_select_case *c, size_t n, uint64_t t, size_t *idx)
{
    *idx = n;
    return biased ? sl_select_biased(c, n, t, idx) : sl_select(c, n, t, idx);
}

/* An in-process channel for the other case: empty (never ready to receive)
 * or full (never ready to send). */
static sl_chan *local_chan(bool full)
{
    sl_chan *l;
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 64, .capacity = 1};
    ck_assert_int_eq(sl_chan_new(&l, &o), SL_OK);
    unsigned char buf[64] = {0};
    if (full)
        ck_assert_int_eq(sl_chan_try_send(l, buf), SL_OK);
    return l;
}

static uint64_t g_look_saved;
static void long_look(void) { g_look_saved = sl__shm_look_ns, sl__shm_look_ns = 3600 * SEC; }
static void look_back(void) { sl__shm_look_ns = g_look_saved; }

/* Receive cases: the try form, a timed select that runs out, then a select
 * with no deadline woken by the child's send, then by its close. */
static void select_recv_across(int cfg, bool biased, uint64_t timeout)
{
    sl_chan_opts o = opts_of(cfg, 2);
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    sl_chan *l = local_chan(false);
    unsigned char got[64], other[64];
    sl_select_case c[] = {{l, SL_SEL_RECV, other}, {ch, SL_SEL_RECV, got}};
    size_t idx;
    ck_assert_int_eq(select_by(biased, c, 2, 0, &idx), SL_TIMEDOUT);
    ck_assert_int_eq(select_by(biased, c, 2, 5 * MS, &idx), SL_TIMEDOUT);
    sel_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o, .what = SEL_SEND_THEN_CLOSE};
    pid_t pid = spawn(sel_peer, &a);
    ck_assert_int_eq(select_by(biased, c, 2, timeout, &idx), SL_OK);
    ck_assert_uint_eq(idx, 1);
    ck_assert(sl_test_seq_is(got, o.elem_size, 7));
    ck_assert_int_eq(select_by(biased, c, 2, timeout, &idx), SL_CLOSED);
    ck_assert_uint_eq(idx, 1);
    join_ok(pid);
    sl_chan_free(l);
    sl_chan_free(ch);
}

/* Send cases: the shared channel full, woken by the child's receive, then
 * full again, woken by its close. */
static void select_send_across(int cfg, bool biased, uint64_t timeout)
{
    sl_chan_opts o = opts_of(cfg, 2);
    sl_chan *ch;
    unsigned char buf[64], other[64] = {0};
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    for (uint64_t i = 0; i < 2; i++) {
        sl_test_seq_fill(buf, o.elem_size, i);
        ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_OK);
    }
    sl_chan *l = local_chan(true);
    sl_test_seq_fill(buf, o.elem_size, 2);
    sl_select_case c[] = {{l, SL_SEL_SEND, other}, {ch, SL_SEL_SEND, buf}};
    size_t idx;
    ck_assert_int_eq(select_by(biased, c, 2, 0, &idx), SL_TIMEDOUT);
    sel_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o, .what = SEL_RECV_THEN_CLOSE};
    pid_t pid = spawn(sel_peer, &a);
    ck_assert_int_eq(select_by(biased, c, 2, timeout, &idx), SL_OK);
    ck_assert_uint_eq(idx, 1);
    ck_assert_int_eq(select_by(biased, c, 2, timeout, &idx), SL_CLOSED);
    ck_assert_uint_eq(idx, 1);
    join_ok(pid);
    for (uint64_t i = 1; i < 3; i++) { /* what is left: 1, then the select's 2 */
        ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_OK);
        ck_assert(sl_test_seq_is(buf, o.elem_size, i));
    }
    ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_CLOSED);
    sl_chan_free(l);
    sl_chan_free(ch);
}

START_TEST(test_select_recv_across)
{
    long_look();
    select_recv_across(_i % 4, _i >= 4, _i % 2 ? SL_FOREVER : 10 * SEC);
    look_back();
}
END_TEST

START_TEST(test_select_send_across)
{
    long_look();
    select_send_across(_i % 4, _i >= 4, _i % 2 ? 10 * SEC : SL_FOREVER);
    look_back();
}
END_TEST

/* Biased, both ready: the lowest index wins, shared or not; and an
 * in-process case still wakes a selector that also waits on a segment. */
static void *send_later(void *p)
{
    sl_test_sleep_ns(50 * MS);
    unsigned char buf[64] = {9};
    ck_assert_int_eq(sl_chan_try_send(p, buf), SL_OK);
    return NULL;
}

START_TEST(test_select_mixed_order)
{
    sl_chan_opts o = opts_of(_i, 4);
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    sl_chan *l = local_chan(true);
    unsigned char buf[64] = {0}, lb[64];
    sl_test_seq_fill(buf, o.elem_size, 5);
    ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_OK);
    size_t idx;
    sl_select_case sl_first[] = {{ch, SL_SEL_RECV, buf}, {l, SL_SEL_RECV, lb}};
    ck_assert_int_eq(sl_select_biased(sl_first, 2, 0, &idx), SL_OK);
    ck_assert_uint_eq(idx, 0);
    ck_assert(sl_test_seq_is(buf, o.elem_size, 5));
    ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_OK);
    sl_select_case l_first[] = {{l, SL_SEL_RECV, lb}, {ch, SL_SEL_RECV, buf}};
    ck_assert_int_eq(sl_select_biased(l_first, 2, 0, &idx), SL_OK);
    ck_assert_uint_eq(idx, 0);
    ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_OK); /* empty both again */
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, send_later, l), 0);
    ck_assert_int_eq(sl_select(l_first, 2, 10 * SEC, &idx), SL_OK);
    ck_assert_uint_eq(idx, 0);
    ck_assert_uint_eq(lb[0], 9);
    pthread_join(t, NULL);
    /* Refusals are as for any channel: a NULL buffer, nothing consumed. */
    sl_select_case bad[] = {{ch, SL_SEL_RECV, NULL}};
    ck_assert_int_eq(sl_select(bad, 1, 0, &idx), SL_EINVAL);
    sl_chan_free(l);
    sl_chan_free(ch);
}
END_TEST

/* Faults in futex_waitv: spurious returns, EINTR and EAGAIN in turn before
 * each real call; or ENOSYS (a kernel before 5.16), where the selector
 * sleeps on its process's bell in spans and looks at the segments' epochs. */
static atomic_uint g_waitv_calls;

static int waitv_faulty(const sl__futex_word *w, unsigned n, uint64_t deadline_ns)
{
    static const int k_fault[] = {0, -EINTR, -EAGAIN};
    unsigned k = atomic_fetch_add(&g_waitv_calls, 1);
    if (k % 4 < 3)
        return k_fault[k % 4];
    return sl__sys_default_ops.futex_waitv(w, n, deadline_ns);
}

static int waitv_missing(const sl__futex_word *w, unsigned n, uint64_t deadline_ns)
{
    (void)w, (void)n, (void)deadline_ns;
    atomic_fetch_add(&g_waitv_calls, 1);
    return -ENOSYS;
}

START_TEST(test_select_waitv_faults)
{
    static const sl_sys_ops faulty = {.futex_waitv = waitv_faulty};
    static const sl_sys_ops missing = {.futex_waitv = waitv_missing};
    atomic_store(&g_waitv_calls, 0);
    sl_test_sys_install(_i < 2 ? &faulty : &missing);
    long_look();
    if (_i % 2)
        select_send_across(2, false, SL_FOREVER);
    else
        select_recv_across(0, true, 10 * SEC);
    look_back();
    sl_test_sys_restore();
    /* The parent slept in the select at least twice (the send or receive,
     * then the close): through the entry, each time. */
    ck_assert_uint_ge(atomic_load(&g_waitv_calls), _i < 2 ? 4 : 2);
}
END_TEST

/* More shared cases than the stack's list of bells holds (7): the wait
 * allocates the list; out of memory it returns SL_ENOMEM with *index
 * untouched and nothing taken; with memory, the case on the last segment
 * is woken by a child's send. */
#define MANY_SHARED 9

START_TEST(test_select_many_segments)
{
    sl_chan_opts o = opts_of(_i, 2);
    sl_chan *ch[MANY_SHARED];
    unsigned char buf[MANY_SHARED][64];
    sl_select_case c[MANY_SHARED];
    for (int i = 0; i < MANY_SHARED; i++) {
        ck_assert_int_eq(sl_chan_shm_create(&ch[i], NULL, &o, 0), SL_OK);
        c[i] = (sl_select_case){ch[i], SL_SEL_RECV, buf[i]};
    }
    size_t idx = MANY_SHARED;
    sl_test_fail_allocs(UINT64_MAX);
    ck_assert_int_eq(sl_select(c, MANY_SHARED, MS, &idx), SL_ENOMEM);
    ck_assert_int_eq(sl_select_biased(c, MANY_SHARED, MS, &idx), SL_ENOMEM);
    sl_test_alloc_faults_off();
    ck_assert_uint_eq(idx, MANY_SHARED);
    ck_assert_int_eq(sl_select(c, MANY_SHARED, MS, &idx), SL_TIMEDOUT);
    long_look();
    sel_arg a = {.fd = sl_chan_shm_fd(ch[MANY_SHARED - 1]), .opts = o,
                 .what = SEL_SEND_THEN_CLOSE};
    pid_t pid = spawn(sel_peer, &a);
    ck_assert_int_eq(sl_select(c, MANY_SHARED, 10 * SEC, &idx), SL_OK);
    ck_assert_uint_eq(idx, MANY_SHARED - 1);
    ck_assert(sl_test_seq_is(buf[MANY_SHARED - 1], o.elem_size, 7));
    ck_assert_int_eq(sl_select(c, MANY_SHARED, 10 * SEC, &idx), SL_CLOSED);
    ck_assert_uint_eq(idx, MANY_SHARED - 1);
    join_ok(pid);
    look_back();
    for (int i = 0; i < MANY_SHARED; i++)
        sl_chan_free(ch[i]);
}
END_TEST

/* A selector killed while counted on a segment: the count stays raised (a
 * later change takes the ring's slow path), nobody is wedged, and the next
 * selector in another process is woken as before. */
static int select_forever(void *p)
{
    park_arg *a = p;
    sl_chan *ch;
    unsigned char buf[MSG_MAX];
    if (sl_chan_shm_open_fd(&ch, a->fd, &a->opts) != SL_OK)
        return 1;
    sl_select_case c[] = {{ch, SL_SEL_RECV, buf}};
    size_t idx;
    (void)sl_select(c, 1, SL_FOREVER, &idx);
    return 2;
}

START_TEST(test_select_killed_selector)
{
    sl_chan_opts o = opts_of(_i, 2);
    sl_chan *ch;
    unsigned char buf[MSG_MAX];
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    park_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o};
    pid_t pid = spawn(select_forever, &a);
    unsigned char *raw = map_raw(a.fd, 128);
    SL_ATOMIC(uint32_t) *selectors = (SL_ATOMIC(uint32_t) *)(raw + 60); /* shm-layout.md */
    for (unsigned i = 0; i < 10000 && atomic_load(selectors) == 0; i++)
        sl_test_sleep_ns(MS); /* until the child counts itself, about to sleep */
    sl_test_sleep_ns(10 * MS);
    kill(pid, SIGKILL);
    ck_assert_int_eq(reap(pid), 128 + SIGKILL);
    ck_assert_uint_eq(atomic_load(selectors), 1); /* the dead selector's count stays */
    for (uint64_t i = 0; i < 2; i++) { /* sends and receives go on */
        sl_test_seq_fill(buf, o.elem_size, i);
        ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_OK);
    }
    ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_OK);
    ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_OK);
    /* A selector here, on the same channel, is woken by another child's
     * send and close through the bell. */
    long_look();
    sl_select_case c[] = {{ch, SL_SEL_RECV, buf}};
    size_t idx;
    sel_arg b = {.fd = a.fd, .opts = o, .what = SEL_SEND_THEN_CLOSE};
    pid = spawn(sel_peer, &b);
    ck_assert_int_eq(sl_select(c, 1, SL_FOREVER, &idx), SL_OK);
    ck_assert(sl_test_seq_is(buf, o.elem_size, 7));
    ck_assert_int_eq(sl_select(c, 1, SL_FOREVER, &idx), SL_CLOSED);
    join_ok(pid);
    look_back();
    ck_assert_uint_eq(atomic_load(selectors), 1);
    munmap(raw, 128);
    sl_chan_free(ch);
}
END_TEST

/* ---- event-loop descriptors of shared channels -----------------------------
 * The parent polls a descriptor of a shared channel while a child changes
 * the channel: the watcher thread relays the segment's bell to the eventfd.
 * The periodic look is lengthened, so only the bell can wake the watcher. */
static bool readable(int fd, uint64_t timeout_ns)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, (int)(timeout_ns / MS)) == 1 && (p.revents & POLLIN);
}

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
static int foreign_die_at_step(void *p)
{
    sl__shm_set_namespaces(1, 1); /* in other namespaces: its death goes unfound */
    return die_at_step(p);
}

/* A sender in other namespaces killed at each step of its send in turn,
 * then the channel closed: where it died marked in flight, no look can
 * find it, and a receive says SL_EMPTY for good. An event loop on the
 * receive end must then sleep, woken a few times a look period by the
 * watcher, not spin: the end was once left readable after a close until
 * the receive could say SL_CLOSED (planted bug CHANFD_CLOSED_SPINS), and a
 * late signal's write could leave it readable for good under load, with
 * the harness's spurious futex faults or without (CHANFD_ARMED_SKIPS_RESET,
 * caught by unit_chanfd's stale_signal). */
START_TEST(test_fd_foreign_dead_in_flight)
{
    const uint64_t look = sl__shm_look_ns, window = 300 * MS;
    sl__shm_look_ns = 20 * MS;
    unsigned stuck = 0;
    for (unsigned k = 1;; k++) {
        sl_chan_opts o = opts_of(_i, 4);
        sl_chan *ch;
        int fd;
        unsigned char buf[MSG_MAX];
        ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
        ck_assert_int_eq(sl_chan_fd(ch, SL_END_RECV, &fd), SL_OK);
        ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_EMPTY);
        death_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o, .op = DIE_SEND, .k = k};
        int st = reap(spawn(foreign_die_at_step, &a));
        ck_assert_msg(st == 0 || st == 100, "child at step %u: status %d", k, st);
        sl_chan_close(ch);
        unsigned wakes = 0;
        sl_status last = SL_EMPTY;
        for (uint64_t t0 = sl_test_now_ns(), now = t0; last != SL_CLOSED && now - t0 < window;
             now = sl_test_now_ns()) {
            if (!readable(fd, window - (now - t0)))
                continue;
            wakes++;
            while ((last = sl_chan_try_recv(ch, buf)) == SL_OK)
                ;
        }
        if (last != SL_CLOSED) { /* died marked */
            stuck++;
            /* The watcher's looks, and what the receive's own look rings,
             * wake it a few times a period (up to 39 in 300 ms seen under
             * fault injection); a busy loop, tens of thousands of times. */
            ck_assert_msg(wakes <= 10 * window / sl__shm_look_ns,
                          "%s, sender died at step %u: the loop woke %u times in %llu ms",
                          sl_test_flavor_name(o.flavor), k, wakes,
                          (unsigned long long)(window / MS));
        }
        sl_chan_free(ch);
        if (st == 0)
            break;
    }
    ck_assert_uint_gt(stuck, 0);
    sl__shm_look_ns = look;
}
END_TEST
#endif

/* Receive end: readable at first (made so), drained to SL_EMPTY (re-armed,
 * not readable), readable after the child's send, then after its close. */
static void fd_recv_across(sl_chan *ch, const sl_chan_opts *o)
{
    int fd = -1;
    unsigned char buf[MSG_MAX];
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_RECV, &fd), SL_OK);
    ck_assert(readable(fd, 0));
    ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_EMPTY);
    ck_assert(!readable(fd, 0));
    sel_arg a = {.fd = sl_chan_shm_fd(ch), .opts = *o, .what = SEL_SEND_THEN_CLOSE};
    pid_t pid = spawn(sel_peer, &a);
    ck_assert(readable(fd, survivor_wait()));
    ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_OK);
    ck_assert(sl_test_seq_is(buf, o->elem_size, 7));
    ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_EMPTY);
    ck_assert(readable(fd, survivor_wait())); /* the close */
    ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_CLOSED);
    join_ok(pid);
}

/* Every configuration in one test: a test process that ends with the
 * watcher thread alive costs a second under TSan (its exit waits for
 * threads to report), so the fd case keeps to a few such processes. */
/* A sender process that once watched a shared channel with a descriptor
 * (taken on a second handle, then freed) and whose main thread then exits
 * while nothing else of its own runs: the process must end. The watcher
 * thread used to stay for the process's life and keep it, with whatever
 * records and registrations it held, for good (found by review: a sender
 * that did not free its handle was never found gone; planted bug
 * SHM_WATCHER_STAYS). Its handles are freed first here (a leak checker
 * would fail an exit that did not), so its receiver gets the message, then
 * SL_CLOSED from the free, and the process must then be gone within 5 s.
 * Not under ThreadSanitizer, whose own thread outlives main as well, nor
 * under AddressSanitizer, whose leak check at that exit finds the test
 * framework's structures, which only main's stack held. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define US_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define US_SANITIZED 1
#endif
#endif
/* ThreadSanitizer refuses a thread started after a multi-threaded fork. */
#if defined(__SANITIZE_THREAD__)
#define US_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define US_TSAN 1
#endif
#endif

static int watched_then_main_exits(void *p)
{
    sl_chan *ch = p, *h;
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 8};
    int fd = -1;
    if (sl_chan_shm_open_fd(&h, sl_chan_shm_fd(ch), &o) != SL_OK ||
        sl_chan_fd(h, SL_END_RECV, &fd) != SL_OK)
        return 2;
    sl_chan_free(h);
    unsigned char m[MSG_MAX] = {0};
    if (sl_chan_shm_sender(ch) != SL_OK || sl_chan_send(ch, m) != SL_OK)
        return 3;
    sl_chan_free(ch);
    pthread_exit(NULL);
}

START_TEST(test_fd_watcher_leaves)
{
#ifdef US_SANITIZED
    printf("[shm fd] a process whose main thread exits: not under a sanitizer\n");
    return;
#endif
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 8, .capacity = 4};
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    pid_t pid = spawn(watched_then_main_exits, ch);
    sl_status st;
    uint64_t got = recv_numbered(ch, &st);
    int ws = 0;
    pid_t r = 0;
    for (int i = 0; i < 500 && r == 0; i++, sl_test_sleep_ns(10 * MS))
        r = waitpid(pid, &ws, WNOHANG);
    if (r == 0)
        kill(pid, SIGKILL); /* its alarm cannot end it: the watcher blocks every signal */
    int rc = r == 0 ? reap(pid) : WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    ck_assert_msg(r == pid && rc == 0 && got == 1 && st == SL_CLOSED,
                  "%llu of 1 received, then %s; the sender %s (status %d)", ULL(got),
                  sl_status_str(st), r == pid ? "ended" : "still there after 5 s", rc);
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_fd_recv_across)
{
    long_look();
    for (int i = 0; i < (int)N_OF(k_cfg); i++) {
        sl_chan_opts o = opts_of(i, 2);
        sl_chan *ch;
        ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
        fd_recv_across(ch, &o);
        sl_chan_free(ch);
    }
    look_back();
}
END_TEST

/* Send end: full, so drained to SL_FULL (re-armed), readable after the
 * child's receive; full again, readable after its close. */
static void fd_send_across(int cfg)
{
    sl_chan_opts o = opts_of(cfg, 2);
    sl_chan *ch;
    unsigned char buf[MSG_MAX];
    int fd = -1;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_SEND, &fd), SL_OK);
    for (uint64_t i = 0; i < 2; i++) {
        sl_test_seq_fill(buf, o.elem_size, i);
        ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_OK);
    }
    ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_FULL);
    ck_assert(!readable(fd, 0));
    sel_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o, .what = SEL_RECV_THEN_CLOSE};
    pid_t pid = spawn(sel_peer, &a);
    ck_assert(readable(fd, survivor_wait()));
    sl_test_seq_fill(buf, o.elem_size, 2);
    ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_OK);
    ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_FULL);
    ck_assert(readable(fd, survivor_wait())); /* the close */
    ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_CLOSED);
    join_ok(pid);
    sl_chan_free(ch);
}

START_TEST(test_fd_send_across)
{
    long_look();
    for (int i = 0; i < (int)N_OF(k_cfg); i++)
        fd_send_across(i);
    look_back();
}
END_TEST

/* Several watched segments, one freed while the watcher sleeps on it: the
 * others are still followed; and the watcher cannot start: SL_ENOMEM,
 * nothing made, then made once it can. */
static int no_thread(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg)
{
    (void)t, (void)a, (void)f, (void)arg;
    return 11; /* EAGAIN */
}

START_TEST(test_fd_watch_list)
{
    static const sl_sys_ops no_threads = {.thread_create = no_thread};
    long_look(); /* before the watcher runs: it reads the period */
    sl_chan_opts o = opts_of(_i % 2 ? 3 : 0, 2);
    sl_chan *ch[3];
    int fd = -1;
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(sl_chan_shm_create(&ch[i], NULL, &o, 0), SL_OK);
    sl_test_sys_install(&no_threads);
    ck_assert_int_eq(sl_chan_fd(ch[0], SL_END_RECV, &fd), SL_ENOMEM);
    sl_test_sys_restore();
    ck_assert_int_eq(fd, -1);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(sl_chan_fd(ch[i], SL_END_RECV, &fd), SL_OK);
    sl_test_sleep_ns(20 * MS); /* the watcher asleep on all three */
    sl_chan_free(ch[1]);
    sl_chan_free(ch[0]);
    fd_recv_across(ch[2], &o);
    sl_chan_free(ch[2]);
    look_back(); /* the watcher watches nothing now */
}
END_TEST

/* sl_chan_fd refused (no eventfd) leaves the channel as it was: no watcher
 * thread started for a descriptor that was never made (found by review:
 * the channel was put on the watch list first). */
static int eventfd_emfile(unsigned initval)
{
    (void)initval;
    return -EMFILE;
}

START_TEST(test_fd_refused_starts_nothing)
{
    sl_chan_opts o = opts_of(0, 4);
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    unsigned before = sl_test_thread_count();
    static const sl_sys_ops ops = {.eventfd = eventfd_emfile};
    sl_test_sys_install(&ops);
    int fd = -7;
    sl_status st = sl_chan_fd(ch, SL_END_RECV, &fd);
    sl_test_sys_restore();
    ck_assert_int_eq(st, SL_ENOMEM);
    ck_assert_int_eq(fd, -7);
    ck_assert_msg(sl_test_thread_count() == before, "a refused sl_chan_fd left %u threads, %u before",
                  sl_test_thread_count(), before);
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_RECV, &fd), SL_OK); /* and works after */
    sl_chan_free(ch);
}
END_TEST

/* The watcher cannot rebuild its set (every allocation fails): a free of a
 * watched channel must still return, the watcher holding no set while it
 * naps; once allocations pass, the channel left is followed as before
 * (found by review: the free waited for as long as allocations failed). */
typedef struct free_arg {
    sl_chan *ch;
    atomic_int done;
} free_arg;

static void *free_flagged(void *p)
{
    free_arg *a = p;
    sl_chan_free(a->ch);
    atomic_store(&a->done, 1);
    return NULL;
}

START_TEST(test_fd_free_without_memory)
{
    long_look();
    sl_chan_opts o = opts_of(0, 2);
    sl_chan *y;
    free_arg a = {0};
    int fd = -1;
    ck_assert_int_eq(sl_chan_shm_create(&a.ch, NULL, &o, 0), SL_OK);
    ck_assert_int_eq(sl_chan_shm_create(&y, NULL, &o, 0), SL_OK);
    ck_assert_int_eq(sl_chan_fd(a.ch, SL_END_RECV, &fd), SL_OK);
    ck_assert_int_eq(sl_chan_fd(y, SL_END_RECV, &fd), SL_OK); /* the list stays non-empty */
    sl_test_sleep_ns(20 * MS); /* the watcher asleep on both */
    sl_test_fail_allocs(UINT64_MAX);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, free_flagged, &a), 0);
    for (int i = 0; i < 500 && !atomic_load(&a.done); i++)
        sl_test_sleep_ns(MS);
    int done = atomic_load(&a.done);
    sl_test_alloc_faults_off();
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_msg(done, "sl_chan_free waited for the watcher's allocation");
    fd_recv_across(y, &o);
    sl_chan_free(y);
    look_back();
}
END_TEST

/* A fork() while another thread's sl_chan_free waits for the watcher to let
 * go of its channel (the watcher held in its futex_waitv here, so its
 * rebuild never comes): the child inherits the watcher's condition variable
 * with that waiter counted in it, and glibc's broadcast can wait for a
 * waiter that does not exist in the child. The child's own descriptors,
 * taken and freed, must not hang (found by review). */
static atomic_int g_watcher_held;

static int waitv_held(const sl__futex_word *w, unsigned n, uint64_t deadline_ns)
{
    while (atomic_load(&g_watcher_held))
        sl_test_sleep_ns(MS);
    return sl__sys_default_ops.futex_waitv(w, n, deadline_ns);
}

static void *free_later(void *p)
{
    sl_chan_free(p);
    return NULL;
}

static int fd_rounds(void *p)
{
    (void)p;
    alarm(2); /* a hang ends the child soon */
    sl_test_sys_restore();
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 8, .capacity = 2};
    for (int i = 0; i < 4; i++) {
        sl_chan *z;
        int fd = -1;
        if (sl_chan_shm_create(&z, NULL, &o, 0) != SL_OK || sl_chan_fd(z, SL_END_RECV, &fd) != SL_OK)
            return 1;
        sl_chan_free(z);
    }
    return 0;
}

START_TEST(test_fd_fork_while_freeing)
{
#ifdef US_TSAN
    printf("[shm fd] threads in a child forked from threads: not under ThreadSanitizer\n");
    return;
#endif
    static const sl_sys_ops held = {.futex_waitv = waitv_held};
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 8, .capacity = 2};
    sl_chan *x, *y;
    int fd = -1;
    atomic_store(&g_watcher_held, 1);
    sl_test_sys_install(&held);
    ck_assert_int_eq(sl_chan_shm_create(&x, NULL, &o, 0), SL_OK);
    ck_assert_int_eq(sl_chan_shm_create(&y, NULL, &o, 0), SL_OK);
    ck_assert_int_eq(sl_chan_fd(x, SL_END_RECV, &fd), SL_OK);
    ck_assert_int_eq(sl_chan_fd(y, SL_END_RECV, &fd), SL_OK); /* the list stays non-empty */
    sl_test_sleep_ns(20 * MS); /* the watcher held asleep */
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, free_later, x), 0);
    sl_test_sleep_ns(20 * MS); /* x's free waits in the condition variable */
    pid_t pid = spawn(fd_rounds, NULL);
    int rc = reap(pid);
    atomic_store(&g_watcher_held, 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    sl_test_sys_restore();
    sl_chan_free(y);
    ck_assert_msg(rc == 0, "the child's descriptors after the fork: %s (status %d)",
                  rc == 128 + SIGALRM ? "hung" : "failed", rc);
}
END_TEST

/* A fork()ed child uses the handle it inherited (as the handle of any
 * process: it claims its own record), but the descriptors of that handle
 * are its parent's: the same eventfds, duplicated by the fork, and flags
 * that the parent's signals and watcher no longer move in the child's copy.
 * The child's empty receive re-armed the copy, and its reset read the
 * parent's eventfd: a signal owed to the parent's loop was gone, and with
 * the parent's flag still down no later change wrote it again, so the loop
 * slept for good with messages in the channel (found by review). The
 * child's receive, select and sends leave the parent's descriptor alone,
 * and the child's sl_chan_fd on the inherited handle is refused. */
static int child_uses_inherited(void *p)
{
    sl_chan *ch = p;
    unsigned char buf[MSG_MAX] = {0};
    if (sl_chan_try_recv(ch, buf) != SL_EMPTY) /* the empty receive that re-armed */
        return 1;
    if (sl_chan_recv_for(ch, buf, MS) != SL_TIMEDOUT)
        return 2;
    sl_select_case c = {ch, SL_SEL_RECV, buf};
    size_t idx;
    if (sl_select(&c, 1, 0, &idx) == SL_OK)
        return 3;
    return 0;
}

static int child_asks_fd(void *p)
{
    int fd = -1;
    /* The parent's eventfd: its loop's and this one's would take each other's. */
    return sl_chan_fd(p, SL_END_RECV, &fd) == SL_EINVAL && fd == -1 ? 0 : 4;
}

START_TEST(test_fd_forked_child_leaves_parents)
{
    sl_chan_opts o = opts_of(_i, 4);
    sl_chan *ch;
    int fd;
    unsigned char buf[MSG_MAX];
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_RECV, &fd), SL_OK);
    for (int round = 0; round < 2; round++) {
        /* Owed a wake-up: made readable (round 0), or signalled by a send
         * after a re-arm and the message taken by another receive (round 1). */
        if (round == 1) {
            ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_EMPTY); /* re-armed */
            ck_assert(!readable(fd, 0));
            sl_test_seq_fill(buf, o.elem_size, 1);
            ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_OK);
            ck_assert_int_eq(sl_chan_try_recv_n(ch, buf, 1), 1); /* a batch: no re-arm */
        }
        ck_assert(readable(fd, 0));
        int st = reap(spawn(child_uses_inherited, ch));
        ck_assert_msg(st == 0, "%s, round %d: the child's use of its copy: status %d",
                      sl_test_flavor_name(o.flavor), round, st);
        sl_test_seq_fill(buf, o.elem_size, 7);
        ck_assert_int_eq(sl_chan_try_send(ch, buf), SL_OK);
        ck_assert_msg(readable(fd, 0),
                      "%s, round %d: a message in the channel, the loop's descriptor unreadable "
                      "after the child's receive",
                      sl_test_flavor_name(o.flavor), round);
        ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_OK);
        ck_assert(sl_test_seq_is(buf, o.elem_size, 7));
    }
    ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_EMPTY);
    ck_assert(!readable(fd, 0));
    ck_assert_int_eq(reap(spawn(child_asks_fd, ch)), 0);
    sl_chan_free(ch);
}
END_TEST

/* ---- the barrier mode ---------------------------------------------------------
 * Decided once per process, at its first shared channel (channels/shm.c):
 * Check runs every test in its own forked process, whose parent made no
 * shared channel, so each test below decides it afresh under its own
 * scripted membarrier; under CK_FORK=no they cannot run. The mode word is
 * at 84 (docs/shm-layout.md, "The barrier mode"). */
#define MODE_AT 84

static _Atomic int bar_register, bar_global;     /* what each command returns */
static _Atomic unsigned long n_bar_register, n_bar_global;
static _Thread_local unsigned long n_bar_global_here; /* the calling thread's own */

static int scripted_membarrier(int cmd)
{
    if (cmd == MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) {
        atomic_fetch_add(&n_bar_register, 1);
        return atomic_load(&bar_register);
    }
    if (cmd == MEMBARRIER_CMD_GLOBAL_EXPEDITED) {
        atomic_fetch_add(&n_bar_global, 1);
        n_bar_global_here++;
        return atomic_load(&bar_global);
    }
    return sl_test_sys_base()->membarrier(cmd); /* the in-process mode's, as it is */
}

static const sl_sys_ops scripted_barrier_ops = {.membarrier = scripted_membarrier};

static bool script_barrier(int reg, int global)
{
    const char *fork = getenv("CK_FORK");
    if (fork && strcmp(fork, "no") == 0) {
        fprintf(stderr, "barrier-mode tests need a fresh process: not run under CK_FORK=no\n");
        return false;
    }
    atomic_store(&bar_register, reg);
    atomic_store(&bar_global, global);
    atomic_store(&n_bar_register, 0);
    atomic_store(&n_bar_global, 0);
    sl_test_sys_install(&scripted_barrier_ops);
    return true;
}

static unsigned long globals(void) { return atomic_load(&n_bar_global); }

static uint32_t mode_word(sl_chan *ch)
{
    unsigned char *raw = map_raw(sl_chan_shm_fd(ch), 128);
    uint32_t m;
    memcpy(&m, raw + MODE_AT, 4);
    munmap(raw, 128);
    return m;
}

/* A fresh segment whose mode word says `mode`, as if its creator had been
 * another process (registered or not); the caller frees *made. */
static int segment_in_mode(sl_chan **made, const sl_chan_opts *o, uint32_t mode)
{
    ck_assert_int_eq(sl_chan_shm_create(made, NULL, o, 0), SL_OK);
    int fd = sl_chan_shm_fd(*made);
    unsigned char *raw = map_raw(fd, 128);
    memcpy(raw + MODE_AT, &mode, 4);
    munmap(raw, 128);
    return fd;
}

/* Registered: the segment is asymmetric, this process's fast sides use a
 * compiler barrier, and every waiter's registration and every SL_CLOSED
 * decision issues the global barrier (the planted bug SHM_NO_GLOBAL_BARRIER
 * skips it: the counts below stay 0). */
START_TEST(test_barrier_asymmetric)
{
    if (!script_barrier(0, 0))
        return;
    sl_chan_opts o = opts_of(_i, 4);
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    ck_assert_uint_eq(atomic_load(&n_bar_register), 1);
    ck_assert_uint_eq(mode_word(ch), 1);
    ck_assert_int_eq(atomic_load(&sl__shm_light), 1);
    /* A receiver in another process parks; this send wakes it. */
    const uint64_t look = sl__shm_look_ns;
    sl__shm_look_ns = 3600 * SEC;
    park_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o};
    pid_t pid = spawn(park_recv, &a);
    unsigned char *words = map_raw(a.fd, 128);
    await_word(words, 48, 1); /* the child is registered on not_empty */
    munmap(words, 128);
    /* This process parks too: a receive that times out registers and waits.
     * Long enough that its spin (whose yields can each give away a time
     * slice on a loaded machine) never uses the whole timeout: a wait whose
     * deadline passed in its spin makes no registration (await.h). */
    unsigned char buf[MSG_MAX];
    unsigned long before = globals();
    ck_assert_int_eq(sl_chan_recv_for(ch, buf, 100 * MS), SL_TIMEDOUT);
    ck_assert_uint_gt(globals(), before);
    sl_test_seq_fill(buf, o.elem_size, 7);
    ck_assert_int_eq(sl_chan_send(ch, buf), SL_OK);
    sl_chan_close(ch);
    join_ok(pid);
    sl__shm_look_ns = look;
    /* The SL_CLOSED decision (a channel nobody drained yet): the marks are
     * read after the global barrier. */
    sl_chan *second;
    ck_assert_int_eq(sl_chan_shm_create(&second, NULL, &o, 0), SL_OK);
    sl_chan_close(second);
    before = globals();
    ck_assert_int_eq(sl_chan_try_recv(second, buf), SL_CLOSED);
    ck_assert_uint_gt(globals(), before);
    sl_chan_free(second);
    /* A fenced segment opened here: this process's fast sides fence from now on. */
    sl_chan *fenced, *h;
    int fd = segment_in_mode(&fenced, &o, 0);
    ck_assert_int_eq(sl_chan_shm_open_fd(&h, fd, &o), SL_OK);
    ck_assert_int_eq(atomic_load(&sl__shm_light), 0);
    sl_chan_free(h);
    /* Garbage in the mode word is refused. */
    sl_chan *bad;
    unsigned char *raw = map_raw(fd, 128);
    uint32_t junk = 7;
    memcpy(raw + MODE_AT, &junk, 4);
    munmap(raw, 128);
    ck_assert_int_eq(sl_chan_shm_open_fd(&bad, fd, &o), SL_EINVAL);
    sl_chan_free(fenced);
    sl_chan_free(ch);
    sl_test_sys_restore();
}
END_TEST

/* An event-loop descriptor of an asymmetric segment's channel counts in
 * `selectors` as a selector does, and like a selector's registration its
 * count is followed by the global barrier (by the thread that makes it, not
 * only the watcher's next arm): a send in another process whose fast side
 * is only compiler-ordered must see the count, and ring, or be seen by the
 * loop's first re-arm (found by review: the private barrier alone left a
 * change in that window to the watcher's periodic look). */
START_TEST(test_barrier_descriptor)
{
    if (!script_barrier(0, 0))
        return;
    sl_chan_opts o = opts_of(_i, 4);
    sl_chan *ch;
    int fd = -1;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    ck_assert_uint_eq(mode_word(ch), 1);
    for (int end = SL_END_RECV; end <= SL_END_SEND; end++) {
        unsigned long before = n_bar_global_here;
        ck_assert_int_eq(sl_chan_fd(ch, (sl_chan_end)end, &fd), SL_OK);
        ck_assert_msg(n_bar_global_here > before, "descriptor of end %d made without the global "
                      "barrier", end);
    }
    sl_chan_free(ch);
    sl_test_sys_restore();
}
END_TEST

/* Registration refused (old kernel, seccomp): this process creates fenced
 * segments and fences its own fast sides; it issues no global barrier; it
 * may open an asymmetric segment only if it can still issue that barrier. */
START_TEST(test_barrier_refused)
{
    if (!script_barrier(-EPERM, -EPERM))
        return;
    sl_chan_opts o = opts_of(_i, 4);
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    ck_assert_uint_eq(mode_word(ch), 0);
    ck_assert_int_eq(atomic_load(&sl__shm_light), 0);
    park_arg a = {.fd = sl_chan_shm_fd(ch), .opts = o};
    pid_t pid = spawn(park_recv, &a); /* parks and is woken, with fences alone */
    unsigned char *words = map_raw(a.fd, 128);
    await_word(words, 48, 1);
    munmap(words, 128);
    unsigned char buf[MSG_MAX];
    sl_test_seq_fill(buf, o.elem_size, 7);
    ck_assert_int_eq(sl_chan_send(ch, buf), SL_OK);
    sl_chan_close(ch);
    join_ok(pid);
    ck_assert_int_eq(sl_chan_try_recv(ch, buf), SL_CLOSED);
    ck_assert_uint_eq(globals(), 0);
    ck_assert_int_eq(atomic_load(&sl__event_global), 0);
    /* An asymmetric segment: others' fast sides rely on this process's
     * waiters, which cannot issue the barrier: refused. */
    sl_chan *asym, *h;
    int fd = segment_in_mode(&asym, &o, 1);
    ck_assert_int_eq(sl_chan_shm_open_fd(&h, fd, &o), SL_EINVAL);
    /* Registration refused but the barrier allowed: joins, fencing itself. */
    atomic_store(&bar_global, 0);
    ck_assert_int_eq(sl_chan_shm_open_fd(&h, fd, &o), SL_OK);
    ck_assert_int_eq(atomic_load(&sl__event_global), 1);
    ck_assert_int_eq(atomic_load(&sl__shm_light), 0);
    sl_chan_free(h);
    sl_chan_free(asym);
    sl_chan_free(ch);
    sl_test_sys_restore();
}
END_TEST

/* The global barrier fails after registration succeeded (a filter installed
 * later): the same rule as the in-process barrier, abort with the reason. */
static int closed_verdict_child(void *p)
{
    sl_chan *ch = p;
    unsigned char buf[MSG_MAX];
    (void)sl_chan_try_recv(ch, buf); /* aborts inside */
    return 1;
}

START_TEST(test_barrier_fails_after_registration)
{
    if (!script_barrier(0, -EPERM))
        return;
    sl_chan_opts o = opts_of(_i, 4);
    sl_chan *ch;
    ck_assert_int_eq(sl_chan_shm_create(&ch, NULL, &o, 0), SL_OK);
    sl_chan_close(ch);
    pid_t pid = spawn(closed_verdict_child, ch);
    int ws = 0;
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    ck_assert_msg(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGABRT, "the child was to abort");
    sl_chan_free(ch);
    sl_test_sys_restore();
}
END_TEST

static Suite *shm_suite(void)
{
    Suite *s = suite_create("shm");
    TCase *tc = tcase_create("across");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_exchange, 0, N_OF(k_cfg));
    tcase_add_loop_test(tc, test_full_empty_timed, 0, N_OF(k_cfg));
    tcase_add_loop_test(tc, test_scm_rights, 0, N_OF(k_cfg));
    tcase_add_loop_test(tc, test_named, 0, N_OF(k_cfg));
    tcase_add_test(tc, test_typed);
    tcase_add_test(tc, test_lanes_many_threads);
    tcase_add_loop_test(tc, test_mpmc_forms_by_size, 0, N_OF(k_mpmc_sizes));
    suite_add_tcase(s, tc);
#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
    tc = tcase_create("owner");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_receiver_owns_its_slot);
    tcase_add_test(tc, test_receive_while_spare_held);
    tcase_add_test(tc, test_lanes_close_in_flight);
    suite_add_tcase(s, tc);
#endif
    tc = tcase_create("death");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_last_sender_gone, 0, 24);
    tcase_add_test(tc, test_sender_refusals);
    tcase_add_test(tc, test_sender_records_full);
    tcase_add_test(tc, test_refused_sender_looks_again);
    tcase_add_test(tc, test_refused_send_closed);
    tcase_add_test(tc, test_reclaim_closes);
    tcase_add_test(tc, test_empty_polls_claim_no_record);
    tcase_add_test(tc, test_record_churn);
    tcase_add_loop_test(tc, test_mark_owner_identity, 0, N_OF(k_cfg) * MARK_PLACES);
    tcase_add_loop_test(tc, test_killed_while_parked, 0, N_OF(k_cfg));
    tcase_add_loop_test(tc, test_sender_main_thread_exits, 0, N_OF(k_cfg));
    tcase_add_loop_test(tc, test_foreign_namespaces_judge_nobody, 0, 2);
    tcase_add_loop_test(tc, test_other_pid_namespace_sender, 0, 2);
    tcase_add_test(tc, test_foreign_poller_takes_no_look);
    tcase_add_test(tc, test_proc_of_another_namespace);
    tcase_add_loop_test(tc, test_killed_parked_discounted, 0, N_OF(k_cfg));
#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
    tcase_add_loop_test(tc, test_death_at_every_step, 0, 20);
    tcase_add_loop_test(tc, test_death_in_a_look, 0, N_OF(k_cfg));
    tcase_add_loop_test(tc, test_spare_holder_dies, 0, N_OF(k_holders));
    tcase_add_test(tc, test_forked_large_pop_holds_nothing_unclaimed);
    tcase_add_test(tc, test_settle_under_the_record);
    tcase_add_loop_test(tc, test_fd_foreign_dead_in_flight, 0, N_OF(k_cfg));
#endif
    suite_add_tcase(s, tc);
    tc = tcase_create("receivers"); /* the last registered receiver is gone */
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_last_receiver_gone, 0, 32);
    tcase_add_loop_test(tc, test_last_peer_gone_batch, 0, 8);
    tcase_add_loop_test(tc, test_unregistered_receiver_dies, 0, N_OF(k_cfg));
    tcase_add_test(tc, test_receiver_refusal);
#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
    tcase_add_loop_test(tc, test_register_races_last_free, 0, 4);
#endif
    suite_add_tcase(s, tc);
    tc = tcase_create("park");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_park_and_close_across, 0, N_OF(k_cfg));
    suite_add_tcase(s, tc);
    tc = tcase_create("select");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_select_recv_across, 0, 8);
    tcase_add_loop_test(tc, test_select_send_across, 0, 8);
    tcase_add_loop_test(tc, test_select_mixed_order, 0, N_OF(k_cfg));
    tcase_add_loop_test(tc, test_select_waitv_faults, 0, 4);
    tcase_add_loop_test(tc, test_select_many_segments, 0, N_OF(k_cfg));
    tcase_add_loop_test(tc, test_select_killed_selector, 0, N_OF(k_cfg));
    suite_add_tcase(s, tc);
    tc = tcase_create("batchrace"); /* a close racing with batches across processes */
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_batch_close_race, 0, N_OF(k_race));
    suite_add_tcase(s, tc);
    tc = tcase_create("fd");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_fd_recv_across);
    tcase_add_test(tc, test_fd_send_across);
    tcase_add_test(tc, test_fd_watcher_leaves);
    tcase_add_loop_test(tc, test_fd_watch_list, 0, 2);
    tcase_add_test(tc, test_fd_fork_while_freeing);
    tcase_add_loop_test(tc, test_fd_forked_child_leaves_parents, 0, N_OF(k_cfg));
    tcase_add_test(tc, test_fd_free_without_memory);
    tcase_add_test(tc, test_fd_refused_starts_nothing);
    suite_add_tcase(s, tc);
    tc = tcase_create("refusals");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_create_refusals);
    tcase_add_test(tc, test_create_without_space);
    tcase_add_loop_test(tc, test_use_refusals, 0, N_OF(k_cfg));
    tcase_add_test(tc, test_open_refusals);
    tcase_add_test(tc, test_open_odd_descriptors);
    tcase_add_loop_test(tc, test_open_unsealed, 0, N_OF(k_cfg));
    tcase_add_test(tc, test_short_segment);
    tcase_add_test(tc, test_spare_garbage);
    tcase_add_test(tc, test_spsc_debug_words_garbage);
    tcase_add_test(tc, test_spares_all_lost);
    tcase_add_loop_test(tc, test_spares_of_the_dead, 0, 4);
    tcase_add_loop_test(tc, test_garbage, 0, N_OF(k_cfg));
    suite_add_tcase(s, tc);
    tc = tcase_create("barrier");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_barrier_asymmetric, 0, N_OF(k_cfg));
    tcase_add_loop_test(tc, test_barrier_refused, 0, N_OF(k_cfg));
    tcase_add_test(tc, test_barrier_fails_after_registration); /* SL_SPSC, 8 bytes */
    tcase_add_loop_test(tc, test_barrier_descriptor, 0, N_OF(k_cfg));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sl_test_run(shm_suite());
}
