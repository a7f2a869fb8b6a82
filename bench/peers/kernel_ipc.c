/*
 * kernel_ipc.c — the kernel-mediated peers of `sl-bench ipc`: a pipe, a Unix
 * datagram socketpair and a POSIX message queue, behind the contender table.
 *
 * These are what programs reach for today to pass messages between processes:
 * one system call and one copy into the kernel per send, one system call and
 * one copy out per receive. Every queue is made by create() before sl-bench
 * forks its peer, so both processes hold its descriptors; nothing is named in
 * the file system (the message queue is unlinked as soon as it is open).
 *
 * One message is one write/send/mq_send of elem bytes, read back whole: a
 * pipe is a byte stream, but writes of at most PIPE_BUF bytes are atomic and
 * every write here is one message of the same size, so a read of that size
 * returns one whole message (the loop below only guards against a signal).
 * The try forms exist for the driver's end-of-run check that the queue is
 * empty; the runs use the blocking forms.
 *
 * A failed system call other than "would block" is a bug or a broken machine:
 * the adapter stops the benchmark naming it.
 */
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "contender.h"
#include "peers/peers.h"

/* Both descriptor-based peers: [0] is written, [1] read (a pipe's order is
 * the other way round; create() stores it this way). */
typedef struct fd_queue {
    int wr, rd;
    size_t elem;
} fd_queue;

static void *fdq_new(int wr, int rd, size_t elem)
{
    fd_queue *q = malloc(sizeof(*q));
    if (!q) {
        close(wr);
        close(rd);
        return NULL;
    }
    *q = (fd_queue){ .wr = wr, .rd = rd, .elem = elem };
    return q;
}

static void fdq_destroy(void *p)
{
    fd_queue *q = p;
    close(q->wr);
    close(q->rd);
    free(q);
}

/* Whether fd is ready for `events` now, without waiting. */
static bool ready_now(int fd, short events)
{
    struct pollfd p = { .fd = fd, .events = events };
    return poll(&p, 1, 0) == 1 && (p.revents & events);
}

/* ---- pipe(2) ------------------------------------------------------------ */

static void *pipe_create(size_t capacity, size_t elem)
{
    int fd[2];
    if (pipe(fd) != 0)
        return NULL;
    /* The kernel rounds the buffer up to a power-of-two number of pages; a
     * refusal (above /proc/sys/fs/pipe-max-size) leaves the 64 KiB default. */
    (void)fcntl(fd[1], F_SETPIPE_SZ, (int)(capacity * elem));
    return fdq_new(fd[1], fd[0], elem);
}

static bool pipe_push(void *p, void *h, const void *m)
{
    (void)h;
    fd_queue *q = p;
    ssize_t n;
    while ((n = write(q->wr, m, q->elem)) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)q->elem)
        slb_die("pipe(2)", "write returned %zd (%s)", n, n < 0 ? strerror(errno) : "short");
    return true;
}

static bool pipe_pop(void *p, void *h, void *m)
{
    (void)h;
    fd_queue *q = p;
    size_t got = 0;
    while (got < q->elem) {
        ssize_t n = read(q->rd, (char *)m + got, q->elem - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            slb_die("pipe(2)", "read returned %zd (%s)", n, n < 0 ? strerror(errno) : "EOF");
        got += (size_t)n;
    }
    return true;
}

/* A pipe is writable for poll when PIPE_BUF bytes fit: every message does. */
static bool pipe_try_push(void *p, void *h, const void *m)
{
    return ready_now(((fd_queue *)p)->wr, POLLOUT) && pipe_push(p, h, m);
}

static bool pipe_try_pop(void *p, void *h, void *m)
{
    return ready_now(((fd_queue *)p)->rd, POLLIN) && pipe_pop(p, h, m);
}

/* ---- Unix datagram socketpair ------------------------------------------ */

#define DGRAM "Unix dgram socketpair"

static void *dgram_create(size_t capacity, size_t elem)
{
    (void)capacity; /* the receive queue's length is net.unix.max_dgram_qlen */
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) != 0)
        return NULL;
    return fdq_new(sv[0], sv[1], elem);
}

static bool dgram_send(fd_queue *q, const void *m, int flags)
{
    ssize_t n;
    while ((n = send(q->wr, m, q->elem, flags)) < 0 && errno == EINTR)
        ;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && flags)
        return false;
    if (n != (ssize_t)q->elem)
        slb_die(DGRAM, "send returned %zd (%s)", n, n < 0 ? strerror(errno) : "short");
    return true;
}

static bool dgram_recv(fd_queue *q, void *m, int flags)
{
    ssize_t n;
    while ((n = recv(q->rd, m, q->elem, flags)) < 0 && errno == EINTR)
        ;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && flags)
        return false;
    if (n != (ssize_t)q->elem)
        slb_die(DGRAM, "recv returned %zd (%s)", n, n < 0 ? strerror(errno) : "short");
    return true;
}

static bool dgram_push(void *q, void *h, const void *m)
{
    (void)h;
    return dgram_send(q, m, 0);
}

