/*
 * channels/shm.c — channels in shared-memory segments (sluice/shm.h): the
 * segment's layout, its creation and validation, the barrier mode, and the
 * mapping that puts a process-local handle in front of it.
 *
 * The records in the segment, which let a process's death be survived
 * (claims, reclaims of dead owners, "every sender is gone", the periodic
 * look), are channels/shm_owner.c, and their owner words (identities, who
 * is dead) channels/shm_identity.c; the offsets and calls the three share
 * are channels/shm_impl.h.
 *
 * The handle is a struct sl_chan whose shared part (from `hdr` on,
 * chan_impl.h) IS the segment: the segment is mapped at
 * (char *)ch + SL__CHAN_SHARED_AT, and the process-local part sits in a
 * private anonymous page just below it. So the façade reaches `closed`, the
 * eventcounts, the in-flight marks and the queue's counters at the same
 * offsets as in an in-process channel — no pointer to follow, no test of
 * which kind of channel it is — and the shared flavours' adapters
 * (chan_flavors.h) take the queue's geometry from the local part, filled in
 * here from values validated once, never from the segment.
 *
 * The layout (docs/shm-layout.md): the shared part of struct sl_chan, whose
 * offsets the assertions below pin, then from SHM_DATA_AT the queue's
 * storage: SL_SPSC's slots; SL_MPMC's used ring, then (messages over 8
 * bytes, the swap form) its spare table and capacity + spares slots. A ring
 * of cells has one_lap cells (the power of two above the capacity), not
 * just capacity: a position read from a corrupted counter, masked by
 * one_lap - 1, then still lands on a cell.
 */
#include "chan_impl.h"
#include "shm_impl.h"
#include "internal/testing.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/sysops.h"
#include "sluice/shm.h"

#define SHM_MAGIC 0x4D48534349554C53ull /* "SLUICSHM", little-endian */
#define SHM_VERSION 15u
#define SHM_CAP_MAX ((uint64_t)1 << 40)

/* The layout's offsets, pinned (AT and the SHM_*_AT: channels/shm_impl.h). */
_Static_assert(SL__CHAN_SHARED_AT % SL_CACHELINE == 0, "the shared part starts a line");
_Static_assert(AT(hdr.magic) == 0 && AT(hdr.version) == 8 && AT(hdr.flavor) == 12 &&
                   AT(hdr.elem_size) == 16 && AT(hdr.capacity) == 24 && AT(hdr.size) == 32,
               "shm layout: header");
_Static_assert(AT(closed) == 40 && AT(not_empty) == 44 && AT(not_full) == 52 &&
                   AT(selectors) == 60 && AT(drained) == 64,
               "shm layout: control words");
_Static_assert(AT(in_flight) == 128 && sizeof(((sl_chan *)0)->in_flight[0]) == 64,
               "shm layout: in-flight marks (unused since version 10: every send has a record)");
_Static_assert(AT(q.spsc.prod.index) == 1152 && AT(q.spsc.prod.peer_cache) == 1160 &&
                   AT(q.spsc.cons.index) == 1216 && AT(q.spsc.cons.peer_cache) == 1224,
               "shm layout: SL_SPSC counters");
/* free_head and free_tail (1160, 1224) are unused in a segment since layout
 * version 9: a shared SL_MPMC has no indexed form. */
_Static_assert(AT(q.mpmc.tail) == 1152 && AT(q.mpmc.free_head) == 1160 &&
                   AT(q.mpmc.head) == 1216 && AT(q.mpmc.free_tail) == 1224,
               "shm layout: SL_MPMC counters");
/* The swap form's starved word sits on the producers' line, in the raw
 * queue's own field: the pointer and sizes before it (1168..1191) are
 * unused in a segment (the handle's view has its own, validated). */
_Static_assert(AT(q.mpmc.starved) == 1192, "shm layout: SL_MPMC starved word");
_Static_assert(AT(q.spsc) + sizeof(sl_spsc) <= SHM_RECS_AT &&
                   AT(q.mpmc) + sizeof(sl_mpmc) <= SHM_RECS_AT,
               "shm layout: the counters end before the storage");

