/*
 * exec_uts.h — the Unbalanced Tree Search tree (Olivier et al., LCPC 2006):
 * its splittable random numbers and its geometric shape.
 *
 * Every node carries a 20-byte SHA-1 state. The root's is SHA-1 of 16 zero
 * bytes and the seed (4 bytes, big-endian); child i's is SHA-1 of its
 * parent's state followed by i (4 bytes, big-endian). A node's random number
 * is the last four bytes of its state, big-endian, masked to 31 bits. So the
 * tree is a pure function of its parameters and any node can be expanded on
 * any thread in any order — which is what makes its node count a check.
 *
 * Only the geometric tree with the fixed branching-factor shape is here
 * (UTS `-t 1 -a 3`): a node above the depth limit has
 * floor(log(1 - u) / log(1 - p)) children, p = 1 / (1 + b0), u its random
 * number in [0, 1); nodes at the limit are leaves. T1 is
 * `-t 1 -a 3 -d 10 -b 4 -r 19`: 4 130 071 nodes.
 */
#ifndef SLB_EXEC_UTS_H
#define SLB_EXEC_UTS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SLB_UTS_T1_NODES UINT64_C(4130071)

typedef struct slb_uts_node {
    unsigned char state[20];
    uint32_t height;
} slb_uts_node;

/* SHA-1 of len bytes, len at most 55 (one block): all UTS ever hashes. */
void slb_uts_sha1(const unsigned char *msg, unsigned len, unsigned char out[20]);
/* Checks slb_uts_sha1 against the FIPS 180 test vector; false if wrong. */
int slb_uts_sha1_ok(void);

void slb_uts_root(slb_uts_node *root, uint32_t seed);
void slb_uts_child(const slb_uts_node *parent, uint32_t i, slb_uts_node *child);
/* Children of `node` in the tree with branching factor b0 and depth limit
 * depth, capped at SLB_UTS_MAX_KIDS as the reference code does. */
int slb_uts_kids(const slb_uts_node *node, double b0, uint32_t depth);
/* Nodes in the subtree below and including `node`, depth first. */
uint64_t slb_uts_serial(const slb_uts_node *node, double b0, uint32_t depth);

#ifdef __cplusplus
}
#endif

#endif /* SLB_EXEC_UTS_H */
