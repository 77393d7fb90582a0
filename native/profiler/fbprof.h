/* Internal state of libfabricbench-prof and the recording templates the generated
 * wrappers call (fb_rec_KIND, one per KIND of mpi_calls.tbl).
 *
 * The hot path (fb_enter, fb_now, fb_rec_*) allocates nothing and takes no lock: it
 * adds to a table sized at MPI_Init. Atomic adds are used only when the application
 * asked for MPI_THREAD_MULTIPLE. */
#ifndef FBPROF_H
#define FBPROF_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime, gmtime_r under -std=c11 */
#endif

#include <mpi.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define FB_HAVE_TSC 1
#endif

#include "fb_calls.h" /* generated: FB_NCALLS, FB_ID_*, fb_call_names */

#define FB_HIDDEN __attribute__((visibility("hidden")))
#define FB_EXPORT __attribute__((visibility("default")))
#define FB_LIKELY(x) __builtin_expect(!!(x), 1)
#define FB_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Message-size bins: bin 0 holds 0-byte calls, bin b >= 1 holds [2^(b-1), 2^b - 1] bytes. */
#define FB_NBINS 65

/* Threads whose MPI time is kept apart; any later thread shares the last slot. */
#define FB_MAX_THREADS 64

/* Call sites (call, caller's return address): a fixed open-addressing table per rank. A
 * site that finds no free slot within FB_SITE_PROBES is counted in sites_dropped only. */
#define FB_NSITES 4096 /* power of two */
#define FB_SITE_PROBES 8

/* Time windows: FB_NWIN windows of 2^win_shift ticks each, per call. When a call ends past
 * the last window, pairs of windows merge and the length doubles: memory stays fixed. A
 * window has FB_WCOLS columns, given to calls in the order a rank first makes them (a
 * program makes a few dozen distinct calls); calls after the first FB_WCOLS - 1 share the
 * last column, reported as FB_WOTHER. */
#define FB_NWIN 2048
#define FB_WCOLS 64
#define FB_WOTHER "other MPI calls"
#define FB_WIN_SHIFT0 20 /* first window length: 2^20 ticks (about 0.4 ms of TSC, 1 ms of ns) */

/* MPI_Pcontrol calls kept per rank (the phase boundaries the program marks). */
#define FB_NMARKS 256

/* Communication-matrix layers kept per rank (one row: this rank -> peer). */
enum { FB_L_P2P = 0, FB_L_RMA_TO = 1, FB_L_RMA_FROM = 2, FB_L_COLL = 3, FB_NLAYERS = 4 };

typedef struct {
    uint64_t count, ticks, min, max, bytes;
} fb_stat_t;

typedef struct {
    uint64_t msgs, bytes;
} fb_cell_t;

/* A call site: key = return address | (call id + 1) << 48 (0: free). nmin is the bitwise
 * NOT of the shortest call, so that a zeroed slot needs no set-up. */
typedef struct {
    uint64_t key, count, ticks, bytes, nmin, max;
} fb_site_t;

/* One call in one time window; bins has bit b set when a call of size bin b was seen. */
typedef struct {
    uint64_t ticks, bytes, bins, count;
} fb_wcell_t;

typedef struct {
    uint64_t tick;
    int level;
} fb_mark_t;

/* One thread's MPI time: written by that thread only (by several when shared). */
typedef struct {
    uint64_t ticks, calls;
    int shared;
    int main;           /* the thread that called MPI_Init */
    int outside_level;  /* not the main thread, under MPI_THREAD_SINGLE or FUNNELED */
} __attribute__((aligned(64))) fb_thread_t;

/* A communicator (or window) whose ranks were mapped to world ranks. */
typedef struct {
    int size;       /* ranks in the (remote, for an intercommunicator) group */
    int rank;       /* this process's rank in the local group */
    int inter;      /* intercommunicator: peers index the remote group */
    int outdegree;  /* neighbours for neighbourhood collectives, -1 if no topology */
    int *world;     /* world rank of each rank of the group, -1 if not in MPI_COMM_WORLD */
} fb_comm_t;

