// sl-peer-go — Go channels as contenders of `sl-bench chan`.
//
// sl-bench starts this program once per run, with the run's parameters on
// the command line (bench/remote.c has the protocol), among its in-process
// contenders in the same shuffled rounds. The program runs the workload in
// goroutines, times and verifies it as sl-bench does (msg.go,
// workloads.go) and prints one line: "ok VALUE P99 P999 MSGS", or
// "unsupported WHY" for a message size it was not built for. A failed
// check prints sl-bench's failure message and exits with status 2.
//
// The channel is a buffered make(chan [N]uint64, capacity). Variant
// "chan-blocking" uses plain sends and receives; "chan-try" uses select
// with a default case and sl-bench's spin-then-yield wait; "select" runs
// the select workload over two such channels (select.go), and a ping-pong
// with capacity 0 runs over unbuffered channels (rendezvous). The Go
// scheduler runs the goroutines on GOMAXPROCS threads (its default: the
// CPUs the process may use), and may run a producer and a consumer on one
// thread, handing over without crossing cores.
//
// Standard input is sl-bench's end of a pipe: when it closes (sl-bench
// died, e.g. its watchdog fired) this program stops too.
package main

import (
	"fmt"
	"io"
	"os"
)

func workload[M msg](r *run, block bool) outcome {
	if r.selects {
		return selectTput[M](r)
	}
	make_ := func() chan M { return make(chan M, r.capacity) }
	if r.pingpong {
		return pingpong(r, make_, block)
	}
	return tput(r, make_(), block)
}

func main() {
	args := os.Args[1:]
	r := parseRun(args)
	var block bool
	switch args[1] {
	case "chan-try":
	case "chan-blocking", "select":
		block = true
	default:
		usage("unknown variant '" + args[1] + "'")
	}
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(3)
	}()
	var out outcome
	switch r.elem / 8 {
	case 1:
		out = workload[[1]uint64](r, block)
	case 2:
		out = workload[[2]uint64](r, block)
	case 4:
		out = workload[[4]uint64](r, block)
	case 8:
		out = workload[[8]uint64](r, block)
	case 16:
		out = workload[[16]uint64](r, block)
	case 32:
		out = workload[[32]uint64](r, block)
	default:
		fmt.Println("unsupported built for 8, 16, 32, 64, 128 and 256-byte messages")
		return
	}
	fmt.Printf("ok %.6f %g %g %d\n", out.value, out.p99, out.p999, out.msgs)
}
