/* Internal state of libfabricbench-prof and the recording templates the generated
 * wrappers call (fb_rec_KIND, one per KIND of mpi_calls.tbl).
 *
 * The hot path (fb_enter, fb_now, fb_rec_*) allocates nothing and takes no lock: it
 * adds to a table sized at MPI_Init. Atomic adds are used only when the application
 * asked for MPI_THREAD_MULTIPLE.
 *
 * What one call costs beyond PMPI (benchmarks/profiler_instructions.py counts it): the
 * shared state it reads is the first cache line of fb (on, threaded, the slot table), the
 * thread's own state is thread-local, and everything it records goes to one 64-byte slot
 * keyed by (call, call site, size bin). The slot holds the call's totals for the current
 * time window; only when a call ends past that window, or the slot is new, does the slow
 * path (fb_record_slow) move them into the time windows and the slot's totals. The
 * [call][size bin] table and the call sites are summed from the slots at MPI_Finalize.
 * A point-to-point call that repeats its wrapper's last arguments touches no shared line at
 * all: its time goes to the wrapper's entry (fb_ent_t below), which its thread alone writes. */
#ifndef FBPROF_H
#define FBPROF_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime, gmtime_r under -std=c11 */
#endif

#include <mpi.h>
#include <stdint.h>
#include <stddef.h>
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
/* The hot path is inlined into each wrapper whatever the compiler would choose. */
#define FB_INLINE static inline __attribute__((always_inline))

/* Message-size bins: bin 0 holds 0-byte calls, bin b >= 1 holds [2^(b-1), 2^b - 1] bytes. */
#define FB_NBINS 65

/* Threads whose MPI time is kept apart; any later thread shares the last slot. */
#define FB_MAX_THREADS 64

/* Slots (call, caller's return address, size bin): a fixed open-addressing table per rank.
 * A call whose slot finds no free place within FB_SLOT_PROBES goes to the [call][size bin]
 * table and the windows directly, and its site is counted in sites_dropped only. */
#define FB_SLOT_BITS 14
#define FB_NSLOTS (1u << FB_SLOT_BITS) /* 16384 x 64 bytes = 1 MiB per rank */
#define FB_SLOT_PROBES 8
#define FB_SLOT_SITE_MASK ((1ull << 57) - 1) /* the key without its size bin: the call site */

/* A thread's fb_depth before its first MPI call (fb_enter_slow claims its slot then), and
 * when it is outside MPI: 0 for the thread that called MPI_Init (its calls take the fast
 * path), FB_IDLE_SLOW for any other (its calls take fb_enter_slow, which keeps its time). */
#define FB_UNCLAIMED 0x40000000
#define FB_IDLE_SLOW 2

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

/* A slot: key = return address | (call id + 1) << 48 | size bin << 57 (0: free). Without
 * MPI_THREAD_MULTIPLE, count, ticks and bytes are the calls of the current window
 * [wstart, wend) (wend 0: none yet); fb_slot_flush moves them into the windows and the
 * slot's totals (fb_total_t, kept apart, cold). Under MPI_THREAD_MULTIPLE every call goes
 * to the totals and the windows directly, with atomic adds. min starts at UINT64_MAX
 * (MPI_Init sets every slot so). One cache line. */
typedef struct {
    uint64_t key, wend, count, ticks, bytes, min, max, wstart;
} __attribute__((aligned(64))) fb_slot_t;

typedef struct {
    uint64_t count, ticks, bytes;
} fb_total_t;

/* The three things a wrapper knows about its call: the call site and the clock around PMPI. */
typedef struct {
    void *ra;
    uint64_t t0, t1;
    int fast; /* from fb_enter_fast: single-threaded, TSC */
} fb_span_t;