typedef struct {
    volatile int on;           /* initialised, not finalised and not switched off by MPI_Pcontrol(0) */
    int initialized, finalized;
    int threaded;              /* MPI_THREAD_MULTIPLE: update the table atomically */
    int use_tsc;               /* ticks are TSC cycles; else nanoseconds of CLOCK_MONOTONIC */
    int world_rank, world_size;
    fb_stat_t *stats;          /* [FB_NCALLS][FB_NBINS] */
    fb_cell_t *matrix;         /* [FB_NLAYERS][world_size] */
    fb_comm_t world;           /* MPI_COMM_WORLD, answered without a lookup */
    MPI_Group world_group;
    int comm_keyval, win_keyval;
    uint64_t untracked;        /* peers we could not map (lookup table full) */
    uint64_t init_tick;
    struct timespec init_ts;
    fb_thread_t *threads;      /* [FB_MAX_THREADS] */
    int nthreads;              /* threads that have called MPI (may exceed FB_MAX_THREADS) */
    fb_site_t *sites;          /* [FB_NSITES] */
    uint64_t sites_dropped;    /* calls whose site found no slot */
    fb_wcell_t *windows;       /* [FB_NWIN][FB_WCOLS] */
    uint8_t win_col[FB_NCALLS]; /* a call's window column + 1 (0: none yet) */
    int16_t win_call[FB_WCOLS]; /* the call of each column (-1: the shared last one) */
    unsigned win_ncols;        /* columns given out */
    uint64_t win_origin;       /* tick at which window 0 starts (MPI_Init) */
    unsigned win_shift;        /* a window is 2^win_shift ticks */
    uint64_t before_init[FB_NCALLS]; /* calls made before MPI_Init (counted, not timed) */
    double cpu_at_init;        /* the process's CPU time (user + system) at MPI_Init */
    int64_t run_delay_at_init; /* the main thread's run-queue wait (ns) at MPI_Init, -1 unknown */
    long main_tid;             /* the thread that called MPI_Init */
} fb_state_t;

/* The call being recorded by this thread: where it was called from, when it started. */
typedef struct {
    void *ra;
    uint64_t t0;
} fb_current_t;

extern FB_HIDDEN fb_state_t fb;
extern FB_HIDDEN _Thread_local int fb_depth __attribute__((tls_model("initial-exec")));
extern FB_HIDDEN _Thread_local fb_thread_t *fb_self __attribute__((tls_model("initial-exec")));
extern FB_HIDDEN _Thread_local fb_current_t fb_cur __attribute__((tls_model("initial-exec")));

/* Lifecycle and slow paths (fbprof.c). */
FB_HIDDEN void fb_init(void);
FB_HIDDEN void fb_finalize(void);
FB_HIDDEN void fb_pcontrol(int level);
FB_HIDDEN const fb_comm_t *fb_comm_lookup(MPI_Comm comm);
FB_HIDDEN const fb_comm_t *fb_win_lookup(MPI_Win win);
FB_HIDDEN void fb_comm_created(MPI_Comm comm);
FB_HIDDEN void fb_win_created(MPI_Win win, MPI_Comm comm);
FB_HIDDEN void fb_preq_register(MPI_Request req, int world_peer, uint64_t bytes, int is_send);
FB_HIDDEN int fb_preq_find(MPI_Request req, int *world_peer, uint64_t *bytes);
FB_HIDDEN void fb_preq_forget(MPI_Request req);
FB_HIDDEN int fb_fortran_in_place(const void *p);
FB_HIDDEN void fb_fortran_missing(const char *symbol) __attribute__((noreturn));
FB_HIDDEN fb_thread_t *fb_thread_claim(void);
FB_HIDDEN void fb_busy_enter(void);
FB_HIDDEN void fb_busy_leave(void);
FB_HIDDEN void fb_before_init(int id);
FB_HIDDEN unsigned fb_window_column(int id);
FB_HIDDEN void fb_window_spread(int id, uint64_t rel, uint64_t dt, uint64_t bytes, unsigned bin);

/* ---------------------------------------------------------------- timing */

