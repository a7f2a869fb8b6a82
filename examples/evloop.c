/*
 * examples/evloop.c — one epoll loop serving a socket and a sluice channel
 * at once (sl_chan_fd, sluice/chanfd.h).
 *
 * A client thread writes requests ("k\n") into one end of a socketpair. The
 * loop, on the main thread, waits in epoll_wait on two descriptors: the
 * socket, and the receive descriptor of the `results` channel. A request
 * read from the socket goes to a pool of worker threads over the `jobs`
 * channel; a worker's answer comes back over `results`, and the loop writes
 * it to the socket ("k k*k\n"). The loop never blocks on either: it drains
 * the socket until EAGAIN and the channel until SL_EMPTY, which re-arms the
 * channel's descriptor. When the client has all its answers it shuts its
 * end down; the loop closes `jobs`, the last worker closes `results`, and the
 * loop ends on SL_CLOSED.
 *
 *     evloop [--requests N] [--workers W]
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sluice.h>

typedef struct answer { long k, square; } answer;

static sl_chan *jobs, *results;
static atomic_int workers_left;
static long n_requests = 2000;

static void *worker(void *arg)
{
    (void)arg;
    long k;
    while (sl_chan_recv(jobs, &k) == SL_OK) {
        answer a = {k, k * k};
        if (sl_chan_send(results, &a) != SL_OK)
            break;
    }
    if (atomic_fetch_sub(&workers_left, 1) == 1)
        sl_chan_close(results); /* the loop sees SL_CLOSED once it has drained */
    return NULL;
}

/* The client's writer: every request, as fast as the socket takes them. */
static void *client_writer(void *arg)
{
    int s = *(int *)arg;
    char line[64];
    for (long k = 1; k <= n_requests; k++) {
        int n = snprintf(line, sizeof line, "%ld\n", k);
        if (write(s, line, (size_t)n) != n)
            return (void *)1;
    }
    return NULL;
}

/* The client: a writer thread sends the requests while this one reads the
 * answers and checks them (one thread doing both in turn could fill the
 * socket both ways). */
static void *client(void *arg)
{
    int s = *(int *)arg;
    long bad = 0, got = 0;
    pthread_t wr;
    void *wr_failed;
    pthread_create(&wr, NULL, client_writer, arg);
    FILE *in = fdopen(dup(s), "r");
    long k, sq;
    while (got < n_requests && fscanf(in, "%ld %ld", &k, &sq) == 2) {
        got++;
        bad += sq != k * k;
    }
    fclose(in);
    pthread_join(wr, &wr_failed);
    shutdown(s, SHUT_WR); /* done: the loop sees end-of-file */
    printf("client: %ld answers, %ld wrong\n", got, bad);
    return (void *)(intptr_t)(got != n_requests || bad != 0 || wr_failed);
}

/* Reads what the socket has, parses whole lines, sends each request to the
 * workers. false at end-of-file. */
static bool serve_socket(int s, char *buf, size_t *have, size_t cap)
{
    for (;;) {
        ssize_t r = read(s, buf + *have, cap - *have);
        if (r == 0)
            return false;
        if (r < 0)
            return errno == EAGAIN || errno == EINTR;
        *have += (size_t)r;
        char *p = buf, *nl;
        while ((nl = memchr(p, '\n', (size_t)(buf + *have - p)))) {
            long k = strtol(p, NULL, 10);
            sl_chan_send(jobs, &k); /* SL_LIST: never waits */
            p = nl + 1;
        }
        *have = (size_t)(buf + *have - p);
        memmove(buf, p, *have);
    }
}

static const char usage[] =
    "usage: evloop [--requests N] [--workers W]\n"
    "  one epoll loop serves a socket (N requests from a client thread) and a\n"
    "  channel (the answers of W worker threads), waiting on both at once\n";

static int bad_usage(const char *what)
{
    fprintf(stderr, "evloop: bad option: %s\n%s", what, usage);
    return 2;
}