/* A segment's geometry, computed here from (flavour, message size,
 * capacity) alone: where the storage is, and how large the segment must be. */
typedef struct geometry {
    sl_flavor flavor;
    size_t elem_size;
    size_t capacity;
    size_t storage;  /* SL_SPSC: slots (a power of two); SL_MPMC: one_lap */
    size_t spares_at; /* SL_MPMC over 8 bytes (the swap form): the spare table; 0 otherwise */
    size_t spares;   /* its entries: shm_spares() */
    size_t slot_count; /* slots: capacity + spares (swap form); 0 direct */
    size_t slots_at; /* the slots; 0 for SL_MPMC direct */
    size_t size;     /* bytes the segment needs */
} geometry;

static size_t line_up(size_t n) { return (n + SL_CACHELINE - 1) & ~(size_t)(SL_CACHELINE - 1); }

/* The swap form's spare entries: one per cell up to SL__MPMC_SWAP_MAX bytes
 * a message; above, at most SHM_LARGE_SPARES, so that a channel of large
 * messages does not double its segment (a push finding every spare held by
 * pushes in progress says SL_FULL, as at any size: docs/guarantees.md). */
#define SHM_LARGE_SPARES 64u

static size_t shm_spares(uint64_t elem_size, uint64_t capacity)
{
    if (elem_size <= SL__MPMC_SWAP_MAX || capacity <= SHM_LARGE_SPARES)
        return (size_t)capacity;
    return SHM_LARGE_SPARES;
}

/* false for a geometry sluice does not make: the caller's mismatch, or a
 * segment header that no creator wrote. The limits keep every size below
 * 2^60, so nothing here overflows. */
static bool geometry_of(geometry *g, uint64_t flavor, uint64_t elem_size, uint64_t capacity)
{
    if ((flavor != SL_SPSC && flavor != SL_MPMC) || elem_size == 0 || elem_size > SL_ELEM_MAX ||
        capacity == 0 || capacity > SHM_CAP_MAX)
        return false;
    *g = (geometry){.flavor = (sl_flavor)flavor, .elem_size = elem_size, .capacity = capacity};
    if (flavor == SL_SPSC) {
        g->storage = sl__spsc_storage(elem_size, capacity);
        g->slots_at = SHM_DATA_AT;
        g->size = g->slots_at + g->storage * elem_size;
        return true;
    }
    g->storage = sl__cellring_lap(capacity);
    g->size = SHM_DATA_AT + g->storage * sizeof(sl_mpmc_cell);
    if (elem_size > sizeof(uint64_t)) {
        /* The swap form at every size: whole words per slot; a held entry
         * names a slot in 28 bits (cellring.h). */
        g->spares = shm_spares(elem_size, capacity);
        if (capacity + g->spares > SL__HELD_SLOTS_MAX)
            return false;
        g->spares_at = line_up(g->size);
        g->slots_at = line_up(g->spares_at + g->spares * sizeof(uint64_t));
        g->slot_count = capacity + g->spares;
        g->size = g->slots_at + g->slot_count * sl__mpmc_swap_stride(elem_size);
    }
    return true;
}

/* The handle's local part, from g alone: the geometry the adapters use. */
static void fill_local(sl_chan *ch, const geometry *g)
{
    unsigned char *seg = (unsigned char *)ch + SL__CHAN_SHARED_AT;
    ch->flavor = g->flavor == SL_SPSC ? SL__SPSC_SHARED : SL__MPMC_SHARED;
    ch->elem_size = g->elem_size;
    ch->capacity = g->capacity;
    ch->drop = NULL;
    ch->drop_ctx = NULL;
    if (g->flavor == SL_SPSC) {
        ch->geom.spsc = (sl__spsc_geom){seg + g->slots_at, g->storage - 1, g->capacity,
                                        g->elem_size};
        return;
    }
    sl_mpmc *m = &ch->q.mpmc;
    sl__mpmc_view *v = &ch->geom.mpmc;
    memset(v, 0, sizeof *v);
    v->used = (sl__cellring){(sl_mpmc_cell *)(seg + SHM_DATA_AT), &m->head, &m->tail,
                             g->storage, g->capacity};
    v->elem_size = g->elem_size;
    if (g->slots_at) {
        v->slots = seg + g->slots_at;
        v->slot_count = g->slot_count;
    }
    if (g->spares_at) {
        v->spares = (SL_ATOMIC(uint64_t) *)(void *)(seg + g->spares_at);
        v->spare_count = g->spares;
        v->spare_mask = sl__cellring_lap(g->spares) - 1;
        v->starved = &m->starved;
        v->wake = &ch->not_full;
    }
    /* Relaxed: until the handle claims a record (sl__shm_claim_mark). */
    atomic_store_explicit(&v->holder, SL__HELD_NOBODY, memory_order_relaxed);
}

