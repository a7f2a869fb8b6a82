/*
 * channels/shm_owner.c — the ownership records of a shared channel's segment
 * (sluice/shm.h): who holds each record, the claim a handle makes before
 * its first send, wait or registration, the reclaim of records whose owner
 * died, the decision that every registered sender (receiver) is gone, and
 * the periodic look that finds the dead.
 *
 * Apart from the segment itself (channels/shm.c: its layout, creation,
 * validation and mapping), which these records live in but which knows
 * nothing of them beyond the fork handlers a mapping installs and the
 * record a freed handle gives back (channels/shm_impl.h); and from the
 * owner words' meaning (channels/shm_identity.c). None of this is on a
 * message's fast path: a send reaches here once per handle and thread
 * (sl__shm_claim_mark, sl__shm_claim_lane), a receive or a send when the
 * queue is empty or full, a receiver before it answers SL_CLOSED.
 */
#include "chan_impl.h"
#include "shm_impl.h"
#include "internal/testing.h"

#include <pthread.h>

#include "sluice/shm.h"

uint64_t sl__shm_look_ns = (uint64_t)SL_SHM_LOOK_MS * 1000 * 1000; /* internal/testing.h */

/* ---- a peer that dies -------------------------------------------------------
 * docs/guarantees.md, "A peer that dies", has the argument; the words are
 * docs/shm-layout.md's "Sender records" and the control words at 72, 80.
 *
 * Every handle that sends, waits or registers claims a record: an owner
 * word naming its process ({start time, pid}: a pid reused by a later
 * process does not match), its in-flight mark, and the roles it registered
 * (ROLE_SENDER, ROLE_RECEIVER). A receiver deciding SL_CLOSED counts only
 * the marks of living owners; a look every SHM_LOOK_NS, made by an empty
 * receive, a full send or a waiter, reclaims the records of dead owners and
 * closes the channel once a role was registered and no handle of that role
 * is left (close_if_gone: senders and receivers alike). Whoever reclaims a
 * record, the look or not, decides for the roles it held (reclaim_all), as
 * a handle's free does for its own (sl__shm_drop_record). */
#define ROLE_SENDER 1u   /* sl_chan_shm_sender */
#define ROLE_RECEIVER 2u /* sl_chan_shm_receiver */
#define ROLES (ROLE_SENDER | ROLE_RECEIVER) /* other bits are a peer's garbage */
/* roles_ever's other bits: a count of registrations (bits 2-30), moved by
 * each, and EVER_CLOSING (bit 31), set by the decision that a role is gone.
 * The decision is a CAS from the word it read before its look at the
 * records, so a registration that came in between fails it (and the look
 * is made again), and one that comes after it reads EVER_CLOSING. */
#define EVER_UNIT (1u << 2)
#define EVER_CLOSING (1u << 31)
#define EVER_COUNT (EVER_CLOSING - EVER_UNIT)

typedef struct shm_rec {
    SL_ATOMIC(uint32_t) marks;  /* the in-flight mark (flag or count) */
    SL_ATOMIC(uint32_t) roles;  /* the registered roles: ROLE_SENDER | ROLE_RECEIVER */
    SL_ATOMIC(uint64_t) owner;  /* 0 free; OWNER_BUSY | the reclaimer's identity; else an identity */
    SL_ATOMIC(uint32_t) parked[2]; /* the owner's threads registered on not_empty, not_full */
    /* SL_MPMC: a flag per sending thread of the owner (version 11; shm_lane.c).
     * In the record's line, as the count was: the owner's threads share it. */
    SL_ATOMIC(uint32_t) lanes[SL__SHM_LANES];
} shm_rec;
_Static_assert(sizeof(shm_rec) == 64, "a record per line");
_Static_assert(offsetof(shm_rec, marks) == 0 && offsetof(shm_rec, lanes) == 24,
               "shm layout: the count on the record's line boundary, lanes off it (sl__shm_is_lane)");

SL_ATOMIC(unsigned) sl__shm_gen = 1;

static void close_if_gone(sl_chan *ch, uint32_t gone);

/* Threads of a process share a handle: one claims its record, under this
 * lock, which a fork() holds across (a child must not inherit it held). */
