/*
 * channels/status.c — names for status codes.
 */
#include "sluice/status.h"

SL_API const char *sl_status_str(sl_status s)
{
    switch (s) {
    case SL_OK: return "SL_OK: success";
    case SL_EMPTY: return "SL_EMPTY: nothing to receive now";
    case SL_FULL: return "SL_FULL: no room now";
    case SL_CLOSED: return "SL_CLOSED: closed";
    case SL_TIMEDOUT: return "SL_TIMEDOUT: the timeout passed";
    case SL_EVICTED: return "SL_EVICTED: sent; the oldest message was displaced";
    case SL_BUSY: return "SL_BUSY: another command is still in progress";
    case SL_EXISTS: return "SL_EXISTS: a job with this key is queued or running";
    case SL_EINVAL: return "SL_EINVAL: bad argument or misuse";
    case SL_ENOMEM: return "SL_ENOMEM: out of memory; nothing was consumed";
    case SL_LAGGED: return "SL_LAGGED: messages were overwritten before this subscriber read them";
    }
    return "SL_?: unknown status";
}