/* ---- the select bell (docs/shm-layout.md, "The select bell") -------------
 * Selectors in every process that has the segment mapped wait on it (with
 * futex_waitv beside their process's bell, select.c); every send, receive
 * and close of the channel rings it while `selectors` is not zero
 * (sl__chan_ring_watchers), with select's armed-bell protocol. A peer's
 * garbage in its words costs wake-ups: a set arm or a raised waiter count
 * makes a ring issue a futex wake; a cleared arm or shared mark delays a
 * selector until its periodic look (sl__shm_ready_at). */
_Static_assert(SHM_BELL_AT >= SHM_CTL_AT + 16 && SHM_BELL_AT % 4 == 0 &&
                   SHM_BELL_AT + sizeof(sl__shm_bell) <= AT(in_flight),
               "shm layout: the select bell sits after the control words, before the marks");
_Static_assert(offsetof(sl__shm_bell, ev.epoch) == 0 && offsetof(sl__shm_bell, ev.waiters) == 4 &&
                   offsetof(sl__shm_bell, armed) == 8,
               "shm layout: the select bell's words");
_Static_assert(SL__EVENT_SET_POLL_NS == (uint64_t)SL_SHM_LOOK_MS * 1000 * 1000,
               "a selector without futex_waitv looks as often as a shared channel's waiter");

sl__shm_bell *sl__shm_bell_of(sl_chan *ch)
{
    return (sl__shm_bell *)((unsigned char *)ch + SL__CHAN_SHARED_AT + SHM_BELL_AT);
}

void sl__shm_ring(sl_chan *ch)
{
#ifdef SL_MUTANT_SHM_SELECT_NO_BELL
    return; /* planted bug: a change never rings the segment's bell */
#endif
    sl__shm_bell *b = sl__shm_bell_of(ch);
    sl__bell_ring(&b->ev, &b->armed);
}

/* The creator's initial state of the shared part (a fresh segment reads as
 * zeros): the header, the eventcounts marked shared, the queue empty. The
 * magic goes last, released: an opener that sees it sees the rest. */
static void init_shared(sl_chan *ch, const geometry *g)
{
    ch->hdr.version = SHM_VERSION;
    ch->hdr.flavor = (uint32_t)g->flavor;
    ch->hdr.elem_size = g->elem_size;
    ch->hdr.capacity = g->capacity;
    ch->hdr.size = g->size;
    sl__event_init_shared(&ch->not_empty);
    sl__event_init_shared(&ch->not_full);
    sl__event_init_shared(&sl__shm_bell_of(ch)->ev); /* not armed: zero */
    if (g->flavor == SL_MPMC) {
        sl__mpmc_view *v = &ch->geom.mpmc;
        sl__cellring_init(v->used.cells, g->capacity, 0, false);
        if (v->spares)
            sl__mpmc_swap_fill(v->used.cells, g->capacity, v->spares, g->spares);
    }
    /* Release: everything above before an opener's acquire of the magic. */
    atomic_store_explicit(&ch->hdr.magic, SHM_MAGIC, memory_order_release);
}

