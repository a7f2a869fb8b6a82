/*
 * nqueens.c — an unbalanced task tree on the executor, and cancellation by token.
 *
 * Answers: the Nim RFC “Executors, multithreading, channels APIs” by Mamy
 * André-Ratsimbazafy (@mratsim). The RFC names “nqueens with backtracking” as
 * the reason for isSpawned, and asks for cancellation by a token the tasks
 * check.
 *
 * What it shows:
 *   - count mode: sl_parallel_for over the first row's columns; below it each
 *     task spawns one child per free column down to --depth rows, and syncs
 *     only the futures that were spawned (sl_is_spawned): the speculative,
 *     unbalanced tree of the RFC. Counts are checked against the known table.
 *   - find mode: "find any one solution" with an sl_cancel token. The first
 *     task to complete a board claims the result slot, records the board and
 *     calls sl_cancel_request; every other task polls sl_cancelled at each
 *     node and returns early, and tasks that start after the request return at
 *     once. The board is checked, and the nodes visited are compared with a
 *     full search at the same n (the count mode's, or one counted for the
 *     comparison when that is cheap): that is the work cancellation skipped.
 *     A board too large to search fully (try 28) only says so.
 *
 * What to watch: the solution count and speed-up in count mode (best of
 * --reps runs of each side, so one unlucky run on a busy machine does not
 * decide it); in find mode the board, the nodes visited against the full
 * search (typically well under 1 %), and how many tasks stopped on the token.
 *
 * Run: nqueens [N] [--find M] [--depth D] [--threads T] [--reps R]
 *   N          board size for the count, 1..17 (default 12; 14 takes longer)
 *   --find     board size for find-one, 1..31 (default N; try 28)
 *   --depth    rows (counting the first) that spawn tasks; deeper rows are
 *              searched sequentially inside a task (default 3)
 *   --threads  executor workers (default 0: one per online CPU)
 *   --reps     timed runs of each side of the count, the best shown (default 3)
 */
#include <sluice.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_N 31 /* columns fit in a uint32_t mask */
#define TABLE_N 17

/* Solutions of the n-queens problem, n = 0..17 (OEIS A000170). */
static const uint64_t known_counts[TABLE_N + 1] = {
    1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596, 2279184, 14772512,
    95815104};

/* One search, shared read-only by its tasks except for the marked fields. */
struct search {
    sl_exec *ex;
    int n;
    int spawn_rows;            /* rows 0..spawn_rows-1 spawn; below, sequential */
    bool find_one;             /* stop at the first solution */
    sl_cancel cancel;          /* requested by the task that found it */
    atomic_int claimed;        /* 0 until the first finder claims `board` */
    uint8_t board[MAX_N];      /* written only by the claimant */
    atomic_uint stopped_tasks; /* tasks that returned early on the token */
    atomic_uint failures;      /* spawns refused or syncs failed inside tasks */
};

/* The partial placement a task starts from: queens in rows [0, row). */
struct node {
    struct search *sr;
    int row;
    uint32_t cols, diag_down, diag_up; /* attacked squares in this row */
    uint8_t placed[MAX_N];             /* column of the queen in each row above */
};

