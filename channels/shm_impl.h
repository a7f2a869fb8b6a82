/*
 * channels/shm_impl.h — what the files of the shared channels share
 * (internal): the segment's offsets (docs/shm-layout.md), its control words,
 * and the calls between the segment (channels/shm.c: geometry, creation,
 * mapping, the barrier mode), its ownership records (channels/shm_owner.c:
 * claims, reclaims of dead owners, the look) and their owner words
 * (channels/shm_identity.c: identities, who is dead). Included by those
 * three files alone; never installed.
 */
#ifndef SLUICE_CHANNELS_SHM_IMPL_H
#define SLUICE_CHANNELS_SHM_IMPL_H

#include "chan_impl.h"
#include "internal/testing.h"

/* Where the segment's parts start (docs/shm-layout.md). */
#define SHM_CTL_AT ((size_t)72)    /* the peer-death control words */
#define SHM_BELL_AT ((size_t)88)   /* the select bell (version 4) */
#define SHM_NS_AT ((size_t)104)    /* the creator's namespaces (version 14) */
#define SHM_RECS_AT ((size_t)2048) /* the records (senders, waiters, roles) */
#define SHM_RECS SL_SHM_SENDERS
#define SHM_DATA_AT (SHM_RECS_AT + SHM_RECS * (size_t)64) /* the storage */
/* How often waiters, empty receives and full sends look for "every
 * registered sender (receiver) is gone", and for a dead sender's mark after
 * a close. */
#define SHM_LOOK_NS sl__shm_look_ns

/* Offsets in the segment, as docs/shm-layout.md gives them: a change here
 * is a new layout version (the assertions in the three files and here). */
#define AT(field) (offsetof(struct sl_chan, field) - SL__CHAN_SHARED_AT)

/* The control words at 72 (docs/shm-layout.md): the look's turn, the roles
 * registered (channels/shm_owner.c), the barrier mode (channels/shm.c). */
typedef struct shm_ctl {
    SL_ATOMIC(uint64_t) next_look;   /* CLOCK_MONOTONIC ns of the next look */
    SL_ATOMIC(uint32_t) roles_ever;  /* each role's bit, once a handle registered it */
    SL_ATOMIC(uint32_t) barriers;    /* the barrier mode (SHM_FENCED, SHM_ASYMMETRIC) */
} shm_ctl;
_Static_assert(SHM_CTL_AT >= AT(drained) + 4 && SHM_CTL_AT + sizeof(shm_ctl) <= AT(in_flight),
               "shm layout: the control words sit between drained and the marks");
_Static_assert(offsetof(shm_ctl, barriers) == 12, "shm layout: the barrier mode at 84");

static inline shm_ctl *control(const sl_chan *ch)
{
    return (shm_ctl *)((unsigned char *)ch + SL__CHAN_SHARED_AT + SHM_CTL_AT);
}

/* A record being reclaimed: this bit, and the reclaiming process's identity,
 * so that a reclaim whose process died (killed in a look) is finished by
 * the next one instead of holding the record, its roles and its mark for
 * good (version 7). */
#define OWNER_BUSY ((uint64_t)1 << 63)

static inline bool reclaiming(uint64_t owner) { return (owner & OWNER_BUSY) != 0; }

/* channels/shm_identity.c, for the records: this process's identity in ch's
 * segment as an owner word; whether an owner word names a dead process (or,
 * with OWNER_BUSY, a dead reclaimer); whether this process is in the
 * segment's creator's namespaces; and this process's own namespaces, read
 * again in a fork()ed child. */
uint64_t sl__shm_self_identity(const sl_chan *ch);
bool sl__shm_owner_dead(const sl_chan *ch, uint64_t owner);
bool sl__shm_native_here(const sl_chan *ch);
void sl__shm_read_own_namespaces(void);

/* channels/shm_owner.c, for the segment's mapping and release: the fork()
 * handlers (once per process, before its first handle), and sl_chan_free's
 * part (the handle's record back, perhaps the last of a role). */
void sl__shm_watch_forks(void);
void sl__shm_drop_record(sl_chan *ch);
/* channels/shm_identity.c, for the creation: a new segment's namespaces. */
void sl__shm_stamp_namespaces(sl_chan *ch);
/* channels/shm.c, for a fork()ed child: the barrier mode's registration again. */
void sl__shm_register_again(void);

#endif /* SLUICE_CHANNELS_SHM_IMPL_H */