static pthread_mutex_t claim_lock = PTHREAD_MUTEX_INITIALIZER;

static void fork_prepare(void) { pthread_mutex_lock(&claim_lock); }

static void fork_parent(void) { pthread_mutex_unlock(&claim_lock); }

static void forked_child(void)
{
    pthread_mutex_unlock(&claim_lock);
    /* Relaxed: the child runs only this thread now. */
    atomic_fetch_add_explicit(&sl__shm_gen, 1u, memory_order_relaxed);
    sl__mpmc_forked_child();
    sl__shm_lanes_forked();
    sl__shm_read_own_namespaces();
    sl__shm_register_again();
}

static void add_fork_handler(void)
{
    sl__shm_read_own_namespaces();
    pthread_atfork(fork_prepare, fork_parent, forked_child);
}

/* A fork()ed child must not mark itself in its parent's record. */
void sl__shm_watch_forks(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, add_fork_handler);
}

static shm_rec *records(const sl_chan *ch)
{
    return (shm_rec *)((unsigned char *)ch + SL__CHAN_SHARED_AT + SHM_RECS_AT);
}

/* Takes a dead owner's registrations, counted in *parked, out of ev's
 * waiter count: at most what the count holds (a peer's garbage in *parked
 * must not wrap it). */
static void discount(sl_event *ev, SL_ATOMIC(uint32_t) *parked)
{
    /* seq_cst: the updates of `waiters` are in the notify's total order. */
    uint32_t n = atomic_exchange_explicit(parked, 0u, memory_order_seq_cst);
#ifdef SL_MUTANT_SHM_PARKED_KEPT
    n = 0; /* planted bug: a dead process's parked threads stay counted */
#endif
    uint32_t w = atomic_load_explicit(&ev->waiters, memory_order_seq_cst);
    while (n && w && !atomic_compare_exchange_weak_explicit(&ev->waiters, &w, w - (n < w ? n : w),
                                                            memory_order_seq_cst,
                                                            memory_order_seq_cst)) {
    }
}

/* A record's in-flight marks: the count (or SL_SPSC's flag) and the lanes. */
static void clear_marks(shm_rec *r)
{
    /* Relaxed: the owner's release store of 0 that follows orders them. */
    atomic_store_explicit(&r->marks, 0u, memory_order_relaxed);
    for (int k = 0; k < SL__SHM_LANES; k++)
        atomic_store_explicit(&r->lanes[k], 0u, memory_order_relaxed);
}

static bool any_mark(shm_rec *r)
{
    /* seq_cst: after the caller's barrier (sl__shm_senders_in_flight); an
     * acquire of the unmark's release too. */
    bool marked = atomic_load_explicit(&r->marks, memory_order_seq_cst) != 0;
#ifndef SL_MUTANT_SHM_LANES_UNREAD /* planted bug when defined: the lanes go unread */
    for (int k = 0; k < SL__SHM_LANES && !marked; k++)
        marked = atomic_load_explicit(&r->lanes[k], memory_order_seq_cst) != 0;
#endif
    return marked;
}

/* Takes record r, whose owner `seen` is dead (or whose reclaimer, `seen`
 * with OWNER_BUSY, died before it finished), for this process: BUSY, with
 * its identity, so that no other look settles r's spare entries or clears
 * r's fields meanwhile, and no new owner claims r and writes holds in its
 * name that a settle could take for the dead one's. false: another
 * process took it first. */
static bool reclaim_take(const sl_chan *ch, shm_rec *r, uint64_t seen)
{
    /* seq_cst: one reclaimer wins; the settle and the clears come after. */
    return atomic_compare_exchange_strong_explicit(&r->owner, &seen,
                                                   OWNER_BUSY | sl__shm_self_identity(ch),
                                                   memory_order_seq_cst, memory_order_relaxed);
}

/* Frees record r, taken by reclaim_take: its marks stop counting, the
 * owner's parked threads stop counting as waiters; the roles it held, for
 * the caller's decision (reclaim_all). Every clear is a store of 0 or an
 * exchange with 0, so a reclaim finished by another process leaves the
 * record as one that ran through would; only a parked count the dead
 * reclaimer had taken out but not yet subtracted stays in `waiters` (a
 * wake for nobody now and then, never a lost one), and the roles it had
 * cleared are decided by the next look (look_for_the_gone). */
