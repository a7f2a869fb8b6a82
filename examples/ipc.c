/*
 * examples/ipc.c — a producer process and two consumer processes over one
 * shared SL_MPMC channel (sluice/shm.h), and what happens when they die.
 *
 *   ipc [--ms N]     N: how long each phase runs (default 300)
 *
 * 1. The parent makes the channel in a memfd and forks a producer (a
 *    registered sender: sl_chan_shm_sender) and two consumers (registered
 *    receivers), each opening its own handle from the inherited
 *    descriptor; it prints the
 *    throughput.
 * 2. It kills consumer 1 with SIGKILL mid-stream: consumer 2 carries on.
 * 3. It kills the producer with SIGKILL: nobody calls sl_chan_close, yet
 *    consumer 2 drains the channel and gets SL_CLOSED, because the last
 *    registered sender is gone.
 * Then the books: every message the producer was told was sent is
 * received exactly once, except at most the one consumer 1 had taken when
 * it died (sluice/shm.h: "a message a dying receiver had taken is lost,
 * and only that one").
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sluice.h>

#define MAX_MSGS ((uint64_t)1 << 24) /* the producer stops here and waits */

typedef struct msg {
    uint64_t seq;
    uint64_t check; /* seq * a constant: a torn message shows */
    char payload[48];
} msg;

/* What all processes see: an anonymous shared mapping made before the forks. */
typedef struct books {
    atomic_uint_fast64_t sent;        /* sends that returned SL_OK */
    atomic_uint_fast64_t got[2];      /* per consumer */
    atomic_uint bad;                  /* a torn message or a duplicate */
    atomic_uchar seen[MAX_MSGS];      /* per message: times received */
} books;

static const sl_chan_opts k_opts = {.flavor = SL_MPMC, .elem_size = sizeof(msg),
                                    .capacity = 1024};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static sl_chan *open_or_die(int fd)
{
    sl_chan *ch;
    if (sl_chan_shm_open_fd(&ch, fd, &k_opts) != SL_OK) {
        fprintf(stderr, "ipc: open failed\n");
        _exit(1);
    }
    return ch;
}

static void producer(int fd, books *b)
{
    sl_chan *ch = open_or_die(fd);
    if (sl_chan_shm_sender(ch) != SL_OK) /* the channel closes when we are gone */
        _exit(1);
    msg m;
    memset(&m, 0, sizeof m);
    for (uint64_t s = 0; s < MAX_MSGS; s++) {
        m.seq = s;
        m.check = s * 0x9E3779B97F4A7C15ull;
        if (sl_chan_send(ch, &m) != SL_OK)
            _exit(1);
        atomic_store_explicit(&b->sent, s + 1, memory_order_relaxed);
    }
    pause(); /* until killed */
}

static void consumer(int fd, books *b, int who)
{
    sl_chan *ch = open_or_die(fd);
    sl_chan_shm_receiver(ch); /* with both consumers gone, a blocked producer gets SL_CLOSED */
    msg m;
    sl_status st;
    while ((st = sl_chan_recv(ch, &m)) == SL_OK) {
        if (m.seq >= MAX_MSGS || m.check != m.seq * 0x9E3779B97F4A7C15ull ||
            atomic_fetch_add_explicit(&b->seen[m.seq], 1, memory_order_relaxed) != 0)
            atomic_store(&b->bad, 1);
        atomic_fetch_add_explicit(&b->got[who], 1, memory_order_relaxed);
    }
    printf("consumer %d: %s after %llu messages: the last sender is gone\n", who + 1,
           st == SL_CLOSED ? "SL_CLOSED" : "an error",
           (unsigned long long)atomic_load(&b->got[who]));
    fflush(stdout);
    sl_chan_free(ch);
    _exit(st == SL_CLOSED ? 0 : 1);
}

static pid_t spawn(int fd, books *b, int role)
{
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid == 0) {
        alarm(30); /* a hang ends the child, not the run */
        if (role < 0)
            producer(fd, b);
        consumer(fd, b, role);
    }
    return pid;
}