/* Datatype sizes, looked up without calling PMPI_Type_size (cleared by MPI_Type_free). */
#define FB_NTSIZES 64
typedef struct {
    uint64_t key, size;
} fb_tsize_t;

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
    /* The first cache line: all the shared state a call reads on the fast path. */
    int on;                    /* recording (initialised, not finalised, not MPI_Pcontrol(0)):
                                  1 (the fast path), or 2 under MPI_THREAD_MULTIPLE or without
                                  the TSC (fb_enter_slow) */
    int threaded;              /* MPI_THREAD_MULTIPLE: update the tables atomically */
    int use_tsc;               /* ticks are TSC cycles; else nanoseconds of CLOCK_MONOTONIC */
    int world_size;
    fb_slot_t *slots;          /* [FB_NSLOTS] */
    fb_cell_t *matrix;         /* [FB_NLAYERS][world_size] */
    fb_tsize_t *tsizes;        /* [FB_NTSIZES] */
    char hot_end[1] __attribute__((aligned(64)));
    int initialized, finalized;
    int world_rank;
    fb_total_t *totals;        /* [FB_NSLOTS]: each slot's calls outside its current window */
    fb_stat_t *stats;          /* [FB_NCALLS][FB_NBINS]: calls whose slot found no place */
    fb_comm_t world;           /* MPI_COMM_WORLD, answered without a lookup */
    MPI_Group world_group;
    int comm_keyval, win_keyval;
    uint64_t untracked;        /* peers we could not map (lookup table full) */
    uint64_t init_tick;
    struct timespec init_ts;
    struct timespec init_epoch; /* CLOCK_REALTIME at MPI_Init: ties the run to other clocks */
    fb_thread_t *threads;      /* [FB_MAX_THREADS] */
    int nthreads;              /* threads that have called MPI (may exceed FB_MAX_THREADS) */
    uint64_t sites_dropped;    /* calls whose slot found no place */
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
} __attribute__((aligned(64))) fb_state_t;

_Static_assert(offsetof(fb_state_t, hot_end) == 64, "the fast path's shared state is one cache line");
_Static_assert(sizeof(fb_slot_t) == 64, "a slot is one cache line");
_Static_assert(FB_NCALLS < 511 && FB_NBINS <= 128, "call id + 1 and size bin fit in the slot key");

extern FB_HIDDEN fb_state_t fb;
/* The calling thread's state, one thread-local block (one address to find):
 * depth: idle when outside MPI, FB_UNCLAIMED before its first call, the start tick (TSC)
 * during a fast-path call (one store marks the thread inside MPI and keeps the clock), else
 * inside one (nested calls see it non-idle and are not recorded twice);
 * idle: 0 for the thread that called MPI_Init while fb.on is 1, FB_IDLE_SLOW for any other
 * thread and for that one while fb.on is not 1 (fb_main_gate), so that the fast path needs
 * no look at fb.on;
 * rc, type_key, type_size: the fast path's (the MPI_Init thread's);
 * self: its slot for its MPI time. The fast path (idle 0) leaves the MPI_Init thread's
 * time to MPI_Finalize: the calls' total minus the other threads' and the slow calls'. */
typedef struct {
    union {
        uint64_t depth;           /* in a fast-path call: its start tick (never 0, nor idle) */
        uint32_t depth_half[2];   /* (x86, little-endian) the TSC's halves, stored as rdtsc gives them */
    };
    int idle;
    int rc;                       /* the fast path's PMPI return code (not kept in a register) */
    int p2p_count, p2p_peer;      /* the fast path's point-to-point arguments, kept across PMPI */
    MPI_Datatype p2p_type;
    MPI_Comm p2p_comm;
    void *p2p_ra;                 /* the call site of a point-to-point call that missed its entry */
    fb_thread_t *self;
    uint64_t type_key, type_size; /* the fast path's last datatype and its size (fb_bytes_fast) */
} fb_tls_t;
extern FB_HIDDEN _Thread_local fb_tls_t fb_tls __attribute__((tls_model("initial-exec")));
#define fb_depth (fb_tls.depth)
#define fb_self (fb_tls.self)

/* The MPI_Init thread's point-to-point calls that repeat (fast path only): each send/recv
 * wrapper keeps its last call's arguments (call site, count, datatype, and for a send the
 * peer and communicator) and, in one cache line with them, the totals of the calls made with
 * exactly those arguments in the current time window [fb_entwin.wstart, fb_entwin.wend). A
 * call that repeats them adds its time there and nothing else: its bytes, slot and matrix
 * cell are the same as the first one's, kept in the entry's second line, and are added for
 * all of them when the entry is flushed (fb_ents_flush: the window ends, the entry is taken
 * by other arguments, MPI_Pcontrol, MPI_Finalize). Any other call (fb_miss_*) records through
 * its slot as before, and the entry is taken by its arguments when they come twice in a row
 * with no call of the entry's in between (fb_adopt_*, fb_ent_take). MPI_Type_free and the freeing of a
 * communicator empty every entry (a handle may come back as another object). */