static uint32_t reclaim_finish(sl_chan *ch, shm_rec *r)
{
    SL_FI(); /* busy, nothing cleared */
#ifndef SL_MUTANT_SHM_DEAD_MARKS_COUNT
    clear_marks(r);
#endif
    discount(&ch->not_empty, &r->parked[0]);
    discount(&ch->not_full, &r->parked[1]);
    SL_FI(); /* counts cleared, the roles not yet */
    /* Relaxed: the decision that follows is this thread's (its reads come
     * after the clear); the owner's release below orders it for a new owner. */
    uint32_t was = atomic_exchange_explicit(&r->roles, 0u, memory_order_relaxed);
    /* Release: the clears before a new owner's claim. */
    atomic_store_explicit(&r->owner, 0, memory_order_release);
    return was;
}

/* The spare entries (SL_MPMC's swap form) that the dead owners in `dead`
 * held (their pushes, and their pops over 256 bytes), settled
 * (sl__mpmc_settle_spares); the records still named by one. The caller
 * holds every record in `dead` (reclaim_take). */
static uint64_t settle_spares(sl_chan *ch, uint64_t dead)
{
    return ch->flavor == SL__MPMC_SHARED ? sl__mpmc_settle_spares(&ch->geom.mpmc, dead) : 0;
}

/* Reclaims the records in `dead`, each dead as its word in owners[] says:
 * takes them, settles the spare entries they name, then frees each one no
 * entry names any more, and gives the others back to the next look (their
 * owner word as it was: still dead) — freed, a new owner's holds would be
 * taken for the dead one's. Taking before settling is what makes the
 * settle's decisions hold: a look that settled a record it did not hold
 * could be preempted between its reading of a held word and its CAS,
 * while another look settled and freed the record and a new owner
 * wrote the same word again (layout version 13; docs/guarantees.md,
 * "Settling under the record").
 *
 * Whoever frees a record decides whether it held the last of a role, as a
 * handle's own free does (sl__shm_drop_record): every reclaim comes here, the
 * look's, a claim's that found every record held, and a closed-check's,
 * and a role cleared without the decision would wait for the next look, a
 * look period on, or two after the death when that look ran while this
 * reclaim held the record with its roles not yet cleared (found by
 * review). Closing here is safe under claim_lock: sl_chan_close only sets
 * `closed` and wakes, it never claims. */
static void reclaim_all(sl_chan *ch, const uint64_t *owners, uint64_t dead)
{
    shm_rec *rs = records(ch);
    uint64_t taken = 0;
#ifdef SL_MUTANT_SHM_SETTLE_UNHELD
    /* Planted bug: the spares settled before the records are taken. */
    uint64_t named = settle_spares(ch, dead);
#endif
    for (int i = 0; i < SHM_RECS; i++)
        if (((dead >> i) & 1) && reclaim_take(ch, &rs[i], owners[i]))
            taken |= (uint64_t)1 << i;
    if (!taken)
        return;
    SL_FI(); /* taken, their spares not yet settled */
#ifndef SL_MUTANT_SHM_SETTLE_UNHELD
    uint64_t named = settle_spares(ch, taken);
#endif
    uint32_t freed = 0;
    for (int i = 0; i < SHM_RECS; i++) {
        if (!((taken >> i) & 1))
            continue;
        if ((named >> i) & 1)
            /* Release: as the free's; the next look takes it from here. */
            atomic_store_explicit(&rs[i].owner, owners[i], memory_order_release);
        else
            freed |= reclaim_finish(ch, &rs[i]);
    }
#ifdef SL_MUTANT_SHM_RECLAIM_UNDECIDED
    freed = 0; /* planted bug: the roles a reclaim cleared wait for the next look */
#endif
    /* Relaxed: only the roles registered (a process that died between its
     * record's bit and its note_registration never registered); a
     * registration missed here is the next look's. */
    uint32_t ever = atomic_load_explicit(&control(ch)->roles_ever, memory_order_relaxed);
    close_if_gone(ch, freed & ever & ROLES);
}