static bool dgram_pop(void *q, void *h, void *m)
{
    (void)h;
    return dgram_recv(q, m, 0);
}

static bool dgram_try_push(void *q, void *h, const void *m)
{
    (void)h;
    return dgram_send(q, m, MSG_DONTWAIT);
}

static bool dgram_try_pop(void *q, void *h, void *m)
{
    (void)h;
    return dgram_recv(q, m, MSG_DONTWAIT);
}

/* ---- POSIX message queue ------------------------------------------------ */

#define MQ "POSIX mq"

typedef struct posix_mq {
    mqd_t d;
    size_t elem;
} posix_mq;

/* The most messages an unprivileged queue may hold (fs.mqueue.msg_max). */
static long mq_limit(void)
{
    long v = 10; /* the kernel's default */
    FILE *f = fopen("/proc/sys/fs/mqueue/msg_max", "r");
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = 10;
        fclose(f);
    }
    return v;
}

static void *mq_create(size_t capacity, size_t elem)
{
    posix_mq *q = malloc(sizeof(*q));
    if (!q)
        return NULL;
    static unsigned serial;
    char name[64];
    snprintf(name, sizeof name, "/sl-bench-%ld-%u", (long)getpid(), serial++);
    long limit = mq_limit();
    struct mq_attr a = { .mq_maxmsg = (long)capacity < limit ? (long)capacity : limit,
                         .mq_msgsize = (long)elem };
    q->d = mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &a);
    q->elem = elem;
    if (q->d == (mqd_t)-1) {
        free(q);
        return NULL;
    }
    mq_unlink(name); /* the descriptor (and a fork's copy of it) is all we need */
    return q;
}

static void mq_destroy(void *p)
{
    posix_mq *q = p;
    mq_close(q->d);
    free(q);
}

/* wait == false: a deadline already past, so a full or empty queue answers
 * ETIMEDOUT at once instead of blocking. */
static bool mq_put(posix_mq *q, const void *m, bool wait)
{
    static const struct timespec past = { 0, 0 };
    int rc;
    while ((rc = wait ? mq_send(q->d, m, q->elem, 0)
                      : mq_timedsend(q->d, m, q->elem, 0, &past)) != 0 && errno == EINTR)
        ;
    if (rc != 0 && errno == ETIMEDOUT && !wait)
        return false;
    if (rc != 0)
        slb_die(MQ, "mq_send failed: %s", strerror(errno));
    return true;
}

static bool mq_get(posix_mq *q, void *m, bool wait)
{
    static const struct timespec past = { 0, 0 };
    ssize_t n;
    while ((n = wait ? mq_receive(q->d, m, q->elem, NULL)
                     : mq_timedreceive(q->d, m, q->elem, NULL, &past)) < 0 && errno == EINTR)
        ;
    if (n < 0 && errno == ETIMEDOUT && !wait)
        return false;
    if (n != (ssize_t)q->elem)
        slb_die(MQ, "mq_receive returned %zd (%s)", n, n < 0 ? strerror(errno) : "short");
    return true;
}

static bool mq_push(void *q, void *h, const void *m)
{
    (void)h;
    return mq_put(q, m, true);
}

static bool mq_pop(void *q, void *h, void *m)
{
    (void)h;
    return mq_get(q, m, true);
}

static bool mq_try_push(void *q, void *h, const void *m)
{
    (void)h;
    return mq_put(q, m, false);
}

static bool mq_try_pop(void *q, void *h, void *m)
{
    (void)h;
    return mq_get(q, m, false);
}

/* ---- the tables ----------------------------------------------------------- */

static const slb_ops pipe_ops = {
    .name = "pipe(2)", .peer = "kernel", .kind = SLB_BLOCKING, .flags = SLB_FIFO,
    .note = "buffer of capacity x size bytes (F_SETPIPE_SZ: at least one page)",
    .create = pipe_create, .destroy = fdq_destroy,
    .try_push = pipe_try_push, .try_pop = pipe_try_pop, .push = pipe_push, .pop = pipe_pop,
};

static const slb_ops dgram_ops = {
    .name = DGRAM, .peer = "kernel", .kind = SLB_BLOCKING, .flags = SLB_FIFO,
    .note = "net.unix.max_dgram_qlen datagrams queued (a sysctl, not the capacity)",
    .create = dgram_create, .destroy = fdq_destroy,
    .try_push = dgram_try_push, .try_pop = dgram_try_pop, .push = dgram_push,
    .pop = dgram_pop,
};

static const slb_ops mq_ops = {
    .name = MQ, .peer = "kernel", .kind = SLB_BLOCKING, .flags = SLB_FIFO,
    .note = "the capacity, at most fs.mqueue.msg_max messages (10 by default)",
    .create = mq_create, .destroy = mq_destroy,
    .try_push = mq_try_push, .try_pop = mq_try_pop, .push = mq_push, .pop = mq_pop,
};

const slb_ops *const *slb_peers_kernel_ipc(void)
{
    static const slb_ops *const list[] = { &pipe_ops, &dgram_ops, &mq_ops, NULL };
    return list;
}
