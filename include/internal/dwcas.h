/*
 * internal/dwcas.h — double-width compare-and-swap of a 16-byte cell.
 *
 * The bounded MPMC ring stores a value and its position stamp together with
 * one CAS (channels/mpmc.c). x86-64 has `lock cmpxchg16b` (the build passes
 * -mcx16 so the compiler inlines it instead of calling libatomic, whose
 * 16-byte path may take a lock); AArch64 has CASP or an exclusive pair. The
 * __sync builtin is used because GCC inlines it for 16 bytes where it routes
 * __atomic_compare_exchange through libatomic, and ThreadSanitizer sees it.
 * It is a full barrier: it orders like a seq_cst read-modify-write.
 */
#ifndef SLUICE_INTERNAL_DWCAS_H
#define SLUICE_INTERNAL_DWCAS_H

#include <stdbool.h>
#include <stdint.h>

#if !defined(__SIZEOF_INT128__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "sluice needs a 16-byte compare-and-swap on a little-endian machine"
#endif

/* Two 64-bit words, the first at the lower address, 16-byte aligned. If both
 * equal (lo, hi), stores (new_lo, new_hi) and returns true; all atomically. */
static inline bool sl__dwcas(void *cell, uint64_t lo, uint64_t hi, uint64_t new_lo,
                             uint64_t new_hi)
{
    __extension__ typedef unsigned __int128 u128; /* -pedantic: a GNU type, on purpose */
    u128 expect = ((u128)hi << 64) | lo;
    u128 desire = ((u128)new_hi << 64) | new_lo;
    return __sync_bool_compare_and_swap((u128 *)cell, expect, desire);
}

#endif /* SLUICE_INTERNAL_DWCAS_H */