static inline uint64_t fb_now(void)
{
#ifdef FB_HAVE_TSC
    if (FB_LIKELY(fb.use_tsc))
        return __rdtsc();
#endif
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A wrapper records only when the profiler is on and it is the outermost MPI call of
 * this thread (a Fortran wrapper calling a C binding, or MPI calling itself, is not
 * counted twice). With MPI_THREAD_MULTIPLE, threads can be inside MPI at the same time,
 * so the rank's MPI time is then the time during which any of them was (fb_busy_*),
 * not the sum of the calls. */
static inline int fb_enter(int id, void *ra)
{
    if (FB_LIKELY(fb.on) && FB_LIKELY(fb_depth == 0)) {
        fb_depth = 1;
        fb_cur.ra = ra;
        if (FB_UNLIKELY(fb.threaded))
            fb_busy_enter();
        return 1;
    }
    if (FB_UNLIKELY(!fb.initialized) && fb_depth == 0)
        fb_before_init(id);
    return 0;
}

/* The start of the call being recorded (the wrapper's clock and the time windows'). */
static inline uint64_t fb_start(void)
{
    uint64_t t = fb_now();
    fb_cur.t0 = t;
    return t;
}

static inline void fb_leave(void)
{
    if (FB_UNLIKELY(fb.threaded))
        fb_busy_leave();
    fb_depth = 0;
}

/* ---------------------------------------------------------------- table updates */

static inline unsigned fb_bin(uint64_t bytes)
{
    return bytes ? 64u - (unsigned)__builtin_clzll(bytes) : 0u;
}

static inline void fb_add(uint64_t *p, uint64_t v)
{
    if (FB_LIKELY(!fb.threaded))
        *p += v;
    else
        __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

static inline void fb_atomic_max(uint64_t *p, uint64_t v)
{
    uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
}

/* The call's site: its slot (claimed on first use) gets count, time and bytes. */
static inline void fb_site_add(int id, uint64_t dt, uint64_t bytes)
{
    uint64_t key = (uint64_t)(uintptr_t)fb_cur.ra | ((uint64_t)(id + 1) << 48);
    unsigned h = (unsigned)((key * 0x9E3779B97F4A7C15ull) >> 52); /* 12 bits: FB_NSITES */
    for (unsigned p = 0; p < FB_SITE_PROBES; p++) {
        fb_site_t *s = &fb.sites[(h + p) & (FB_NSITES - 1)];
        uint64_t k = __atomic_load_n(&s->key, __ATOMIC_RELAXED);
        if (FB_UNLIKELY(k != key)) {
            if (k != 0)
                continue;
            if (!fb.threaded)
                s->key = key;
            else if (!__atomic_compare_exchange_n(&s->key, &k, key, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED) && k != key)
                continue;
        }
        fb_add(&s->count, 1);
        fb_add(&s->ticks, dt);
        fb_add(&s->bytes, bytes);
        if (FB_LIKELY(!fb.threaded)) {
            if (~dt > s->nmin) s->nmin = ~dt;
            if (dt > s->max) s->max = dt;
        } else {
            fb_atomic_max(&s->nmin, ~dt);
            fb_atomic_max(&s->max, dt);
        }
        return;
    }
    fb_add(&fb.sites_dropped, 1);
}

/* The call's time window (the one it started in); a call that runs into later windows
 * spreads its time over them (fb_window_spread, also when the windows must grow). */
static inline void fb_window_add(int id, uint64_t dt, uint64_t bytes, unsigned bin)
{
    uint64_t t0 = fb_cur.t0;
    uint64_t rel = t0 > fb.win_origin ? t0 - fb.win_origin : 0;
    uint64_t w = rel >> fb.win_shift;
    if (FB_UNLIKELY(w != (rel + dt) >> fb.win_shift || w >= FB_NWIN)) {
        fb_window_spread(id, rel, dt, bytes, bin);
        return;
    }
    unsigned col = __atomic_load_n(&fb.win_col[id], __ATOMIC_ACQUIRE);
    if (FB_UNLIKELY(col == 0))
        col = fb_window_column(id);
    fb_wcell_t *c = &fb.windows[w * FB_WCOLS + col - 1];
    uint64_t bit = 1ull << (bin < 63 ? bin : 63);
    fb_add(&c->count, 1);
    fb_add(&c->ticks, dt);
    fb_add(&c->bytes, bytes);
    if (FB_LIKELY(!fb.threaded))
        c->bins |= bit;
    else
        __atomic_fetch_or(&c->bins, bit, __ATOMIC_RELAXED);
}

static inline void fb_record(int id, uint64_t dt, uint64_t bytes)
{
    fb_thread_t *me = FB_LIKELY(fb_self != NULL) ? fb_self : fb_thread_claim();
    if (FB_LIKELY(!me->shared)) {
        me->ticks += dt;
        me->calls++;
    } else {
        __atomic_fetch_add(&me->ticks, dt, __ATOMIC_RELAXED);
        __atomic_fetch_add(&me->calls, 1, __ATOMIC_RELAXED);
    }
    unsigned bin = fb_bin(bytes);
    fb_site_add(id, dt, bytes);
    fb_window_add(id, dt, bytes, bin);
    fb_stat_t *s = &fb.stats[(unsigned)id * FB_NBINS + bin];
    if (FB_LIKELY(!fb.threaded)) {
        s->count++;
        s->ticks += dt;
        s->bytes += bytes;
        if (dt < s->min) s->min = dt;
        if (dt > s->max) s->max = dt;
        return;
    }
    __atomic_fetch_add(&s->count, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->ticks, dt, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->bytes, bytes, __ATOMIC_RELAXED);
    uint64_t cur = __atomic_load_n(&s->min, __ATOMIC_RELAXED);
    while (dt < cur && !__atomic_compare_exchange_n(&s->min, &cur, dt, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    cur = __atomic_load_n(&s->max, __ATOMIC_RELAXED);
    while (dt > cur && !__atomic_compare_exchange_n(&s->max, &cur, dt, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
}

static inline void fb_matrix_add(int layer, int world_peer, uint64_t bytes)
{
    if (world_peer < 0 || world_peer >= fb.world_size)
        return;
    fb_cell_t *c = &fb.matrix[(size_t)layer * (size_t)fb.world_size + (size_t)world_peer];
    if (FB_LIKELY(!fb.threaded)) {
        c->msgs++;
        c->bytes += bytes;
    } else {
        __atomic_fetch_add(&c->msgs, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&c->bytes, bytes, __ATOMIC_RELAXED);
    }
}

/* ---------------------------------------------------------------- argument helpers */

static inline uint64_t fb_type_size(MPI_Datatype type)
{
    if (type == MPI_DATATYPE_NULL)
        return 0;
    int size = 0;
    if (PMPI_Type_size(type, &size) != MPI_SUCCESS || size < 0)
        return 0;
    return (uint64_t)size;
}

static inline uint64_t fb_bytes(int count, MPI_Datatype type)
{
    return count > 0 ? (uint64_t)count * fb_type_size(type) : 0;
}

static inline const fb_comm_t *fb_comm(MPI_Comm comm)
{
    if (FB_LIKELY(comm == MPI_COMM_WORLD))
        return &fb.world;
    return fb_comm_lookup(comm);
}

static inline int fb_world_of(const fb_comm_t *c, int rank)
{
    if (!c || rank < 0 || rank >= c->size)
        return -1;
    return c->world[rank];
}

/* The data address of a choice buffer MPICH's mpi_f08 passes as a descriptor (mpi_x_f08ts_):
 * gfortran's and TS 29113's descriptors both start with it. */
static inline const void *fb_desc_base(const void *desc)
{
    return desc ? *(const void *const *)desc : NULL;
}

static inline int fb_in_place(const void *buf, int is_f)
{
    return is_f ? fb_fortran_in_place(buf) : buf == MPI_IN_PLACE;
}

/* Element i of a handle array that came from C (handles) or Fortran (MPI_Fint). */
static inline MPI_Datatype fb_type_at(const void *types, int i, int is_f)
{
    return is_f ? PMPI_Type_f2c(((const MPI_Fint *)types)[i]) : ((const MPI_Datatype *)types)[i];
}

static inline MPI_Request fb_req_at(const void *reqs, int i, int is_f)
{
    return is_f ? PMPI_Request_f2c(((const MPI_Fint *)reqs)[i]) : ((const MPI_Request *)reqs)[i];
}

static inline uint64_t fb_sum(const int *counts, int n)
{
    uint64_t s = 0;
    if (!counts)
        return 0;
    for (int i = 0; i < n; i++)
        if (counts[i] > 0) s += (uint64_t)counts[i];
    return s;
}

/* ---------------------------------------------------------------- templates per KIND
 * Every template takes (call id, elapsed ticks, called from Fortran) and then the
 * arguments its roles name, in the order gen_wrappers.py passes them. */

#define FB_UNUSED(x) (void)(x)

static inline void fb_rec_plain(int id, uint64_t dt, int is_f)
{
    FB_UNUSED(is_f);
    fb_record(id, dt, 0);
}

/* A call that moves bytes to or from one peer (world rank, -1 for none): its size, and
 * its entry in a matrix layer. */
static inline void fb_rec_moved(int id, uint64_t dt, int layer, uint64_t bytes, int world_peer)
{
    fb_record(id, dt, bytes);
    fb_matrix_add(layer, world_peer, bytes);
}

/* Point-to-point send (also Sendrecv: the send half): message size and a matrix entry. */
static inline void fb_rec_send(int id, uint64_t dt, int is_f, int count, MPI_Datatype type, int peer, MPI_Comm comm)
{
    FB_UNUSED(is_f);
    fb_rec_moved(id, dt, FB_L_P2P, fb_bytes(count, type), peer >= 0 ? fb_world_of(fb_comm(comm), peer) : -1);
}

static inline void fb_rec_recv(int id, uint64_t dt, int is_f, int count, MPI_Datatype type)
{
    FB_UNUSED(is_f);
    fb_record(id, dt, fb_bytes(count, type));
}

/* MPI-IO reads and writes: count x type of the buffer. */
static inline void fb_rec_io(int id, uint64_t dt, int is_f, int count, MPI_Datatype type)
{
    FB_UNUSED(is_f);
    fb_record(id, dt, fb_bytes(count, type));
}

static inline void fb_rec_psend(int id, uint64_t dt, int is_f, int count, MPI_Datatype type, int peer,
                                MPI_Comm comm, MPI_Request req)
{
    FB_UNUSED(is_f);
    fb_record(id, dt, 0);
    int world_peer = peer >= 0 ? fb_world_of(fb_comm(comm), peer) : -1;
    fb_preq_register(req, world_peer, fb_bytes(count, type), 1);
}

static inline void fb_rec_precv(int id, uint64_t dt, int is_f, int count, MPI_Datatype type, MPI_Request req)
{
    FB_UNUSED(is_f);
    fb_record(id, dt, 0);
    fb_preq_register(req, -1, fb_bytes(count, type), 0);
}

static inline uint64_t fb_started(MPI_Request req)
{
    int world_peer;
    uint64_t bytes;
    int kind = fb_preq_find(req, &world_peer, &bytes);
    if (kind == 1)
        fb_matrix_add(FB_L_P2P, world_peer, bytes);
    return kind ? bytes : 0;
}

static inline void fb_rec_start(int id, uint64_t dt, int is_f, MPI_Request req)
{
    FB_UNUSED(is_f);
    fb_record(id, dt, fb_started(req));
}

static inline void fb_rec_startall(int id, uint64_t dt, int is_f, int n, const void *reqs)
{
    uint64_t bytes = 0;
    for (int i = 0; i < n; i++)
        bytes += fb_started(fb_req_at(reqs, i, is_f));
    fb_record(id, dt, bytes);
}

static inline void fb_rec_reqfree(int id, uint64_t dt, int is_f, MPI_Request req)
{
    FB_UNUSED(is_f);
    fb_record(id, dt, 0);
    fb_preq_forget(req);
}

/* Logical collective flows for the "coll" matrix layer: what this rank contributes to
 * each peer, whatever algorithm the library uses. Not kept for intercommunicators. */
static inline void fb_coll_to_all(const fb_comm_t *c, uint64_t bytes)
{
    if (!c || c->inter)
        return;
    for (int i = 0; i < c->size; i++)
        if (i != c->rank)
            fb_matrix_add(FB_L_COLL, c->world[i], bytes);
}

static inline void fb_coll_to_root(const fb_comm_t *c, int root, uint64_t bytes)
{
    if (!c || c->inter || root == c->rank)
        return;
    fb_matrix_add(FB_L_COLL, fb_world_of(c, root), bytes);
}

static inline void fb_rec_bcast(int id, uint64_t dt, int is_f, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    FB_UNUSED(is_f);
    uint64_t bytes = fb_bytes(count, type);
    fb_record(id, dt, bytes);
    const fb_comm_t *c = fb_comm(comm);
    if (c && !c->inter && root == c->rank)
        fb_coll_to_all(c, bytes);
}

static inline void fb_rec_reduce(int id, uint64_t dt, int is_f, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    FB_UNUSED(is_f);
    uint64_t bytes = fb_bytes(count, type);
    fb_record(id, dt, bytes);
    fb_coll_to_root(fb_comm(comm), root, bytes);
}

/* Allreduce, Scan, Exscan, Reduce_scatter_block: count x type, no pairwise flow. */
static inline void fb_rec_reduction(int id, uint64_t dt, int is_f, int count, MPI_Datatype type)
{
    FB_UNUSED(is_f);
    fb_record(id, dt, fb_bytes(count, type));
}

/* Reduce_scatter: the whole vector reduced (sum of recvcounts), as mpiP counts it. */
static inline void fb_rec_redscat(int id, uint64_t dt, int is_f, const int *rcounts, MPI_Datatype type, MPI_Comm comm)
{
    FB_UNUSED(is_f);
    int n = 0;
    if (PMPI_Comm_size(comm, &n) != MPI_SUCCESS) n = 0;
    fb_record(id, dt, fb_sum(rcounts, n) * fb_type_size(type));
}

/* Gather: each rank's contribution (the root's, with MPI_IN_PLACE, is its receive block). */
static inline void fb_rec_gather(int id, uint64_t dt, int is_f, const void *sbuf, int scount, MPI_Datatype stype,
                                 int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    const fb_comm_t *c = fb_comm(comm);
    uint64_t bytes;
    if (c && c->inter)
        bytes = root == MPI_ROOT ? fb_bytes(rcount, rtype) : root == MPI_PROC_NULL ? 0 : fb_bytes(scount, stype);
    else if (c && root == c->rank && fb_in_place(sbuf, is_f))
        bytes = fb_bytes(rcount, rtype);
    else
        bytes = fb_bytes(scount, stype);
    fb_record(id, dt, bytes);
    fb_coll_to_root(c, root, bytes);
}

static inline void fb_rec_gatherv(int id, uint64_t dt, int is_f, const void *sbuf, int scount, MPI_Datatype stype,
                                  const int *rcounts, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    const fb_comm_t *c = fb_comm(comm);
    uint64_t bytes;
    if (c && c->inter)
        bytes = root == MPI_ROOT ? fb_sum(rcounts, c->size) * fb_type_size(rtype)
              : root == MPI_PROC_NULL ? 0 : fb_bytes(scount, stype);
    else if (c && root == c->rank && fb_in_place(sbuf, is_f))
        bytes = rcounts ? fb_bytes(rcounts[c->rank], rtype) : 0;
    else
        bytes = fb_bytes(scount, stype);
    fb_record(id, dt, bytes);
    fb_coll_to_root(c, root, bytes);
}

/* Scatter: the block each rank receives; the root sends one block to every other rank. */
static inline void fb_rec_scatter(int id, uint64_t dt, int is_f, int scount, MPI_Datatype stype, const void *rbuf,
                                  int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    FB_UNUSED(rbuf); FB_UNUSED(is_f);
    const fb_comm_t *c = fb_comm(comm);
    uint64_t bytes;
    if (c && c->inter) {
        bytes = root == MPI_ROOT ? fb_bytes(scount, stype) : root == MPI_PROC_NULL ? 0 : fb_bytes(rcount, rtype);
        fb_record(id, dt, bytes);
        return;
    }
    int is_root = c && root == c->rank;
    bytes = is_root ? fb_bytes(scount, stype) : fb_bytes(rcount, rtype);
    fb_record(id, dt, bytes);
    if (is_root)
        fb_coll_to_all(c, bytes);
}

static inline void fb_rec_scatterv(int id, uint64_t dt, int is_f, const int *scounts, MPI_Datatype stype,
                                   const void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    FB_UNUSED(rbuf); FB_UNUSED(is_f);
    const fb_comm_t *c = fb_comm(comm);
    int is_root = c && (c->inter ? root == MPI_ROOT : root == c->rank);
    if (c && c->inter && root == MPI_PROC_NULL) {
        fb_record(id, dt, 0);
        return;
    }
    if (!is_root) {
        fb_record(id, dt, fb_bytes(rcount, rtype));
        return;
    }
    uint64_t tsize = fb_type_size(stype);
    fb_record(id, dt, fb_sum(scounts, c->size) * tsize);
    if (c->inter || !scounts)
        return;
    for (int i = 0; i < c->size; i++)
        if (i != c->rank && scounts[i] > 0)
            fb_matrix_add(FB_L_COLL, c->world[i], (uint64_t)scounts[i] * tsize);
}

static inline void fb_rec_allgather(int id, uint64_t dt, int is_f, const void *sbuf, int scount, MPI_Datatype stype,
                                    int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    uint64_t bytes = fb_in_place(sbuf, is_f) ? fb_bytes(rcount, rtype) : fb_bytes(scount, stype);
    fb_record(id, dt, bytes);
    fb_coll_to_all(fb_comm(comm), bytes);
}

static inline void fb_rec_allgatherv(int id, uint64_t dt, int is_f, const void *sbuf, int scount, MPI_Datatype stype,
                                     const int *rcounts, MPI_Datatype rtype, MPI_Comm comm)
{
    const fb_comm_t *c = fb_comm(comm);
    uint64_t bytes;
    if (fb_in_place(sbuf, is_f))
        bytes = (c && rcounts) ? fb_bytes(rcounts[c->rank], rtype) : 0;
    else
        bytes = fb_bytes(scount, stype);
    fb_record(id, dt, bytes);
    fb_coll_to_all(c, bytes);
}

/* Alltoall: the per-destination block, as mpiP and IPM count it. */
static inline void fb_rec_alltoall(int id, uint64_t dt, int is_f, const void *sbuf, int scount, MPI_Datatype stype,
                                   int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    uint64_t bytes = fb_in_place(sbuf, is_f) ? fb_bytes(rcount, rtype) : fb_bytes(scount, stype);
    fb_record(id, dt, bytes);
    fb_coll_to_all(fb_comm(comm), bytes);
}

/* Alltoallv: everything this rank sends (sum of sendcounts), as mpiP counts it. */
static inline void fb_rec_alltoallv(int id, uint64_t dt, int is_f, const void *sbuf, const int *scounts,
                                    MPI_Datatype stype, const int *rcounts, MPI_Datatype rtype, MPI_Comm comm)
{
    const fb_comm_t *c = fb_comm(comm);
    int n = 0;
    if (c) n = c->size;
    else if (PMPI_Comm_size(comm, &n) != MPI_SUCCESS) n = 0;
    const int *counts = scounts;
    uint64_t tsize;
    if (fb_in_place(sbuf, is_f)) {
        counts = rcounts;
        tsize = fb_type_size(rtype);
    } else {
        tsize = fb_type_size(stype);
    }
    fb_record(id, dt, fb_sum(counts, n) * tsize);
    if (!c || c->inter || !counts)
        return;
    for (int i = 0; i < n; i++)
        if (i != c->rank && counts[i] > 0)
            fb_matrix_add(FB_L_COLL, c->world[i], (uint64_t)counts[i] * tsize);
}

static inline void fb_rec_alltoallw(int id, uint64_t dt, int is_f, const void *sbuf, const int *scounts,
                                    const void *stypes, const int *rcounts, const void *rtypes, MPI_Comm comm)
{
    const fb_comm_t *c = fb_comm(comm);
    int n = 0;
    if (c) n = c->size;
    else if (PMPI_Comm_size(comm, &n) != MPI_SUCCESS) n = 0;
    const int *counts = scounts;
    const void *types = stypes;
    if (fb_in_place(sbuf, is_f)) {
        counts = rcounts;
        types = rtypes;
    }
    uint64_t total = 0;
    for (int i = 0; counts && types && i < n; i++) {
        if (counts[i] <= 0)
            continue;
        uint64_t b = (uint64_t)counts[i] * fb_type_size(fb_type_at(types, i, is_f));
        total += b;
        if (c && !c->inter && i != c->rank)
            fb_matrix_add(FB_L_COLL, c->world[i], b);
    }
    fb_record(id, dt, total);
}

/* Neighbourhood collectives: per-neighbour block (nbr), or all sent (nbrv, nbrw). */
static inline void fb_rec_nbr(int id, uint64_t dt, int is_f, int scount, MPI_Datatype stype, MPI_Comm comm)
{
    FB_UNUSED(is_f); FB_UNUSED(comm);
    fb_record(id, dt, fb_bytes(scount, stype));
}

static inline void fb_rec_nbrv(int id, uint64_t dt, int is_f, const int *scounts, MPI_Datatype stype, MPI_Comm comm)
{
    FB_UNUSED(is_f);
    const fb_comm_t *c = fb_comm(comm);
    int n = c && c->outdegree > 0 ? c->outdegree : 0;
    fb_record(id, dt, fb_sum(scounts, n) * fb_type_size(stype));
}

static inline void fb_rec_nbrw(int id, uint64_t dt, int is_f, const int *scounts, const void *stypes, MPI_Comm comm)
{
    const fb_comm_t *c = fb_comm(comm);
    int n = c && c->outdegree > 0 ? c->outdegree : 0;
    uint64_t total = 0;
    for (int i = 0; scounts && stypes && i < n; i++)
        if (scounts[i] > 0)
            total += (uint64_t)scounts[i] * fb_type_size(fb_type_at(stypes, i, is_f));
    fb_record(id, dt, total);
}

/* One-sided: origin count x origin type; Put/Accumulate move data to the target, Get from it.
 * A call without a count role (Fetch_and_op, Compare_and_swap) moves one element. */
static inline int fb_win_peer(MPI_Win win, int peer)
{
    return peer >= 0 ? fb_world_of(fb_win_lookup(win), peer) : -1;
}

static inline void fb_rec_put(int id, uint64_t dt, int is_f, int count, MPI_Datatype type, int peer, MPI_Win win)
{
    FB_UNUSED(is_f);
    fb_rec_moved(id, dt, FB_L_RMA_TO, fb_bytes(count, type), fb_win_peer(win, peer));
}

static inline void fb_rec_get(int id, uint64_t dt, int is_f, int count, MPI_Datatype type, int peer, MPI_Win win)
{
    FB_UNUSED(is_f);
    fb_rec_moved(id, dt, FB_L_RMA_FROM, fb_bytes(count, type), fb_win_peer(win, peer));
}

static inline void fb_rec_winnew(int id, uint64_t dt, int is_f, MPI_Comm comm, MPI_Win newwin)
{
    FB_UNUSED(is_f);
    fb_record(id, dt, 0);
    if (newwin != MPI_WIN_NULL)
        fb_win_created(newwin, comm);
}

static inline void fb_rec_commnew(int id, uint64_t dt, int is_f, MPI_Comm newcomm)
{
    FB_UNUSED(is_f);
    fb_record(id, dt, 0);
    if (newcomm != MPI_COMM_NULL)
        fb_comm_created(newcomm);
}

#endif
