/*
 * tests/fuzz/fuzz_spsc_ool.c — the out-of-line sl_spsc_try_push/try_pop (the
 * entry points C++ callers get) for fuzz_spsc.c, which itself uses the inline
 * fast paths of sluice/spsc.h.
 */
#define SL_NO_INLINE 1
#include <sluice/spsc.h>

sl_status fz_spsc_try_push_ool(sl_spsc *q, const void *elem);
sl_status fz_spsc_try_pop_ool(sl_spsc *q, void *out);

sl_status fz_spsc_try_push_ool(sl_spsc *q, const void *elem) { return sl_spsc_try_push(q, elem); }
sl_status fz_spsc_try_pop_ool(sl_spsc *q, void *out) { return sl_spsc_try_pop(q, out); }
