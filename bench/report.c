/*
 * report.c — from per-round figures to what people read: medians, the ratio
 * to the best peer of the same kind, the verdict, the tables, the CSV.
 *
 * "vs peer" always reads the same way: above 1 is better than the best peer
 * of the same kind. For throughput that is this/best; for latency best/this.
 * A sluice contender is only ever compared with peers of its own kind, so a
 * spinning SPSC ring is not declared ahead of a sleeping blocking queue, nor
 * an overwrite ring (which drops messages) ahead of any queue.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define PAR_BAND 0.03 /* within ±3% of the best peer is "par" */

const char *slb_kind_name(slb_kind k)
{
    static const char *const names[] = { "spsc", "mpmc", "blocking", "overwrite", "select" };
    return k < SLB_KINDS ? names[k] : "?";
}

const char *slb_test_name(slb_test t)
{
    static const char *const names[] = { "tput", "batch32", "pingpong", "stream", "overwrite",
                                         "select", "rendezvous" };
    return t < SLB_TESTS ? names[t] : "?";
}

bool slb_is_latency(slb_test t)
{
    return t == SLB_PINGPONG || t == SLB_STREAM || t == SLB_RENDEZVOUS;
}

static bool is_peer(const slb_entry *e)
{
    return !(e->ops->flags & (SLB_OURS | SLB_YARDSTICK));
}

bool slb_cross_core(const slb_workload *w, const slb_entry *e)
{
    bool one_to_one = w->producers == 1 && w->consumers == 1;
    return !one_to_one || !(e->ops->flags & SLB_MAY_SHARE_THREAD);
}

/* Whether a is better than b, in the workload's direction. */
static bool better(const slb_workload *w, double a, double b)
{
    return slb_is_latency(w->test) ? a < b : a > b;
}

void slb_summarize(slb_workload *w)
{
    const slb_entry *best[SLB_KINDS] = { NULL };
    for (size_t i = 0; i < w->n; i++) {
        slb_entry *e = &w->entries[i];
        if (e->skip || e->done == 0)
            continue;
        e->med = slb_median(e->value, e->done);
        e->min = slb_min(e->value, e->done);
        e->max = slb_max(e->value, e->done);
        e->p99_med = slb_median(e->p99, e->done);
        e->p999_med = slb_median(e->p999, e->done);
        e->delivered_med = slb_median(e->delivered, e->done);
        slb_kind k = e->ops->kind;
        if (is_peer(e) && slb_cross_core(w, e) && (!best[k] || better(w, e->med, best[k]->med)))
            best[k] = e;
    }
    for (size_t i = 0; i < w->n; i++) {
        slb_entry *e = &w->entries[i];
        const slb_entry *b = e->skip ? NULL : best[e->ops->kind];
        e->best = b;
        e->ratio = 0;
        if (b && e->done && e->med > 0 && b->med > 0)
            e->ratio = slb_is_latency(w->test) ? b->med / e->med : e->med / b->med;
    }
}

double slb_paired_ratio(const slb_entry *a, const slb_entry *b)
{
    double r[1000]; /* --rounds is at most 1000 */
    unsigned n = 0;
    for (unsigned k = 0; k < a->done && k < b->done && n < 1000; k++)
        if (a->value[k] > 0 && b->value[k] > 0)
            r[n++] = a->value[k] / b->value[k];
    return slb_median(r, n);
}

static const char *verdict(const slb_workload *w, const slb_entry *e)
{
    if (e->skip)
        return "";
    if (e->ops->flags & SLB_YARDSTICK)
        return "yardstick";
    if (!slb_cross_core(w, e))
        return "not judged";
    if (e->ratio == 0)
        return "no peer";
    if (e->best == e)
        return "best peer";
    if (e->ratio > 1 + PAR_BAND)
        return "ahead";
    if (e->ratio < 1 - PAR_BAND)
        return "behind";
    return "par";
}

