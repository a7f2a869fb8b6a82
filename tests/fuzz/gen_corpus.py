#!/usr/bin/env python3
"""Writes the seed corpus of the sluice fuzz targets: corpus/<flavour>/seed-*.

The input format is described in fuzz_common.h. The same op sequences serve
every flavour (the target fixes the flavour and its rules). Run from anywhere:
    python3 tests/fuzz/gen_corpus.py
"""
import os

# Opcode bytes: the first index of each op in fz_chan_ops[] / fz_raw_op_table[].
SEND, TRY_SEND, SEND_FOR0, SEND_FOR1, TRY_SEND_N, SEND_PTR, SEND_EVICT = range(7)
RECV, TRY_RECV, RECV_FOR0, RECV_FOR1, TRY_RECV_N, QUERY, BAD = range(7, 14)
FILL, DRAIN, SELECT, CLOSE = 14, 15, 16, 31
R_PUSH, R_PUSH_EV, R_POP, R_PUSH_N, R_POP_N, R_QUERY, R_BAD, R_FILL, R_DRAIN = range(9)

# Indices into fz_sizes[] and fz_caps[].
SIZE = {1: 0, 2: 1, 3: 2, 8: 6, 16: 10, 17: 11, 64: 18, 65: 19, 129: 23, 255: 25, 300: 29}
CAP = {1: 0, 2: 1, 4: 3, 8: 7, 16: 10, 17: 11, 32: 13, 64: 16, 65: 17, 128: 19, 129: 20}

START_ZERO, START_WRAP64, START_WRAP32, START_WRAP63 = 0, 1, 2, 3


def header(raw, drop, elem, cap, start=START_ZERO, off=0):
    mode = (1 if raw else 0) | (2 if drop else 0) | (start << 2) | (off << 4)
    return bytes([mode, SIZE[elem], 0, CAP[cap]])


def seeds():
    s = {}
    # Channel: every send form into a small channel, past full, then receive
    # every way, close, and drain after close.
    s["chan-basic"] = header(False, True, 8, 4) + bytes([
        SEND, TRY_SEND, SEND_FOR0, SEND_PTR, TRY_SEND, SEND_FOR1, SEND_EVICT,
        RECV, TRY_RECV, RECV_FOR0, RECV_FOR1, TRY_RECV_N, 3, TRY_RECV,
        TRY_SEND_N, 6, TRY_RECV_N, 2, SEND_PTR, QUERY, 0,
        CLOSE, SEND, TRY_SEND, SEND_EVICT, SEND_PTR, TRY_SEND_N, 2,
        RECV, TRY_RECV_N, 5, RECV, TRY_RECV, RECV_FOR0])
    # Capacity 1, the largest message: one in, one out, batches.
    s["chan-cap1-big"] = header(False, True, 300, 1) + bytes([
        SEND, TRY_SEND, SEND_FOR0, SEND_EVICT, RECV, RECV_FOR0,
        TRY_SEND_N, 5, TRY_RECV_N, 5, SEND, SEND_EVICT, SEND_EVICT, DRAIN])
    # Every bad-input variant and every bad sl_chan_new variant.
    bad = header(False, False, 17, 2)
    for v in range(20):
        bad += bytes([BAD, v, TRY_SEND])
    for v in range(16):
        bad += bytes([QUERY, v, TRY_RECV])
    s["chan-bad"] = bad
    # Select: send, receive, both, with a nil case, timeout 1ns; then closed.
    sel = header(False, True, 16, 2)
    for v in (1, 2, 3, 5, 6, 7, 9, 11, 15, 33, 34, 35, 66, 67, 0, 4, 2, 2, 2, 1, 1, 1, 1):
        sel += bytes([SELECT, v])
    sel += bytes([CLOSE]) + bytes(x for v in (1, 2, 3, 2, 2) for x in (SELECT, v))
    s["chan-select"] = sel
    # Counters near the 64-bit wrap: fill and drain a few times.
    s["chan-wrap"] = header(False, True, 1, 64, START_WRAP64, 15) + bytes(
        [FILL, 0, DRAIN] * 3 + [TRY_SEND_N, 40, TRY_RECV_N, 33, TRY_SEND_N, 64, DRAIN])
    # Long traffic through a power-of-two capacity (crosses SL_LIST segments).
    s["chan-traffic"] = header(False, True, 255, 128) + bytes(
        [TRY_SEND_N, 64, TRY_SEND_N, 64, TRY_RECV_N, 60] * 8 + [FILL, 200, DRAIN])
    # Raw: batches around the capacity, fill/drain, bad input.
    raw = header(True, False, 16, 17) + bytes([
        R_PUSH_N, 20, R_POP_N, 5, R_PUSH_N, 10, R_PUSH, R_PUSH_EV, R_POP, R_FILL, 0,
        R_DRAIN, 0, R_QUERY])
    for v in range(10):
        raw += bytes([R_BAD, v, R_PUSH])
    s["raw-basic"] = raw
    # Raw, capacity 1, tiny messages, counters just below 2^32: ping-pong.
    s["raw-pingpong"] = header(True, False, 3, 1, START_WRAP32, 5) + bytes(
        [R_PUSH, R_PUSH, R_POP, R_POP] * 24)
    # Raw, one past a power of two, large messages, counters near 2^63.
    s["raw-129"] = header(True, False, 129, 129, START_WRAP63, 2) + bytes(
        [R_FILL, 0, R_POP_N, 64, R_PUSH_N, 64, R_DRAIN, 0, R_PUSH_N, 64, R_PUSH_N, 64,
         R_PUSH_N, 64, R_POP_N, 64, R_POP_N, 64])
    # Raw, long one-message traffic crossing many SL_LIST segments.
    s["raw-traffic"] = header(True, False, 65, 65) + bytes(
        [R_PUSH_N, 64] * 20 + [R_POP_N, 64] * 21)
    # Long mixed sequences (a fixed PRNG), so that libFuzzer's length limit
    # starts near 512 bytes instead of at the short seeds' length.
    rng = 0x2545F4914F6CDD1D
    def nxt():
        nonlocal rng
        rng = (rng * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        return rng >> 56
    for name, raw, elem, cap in (("chan-long", False, 8, 16), ("raw-long", True, 64, 65)):
        body = bytearray()
        while len(body) < 508:
            op = nxt()
            if not raw and op % 32 == CLOSE and len(body) < 400:
                continue  # close only near the end
            body += bytes([op, nxt()])
        s[name] = header(raw, True, elem, cap, START_WRAP64, 7) + bytes(body)
    return s


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for flavour in ("spsc", "mpmc", "list", "ring"):
        d = os.path.join(here, "corpus", flavour)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds().items():
            with open(os.path.join(d, "seed-" + name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