typedef struct {
    /* the first line: all a repeated call reads and writes */
    void *ra;
    MPI_Datatype type;
    MPI_Comm comm;
    int count, peer;
    uint64_t n, ticks, min, max;
    /* the second line: what the arguments mean, and the last call that missed */
    uint64_t bytes;               /* per call */
    uint64_t skey;                /* the slot key (call, site, size bin) */
    int world_peer;               /* a send's peer in MPI_COMM_WORLD (-1: none) */
    int is_send;
    uint64_t miss_n;              /* n when the last miss came */
    void *mra;
    MPI_Datatype mtype;
    MPI_Comm mcomm;
    int mcount, mpeer;
} __attribute__((aligned(64))) fb_ent_t;

_Static_assert(offsetof(fb_ent_t, bytes) <= 64, "a repeated call's state is one cache line");

typedef struct {
    uint64_t wstart, wend; /* the entries' window (wend 0: none yet, the next call sets it) */
} fb_entwin_t;

extern FB_HIDDEN fb_ent_t fb_ents[FB_NCALLS];
extern FB_HIDDEN fb_entwin_t fb_entwin;

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
FB_HIDDEN void fb_main_gate(void);
FB_HIDDEN int fb_enter_slow(int id);
FB_HIDDEN void fb_record_slow(int id, void *ra, uint64_t t0, uint64_t t1, uint64_t bytes, uint64_t key);
FB_HIDDEN void fb_record_mt(int id, void *ra, uint64_t t0, uint64_t t1, uint64_t bytes);
FB_HIDDEN uint64_t fb_type_size_slow(MPI_Datatype type);
FB_HIDDEN void fb_type_sizes_forget(void);
FB_HIDDEN uint64_t fb_type_size_remember(MPI_Datatype type);
FB_HIDDEN int fb_p2p_cold(int id, void *ra, uint64_t t0, uint64_t t1, int is_send);
FB_HIDDEN int fb_ent_window(int id, uint64_t t1, int rc);
FB_HIDDEN void fb_ent_take(int id, void *ra, int count, MPI_Datatype type, int peer, MPI_Comm comm, int is_send);
FB_HIDDEN void fb_ents_flush(int forget);

/* ---------------------------------------------------------------- timing */

FB_INLINE uint64_t fb_now(void)
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
 * counted twice). Everything else (a thread's first call, MPI_THREAD_MULTIPLE, calls
 * before MPI_Init) is fb_enter_slow's. With MPI_THREAD_MULTIPLE, threads can be inside MPI
 * at the same time, so the rank's MPI time is then the time during which any of them was
 * (fb_busy_* in fb_enter_slow and fb_record_mt), not the sum of the calls. */
FB_INLINE int fb_enter_fast(void)
{
    /* One thread-local word says it all: 0 only on the MPI_Init thread, outside MPI, while
     * recording is on the fast path (fb.on 1; fb_main_gate keeps it so). The wrapper then
     * stores its start tick there (fb_start_fast). */
    return FB_LIKELY(fb_depth == 0);
}

FB_INLINE int fb_enter(int id)
{
    if (fb_enter_fast()) {
        fb_depth = 1;
        return 1;
    }
    return fb_enter_slow(id);
}

/* The fast path's clock: fb.on is 1 only where the TSC is used. */
FB_INLINE uint64_t fb_tsc(void)
{
#ifdef FB_HAVE_TSC
    return __rdtsc();
#else
    return fb_now();
#endif
}

FB_INLINE void fb_start_fast(void)
{
    /* The TSC is far from 0 and from FB_IDLE_SLOW once a program runs. Its two halves are
     * stored as they come (edx:eax): one instruction less than joining them first. */
#ifdef FB_HAVE_TSC
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    fb_tls.depth_half[0] = lo;
    fb_tls.depth_half[1] = hi;
#else
    fb_depth = fb_tsc();
#endif
    __asm__ __volatile__("" ::: "memory"); /* what PMPI is passed from fb_tls is read from there */
}

FB_INLINE void fb_leave_fast(void)
{
    fb_depth = 0;
}

FB_INLINE void fb_leave(void)
{
    fb_depth = fb_tls.idle;
}

/* ---------------------------------------------------------------- table updates */

FB_INLINE unsigned fb_bin(uint64_t bytes)
{
    /* bytes ? 64 - clz(bytes) : 0 without a branch (one lea and one bsr); a call moves
     * fewer than 2^63 bytes. */
    return 63u - (unsigned)__builtin_clzll(2 * bytes + 1);
}

FB_INLINE unsigned fb_slot_hash(uint64_t key)
{
    return (unsigned)((key * 0x9E3779B97F4A7C15ull) >> (64 - FB_SLOT_BITS));
}

FB_INLINE uint64_t fb_slot_key(int id, const void *ra, unsigned bin)
{
    return (uint64_t)(uintptr_t)ra | ((uint64_t)(id + 1) << 48) | ((uint64_t)bin << 57);
}

