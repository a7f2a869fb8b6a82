/*
 * sluice/base.h — definitions every sluice header shares.
 *
 * Export control, the cache-line size, the atomic type spelling that lets the
 * headers compile as both C11 and C++, and the switch for debug-only misuse
 * checks. Nothing here is a concept of its own; it is the vocabulary of the
 * other headers.
 */
#ifndef SLUICE_BASE_H
#define SLUICE_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#if defined(SLUICE_BUILDING) && !defined(SLUICE_STATIC_ONLY)
#define SL_API __attribute__((visibility("default")))
#else
#define SL_API
#endif

#ifdef __cplusplus
#define SL_BEGIN_DECLS extern "C" {
#define SL_END_DECLS }
#else
#define SL_BEGIN_DECLS
#define SL_END_DECLS
#endif

/* One cache line. Indices written by different threads live SL_CACHELINE apart
 * so that a write by one side never invalidates the line the other side spins on.
 * (Adjacent-line prefetch on some x86 parts pairs lines; we measured no gain from
 * 128-byte padding on the machines we benchmark, see docs/performance.md.) */
#define SL_CACHELINE 64

/*
 * Atomic fields. In C they are C11 _Atomic objects. In C++ the same header
 * declares std::atomic<T>, which gcc and clang lay out identically; C++ code
 * gets the out-of-line versions of the inline fast paths (see sluice/spsc.h),
 * so it never touches these fields itself.
 */
#ifdef __cplusplus
#include <atomic>
#define SL_ATOMIC(T) std::atomic<T>
#define SL_ALIGNAS(n) alignas(n)
#else
#include <stdatomic.h>
#define SL_ATOMIC(T) _Atomic(T)
#define SL_ALIGNAS(n) _Alignas(n)
#endif

/* Inline fast paths are offered to C callers. C++ callers, and the library's
 * own out-of-line definitions, see plain prototypes instead. */
#if !defined(__cplusplus) && !defined(SL_NO_INLINE)
#define SL_INLINE_FAST_PATHS 1
#else
#define SL_INLINE_FAST_PATHS 0
#endif

/* Copies one message of `size` bytes (internal: the rings' fast paths).
 * Constant-size copies compile to plain moves for the common sizes, where
 * a copy of a size known only at run time is a call into the C library's
 * memcpy (12 instructions and a call at 8 bytes). The empty asm hides the
 * caller's object from gcc's size tracking, which would otherwise warn
 * about the (unreachable) larger cases. Parameters named sl_*_ as in
 * SL_CHAN_TYPED (sluice/chan.h): no program's file-scope name is shadowed. */
#ifndef __cplusplus
#include <string.h>
static inline void sl__copy_msg(void *sl_dst_, const void *sl_src_, size_t sl_size_)
{
    __asm__("" : "+r"(sl_dst_), "+r"(sl_src_));
    switch (sl_size_) {
    case 8: memcpy(sl_dst_, sl_src_, 8); break;
    case 16: memcpy(sl_dst_, sl_src_, 16); break;
    case 4: memcpy(sl_dst_, sl_src_, 4); break;
    case 64: memcpy(sl_dst_, sl_src_, 64); break;
    default: memcpy(sl_dst_, sl_src_, sl_size_); break;
    }
}
#endif

/* Debug-only misuse detection (a second concurrent SPSC producer or consumer).
 * On by default unless NDEBUG is defined; force with -DSL_DEBUG_CHECKS=0/1. */
#ifndef SL_DEBUG_CHECKS
#ifdef NDEBUG
#define SL_DEBUG_CHECKS 0
#else
#define SL_DEBUG_CHECKS 1
#endif
#endif

/* Fault injection (build option SLUICE_FAULT_INJECT): SL_FI() marks every
 * atomic step of the algorithms; in that build each mark may yield, spin or
 * sleep a few microseconds at random, so that stress suites on two cores see
 * interleavings a quiet machine never produces. Elsewhere it is nothing. */
#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
#ifdef __cplusplus
extern "C"
#endif
SL_API void sl__fi_point(void);
#define SL_FI() sl__fi_point()
#else
#define SL_FI() ((void)0)
#endif

/* The largest message a channel carries, in bytes (SPEC §3.2 asks for >= 256). */
#define SL_ELEM_MAX ((size_t)65536)

/* Timeout value meaning "no limit". */
#define SL_FOREVER UINT64_MAX

#endif /* SLUICE_BASE_H */