struct tally {
    uint64_t solutions, nodes;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The child node with a queen at column col of nd's row. */
static struct node place(const struct node *nd, int col)
{
    uint32_t bit = 1u << col, all = (1u << nd->sr->n) - 1u;
    struct node child = *nd;
    child.placed[nd->row] = (uint8_t)col;
    child.row = nd->row + 1;
    child.cols = nd->cols | bit;
    child.diag_down = ((nd->diag_down | bit) << 1) & all;
    child.diag_up = (nd->diag_up | bit) >> 1;
    return child;
}

static uint32_t free_columns(const struct node *nd)
{
    uint32_t all = (1u << nd->sr->n) - 1u;
    return ~(nd->cols | nd->diag_down | nd->diag_up) & all;
}

/* A complete board: in find mode the first finder records it and cancels. */
static void found(const struct node *nd)
{
    struct search *sr = nd->sr;
    int expected = 0;
    /* relaxed: the claim only picks one writer; the board reaches main through
     * sl_parallel_for's return, which every task happens-before. */
    if (atomic_compare_exchange_strong_explicit(&sr->claimed, &expected, 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
        memcpy(sr->board, nd->placed, (size_t)sr->n);
        sl_cancel_request(&sr->cancel);
    }
}

/* Depth-first backtracking below nd on this thread. In find mode it polls the
 * token at every node (one acquire load) and returns true once it is set. */
static bool search_seq(const struct node *nd, struct tally *t)
{
    struct search *sr = nd->sr;
    t->nodes++;
    if (sr->find_one && sl_cancelled(&sr->cancel)) return true;
    if (nd->row == sr->n) {
        t->solutions++;
        if (sr->find_one) found(nd);
        return sr->find_one;
    }
    for (uint32_t avail = free_columns(nd); avail; avail &= avail - 1) {
        struct node child = place(nd, __builtin_ctz(avail));
        if (search_seq(&child, t)) return true;
    }
    return false;
}

static struct tally search_from(const struct node *nd);

static void search_task(void *args, void *ret)
{
    *(struct tally *)ret = search_from(args);
}

/* The RFC's speculative spawn: one child task per free column while above
 * spawn_rows; the futures of occupied columns stay cleared, and only those
 * for which sl_is_spawned holds are synced. */
static struct tally search_from(const struct node *nd)
{
    struct search *sr = nd->sr;
    struct tally total = {0, 0};
    if (nd->row >= sr->spawn_rows || nd->row == sr->n) {
        /* stopped with no solution of its own: someone else's request */
        if (search_seq(nd, &total) && total.solutions == 0)
            atomic_fetch_add_explicit(&sr->stopped_tasks, 1, memory_order_relaxed);
        return total;
    }
    total.nodes = 1;
    if (sr->find_one && sl_cancelled(&sr->cancel)) { /* started after the request */
        atomic_fetch_add_explicit(&sr->stopped_tasks, 1, memory_order_relaxed);
        return total;
    }
    sl_future children[MAX_N] = {{0}};
    for (uint32_t avail = free_columns(nd); avail; avail &= avail - 1) {
        int col = __builtin_ctz(avail);
        struct node child = place(nd, col);
        children[col] = sl_spawn(sr->ex, search_task, &child, sizeof child, sizeof(struct tally));
        if (!sl_is_spawned(&children[col])) { /* refused (no record): search it here */
            struct tally t = search_from(&child);
            total.solutions += t.solutions;
            total.nodes += t.nodes;
        }
    }
    for (int col = 0; col < sr->n; col++) {
        struct tally t;
        if (!sl_is_spawned(&children[col])) continue;
        if (sl_sync(&children[col], &t) != SL_OK) {
            atomic_fetch_add_explicit(&sr->failures, 1, memory_order_relaxed);
            continue;
        }
        total.solutions += t.solutions;
        total.nodes += t.nodes;
    }
    return total;
}

/* ---- the first row in parallel ----------------------------------------- */

struct first_row {
    struct search *sr;
    struct tally per_column[MAX_N]; /* body(i) writes only per_column[i] */
};

static struct node root_node(struct search *sr)
{
    struct node root;
    memset(&root, 0, sizeof root);
    root.sr = sr;
    return root;
}

static void first_row_body(size_t col, void *ctx)
{
    struct first_row *fr = ctx;
    struct node root = root_node(fr->sr);
    struct node child = place(&root, (int)col);
    fr->per_column[col] = search_from(&child);
}

/* Searches the whole board; returns the tally (one node for the empty board). */
static struct tally run_search(struct search *sr)
{
    struct first_row fr = {.sr = sr};
    sl_parallel_for(sr->ex, 0, (size_t)sr->n, 1, first_row_body, &fr);
    struct tally total = {0, 1};
    for (int col = 0; col < sr->n; col++) {
        total.solutions += fr.per_column[col].solutions;
        total.nodes += fr.per_column[col].nodes;
    }
    return total;
}

static void search_init(struct search *sr, sl_exec *ex, int n, int spawn_rows, bool find_one)
{
    memset(sr, 0, sizeof *sr);
    sr->ex = ex;
    sr->n = n;
    sr->spawn_rows = spawn_rows;
    sr->find_one = find_one;
    sl_cancel_init(&sr->cancel);
    atomic_init(&sr->claimed, 0);
    atomic_init(&sr->stopped_tasks, 0);
    atomic_init(&sr->failures, 0);
}

static bool no_task_failures(struct search *sr)
{
    unsigned f = atomic_load_explicit(&sr->failures, memory_order_relaxed);
    if (f) fprintf(stderr, "nqueens: %u syncs failed inside tasks\n", f);
    return f == 0;
}

/* ---- count mode -------------------------------------------------------- */

static const char *plural(uint64_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

/* Counts every solution at n, sequentially and in parallel, reps times each;
 * checks every run and prints the best time of each side. */
static bool count_mode(sl_exec *ex, int n, int spawn_rows, int reps, struct tally *full)
{
    uint64_t seq_ns = UINT64_MAX, par_ns = UINT64_MAX;
    *full = (struct tally){0, 0};
    for (int r = 0; r < reps; r++) {
        struct search sr;
        search_init(&sr, ex, n, 0, false); /* spawn_rows 0: all sequential */
        struct node root = root_node(&sr);
        struct tally seq = {0, 0};
        uint64_t t0 = now_ns();
        search_seq(&root, &seq);
        uint64_t dt = now_ns() - t0;
        seq_ns = dt < seq_ns ? dt : seq_ns;

        search_init(&sr, ex, n, spawn_rows, false);
        t0 = now_ns();
        *full = run_search(&sr);
        dt = now_ns() - t0;
        par_ns = dt < par_ns ? dt : par_ns;
        if (full->solutions != known_counts[n] || seq.solutions != known_counts[n] ||
            full->nodes != seq.nodes) {
            fprintf(stderr,
                    "nqueens: n=%d: parallel %" PRIu64 " (%" PRIu64 " nodes), sequential %" PRIu64
                    " (%" PRIu64 " nodes), known %" PRIu64 "\n",
                    n, full->solutions, full->nodes, seq.solutions, seq.nodes, known_counts[n]);
            return false;
        }
        if (!no_task_failures(&sr)) return false;
    }
    printf("count n=%d: %" PRIu64 " %s, %" PRIu64 " nodes\n", n, full->solutions,
           plural(full->solutions, "solution", "solutions"), full->nodes);
    printf("  best of %d %s: sequential %.2f ms, parallel on %u %s %.2f ms, speed-up %.2fx\n",
           reps, plural((uint64_t)reps, "run", "runs"), seq_ns / 1e6, sl_exec_threads(ex),
           plural(sl_exec_threads(ex), "worker", "workers"), par_ns / 1e6,
           (double)seq_ns / (double)par_ns);
    return true;
}

/* ---- find mode --------------------------------------------------------- */

static bool valid_board(const uint8_t *board, int n)
{
    for (int r = 0; r < n; r++) {
        if (board[r] >= n) return false;
        for (int q = 0; q < r; q++) {
            int dc = abs((int)board[r] - (int)board[q]);
            if (dc == 0 || dc == r - q) return false;
        }
    }
    return true;
}

static void print_board(const uint8_t *board, int n)
{
    for (int r = 0; r < n; r++) {
        printf("    ");
        for (int c = 0; c < n; c++) fputs(board[r] == c ? "Q " : ". ", stdout);
        putchar('\n');
    }
}

/* The largest board whose full search is counted just for the comparison,
 * when the count mode did not already count it (n=12: tens of ms). */
#define CHEAP_N 12

/* How much work the cancellation skipped: the nodes a full search at n visits
 * against the visited ones. The full count at n is the count mode's when the
 * sizes agree (full), counted now when it is cheap (no bigger than the count
 * mode's board or CHEAP_N), and otherwise only said to be too large. */
static bool report_skipped(sl_exec *ex, int n, int spawn_rows, uint64_t visited, int count_n,
                           const struct tally *full)
{
    struct tally all;
    const char *how = "";
    if (n == count_n) {
        all = *full;
    } else if (n <= count_n || n <= CHEAP_N) {
        struct search sr;
        search_init(&sr, ex, n, spawn_rows, false);
        all = run_search(&sr);
        how = " (counted now, for the comparison)";
        if (all.solutions != known_counts[n] || !no_task_failures(&sr)) {
            fprintf(stderr, "nqueens: the full count at n=%d gave %" PRIu64 " solutions\n", n,
                    all.solutions);
            return false;
        }
    } else if (n <= TABLE_N) {
        printf("  a full search at n=%d is too large to count here (`nqueens %d` counts it); "
               "cancellation stopped this one after %" PRIu64 " nodes\n", n, n, visited);
        return true;
    } else {
        printf("  a full search at n=%d is far too large to count; cancellation stopped it "
               "after %" PRIu64 " nodes\n", n, visited);
        return true;
    }
    printf("  the full search at n=%d visits %" PRIu64 " nodes%s: cancellation skipped %.2f %% "
           "of the work\n", n, all.nodes, how,
           100.0 * (1.0 - (double)visited / (double)all.nodes));
    return true;
}

/* full: the count mode's tally, at count_n. */
static bool find_mode(sl_exec *ex, int n, int spawn_rows, int count_n, const struct tally *full)
{
    struct search sr;
    search_init(&sr, ex, n, spawn_rows, true);
    uint64_t t0 = now_ns();
    struct tally t = run_search(&sr);
    uint64_t ns = now_ns() - t0;
    bool any = atomic_load_explicit(&sr.claimed, memory_order_relaxed) != 0;
    unsigned stopped = atomic_load_explicit(&sr.stopped_tasks, memory_order_relaxed);

    printf("find one, n=%d: %s in %.2f ms, %" PRIu64 " %s visited, %u %s stopped on the "
           "token\n", n, any ? "found" : "none exists", ns / 1e6, t.nodes,
           plural(t.nodes, "node", "nodes"), stopped, plural(stopped, "task", "tasks"));
    if (!report_skipped(ex, n, spawn_rows, t.nodes, count_n, full)) return false;
    bool should_exist = n == 1 || n >= 4;
    if (any != should_exist || (any && !valid_board(sr.board, n)) ||
        (any && !sl_cancelled(&sr.cancel))) {
        fprintf(stderr, "nqueens: find n=%d: found=%d, expected %d, or the board is invalid\n",
                n, any, should_exist);
        return false;
    }
    if (any && n <= 12) print_board(sr.board, n);
    if (any && n > 12) {
        printf("  columns by row:");
        for (int r = 0; r < n; r++) printf(" %d", sr.board[r]);
        putchar('\n');
    }
    return no_task_failures(&sr);
}

/* ---- flags ------------------------------------------------------------- */

struct options {
    int n, find_n, depth, reps;
    unsigned threads;
};

static void usage(FILE *to)
{
    fprintf(to, "usage: nqueens [N] [--find M] [--depth D] [--threads T] [--reps R]\n"
                "  N          board size to count, 1..%d (default 12)\n"
                "  --find     board size for find-one with cancellation, 1..%d (default N)\n"
                "  --depth    rows that spawn tasks, 1..%d (default 3)\n"
                "  --threads  executor workers, 0 = online CPUs (default 0)\n"
                "  --reps     timed runs of each side of the count, best shown, 1..100 "
                "(default 3)\n",
            TABLE_N, MAX_N, MAX_N);
}

/* Parses s as an integer in lo..hi; otherwise says what was wrong with what. */
static bool parse_int(const char *what, const char *s, long lo, long hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "nqueens: %s %s: must be %ld..%ld\n", what, s, lo, hi);
        return false;
    }
    *out = (int)v;
    return true;
}

/* getopt_long itself reports an unknown option or a missing value. */
static bool parse_args(int argc, char **argv, struct options *opt)
{
    static const struct option longs[] = {{"find", required_argument, NULL, 'f'},
                                          {"depth", required_argument, NULL, 'd'},
                                          {"threads", required_argument, NULL, 't'},
                                          {"reps", required_argument, NULL, 'r'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    int c, threads;
    opt->find_n = 0;
    while ((c = getopt_long(argc, argv, "f:d:t:r:h", longs, NULL)) != -1) {
        switch (c) {
        case 'f': if (!parse_int("--find", optarg, 1, MAX_N, &opt->find_n)) return false; break;
        case 'd': if (!parse_int("--depth", optarg, 1, MAX_N, &opt->depth)) return false; break;
        case 't': if (!parse_int("--threads", optarg, 0, SL_EXEC_MAX_THREADS, &threads))
                      return false;
                  opt->threads = (unsigned)threads; break;
        case 'r': if (!parse_int("--reps", optarg, 1, 100, &opt->reps)) return false; break;
        case 'h': usage(stdout); exit(0);
        default: return false;
        }
    }
    if (optind < argc && !parse_int("board size", argv[optind++], 1, TABLE_N, &opt->n))
        return false;
    if (optind < argc) {
        fprintf(stderr, "nqueens: %s: unexpected argument\n", argv[optind]);
        return false;
    }
    if (opt->find_n == 0) opt->find_n = opt->n;
    return true;
}

int main(int argc, char **argv)
{
    struct options opt = {.n = 12, .depth = 3, .reps = 3, .threads = 0};
    if (!parse_args(argc, argv, &opt)) {
        usage(stderr);
        return 2;
    }
    sl_exec *ex;
    sl_status st = sl_exec_new(&ex, &(sl_exec_opts){.threads = opt.threads, .name = "queens"});
    if (st != SL_OK) {
        fprintf(stderr, "nqueens: sl_exec_new: %s\n", sl_status_str(st));
        return 1;
    }
    struct tally full = {0, 0};
    bool ok = count_mode(ex, opt.n, opt.depth, opt.reps, &full) &&
              find_mode(ex, opt.find_n, opt.depth, opt.n, &full);
    sl_exec_free(ex);
    if (!ok) return 1;
    printf("nqueens: ok (n=%d: %" PRIu64 " %s; find-one n=%d checked)\n", opt.n,
           full.solutions, plural(full.solutions, "solution", "solutions"), opt.find_n);
    return 0;
}