/* ---- the barrier mode -------------------------------------------------------
 * docs/guarantees.md, "Across processes", has the argument; the word is
 * docs/shm-layout.md's "The barrier mode" (offset 84). The creator writes it
 * before the magic, and it never changes:
 *   SHM_ASYMMETRIC  the creator registered for membarrier's global expedited
 *                   command: every waiter, in whatever process, issues
 *                   MEMBARRIER_CMD_GLOBAL_EXPEDITED, so a registered
 *                   process's fast side needs only a compiler barrier;
 *   SHM_FENCED      the creator could not register (old kernel, seccomp):
 *                   every fast side fences, every waiter fences.
 * A process that opens an asymmetric segment without having registered
 * fences on its own fast side and must still issue the global barrier as a
 * waiter; one that cannot issue it is refused (SL_EINVAL): it could not keep
 * the others' fast sides correct. */
#define SHM_FENCED 0u
#define SHM_ASYMMETRIC 1u

SL_ATOMIC(int) sl__shm_light;
static SL_ATOMIC(int) shm_registered; /* this process registered (global expedited) */

/* Once per process, before its first shared channel: registration. */
static void register_global(void)
{
    if (sl__membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) != 0)
        return; /* fences on this process's fast sides, from the start */
    atomic_store_explicit(&shm_registered, 1, memory_order_relaxed);
    atomic_store_explicit(&sl__shm_light, 1, memory_order_relaxed);
}

static pthread_once_t register_once = PTHREAD_ONCE_INIT;

/* The mode a new segment gets from this process. */
static uint32_t creator_mode(void)
{
    pthread_once(&register_once, register_global);
    if (!atomic_load_explicit(&shm_registered, memory_order_relaxed))
        return SHM_FENCED;
    atomic_store_explicit(&sl__event_global, 1, memory_order_relaxed);
    return SHM_ASYMMETRIC;
}

/* An opener's part, before its handle exists: false when this process cannot
 * take part in a segment of that mode. Each decision only adds barriers. */
static bool join_mode(uint32_t mode)
{
    pthread_once(&register_once, register_global);
    if (mode == SHM_FENCED) {
        /* This process's fast sides fence from now on, on every segment:
         * this one's waiters rely on them. */
        atomic_store_explicit(&sl__shm_light, 0, memory_order_relaxed);
        return true;
    }
    if (mode != SHM_ASYMMETRIC)
        return false;
    /* Not registered: its own sides fence (sl__shm_light is 0), but as a
     * waiter it must still force the others' barrier: it must be able to. */
    if (!atomic_load_explicit(&shm_registered, memory_order_relaxed) &&
        sl__membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) != 0)
        return false;
    atomic_store_explicit(&sl__event_global, 1, memory_order_relaxed);
    return true;
}

/* A fork()ed child inherits the flags but maybe not the kernel's
 * registration: it registers again, or fences from now on (it has run
 * nothing yet). */
void sl__shm_register_again(void)
{
    if (atomic_load_explicit(&shm_registered, memory_order_relaxed) &&
        sl__membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) != 0)
        atomic_store_explicit(&sl__shm_light, 0, memory_order_relaxed);
}

static size_t page_up(size_t n, size_t page) { return (n + page - 1) & ~(page - 1); }

/* Maps `size` bytes of fd behind a private page for the handle's local
 * part; the handle owns fd from here on (also on failure: closed). */