/* One record's reclaim, its spares settled first. */
static void reclaim(sl_chan *ch, shm_rec *r, uint64_t seen)
{
    uint64_t owners[SHM_RECS] = {0};
    int i = (int)(r - records(ch));
    owners[i] = seen;
    reclaim_all(ch, owners, (uint64_t)1 << i);
}

/* A free record for `self`, with `reclaim` reclaiming dead owners' on a
 * second pass; -1 when all SHM_RECS are held (by living processes, as far
 * as the passes looked). */
static int claim_record(sl_chan *ch, uint64_t self, bool reclaim_dead)
{
    shm_rec *rs = records(ch);
    for (int pass = 0; pass < 1 + reclaim_dead; pass++)
        for (int i = 0; i < SHM_RECS; i++) {
            uint64_t o = atomic_load_explicit(&rs[i].owner, memory_order_acquire);
            if (pass == 1 && o != 0 && sl__shm_owner_dead(ch, o))
                reclaim(ch, &rs[i], o), o = atomic_load_explicit(&rs[i].owner, memory_order_acquire);
            /* seq_cst: the claim before this sender's mark and closed-check. */
            if (o == 0 && atomic_compare_exchange_strong_explicit(
                              &rs[i].owner, &o, self, memory_order_seq_cst, memory_order_relaxed))
                return i;
        }
    return -1;
}

/* The claim, under claim_lock. With every record held by a living handle
 * the handle stays without one (rec -1, holds of spares named by nobody) and
 * the next call tries again; its reads of /proc for dead owners, at most
 * once a look period while it is refused (a try_send loop would otherwise
 * read /proc 64 times a try). */
static int claim_locked(sl_chan *ch)
{
    if (sl__shm_claimed_here(ch))
        return ch->shm.rec;
    unsigned gen = atomic_load_explicit(&sl__shm_gen, memory_order_relaxed);
    uint64_t now = sl__now_ns();
    bool reclaim = ch->shm.refused_gen != gen || now - ch->shm.refused_at >= SHM_LOOK_NS;
    int i = claim_record(ch, sl__shm_self_identity(ch), reclaim);
    ch->shm.rec = i;
    ch->shm.mark = i < 0 ? NULL : &records(ch)[i].marks;
    if (i >= 0)
        sl__shm_lanes_reset(&ch->shm); /* a fork()ed child's copy names its parent's threads */
    if (ch->flavor == SL__MPMC_SHARED) /* the name its holds of spares go by */
        atomic_store_explicit(&ch->geom.mpmc.holder, i < 0 ? SL__HELD_NOBODY : (uint32_t)i,
                              memory_order_relaxed); /* gen's release orders it */
    if (i < 0) {
        if (reclaim)
            ch->shm.refused_at = now, ch->shm.refused_gen = gen;
        return -1;
    }
    /* Release: mark and rec before gen (sl__shm_claimed_here). */
    atomic_store_explicit(&ch->shm.gen, gen, memory_order_release);
    return i;
}

/* The handle's record in this process, claimed if need be; -1 while every
 * record is held. (ch->shm.rec is read outside the lock only once
 * sl__shm_claimed_here says so: a refused claim writes it again.) */
static int claimed_record(sl_chan *ch)
{
    if (sl__shm_claimed_here(ch))
        return ch->shm.rec;
    pthread_mutex_lock(&claim_lock);
    int rec = claim_locked(ch);
    pthread_mutex_unlock(&claim_lock);
    return rec;
}

SL_ATOMIC(uint32_t) *sl__shm_claim_mark(sl_chan *ch)
{
    int rec = claimed_record(ch);
#ifdef SL_MUTANT_SHM_SEND_WITHOUT_RECORD
    if (rec < 0)
        return &ch->in_flight[0].n; /* planted bug: an anonymous mark, the send goes ahead */
#endif
    return rec < 0 ? NULL : &records(ch)[rec].marks;
}