void slb_print_contenders(FILE *f, const slb_ops *const *list, size_t n)
{
    fprintf(f, "contenders (* = unbounded: never full, its producers never wait):\n");
    for (size_t i = 0; i < n; i++) {
        const slb_ops *o = list[i];
        fprintf(f, "  %-26s %-9s %-10s %s%s\n", o->name, slb_kind_name(o->kind), o->peer,
                o->flags & SLB_UNBOUNDED ? "* " : "", o->note ? o->note : "");
    }
    fputc('\n', f);
}

/* ---- one workload's table ------------------------------------------------ */

static const slb_workload *sort_w; /* qsort has no context argument */

static int cmp_rows(const void *a, const void *b)
{
    const slb_entry *x = &sort_w->entries[*(const unsigned *)a];
    const slb_entry *y = &sort_w->entries[*(const unsigned *)b];
    if (x->ops->kind != y->ops->kind)
        return (int)x->ops->kind - (int)y->ops->kind;
    if (!x->skip != !y->skip)
        return x->skip ? 1 : -1;
    if (x->skip || x->med == y->med)
        return 0;
    return better(sort_w, x->med, y->med) ? -1 : 1;
}

static void print_header(FILE *f, const slb_workload *w, unsigned rounds)
{
    const char *what[] = { "throughput", "throughput, batches of 32",
                           "ping-pong round trip", "one-way stream latency",
                           "send rate into a full overwrite ring",
                           "select on both sides, two bounded channels",
                           "rendezvous ping-pong round trip, two capacity-0 channels" };
    fprintf(f, "### %s · %s · %zu-byte messages", w->label, what[w->test], w->elem);
    if (!slb_is_latency(w->test))
        fprintf(f, " · %u producer%s / %u consumer%s%s", w->producers,
                w->producers > 1 ? "s" : "", w->consumers, w->consumers > 1 ? "s" : "",
                w->pinned ? " · pinned" : " · unpinned");
    fprintf(f, " · %s, %u round%s\n", slb_is_latency(w->test) ? "ns" : "Mmsg/s", rounds,
            rounds > 1 ? "s" : "");
    if (slb_is_latency(w->test))
        fprintf(f, "%-27s %-9s %9s %9s %9s %9s %9s %8s  %s\n", "contender", "kind",
                "p50", "p50 min", "p50 max", "p99", "p99.9", "vs peer", "verdict");
    else if (w->test == SLB_OVERWRITING)
        fprintf(f, "%-27s %-9s %9s %9s %9s %8s %9s %8s  %s\n", "contender", "kind",
                "sent", "min", "max", "min/med", "delivered", "vs peer", "verdict");
    else
        fprintf(f, "%-27s %-9s %9s %9s %9s %8s %8s  %s\n", "contender", "kind",
                "median", "min", "max", "min/med", "vs peer", "verdict");
}

static void print_row(FILE *f, const slb_workload *w, const slb_entry *e)
{
    char name[40];
    snprintf(name, sizeof(name), "%s%s", e->ops->name,
             e->ops->flags & SLB_UNBOUNDED ? "*" : "");
    fprintf(f, "%-27s %-9s ", name, slb_kind_name(e->ops->kind));
    if (e->skip) {
        fprintf(f, "n/a: %s\n", e->skip);
        return;
    }
    char ratio[16] = "-";
    if (e->ratio > 0)
        snprintf(ratio, sizeof(ratio), "x%.2f", e->ratio);
    if (slb_is_latency(w->test))
        fprintf(f, "%9.0f %9.0f %9.0f %9.0f %9.0f %8s  %s\n", e->med, e->min, e->max,
                e->p99_med, e->p999_med, ratio, verdict(w, e));
    else if (w->test == SLB_OVERWRITING)
        /* The ratio compares send rates only; delivered says what they cost. */
        fprintf(f, "%9.2f %9.2f %9.2f %8.2f %8.1f%% %8s  %s\n", e->med, e->min, e->max,
                e->med > 0 ? e->min / e->med : 0, 100 * e->delivered_med, ratio, verdict(w, e));
    else
        fprintf(f, "%9.2f %9.2f %9.2f %8.2f %8s  %s\n", e->med, e->min, e->max,
                e->med > 0 ? e->min / e->med : 0, ratio, verdict(w, e));
}

