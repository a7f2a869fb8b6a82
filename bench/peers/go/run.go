package main

// One run's parameters as sl-bench passed them, and what every workload
// shares with sl-bench's C driver: the clock, the start gate, the wait of a
// spinning goroutine, the try and blocking forms of a channel operation,
// and the one way a run fails.

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
)

type run struct {
	name, label          string // the contender and the workload, for failure messages
	pingpong             bool   // the ping-pong workload; otherwise throughput
	selects              bool   // the select workload (select.go)
	producers, consumers uint32
	elem, capacity       int
	msgs, capNs          uint64 // tput: all producers together; stop after capNs (0: never)
	trips, tripCapNs     uint64 // ping-pong: at most trips, or until tripCapNs
	work                 uint64 // tput: pause hints a consumer spends on each message
	base                 time.Time
}

func usage(why string) {
	fmt.Fprintf(os.Stderr, "sl-peer-go: %s\nusage: sl-peer-go NAME VARIANT tput|pingpong|select "+
		"PRODUCERS CONSUMERS ELEM CAPACITY MSGS CAP_NS TRIPS TRIP_CAP_NS PIN_NCPU WORK LABEL\n"+
		"(started by sl-bench chan, one run per process; see bench/remote.c)\n", why)
	os.Exit(2)
}

func num(s string) uint64 {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		usage(fmt.Sprintf("'%s' is not a number", s))
	}
	return v
}

// parseRun: args is the command line without the program's name. PIN_NCPU
// is not used here: goroutines are not threads, so sl-bench confines the
// whole process to the run's CPUs instead (bench/remote.c).
func parseRun(args []string) *run {
	if len(args) != 14 {
		usage("wrong number of arguments")
	}
	if args[2] != "tput" && args[2] != "pingpong" && args[2] != "select" {
		usage("unknown test '" + args[2] + "'")
	}
	r := &run{name: args[0], label: args[13], pingpong: args[2] == "pingpong",
		selects:   args[2] == "select",
		producers: uint32(num(args[3])), consumers: uint32(num(args[4])),
		elem: int(num(args[5])), capacity: int(num(args[6])), msgs: num(args[7]),
		capNs: num(args[8]), trips: num(args[9]), tripCapNs: num(args[10]), work: num(args[12]),
		base: time.Now()}
	num(args[11])
	if r.producers == 0 || r.consumers == 0 || r.producers > 0xFFFE || r.elem <= 0 ||
		r.elem%8 != 0 || r.capacity < 0 || (r.capacity == 0 && !r.pingpong) {
		usage("bad workload parameters")
	}
	return r
}

// now: nanoseconds on the monotonic clock since the run began.
func (r *run) now() uint64 { return uint64(time.Since(r.base)) }

// timeUp: as the C driver's slb_time_up, the clock every 256 messages.
func (r *run) timeUp(seq, end uint64) bool {
	return seq&255 == 0 && end != ^uint64(0) && seq != 0 && r.now() > end
}

// die: a verification failure, in sl-bench's words; status 2 is passed on.
func (r *run) die(msg string) {
	fmt.Fprintf(os.Stderr, "\nsl-bench: FAILED — contender '%s': %s\n", r.name, msg)
	os.Exit(2)
}

// work: a consumer's work on a message it received, as the C driver's slb_work.
func work(n uint64) {
	for i := uint64(0); i < n; i++ {
		cpuRelax()
	}
}

// backoff: every spinning contender waits the same way, a short spin, then
// yield — here the goroutine, which is what a Go program would yield.
func backoff(spins *uint32) {
	*spins++
	if *spins < 128 {
		cpuRelax()
	} else {
		runtime.Gosched()
	}
}

// gate: the start line. Every goroutine arrives, then all go at once, so
// that starting them is not timed.
type gate struct {
	ready atomic.Uint32
	start atomic.Bool
}

func (g *gate) wait() {
	g.ready.Add(1)
	for !g.start.Load() {
		runtime.Gosched()
	}
}

// open waits for n arrivals and returns the start time.
func (g *gate) open(r *run, n uint32) uint64 {
	for g.ready.Load() < n {
		runtime.Gosched()
	}
	t0 := r.now()
	g.start.Store(true)
	return t0
}

// trySend and tryRecv: select with a default case, Go's non-blocking form.
func trySend[M msg](ch chan M, m M) bool {
	select {
	case ch <- m:
		return true
	default:
		return false
	}
}

func tryRecv[M msg](ch chan M) (M, bool) {
	select {
	case m := <-ch:
		return m, true
	default:
		var zero M
		return zero, false
	}
}

func send[M msg](ch chan M, m M, block bool) {
	if block {
		ch <- m
		return
	}
	var spins uint32
	for !trySend(ch, m) {
		backoff(&spins)
	}
}

func recv[M msg](ch chan M, block bool) M {
	if block {
		return <-ch
	}
	var spins uint32
	for {
		if m, ok := tryRecv(ch); ok {
			return m
		}
		backoff(&spins)
	}
}