static uint64_t received(books *b) { return atomic_load(&b->got[0]) + atomic_load(&b->got[1]); }

static void sleep_ms(unsigned ms) { usleep(ms * 1000u); }

/* Every message the producer was told was sent, received once; those
 * beyond, never (but the one in flight when it died: once or not). */
static int check_books(books *b)
{
    uint64_t sent = atomic_load(&b->sent), lost = 0, extra = 0, dup = 0;
    for (uint64_t s = 0; s < MAX_MSGS; s++) {
        unsigned n = b->seen[s];
        dup += n > 1;
        if (s < sent)
            lost += n == 0;
        else
            extra += n != 0;
    }
    printf("books: %llu sent, %llu received, %llu duplicated, %llu lost "
           "(at most the one consumer 1 had taken), %llu beyond the last acknowledged send "
           "(at most the one in flight)\n",
           (unsigned long long)sent, (unsigned long long)received(b), (unsigned long long)dup,
           (unsigned long long)lost, (unsigned long long)extra);
    return dup == 0 && lost <= 1 && extra <= 1 && !atomic_load(&b->bad) ? 0 : 1;
}

static const char usage[] =
    "usage: ipc [--ms N]\n"
    "  a producer and two consumer processes over one shared SL_MPMC channel;\n"
    "  consumer 1 and then the producer are killed with SIGKILL\n"
    "  --ms N   how long each phase runs, ms, 1..10000 (default 300)\n";

int main(int argc, char **argv)
{
    unsigned ms = 300;
    for (int i = 1; i < argc; i += 2) {
        if (strcmp(argv[i], "--help") == 0) {
            printf("%s", usage);
            return 0;
        }
        char *end = NULL;
        unsigned long v = i + 1 < argc && strcmp(argv[i], "--ms") == 0
                              ? strtoul(argv[i + 1], &end, 10) : 0;
        if (end == NULL || end == argv[i + 1] || *end != '\0' || v < 1 || v > 10000) {
            fprintf(stderr, "ipc: bad option: %s\n%s", argv[i], usage);
            return 2;
        }
        ms = (unsigned)v;
    }
    books *b = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    sl_chan *ch;
    if (b == MAP_FAILED || sl_chan_shm_create(&ch, NULL, &k_opts, 0) != SL_OK)
        return 1;
    int fd = sl_chan_shm_fd(ch);
    pid_t cons[2] = {spawn(fd, b, 0), spawn(fd, b, 1)};
    pid_t prod = spawn(fd, b, -1);

    sleep_ms(ms / 3); /* warm up */
    uint64_t r0 = received(b);
    double t0 = now_s();
    sleep_ms(ms);
    double rate = (double)(received(b) - r0) / (now_s() - t0);
    printf("throughput: %.2f M messages/s of %zu bytes, 1 producer and 2 consumer processes\n",
           rate / 1e6, sizeof(msg));

    kill(cons[0], SIGKILL);
    waitpid(cons[0], NULL, 0);
    uint64_t c2 = atomic_load(&b->got[1]);
    sleep_ms(ms);
    printf("killed consumer 1 mid-stream; consumer 2 carried on: %llu more messages in %u ms\n",
           (unsigned long long)(atomic_load(&b->got[1]) - c2), ms);

    kill(prod, SIGKILL);
    double tk = now_s();
    waitpid(prod, NULL, 0);
    printf("killed the producer; nobody closes the channel\n");
    fflush(stdout);
    int ws = 0;
    waitpid(cons[1], &ws, 0);
    printf("consumer 2 saw the channel closed %.0f ms after the producer was killed\n",
           (now_s() - tk) * 1e3);
    int bad = check_books(b) || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0;
    sl_chan_free(ch);
    puts(bad ? "ipc: FAILED" : "ipc: ok");
    return bad;
}