static sl_status map_handle(sl_chan **out, int fd, size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t local = page_up(SL__CHAN_SHARED_AT, page);
    size_t len = local + page_up(size, page);
    unsigned char *base = mmap(NULL, len, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        close(fd);
        return SL_ENOMEM;
    }
    if (mmap(base + local, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
        MAP_FAILED) {
        int e = errno;
        munmap(base, len);
        close(fd);
        errno = e;
        return e == ENOMEM ? SL_ENOMEM : SL_EINVAL;
    }
    sl_chan *ch = (sl_chan *)(base + local - SL__CHAN_SHARED_AT);
    /* gen 0: no record yet; the first send claims one (sl__shm_claim_mark). */
    ch->shm.base = base;
    ch->shm.len = len;
    ch->shm.fd = fd;
    ch->shm.mark = NULL;
    atomic_init(&ch->shm.gen, 0u);
    ch->shm.rec = -1;
    ch->shm.refused_gen = 0; /* never refused */
    sl__shm_watch_forks();
    *out = ch;
    return SL_OK;
}

void sl__shm_release(sl_chan *ch)
{
    sl__shm_drop_record(ch);
    sl__shm_map m = ch->shm; /* the handle goes with the mapping */
    close(m.fd);
    munmap(m.base, m.len);
}

/* A failed system call's status: out of a resource, or the caller's. */
static sl_status errno_status(void)
{
    return errno == ENOMEM || errno == ENOSPC || errno == EMFILE || errno == ENFILE
               ? SL_ENOMEM
               : SL_EINVAL;
}

/* The segment's pages reserved now: a tmpfs that is full (a container's
 * small /dev/shm) or out of memory refuses the creation (ENOSPC, ENOMEM)
 * instead of raising SIGBUS in whichever process first touches a page it
 * cannot have, in the middle of a send. A file system without fallocate
 * is left as it was. */
static bool reserve_pages(int fd, size_t size)
{
#ifdef SL_MUTANT_SHM_PAGES_UNRESERVED /* planted bug: pages found missing at first touch */
    return (void)fd, (void)size, true;
#endif
    int r;
    while ((r = fallocate(fd, 0, 0, (off_t)size)) != 0 && errno == EINTR) {
    }
    return r == 0 || errno == EOPNOTSUPP || errno == ENOSYS;
}

/* Whether name has the one form shm.h admits: "/" and 1 to 254 characters
 * with no other "/". glibc's shm_open takes a name without the leading
 * "/" as well (POSIX leaves it to the implementation), so without this
 * check such a name worked here and meant something else elsewhere. Sets
 * errno (EINVAL) when it refuses. */
static bool name_ok(const char *name)
{
    size_t n = name ? strnlen(name, 256) : 0;
    bool ok = n >= 2 && n <= 255 && name[0] == '/' && !memchr(name + 1, '/', n - 1);
    if (!ok)
        errno = EINVAL;
    return ok;
}

/* A new segment's descriptor: a sealable memfd, or the named object made
 * exclusively; exactly `mode` (no umask), sized. -1 on failure (errno). */
static int make_segment(const char *name, unsigned mode, size_t size)
{
    int fd = name ? shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, (mode_t)mode)
                  : memfd_create("sluice-chan", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -1;
    bool ok = fchmod(fd, (mode_t)mode) == 0 && ftruncate(fd, (off_t)size) == 0 &&
              reserve_pages(fd, size);
    /* A memfd cannot change size from now on: no peer can shrink it under
     * another process's mapping (SIGBUS) or grow it. */
    if (ok && !name)
        ok = fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0;
    if (!ok) {
        int e = errno;
        close(fd);
        if (name)
            shm_unlink(name);
        errno = e;
        return -1;
    }
    return fd;
}

SL_API sl_status sl_chan_shm_create(sl_chan **out, const char *name, const sl_chan_opts *opts,
                                    unsigned mode)
{
    geometry g;
    if (!out || !opts || opts->drop || (mode & ~0777u) || (name && !name_ok(name)) ||
        !geometry_of(&g, (uint64_t)opts->flavor, opts->elem_size, opts->capacity))
        return SL_EINVAL;
    int fd = make_segment(name, mode ? mode : 0600u, g.size);
    if (fd < 0)
        return errno_status();
    sl_chan *ch;
    sl_status st = map_handle(&ch, fd, g.size);
    if (st != SL_OK) {
        if (name)
            shm_unlink(name);
        return st;
    }
    fill_local(ch, &g);
    /* Relaxed: init_shared's release of the magic publishes it. */
    atomic_store_explicit(&control(ch)->barriers, creator_mode(), memory_order_relaxed);
    sl__shm_stamp_namespaces(ch);
    init_shared(ch, &g);
    *out = ch;
    return SL_OK;
}

/* The header's fields, read once from a read-only look at the segment's
 * first bytes; false when the segment is too short to hold them, or no
 * creator has finished it (no magic). */
static bool read_header(int fd, size_t file_size, sl__shm_header *h)
{
    if (file_size < SHM_DATA_AT)
        return false;
    sl__shm_header *seg = mmap(NULL, SHM_DATA_AT, PROT_READ, MAP_SHARED, fd, 0);
    if (seg == MAP_FAILED)
        return false;
    /* Acquire: pairs with the creator's release of the magic. */
    uint64_t magic = atomic_load_explicit(&seg->magic, memory_order_acquire);
    /* The rest as bytes: a peer may be writing them; they are checked. */
    memcpy((unsigned char *)h + sizeof h->magic, (unsigned char *)seg + sizeof h->magic,
           sizeof *h - sizeof h->magic);
    atomic_init(&h->magic, magic);
    munmap(seg, SHM_DATA_AT);
    return magic == SHM_MAGIC;
}

/* Validates the segment of fd (owned) against expect, and maps it. */
static sl_status open_owned(sl_chan **out, int fd, const sl_chan_opts *expect)
{
    struct stat sb;
    sl__shm_header h;
    geometry g;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < 0 ||
        !read_header(fd, (size_t)sb.st_size, &h) || h.version != SHM_VERSION ||
        h.flavor != (uint64_t)expect->flavor || h.elem_size != expect->elem_size ||
        (expect->capacity && h.capacity != expect->capacity) ||
        !geometry_of(&g, h.flavor, h.elem_size, h.capacity) || (size_t)sb.st_size < g.size) {
        close(fd);
        return SL_EINVAL;
    }
    sl_chan *ch;
    sl_status st = map_handle(&ch, fd, g.size);
    if (st != SL_OK)
        return st;
    fill_local(ch, &g); /* from g: no size or index read from the segment after this */
    /* Relaxed: written before the magic, which read_header acquired. */
    if (!join_mode(atomic_load_explicit(&control(ch)->barriers, memory_order_relaxed))) {
        sl__shm_release(ch);
        return SL_EINVAL;
    }
    *out = ch;
    return SL_OK;
}

