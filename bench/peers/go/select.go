package main

// The select workload: tput's blocking shape (workloads.go) over a pair of
// buffered channels, every operation a select over both ("select on both
// sides", the shape of crossbeam-channel's own benchmarks). Go's select
// picks uniformly among the ready cases. A producer's order holds per
// channel only, so each receiver keeps one check per channel; counts and
// checksums add up over both.

import "sync"

func selSend[M msg](a, b chan M, m M) {
	select {
	case a <- m:
	case b <- m:
	}
}

// selRecv: the message and the channel it came from; with try, ok is
// false when both were empty.
func selRecv[M msg](a, b chan M, try bool) (m M, which int, ok bool) {
	if try {
		select {
		case m = <-a:
			return m, 0, true
		case m = <-b:
			return m, 1, true
		default:
			return m, 0, false
		}
	}
	select {
	case m = <-a:
		return m, 0, true
	case m = <-b:
		return m, 1, true
	}
}

func selProduce[M msg](r *run, g *gate, id uint32, a, b chan M) uint64 {
	per := r.msgs / uint64(r.producers)
	g.wait()
	end := ^uint64(0)
	if r.capNs > 0 {
		end = r.now() + r.capNs
	}
	var seq uint64
	for ; seq < per && !r.timeUp(seq, end); seq++ {
		selSend(a, b, fill[M](id, seq))
	}
	return seq
}

func selConsume[M msg](r *run, g *gate, a, b chan M) [2]*check {
	per := r.msgs / uint64(r.producers)
	chk := [2]*check{newCheck(r, r.producers, per, false), newCheck(r, r.producers, per, false)}
	g.wait()
	for {
		m, which, _ := selRecv(a, b, false)
		if m[0] == sentinel {
			return chk
		}
		verify(chk[which], &m)
	}
}

func selectTput[M msg](r *run) outcome {
	a, b := make(chan M, r.capacity), make(chan M, r.capacity)
	var g gate
	sent := make([]uint64, r.producers)
	checks := make([][2]*check, r.consumers)
	var pw, cw sync.WaitGroup
	for id := uint32(0); id < r.producers; id++ {
		pw.Add(1)
		go func(id uint32) { defer pw.Done(); sent[id] = selProduce(r, &g, id, a, b) }(id)
	}
	for id := uint32(0); id < r.consumers; id++ {
		cw.Add(1)
		go func(id uint32) { defer cw.Done(); checks[id] = selConsume(r, &g, a, b) }(id)
	}
	t0 := g.open(r, r.producers+r.consumers)
	pw.Wait()
	for i := uint32(0); i < r.consumers; i++ {
		selSend(a, b, stop[M]())
	}
	per := r.msgs / uint64(r.producers)
	rest := [2]*check{newCheck(r, r.producers, per, false), newCheck(r, r.producers, per, false)}
	cw.Wait()

	// Drain what a sentinel overtook, per channel; timed, as in tput.
	for m, which, ok := selRecv(a, b, true); ok; m, which, ok = selRecv(a, b, true) {
		if m[0] == sentinel {
			r.die(r.label + ": an extra sentinel: one was delivered twice")
		}
		verify(rest[which], &m)
	}
	t1 := r.now()
	all := []*check{rest[0], rest[1]}
	for _, c := range checks {
		all = append(all, c[0], c[1])
	}
	total := verifyTotals(r, sent, all)
	return outcome{value: float64(total) / (float64(t1-t0) / 1e9) / 1e6, msgs: total}
}