/* The round trips measured around the workload's runs, in a new array
 * (NULL when none was measured); *n says how many. */
static double *round_trips(const slb_workload *w, size_t *n)
{
    size_t runs = 0;
    for (size_t i = 0; i < w->n; i++)
        runs += w->entries[i].done;
    double *v = runs ? malloc(runs * sizeof *v) : NULL;
    *n = 0;
    for (size_t i = 0; v && i < w->n; i++)
        for (unsigned r = 0; r < w->entries[i].done; r++)
            if (w->entries[i].round_trip[r] > 0)
                v[(*n)++] = w->entries[i].round_trip[r];
    return v;
}

double slb_workload_round_trip(const slb_workload *w)
{
    size_t n;
    double *v = round_trips(w, &n);
    double med = slb_median(v, n);
    free(v);
    return med;
}

/* The round trips around the runs, where the mode measured them: how many
 * runs met the vCPUs at least twice as far apart as the closest any run
 * found them. */
static void print_round_trips(FILE *f, const slb_workload *w)
{
    size_t n, far = 0;
    double *v = round_trips(w, &n);
    if (n > 0) {
        double lo = slb_min(v, n);
        for (size_t i = 0; i < n; i++)
            far += v[i] >= 2 * lo;
        fprintf(f, "core-to-core round trip around the runs: %.0f-%.0f ns, median %.0f; %zu of "
                   "%zu runs at twice the lowest or more\n",
                lo, slb_max(v, n), slb_median(v, n), far, n);
    }
    free(v);
}

void slb_print_workload(FILE *f, const slb_workload *w, unsigned rounds)
{
    unsigned *rows = malloc(w->n * sizeof(unsigned));
    if (!rows)
        return;
    for (size_t i = 0; i < w->n; i++)
        rows[i] = (unsigned)i;
    sort_w = w;
    qsort(rows, w->n, sizeof(unsigned), cmp_rows);
    print_header(f, w, rounds);
    for (size_t i = 0; i < w->n; i++)
        print_row(f, w, &w->entries[rows[i]]);
    free(rows);
    print_round_trips(f, w);
    fputc('\n', f);
    fflush(f);
}

/* ---- the closing summary ------------------------------------------------- */

/* Prints "label xR vs peer; ..." for the workloads where o got verdict
 * `which`, or " -" when there are none. */
static void print_list(FILE *f, const slb_workload *w, size_t n, const slb_ops *o,
                       const char *which)
{
    bool any = false;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < w[i].n; j++) {
            const slb_entry *e = &w[i].entries[j];
            if (e->ops != o || strcmp(verdict(&w[i], e), which) != 0)
                continue;
            fprintf(f, "%s %s x%.2f vs %s", any ? ";" : "", w[i].label, e->ratio,
                    e->best->ops->name);
            any = true;
        }
    fprintf(f, "%s\n", any ? "" : " -");
}

static void print_one_verdict(FILE *f, const slb_workload *w, size_t n, const slb_ops *o)
{
    unsigned ahead = 0, par = 0, behind = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < w[i].n; j++) {
            if (w[i].entries[j].ops != o)
                continue;
            const char *v = verdict(&w[i], &w[i].entries[j]);
            ahead += strcmp(v, "ahead") == 0;
            par += strcmp(v, "par") == 0;
            behind += strcmp(v, "behind") == 0;
        }
    fprintf(f, "%s: ahead in %u, par in %u, behind in %u\n", o->name, ahead, par, behind);
    fprintf(f, "  ahead: ");
    print_list(f, w, n, o, "ahead");
    fprintf(f, "  behind:");
    print_list(f, w, n, o, "behind");
}