/* One call: the thread's MPI time, and its slot when the slot is there and the call ends
 * in the slot's current window; anything else is the slow path's. */
FB_INLINE void fb_record(int id, fb_span_t sp, uint64_t bytes)
{
    if (!sp.fast && FB_UNLIKELY(fb.threaded)) {
        fb_record_mt(id, sp.ra, sp.t0, sp.t1, bytes);
        return;
    }
    uint64_t dt = sp.t1 - sp.t0;
    if (!sp.fast) {
        fb_thread_t *me = fb_self;
        me->ticks += dt;
        me->calls++;
    }
    uint64_t key = fb_slot_key(id, sp.ra, fb_bin(bytes));
    fb_slot_t *s = &fb.slots[fb_slot_hash(key)];
    if (FB_LIKELY(s->key == key) && FB_LIKELY(sp.t1 < s->wend)) {
        s->count++;
        s->ticks += dt;
        s->bytes += bytes;
        if (FB_UNLIKELY(dt < s->min)) s->min = dt;
        if (FB_UNLIKELY(dt > s->max)) s->max = dt;
        return;
    }
    fb_record_slow(id, sp.ra, sp.t0, sp.t1, bytes, key);
}

FB_INLINE void fb_matrix_add_sp(int layer, int world_peer, uint64_t bytes, int fast)
{
    if ((unsigned)world_peer >= (unsigned)fb.world_size) /* also MPI_PROC_NULL, -1: none */
        return;
    fb_cell_t *c = &fb.matrix[(size_t)layer * (size_t)fb.world_size + (size_t)world_peer];
    if (fast || FB_LIKELY(!fb.threaded)) {
        c->msgs++;
        c->bytes += bytes;
    } else {
        __atomic_fetch_add(&c->msgs, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&c->bytes, bytes, __ATOMIC_RELAXED);
    }
}

FB_INLINE void fb_matrix_add(int layer, int world_peer, uint64_t bytes)
{
    fb_matrix_add_sp(layer, world_peer, bytes, 0);
}

/* ---------------------------------------------------------------- argument helpers */

/* A datatype's size: from the cache when it is there (never under MPI_THREAD_MULTIPLE,
 * whose lookups all go to PMPI_Type_size). */
FB_INLINE uint64_t fb_type_size(MPI_Datatype type)
{
    uint64_t key = 0;
    memcpy(&key, &type, sizeof type < sizeof key ? sizeof type : sizeof key);
    const fb_tsize_t *e = &fb.tsizes[(key * 0x9E3779B97F4A7C15ull) >> 58];
    if (FB_LIKELY(e->key == key))
        return e->size;
    return fb_type_size_slow(type);
}

FB_INLINE uint64_t fb_bytes(int count, MPI_Datatype type)
{
    return count > 0 ? (uint64_t)count * fb_type_size(type) : 0;
}

/* The fast path's (MPI_Init thread, not MPI_THREAD_MULTIPLE) bytes: the last datatype it saw
 * and its size are kept in its thread-local block, so that a loop sending one type touches
 * no cache line of the table; another type is fb_type_size_remember's. */
FB_INLINE uint64_t fb_bytes_fast(int count, MPI_Datatype type)
{
    uint64_t key = 0;
    memcpy(&key, &type, sizeof type < sizeof key ? sizeof type : sizeof key);
    if (count <= 0)
        return 0;
    uint64_t size = FB_LIKELY(key == fb_tls.type_key) ? fb_tls.type_size : fb_type_size_remember(type);
    return (uint64_t)count * size;
}

FB_INLINE uint64_t fb_bytes_sp(int count, MPI_Datatype type, int fast)
{
    return fast ? fb_bytes_fast(count, type) : fb_bytes(count, type);
}

FB_INLINE const fb_comm_t *fb_comm(MPI_Comm comm)
{
    if (FB_LIKELY(comm == MPI_COMM_WORLD))
        return &fb.world;
    return fb_comm_lookup(comm);
}

FB_INLINE int fb_world_of(const fb_comm_t *c, int rank)
{
    if (!c || rank < 0 || rank >= c->size)
        return -1;
    return c->world[rank];
}

/* The data address of a choice buffer MPICH's mpi_f08 passes as a descriptor (mpi_x_f08ts_):
 * gfortran's and TS 29113's descriptors both start with it. */
FB_INLINE const void *fb_desc_base(const void *desc)
{
    return desc ? *(const void *const *)desc : NULL;
}

