package main

// What every message carries and how a receiver verifies it: the same
// layout, checks and failure messages as sl-bench's bench/msg.h, so that a
// channel that loses, duplicates, reorders or tears a message fails the run
// exactly as an in-process contender would.
//
//	word 0: (producer + 1) << 48 | sequence   (an 8-byte message is just this)
//	words 1..: word0 + i * K                  (a torn copy breaks the pattern)

import "fmt"

const (
	seqBits  = 48
	seqMask  = uint64(1)<<seqBits - 1
	sentinel = uint64(0xFFFF) << seqBits
	payloadK = uint64(0x9E3779B97F4A7C15)
)

// msg: a fixed-size array sent by value, as a user would send a small struct.
type msg interface {
	[1]uint64 | [2]uint64 | [4]uint64 | [8]uint64 | [16]uint64 | [32]uint64
}

func word(producer uint32, seq uint64) uint64 {
	return uint64(producer+1)<<seqBits | seq
}

func fill[M msg](producer uint32, seq uint64) M {
	var m M
	w := word(producer, seq)
	for i := 0; i < len(m); i++ {
		m[i] = w + uint64(i)*payloadK
	}
	return m
}

func stop[M msg]() M {
	var m M
	m[0] = sentinel
	return m
}

// mix: the checksum adds a strong mix of every word 0 received, so that a
// lost message and a duplicated one do not cancel out.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// sentSum: the checksum a correct run ends with when producer p sent sent[p].
func sentSum(sent []uint64) uint64 {
	var sum uint64
	for p, n := range sent {
		for seq := uint64(0); seq < n; seq++ {
			sum += mix(word(uint32(p), seq))
		}
	}
	return sum
}

// check: one receiver's verification state. A Go channel is FIFO, so
// per-producer order is always checked; a sole receiver also checks that
// no sequence is skipped.
type check struct {
	r           *run
	producers   uint32
	perProducer uint64
	exact       bool
	next        []uint64
	count, sum  uint64
}

func newCheck(r *run, producers uint32, perProducer uint64, sole bool) *check {
	return &check{r: r, producers: producers, perProducer: perProducer, exact: sole,
		next: make([]uint64, producers)}
}

func verify[M msg](c *check, m *M) {
	w := (*m)[0]
	p := uint32(w >> seqBits)
	seq := w & seqMask
	if p == 0 || p > c.producers || seq >= c.perProducer {
		c.fail(w, "a message that was never sent")
	}
	next := &c.next[p-1]
	if c.exact && seq != *next {
		c.fail(w, "a message out of order (or one lost)")
	} else if seq < *next {
		c.fail(w, "a message out of per-producer order")
	}
	*next = seq + 1
	for i := 1; i < len(*m); i++ {
		if (*m)[i] != w+uint64(i)*payloadK {
			c.fail(w, "a torn message (payload does not match its header)")
		}
	}
	c.count++
	c.sum += mix(w)
}

func (c *check) fail(w uint64, what string) {
	c.r.die(fmt.Sprintf("%s: received %s: producer %d, sequence %d (word %#x), after %d good messages",
		c.r.label, what, w>>seqBits, w&seqMask, w, c.count))
}
