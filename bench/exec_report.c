/*
 * exec_report.c — `sl-bench exec`'s figures as people read them: medians,
 * CPU per spawn, speed-up over serial, the ratio to the best peer, the
 * issue's targets met or missed, and the CSV.
 *
 * Ratios here are wall-time ratios, lower is better, because the targets
 * are written that way ("at most 0.5x oneTBB's wall time"): "vs best peer"
 * is this contender's median wall time over the fastest peer's. Peers are
 * the other runtimes; neither sluice nor the serial code is one.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "exec_driver.h"

static bool is_peer(const slb_xentry *e)
{
    return !(e->c->flags & (SLB_XOURS | SLB_XSERIAL));
}

static bool has_figures(const slb_xentry *e)
{
    return !e->skip && e->done > 0;
}

void slb_x_summarize(slb_xworkload *w)
{
    for (size_t i = 0; i < w->n; i++) {
        slb_xentry *e = &w->e[i];
        if (!has_figures(e))
            continue;
        e->wall_med = slb_median(e->wall, e->done);
        e->wall_min = slb_min(e->wall, e->done);
        e->wall_max = slb_max(e->wall, e->done);
        e->cpu_med = slb_median(e->cpu, e->done);
    }
}

static const slb_xentry *best_peer(const slb_xworkload *w)
{
    const slb_xentry *best = NULL;
    for (size_t i = 0; i < w->n; i++) {
        const slb_xentry *e = &w->e[i];
        if (has_figures(e) && is_peer(e) && (!best || e->wall_med < best->wall_med))
            best = e;
    }
    return best;
}

/* The entry whose contender has this id, if it has figures. */
static const slb_xentry *find(const slb_xworkload *w, const char *id)
{
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->e[i].c->id, id) == 0)
            return has_figures(&w->e[i]) ? &w->e[i] : NULL;
    return NULL;
}

/* ---- one workload's table ------------------------------------------------ */

static const slb_xworkload *sort_w; /* qsort has no context argument */

static int cmp_rows(const void *a, const void *b)
{
    const slb_xentry *x = &sort_w->e[*(const unsigned *)a];
    const slb_xentry *y = &sort_w->e[*(const unsigned *)b];
    if (has_figures(x) != has_figures(y))
        return has_figures(x) ? -1 : 1;
    if (!has_figures(x) || x->wall_med == y->wall_med)
        return 0;
    return x->wall_med < y->wall_med ? -1 : 1;
}

static void print_row(FILE *f, const slb_xworkload *w, const slb_xentry *e,
                      const slb_xentry *best, const slb_xentry *serial)
{
    fprintf(f, "%-28s ", e->c->name);
    if (!has_figures(e)) {
        fprintf(f, "skipped: %s\n", e->skip ? e->skip : "no rounds ran");
        return;
    }
    char per_spawn[16] = "-", speedup[16] = "-", vs[48] = "-";
    if (!(e->c->flags & SLB_XSERIAL) && w->tasks)
        snprintf(per_spawn, sizeof(per_spawn), "%.1f", e->cpu_med / (double)w->tasks);
    if (serial && e->wall_med > 0)
        snprintf(speedup, sizeof(speedup), "%.2fx", serial->wall_med / e->wall_med);
    if (best == e)
        snprintf(vs, sizeof(vs), "best peer");
    else if (best && best->wall_med > 0 && !(e->c->flags & SLB_XSERIAL))
        snprintf(vs, sizeof(vs), "%.2fx", e->wall_med / best->wall_med);
    /* cores: CPU over wall time, the threads that really ran. Well below the
     * thread count on a parallel run means the machine was busy elsewhere. */
    fprintf(f, "%9.2f %9.2f %9.2f %9.2f %6.2f %9s %8s  %s\n", e->wall_med / 1e6,
            e->wall_min / 1e6, e->wall_max / 1e6, e->cpu_med / 1e6,
            e->wall_med > 0 ? e->cpu_med / e->wall_med : 0, per_spawn, speedup, vs);
}