FB_INLINE int fb_in_place(const void *buf, int is_f)
{
    return is_f ? fb_fortran_in_place(buf) : buf == MPI_IN_PLACE;
}

/* Element i of a handle array that came from C (handles) or Fortran (MPI_Fint). */
FB_INLINE MPI_Datatype fb_type_at(const void *types, int i, int is_f)
{
    return is_f ? PMPI_Type_f2c(((const MPI_Fint *)types)[i]) : ((const MPI_Datatype *)types)[i];
}

FB_INLINE MPI_Request fb_req_at(const void *reqs, int i, int is_f)
{
    return is_f ? PMPI_Request_f2c(((const MPI_Fint *)reqs)[i]) : ((const MPI_Request *)reqs)[i];
}

FB_INLINE uint64_t fb_sum(const int *counts, int n)
{
    uint64_t s = 0;
    if (!counts)
        return 0;
    for (int i = 0; i < n; i++)
        if (counts[i] > 0) s += (uint64_t)counts[i];
    return s;
}

/* ---------------------------------------------------------------- templates per KIND
 * Every template takes (call id, the call's span, called from Fortran) and then the
 * arguments its roles name, in the order gen_wrappers.py passes them. */

#define FB_UNUSED(x) (void)(x)

FB_INLINE void fb_rec_plain(int id, fb_span_t sp, int is_f)
{
    FB_UNUSED(is_f);
    fb_record(id, sp, 0);
}

/* A call that moves bytes to or from one peer (world rank, -1 for none): its size, and
 * its entry in a matrix layer. */
FB_INLINE void fb_rec_moved(int id, fb_span_t sp, int layer, uint64_t bytes, int world_peer)
{
    fb_record(id, sp, bytes);
    fb_matrix_add_sp(layer, world_peer, bytes, sp.fast);
}

/* Point-to-point send (also Sendrecv: the send half): message size and a matrix entry. */
FB_INLINE int fb_p2p_peer(int peer, MPI_Comm comm)
{
    /* MPI_COMM_WORLD's ranks are world ranks (fb_matrix_add_sp checks the range). */
    return comm == MPI_COMM_WORLD ? peer : peer >= 0 ? fb_world_of(fb_comm(comm), peer) : -1;
}

FB_INLINE void fb_rec_send(int id, fb_span_t sp, int is_f, int count, MPI_Datatype type, int peer, MPI_Comm comm)
{
    FB_UNUSED(is_f);
    fb_rec_moved(id, sp, FB_L_P2P, fb_bytes_sp(count, type, sp.fast), fb_p2p_peer(peer, comm));
}

FB_INLINE void fb_rec_recv(int id, fb_span_t sp, int is_f, int count, MPI_Datatype type)
{
    FB_UNUSED(is_f);
    fb_record(id, sp, fb_bytes_sp(count, type, sp.fast));
}

/* The fast path's point-to-point record (MPI_Send, MPI_Recv, ...: the arguments wait in
 * fb_tls.p2p_*, the return code in fb_tls.rc): a message on MPI_COMM_WORLD of the thread's
 * last datatype whose slot is in its window. Anything else (another communicator or
 * datatype, a slot to find or make, a window ending) is fb_p2p_cold's, reached by a tail
 * call, so that no value waits in a register across a call: the wrapper saves one register. */
FB_INLINE int fb_p2p_fast(int id, void *ra, int is_send)
{
    uint64_t t1 = fb_tsc(), t0 = fb_depth;
    fb_leave_fast();
    uint64_t tkey = 0;
    memcpy(&tkey, &fb_tls.p2p_type, sizeof(MPI_Datatype) < sizeof tkey ? sizeof(MPI_Datatype) : sizeof tkey);
    if (FB_UNLIKELY(tkey != fb_tls.type_key) || (is_send && FB_UNLIKELY(fb_tls.p2p_comm != MPI_COMM_WORLD)))
        return fb_p2p_cold(id, ra, t0, t1, is_send);
    int count = fb_tls.p2p_count;
    uint64_t n = count > 0 ? (uint64_t)count : 0; /* a conditional move, not a branch */
    uint64_t bytes = n * fb_tls.type_size, dt = t1 - t0;
    uint64_t key = fb_slot_key(id, ra, fb_bin(bytes));
    fb_slot_t *s = &fb.slots[fb_slot_hash(key)];
    if (FB_UNLIKELY(s->key != key) || FB_UNLIKELY(t1 >= s->wend))
        return fb_p2p_cold(id, ra, t0, t1, is_send);
    s->count++;
    s->ticks += dt;
    s->bytes += bytes;
    if (FB_UNLIKELY(dt < s->min)) s->min = dt;
    if (FB_UNLIKELY(dt > s->max)) s->max = dt;
    if (is_send)
        fb_matrix_add_sp(FB_L_P2P, fb_tls.p2p_peer, bytes, 1); /* MPI_COMM_WORLD: world ranks */
    return fb_tls.rc;
}

