/*
 * chan_targets.c — `sl-bench chan`'s targets: sluice's multi-producer
 * channels against the channels users pick instead, each judged on the
 * paired ratio (the median over rounds of the two contenders' ratio within
 * the same round), with the ratio of the medians beside it.
 *
 *   SL_MPMC (raw and channel try) >= crossbeam `bounded` try at 1x1, 2x2, 4x4;
 *   SL_MPMC send/recv >= crossbeam `bounded`, and >= Go channels at 2x2 and
 *     4x4 (Go at 1x1 is shown, not judged: its scheduler may run both
 *     goroutines on one thread there);
 *   SL_MPMC send/recv ping-pong round trip <= crossbeam `bounded`'s;
 *   SL_LIST (raw, channel try, send/recv) >= crossbeam `unbounded`, and its
 *     ratio to moodycamel ConcurrentQueue shown (per-producer FIFO only, not
 *     linearizable: not a like-for-like target), and SL_MPMC's to
 *     atomic_queue's (a claimed slot waits for its writer: not lock-free);
 *   no collapse: at 4x4 the slowest round of every sluice contender >= 0.5x
 *     its median (from 3 rounds on); beside it, how the other projects'
 *     contenders ran in that round against their medians, and the
 *     core-to-core round trip measured around that run (a slow stretch of
 *     the machine's may cover one run or a whole round).
 * A line is printed only where both contenders ran in the workload (a peer
 * not built or not selected is simply absent); any message size.
 */
#include <string.h>

#include "bench.h"

/* A peer whose one-to-one figures may not cross cores (Go) is shown, not
 * judged, there: slb_cross_core, as in the verdicts. */
typedef struct chan_target {
    const char *ours, *peer;
    slb_test test;
    bool judged; /* false: shown for orientation only */
} chan_target;

static const chan_target targets[] = {
    { "sl_mpmc", "crossbeam bounded try", SLB_TPUT, true },
    { "sl_chan MPMC try", "crossbeam bounded try", SLB_TPUT, true },
    { "sl_chan MPMC send/recv", "crossbeam bounded", SLB_TPUT, true },
    { "sl_chan MPMC send/recv", "Go chan", SLB_TPUT, true },
    { "sl_chan MPMC send/recv", "crossbeam bounded", SLB_PINGPONG, true },
    { "sl_list", "crossbeam unbounded try", SLB_TPUT, true },
    { "sl_chan LIST try", "crossbeam unbounded try", SLB_TPUT, true },
    { "sl_chan LIST send/recv", "crossbeam unbounded", SLB_TPUT, true },
    { "sl_list", "moodycamel CQueue", SLB_TPUT, false },
    { "sl_mpmc", "atomic_queue B2", SLB_TPUT, false },
};

static const slb_entry *find(const slb_workload *w, const char *name)
{
    for (size_t i = 0; i < w->n; i++)
        if (!w->entries[i].skip && w->entries[i].done > 0 &&
            strcmp(w->entries[i].ops->name, name) == 0)
            return &w->entries[i];
    return NULL;
}

/* One target's line for workload w; false when w has no such pair. */
static bool print_pair(FILE *f, const slb_workload *w, const chan_target *t)
{
    const slb_entry *a = find(w, t->ours), *b = find(w, t->peer);
    if (w->test != t->test || !a || !b || a->med <= 0 || b->med <= 0)
        return false;
    bool latency = slb_is_latency(w->test);
    /* ours / peer: a round trip wants <= 1, a throughput >= 1. */
    double pr = slb_paired_ratio(a, b), mr = a->med / b->med;
    bool judged = t->judged && slb_cross_core(w, b);
    fprintf(f, "  %-16s %-23s vs %-24s x%.*f per round, x%.2f of medians", w->label, t->ours,
            t->peer, slb_verdict_digits(pr, 1.0, 2), pr, mr);
    if (judged)
        fprintf(f, " (target %s 1.00: %s)\n", latency ? "<=" : ">=",
                (latency ? pr <= 1.0 : pr >= 1.0) ? "met" : "MISSED");
    else
        fprintf(f, " (%s)\n", t->judged ? "shown, not judged at 1x1" : "for orientation");
    return true;
}

/* The round of e's slowest figure. */
static unsigned slowest_round(const slb_entry *e)
{
    unsigned k = 0;
    for (unsigned r = 1; r < e->done; r++)
        if (e->value[r] < e->value[k])
            k = r;
    return k;
}

/* How the other projects' contenders ran in round k: the median over them
 * of their figure in that round against their own median; 0 when none ran
 * in it. Their code shares nothing with sluice's, so a slow round of theirs
 * too is the machine's (on this VM: the host moving the vCPUs), where a
 * sluice contender alone at a fraction of its median is its own. */
static double peers_in_round(const slb_workload *w, unsigned k)
{
    double ratios[64];
    size_t n = 0;
    for (size_t i = 0; i < w->n && n < 64; i++) {
        const slb_entry *p = &w->entries[i];
        if (!(p->ops->flags & SLB_OURS) && !p->skip && p->done > k && p->med > 0)
            ratios[n++] = p->value[k] / p->med;
    }
    return n ? slb_median(ratios, n) : 0;
}

/* The slowest round of each sluice contender at 4x4 against its median,
 * how the peers ran in that round, and the round trip around that run. */
static bool print_collapse(FILE *f, const slb_workload *w)
{
    if (w->test != SLB_TPUT || w->producers != 4 || w->consumers != 4)
        return false;
    bool any = false;
    for (size_t i = 0; i < w->n; i++) {
        const slb_entry *e = &w->entries[i];
        if (!(e->ops->flags & SLB_OURS) || e->skip || e->done < 3 || e->med <= 0)
            continue; /* one or two rounds say nothing about the slowest */
        double r = e->min / e->med;
        unsigned k = slowest_round(e);
        double peers = peers_in_round(w, k);
        fprintf(f, "  %-16s %-23s slowest round x%.*f of its median (target >= 0.50: %s)",
                w->label, e->ops->name, slb_verdict_digits(r, 0.5, 2), r,
                r >= 0.5 ? "met" : "MISSED");
        if (peers > 0)
            fprintf(f, "; round %u, where the peers ran at x%.2f of theirs", k + 1, peers);
        if (e->round_trip[k] > 0)
            fprintf(f, "; round trip around that run %.0f ns (the workload's median %.0f)",
                    e->round_trip[k], slb_workload_round_trip(w));
        fputc('\n', f);
        any = true;
    }
    return any;
}

void slb_print_chan_targets(FILE *f, const slb_workload *w, size_t n)
{
    fprintf(f, "### targets: sluice's multi-producer channels against the channels users "
               "pick instead (paired ratio: the median over rounds of the ratio within a "
               "round)\n");
    bool any = false;
    for (size_t k = 0; k < sizeof(targets) / sizeof(targets[0]); k++)
        for (size_t i = 0; i < n; i++)
            any |= print_pair(f, &w[i], &targets[k]);
    for (size_t i = 0; i < n; i++)
        any |= print_collapse(f, &w[i]);
    if (!any)
        fprintf(f, "  (none in this run: the targets need --flavor mpmc,list and "
                   "--peers crossbeam,go,moodycamel, tput or pingpong)\n");
    fputc('\n', f);
}
