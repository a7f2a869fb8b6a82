/*
 * pool_report.c — `sl-bench pool`'s tables, targets, dispatch summary and
 * CSV, from the per-round figures.
 *
 * "vs peer" reads as in `sl-bench chan`: above 1 is better than the best
 * peer (the best non-sluice contender of the workload). Throughput: this /
 * best; latency and CPU: best / this. The three sluice rows are never each
 * other's peers; how they compare is the dispatch summary's business.
 *
 * Targets (issue 5): throughput at least 1.5x the best peer's; wake-up
 * latency no worse than the best peer's, p50 and p99 (within the same ±3%
 * band `sl-bench chan` calls par, since these figures are noisy); CPU while
 * idle zero, which is taken as under 10 us in the window — the measurement's
 * floor is one microsecond, and a pool that wakes at all pays more.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "pool_bench.h"

#define PAR_BAND 0.03
#define TPUT_TARGET 1.5
#define IDLE_ZERO_US 10.0

bool slp_lower_is_better(slp_test t)
{
    return t != SLP_TPUT;
}

static bool better(const slp_workload *w, double a, double b)
{
    return slp_lower_is_better(w->test) ? a < b : a > b;
}

static double ratio_of(const slp_workload *w, double mine, double best)
{
    if (slp_lower_is_better(w->test))
        return mine > 0 ? best / mine : best > 0 ? 1e9 : 1;
    return best > 0 ? mine / best : 0;
}

static void median_of(slp_entry *e)
{
    double v[4][1024];
    unsigned n = e->done < 1024 ? e->done : 1024;
    for (unsigned r = 0; r < n; r++) {
        v[0][r] = e->res[r].value;
        v[1][r] = e->res[r].p99;
        v[2][r] = e->res[r].extra;
        v[3][r] = e->res[r].extra2;
    }
    e->med = slb_median(v[0], n);
    e->min = slb_min(v[0], n);
    e->max = slb_max(v[0], n);
    e->p99_med = slb_median(v[1], n);
    e->extra_med = slb_median(v[2], n);
    e->extra2_med = slb_median(v[3], n);
}

void slp_summarize(slp_workload *w)
{
    const slp_entry *best = NULL;
    for (unsigned i = 0; i < w->n; i++) {
        slp_entry *e = &w->entries[i];
        if (e->skip || !e->done)
            continue;
        median_of(e);
        if (!e->ops->ours && (!best || better(w, e->med, best->med)))
            best = e;
    }
    for (unsigned i = 0; i < w->n; i++) {
        slp_entry *e = &w->entries[i];
        e->best = e->skip || !e->done ? NULL : best;
        e->ratio = e->best ? ratio_of(w, e->med, best->med) : 0;
        bool lat = w->test == SLP_WAKE || w->test == SLP_UNEVEN;
        e->ratio99 = e->best && lat ? ratio_of(w, e->p99_med, best->p99_med) : 0;
    }
}

/* The target's verdict for a sluice row; "" for peers and for workloads
 * without a target (uneven compares dispatch modes). */
static const char *target(const slp_workload *w, const slp_entry *e)
{
    if (!e->ops || !e->ops->ours || e->skip || !e->done)
        return "";
    switch (w->test) {
    case SLP_IDLE:
        return e->med < IDLE_ZERO_US ? "met (zero)" : "MISSED (not zero)";
    case SLP_TPUT:
        if (!e->best)
            return "no peer";
        return e->ratio >= TPUT_TARGET ? "met (>= x1.5)" : "MISSED (< x1.5)";
    case SLP_WAKE:
        if (!e->best)
            return "no peer";
        if (e->ratio >= 1 - PAR_BAND && e->ratio99 >= 1 - PAR_BAND)
            return "met";
        return e->ratio < 1 - PAR_BAND ? "MISSED (p50)" : "MISSED (p99)";
    default:
        return "";
    }
}

static const slp_workload *sort_w; /* qsort has no context argument */

static int cmp_rows(const void *a, const void *b)
{
    const slp_entry *x = &sort_w->entries[*(const unsigned *)a];
    const slp_entry *y = &sort_w->entries[*(const unsigned *)b];
    bool xs = x->skip || !x->done, ys = y->skip || !y->done;
    if (xs != ys)
        return xs ? 1 : -1;
    if (xs || x->med == y->med)
        return 0;
    return better(sort_w, x->med, y->med) ? -1 : 1;
}

