/*
 * internal/util.h — the small things the library's files share (internal):
 * the CPU count, thread names, a cheap per-thread random generator, a
 * prefetch for writing, and the fence after a locked instruction.
 */
#ifndef SLUICE_INTERNAL_UTIL_H
#define SLUICE_INTERNAL_UTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

/* Asks the core to fetch the line holding p ready to be written: the line
 * arrives exclusive, so a later store or locked instruction on it does not
 * wait for other cores' copies to be invalidated. A hint: never faults,
 * whatever p. On x86-64, PREFETCHW (0F 0D /1), which gcc emits only with
 * -mprfchw (what it emits otherwise, PREFETCHT0, fetches the line shared,
 * and measured slower: docs/performance.md, "Prefetching the next spare"):
 * call it only where sl__cpu_has_prefetchw() says the CPU knows it (every
 * AMD64 CPU; Intel since Broadwell). */
static inline void sl__prefetch_for_write(const void *p)
{
#if defined(__x86_64__)
    __asm__("prefetchw %0" ::"m"(*(const char *)p));
#else
    __builtin_prefetch(p, 1);
#endif
}

/* Asks the core to move the line holding p out of its private caches into
 * the cache the cores share, so that another core's next read of it is
 * served there instead of by a snoop of this core. A hint: never faults. On
 * x86-64, CLDEMOTE (0F 1C /0), which a CPU without it executes as a NOP
 * (the opcode is in the hint-NOP space, 0F 18-0F 1F), so it needs no CPUID
 * test; elsewhere nothing. Not a free hint: on the VM measured, demoting
 * every line a stream's consumer was about to read cost the stream far
 * more than it saved (docs/performance.md, "The slot handed on"), so a
 * caller demotes only a line handed to a reader that waits for it. */
static inline void sl__cache_demote(const void *p)
{
#if defined(__x86_64__)
    __asm__ volatile("cldemote %0" ::"m"(*(const char *)p));
#else
    (void)p;
#endif
}

/* A full barrier between a release store and a later seq_cst load where a
 * seq_cst read-modify-write of another word stands between them. C11 puts
 * the pair in order only with a seq_cst fence (a release store is outside
 * the single total order); on x86-64 the locked instruction is a full
 * barrier, and AArch64 never lets a later LDAR pass an earlier STLR, so
 * there it costs nothing beyond the compiler's barrier. */
static inline void sl__fence_after_locked(void)
{
#if defined(__x86_64__) || defined(__aarch64__)
    atomic_signal_fence(memory_order_seq_cst);
#else
    atomic_thread_fence(memory_order_seq_cst);
#endif
}

/* Whether sl__prefetch_for_write has an instruction to use. x86-64: CPUID
 * 0x80000001 ECX bit 8 (3DNowPrefetch / PRFCHW). */
static inline bool sl__cpu_has_prefetchw(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    return __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 8));
#else
    return true;
#endif
}

/* sl__cpu_has_prefetchw(), read once when the library loads, before any
 * thread can push (channels/mpmc.c). Hidden, said here and not only where
 * it is defined: the push paths of mpmc.c and mpmc_swap.c both read it, and
 * a declaration of default visibility would have one of them load its
 * address from the GOT first, an instruction more a push. */
extern __attribute__((visibility("hidden"))) bool sl__prefetchw_known;

/* Online CPUs, clamped to [1, max]. */
static inline unsigned sl__online_cpus(unsigned max)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > (long)max ? max : (unsigned)n;
}

/* Names a thread "prefix/suffix" (what top -H and debuggers show). Linux
 * keeps 15 bytes of a name; the rest is cut, never an error. */
static inline void sl__thread_name(pthread_t t, const char *prefix, const char *suffix)
{
    char name[48];
    snprintf(name, sizeof name, "%s/%s", prefix, suffix);
    name[15] = '\0';
    pthread_setname_np(t, name);
}

/* xorshift64* (Vigna): one step of the state, a scrambled 64-bit output.
 * The state must not be 0 (it would stay 0). Cheap and good enough to spread
 * steal victims, select's starting case and fault points; not for anything
 * that needs a cryptographic or statistically strong source. */
static inline uint64_t sl__xorshift64s(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * UINT64_C(0x2545F4914F6CDD1D);
}

/* A draw in [0, n) from the generator above, n > 0: the high half of the
 * 128-bit product of a 64-bit output and n (Lemire's multiply-shift), not
 * `% n`, whose 64-bit division took a quarter of select's per-round time
 * (a bias of at most n / 2^64 is of no account here). */
static inline uint64_t sl__rand_below(uint64_t *state, uint64_t n)
{
    __extension__ typedef unsigned __int128 wide; /* gcc and clang on 64-bit targets */
    return (uint64_t)(((wide)sl__xorshift64s(state) * n) >> 64);
}

#endif /* SLUICE_INTERNAL_UTIL_H */
