/*
 * plot.c — throughput against configuration, one line per contender, drawn
 * by gnuplot when it is installed.
 *
 * One panel per (workload type, message size): columns are sizes, rows are
 * single-message and batch throughput, then the overwrite workload's send
 * rate (its own panel: a ring that displaces messages is no queue, and its
 * lines would mislead next to the queues'). The data and the script are written
 * next to the image (FILE.dat, FILE.gp) so a plot can be redrawn or restyled
 * without rerunning the benchmark. The y axis is logarithmic because the
 * contenders span two orders of magnitude.
 *
 * gnuplot is run with fork/exec, never through a shell, so file names need no
 * shell quoting; inside the script they are single-quoted gnuplot strings.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define MAX_PANELS 12
#define MAX_SERIES 64
#define MAX_X 16

typedef struct panel {
    slb_test test;
    size_t elem;
    slb_config x[MAX_X];
    size_t nx;
    const slb_ops *series[MAX_SERIES];
    size_t ns;
} panel;

/* Runs argv with stdout and stderr into buf; returns the exit status, or -1
 * when the program could not be started. */
static int run_capture(char *const argv[], char *buf, size_t len)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        dup2(fd[1], STDERR_FILENO);
        close(fd[0]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    /* Keep reading after the buffer is full, or the child blocks on a
     * full pipe and never exits. */
    size_t used = 0;
    char scratch[512];
    ssize_t got;
    do {
        bool room = used + 1 < len;
        got = room ? read(fd[0], buf + used, len - 1 - used) : read(fd[0], scratch, sizeof(scratch));
        if (got > 0 && room)
            used += (size_t)got;
    } while (got > 0);
    buf[used] = '\0';
    close(fd[0]);
    int st;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st) == 127 ? -1 : WEXITSTATUS(st);
}

/* pngcairo where the build has it, plain png (libgd) otherwise. */
static const char *png_terminal(void)
{
    static char out[16384];
    char *argv[] = { "gnuplot", "-e", "set terminal", NULL };
    if (run_capture(argv, out, sizeof(out)) < 0)
        return NULL;
    if (strstr(out, "pngcairo"))
        return "pngcairo";
    if (strstr(out, " png "))
        return "png";
    return "";
}

static panel *find_panel(panel *p, size_t *np, const slb_workload *w)
{
    for (size_t i = 0; i < *np; i++)
        if (p[i].test == w->test && p[i].elem == w->elem)
            return &p[i];
    if (*np == MAX_PANELS)
        return NULL;
    panel *n = &p[(*np)++];
    memset(n, 0, sizeof(*n));
    n->test = w->test;
    n->elem = w->elem;
    return n;
}

static void add_to_panel(panel *p, const slb_workload *w)
{
    if (p->nx < MAX_X)
        p->x[p->nx++] = (slb_config){ w->producers, w->consumers };
    for (size_t i = 0; i < w->n; i++) {
        bool known = false;
        for (size_t j = 0; j < p->ns; j++)
            known |= p->series[j] == w->entries[i].ops;
        if (!known && !w->entries[i].skip && p->ns < MAX_SERIES)
            p->series[p->ns++] = w->entries[i].ops;
    }
}

static const slb_entry *lookup(const slb_workload *w, size_t n, const panel *p,
                               size_t x, const slb_ops *o)
{
    for (size_t i = 0; i < n; i++) {
        if (w[i].test != p->test || w[i].elem != p->elem ||
            w[i].producers != p->x[x].producers || w[i].consumers != p->x[x].consumers)
            continue;
        for (size_t j = 0; j < w[i].n; j++)
            if (w[i].entries[j].ops == o && !w[i].entries[j].skip && w[i].entries[j].done)
                return &w[i].entries[j];
    }
    return NULL;
}

/* One gnuplot data block per (panel, series): x index, label, median, min, max. */
static void write_data(FILE *f, const slb_workload *w, size_t n, const panel *p, size_t np)
{
    for (size_t i = 0; i < np; i++)
        for (size_t s = 0; s < p[i].ns; s++) {
            fprintf(f, "# %s %zuB %s\n", slb_test_name(p[i].test), p[i].elem,
                    p[i].series[s]->name);
            for (size_t x = 0; x < p[i].nx; x++) {
                const slb_entry *e = lookup(w, n, &p[i], x, p[i].series[s]);
                if (e)
                    fprintf(f, "%zu \"%ux%u\" %.4f %.4f %.4f\n", x, p[i].x[x].producers,
                            p[i].x[x].consumers, e->med, e->min, e->max);
            }
            fprintf(f, "\n\n");
        }
}