/* A call that repeated its wrapper's last arguments (fb_ent_t): its time into the entry. A
 * call ending past the entries' window is fb_ent_window's (a tail call). */
FB_INLINE int fb_ent_hit(int id, fb_ent_t *e, int rc)
{
    uint64_t t1 = fb_tsc();
    if (FB_UNLIKELY(t1 >= fb_entwin.wend))
        return fb_ent_window(id, t1, rc);
    uint64_t dt = t1 - fb_depth;
    fb_leave_fast();
    e->n++;
    e->ticks += dt;
    if (FB_UNLIKELY(dt < e->min)) e->min = dt;
    if (FB_UNLIKELY(dt > e->max)) e->max = dt;
    return rc;
}

/* MPI-IO reads and writes: count x type of the buffer. */
FB_INLINE void fb_rec_io(int id, fb_span_t sp, int is_f, int count, MPI_Datatype type)
{
    FB_UNUSED(is_f);
    fb_record(id, sp, fb_bytes(count, type));
}

FB_INLINE void fb_rec_psend(int id, fb_span_t sp, int is_f, int count, MPI_Datatype type, int peer,
                                MPI_Comm comm, MPI_Request req)
{
    FB_UNUSED(is_f);
    fb_record(id, sp, 0);
    int world_peer = peer >= 0 ? fb_world_of(fb_comm(comm), peer) : -1;
    fb_preq_register(req, world_peer, fb_bytes(count, type), 1);
}

FB_INLINE void fb_rec_precv(int id, fb_span_t sp, int is_f, int count, MPI_Datatype type, MPI_Request req)
{
    FB_UNUSED(is_f);
    fb_record(id, sp, 0);
    fb_preq_register(req, -1, fb_bytes(count, type), 0);
}

FB_INLINE uint64_t fb_started(MPI_Request req)
{
    int world_peer;
    uint64_t bytes;
    int kind = fb_preq_find(req, &world_peer, &bytes);
    if (kind == 1)
        fb_matrix_add(FB_L_P2P, world_peer, bytes);
    return kind ? bytes : 0;
}

FB_INLINE void fb_rec_start(int id, fb_span_t sp, int is_f, MPI_Request req)
{
    FB_UNUSED(is_f);
    fb_record(id, sp, fb_started(req));
}

FB_INLINE void fb_rec_startall(int id, fb_span_t sp, int is_f, int n, const void *reqs)
{
    uint64_t bytes = 0;
    for (int i = 0; i < n; i++)
        bytes += fb_started(fb_req_at(reqs, i, is_f));
    fb_record(id, sp, bytes);
}

FB_INLINE void fb_rec_reqfree(int id, fb_span_t sp, int is_f, MPI_Request req)
{
    FB_UNUSED(is_f);
    fb_record(id, sp, 0);
    fb_preq_forget(req);
}

/* Logical collective flows for the "coll" matrix layer: what this rank contributes to
 * each peer, whatever algorithm the library uses. Not kept for intercommunicators. */
FB_INLINE void fb_coll_to_all(const fb_comm_t *c, uint64_t bytes)
{
    if (!c || c->inter)
        return;
    for (int i = 0; i < c->size; i++)
        if (i != c->rank)
            fb_matrix_add(FB_L_COLL, c->world[i], bytes);
}

FB_INLINE void fb_coll_to_root(const fb_comm_t *c, int root, uint64_t bytes)
{
    if (!c || c->inter || root == c->rank)
        return;
    fb_matrix_add(FB_L_COLL, fb_world_of(c, root), bytes);
}

FB_INLINE void fb_rec_bcast(int id, fb_span_t sp, int is_f, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    FB_UNUSED(is_f);
    uint64_t bytes = fb_bytes(count, type);
    fb_record(id, sp, bytes);
    const fb_comm_t *c = fb_comm(comm);
    if (c && !c->inter && root == c->rank)
        fb_coll_to_all(c, bytes);
}

FB_INLINE void fb_rec_reduce(int id, fb_span_t sp, int is_f, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    FB_UNUSED(is_f);
    uint64_t bytes = fb_bytes(count, type);
    fb_record(id, sp, bytes);
    fb_coll_to_root(fb_comm(comm), root, bytes);
}