void slb_print_verdicts(FILE *f, const slb_workload *w, size_t n)
{
    fprintf(f, "### verdicts: each sluice contender against the best peer of its kind "
               "(par = within ±%.0f%%)\n", PAR_BAND * 100);
    /* Each of our contenders once, in the order they first appear. */
    const slb_ops *seen[64];
    size_t n_seen = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < w[i].n; j++) {
            const slb_ops *o = w[i].entries[j].ops;
            bool known = false;
            for (size_t k = 0; k < n_seen; k++)
                known |= seen[k] == o;
            if (known || !(o->flags & SLB_OURS) || n_seen == 64)
                continue;
            seen[n_seen++] = o;
            print_one_verdict(f, w, n, o);
        }
    fputc('\n', f);
}

/* ---- a workload's storage ------------------------------------------------ */

void slb_entry_init(slb_entry *e, const slb_ops *ops, unsigned rounds)
{
    memset(e, 0, sizeof(*e));
    e->ops = ops;
    e->value = calloc(rounds, sizeof(double));
    e->p99 = calloc(rounds, sizeof(double));
    e->p999 = calloc(rounds, sizeof(double));
    e->delivered = calloc(rounds, sizeof(double));
    e->order = calloc(rounds, sizeof(unsigned));
    e->moved = calloc(rounds, sizeof(uint64_t));
    e->round_trip = calloc(rounds, sizeof(double));
    if (!e->value || !e->p99 || !e->p999 || !e->delivered || !e->order || !e->moved ||
        !e->round_trip)
        slb_die("sl-bench", "out of memory");
}

void slb_entry_record(slb_entry *e, const slb_result *res, unsigned position)
{
    e->value[e->done] = res->value;
    e->p99[e->done] = res->p99;
    e->p999[e->done] = res->p999;
    e->delivered[e->done] = res->delivered;
    e->round_trip[e->done] = res->round_trip;
    e->order[e->done] = position;
    e->moved[e->done] = res->msgs;
    e->done++;
}

void slb_workload_free(slb_workload *w)
{
    for (size_t j = 0; j < w->n; j++) {
        slb_entry *e = &w->entries[j];
        free(e->value);
        free(e->p99);
        free(e->p999);
        free(e->delivered);
        free(e->order);
        free(e->round_trip);
        free(e->moved);
    }
    free(w->entries);
    w->entries = NULL;
    w->n = 0;
}

/* ---- CSV ----------------------------------------------------------------- */

bool slb_write_csv(const char *path, const slb_workload *w, size_t n)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "sl-bench: cannot write %s\n", path);
        return false;
    }
    fprintf(f, "workload,test,producers,consumers,size,pinned,contender,peer,kind,"
               "round,order,msgs,value,unit,p99_ns,p999_ns,delivered,round_trip_ns\n");
    for (size_t i = 0; i < n; i++) {
        const slb_workload *x = &w[i];
        bool lat = slb_is_latency(x->test);
        for (size_t j = 0; j < x->n; j++) {
            const slb_entry *e = &x->entries[j];
            for (unsigned r = 0; r < e->done && !e->skip; r++) {
                fprintf(f, "%s,%s,%u,%u,%zu,%d,\"%s\",%s,%s,%u,%u,%llu,%.4f,%s,", x->label,
                        slb_test_name(x->test), x->producers, x->consumers, x->elem,
                        x->pinned, e->ops->name, e->ops->peer, slb_kind_name(e->ops->kind),
                        r + 1, e->order[r] + 1, (unsigned long long)e->moved[r], e->value[r],
                        lat ? "ns" : "Mmsg/s");
                /* delivered: overwrite only, the fraction the consumers got. */
                if (lat)
                    fprintf(f, "%.0f,%.0f,,", e->p99[r], e->p999[r]);
                else if (x->test == SLB_OVERWRITING)
                    fprintf(f, ",,%.4f,", e->delivered[r]);
                else
                    fprintf(f, ",,,");
                if (e->round_trip[r] > 0)
                    fprintf(f, "%.0f", e->round_trip[r]);
                fputc('\n', f);
            }
        }
    }
    bool ok = fclose(f) == 0;
    if (!ok)
        fprintf(stderr, "sl-bench: error writing %s\n", path);
    return ok;
}
