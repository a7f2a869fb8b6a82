package main

// The two workloads, timed and verified as sl-bench's bench/tput.c and
// bench/latency.c do it for in-process contenders.
//
// tput: P producers and C consumers; the figure is the messages sent over
// the time from the gate's opening to the last message received. Spinning
// consumers publish their counts when they find the channel empty and stop
// once every producer is done and the total is reached; blocking consumers
// stop at a sentinel, one per consumer, sent by the timing goroutine after
// every producer is done, and what a sentinel overtook is drained and
// verified by the timing goroutine inside the timed interval, as tput.c does.
// pingpong: ping sends on AB and waits for the echo on BA; each round trip
// is timed; up to trips trips or tripCapNs.

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
)

type outcome struct {
	value, p99, p999 float64 // Mmsg/s, or the p50 in ns
	msgs             uint64  // messages moved, or trips made
}

type shared struct {
	gate          gate
	sent          atomic.Uint64 // added by each producer when it is done
	producersDone atomic.Uint32
	_             [64]byte
	consumed      atomic.Uint64 // its own line: consumers add to it while others read the gate
	_             [56]byte
}

const lostAfterNs = 5_000_000_000

func produce[M msg](r *run, sh *shared, id uint32, ch chan M, block bool) uint64 {
	per := r.msgs / uint64(r.producers)
	sh.gate.wait()
	end := ^uint64(0)
	if r.capNs > 0 {
		end = r.now() + r.capNs
	}
	var seq uint64
	for ; seq < per && !r.timeUp(seq, end); seq++ {
		send(ch, fill[M](id, seq), block)
	}
	// Sent first: a consumer that sees every producer done reads the total.
	sh.sent.Add(seq)
	sh.producersDone.Add(1)
	return seq
}

func consume[M msg](r *run, sh *shared, ch chan M, block bool) *check {
	per := r.msgs / uint64(r.producers)
	sole := r.consumers == 1
	chk := newCheck(r, r.producers, per, sole)
	sh.gate.wait()
	if block {
		for {
			m := <-ch
			if m[0] == sentinel {
				return chk
			}
			verify(chk, &m)
			work(r.work)
		}
	}
	total := per * uint64(r.producers)
	var flushed, idleSince uint64
	var spins, polls uint32
	for {
		if m, ok := tryRecv(ch); ok {
			verify(chk, &m)
			work(r.work)
			spins, idleSince = 0, 0
			if sole && chk.count >= total {
				return chk
			}
			continue
		}
		// Empty: publish what we have and see whether everyone is done.
		if chk.count != flushed {
			sh.consumed.Add(chk.count - flushed)
			flushed = chk.count
		}
		if sh.producersDone.Load() == r.producers {
			if sh.consumed.Load() >= sh.sent.Load() {
				return chk
			}
			if polls++; polls%1024 == 0 {
				now := r.now()
				if idleSince == 0 {
					idleSince = now
				} else if now-idleSince > lostAfterNs {
					r.die(fmt.Sprintf("%s: every producer finished, the queue stays empty, and "+
						"only %d of %d messages arrived (this consumer: %d): messages were lost",
						r.label, sh.consumed.Load(), sh.sent.Load(), chk.count))
				}
			}
		}
		backoff(&spins)
	}
}

// expectEmpty: after every message sent was received, anything left in the
// channel is a message received twice or made up.
func expectEmpty[M msg](r *run, ch chan M) {
	if m, ok := tryRecv(ch); ok {
		r.die(fmt.Sprintf("%s: the queue still held a message after every message sent had "+
			"been received (word %#x): a duplicate or an invented message", r.label, m[0]))
	}
}

// verifyTotals: every message sent was received once (count and checksum
// over every receiver's checks); returns the total sent.
func verifyTotals(r *run, sent []uint64, checks []*check) uint64 {
	var total, count, sum uint64
	for _, n := range sent {
		total += n
	}
	for _, c := range checks {
		count += c.count
		sum += c.sum
	}
	if count != total {
		r.die(fmt.Sprintf("%s: received %d messages, %d were sent", r.label, count, total))
	}
	if sum != sentSum(sent) {
		r.die(r.label + ": the checksum of the received messages does not match what was " +
			"sent (some lost and others duplicated)")
	}
	return total
}