/* Whether no holder of fd can shrink its file under this process's mapping
 * (SIGBUS on the next access): sealed against shrinking, as every memfd
 * sl_chan_shm_create makes is. A descriptor comes from a peer, which could
 * truncate any other file it passes: a memfd it did not seal, and just as
 * well a file with a name (a named object it made, or any file it can
 * write), so a name earns no exception; a named object is opened by its
 * name (sl_chan_shm_open), where sluice/shm.h says what a peer with write
 * access can do to it. */
static bool sealed_against_shrinking(int fd)
{
#ifdef SL_MUTANT_SHM_NAMED_FD_TRUSTED /* planted bug: a file with a name is mapped unsealed */
    struct stat sb;
    if (fstat(fd, &sb) == 0 && sb.st_nlink > 0)
        return true;
#endif
#ifdef SL_MUTANT_SHM_UNSEALED_FD
    return true; /* planted bug: a peer's unsealed memfd is mapped */
#endif
    int seals = fcntl(fd, F_GET_SEALS);
    return seals >= 0 && (seals & F_SEAL_SHRINK);
}

SL_API sl_status sl_chan_shm_open_fd(sl_chan **out, int fd, const sl_chan_opts *expect)
{
    if (!out || !expect || expect->drop || fd < 0)
        return SL_EINVAL;
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0)
        return errno_status();
    if (!sealed_against_shrinking(own)) {
        close(own);
        errno = EPERM;
        return SL_EINVAL;
    }
    return open_owned(out, own, expect);
}

SL_API sl_status sl_chan_shm_open(sl_chan **out, const char *name, const sl_chan_opts *expect)
{
    if (!out || !expect || !name_ok(name) || expect->drop)
        return SL_EINVAL;
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        return errno_status();
    return open_owned(out, fd, expect);
}

SL_API sl_status sl_chan_shm_unlink(const char *name)
{
    if (!name_ok(name) || shm_unlink(name) != 0)
        return SL_EINVAL;
    return SL_OK;
}

SL_API int sl_chan_shm_fd(const sl_chan *ch)
{
    return ch && sl__chan_is_shared(ch) ? ch->shm.fd : -1;
}
