/*
 * processes.c — the peers that run in their own process (bench/remote.c):
 * crossbeam-channel and flume, Rust crates, in the program sl-peer-rust
 * (bench/peers/rust), and Go's channels in sl-peer-go (bench/peers/go).
 * These tables only name the program and the variant it runs; the channel
 * operations, the timing and the checks are in the programs.
 *
 * Each channel runs twice, as sluice's channel does: with its try calls and
 * sl-bench's spin-then-yield wait (kind mpmc: against the lock-free queues)
 * and with its blocking calls (kind blocking). Unbounded channels are
 * marked so. All of them are FIFO per producer, and the programs check it.
 */
#include "peers/peers.h"

#define RUST "sl-peer-rust"
#define GO "sl-peer-go"

#define PROCESS(id, nm, pr, k, fl, nt, prog, var) \
    static const slb_ops id = { .name = nm, .peer = pr, .kind = k, .flags = SLB_FIFO | (fl), \
                                .note = nt, .program = prog, .variant = var }

#define CB_BOUNDED "Rust process; exactly the capacity (crossbeam's array flavour)"
#define CB_GROWS "Rust process; unbounded, blocks of 31 slots (crossbeam's list flavour)"
#define FL_BOUNDED "Rust process; exactly the capacity; a std Mutex around a VecDeque"
#define FL_GROWS "Rust process; unbounded; a std Mutex around a VecDeque"

PROCESS(cb_bounded_try, "crossbeam bounded try", "crossbeam", SLB_MPMC, 0, CB_BOUNDED, RUST,
        "crossbeam-bounded-try");
PROCESS(cb_bounded, "crossbeam bounded", "crossbeam", SLB_BLOCKING, SLB_RENDEZVOUS_OK,
        CB_BOUNDED, RUST, "crossbeam-bounded-blocking");
PROCESS(cb_unbounded_try, "crossbeam unbounded try", "crossbeam", SLB_MPMC, SLB_UNBOUNDED,
        CB_GROWS, RUST, "crossbeam-unbounded-try");
PROCESS(cb_unbounded, "crossbeam unbounded", "crossbeam", SLB_BLOCKING, SLB_UNBOUNDED,
        CB_GROWS, RUST, "crossbeam-unbounded-blocking");
PROCESS(fl_bounded_try, "flume bounded try", "flume", SLB_MPMC, 0, FL_BOUNDED, RUST,
        "flume-bounded-try");
PROCESS(fl_bounded, "flume bounded", "flume", SLB_BLOCKING, SLB_RENDEZVOUS_OK,
        FL_BOUNDED, RUST, "flume-bounded-blocking");
PROCESS(fl_unbounded_try, "flume unbounded try", "flume", SLB_MPMC, SLB_UNBOUNDED, FL_GROWS,
        RUST, "flume-unbounded-try");
PROCESS(fl_unbounded, "flume unbounded", "flume", SLB_BLOCKING, SLB_UNBOUNDED, FL_GROWS, RUST,
        "flume-unbounded-blocking");

/* Select on both sides over two bounded channels (the select workload).
 * flume's Selector is left out: its sends were received more than once
 * (200084 of 200000 at 1x1, flume 0.10.14), which the checks stop. */
PROCESS(cb_select, "crossbeam select!", "crossbeam", SLB_SELECTING, 0,
        "Rust process; two bounded(capacity) channels; select! (fair)", RUST, "crossbeam-select");

/* Goroutines are not threads: Go's scheduler may run a 1x1 producer and
 * consumer on one thread, handing over without crossing cores. */
PROCESS(go_try, "Go chan try", "go", SLB_MPMC, SLB_MAY_SHARE_THREAD,
        "Go process; exactly the capacity; select with default; 1x1 may share one thread",
        GO, "chan-try");
PROCESS(go_block, "Go chan", "go", SLB_BLOCKING, SLB_RENDEZVOUS_OK | SLB_MAY_SHARE_THREAD,
        "Go process; exactly the capacity; send/recv; 1x1 may share one thread (GOMAXPROCS)",
        GO, "chan-blocking");
PROCESS(go_select, "Go select", "go", SLB_SELECTING, SLB_MAY_SHARE_THREAD,
        "Go process; two make(chan, capacity); select (fair); may share threads", GO, "select");

const slb_ops *const *slb_peers_crossbeam(void)
{
    static const slb_ops *const list[] = { &cb_bounded_try, &cb_unbounded_try, &cb_bounded,
                                           &cb_unbounded, &cb_select, NULL };
    return list;
}

const slb_ops *const *slb_peers_flume(void)
{
    static const slb_ops *const list[] = { &fl_bounded_try, &fl_unbounded_try, &fl_bounded,
                                           &fl_unbounded, NULL };
    return list;
}

const slb_ops *const *slb_peers_go(void)
{
    static const slb_ops *const list[] = { &go_try, &go_block, &go_select, NULL };
    return list;
}