int main(int argc, char **argv)
{
    long n_workers = 4;
    for (int i = 1; i < argc; i += 2) {
        if (strcmp(argv[i], "--help") == 0) {
            printf("%s", usage);
            return 0;
        }
        if (i + 1 < argc && strcmp(argv[i], "--requests") == 0)
            n_requests = atol(argv[i + 1]);
        else if (i + 1 < argc && strcmp(argv[i], "--workers") == 0)
            n_workers = atol(argv[i + 1]);
        else
            return bad_usage(argv[i]);
    }
    if (n_requests < 1 || n_workers < 1 || n_workers > 64)
        return bad_usage("--requests must be >= 1, --workers 1..64");
    /* jobs is unbounded: the loop must never block on it while the workers
     * wait for the loop to drain results. */
    sl_chan_opts jo = {.flavor = SL_LIST, .elem_size = sizeof(long)};
    sl_chan_opts ro = {.flavor = SL_MPMC, .elem_size = sizeof(answer), .capacity = 64};
    int sv[2], cfd, ep = epoll_create1(EPOLL_CLOEXEC);
    if (sl_chan_new(&jobs, &jo) != SL_OK || sl_chan_new(&results, &ro) != SL_OK || ep < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
        sl_chan_fd(results, SL_END_RECV, &cfd) != SL_OK)
        return 1;
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = sv[0]};
    epoll_ctl(ep, EPOLL_CTL_ADD, sv[0], &ev);
    ev.data.fd = cfd;
    epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &ev);

    pthread_t cl, w[64];
    atomic_init(&workers_left, (int)n_workers);
    for (long i = 0; i < n_workers; i++)
        pthread_create(&w[i], NULL, worker, NULL);
    pthread_create(&cl, NULL, client, &sv[1]);

    char buf[4096];
    size_t have = 0;
    long served = 0, chan_wakes = 0, sock_wakes = 0;
    bool sock_open = true, chan_open = true;
    while (chan_open) {
        struct epoll_event got[2];
        int n = epoll_wait(ep, got, 2, 10000);
        if (n == 0) {
            fprintf(stderr, "evloop: no event in 10 s\n");
            return 1;
        }
        for (int i = 0; i < n; i++) {
            if (got[i].data.fd == sv[0] && sock_open) {
                sock_wakes++;
                if (!serve_socket(sv[0], buf, &have, sizeof buf)) {
                    sock_open = false;
                    epoll_ctl(ep, EPOLL_CTL_DEL, sv[0], NULL);
                    sl_chan_close(jobs); /* the workers finish, the last closes results */
                }
            } else if (got[i].data.fd == cfd) {
                chan_wakes++;
                answer a;
                sl_status st;
                /* Drain until SL_EMPTY: that re-arms the descriptor. */
                while ((st = sl_chan_try_recv(results, &a)) == SL_OK) {
                    char line[64];
                    int len = snprintf(line, sizeof line, "%ld %ld\n", a.k, a.square);
                    /* The client reads all answers; a full socket buffer only
                     * delays us briefly, so write in place. */
                    for (int off = 0; off < len;) {
                        ssize_t r = write(sv[0], line + off, (size_t)(len - off));
                        if (r > 0)
                            off += (int)r;
                    }
                    served++;
                }
                chan_open = st != SL_CLOSED;
            }
        }
    }
    void *client_failed;
    pthread_join(cl, &client_failed);
    for (long i = 0; i < n_workers; i++)
        pthread_join(w[i], NULL);
    epoll_ctl(ep, EPOLL_CTL_DEL, cfd, NULL); /* before sl_chan_free closes it */
    sl_chan_free(results);
    sl_chan_free(jobs);
    close(ep);
    close(sv[0]);
    close(sv[1]);
    printf("loop: %ld requests from the socket (%ld socket wake-ups), %ld answers from the "
           "channel (%ld channel wake-ups), until SL_CLOSED\n",
           n_requests, sock_wakes, served, chan_wakes);
    if (client_failed || served != n_requests)
        return 1;
    printf("evloop: ok\n");
    return 0;
}