SL_ATOMIC(uint32_t) *sl__shm_claim_lane(sl_chan *ch)
{
    SL_ATOMIC(uint32_t) *count = sl__shm_claim_mark(ch);
    if (!count || !sl__shm_claimed_here(ch) || ch->shm.rec < 0)
        return count; /* none; or the planted bug's anonymous mark */
    int lane = sl__shm_lane_take(&ch->shm);
    SL_ATOMIC(uint32_t) *word = lane < 0 ? count : &records(ch)[ch->shm.rec].lanes[lane];
    /* Relaxed: `claim` changes only in this process's claims (claim_locked). */
    sl__shm_lane_of_thread = (sl__shm_lane_cache){
        ch, atomic_load_explicit(&ch->shm.claim, memory_order_relaxed), word};
    return word;
}

/* Whether a handle registered in `role` holds its record (a living or not
 * yet found dead process's). */
static bool role_left(const sl_chan *ch, uint32_t role)
{
    const shm_rec *rs = records(ch);
    for (int i = 0; i < SHM_RECS; i++)
        /* seq_cst: after this caller's own clear and its load of
         * roles_ever, before its CAS of it (decide_gone). */
        if (atomic_load_explicit(&rs[i].roles, memory_order_seq_cst) & role)
            return true;
    return false;
}

/* Whether no record has `role`, decided against registrations: true only
 * when roles_ever did not change from before the records' reading to the
 * CAS that sets EVER_CLOSING (a registration moves it after setting its
 * record's bit, register_role). A check and a close alone let a
 * registration land between them and be told SL_OK by a channel about to
 * close under it (found by review). */
static bool decide_gone(sl_chan *ch, uint32_t role)
{
#ifdef SL_MUTANT_SHM_GONE_WITHOUT_CAS /* planted bug: the look at the records decides alone */
    bool gone = !role_left(ch, role);
    SL_FI();
    return gone;
#endif
    SL_ATOMIC(uint32_t) *ever = &control(ch)->roles_ever;
    /* seq_cst: before role_left's loads, in the total order. */
    uint32_t seen = atomic_load_explicit(ever, memory_order_seq_cst);
    while (!role_left(ch, role)) {
        SL_FI(); /* the records read, the decision not yet taken */
        /* seq_cst: a registration's move of the word comes after its
         * record's bit; a failure reloads `seen` and the records again. */
        if (atomic_compare_exchange_strong_explicit(ever, &seen, seen | EVER_CLOSING,
                                                    memory_order_seq_cst, memory_order_seq_cst))
            return true;
    }
    return false;
}

/* "Every registered X is gone": closes the channel when, for a role in
 * `gone` (roles the caller saw a handle of leave, or saw no living handle
 * of), no record has that role any more. The one check for both sides. */
static void close_if_gone(sl_chan *ch, uint32_t gone)
{
#ifdef SL_MUTANT_SHM_RECEIVERS_IGNORED
    gone &= ~ROLE_RECEIVER; /* planted bug: the last receiver's going closes nothing */
#endif
    for (uint32_t role = ROLE_SENDER; role <= ROLE_RECEIVER; role <<= 1)
        if ((gone & role) && decide_gone(ch, role)) {
            SL_FI(); /* decided, not yet closed */
            sl_chan_close(ch);
            return;
        }
}

/* sl_chan_free's part: the record goes back; a registered sender or
 * receiver that was the last of its role closes the channel. */
void sl__shm_drop_record(sl_chan *ch)
{
    if (!sl__shm_claimed_here(ch) || ch->shm.rec < 0)
        return; /* none, or the parent's (a fork()ed child's copy of the handle) */
    shm_rec *r = &records(ch)[ch->shm.rec];
    uint32_t was = atomic_exchange_explicit(&r->roles, 0u, memory_order_seq_cst);
    clear_marks(r); /* the caller's threads are done */
    atomic_store_explicit(&r->parked[0], 0u, memory_order_relaxed); /* and wait no more */
    atomic_store_explicit(&r->parked[1], 0u, memory_order_relaxed);
    /* Release: the clears before a new owner's claim. */
    atomic_store_explicit(&r->owner, 0, memory_order_release);
    close_if_gone(ch, was & ROLES);
}

/* Sets role's bit in roles_ever and moves its count (decide_gone); the
 * word it replaced. */