/* Allreduce, Scan, Exscan, Reduce_scatter_block: count x type, no pairwise flow. */
FB_INLINE void fb_rec_reduction(int id, fb_span_t sp, int is_f, int count, MPI_Datatype type)
{
    FB_UNUSED(is_f);
    fb_record(id, sp, fb_bytes(count, type));
}

/* Reduce_scatter: the whole vector reduced (sum of recvcounts), as mpiP counts it. */
FB_INLINE void fb_rec_redscat(int id, fb_span_t sp, int is_f, const int *rcounts, MPI_Datatype type, MPI_Comm comm)
{
    FB_UNUSED(is_f);
    int n = 0;
    if (PMPI_Comm_size(comm, &n) != MPI_SUCCESS) n = 0;
    fb_record(id, sp, fb_sum(rcounts, n) * fb_type_size(type));
}

/* Gather: each rank's contribution (the root's, with MPI_IN_PLACE, is its receive block). */
FB_INLINE void fb_rec_gather(int id, fb_span_t sp, int is_f, const void *sbuf, int scount, MPI_Datatype stype,
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
    fb_record(id, sp, bytes);
    fb_coll_to_root(c, root, bytes);
}

FB_INLINE void fb_rec_gatherv(int id, fb_span_t sp, int is_f, const void *sbuf, int scount, MPI_Datatype stype,
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
    fb_record(id, sp, bytes);
    fb_coll_to_root(c, root, bytes);
}

/* Scatter: the block each rank receives; the root sends one block to every other rank. */
FB_INLINE void fb_rec_scatter(int id, fb_span_t sp, int is_f, int scount, MPI_Datatype stype, const void *rbuf,
                                  int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    FB_UNUSED(rbuf); FB_UNUSED(is_f);
    const fb_comm_t *c = fb_comm(comm);
    uint64_t bytes;
    if (c && c->inter) {
        bytes = root == MPI_ROOT ? fb_bytes(scount, stype) : root == MPI_PROC_NULL ? 0 : fb_bytes(rcount, rtype);
        fb_record(id, sp, bytes);
        return;
    }
    int is_root = c && root == c->rank;
    bytes = is_root ? fb_bytes(scount, stype) : fb_bytes(rcount, rtype);
    fb_record(id, sp, bytes);
    if (is_root)
        fb_coll_to_all(c, bytes);
}

FB_INLINE void fb_rec_scatterv(int id, fb_span_t sp, int is_f, const int *scounts, MPI_Datatype stype,
                                   const void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    FB_UNUSED(rbuf); FB_UNUSED(is_f);
    const fb_comm_t *c = fb_comm(comm);
    int is_root = c && (c->inter ? root == MPI_ROOT : root == c->rank);
    if (c && c->inter && root == MPI_PROC_NULL) {
        fb_record(id, sp, 0);
        return;
    }
    if (!is_root) {
        fb_record(id, sp, fb_bytes(rcount, rtype));
        return;
    }
    uint64_t tsize = fb_type_size(stype);
    fb_record(id, sp, fb_sum(scounts, c->size) * tsize);
    if (c->inter || !scounts)
        return;
    for (int i = 0; i < c->size; i++)
        if (i != c->rank && scounts[i] > 0)
            fb_matrix_add(FB_L_COLL, c->world[i], (uint64_t)scounts[i] * tsize);
}

FB_INLINE void fb_rec_allgather(int id, fb_span_t sp, int is_f, const void *sbuf, int scount, MPI_Datatype stype,
                                    int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    uint64_t bytes = fb_in_place(sbuf, is_f) ? fb_bytes(rcount, rtype) : fb_bytes(scount, stype);
    fb_record(id, sp, bytes);
    fb_coll_to_all(fb_comm(comm), bytes);
}

FB_INLINE void fb_rec_allgatherv(int id, fb_span_t sp, int is_f, const void *sbuf, int scount, MPI_Datatype stype,
                                     const int *rcounts, MPI_Datatype rtype, MPI_Comm comm)
{
    const fb_comm_t *c = fb_comm(comm);
    uint64_t bytes;
    if (fb_in_place(sbuf, is_f))
        bytes = (c && rcounts) ? fb_bytes(rcounts[c->rank], rtype) : 0;
    else
        bytes = fb_bytes(scount, stype);
    fb_record(id, sp, bytes);
    fb_coll_to_all(c, bytes);
}