static void print_header(FILE *f, const slp_workload *w, const slp_opts *o)
{
    unsigned r = o->rounds;
    switch (w->test) {
    case SLP_TPUT:
        fprintf(f, "### %s · empty jobs from %u submitter%s · %u workers · Mjobs/s, %u "
                   "round%s\n", w->label, w->submitters, w->submitters > 1 ? "s" : "",
                o->workers, r, r > 1 ? "s" : "");
        break;
    case SLP_UNEVEN:
        fprintf(f, "### %s · submit -> start wait of %u jobs offered at %.0f%% load by 1 "
                   "submitter · every %u%s job ~%.0f us, the rest ~%.1f us · %u workers · "
                   "us, %u round%s\n", w->label, o->uneven_jobs, o->load * 100,
                o->uneven_every, o->uneven_every == 2 ? "nd" : o->uneven_every == 3 ? "rd" : "th",
                (double)o->long_ns / 1e3, (double)o->short_ns / 1e3, o->workers, r,
                r > 1 ? "s" : "");
        break;
    case SLP_WAKE:
        fprintf(f, "### %s · submit -> job start after %.0f-%.0f ms asleep · %u samples per "
                   "round · %u workers · us, %u round%s\n", w->label,
                (double)o->gap_min_ns / 1e6, (double)o->gap_max_ns / 1e6, o->samples,
                o->workers, r, r > 1 ? "s" : "");
        break;
    default:
        fprintf(f, "### %s · CPU of the pool's threads over %.0f ms idle (after a burst "
                   "and %.0f ms to settle) · %u workers · us, %u round%s\n", w->label,
                (double)o->idle_ns / 1e6, (double)o->settle_ns / 1e6, o->workers, r,
                r > 1 ? "s" : "");
    }
    if (w->test == SLP_WAKE || w->test == SLP_UNEVEN)
        fprintf(f, "%-22s %8s %8s %8s %8s %8s %8s %8s  %s\n", "contender", "p50", "p50 min",
                "p50 max", "p99", "max", "vs peer", "p99 vs", "target");
    else if (w->test == SLP_IDLE)
        fprintf(f, "%-22s %8s %8s %8s %8s %8s  %s\n", "contender", "CPU us", "min", "max",
                "switches", "threads", "target");
    else
        fprintf(f, "%-22s %8s %8s %8s %8s %8s %8s %8s  %s\n", "contender", "median", "min",
                "max", "min/med", "cs/kjob", "CPU ns/j", "vs peer", "target");
}

/* The ratio a workload's target judges (0: none): printed so as not to
 * round onto the target's wrong side (slb_verdict_digits). */
static double target_ratio(const slp_workload *w)
{
    return w->test == SLP_TPUT ? TPUT_TARGET : w->test == SLP_WAKE ? 1 - PAR_BAND : 0;
}

static void fmt_ratio(char *buf, size_t len, double r, double target)
{
    if (r <= 0)
        snprintf(buf, len, "-");
    else if (r >= 1000)
        snprintf(buf, len, ">x999");
    else
        snprintf(buf, len, "x%.*f", target > 0 ? slb_verdict_digits(r, target, 2) : 2, r);
}

static void print_row(FILE *f, const slp_workload *w, const slp_entry *e)
{
    fprintf(f, "%-22s ", e->name);
    if (e->skip || !e->done) {
        fprintf(f, "skipped: %s\n", e->skip ? e->skip : "not run");
        return;
    }
    char ratio[16], ratio99[16];
    fmt_ratio(ratio, sizeof(ratio), e->best == e ? 0 : e->ratio, target_ratio(w));
    fmt_ratio(ratio99, sizeof(ratio99), e->best == e ? 0 : e->ratio99, target_ratio(w));
    const char *tgt = e->best == e ? "best peer" : target(w, e);
    if (w->test == SLP_WAKE || w->test == SLP_UNEVEN)
        fprintf(f, "%8.1f %8.1f %8.1f %8.1f %8.1f %8s %8s  %s\n", e->med, e->min, e->max,
                e->p99_med, e->extra_med, ratio, ratio99, tgt);
    else if (w->test == SLP_IDLE)
        fprintf(f, "%8.1f %8.1f %8.1f %8.0f %8.0f  %s\n", e->med, e->min, e->max,
                e->extra_med, e->extra2_med, target(w, e));
    else
        fprintf(f, "%8.3f %8.3f %8.3f %8.2f %8.1f %8.0f %8s  %s\n", e->med, e->min, e->max,
                e->med > 0 ? e->min / e->med : 0, e->extra_med, e->extra2_med, ratio, tgt);
}

void slp_print_workload(FILE *f, const slp_workload *w, const slp_opts *o)
{
    unsigned *rows = malloc(w->n * sizeof(unsigned));
    if (!rows)
        return;
    for (unsigned i = 0; i < w->n; i++)
        rows[i] = i;
    sort_w = w;
    qsort(rows, w->n, sizeof(unsigned), cmp_rows);
    print_header(f, w, o);
    for (unsigned i = 0; i < w->n; i++)
        print_row(f, w, &w->entries[rows[i]]);
    free(rows);
    fputc('\n', f);
    fflush(f);
}