static uint32_t note_registration(sl_chan *ch, uint32_t role)
{
    SL_ATOMIC(uint32_t) *ever = &control(ch)->roles_ever;
    uint32_t old = atomic_load_explicit(ever, memory_order_relaxed);
    /* seq_cst: after the record's bit, before the closed load; the count
     * wraps inside its bits, never into EVER_CLOSING. */
    while (!atomic_compare_exchange_weak_explicit(
        ever, &old, (old & ~EVER_COUNT) | role | ((old + EVER_UNIT) & EVER_COUNT),
        memory_order_seq_cst, memory_order_relaxed)) {
    }
    return old;
}

/* Registers ch's handle in `role`: its record claimed, the role's bit set,
 * then the channel's closed state read (shm.h: sl_chan_shm_sender). */
static sl_status register_role(sl_chan *ch, uint32_t role)
{
    if (!ch || !sl__chan_is_shared(ch))
        return SL_EINVAL;
    int rec = claimed_record(ch);
    if (rec < 0)
        return SL_ENOMEM;
    shm_rec *r = &records(ch)[rec];
    /* seq_cst: registered before roles_ever moves (decide_gone: the last
     * of the role's free sees this, or this sees its decision). */
    atomic_fetch_or_explicit(&r->roles, role, memory_order_seq_cst);
    if (note_registration(ch, role) & EVER_CLOSING) {
        sl_chan_close(ch); /* decided before us: its closer may not have got there */
        return SL_CLOSED;
    }
    return atomic_load_explicit(&ch->closed, memory_order_seq_cst) ? SL_CLOSED : SL_OK;
}

SL_API sl_status sl_chan_shm_sender(sl_chan *ch) { return register_role(ch, ROLE_SENDER); }

SL_API sl_status sl_chan_shm_receiver(sl_chan *ch) { return register_role(ch, ROLE_RECEIVER); }

bool sl__shm_senders_in_flight(sl_chan *ch)
{
    /* The caller's load of `closed` before the marks' loads: the senders'
     * marks may be ordered by a compiler barrier alone (sl__shm_fence). */
    sl__event_heavy_fence_shared();
    shm_rec *rs = records(ch);
    for (int i = 0; i < SHM_RECS; i++) {
        if (!any_mark(&rs[i]))
            continue;
        uint64_t o = atomic_load_explicit(&rs[i].owner, memory_order_acquire);
#ifdef SL_MUTANT_SHM_DEAD_MARKS_COUNT
        return true; /* planted bug: a dead sender's mark counts as in flight */
#endif
        if (o == 0 || !sl__shm_owner_dead(ch, o))
            return true; /* a living sender's, or one a living reclaimer is clearing */
        reclaim(ch, &rs[i], o); /* dead: what it pushed is in the queue already */
    }
    return false;
}

/* The look for dead owners: reclaims their records (their marks stop
 * counting, their parked threads stop counting as waiters), and closes the
 * channel when a role was registered and no living handle of it is left. */
static void look_for_the_gone(sl_chan *ch)
{
    shm_rec *rs = records(ch);
    uint32_t living = 0;
    uint64_t owners[SHM_RECS], dead = 0;
    for (int i = 0; i < SHM_RECS; i++) {
        owners[i] = atomic_load_explicit(&rs[i].owner, memory_order_acquire);
        if (owners[i] == 0)
            continue;
        /* A dead owner's, or a dead reclaimer's: finish it. */
        if (sl__shm_owner_dead(ch, owners[i]))
            dead |= (uint64_t)1 << i;
        else if (!reclaiming(owners[i]))
            living |= atomic_load_explicit(&rs[i].roles, memory_order_relaxed);
    }
    /* The spares of all the dead at once: one may wait for another's. The
     * roles of the records it frees are decided there; those below are the
     * rest, roles whose last record went without a decision (its process,
     * or its reclaimer, killed between the clear and the decision). */
    if (dead)
        reclaim_all(ch, owners, dead);
    /* Relaxed: a registration the look misses is found by the next one. */
    uint32_t ever = atomic_load_explicit(&control(ch)->roles_ever, memory_order_relaxed);
    close_if_gone(ch, ever & ROLES & ~living);
}