/* Alltoall: the per-destination block, as mpiP and IPM count it. */
FB_INLINE void fb_rec_alltoall(int id, fb_span_t sp, int is_f, const void *sbuf, int scount, MPI_Datatype stype,
                                   int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    uint64_t bytes = fb_in_place(sbuf, is_f) ? fb_bytes(rcount, rtype) : fb_bytes(scount, stype);
    fb_record(id, sp, bytes);
    fb_coll_to_all(fb_comm(comm), bytes);
}

/* Alltoallv: everything this rank sends (sum of sendcounts), as mpiP counts it. */
FB_INLINE void fb_rec_alltoallv(int id, fb_span_t sp, int is_f, const void *sbuf, const int *scounts,
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
    fb_record(id, sp, fb_sum(counts, n) * tsize);
    if (!c || c->inter || !counts)
        return;
    for (int i = 0; i < n; i++)
        if (i != c->rank && counts[i] > 0)
            fb_matrix_add(FB_L_COLL, c->world[i], (uint64_t)counts[i] * tsize);
}

FB_INLINE void fb_rec_alltoallw(int id, fb_span_t sp, int is_f, const void *sbuf, const int *scounts,
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
    fb_record(id, sp, total);
}

/* Neighbourhood collectives: per-neighbour block (nbr), or all sent (nbrv, nbrw). */
FB_INLINE void fb_rec_nbr(int id, fb_span_t sp, int is_f, int scount, MPI_Datatype stype, MPI_Comm comm)
{
    FB_UNUSED(is_f); FB_UNUSED(comm);
    fb_record(id, sp, fb_bytes(scount, stype));
}

FB_INLINE void fb_rec_nbrv(int id, fb_span_t sp, int is_f, const int *scounts, MPI_Datatype stype, MPI_Comm comm)
{
    FB_UNUSED(is_f);
    const fb_comm_t *c = fb_comm(comm);
    int n = c && c->outdegree > 0 ? c->outdegree : 0;
    fb_record(id, sp, fb_sum(scounts, n) * fb_type_size(stype));
}

FB_INLINE void fb_rec_nbrw(int id, fb_span_t sp, int is_f, const int *scounts, const void *stypes, MPI_Comm comm)
{
    const fb_comm_t *c = fb_comm(comm);
    int n = c && c->outdegree > 0 ? c->outdegree : 0;
    uint64_t total = 0;
    for (int i = 0; scounts && stypes && i < n; i++)
        if (scounts[i] > 0)
            total += (uint64_t)scounts[i] * fb_type_size(fb_type_at(stypes, i, is_f));
    fb_record(id, sp, total);
}

/* One-sided: origin count x origin type; Put/Accumulate move data to the target, Get from it.
 * A call without a count role (Fetch_and_op, Compare_and_swap) moves one element. */
FB_INLINE int fb_win_peer(MPI_Win win, int peer)
{
    return peer >= 0 ? fb_world_of(fb_win_lookup(win), peer) : -1;
}

FB_INLINE void fb_rec_put(int id, fb_span_t sp, int is_f, int count, MPI_Datatype type, int peer, MPI_Win win)
{
    FB_UNUSED(is_f);
    fb_rec_moved(id, sp, FB_L_RMA_TO, fb_bytes(count, type), fb_win_peer(win, peer));
}

FB_INLINE void fb_rec_get(int id, fb_span_t sp, int is_f, int count, MPI_Datatype type, int peer, MPI_Win win)
{
    FB_UNUSED(is_f);
    fb_rec_moved(id, sp, FB_L_RMA_FROM, fb_bytes(count, type), fb_win_peer(win, peer));
}

FB_INLINE void fb_rec_winnew(int id, fb_span_t sp, int is_f, MPI_Comm comm, MPI_Win newwin)
{
    FB_UNUSED(is_f);
    fb_record(id, sp, 0);
    if (newwin != MPI_WIN_NULL)
        fb_win_created(newwin, comm);
}

/* MPI_Type_free: a 0-byte call; its wrapper has made the datatype size cache forget
 * every handle (gen_wrappers.py: forget_sizes), recorded or not. */
FB_INLINE void fb_rec_typefree(int id, fb_span_t sp, int is_f)
{
    FB_UNUSED(is_f);
    fb_record(id, sp, 0);
}

FB_INLINE void fb_rec_commnew(int id, fb_span_t sp, int is_f, MPI_Comm newcomm)
{
    FB_UNUSED(is_f);
    fb_record(id, sp, 0);
    if (newcomm != MPI_COMM_NULL)
        fb_comm_created(newcomm);
}

#endif
