/*
 * exec_uts.c — UTS's SHA-1 random numbers and geometric tree shape
 * (exec_uts.h says what the tree is).
 *
 * UTS only ever hashes 20 or 24 bytes, so the SHA-1 here handles one
 * 64-byte block (messages up to 55 bytes) and nothing else: the padding is
 * laid out directly and the message schedule is kept in a 16-word ring.
 * Every contender of `sl-bench exec` expands nodes with these functions, so
 * their speed is the same for all of them; the node count of T1 proves that
 * they compute UTS's tree.
 */
#include <math.h>
#include <string.h>

#include "exec_bench.h"
#include "exec_uts.h"

static uint32_t rol32(uint32_t x, unsigned n)
{
    return (x << n) | (x >> (32 - n));
}

static uint32_t load_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void store_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* The 80 rounds over one block already in big-endian words. */
static void sha1_compress(uint32_t h[5], uint32_t w[16])
{
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (unsigned t = 0; t < 80; t++) {
        if (t >= 16)
            w[t & 15] = rol32(w[(t + 13) & 15] ^ w[(t + 8) & 15] ^ w[(t + 2) & 15] ^
                              w[t & 15], 1);
        uint32_t f, k;
        if (t < 20)
            f = d ^ (b & (c ^ d)), k = 0x5a827999u;
        else if (t < 40)
            f = b ^ c ^ d, k = 0x6ed9eba1u;
        else if (t < 60)
            f = (b & c) | (d & (b | c)), k = 0x8f1bbcdcu;
        else
            f = b ^ c ^ d, k = 0xca62c1d6u;
        uint32_t next = rol32(a, 5) + f + e + k + w[t & 15];
        e = d;
        d = c;
        c = rol32(b, 30);
        b = a;
        a = next;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

void slb_uts_sha1(const unsigned char *msg, unsigned len, unsigned char out[20])
{
    unsigned char block[64] = { 0 };
    memcpy(block, msg, len);
    block[len] = 0x80;                       /* the one bit after the message */
    store_be32(block + 60, (uint32_t)len * 8); /* its length in bits */
    uint32_t w[16];
    for (unsigned i = 0; i < 16; i++)
        w[i] = load_be32(block + 4 * i);
    uint32_t h[5] = { 0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u, 0xc3d2e1f0u };
    sha1_compress(h, w);
    for (unsigned i = 0; i < 5; i++)
        store_be32(out + 4 * i, h[i]);
}

int slb_uts_sha1_ok(void)
{
    /* FIPS 180-2, appendix A.1: SHA-1("abc"). */
    static const unsigned char want[20] = {
        0xa9, 0x99, 0x3e, 0x36, 0x47, 0x06, 0x81, 0x6a, 0xba, 0x3e,
        0x25, 0x71, 0x78, 0x50, 0xc2, 0x6c, 0x9c, 0xd0, 0xd8, 0x9d,
    };
    unsigned char got[20];
    slb_uts_sha1((const unsigned char *)"abc", 3, got);
    return memcmp(got, want, sizeof(want)) == 0;
}

void slb_uts_root(slb_uts_node *root, uint32_t seed)
{
    unsigned char msg[20] = { 0 };
    store_be32(msg + 16, seed);
    slb_uts_sha1(msg, sizeof(msg), root->state);
    root->height = 0;
}

void slb_uts_child(const slb_uts_node *parent, uint32_t i, slb_uts_node *child)
{
    unsigned char msg[24];
    memcpy(msg, parent->state, 20);
    store_be32(msg + 20, i);
    slb_uts_sha1(msg, sizeof(msg), child->state);
    child->height = parent->height + 1;
}

int slb_uts_kids(const slb_uts_node *node, double b0, uint32_t depth)
{
    if (node->height >= depth)
        return 0; /* b_i = 0 below the limit: p = 1, always a leaf */
    double p = 1.0 / (1.0 + b0);
    uint32_t r = load_be32(node->state + 16) & 0x7fffffffu;
    double u = (double)r / 2147483648.0;
    int kids = (int)floor(log(1.0 - u) / log(1.0 - p));
    return kids < SLB_UTS_MAX_KIDS ? kids : SLB_UTS_MAX_KIDS;
}

uint64_t slb_uts_serial(const slb_uts_node *node, double b0, uint32_t depth)
{
    uint64_t nodes = 1;
    int kids = slb_uts_kids(node, b0, depth);
    for (int i = 0; i < kids; i++) {
        slb_uts_node child;
        slb_uts_child(node, (uint32_t)i, &child);
        nodes += slb_uts_serial(&child, b0, depth);
    }
    return nodes;
}
