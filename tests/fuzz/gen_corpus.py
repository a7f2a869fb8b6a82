#!/usr/bin/env python3
"""Writes the seed corpus of the sluice fuzz targets: corpus/<flavour>/seed-*
(and corpus/shm/ for fuzz_shm, whose input format is described in fuzz_shm.c).

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


# fuzz_shm: opcodes (shm_op in fuzz_shm.c; + S_NOPS for the second handle),
# and indices into shm_sizes[] and shm_caps[].
(S_SEND, S_TRY_SEND, S_SEND_FOR0, S_SEND_N, S_RECV, S_TRY_RECV, S_RECV_FOR0, S_RECV_N,
 S_CLOSE, S_QUERY, S_POKE, S_FIELD, S_GARBAGE, S_RESET, S_OPEN, S_FILL, S_DRAIN,
 S_NOPS) = range(18)
SHM_SIZE = {8: 0, 16: 1, 9: 2, 24: 3, 64: 4, 65: 5, 300: 6, 1: 7, 3: 8}
SHM_CAP = {1: 0, 2: 1, 3: 2, 4: 3, 5: 4, 7: 5, 8: 6, 9: 7, 15: 8, 16: 9, 17: 10}
# shm_field's choices: (field, index) -> a word of docs/shm-layout.md
F_HEADER, F_CONTROL, F_IN_FLIGHT, F_COUNTER = 1, 2, 3, 4
F_USED_STAMP, F_USED_VALUE, F_FREE_STAMP, F_FREE_VALUE, F_PAYLOAD = 8, 7, 10, 9, 11
# shm_value's kinds: small, 8 bytes, a step off, laps off, ~small, a power of two, a counter
V_SMALL, V_WORD, V_STEP, V_LAPS, V_NEG, V_POW2, V_COUNTER = range(7)


def shm_header(mpmc, elem, cap):
    return bytes([(1 if mpmc else 0) | (SHM_SIZE[elem] << 1), SHM_CAP[cap]])


def on(h, op):
    """op through handle h (0: the creator's, 1: the opener's)."""
    return op + S_NOPS * h


def field(f, i, kind, *value):
    return bytes([S_FIELD, f, i, kind] + list(value))


def traffic(cap):
    """Sends through one handle and receives through the other, every form,
    a few laps of the ring, then close and drain: the model holds."""
    b = bytearray()
    for lap in range(3):
        b += bytes([on(0, S_SEND), on(0, S_TRY_SEND), on(0, S_SEND_FOR0), on(0, S_FILL),
                    on(1, S_RECV), on(1, S_TRY_RECV), on(1, S_RECV_FOR0),
                    on(0, S_SEND_N), 2 * cap + 2, on(1, S_RECV_N), (cap << 2) | 1,
                    on(1, S_RECV_N), (cap << 2) | 2, on(1, S_RECV_N), (cap << 2) | 3,
                    on(1, S_DRAIN), on(lap & 1, S_QUERY)])
    b += bytes([on(1, S_SEND_N), cap, on(0, S_CLOSE), on(1, S_SEND), on(0, S_SEND_N), 3,
                on(0, S_RECV_N), 2, on(1, S_RECV), on(0, S_RECV_N), 1, on(1, S_DRAIN)])
    return bytes(b)


def shm_seeds():
    s = {}
    s["spsc-traffic"] = shm_header(False, 8, 3) + traffic(3)
    s["mpmc-direct-traffic"] = shm_header(True, 8, 4) + traffic(4)
    s["mpmc-indexed-traffic"] = shm_header(True, 64, 5) + traffic(5)
    # Slot indices out of range in the free ring and the used ring (an
    # implementation that uses them unchecked reads or writes past the slots).
    b = bytearray(shm_header(True, 24, 4) + bytes([S_SEND, S_SEND, on(1, S_RECV)]))
    for i in range(4):
        b += field(F_FREE_VALUE, i, V_SMALL, 4 + i) + bytes([S_TRY_SEND, on(1, S_TRY_RECV)])
        b += field(F_USED_VALUE, i, V_POW2, 40 + i) + bytes([on(1, S_TRY_RECV), S_RESET])
    b += bytes([S_FILL]) + field(F_USED_VALUE, 1, V_SMALL, 5) + bytes([on(1, S_DRAIN)])
    s["mpmc-slot-index"] = bytes(b)
    # SL_SPSC counters that claim more room or more messages than the capacity.
    # (300-byte messages: the storage is the capacity, 4 slots; 16-byte: 16.)
    for elem in (300, 16):
        b = bytearray(shm_header(False, elem, 4) + bytes([S_SEND_N, 3, on(1, S_RECV)]))
        for i, kind, v in ((0, V_LAPS, 0x81), (2, V_LAPS, 1), (0, V_STEP, 0xF0), (2, V_NEG, 0),
                           (1, V_SMALL, 9), (3, V_COUNTER, 1), (2, V_STEP, 2), (0, V_STEP, 0xFE)):
            b += field(F_COUNTER, i, kind, v) + bytes([S_SEND_N, 30, on(1, S_RECV_N), 30 << 2,
                                                      S_TRY_SEND, on(1, S_TRY_RECV), S_RESET])
        s["spsc-counters-%d" % elem] = bytes(b)
    # SL_MPMC stamps and counters off by steps and laps: the guarded rings.
    b = bytearray(shm_header(True, 9, 3) + bytes([S_SEND, S_SEND, on(1, S_RECV)]))
    for i, kind, v in ((0, V_LAPS, 3), (1, V_LAPS, 0xFE), (2, V_STEP, 1), (0, V_NEG, 1),
                       (1, V_COUNTER, 2), (3, V_LAPS, 4), (0, V_POW2, 40),
                       (2, V_POW2, 62)):
        b += field(F_USED_STAMP, i, kind, v) + bytes([S_FILL, on(1, S_DRAIN)])
        b += field(F_COUNTER, i, kind, v) + bytes([S_SEND_N, 7, on(1, S_RECV_N), 7 << 2])
        b += field(F_FREE_STAMP, i, kind, v) + bytes([S_FILL, on(1, S_DRAIN), S_RESET])
    # Counters far behind every stamp: a ring that helped them along would
    # spin for 2^40 steps; a guarded one gives up at once.
    far = list(((1 << 64) - (1 << 40)).to_bytes(8, "little"))
    for i in (2, 0, 1, 3):
        b += field(F_COUNTER, i, V_WORD, *far) + bytes([S_TRY_SEND, on(1, S_TRY_RECV),
                                                         S_FILL, on(1, S_DRAIN), S_RESET])
    s["mpmc-stamps"] = bytes(b)
    # Close, the in-flight marks and `drained` set by the peer.
    b = bytearray(shm_header(True, 16, 2) + bytes([S_SEND, S_CLOSE]))
    b += field(F_IN_FLIGHT, 5, V_SMALL, 1) + bytes([on(1, S_RECV), on(1, S_RECV_FOR0),
                                                    on(1, S_RECV_N), 9])
    b += field(F_CONTROL, 6, V_SMALL, 1) + bytes([on(1, S_RECV), S_RESET])
    b += field(F_CONTROL, 0, V_SMALL, 1) + bytes([S_SEND, S_TRY_SEND, on(1, S_DRAIN)])
    b += field(F_CONTROL, 2, V_NEG, 0) + bytes([S_SEND, on(1, S_RECV), S_RESET])
    s["mpmc-close-marks"] = bytes(b)
    # Garbage over the whole segment, the control part, the storage; every
    # word or one in eight; any values or small ones; with resets between.
    for mpmc, elem, cap in ((False, 8, 2), (True, 8, 3), (True, 65, 5)):
        b = bytearray(shm_header(mpmc, elem, cap))
        for how in range(16):
            b += bytes([S_SEND_N, 3, S_GARBAGE, (37 * how + 1) & 255, how, S_TRY_SEND, S_SEND_N, 9,
                        on(1, S_TRY_RECV), on(1, S_RECV_N), 9 << 2, on(1, S_RECV_FOR0),
                        S_OPEN, 0, S_RESET, S_SEND, on(1, S_RECV)])
        s["garbage-%s-%d" % ("mpmc" if mpmc else "spsc", elem)] = bytes(b)
    # A third open: with the header intact, garbled, and expecting another channel.
    b = bytearray(shm_header(False, 300, 2) + bytes([S_SEND]))
    for v in range(8):
        b += bytes([S_OPEN, v])
    for i, kind, v in ((0, V_SMALL, 9), (3, V_SMALL, 1), (3, V_SMALL, 3), (2, V_SMALL, 7),
                       (4, V_STEP, 1)):
        b += field(F_HEADER, i, kind, v) + bytes([S_OPEN, 0, S_OPEN, 1, on(1, S_RECV),
                                                  S_RESET])
    s["open-header"] = bytes(b)
    # Bytes poked anywhere, and payload bytes.
    b = bytearray(shm_header(True, 300, 2) + bytes([S_SEND]))
    for off in (0, 40, 64, 128, 1152, 1216, 2048, 2056, 2064, 2096, 2112, 2560, 3000):
        b += bytes([S_POKE, off & 255, off >> 8, 7, 0xFF, S_SEND, on(1, S_RECV)])
        b += bytes([S_POKE, off & 255, off >> 8, V_WORD] + [0xEE] * 8 + [S_TRY_SEND])
    b += field(F_PAYLOAD, 3, V_SMALL, 1) + bytes([on(1, S_DRAIN)])
    s["poke-anywhere"] = bytes(b)
    return s


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    d = os.path.join(here, "corpus", "shm")
    os.makedirs(d, exist_ok=True)
    for name, data in shm_seeds().items():
        with open(os.path.join(d, "seed-" + name), "wb") as f:
            f.write(data)
    for flavour in ("spsc", "mpmc", "list", "ring"):
        d = os.path.join(here, "corpus", flavour)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds().items():
            with open(os.path.join(d, "seed-" + name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
