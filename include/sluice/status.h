/*
 * sluice/status.h — the status codes every sluice call returns.
 *
 * Bad input never crashes and never loses data: it returns SL_EINVAL and
 * consumes nothing. Any status other than SL_OK (and SL_EVICTED, a successful
 * send into a full overwrite ring) means nothing was consumed.
 */
#ifndef SLUICE_STATUS_H
#define SLUICE_STATUS_H

#include "sluice/base.h"

SL_BEGIN_DECLS

typedef enum sl_status {
    SL_OK = 0,
    SL_EMPTY,     /* nothing to receive now */
    SL_FULL,      /* no room now */
    SL_CLOSED,    /* closed (for receive: closed and drained) */
    SL_TIMEDOUT,  /* the timeout passed */
    SL_EVICTED,   /* overwrite ring: sent, and the oldest message was displaced */
    SL_BUSY,      /* pool: another command is still in progress */
    SL_EXISTS,    /* pool: a job with this unique key is queued or running */
    SL_EINVAL,    /* bad argument or misuse (NULL, zero size, double sync, wrong state) */
    SL_ENOMEM,    /* allocation failed; nothing was consumed */
    SL_LAGGED,    /* broadcast subscriber: messages were overwritten before it read them
                     (how many: sl_chan_missed); nothing received */
} sl_status;

/* Returns a short, static, human-readable name for s ("SL_OK: success", ...).
 * Never NULL: an unknown value gives "SL_?: unknown status". Thread-safe,
 * wait-free. */
SL_API const char *sl_status_str(sl_status s);

SL_END_DECLS

#endif /* SLUICE_STATUS_H */