/* The look, if it is due at `now` and this caller wins it; the instant
 * of the next one. */
static uint64_t look_if_due(sl_chan *ch, uint64_t now)
{
    shm_ctl *c = control(ch);
    uint64_t at = atomic_load_explicit(&c->next_look, memory_order_relaxed);
    if (now < at && at - now <= SHM_LOOK_NS)
        return at; /* not due (a time further than a period is a peer's garbage) */
#ifndef SL_MUTANT_SHM_FOREIGN_LOOKS /* planted bug when defined: a foreign look takes the turn */
    /* A look here would judge nobody (sl__shm_owner_dead), yet move the next one a
     * period on for every process: a foreign poller that kept winning would
     * keep a native waiter from ever finding a death (found by review). */
    if (!sl__shm_native_here(ch))
        return now + SHM_LOOK_NS;
#endif
    /* Relaxed: only who looks is decided here; the look reads with its own orders. */
    if (atomic_compare_exchange_strong_explicit(&c->next_look, &at, now + SHM_LOOK_NS,
                                                memory_order_relaxed, memory_order_relaxed))
        look_for_the_gone(ch);
    return now + SHM_LOOK_NS;
}

/* The look, if one is wanted: for registered roles, for waiters counted
 * that may be dead ones, or (`starved`) for spares that dead senders may
 * hold; otherwise it reads no clock. Relaxed: a look missed now is made by
 * the next empty receive, full send or waiter. */
static void look_if_wanted(sl_chan *ch, bool starved)
{
    if (atomic_load_explicit(&ch->closed, memory_order_relaxed))
        return;
    if (starved || atomic_load_explicit(&control(ch)->roles_ever, memory_order_relaxed) ||
        atomic_load_explicit(&ch->not_empty.waiters, memory_order_relaxed) ||
        atomic_load_explicit(&ch->not_full.waiters, memory_order_relaxed))
        (void)look_if_due(ch, sl__now_ns());
}

void sl__shm_on_stuck(sl_chan *ch) { look_if_wanted(ch, false); }

void sl__shm_on_full(sl_chan *ch)
{
    /* Relaxed: a raised flag stays raised until a give-back, so a look
     * missed now is made by the next full send. Only here: an empty
     * receive does not read the producers' line the flag sits on. */
    SL_ATOMIC(uint32_t) *starved =
        ch->flavor == SL__MPMC_SHARED ? ch->geom.mpmc.starved : NULL; /* swap form only */
    look_if_wanted(ch, starved && atomic_load_explicit(starved, memory_order_relaxed));
}

SL_ATOMIC(uint32_t) *sl__shm_park_account(sl_chan *ch, const sl_event *ev)
{
    int rec = claimed_record(ch);
    if (rec < 0)
        return NULL; /* every record held: a death here stays counted (shm.h) */
    return &records(ch)[rec].parked[ev == &ch->not_full];
}

uint64_t sl__shm_ready_at(const sl_chan *ch)
{
    sl_chan *c = (sl_chan *)(uintptr_t)ch; /* a look may close it */
    /* Relaxed: a stale answer costs one period of latency, never a wake-up.
     * `closed` too: `drained` alone, a peer's garbage on an open channel,
     * would end every waiter's periodic look in this process. */
    if (atomic_load_explicit(&ch->drained, memory_order_relaxed) &&
        atomic_load_explicit(&ch->closed, memory_order_relaxed))
        return SL_FOREVER; /* closed and drained: nobody waits */
#ifdef SL_MUTANT_SHM_NO_LOOK
    return SL_FOREVER; /* planted bug: a waiter sleeps until a notify, however long */
#endif
    /* Every waiter looks again each period: for a dead sender's mark after
     * a close, for a notify lost with a process killed between its epoch
     * bump and its futex wake, and for dead owners' records: their
     * registered senders and receivers and their parked threads
     * (docs/guarantees.md). */
    uint64_t now = sl__now_ns();
    if (atomic_load_explicit(&ch->closed, memory_order_relaxed))
        return now + SHM_LOOK_NS;
    return look_if_due(c, now);
}