void slb_x_print_workload(FILE *f, const slb_xworkload *w, unsigned rounds, unsigned threads)
{
    unsigned rows[SLB_X_MAX_CONTENDERS];
    for (size_t i = 0; i < w->n; i++)
        rows[i] = (unsigned)i;
    sort_w = w;
    qsort(rows, w->n, sizeof(unsigned), cmp_rows);
    const slb_xentry *best = best_peer(w), *serial = find(w, "serial");
    fprintf(f, "### %s · %s · %llu spawns · %u thread%s · %u round%s\n", w->label, w->what,
            (unsigned long long)w->tasks, threads, threads > 1 ? "s" : "", rounds,
            rounds > 1 ? "s" : "");
    fprintf(f, "%-28s %9s %9s %9s %9s %6s %9s %8s  %s\n", "contender", "wall ms", "min",
            "max", "cpu ms", "cores", "ns/spawn", "speed-up", "vs best peer (wall)");
    for (size_t i = 0; i < w->n; i++)
        print_row(f, w, &w->e[rows[i]], best, serial);
    if (best)
        fprintf(f, "best peer: %s\n", best->c->name);
    fputc('\n', f);
    fflush(f);
}

/* ---- the targets -------------------------------------------------- */

static const char *verdict(bool met)
{
    return met ? "met" : "MISSED";
}

/* One workload's line: sluice's wall time against oneTBB's, and for fib the
 * CPU per spawn, for UTS the speed-up over serial. */
static void print_target(FILE *f, const slb_xworkload *w, unsigned threads)
{
    const slb_xentry *ours = find(w, "sluice"), *tbb = find(w, "tbb");
    const slb_xentry *serial = find(w, "serial");
    double bound = w->p.work == SLB_XFIB ? 0.5 : 0.8;
    fprintf(f, "%-12s ", w->label);
    if (!ours) {
        fprintf(f, "cannot judge: sluice did not run\n");
        return;
    }
    if (tbb && tbb->wall_med > 0) {
        double r = ours->wall_med / tbb->wall_med;
        if (w->p.work == SLB_XBPC)
            fprintf(f, "wall %.2fx oneTBB's (no target)", r);
        else
            fprintf(f, "wall %.*fx oneTBB's (target <= %.1fx): %s", slb_verdict_digits(r, bound, 2),
                    r, bound, verdict(r <= bound));
    } else {
        fprintf(f, "oneTBB did not run");
    }
    if (w->p.work == SLB_XFIB && w->tasks) {
        double ns = ours->cpu_med / (double)w->tasks;
        fprintf(f, "; CPU per spawn %.*f ns (target < 40 ns): %s", slb_verdict_digits(ns, 40, 1),
                ns, verdict(ns < 40));
    }
    if (serial && ours->wall_med > 0) {
        double s = serial->wall_med / ours->wall_med;
        if (w->p.work == SLB_XUTS && threads == 2)
            fprintf(f, "; speed-up over serial %.*fx (target >= 1.8x on 2 threads): %s",
                    slb_verdict_digits(s, 1.8, 2), s, verdict(s >= 1.8));
        else
            fprintf(f, "; speed-up over serial %.2fx", s);
    }
    fputc('\n', f);
}

void slb_x_print_targets(FILE *f, const slb_xworkload *w, size_t n, unsigned threads)
{
    fprintf(f, "### targets: sluice spawn/sync against oneTBB task_group (medians, %u "
               "thread%s)\n", threads, threads > 1 ? "s" : "");
    for (size_t i = 0; i < n; i++)
        print_target(f, &w[i], threads);
    fputc('\n', f);
    fflush(f);
}

/* ---- CSV ---------------------------------------------------------------------- */

bool slb_x_write_csv(const char *path, const slb_xworkload *w, size_t n, unsigned threads)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "sl-bench: cannot write %s\n", path);
        return false;
    }
    fprintf(f, "workload,threads,contender,id,round,order,spawns,wall_ns,cpu_ns,"
               "cpu_ns_per_spawn\n");
    for (size_t i = 0; i < n; i++) {
        const slb_xworkload *x = &w[i];
        for (size_t j = 0; j < x->n; j++) {
            const slb_xentry *e = &x->e[j];
            bool serial = e->c->flags & SLB_XSERIAL;
            for (unsigned r = 0; r < e->done && !e->skip; r++)
                fprintf(f, "\"%s\",%u,\"%s\",%s,%u,%u,%llu,%.0f,%.0f,%.2f\n", x->label,
                        threads, e->c->name, e->c->id, r + 1, e->order[r] + 1,
                        (unsigned long long)(serial ? 0 : x->tasks), e->wall[r], e->cpu[r],
                        serial || !x->tasks ? 0.0 : e->cpu[r] / (double)x->tasks);
        }
    }
    bool ok = fclose(f) == 0;
    if (!ok)
        fprintf(stderr, "sl-bench: error writing %s\n", path);
    return ok;
}