func tput[M msg](r *run, ch chan M, block bool) outcome {
	var sh shared
	sent := make([]uint64, r.producers)
	checks := make([]*check, r.consumers)
	var pw, cw sync.WaitGroup
	for id := uint32(0); id < r.producers; id++ {
		pw.Add(1)
		go func(id uint32) { defer pw.Done(); sent[id] = produce(r, &sh, id, ch, block) }(id)
	}
	for id := uint32(0); id < r.consumers; id++ {
		cw.Add(1)
		go func(id uint32) { defer cw.Done(); checks[id] = consume(r, &sh, ch, block) }(id)
	}
	t0 := sh.gate.open(r, r.producers+r.consumers)
	pw.Wait()
	if block {
		for i := uint32(0); i < r.consumers; i++ {
			ch <- stop[M]()
		}
	}
	rest := newCheck(r, r.producers, r.msgs/uint64(r.producers), false)
	cw.Wait()

	// Blocking runs: drain what a sentinel overtook; spinning runs: the
	// channel must be empty. Timed: every message counted was received.
	if !block {
		expectEmpty(r, ch)
	}
	for m, ok := tryRecv(ch); ok; m, ok = tryRecv(ch) {
		if m[0] == sentinel {
			r.die(r.label + ": an extra sentinel: one was delivered twice")
		}
		verify(rest, &m)
	}
	t1 := r.now()
	total := verifyTotals(r, sent, append(checks, rest))
	return outcome{value: float64(total) / (float64(t1-t0) / 1e9) / 1e6, msgs: total}
}

func ping[M msg](r *run, g *gate, ab, ba chan M, block bool, samples []uint64) uint64 {
	g.wait()
	start := r.now()
	var i uint64
	for i < r.trips {
		m := fill[M](0, i)
		t := r.now()
		send(ab, m, block)
		back := recv(ba, block)
		now := r.now()
		samples[i] = now - t
		i++
		if back != m {
			r.die(fmt.Sprintf("%s: trip %d came back as word %#x", r.label, i-1, back[0]))
		}
		if now-start > r.tripCapNs {
			break
		}
	}
	send(ab, stop[M](), block)
	return i
}

func pong[M msg](r *run, g *gate, ab, ba chan M, block bool) uint64 {
	chk := newCheck(r, 1, r.trips, true)
	g.wait()
	for {
		m := recv(ab, block)
		if m[0] == sentinel {
			return chk.count
		}
		verify(chk, &m)
		send(ba, m, block)
	}
}

// percentile: nearest rank, as sl-bench's slb_percentile.
func percentile(sorted []uint64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := p * float64(len(sorted))
	k := int(rank)
	if float64(k) < rank {
		k++
	}
	if k > 0 {
		k--
	}
	return float64(sorted[k])
}

func pingpong[M msg](r *run, make_ func() chan M, block bool) outcome {
	ab, ba := make_(), make_()
	samples := make([]uint64, r.trips)
	var g gate
	var n, echoed uint64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); echoed = pong(r, &g, ab, ba, block) }()
	go func() { defer wg.Done(); n = ping(r, &g, ab, ba, block, samples) }()
	g.open(r, 2)
	wg.Wait()
	if echoed != n {
		r.die(fmt.Sprintf("%s: %d trips sent, %d echoed", r.label, n, echoed))
	}
	expectEmpty(r, ab)
	expectEmpty(r, ba)
	done := samples[:n]
	sort.Slice(done, func(i, j int) bool { return done[i] < done[j] })
	return outcome{value: percentile(done, 0.50), p99: percentile(done, 0.99),
		p999: percentile(done, 0.999), msgs: n}
}
