/*
 * remote.c — running a contender that lives in its own process: the peers
 * written in Rust (crossbeam-channel, flume: bench/peers/rust) and Go (its
 * channels: bench/peers/go), which cannot be linked into sl-bench the way C
 * and C++ libraries are.
 *
 * Such a contender takes its place in the shuffled rounds like any other;
 * only its run is different: sl-bench starts its program afresh for every
 * run, and the program creates the channel and its threads, waits for all of
 * them at a start gate, times the run and verifies every message exactly as
 * tput.c and latency.c do in-process (same message layout, same checks, same
 * failure messages), then reports the figure. Process start-up is therefore
 * never timed. The protocol, one run per process:
 *
 *   PROGRAM NAME VARIANT TEST PRODUCERS CONSUMERS ELEM CAPACITY MSGS CAP_NS
 *           TRIPS TRIP_CAP_NS PIN_NCPU WORK LABEL
 *
 * TEST is tput, pingpong or select (the select workload, tput.c's shape
 * over a pair of channels); a rendezvous run is a pingpong with CAPACITY 0.
 * The numbers are slb_run's fields. PIN_NCPU is 0
 * for an unpinned run, otherwise thread index i is pinned to CPU i % PIN_NCPU
 * (producer k: 2k, consumer k: 2k + 1; ping 0, pong 1), as slb_cpu_for.
 * WORK is the pause hints a tput consumer spends on each message it receives
 * (sl-bench chan --work; 0: none).
 * NAME (the contender) and LABEL (the workload) are for failure messages.
 * The program answers with one line on its standard output:
 *
 *   ok VALUE P99 P999 MSGS     slb_result's fields (Mmsg/s, or ns for pingpong)
 *   unsupported WHY            this message size: the row shows n/a
 *
 * A failed check prints sl-bench's failure message on standard error and
 * exits with status 2; sl-bench then stops as for an in-process failure.
 * The program's standard input is a pipe that sl-bench holds open for the
 * run: if sl-bench dies (its watchdog fired) the program reads end of file
 * and exits, so no run outlives the benchmark.
 *
 * A pinned run's process is confined, before exec, to the CPUs its threads
 * are pinned to (1x1: CPUs 0 and 1). The Rust program pins its threads as
 * the C driver does; Go cannot pin a goroutine, so for Go that confinement
 * is the pinning (GOMAXPROCS is then the number of those CPUs).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "msg.h"

#define N_ARGS 15 /* PROGRAM .. LABEL */

typedef struct remote_argv {
    char num[10][24];
    char *argv[N_ARGS + 1];
} remote_argv;

bool slb_remote_built(const char *program)
{
    char path[PATH_MAX];
    return slb_sibling_path(program, path, sizeof(path)) && access(path, X_OK) == 0;
}

static void make_argv(const slb_run *r, char *path, remote_argv *a)
{
    unsigned long long v[10] = {
        r->producers, r->consumers, r->elem, r->capacity, r->msgs, r->cap_ns,
        r->trips, r->trip_cap_ns, r->pin ? slb_ncpu() : 0, r->work,
    };
    a->argv[0] = path;
    a->argv[1] = (char *)r->ops->name;
    a->argv[2] = (char *)r->ops->variant;
    /* A rendezvous run is a ping-pong whose capacity is 0. */
    a->argv[3] = r->test == SLB_PINGPONG || r->test == SLB_RENDEZVOUS ? "pingpong"
               : r->test == SLB_SELECT ? "select" : "tput";
    for (int i = 0; i < 10; i++) {
        snprintf(a->num[i], sizeof(a->num[i]), "%llu", v[i]);
        a->argv[4 + i] = a->num[i];
    }
    a->argv[14] = (char *)r->label;
    a->argv[N_ARGS] = NULL;
}

/* The CPUs of a pinned run's threads; false for an unpinned run. */
static bool run_cpus(const slb_run *r, cpu_set_t *set)
{
    CPU_ZERO(set);
    unsigned threads = 2 * (r->producers > r->consumers ? r->producers : r->consumers);
    for (unsigned i = 0; i < threads; i++) {
        bool used = i % 2 ? i / 2 < r->consumers : i / 2 < r->producers;
        int cpu = slb_cpu_for(r, i);
        if (cpu < 0)
            return false;
        if (used)
            CPU_SET((unsigned)cpu, set);
    }
    return true;
}

/* Starts the program; *to is held open for the run (the child's standard
 * input), *from carries its answer. */
static pid_t start(const slb_run *r, char *path, int *to, int *from)
{
    remote_argv a;
    make_argv(r, path, &a);
    cpu_set_t cpus;
    bool confine = run_cpus(r, &cpus);
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
        slb_die(r->ops->name, "cannot make pipes: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        slb_die(r->ops->name, "cannot start %s: %s", path, strerror(errno));
    if (pid == 0) {
        /* Only system calls from here to exec. A failed confinement runs
         * unconfined, as a failed pin does in-process. */
        if (confine)
            sched_setaffinity(0, sizeof(cpus), &cpus);
        if (dup2(in[0], STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0)
            _exit(127);
        execv(path, a.argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    *to = in[1];
    *from = out[0];
    return pid;
}

/* The program's answer, up to end of file (it exits after answering). */
static void read_answer(int fd, char *buf, size_t len)
{
    size_t used = 0;
    while (used < len - 1) {
        ssize_t n = read(fd, buf + used, len - 1 - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        used += (size_t)n;
    }
    buf[used] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
}

static void check_exit(const slb_run *r, const char *path, int status)
{
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        slb_die(r->ops->name, "%s: cannot run %s", r->label, path);
    if (WIFEXITED(status))
        slb_die(r->ops->name, "%s: its process failed with exit status %d (its message is "
                "above)", r->label, WEXITSTATUS(status));
    slb_die(r->ops->name, "%s: its process was killed by signal %d", r->label,
            WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

bool slb_run_remote(const slb_run *r, slb_result *out)
{
    char path[PATH_MAX], answer[512];
    if (!slb_sibling_path(r->ops->program, path, sizeof(path)))
        slb_die(r->ops->name, "the path of its program %s is too long", r->ops->program);
    int to, from, status;
    pid_t pid = start(r, path, &to, &from);
    read_answer(from, answer, sizeof(answer));
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    /* Only now: the program exits when this end closes. */
    close(to);
    close(from);
    check_exit(r, path, status);
    if (strncmp(answer, "unsupported", 11) == 0)
        return false;
    unsigned long long msgs;
    memset(out, 0, sizeof(*out));
    if (sscanf(answer, "ok %lf %lf %lf %llu", &out->value, &out->p99, &out->p999, &msgs) != 4)
        slb_die(r->ops->name, "%s: its process answered '%s'", r->label, answer);
    out->msgs = msgs;
    return true;
}
