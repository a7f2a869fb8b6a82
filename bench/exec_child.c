/*
 * exec_child.c — the LLVM libomp contender: sl-bench's side of the helper
 * process sl-bench-omp-llvm (exec_omp_helper.c, protocol in exec_omp.h).
 *
 * The helper is looked for next to sl-bench's own executable; when it was
 * not built (no clang or no libomp at configure time) the contender is
 * skipped with that reason. It is started once, in start, and answers one
 * request per run; it times its runs itself, so this contender is
 * SLB_XREMOTE. slb_x_child_cpu_ns lets the driver wait until the helper's
 * threads have gone idle before it times anybody else.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "contender.h"
#include "exec_bench.h"
#include "exec_omp.h"

extern char **environ;

static pid_t helper = -1;
static FILE *to_helper, *from_helper;
static char reason[PATH_MAX + 96];

/* Starts the helper with stdin/stdout on two pipes; false with `reason`. */
static bool spawn_helper(const char *path, unsigned threads)
{
    int down[2], up[2];
    if (pipe2(down, O_CLOEXEC) != 0 || pipe2(up, O_CLOEXEC) != 0) {
        snprintf(reason, sizeof(reason), "cannot make pipes: %s", strerror(errno));
        return false;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    /* dup2 clears close-on-exec on the new descriptors only. */
    posix_spawn_file_actions_adddup2(&fa, down[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, up[1], STDOUT_FILENO);
    char arg[16];
    snprintf(arg, sizeof(arg), "%u", threads);
    char *argv[] = { (char *)path, arg, NULL };
    int rc = posix_spawn(&helper, path, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(down[0]);
    close(up[1]);
    if (rc != 0) {
        close(down[1]);
        close(up[0]);
        helper = -1;
        snprintf(reason, sizeof(reason), "cannot start %s: %s", path, strerror(rc));
        return false;
    }
    to_helper = fdopen(down[1], "w");
    from_helper = fdopen(up[0], "r");
    return to_helper && from_helper;
}

static void child_stop(void)
{
    if (to_helper)
        fclose(to_helper); /* end of input: the helper exits */
    if (from_helper)
        fclose(from_helper);
    to_helper = from_helper = NULL;
    if (helper > 0)
        waitpid(helper, NULL, 0);
    helper = -1;
}

static const char *child_start(unsigned threads)
{
    char path[PATH_MAX];
    if (!slb_sibling_path(SLB_X_HELPER_NAME, path, sizeof(path)) || access(path, X_OK) != 0)
        return "the helper " SLB_X_HELPER_NAME " was not built (needs clang and "
               "LLVM's libomp at configure time; Debian: libomp-dev)";
    /* A helper that dies must show up as a failed read, not kill us. */
    signal(SIGPIPE, SIG_IGN);
    if (!spawn_helper(path, threads)) {
        child_stop();
        return reason;
    }
    char line[256];
    if (!fgets(line, sizeof(line), from_helper) || strcmp(line, "ready\n") != 0) {
        line[strcspn(line, "\n")] = '\0';
        snprintf(reason, sizeof(reason), "the helper did not start: %s", line);
        child_stop();
        return reason;
    }
    return NULL;
}

static bool child_run(const slb_xparams *p, slb_xresult *out)
{
    char line[256];
    unsigned long long value, sum, wall, cpu;
    if (fprintf(to_helper, "run %u %u %.17g %u %u %u %u %llu\n", (unsigned)p->work, p->n,
                p->uts_b0, p->uts_depth, p->uts_root, p->bpc_depth, p->bpc_consumers,
                (unsigned long long)p->bpc_iters) < 0 ||
        fflush(to_helper) != 0 || !fgets(line, sizeof(line), from_helper))
        slb_die("LLVM libomp", "the helper process stopped answering");
    if (sscanf(line, "ok %llu %llu %llu %llu", &value, &sum, &wall, &cpu) != 4) {
        line[strcspn(line, "\n")] = '\0';
        slb_die("LLVM libomp", "the helper answered '%s'", line);
    }
    out->value = value;
    out->checksum = sum;
    out->wall_ns = wall;
    out->cpu_ns = cpu;
    return true;
}

uint64_t slb_x_child_cpu_ns(void)
{
    if (helper <= 0)
        return 0;
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)helper);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* Fields after the command name (which may hold spaces): state is the
     * 3rd field, utime and stime the 14th and 15th. */
    char *rest = strrchr(buf, ')');
    unsigned long long utime, stime;
    if (!rest || sscanf(rest + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                        &utime, &stime) != 2)
        return 0;
    long hz = sysconf(_SC_CLK_TCK);
    return (utime + stime) * (1000000000ull / (unsigned long long)(hz > 0 ? hz : 100));
}

const slb_xcontender slb_x_llvm_omp = {
    "OpenMP tasks (LLVM libomp)", "libomp", SLB_XREMOTE, child_start, child_run, child_stop,
};