void slp_print_targets(FILE *f, const slp_workload *w, unsigned n)
{
    fprintf(f, "### targets: throughput >= x1.5 the best peer; wake-up p50 and p99 no worse "
               "than the best peer's (±%.0f%%); idle CPU zero (< %.0f us)\n",
            PAR_BAND * 100, IDLE_ZERO_US);
    for (unsigned i = 0; i < n; i++)
        for (unsigned j = 0; j < w[i].n; j++) {
            const slp_entry *e = &w[i].entries[j];
            const char *t = target(&w[i], e);
            if (!*t)
                continue;
            char ratio[16];
            fmt_ratio(ratio, sizeof(ratio), e->ratio, target_ratio(&w[i]));
            fprintf(f, "  %-10s %-22s %-18s", w[i].label, e->name, t);
            if (w[i].test == SLP_IDLE)
                fprintf(f, " %.1f us, %.0f switches\n", e->med, e->extra_med);
            else if (e->best)
                fprintf(f, " %s vs %s\n", ratio, e->best->name);
            else
                fputc('\n', f);
        }
    fputc('\n', f);
}

/* For each workload: the sluice dispatch modes from best to worst. */
void slp_print_dispatch(FILE *f, const slp_workload *w, unsigned n)
{
    fprintf(f, "### dispatch: sluice's modes against each other (>1 = the first is better)\n");
    for (unsigned i = 0; i < n; i++) {
        const slp_entry *ours[3];
        unsigned k = 0;
        for (unsigned j = 0; j < w[i].n && k < 3; j++)
            if (w[i].entries[j].ops && w[i].entries[j].ops->ours && w[i].entries[j].done)
                ours[k++] = &w[i].entries[j];
        if (k < 2 || w[i].test == SLP_IDLE) /* idle: zero or not, see the targets */
            continue;
        for (unsigned a = 0; a < k; a++) /* insertion sort, best first */
            for (unsigned b = a; b > 0 && better(&w[i], ours[b]->med, ours[b - 1]->med); b--) {
                const slp_entry *t = ours[b];
                ours[b] = ours[b - 1];
                ours[b - 1] = t;
            }
        fprintf(f, "  %-10s %s", w[i].label, ours[0]->name);
        for (unsigned a = 1; a < k; a++)
            fprintf(f, " > %s (x%.2f)", ours[a]->name,
                    ratio_of(&w[i], ours[0]->med, ours[a]->med));
        fputc('\n', f);
    }
    fputc('\n', f);
}

bool slp_write_csv(const char *path, const slp_workload *w, unsigned n, const slp_opts *o)
{
    static const char *const tests[] = { "idle", "tput", "uneven", "wake" };
    static const char *const units[] = { "cpu_us", "Mjobs/s", "p50_wait_us", "p50_us" };
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "sl-bench: cannot write %s\n", path);
        return false;
    }
    fprintf(f, "workload,test,submitters,workers,contender,peer,round,order,jobs,value,unit,"
               "p99_us,max_us,switches,threads,switches_per_kjob,cpu_ns_per_job,"
               "achieved_mjobs_s\n");
    for (unsigned i = 0; i < n; i++)
        for (unsigned j = 0; j < w[i].n; j++) {
            const slp_entry *e = &w[i].entries[j];
            for (unsigned r = 0; r < e->done && !e->skip; r++) {
                const slp_result *x = &e->res[r];
                bool idle = w[i].test == SLP_IDLE, tput = w[i].test == SLP_TPUT;
                fprintf(f, "%s,%s,%u,%u,\"%s\",%s,%u,%u,%llu,%.4f,%s,", w[i].label,
                        tests[w[i].test], w[i].submitters, o->workers, e->name, e->ops->peer,
                        r + 1, e->order[r] + 1, (unsigned long long)x->jobs, x->value,
                        units[w[i].test]);
                if (idle)
                    fprintf(f, ",,%.0f,%.0f,,,\n", x->extra, x->extra2);
                else if (tput)
                    fprintf(f, ",,,,%.2f,%.1f,\n", x->extra, x->extra2);
                else if (w[i].test == SLP_UNEVEN)
                    fprintf(f, "%.2f,%.2f,,,,,%.4f\n", x->p99, x->extra, x->extra2);
                else
                    fprintf(f, "%.2f,%.2f,,,,,\n", x->p99, x->extra);
            }
        }
    bool ok = fclose(f) == 0;
    if (!ok)
        fprintf(stderr, "sl-bench: error writing %s\n", path);
    return ok;
}
