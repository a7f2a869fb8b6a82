/*
 * channels/shm.c — channels in shared-memory segments (sluice/shm.h): the
 * segment's layout, its creation and validation, and the mapping that puts
 * a process-local handle in front of it.
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
 * bytes) its free ring and its slots. A ring of cells has one_lap cells (the
 * power of two above the capacity), not just capacity: a position read from
 * a corrupted counter, masked by one_lap - 1, then still lands on a cell.
 */
#include "chan_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sluice/shm.h"

#define SHM_MAGIC 0x4D48534349554C53ull /* "SLUICSHM", little-endian */
#define SHM_VERSION 1u
#define SHM_DATA_AT ((size_t)2048) /* the storage, from the segment's start */
#define SHM_CAP_MAX ((uint64_t)1 << 40)

/* Offsets in the segment, as docs/shm-layout.md gives them: a change here
 * is a new layout version. */
#define AT(field) (offsetof(struct sl_chan, field) - SL__CHAN_SHARED_AT)
_Static_assert(SL__CHAN_SHARED_AT % SL_CACHELINE == 0, "the shared part starts a line");
_Static_assert(AT(hdr.magic) == 0 && AT(hdr.version) == 8 && AT(hdr.flavor) == 12 &&
                   AT(hdr.elem_size) == 16 && AT(hdr.capacity) == 24 && AT(hdr.size) == 32,
               "shm layout: header");
_Static_assert(AT(closed) == 40 && AT(not_empty) == 44 && AT(not_full) == 52 &&
                   AT(selectors) == 60 && AT(drained) == 64,
               "shm layout: control words");
_Static_assert(AT(in_flight) == 128 && sizeof(((sl_chan *)0)->in_flight[0]) == 64,
               "shm layout: in-flight marks");
_Static_assert(AT(q.spsc.prod.index) == 1152 && AT(q.spsc.prod.peer_cache) == 1160 &&
                   AT(q.spsc.cons.index) == 1216 && AT(q.spsc.cons.peer_cache) == 1224,
               "shm layout: SL_SPSC counters");
_Static_assert(AT(q.mpmc.tail) == 1152 && AT(q.mpmc.free_head) == 1160 &&
                   AT(q.mpmc.head) == 1216 && AT(q.mpmc.free_tail) == 1224,
               "shm layout: SL_MPMC counters");
_Static_assert(AT(q.spsc) + sizeof(sl_spsc) <= SHM_DATA_AT &&
                   AT(q.mpmc) + sizeof(sl_mpmc) <= SHM_DATA_AT,
               "shm layout: the counters end before the storage");

/* A segment's geometry, computed here from (flavour, message size,
 * capacity) alone: where the storage is, and how large the segment must be. */
typedef struct geometry {
    sl_flavor flavor;
    size_t elem_size;
    size_t capacity;
    size_t storage;  /* SL_SPSC: slots (a power of two); SL_MPMC: one_lap */
    size_t free_at;  /* SL_MPMC indexed: the free ring; 0 otherwise */
    size_t slots_at; /* the slots; 0 for SL_MPMC direct */
    size_t size;     /* bytes the segment needs */
} geometry;

static size_t line_up(size_t n) { return (n + SL_CACHELINE - 1) & ~(size_t)(SL_CACHELINE - 1); }

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
        g->free_at = g->size;
        g->slots_at = line_up(g->free_at + g->storage * sizeof(sl_mpmc_cell));
        g->size = g->slots_at + capacity * elem_size;
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
        v->free = (sl__cellring){(sl_mpmc_cell *)(seg + g->free_at), &m->free_head,
                                 &m->free_tail, g->storage, g->capacity};
        v->slots = seg + g->slots_at;
        v->slot_count = g->capacity;
    }
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
    if (g->flavor == SL_MPMC) {
        sl__mpmc_view *v = &ch->geom.mpmc;
        sl__cellring_init(v->used.cells, g->capacity, 0, false);
        if (v->slots) {
            /* The free ring starts full: every slot index, its tail a lap on. */
            sl__cellring_init(v->free.cells, g->capacity, 0, true);
            atomic_store_explicit(&ch->q.mpmc.free_tail, g->storage, memory_order_relaxed);
        }
    }
    /* Release: everything above before an opener's acquire of the magic. */
    atomic_store_explicit(&ch->hdr.magic, SHM_MAGIC, memory_order_release);
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
    ch->shm = (sl__shm_map){base, len, fd};
    *out = ch;
    return SL_OK;
}

void sl__shm_release(sl_chan *ch)
{
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

/* A new segment's descriptor: a sealable memfd, or the named object made
 * exclusively; exactly `mode` (no umask), sized. -1 on failure (errno). */
static int make_segment(const char *name, unsigned mode, size_t size)
{
    int fd = name ? shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, (mode_t)mode)
                  : memfd_create("sluice-chan", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -1;
    bool ok = fchmod(fd, (mode_t)mode) == 0 && ftruncate(fd, (off_t)size) == 0;
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
    if (!out || !opts || opts->drop || (mode & ~0777u) ||
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
    fill_local(ch, &g); /* from g: nothing read from the segment after this */
    *out = ch;
    return SL_OK;
}

SL_API sl_status sl_chan_shm_open_fd(sl_chan **out, int fd, const sl_chan_opts *expect)
{
    if (!out || !expect || expect->drop || fd < 0)
        return SL_EINVAL;
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0)
        return errno_status();
    return open_owned(out, own, expect);
}

SL_API sl_status sl_chan_shm_open(sl_chan **out, const char *name, const sl_chan_opts *expect)
{
    if (!out || !expect || !name || expect->drop)
        return SL_EINVAL;
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        return errno_status();
    return open_owned(out, fd, expect);
}

SL_API sl_status sl_chan_shm_unlink(const char *name)
{
    if (!name || shm_unlink(name) != 0)
        return SL_EINVAL;
    return SL_OK;
}

SL_API int sl_chan_shm_fd(const sl_chan *ch)
{
    return ch && sl__chan_is_shared(ch) ? ch->shm.fd : -1;
}