static void put_quoted(FILE *f, const char *s)
{
    /* gnuplot single-quoted strings escape a quote by doubling it. */
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

/* Twenty-four distinguishable colours: gnuplot's default cycle has eight,
 * and a panel holds over twenty contenders when every peer is installed. */
static const char *const colours[] = {
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b",
    "#e377c2", "#7f7f7f", "#bcbd22", "#aec7e8", "#ff9896", "#98df8a", "#c5b0d5",
    "#ffbb78", "#9edae5", "#c49c94", "#f7b6d2", "#393b79", "#637939",
    "#843c39", "#8c6d31", "#7b4173", "#e7969c",
};
#define N_COLOURS (sizeof(colours) / sizeof(colours[0]))

static const char *panel_title(slb_test t)
{
    if (t == SLB_BATCHED)
        return "batches of 32";
    if (t == SLB_OVERWRITING)
        return "overwrite ring: messages sent (oldest displaced when full)";
    return "one message per call";
}

static void write_script(FILE *f, const char *term, const char *png, const char *dat,
                         const panel *p, size_t np)
{
    size_t cols = 0;
    for (size_t i = 0; i < np; i++)
        cols += p[i].test == p[0].test;
    size_t rows = (np + cols - 1) / cols;
    fprintf(f, "set terminal %s size %zu,%zu noenhanced font ',9'\nset output ", term,
            cols * 760, rows * 520);
    put_quoted(f, png);
    fprintf(f, "\nset multiplot layout %zu,%zu title 'sl-bench chan: throughput by "
               "configuration (median Mmsg/s; sluice solid, peers dashed)'\n", rows, cols);
    fprintf(f, "set logscale y\nset grid ytics\nset ylabel 'Mmsg/s'\n"
               "set key outside right top vertical font ',7'\n");
    size_t block = 0;
    for (size_t i = 0; i < np; i++) {
        fprintf(f, "set title '%s, %zu-byte messages'\nset xrange [-0.5:%zu.5]\nplot ",
                panel_title(p[i].test), p[i].elem, p[i].nx - 1);
        for (size_t s = 0; s < p[i].ns; s++, block++) {
            bool ours = p[i].series[s]->flags & SLB_OURS;
            fprintf(f, "%s", s ? ", \\\n  " : "");
            put_quoted(f, dat);
            fprintf(f, " index %zu using 1:3:xtic(2) with linespoints lc rgb '%s' pt %zu "
                       "lw %s dt %d title ", block, colours[s % N_COLOURS], s % 13 + 1,
                    ours ? "3" : "1.5", ours ? 1 : 2);
            put_quoted(f, p[i].series[s]->name);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "unset multiplot\n");
}

static char *with_ext(const char *png, const char *ext)
{
    size_t len = strlen(png);
    const char *dot = strrchr(png, '.');
    const char *slash = strrchr(png, '/');
    if (dot && (!slash || dot > slash))
        len = (size_t)(dot - png);
    char *s = malloc(len + strlen(ext) + 1);
    if (s) {
        memcpy(s, png, len);
        strcpy(s + len, ext);
    }
    return s;
}

static bool write_files(const char *png, const char *term, const char *dat,
                        const char *gp, const slb_workload *w, size_t n)
{
    panel p[MAX_PANELS];
    size_t np = 0;
    for (size_t i = 0; i < n; i++) {
        if (slb_is_latency(w[i].test))
            continue;
        panel *x = find_panel(p, &np, &w[i]);
        if (x)
            add_to_panel(x, &w[i]);
    }
    if (np == 0) {
        printf("plot: no throughput workloads ran; nothing to plot\n");
        return false;
    }
    FILE *fd = fopen(dat, "w"), *fg = fopen(gp, "w");
    if (fd)
        write_data(fd, w, n, p, np);
    if (fg)
        write_script(fg, term, png, dat, p, np);
    bool ok = fd && fg;
    ok &= !fd || fclose(fd) == 0;
    ok &= !fg || fclose(fg) == 0;
    if (!ok)
        printf("plot: cannot write %s or %s\n", dat, gp);
    return ok;
}

bool slb_plot(const char *png, const slb_workload *w, size_t n)
{
    const char *term = png_terminal();
    if (!term) {
        printf("plot: gnuplot is not installed; %s not drawn (install gnuplot-nox)\n", png);
        return false;
    }
    if (!*term) {
        printf("plot: this gnuplot has no png terminal; %s not drawn\n", png);
        return false;
    }
    char *dat = with_ext(png, ".dat"), *gp = with_ext(png, ".gp");
    bool ok = dat && gp && write_files(png, term, dat, gp, w, n);
    if (ok) {
        static char out[4096];
        char *argv[] = { "gnuplot", gp, NULL };
        ok = run_capture(argv, out, sizeof(out)) == 0;
        if (ok)
            printf("plot: %s (data %s, script %s)\n", png, dat, gp);
        else
            printf("plot: gnuplot failed on %s:\n%s\n", gp, out);
    }
    free(dat);
    free(gp);
    return ok;
}
