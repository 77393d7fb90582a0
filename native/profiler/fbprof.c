/* libfabricbench-prof runtime: set-up at MPI_Init, the communicator / window / persistent
 * request lookup tables, and the aggregation at MPI_Finalize that writes one JSON profile.
 *
 * Nothing here talks to other ranks before MPI_Finalize: mapping a communicator's ranks
 * to world ranks uses local group calls only, so a rank that dies mid-run leaves the
 * others where the application left them (inside MPI), never inside the profiler. */
#include "fbprof.h"
#include "fb_quiesce.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#define FB_PROFILE_VERSION 1
#define FB_TABLE_SLOTS 4096 /* power of two: live communicators + windows, persistent requests */
#define FB_NMODULES 64      /* distinct modules (executable, libraries) call sites are named in */
#define FB_PATH 512
#define FB_SYMBOL 96

FB_HIDDEN fb_state_t fb;
FB_HIDDEN _Thread_local fb_tls_t fb_tls __attribute__((tls_model("initial-exec"))) = {.depth = FB_UNCLAIMED, .idle = FB_IDLE_SLOW};

static int fb_thread_level;
static pthread_t fb_main_thread;
static fb_tls_t *fb_main_tls; /* the MPI_Init thread's fb_tls */

static void fb_busy_enter(void);
static void fb_busy_leave(void);

/* ------------------------------------------------------------------ threads
 * Each thread that calls MPI gets a slot for its MPI time on its first call. With
 * MPI_THREAD_MULTIPLE the rank's MPI time is the time during which at least one of its
 * threads was inside a recorded call: a count of the threads inside, and the time it
 * was above zero, under a lock (only threaded programs take it). */

static fb_thread_t fb_thread_slots[FB_MAX_THREADS];
static pthread_mutex_t fb_busy_lock = PTHREAD_MUTEX_INITIALIZER;
static int fb_busy_inside;
static uint64_t fb_busy_since, fb_busy_ticks;

fb_thread_t *fb_thread_claim(void)
{
    int i = __atomic_fetch_add(&fb.nthreads, 1, __ATOMIC_RELAXED);
    if (i >= FB_MAX_THREADS - 1) {
        i = FB_MAX_THREADS - 1;
        __atomic_store_n(&fb_thread_slots[i].shared, 1, __ATOMIC_RELAXED);
    }
    fb_self = &fb_thread_slots[i];
    if (fb_depth >= FB_UNCLAIMED) {
        fb_depth += FB_IDLE_SLOW - FB_UNCLAIMED;
        fb_tls.idle = FB_IDLE_SLOW;
    }
    /* MPI_THREAD_SINGLE and FUNNELED allow MPI calls from the main thread only. */
    if (fb.initialized && !pthread_equal(pthread_self(), fb_main_thread) && fb_thread_level < MPI_THREAD_SERIALIZED)
        __atomic_store_n(&fb_self->outside_level, 1, __ATOMIC_RELAXED);
    return fb_self;
}

/* fb.on changed (MPI_Init, MPI_Pcontrol, MPI_Finalize): the MPI_Init thread's idle depth
 * becomes 0 (its calls take the fast path) while fb.on is 1, FB_IDLE_SLOW otherwise (they
 * take fb_enter_slow, which looks at fb.on). Its nesting is kept (MPICH's Fortran MPI_INIT
 * calls the C MPI_Init inside it). Called outside any recorded call: the thread is not
 * inside MPI then, or another thread calls MPI_Pcontrol under MPI_THREAD_SERIALIZED. */
void fb_main_gate(void)
{
    fb_tls_t *t = fb_main_tls;
    if (!t)
        return;
    int idle = __atomic_load_n(&fb.on, __ATOMIC_RELAXED) == 1 ? 0 : FB_IDLE_SLOW;
    t->depth += idle - t->idle;
    t->idle = idle;
}

/* A call before MPI_Init: counted (no table or clock is set up yet), reported apart. */
static void fb_before_init(int id)
{
    __atomic_fetch_add(&fb.before_init[id], 1, __ATOMIC_RELAXED);
}

/* fb_enter's other cases: the thread's first call (its slot is claimed), MPI_THREAD_MULTIPLE
 * (the count of threads inside MPI), a nested call or recording off (nothing), a call
 * before MPI_Init (counted). */
int fb_enter_slow(int id)
{
    if (FB_UNLIKELY(!fb_self)) /* depth FB_UNCLAIMED (a fast-path call's depth is a tick) */
        fb_thread_claim();
    if (fb_depth != (uint64_t)fb_tls.idle)
        return 0;
    if (fb.on) {
        fb_depth = 1;
        if (fb.threaded)
            fb_busy_enter();
        return 1;
    }
    if (!fb.initialized)
        fb_before_init(id);
    return 0;
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

static inline void fb_minmax(uint64_t *min, uint64_t *max, uint64_t dt)
{
    if (FB_LIKELY(!fb.threaded)) {
        if (dt < *min) *min = dt;
        if (dt > *max) *max = dt;
    } else {
        uint64_t cur = __atomic_load_n(min, __ATOMIC_RELAXED);
        while (dt < cur && !__atomic_compare_exchange_n(min, &cur, dt, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
        fb_atomic_max(max, dt);
    }
}

/* ------------------------------------------------------------------ time windows
 * Calls reach the windows through their slot (fb_slot_flush: the slot's totals of one
 * window), or one by one (fb_window_direct: under MPI_THREAD_MULTIPLE, a call that ran
 * through several windows, a call whose slot found no place). Here the windows grow
 * (pairs merge, the length doubles) and a call spreads its time over the windows it ran
 * through (its count, bytes and size go to the window it started in).
 * Under MPI_THREAD_MULTIPLE a call recorded by another thread while pairs merge may land
 * in a neighbouring window; the per-call totals are not affected. */

static pthread_mutex_t fb_win_lock = PTHREAD_MUTEX_INITIALIZER;

/* The call's window column + 1, given out on its first call on this rank. */
static unsigned fb_window_column(int id)
{
    pthread_mutex_lock(&fb_win_lock);
    unsigned col = fb.win_col[id];
    if (col == 0) {
        if (fb.win_ncols < FB_WCOLS - 1) {
            col = ++fb.win_ncols;
            fb.win_call[col - 1] = (int16_t)id;
        } else {
            col = FB_WCOLS;
            fb.win_call[FB_WCOLS - 1] = -1;
        }
        __atomic_store_n(&fb.win_col[id], (uint8_t)col, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&fb_win_lock);
    return col;
}

static void fb_window_grow(uint64_t rel)
{
    while ((rel >> fb.win_shift) >= FB_NWIN) {
        for (size_t w = 0; w < FB_NWIN / 2; w++) {
            for (size_t c = 0; c < FB_WCOLS; c++) {
                const fb_wcell_t *a = &fb.windows[2 * w * FB_WCOLS + c], *b = &fb.windows[(2 * w + 1) * FB_WCOLS + c];
                fb_wcell_t m = {a->ticks + b->ticks, a->bytes + b->bytes, a->bins | b->bins, a->count + b->count};
                fb.windows[w * FB_WCOLS + c] = m;
            }
        }
        memset(&fb.windows[(size_t)(FB_NWIN / 2) * FB_WCOLS], 0, (size_t)(FB_NWIN / 2) * FB_WCOLS * sizeof(fb_wcell_t));
        __atomic_store_n(&fb.win_shift, fb.win_shift + 1, __ATOMIC_RELEASE);
    }
}

static void fb_window_spread(int id, uint64_t rel, uint64_t dt, uint64_t bytes, unsigned bin)
{
    unsigned col = __atomic_load_n(&fb.win_col[id], __ATOMIC_ACQUIRE);
    if (col == 0)
        col = fb_window_column(id);
    if (fb.threaded)
        pthread_mutex_lock(&fb_win_lock);
    uint64_t end = rel + dt;
    if ((end >> fb.win_shift) >= FB_NWIN)
        fb_window_grow(end);
    unsigned shift = fb.win_shift;
    uint64_t w = rel >> shift, last = end >> shift;
    fb_wcell_t *first = &fb.windows[w * FB_WCOLS + col - 1];
    fb_add(&first->count, 1);
    fb_add(&first->bytes, bytes);
    __atomic_fetch_or(&first->bins, 1ull << (bin < 63 ? bin : 63), __ATOMIC_RELAXED);
    for (uint64_t t = rel; w <= last; w++) {
        uint64_t wend = (w + 1) << shift;
        uint64_t part = (end < wend ? end : wend) - t;
        fb_add(&fb.windows[w * FB_WCOLS + col - 1].ticks, part);
        t += part;
    }
    if (fb.threaded)
        pthread_mutex_unlock(&fb_win_lock);
}

/* A call, or a slot's calls of one window, into the window w started in (w in range). */
static void fb_window_cell_add(int id, uint64_t w, uint64_t count, uint64_t ticks, uint64_t bytes, unsigned bin)
{
    unsigned col = __atomic_load_n(&fb.win_col[id], __ATOMIC_ACQUIRE);
    if (FB_UNLIKELY(col == 0))
        col = fb_window_column(id);
    fb_wcell_t *c = &fb.windows[w * FB_WCOLS + col - 1];
    uint64_t bit = 1ull << (bin < 63 ? bin : 63);
    fb_add(&c->count, count);
    fb_add(&c->ticks, ticks);
    fb_add(&c->bytes, bytes);
    if (FB_LIKELY(!fb.threaded))
        c->bins |= bit;
    else
        __atomic_fetch_or(&c->bins, bit, __ATOMIC_RELAXED);
}

/* One call into the window it started in, or spread over those it ran through. */
static void fb_window_direct(int id, uint64_t t0, uint64_t dt, uint64_t bytes, unsigned bin)
{
    uint64_t rel = t0 > fb.win_origin ? t0 - fb.win_origin : 0;
    unsigned shift = __atomic_load_n(&fb.win_shift, __ATOMIC_ACQUIRE);
    uint64_t w = rel >> shift;
    if (FB_UNLIKELY(w != (rel + dt) >> shift || w >= FB_NWIN))
        fb_window_spread(id, rel, dt, bytes, bin);
    else
        fb_window_cell_add(id, w, 1, dt, bytes, bin);
}

static void fb_busy_enter(void)
{
    pthread_mutex_lock(&fb_busy_lock);
    if (fb_busy_inside++ == 0)
        fb_busy_since = fb_now();
    pthread_mutex_unlock(&fb_busy_lock);
}

static void fb_busy_leave(void)
{
    pthread_mutex_lock(&fb_busy_lock);
    if (--fb_busy_inside == 0)
        fb_busy_ticks += fb_now() - fb_busy_since;
    pthread_mutex_unlock(&fb_busy_lock);
}

/* ------------------------------------------------------------------ slots
 * The fast path (fb_record in fbprof.h) adds a call to its slot when the slot exists and
 * the call ends inside the slot's current window. Otherwise, here: find or claim the slot,
 * move its window's totals into the windows (fb_slot_flush), and start its next window
 * with this call (or spread a call that ran through several windows). */

static inline int fb_key_call(uint64_t key) { return (int)((key >> 48) & 0x1ff) - 1; }
static inline unsigned fb_key_bin(uint64_t key) { return (unsigned)(key >> 57); }

static void fb_slot_flush(fb_slot_t *s)
{
    if (s->count == 0 && s->ticks == 0)
        return;
    uint64_t rel = s->wstart > fb.win_origin ? s->wstart - fb.win_origin : 0;
    uint64_t w = rel >> fb.win_shift; /* the windows only ever grow: still in range */
    fb_window_cell_add(fb_key_call(s->key), w < FB_NWIN ? w : FB_NWIN - 1, s->count, s->ticks, s->bytes,
                       fb_key_bin(s->key));
    fb_total_t *t = &fb.totals[s - fb.slots];
    t->count += s->count;
    t->ticks += s->ticks;
    t->bytes += s->bytes;
    s->count = s->ticks = s->bytes = 0;
}

/* The slot of key: found, or claimed (atomically under MPI_THREAD_MULTIPLE); NULL if none
 * is free within FB_SLOT_PROBES. */
static fb_slot_t *fb_slot_find(uint64_t key)
{
    unsigned h = fb_slot_hash(key);
    for (unsigned p = 0; p < FB_SLOT_PROBES; p++) {
        fb_slot_t *s = &fb.slots[(h + p) & (FB_NSLOTS - 1)];
        uint64_t k = __atomic_load_n(&s->key, __ATOMIC_RELAXED);
        if (k == key)
            return s;
        if (k != 0)
            continue;
        if (!fb.threaded) {
            s->key = key;
            return s;
        }
        if (__atomic_compare_exchange_n(&s->key, &k, key, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED) || k == key)
            return s;
    }
    return NULL;
}

/* A call whose slot found no place: the [call][size bin] table and the windows directly. */
static void fb_record_unslotted(int id, uint64_t t0, uint64_t dt, uint64_t bytes, unsigned bin)
{
    fb_stat_t *st = &fb.stats[(unsigned)id * FB_NBINS + bin];
    fb_add(&st->count, 1);
    fb_add(&st->ticks, dt);
    fb_add(&st->bytes, bytes);
    if (!fb.threaded) { /* the table keeps the minimum itself (UINT64_MAX: none yet) */
        if (dt < st->min) st->min = dt;
        if (dt > st->max) st->max = dt;
    } else {
        uint64_t cur = __atomic_load_n(&st->min, __ATOMIC_RELAXED);
        while (dt < cur && !__atomic_compare_exchange_n(&st->min, &cur, dt, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
        fb_atomic_max(&st->max, dt);
    }
    fb_window_direct(id, t0, dt, bytes, bin);
    fb_add(&fb.sites_dropped, 1);
}

void fb_record_slow(int id, void *ra, uint64_t t0, uint64_t t1, uint64_t bytes, uint64_t key)
{
    (void)ra; /* in the key */
    fb_span_t sp = {ra, t0, t1, 0};
    uint64_t dt = sp.t1 - sp.t0;
    unsigned bin = fb_key_bin(key);
    fb_slot_t *s = fb_slot_find(key);
    if (!s) {
        fb_record_unslotted(id, sp.t0, dt, bytes, bin);
        return;
    }
    fb_minmax(&s->min, &s->max, dt);
    if (sp.t1 < s->wend) { /* found after a probe: the fast path's work */
        s->count++;
        s->ticks += dt;
        s->bytes += bytes;
        return;
    }
    fb_slot_flush(s);
    uint64_t rel0 = sp.t0 > fb.win_origin ? sp.t0 - fb.win_origin : 0, rel1 = rel0 + dt;
    if ((rel1 >> fb.win_shift) >= FB_NWIN)
        fb_window_grow(rel1);
    unsigned shift = fb.win_shift;
    if ((rel0 >> shift) == (rel1 >> shift)) {
        s->wstart = fb.win_origin + ((rel0 >> shift) << shift);
        s->wend = s->wstart + (1ull << shift);
        s->count = 1;
        s->ticks = dt;
        s->bytes = bytes;
    } else { /* it ran through several windows: spread now, the next call starts a window */
        s->wend = 0;
        fb_window_spread(id, rel0, dt, bytes, bin);
        fb_total_t *t = &fb.totals[s - fb.slots];
        t->count++;
        t->ticks += dt;
        t->bytes += bytes;
    }
}

/* MPI_THREAD_MULTIPLE: every call to its slot's totals and its window, with atomic adds. */
void fb_record_mt(int id, void *ra, uint64_t t0, uint64_t t1, uint64_t bytes)
{
    fb_span_t sp = {ra, t0, t1, 0};
    fb_busy_leave();
    uint64_t dt = sp.t1 - sp.t0;
    fb_thread_t *me = fb_self;
    __atomic_fetch_add(&me->ticks, dt, __ATOMIC_RELAXED);
    __atomic_fetch_add(&me->calls, 1, __ATOMIC_RELAXED);
    unsigned bin = fb_bin(bytes);
    fb_slot_t *s = fb_slot_find(fb_slot_key(id, sp.ra, bin));
    if (!s) {
        fb_record_unslotted(id, sp.t0, dt, bytes, bin);
        return;
    }
    fb_total_t *t = &fb.totals[s - fb.slots];
    __atomic_fetch_add(&t->count, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&t->ticks, dt, __ATOMIC_RELAXED);
    __atomic_fetch_add(&t->bytes, bytes, __ATOMIC_RELAXED);
    fb_minmax(&s->min, &s->max, dt);
    fb_window_direct(id, sp.t0, dt, bytes, bin);
}

/* ------------------------------------------------------------------ repeated calls
 * fb_ent_t (fbprof.h): the MPI_Init thread's last point-to-point arguments per wrapper and
 * the totals of the calls that repeated them in the current window. Only that thread
 * touches them while it is inside a wrapper; the flushes from elsewhere (MPI_Type_free,
 * a communicator freed, MPI_Pcontrol) come under MPI_THREAD_SERIALIZED at most, when it is
 * not. */

FB_HIDDEN fb_ent_t fb_ents[FB_NCALLS];
FB_HIDDEN fb_entwin_t fb_entwin;
static int16_t fb_ents_used[FB_NCALLS]; /* the wrappers whose entry was ever taken */
static int fb_ents_nused;

/* A slot's calls of one window (n calls ending in the window of tick tref, their ticks,
 * bytes, shortest and longest) as fb_record_slow would have added them one by one. */
static void fb_slot_add_batch(int id, uint64_t key, uint64_t tref, uint64_t n, uint64_t ticks, uint64_t bytes,
                              uint64_t min, uint64_t max)
{
    unsigned bin = fb_key_bin(key);
    uint64_t rel = tref > fb.win_origin ? tref - fb.win_origin : 0;
    if ((rel >> fb.win_shift) >= FB_NWIN)
        fb_window_grow(rel);
    unsigned shift = fb.win_shift;
    uint64_t w = rel >> shift;
    fb_slot_t *s = fb_slot_find(key);
    if (!s) {
        fb_stat_t *st = &fb.stats[(unsigned)id * FB_NBINS + bin];
        st->count += n;
        st->ticks += ticks;
        st->bytes += bytes;
        if (min < st->min) st->min = min;
        if (max > st->max) st->max = max;
        fb_window_cell_add(id, w, n, ticks, bytes, bin);
        fb.sites_dropped += n;
        return;
    }
    if (min < s->min) s->min = min;
    if (max > s->max) s->max = max;
    int busy = s->wend != 0 && (s->count || s->ticks);
    uint64_t ws = busy ? ((s->wstart > fb.win_origin ? s->wstart - fb.win_origin : 0) >> shift) : w;
    if (busy && ws == w) {
        s->count += n;
        s->ticks += ticks;
        s->bytes += bytes;
    } else if (busy && ws > w) { /* the slot has moved on: straight into the window */
        fb_window_cell_add(id, w, n, ticks, bytes, bin);
        fb_total_t *t = &fb.totals[s - fb.slots];
        t->count += n;
        t->ticks += ticks;
        t->bytes += bytes;
    } else {
        fb_slot_flush(s);
        s->wstart = fb.win_origin + (w << shift);
        s->wend = s->wstart + (1ull << shift);
        s->count = n;
        s->ticks = ticks;
        s->bytes = bytes;
    }
}

static void fb_ent_flush(fb_ent_t *e)
{
    if (e->n == 0)
        return;
    uint64_t bytes = e->n * e->bytes;
    fb_slot_add_batch((int)(e - fb_ents), e->skey, fb_entwin.wstart, e->n, e->ticks, bytes, e->min, e->max);
    if (e->is_send && (unsigned)e->world_peer < (unsigned)fb.world_size) {
        fb_cell_t *c = &fb.matrix[(size_t)FB_L_P2P * (size_t)fb.world_size + (size_t)e->world_peer];
        c->msgs += e->n;
        c->bytes += bytes;
    }
    e->n = e->ticks = e->max = 0;
    e->min = UINT64_MAX;
}

/* Every entry's calls into their slots; forget: the entries are emptied too (a datatype or
 * communicator handle they hold may be freed). */
void fb_ents_flush(int forget)
{
    if (!fb.slots || fb.threaded)
        return;
    for (int i = 0; i < fb_ents_nused; i++) {
        fb_ent_t *e = &fb_ents[fb_ents_used[i]];
        fb_ent_flush(e);
        if (forget) {
            e->ra = e->mra = NULL;
            e->miss_n = UINT64_MAX;
        }
    }
}

/* fb_ent_hit's call that ended past the entries' window: every entry is flushed, this call
 * goes through its slot (it may have run through several windows), and the entries' window
 * becomes the one it ended in. */
__attribute__((cold, noinline)) int fb_ent_window(int id, uint64_t t1, int rc)
{
    uint64_t t0 = fb_depth;
    fb_leave_fast();
    fb_ents_flush(0);
    const fb_ent_t *e = &fb_ents[id];
    fb_record_slow(id, e->ra, t0, t1, e->bytes, e->skey);
    if (e->is_send)
        fb_matrix_add_sp(FB_L_P2P, e->world_peer, e->bytes, 1);
    uint64_t rel = t1 > fb.win_origin ? t1 - fb.win_origin : 0;
    if ((rel >> fb.win_shift) >= FB_NWIN)
        fb_window_grow(rel);
    unsigned shift = fb.win_shift;
    fb_entwin.wstart = fb.win_origin + ((rel >> shift) << shift);
    fb_entwin.wend = fb_entwin.wstart + (1ull << shift);
    return rc;
}

/* The entry of a send/recv wrapper takes the arguments of its call (fb_adopt_*: they came
 * twice in a row with no call of the entry's between, a loop moved on; or the entry had none
 * yet); the calls it held go to their slot first. Two call sites or sizes taking turns keep
 * the first's. */
__attribute__((cold, noinline)) void fb_ent_take(int id, void *ra, int count, MPI_Datatype type, int peer,
                                                 MPI_Comm comm, int is_send)
{
    fb_ent_t *e = &fb_ents[id];
    if (fb.threaded || fb.on != 1)
        return;
    if (!e->skey && fb_ents_nused < FB_NCALLS) /* taken for the first time: listed */
        fb_ents_used[fb_ents_nused++] = (int16_t)id;
    fb_ent_flush(e);
    uint64_t bytes = fb_bytes(count, type);
    e->ra = ra;
    e->count = count;
    e->type = type;
    e->peer = peer;
    e->comm = comm;
    e->bytes = bytes;
    e->skey = fb_slot_key(id, ra, fb_bin(bytes));
    e->is_send = is_send;
    e->world_peer = is_send ? fb_p2p_peer(peer, comm) : -1;
    e->n = e->ticks = e->max = 0;
    e->min = UINT64_MAX;
    e->mra = NULL;
    e->miss_n = UINT64_MAX;
}

/* ------------------------------------------------------------------ datatype sizes */

uint64_t fb_type_size_slow(MPI_Datatype type)
{
    if (type == MPI_DATATYPE_NULL)
        return 0;
    int size = 0;
    if (PMPI_Type_size(type, &size) != MPI_SUCCESS || size < 0)
        return 0;
    uint64_t key = 0;
    memcpy(&key, &type, sizeof type < sizeof key ? sizeof type : sizeof key);
    /* Shared by threads only under MPI_THREAD_MULTIPLE, which does without the cache. */
    if (key != 0 && fb.tsizes && !fb.threaded) {
        fb_tsize_t *e = &fb.tsizes[(key * 0x9E3779B97F4A7C15ull) >> 58];
        e->key = key;
        e->size = (uint64_t)size;
    }
    return (uint64_t)size;
}

void fb_type_sizes_forget(void)
{
    if (fb.tsizes && !fb.threaded)
        memset(fb.tsizes, 0, FB_NTSIZES * sizeof *fb.tsizes);
    /* The fast path's last datatype (the MPI_Init thread's; MPI_Type_free from another
     * thread comes under MPI_THREAD_SERIALIZED at most, when that one is not in MPI). */
    fb_tls.type_key = fb_tls.type_size = 0;
    fb_ents_flush(1); /* the entries hold datatype handles too */
    if (fb_main_tls)
        fb_main_tls->type_key = fb_main_tls->type_size = 0;
}

/* fb_p2p_fast's other cases, the whole record as any wrapper makes it (the fast path's
 * span: the MPI_Init thread, single-threaded, TSC); returns the wrapper's return code. */
__attribute__((cold, noinline)) int fb_p2p_cold(int id, void *ra, uint64_t t0, uint64_t t1, int is_send)
{
    fb_span_t sp = {ra, t0, t1, 1};
    uint64_t tkey = 0;
    memcpy(&tkey, &fb_tls.p2p_type, sizeof(MPI_Datatype) < sizeof tkey ? sizeof(MPI_Datatype) : sizeof tkey);
    if (tkey != fb_tls.type_key) /* also for a count of 0: the next call finds it */
        fb_type_size_remember(fb_tls.p2p_type);
    if (is_send)
        fb_rec_send(id, sp, 0, fb_tls.p2p_count, fb_tls.p2p_type, fb_tls.p2p_peer, fb_tls.p2p_comm);
    else
        fb_rec_recv(id, sp, 0, fb_tls.p2p_count, fb_tls.p2p_type);
    return fb_tls.rc;
}

/* fb_bytes_fast's other datatype: its size, kept as the thread's last one. */
__attribute__((cold, noinline)) uint64_t fb_type_size_remember(MPI_Datatype type)
{
    uint64_t size = fb_type_size(type), key = 0;
    memcpy(&key, &type, sizeof type < sizeof key ? sizeof type : sizeof key);
    fb_tls.type_key = key;
    fb_tls.type_size = size;
    return size;
}

/* ------------------------------------------------------------------ handle tables
 * Open addressing keyed by the handle's bits. Lookups read without a lock (a slot's
 * key is published after its value); inserts and removals take a mutex. A handle freed
 * by MPI is removed through the attribute delete callback, whichever binding freed it. */

enum { FB_K_EMPTY = 0, FB_K_COMM = 1, FB_K_WIN = 2, FB_K_DEAD = 3 };

typedef struct {
    uint64_t key;
    int kind;
    fb_comm_t info;
} fb_handle_slot_t;

typedef struct {
    uint64_t key;
    int kind; /* 0 empty, 1 send, 2 recv, 3 removed */
    int world_peer;
    uint64_t bytes;
} fb_req_slot_t;

static fb_handle_slot_t *fb_handles;
static fb_req_slot_t *fb_reqs;
static pthread_mutex_t fb_table_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t fb_dropped_requests;

static uint64_t fb_key_of(const void *handle, size_t size)
{
    uint64_t key = 0;
    memcpy(&key, handle, size < sizeof key ? size : sizeof key);
    return key;
}

static unsigned fb_hash(uint64_t key)
{
    key ^= key >> 29;
    key *= 0x9E3779B97F4A7C15ull;
    return (unsigned)(key >> 40) & (FB_TABLE_SLOTS - 1);
}

static fb_handle_slot_t *fb_handle_find(uint64_t key, int kind)
{
    if (!fb_handles)
        return NULL;
    unsigned h = fb_hash(key);
    for (unsigned probe = 0; probe < FB_TABLE_SLOTS; probe++) {
        fb_handle_slot_t *s = &fb_handles[(h + probe) & (FB_TABLE_SLOTS - 1)];
        int k = __atomic_load_n(&s->kind, __ATOMIC_ACQUIRE);
        if (k == FB_K_EMPTY)
            return NULL;
        if (k == kind && s->key == key)
            return s;
    }
    return NULL;
}

/* Builds the rank map of a group (and frees the group) and stores it under key; returns
 * NULL, counted as untracked, if the table is full. */
static const fb_comm_t *fb_handle_insert(uint64_t key, int kind, MPI_Group *group, int rank, int inter,
                                         int outdegree, int *is_new)
{
    *is_new = 0;
    int n = 0;
    PMPI_Group_size(*group, &n);
    int *world = malloc((size_t)(n > 0 ? n : 1) * sizeof *world);
    int *ranks = malloc((size_t)(n > 0 ? n : 1) * sizeof *ranks);
    if (world && ranks) {
        for (int i = 0; i < n; i++)
            ranks[i] = i;
        PMPI_Group_translate_ranks(*group, n, ranks, fb.world_group, world);
    }
    PMPI_Group_free(group);
    free(ranks);
    if (!world || !ranks) {
        free(world);
        __atomic_fetch_add(&fb.untracked, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (world[i] == MPI_UNDEFINED) world[i] = -1;

    const fb_comm_t *result = NULL;
    pthread_mutex_lock(&fb_table_lock);
    fb_handle_slot_t *existing = fb_handle_find(key, kind);
    if (existing) {
        free(world);
        result = &existing->info;
    } else {
        unsigned h = fb_hash(key);
        for (unsigned probe = 0; probe < FB_TABLE_SLOTS; probe++) {
            fb_handle_slot_t *s = &fb_handles[(h + probe) & (FB_TABLE_SLOTS - 1)];
            if (s->kind == FB_K_EMPTY || s->kind == FB_K_DEAD) {
                s->key = key;
                s->info = (fb_comm_t){.size = n, .rank = rank, .inter = inter, .outdegree = outdegree, .world = world};
                __atomic_store_n(&s->kind, kind, __ATOMIC_RELEASE);
                result = &s->info;
                *is_new = 1;
                break;
            }
        }
        if (!result)
            free(world);
    }
    pthread_mutex_unlock(&fb_table_lock);
    if (!result)
        __atomic_fetch_add(&fb.untracked, 1, __ATOMIC_RELAXED);
    return result;
}

static void fb_handle_remove(uint64_t key, int kind)
{
    pthread_mutex_lock(&fb_table_lock);
    fb_handle_slot_t *s = fb_handle_find(key, kind);
    if (s) {
        __atomic_store_n(&s->kind, FB_K_DEAD, __ATOMIC_RELEASE);
        free(s->info.world);
        s->info.world = NULL;
    }
    pthread_mutex_unlock(&fb_table_lock);
}

static int fb_comm_delete_cb(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)keyval; (void)attr; (void)extra;
    fb_handle_remove(fb_key_of(&comm, sizeof comm), FB_K_COMM);
    fb_ents_flush(1); /* a send's entry may hold its handle and peer */
    return MPI_SUCCESS;
}

static int fb_win_delete_cb(MPI_Win win, int keyval, void *attr, void *extra)
{
    (void)keyval; (void)attr; (void)extra;
    fb_handle_remove(fb_key_of(&win, sizeof win), FB_K_WIN);
    return MPI_SUCCESS;
}

static int fb_outdegree(MPI_Comm comm, int rank)
{
    int topo = MPI_UNDEFINED, n = -1;
    if (PMPI_Topo_test(comm, &topo) != MPI_SUCCESS)
        return -1;
    if (topo == MPI_CART) {
        int ndims = 0;
        PMPI_Cartdim_get(comm, &ndims);
        n = 2 * ndims;
    } else if (topo == MPI_GRAPH) {
        PMPI_Graph_neighbors_count(comm, rank, &n);
    } else if (topo == MPI_DIST_GRAPH) {
        int indeg = 0, outdeg = 0, weighted = 0;
        PMPI_Dist_graph_neighbors_count(comm, &indeg, &outdeg, &weighted);
        n = outdeg;
    }
    return n;
}

void fb_comm_created(MPI_Comm comm)
{
    (void)fb_comm_lookup(comm);
}

const fb_comm_t *fb_comm_lookup(MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL || !fb_handles)
        return NULL;
    if (comm == MPI_COMM_WORLD)
        return &fb.world;
    uint64_t key = fb_key_of(&comm, sizeof comm);
    fb_handle_slot_t *s = fb_handle_find(key, FB_K_COMM);
    if (FB_LIKELY(s != NULL))
        return &s->info;

    /* First use of a communicator the profiler did not see created (or a full table). */
    int inter = 0, rank = 0;
    MPI_Group group;
    PMPI_Comm_test_inter(comm, &inter);
    PMPI_Comm_rank(comm, &rank);
    if (inter ? PMPI_Comm_remote_group(comm, &group) : PMPI_Comm_group(comm, &group))
        return NULL;
    int is_new;
    const fb_comm_t *info =
        fb_handle_insert(key, FB_K_COMM, &group, rank, inter, inter ? -1 : fb_outdegree(comm, rank), &is_new);
    if (is_new)
        PMPI_Comm_set_attr(comm, fb.comm_keyval, NULL); /* its delete callback forgets the handle */
    return info;
}

void fb_win_created(MPI_Win win, MPI_Comm comm)
{
    (void)comm; /* the window's group is the communicator's; asking the window is enough */
    (void)fb_win_lookup(win);
}

const fb_comm_t *fb_win_lookup(MPI_Win win)
{
    if (win == MPI_WIN_NULL || !fb_handles)
        return NULL;
    uint64_t key = fb_key_of(&win, sizeof win);
    fb_handle_slot_t *s = fb_handle_find(key, FB_K_WIN);
    if (FB_LIKELY(s != NULL))
        return &s->info;
    MPI_Group group;
    if (PMPI_Win_get_group(win, &group) != MPI_SUCCESS)
        return NULL;
    int rank = 0;
    PMPI_Group_rank(group, &rank);
    int is_new;
    const fb_comm_t *info = fb_handle_insert(key, FB_K_WIN, &group, rank, 0, -1, &is_new);
    if (is_new)
        PMPI_Win_set_attr(win, fb.win_keyval, NULL); /* its delete callback forgets the handle */
    return info;
}

/* Persistent requests: what MPI_Start will send. */
void fb_preq_register(MPI_Request req, int world_peer, uint64_t bytes, int is_send)
{
    if (req == MPI_REQUEST_NULL || !fb_reqs)
        return;
    uint64_t key = fb_key_of(&req, sizeof req);
    unsigned h = fb_hash(key);
    pthread_mutex_lock(&fb_table_lock);
    fb_req_slot_t *target = NULL, *tomb = NULL;
    for (unsigned probe = 0; probe < FB_TABLE_SLOTS; probe++) {
        fb_req_slot_t *s = &fb_reqs[(h + probe) & (FB_TABLE_SLOTS - 1)];
        if (s->kind == 0) {
            target = tomb ? tomb : s;
            break;
        }
        if (s->kind == 3) {
            if (!tomb) tomb = s;
        } else if (s->key == key) {
            target = s; /* a handle MPI reused: the new request replaces the old */
            break;
        }
    }
    if (!target)
        target = tomb;
    if (target) {
        target->key = key;
        target->world_peer = world_peer;
        target->bytes = bytes;
        __atomic_store_n(&target->kind, is_send ? 1 : 2, __ATOMIC_RELEASE);
    } else {
        fb_dropped_requests++;
    }
    pthread_mutex_unlock(&fb_table_lock);
}

static fb_req_slot_t *fb_preq_slot(uint64_t key)
{
    unsigned h = fb_hash(key);
    for (unsigned probe = 0; probe < FB_TABLE_SLOTS; probe++) {
        fb_req_slot_t *s = &fb_reqs[(h + probe) & (FB_TABLE_SLOTS - 1)];
        int k = __atomic_load_n(&s->kind, __ATOMIC_ACQUIRE);
        if (k == 0)
            return NULL;
        if (k != 3 && s->key == key)
            return s;
    }
    return NULL;
}

int fb_preq_find(MPI_Request req, int *world_peer, uint64_t *bytes)
{
    if (req == MPI_REQUEST_NULL || !fb_reqs)
        return 0;
    fb_req_slot_t *s = fb_preq_slot(fb_key_of(&req, sizeof req));
    if (!s)
        return 0;
    *world_peer = s->world_peer;
    *bytes = s->bytes;
    return s->kind;
}

void fb_preq_forget(MPI_Request req)
{
    if (req == MPI_REQUEST_NULL || !fb_reqs)
        return;
    pthread_mutex_lock(&fb_table_lock);
    fb_req_slot_t *s = fb_preq_slot(fb_key_of(&req, sizeof req));
    if (s)
        __atomic_store_n(&s->kind, 3, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&fb_table_lock);
}

/* ------------------------------------------------------------------ Fortran support */

/* MPI_IN_PLACE in Fortran is the address of a common block; Open MPI names it so. MPICH keeps
 * the address of its mpif.h / use mpi one in MPIR_F_MPI_IN_PLACE (set when MPI starts) and
 * defines mpi_f08's as the object MPIR_F08_MPI_IN_PLACE. */
extern int mpi_fortran_in_place_ __attribute__((weak));
extern int mpi_fortran_in_place __attribute__((weak));
extern int mpi_fortran_in_place__ __attribute__((weak));
extern int MPI_FORTRAN_IN_PLACE __attribute__((weak));
extern void *MPIR_F_MPI_IN_PLACE __attribute__((weak));
extern int MPIR_F08_MPI_IN_PLACE __attribute__((weak));

int fb_fortran_in_place(const void *p)
{
    return p && (p == (const void *)&mpi_fortran_in_place_ || p == (const void *)&mpi_fortran_in_place ||
                 p == (const void *)&mpi_fortran_in_place__ || p == (const void *)&MPI_FORTRAN_IN_PLACE ||
                 (&MPIR_F_MPI_IN_PLACE && p == MPIR_F_MPI_IN_PLACE) || p == (const void *)&MPIR_F08_MPI_IN_PLACE);
}

void fb_fortran_missing(const char *symbol)
{
    fprintf(stderr, "libfabricbench-prof: the MPI library has no %s, which this Fortran call needs; "
                    "run without the profiler or rebuild it against this MPI\n", symbol);
    abort();
}

/* ------------------------------------------------------------------ lifecycle */

static double fb_ts_seconds(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) + 1e-9 * (double)(b->tv_nsec - a->tv_nsec);
}

static int fb_tsc_usable(void)
{
#ifdef FB_HAVE_TSC
    const char *force = getenv("FABRICBENCH_PROFILE_TIMER");
    if (force && strcmp(force, "clock") == 0)
        return 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return 0;
    char line[4096];
    int constant = 0, nonstop = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        constant = strstr(line, " constant_tsc") != NULL;
        nonstop = strstr(line, " nonstop_tsc") != NULL;
        break;
    }
    fclose(f);
    return constant && nonstop;
#else
    return 0;
#endif
}

/* ------------------------------------------------------------------ the rank's CPU
 * Read at MPI_Init and MPI_Finalize only: whether ranks shared cores (what-if needs it). */

static double fb_cpu_seconds(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0.0;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* The second field of the thread's schedstat: nanoseconds it was runnable but not running
 * (needs a kernel with schedstats; -1 without). */
static int64_t fb_run_delay_ns(long tid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%ld/schedstat", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    unsigned long long exec = 0, delay = 0;
    int n = fscanf(f, "%llu %llu", &exec, &delay);
    fclose(f);
    return n == 2 ? (int64_t)delay : -1;
}

/* The same for every rank on one machine, whatever its network namespace or host name. */
static void fb_machine_id(char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f)
        return;
    if (fgets(out, (int)len, f))
        out[strcspn(out, "\n")] = '\0';
    fclose(f);
}

static int fb_cpus_allowed(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
}

void fb_init(void)
{
    if (fb.initialized)
        return;
    int flag = 0;
    PMPI_Initialized(&flag);
    if (!flag)
        return;
    fb.initialized = 1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &fb.world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &fb.world_size);
    PMPI_Query_thread(&fb_thread_level);
    fb.threaded = fb_thread_level == MPI_THREAD_MULTIPLE;
    fb.use_tsc = fb_tsc_usable();

    size_t n = (size_t)FB_NCALLS * FB_NBINS;
    fb.stats = calloc(n, sizeof *fb.stats);
    fb.matrix = calloc((size_t)FB_NLAYERS * (size_t)fb.world_size, sizeof *fb.matrix);
    fb.world.world = malloc((size_t)fb.world_size * sizeof(int));
    fb_handles = calloc(FB_TABLE_SLOTS, sizeof *fb_handles);
    fb_reqs = calloc(FB_TABLE_SLOTS, sizeof *fb_reqs);
    fb.slots = aligned_alloc(64, FB_NSLOTS * sizeof *fb.slots);
    for (size_t i = 0; fb.slots && i < FB_NSLOTS; i++)
        fb.slots[i] = (fb_slot_t){.min = UINT64_MAX};
    fb.totals = calloc(FB_NSLOTS, sizeof *fb.totals);
    fb.tsizes = calloc(FB_NTSIZES, sizeof *fb.tsizes);
    fb.windows = calloc((size_t)FB_NWIN * FB_WCOLS, sizeof *fb.windows);
    if (!fb.stats || !fb.matrix || !fb.world.world || !fb_handles || !fb_reqs || !fb.slots || !fb.totals || !fb.tsizes ||
        !fb.windows) {
        fprintf(stderr, "libfabricbench-prof: out of memory at MPI_Init; profiling is off\n");
        return;
    }
    for (size_t i = 0; i < n; i++)
        fb.stats[i].min = UINT64_MAX;
    for (int i = 0; i < fb.world_size; i++)
        fb.world.world[i] = i;
    fb.world.size = fb.world_size;
    fb.world.rank = fb.world_rank;
    fb.world.outdegree = -1;
    fb.threads = fb_thread_slots;
    PMPI_Comm_group(MPI_COMM_WORLD, &fb.world_group);
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, fb_comm_delete_cb, &fb.comm_keyval, NULL);
    PMPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, fb_win_delete_cb, &fb.win_keyval, NULL);

    fb_main_thread = pthread_self();
    fb_thread_t *me = fb_self ? fb_self : fb_thread_claim();
    me->main = 1;
    fb_main_tls = &fb_tls; /* its calls take the fast path while fb.on is 1 (fb_main_gate) */

    fb.main_tid = (long)syscall(SYS_gettid);
    fb.run_delay_at_init = fb_run_delay_ns(fb.main_tid);
    fb.cpu_at_init = fb_cpu_seconds();
    clock_gettime(CLOCK_MONOTONIC, &fb.init_ts);
    clock_gettime(CLOCK_REALTIME, &fb.init_epoch);
    fb.init_tick = fb_now();
    fb.win_origin = fb.init_tick;
    fb.win_shift = FB_WIN_SHIFT0;
    fb.on = fb.threaded || !fb.use_tsc ? 2 : 1;
    fb_main_gate();
}

/* MPI_Pcontrol(level) marks a phase boundary; level 0 also stops recording until the next
 * call with another level (the MPI standard's meaning of 0 and 1). */
static fb_mark_t fb_marks[FB_NMARKS];
static int fb_nmarks;

void fb_pcontrol(int level)
{
    if (!fb.initialized || fb.finalized || !fb.stats)
        return;
    int i = __atomic_fetch_add(&fb_nmarks, 1, __ATOMIC_RELAXED);
    if (i < FB_NMARKS)
        fb_marks[i] = (fb_mark_t){fb_now(), level};
    fb_ents_flush(0);
    fb.on = level == 0 ? 0 : fb.threaded || !fb.use_tsc ? 2 : 1;
    fb_main_gate();
}

/* ------------------------------------------------------------------ aggregation */

typedef struct {
    double app_time, mpi_time, tick_seconds;
    double init_epoch;                  /* seconds since 1970 (CLOCK_REALTIME) at MPI_Init */
    double calls_time;                  /* the sum of the recorded calls' times */
    double thread_time[FB_MAX_THREADS]; /* MPI time of each thread, in order of first call */
    int64_t pid;
    int32_t n_entries, n_cells;
    int32_t nthreads;                   /* threads that called MPI (the last slot may hold several) */
    int32_t capped;                     /* mpi_time was cut to app_time */
    uint64_t untracked, dropped_requests;
    char host[MPI_MAX_PROCESSOR_NAME + 1];
    int32_t n_sites, n_modules, n_wentries, n_windows, n_marks;
    double window_s;                    /* length of one time window */
    uint64_t sites_dropped;
    uint64_t thread_calls[FB_MAX_THREADS];
    int8_t thread_main[FB_MAX_THREADS], thread_outside[FB_MAX_THREADS];
    double mark_time[FB_NMARKS];        /* MPI_Pcontrol calls: seconds since MPI_Init, level */
    int32_t mark_level[FB_NMARKS];
    uint64_t before_init[FB_NCALLS];
    double cpu_time, run_delay;         /* over the run; run_delay < 0: unknown */
    int32_t cpus_online, cpus_allowed;  /* cpus_allowed < 0: unknown */
    char machine[40];                   /* boot_id, "" if unknown */
} fb_rank_info_t;

/* A call site as rank 0 gets it: the module it is in (index into the rank's modules) and
 * its address there as the module's ELF file sees it (so addr2line can read it). */
typedef struct {
    int32_t call, module;
    uint64_t addr, count, bytes;
    double time, min, max;
    char symbol[FB_SYMBOL]; /* nearest dynamic symbol + offset, if any */
} fb_site_out_t;

typedef struct {
    char path[FB_PATH];
} fb_module_t;

typedef struct {
    int32_t window, call;
    uint64_t count, bytes, bins;
    double time;
} fb_window_out_t;

typedef struct {
    int32_t call, bin;
    uint64_t count, bytes;
    double time, min, max;
} fb_entry_t;

typedef struct {
    int32_t layer, peer;
    uint64_t msgs, bytes;
} fb_cell_out_t;

typedef struct {
    int src, dst;
    uint64_t msgs, bytes;
} fb_triplet_t;

static void fb_json_string(FILE *f, const char *s, size_t len)
{
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void fb_json_cstr(FILE *f, const char *s) { fb_json_string(f, s, strlen(s)); }

static void fb_json_cmdline(FILE *f)
{
    char buf[65536];
    size_t len = 0;
    FILE *c = fopen("/proc/self/cmdline", "rb");
    if (c) {
        len = fread(buf, 1, sizeof buf, c);
        fclose(c);
    }
    fputc('[', f);
    size_t start = 0;
    int first = 1;
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '\0') {
            if (!first) fputs(", ", f);
            fb_json_string(f, buf + start, i - start);
            first = 0;
            start = i + 1;
        }
    }
    fputc(']', f);
}

static int fb_triplet_cmp(const void *a, const void *b)
{
    const fb_triplet_t *x = a, *y = b;
    if (x->src != y->src) return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst) return x->dst < y->dst ? -1 : 1;
    return 0;
}

static void fb_json_layer(FILE *f, const char *name, fb_triplet_t *t, size_t n, int last)
{
    qsort(t, n, sizeof *t, fb_triplet_cmp);
    fprintf(f, "    \"%s\": [", name);
    int first = 1;
    for (size_t i = 0; i < n;) {
        fb_triplet_t acc = t[i++];
        while (i < n && t[i].src == acc.src && t[i].dst == acc.dst) {
            acc.msgs += t[i].msgs;
            acc.bytes += t[i].bytes;
            i++;
        }
        fprintf(f, "%s\n      [%d, %d, %llu, %llu]", first ? "" : ",", acc.src, acc.dst,
                (unsigned long long)acc.msgs, (unsigned long long)acc.bytes);
        first = 0;
    }
    fprintf(f, "%s]%s\n", first ? "" : "\n    ", last ? "" : ",");
}

static const char *fb_thread_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE: return "single";
    case MPI_THREAD_FUNNELED: return "funneled";
    case MPI_THREAD_SERIALIZED: return "serialized";
    case MPI_THREAD_MULTIPLE: return "multiple";
    default: return "unknown";
    }
}

/* How a rank's MPI time divides over its threads (see README: "What is measured"). */
static void fb_json_threads(FILE *f, const fb_rank_info_t *info)
{
    int listed = info->nthreads < FB_MAX_THREADS ? info->nthreads : FB_MAX_THREADS;
    fprintf(f, ", \"mpi_threads\": %d, \"mpi_time_per_thread\": [", (int)info->nthreads);
    for (int t = 0; t < listed; t++)
        fprintf(f, "%s%.9g", t ? ", " : "", info->thread_time[t]);
    fprintf(f, "], \"mpi_time_all_threads\": %.9g", info->calls_time);
    if (info->capped)
        fputs(", \"mpi_time_capped\": true", f);
    fputs(", \"threads\": [", f);
    for (int t = 0; t < listed; t++)
        fprintf(f, "%s{\"thread\": %d, \"main\": %s, \"calls\": %llu, \"mpi_time\": %.9g, \"outside_thread_level\": %s}",
                t ? ", " : "", t, info->thread_main[t] ? "true" : "false", (unsigned long long)info->thread_calls[t],
                info->thread_time[t], info->thread_outside[t] ? "true" : "false");
    fputc(']', f);
}

/* Time windows, MPI_Pcontrol marks, call sites that found no slot, calls before MPI_Init. */
static void fb_json_rank_extra(FILE *f, const fb_rank_info_t *info)
{
    fprintf(f, ", \"init_epoch\": %.6f", info->init_epoch);
    fprintf(f, ", \"window_s\": %.9g, \"windows\": %d, \"callsites_dropped\": %llu, \"pcontrol\": [", info->window_s,
            (int)info->n_windows, (unsigned long long)info->sites_dropped);
    for (int i = 0; i < info->n_marks; i++)
        fprintf(f, "%s[%.9g, %d]", i ? ", " : "", info->mark_time[i], (int)info->mark_level[i]);
    fputs("], \"calls_before_init\": {", f);
    int first = 1;
    for (int c = 0; c < FB_NCALLS; c++) {
        if (!info->before_init[c])
            continue;
        fprintf(f, "%s\"%s\": %llu", first ? "" : ", ", fb_call_names[c], (unsigned long long)info->before_init[c]);
        first = 0;
    }
    fputc('}', f);
}

/* Whether the rank shared its machine's cores: see README "What is measured". */
static void fb_json_cpu(FILE *f, const fb_rank_info_t *info)
{
    fprintf(f, ", \"cpu_time\": %.9g, \"run_delay\": ", info->cpu_time);
    if (info->run_delay >= 0)
        fprintf(f, "%.9g", info->run_delay);
    else
        fputs("null", f);
    fprintf(f, ", \"cpus_online\": %d, \"cpus_allowed\": ", (int)info->cpus_online);
    if (info->cpus_allowed > 0)
        fprintf(f, "%d", (int)info->cpus_allowed);
    else
        fputs("null", f);
    fputs(", \"machine\": ", f);
    if (info->machine[0])
        fb_json_string(f, info->machine, strnlen(info->machine, sizeof info->machine));
    else
        fputs("null", f);
}

/* Everything rank 0 gathered; each array holds the ranks' parts one after the other. */
typedef struct {
    fb_rank_info_t *infos;
    fb_entry_t *entries;
    fb_cell_out_t *cells;
    fb_site_out_t *sites;
    fb_module_t *modules;
    fb_window_out_t *windows;
} fb_gathered_t;

/* The modules of all ranks as one list (first seen first); site module indices are
 * rewritten to it. */
static void fb_json_callsites(FILE *f, const fb_gathered_t *g)
{
    int size = fb.world_size;
    size_t nmod = 0, k = 0, m = 0;
    for (int r = 0; r < size; r++)
        nmod += (size_t)g->infos[r].n_modules;
    const char **names = malloc((nmod ? nmod : 1) * sizeof *names);
    int *global = malloc((nmod ? nmod : 1) * sizeof *global);
    size_t nnames = 0;
    for (size_t i = 0; names && global && i < nmod; i++) {
        size_t j = 0;
        while (j < nnames && strcmp(names[j], g->modules[i].path) != 0)
            j++;
        if (j == nnames)
            names[nnames++] = g->modules[i].path;
        global[i] = (int)j;
    }
    fputs("  \"modules\": [", f);
    for (size_t j = 0; j < nnames; j++) {
        fputs(j ? ", " : "", f);
        fb_json_cstr(f, names[j]);
    }
    fputs("],\n  \"callsite_columns\": [\"rank\", \"call\", \"module\", \"address\", \"symbol\", \"count\", \"bytes\", "
          "\"time\", \"min\", \"max\"],\n  \"callsites\": [", f);
    int first = 1;
    for (int r = 0; r < size; r++) {
        for (int i = 0; i < g->infos[r].n_sites; i++, k++) {
            const fb_site_out_t *e = &g->sites[k];
            int mod = e->module >= 0 && global && m + (size_t)e->module < nmod ? global[m + (size_t)e->module] : -1;
            const char *name = e->call >= 0 && e->call < FB_NCALLS ? fb_call_names[e->call] : "unknown";
            fprintf(f, "%s\n    [%d, \"%s\", %d, %llu, ", first ? "" : ",", r, name, mod, (unsigned long long)e->addr);
            fb_json_string(f, e->symbol, strnlen(e->symbol, sizeof e->symbol));
            fprintf(f, ", %llu, %llu, %.9g, %.9g, %.9g]", (unsigned long long)e->count, (unsigned long long)e->bytes,
                    e->time, e->min, e->max);
            first = 0;
        }
        m += (size_t)g->infos[r].n_modules;
    }
    fprintf(f, "%s],\n", first ? "" : "\n  ");
    free(names);
    free(global);
}

static void fb_json_windows(FILE *f, const fb_gathered_t *g)
{
    fputs("  \"window_columns\": [\"rank\", \"window\", \"call\", \"count\", \"bytes\", \"time\", \"bins\"],\n"
          "  \"windows\": [", f);
    size_t k = 0;
    int first = 1;
    for (int r = 0; r < fb.world_size; r++) {
        for (int i = 0; i < g->infos[r].n_wentries; i++, k++) {
            const fb_window_out_t *w = &g->windows[k];
            const char *name = w->call >= 0 && w->call < FB_NCALLS ? fb_call_names[w->call] : FB_WOTHER;
            fprintf(f, "%s\n    [%d, %d, \"%s\", %llu, %llu, %.9g, %llu]", first ? "" : ",", r, (int)w->window, name,
                    (unsigned long long)w->count, (unsigned long long)w->bytes, w->time, (unsigned long long)w->bins);
            first = 0;
        }
    }
    fprintf(f, "%s],\n", first ? "" : "\n  ");
}

static void fb_write_json(FILE *f, const fb_gathered_t *g)
{
    const fb_rank_info_t *infos = g->infos;
    const fb_entry_t *entries = g->entries;
    const fb_cell_out_t *cells = g->cells;
    int size = fb.world_size;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";
    int liblen = 0, ver = 0, subver = 0;
    PMPI_Get_library_version(lib, &liblen);
    PMPI_Get_version(&ver, &subver);
    size_t l = strcspn(lib, "\n"); /* first line: "Open MPI v4.1.4, package: ..." */
    lib[l] = '\0';
    while (l > 0 && (lib[l - 1] == ',' || lib[l - 1] == ' ')) lib[--l] = '\0';

    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char created[32];
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);

    fprintf(f, "{\n  \"format\": \"fabricbench-mpi-profile\",\n  \"version\": %d,\n", FB_PROFILE_VERSION);
    fprintf(f, "  \"created\": \"%s\",\n  \"ranks\": %d,\n  \"hosts\": [", created, size);
    /* Distinct host names in order of first rank. */
    int nh = 0;
    for (int r = 0; r < size; r++) {
        int seen = 0;
        for (int q = 0; q < r && !seen; q++)
            seen = strcmp(infos[q].host, infos[r].host) == 0;
        if (!seen) {
            fputs(nh++ ? ", " : "", f);
            fb_json_cstr(f, infos[r].host);
        }
    }
    fprintf(f, "],\n  \"mpi\": {\"library\": ");
    fb_json_cstr(f, lib);
    fprintf(f, ", \"standard\": \"%d.%d\", \"thread_level\": \"%s\"},\n", ver, subver, fb_thread_name(fb_thread_level));
    fprintf(f, "  \"command\": ");
    fb_json_cmdline(f);
    fprintf(f, ",\n  \"timer\": \"%s\",\n", fb.use_tsc ? "tsc" : "clock_monotonic");
    fprintf(f, "  \"size_bins\": \"bin 0 is 0 bytes; bin b >= 1 is [2^(b-1), 2^b - 1] bytes\",\n");

    fprintf(f, "  \"rank_info\": [");
    for (int r = 0; r < size; r++) {
        fprintf(f, "%s\n    {\"rank\": %d, \"host\": ", r ? "," : "", r);
        fb_json_cstr(f, infos[r].host);
        fprintf(f, ", \"pid\": %lld, \"app_time\": %.9g, \"mpi_time\": %.9g, \"untracked_peers\": %llu",
                (long long)infos[r].pid, infos[r].app_time, infos[r].mpi_time,
                (unsigned long long)(infos[r].untracked + infos[r].dropped_requests));
        fb_json_threads(f, &infos[r]);
        fb_json_rank_extra(f, &infos[r]);
        fb_json_cpu(f, &infos[r]);
        fputc('}', f);
    }
    fprintf(f, "\n  ],\n");

    fprintf(f, "  \"call_columns\": [\"rank\", \"call\", \"bin\", \"count\", \"bytes\", \"time\", \"min\", \"max\"],\n");
    fprintf(f, "  \"calls\": [");
    size_t k = 0;
    int first = 1;
    for (int r = 0; r < size; r++) {
        for (int i = 0; i < infos[r].n_entries; i++, k++) {
            const fb_entry_t *e = &entries[k];
            const char *name = e->call >= 0 && e->call < FB_NCALLS ? fb_call_names[e->call] : "unknown";
            fprintf(f, "%s\n    [%d, \"%s\", %d, %llu, %llu, %.9g, %.9g, %.9g]", first ? "" : ",", r, name, e->bin,
                    (unsigned long long)e->count, (unsigned long long)e->bytes, e->time, e->min, e->max);
            first = 0;
        }
    }
    fprintf(f, "%s],\n", first ? "" : "\n  ");
    fb_json_callsites(f, g);
    fb_json_windows(f, g);

    /* Matrix layers as [src, dst, messages, bytes]; a Get at rank r from t moves data t -> r. */
    size_t ncells = 0;
    for (int r = 0; r < size; r++)
        ncells += (size_t)infos[r].n_cells;
    fb_triplet_t *t[3];
    size_t nt[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++)
        t[i] = malloc((ncells ? ncells : 1) * sizeof(fb_triplet_t));
    for (int r = 0, k = 0; r < size; r++) {
        for (int i = 0; i < infos[r].n_cells; i++, k++) {
            const fb_cell_out_t *c = &cells[k];
            int out = c->layer == FB_L_P2P ? 0 : c->layer == FB_L_COLL ? 2 : 1;
            int from_peer = c->layer == FB_L_RMA_FROM;
            if (!t[out])
                continue;
            t[out][nt[out]++] = (fb_triplet_t){from_peer ? c->peer : r, from_peer ? r : c->peer, c->msgs, c->bytes};
        }
    }
    fprintf(f, "  \"matrix_columns\": [\"src\", \"dst\", \"messages\", \"bytes\"],\n  \"matrix\": {\n");
    fb_json_layer(f, "p2p", t[0], nt[0], 0);
    fb_json_layer(f, "rma", t[1], nt[1], 0);
    fb_json_layer(f, "coll", t[2], nt[2], 1);
    fprintf(f, "  }\n}\n");
    for (int i = 0; i < 3; i++)
        free(t[i]);
}

static const char *fb_profile_path(void)
{
    const char *path = getenv("FABRICBENCH_PROFILE");
    return path && *path ? path : "fabricbench-profile.json";
}

/* A new file next to path, only ours: created (never opened if it exists, never through a
 * symbolic link) with mode 0600, under the name <path>.tmp.<pid>, or <path>.tmp.<pid>.<n>
 * when something already stands there. Returns NULL with errno set when it cannot. */
static FILE *fb_create_private(const char *path, char *tmp, size_t len)
{
    for (int attempt = 0; attempt < 100; attempt++) {
        int n = attempt ? snprintf(tmp, len, "%s.tmp.%d.%d", path, (int)getpid(), attempt)
                        : snprintf(tmp, len, "%s.tmp.%d", path, (int)getpid());
        if (n < 0 || (size_t)n >= len) {
            errno = ENAMETOOLONG;
            return NULL;
        }
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            FILE *f = fdopen(fd, "w");
            if (!f) {
                int saved = errno;
                close(fd);
                unlink(tmp);
                errno = saved;
            }
            return f;
        }
        if (errno != EEXIST)
            return NULL;
    }
    return NULL;
}

/* What stands at path, when it is not something the profile may replace: NULL if path is
 * absent or a regular file of this user (lstat: a symbolic link is not followed). */
static const char *fb_target_refusal(const char *path, char *buf, size_t len)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return NULL;
        snprintf(buf, len, "cannot be checked (%s)", strerror(errno));
        return buf;
    }
    if (S_ISREG(st.st_mode)) {
        if (st.st_uid == geteuid())
            return NULL;
        snprintf(buf, len, "a file owned by another user (uid %lu)", (unsigned long)st.st_uid);
        return buf;
    }
    return S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISCHR(st.st_mode) ? "a character device"
         : S_ISBLK(st.st_mode) ? "a block device" : S_ISFIFO(st.st_mode) ? "a FIFO"
         : S_ISSOCK(st.st_mode) ? "a socket" : S_ISDIR(st.st_mode) ? "a directory" : "not a regular file";
}

/* Moves the finished profile from tmp to path, only over nothing or a regular file of this
 * user; anything else (a device, a FIFO, a socket, a symbolic link, someone else's file)
 * is left as it is and the profile stays at tmp, which stderr names. */
static void fb_place_profile(const char *tmp, const char *path)
{
    char why[160];
    const char *refusal = fb_target_refusal(path, why, sizeof why);
    if (!refusal) {
        struct stat st;
        int rc, absent = lstat(path, &st) != 0 && errno == ENOENT;
#ifdef SYS_renameat2
        /* Nothing there: take the name only while it is still free (RENAME_NOREPLACE). */
        rc = absent ? (int)syscall(SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, path, 1u) : rename(tmp, path);
        if (rc != 0 && absent && errno == EEXIST) /* something came meanwhile: check it again */
            rc = (refusal = fb_target_refusal(path, why, sizeof why)) ? -1 : rename(tmp, path);
        else if (rc != 0 && absent && (errno == EINVAL || errno == ENOSYS)) /* no renameat2 here */
            rc = rename(tmp, path);
#else
        (void)absent;
        rc = rename(tmp, path);
#endif
        if (rc == 0)
            return;
        if (!refusal) {
            fprintf(stderr, "libfabricbench-prof: cannot move the profile to %s: %s; the profile is kept at %s\n", path,
                    strerror(errno), tmp);
            return;
        }
    }
    fprintf(stderr, "libfabricbench-prof: the profile is kept at %s: %s is %s, not a regular file of this user, "
                    "and was left unchanged\n", tmp, path, refusal);
}

/* Rank 0: the profile is written whole under a private temporary name in the target's
 * folder, then renamed into place, so no half-written (or foreign) file ever stands at path. */
static void fb_write_profile(const char *path, const fb_gathered_t *g)
{
    char tmp[4096];
    FILE *f = fb_create_private(path, tmp, sizeof tmp);
    if (!f) {
        fprintf(stderr, "libfabricbench-prof: cannot create the profile's temporary file %s: %s\n", tmp,
                strerror(errno));
        return;
    }
    fb_write_json(f, g);
    int bad = fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0;
    int saved = errno;
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "libfabricbench-prof: writing the profile %s failed: %s\n", tmp, strerror(bad ? saved : errno));
        unlink(tmp);
    } else {
        fb_place_profile(tmp, path);
    }
}

/* Gathers each rank's n items of elem bytes to rank 0 (all ranks call it); rank 0 reads
 * each rank's n at offset `field` of its rank info. Returns rank 0's array (NULL
 * elsewhere); *ok turns 0 at rank 0 when memory runs out. */
static void *fb_gather_parts(const void *mine, int32_t n, size_t elem, const fb_rank_info_t *infos, size_t field, int *ok)
{
    int size = fb.world_size;
    int *counts = NULL, *displs = NULL;
    char *all = NULL;
    if (fb.world_rank == 0 && infos) {
        counts = malloc((size_t)size * sizeof(int));
        displs = malloc((size_t)size * sizeof(int));
        size_t total = 0;
        for (int r = 0; counts && displs && r < size; r++) {
            int32_t nr;
            memcpy(&nr, (const char *)&infos[r] + field, sizeof nr);
            counts[r] = nr * (int)elem;
            displs[r] = (int)(total * elem);
            total += (size_t)nr;
        }
        all = malloc((total ? total : 1) * elem);
        if (!counts || !displs || !all)
            *ok = 0;
    }
    PMPI_Gatherv(mine, n * (int)elem, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
    free(counts);
    free(displs);
    return all;
}

/* Call sites: each return address becomes (module, address in the module's ELF file) so
 * that it can be named after the run (addr2line), and the nearest dynamic symbol. */
static fb_module_t fb_modules_out[FB_NMODULES];

static int fb_module_index(const char *path, int *n)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(fb_modules_out[i].path, path) == 0)
            return i;
    if (*n >= FB_NMODULES)
        return -1;
    snprintf(fb_modules_out[*n].path, FB_PATH, "%s", path);
    return (*n)++;
}

/* Every slot's calls into the windows and the [call][size bin] table (MPI_Finalize). */
static void fb_slots_fold(void)
{
    for (size_t i = 0; i < FB_NSLOTS; i++) {
        fb_slot_t *s = &fb.slots[i];
        if (!s->key)
            continue;
        fb_slot_flush(s);
        const fb_total_t *t = &fb.totals[i];
        if (!t->count)
            continue;
        fb_stat_t *st = &fb.stats[(unsigned)fb_key_call(s->key) * FB_NBINS + fb_key_bin(s->key)];
        st->count += t->count;
        st->ticks += t->ticks;
        st->bytes += t->bytes;
        if (s->min < st->min) st->min = s->min;
        if (s->max > st->max) st->max = s->max;
    }
}

static int fb_site_order(const void *a, const void *b)
{
    uint64_t x = fb.slots[*(const uint32_t *)a].key & FB_SLOT_SITE_MASK;
    uint64_t y = fb.slots[*(const uint32_t *)b].key & FB_SLOT_SITE_MASK;
    return x < y ? -1 : x > y;
}

/* A call site is (call, return address): the sum of its slots over the size bins. */
static fb_site_out_t *fb_sites_out(fb_rank_info_t *me, double tick_seconds)
{
    size_t used = 0;
    for (size_t i = 0; i < FB_NSLOTS; i++)
        used += fb.slots[i].key != 0 && fb.totals[i].count != 0;
    uint32_t *order = malloc((used ? used : 1) * sizeof *order);
    fb_site_out_t *out = calloc(used ? used : 1, sizeof *out);
    if (!order) {
        free(out);
        out = NULL;
    }
    size_t nslots = 0;
    for (size_t i = 0; out && i < FB_NSLOTS; i++)
        if (fb.slots[i].key != 0 && fb.totals[i].count != 0)
            order[nslots++] = (uint32_t)i;
    if (out)
        qsort(order, nslots, sizeof *order, fb_site_order);
    char exe[FB_PATH] = "";
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[len > 0 ? len : 0] = '\0';
    int nmod = 0;
    size_t k = 0;
    for (size_t n = 0; out && n < nslots;) {
        uint64_t site = fb.slots[order[n]].key & FB_SLOT_SITE_MASK;
        uint64_t count = 0, ticks = 0, bytes = 0, min = UINT64_MAX, max = 0;
        for (; n < nslots && (fb.slots[order[n]].key & FB_SLOT_SITE_MASK) == site; n++) {
            const fb_slot_t *s = &fb.slots[order[n]];
            const fb_total_t *t = &fb.totals[order[n]];
            count += t->count;
            ticks += t->ticks;
            bytes += t->bytes;
            if (s->min < min) min = s->min;
            if (s->max > max) max = s->max;
        }
        uintptr_t ra = (uintptr_t)(site & ((1ull << 48) - 1));
        fb_site_out_t *o = &out[k++];
        *o = (fb_site_out_t){fb_key_call(site), -1, ra, count, bytes, (double)ticks * tick_seconds,
                             (double)min * tick_seconds, (double)max * tick_seconds, ""};
        Dl_info info;
        struct link_map *lm = NULL;
        if (dladdr1((void *)ra, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm) {
            /* The main program's link map has an empty name. */
            const char *path = lm->l_name && lm->l_name[0] ? lm->l_name : exe;
            o->module = fb_module_index(path, &nmod);
            o->addr = ra - (uintptr_t)lm->l_addr;
            if (info.dli_sname)
                snprintf(o->symbol, sizeof o->symbol, "%s+0x%lx", info.dli_sname,
                         (unsigned long)(ra - (uintptr_t)info.dli_saddr));
        }
    }
    free(order);
    me->n_sites = out ? (int32_t)k : 0;
    me->n_modules = nmod;
    me->sites_dropped = fb.sites_dropped;
    return out;
}

/* The windows that cover the run (grown, if need be, to reach its end). */
static fb_window_out_t *fb_windows_out(fb_rank_info_t *me, uint64_t end_tick, double tick_seconds)
{
    uint64_t rel = end_tick > fb.win_origin ? end_tick - fb.win_origin : 0;
    fb_window_grow(rel);
    size_t nwin = (size_t)(rel >> fb.win_shift) + 1, used = 0;
    for (size_t i = 0; i < (size_t)FB_NWIN * FB_WCOLS; i++)
        used += fb.windows[i].count != 0 || fb.windows[i].ticks != 0;
    fb_window_out_t *out = malloc((used ? used : 1) * sizeof *out);
    size_t k = 0;
    for (size_t i = 0; out && i < (size_t)FB_NWIN * FB_WCOLS; i++) {
        const fb_wcell_t *c = &fb.windows[i];
        if (c->count || c->ticks)
            out[k++] = (fb_window_out_t){(int32_t)(i / FB_WCOLS), fb.win_call[i % FB_WCOLS], c->count, c->bytes,
                                         c->bins, (double)c->ticks * tick_seconds};
    }
    me->n_wentries = out ? (int32_t)k : 0;
    me->n_windows = (int32_t)nwin;
    me->window_s = (double)(1ull << fb.win_shift) * tick_seconds;
    return out;
}

static void fb_marks_out(fb_rank_info_t *me, double tick_seconds)
{
    int n = fb_nmarks < FB_NMARKS ? fb_nmarks : FB_NMARKS;
    for (int i = 0; i < n; i++) {
        me->mark_time[i] = (double)(fb_marks[i].tick - fb.init_tick) * tick_seconds;
        me->mark_level[i] = fb_marks[i].level;
    }
    me->n_marks = n;
}

/* The MPI_Init thread's fast-path calls are in the slots only: its time is what the
 * calls add up to beyond the time every thread kept itself. */
static void fb_main_thread_time(void)
{
    uint64_t ticks = 0, calls = 0, kept_ticks = 0, kept_calls = 0;
    for (size_t i = 0; i < (size_t)FB_NCALLS * FB_NBINS; i++) {
        ticks += fb.stats[i].ticks;
        calls += fb.stats[i].count;
    }
    fb_thread_t *main_slot = NULL;
    for (int t = 0; t < FB_MAX_THREADS && t < fb.nthreads; t++) {
        kept_ticks += fb_thread_slots[t].ticks;
        kept_calls += fb_thread_slots[t].calls;
        if (fb_thread_slots[t].main && !main_slot)
            main_slot = &fb_thread_slots[t];
    }
    if (main_slot && ticks > kept_ticks && calls > kept_calls) {
        main_slot->ticks += ticks - kept_ticks;
        main_slot->calls += calls - kept_calls;
    }
}

void fb_finalize(void)
{
    if (!fb.initialized || fb.finalized || !fb.stats)
        return;
    fb.on = 0;
    fb_main_gate();
    fb.finalized = 1;
    fb_ents_flush(0);
    uint64_t end_tick = fb_now();
    struct timespec end_ts;
    clock_gettime(CLOCK_MONOTONIC, &end_ts);
    double cpu_end = fb_cpu_seconds();
    int64_t delay_end = fb.run_delay_at_init >= 0 ? fb_run_delay_ns(fb.main_tid) : -1;
    double app_time = fb_ts_seconds(&fb.init_ts, &end_ts);

    /* Ticks -> seconds: TSC rate measured over the run itself (at least 20 ms of it). */
    double tick_seconds = 1e-9;
    if (fb.use_tsc) {
        struct timespec now_ts = end_ts;
        uint64_t now_tick = end_tick;
        while (fb_ts_seconds(&fb.init_ts, &now_ts) < 0.02) {
            clock_gettime(CLOCK_MONOTONIC, &now_ts);
            now_tick = fb_now();
        }
        tick_seconds = fb_ts_seconds(&fb.init_ts, &now_ts) / (double)(now_tick - fb.init_tick);
    }

    int size = fb.world_size, rank = fb.world_rank;
    fb_rank_info_t me;
    memset(&me, 0, sizeof me);
    me.app_time = app_time;
    me.init_epoch = (double)fb.init_epoch.tv_sec + 1e-9 * (double)fb.init_epoch.tv_nsec;
    me.tick_seconds = tick_seconds;
    me.pid = (int64_t)getpid();
    me.untracked = fb.untracked;
    me.dropped_requests = fb_dropped_requests;
    int hostlen = 0;
    PMPI_Get_processor_name(me.host, &hostlen);
    me.cpu_time = cpu_end > fb.cpu_at_init ? cpu_end - fb.cpu_at_init : 0.0;
    me.run_delay = delay_end >= fb.run_delay_at_init && delay_end >= 0 ? 1e-9 * (double)(delay_end - fb.run_delay_at_init) : -1.0;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    me.cpus_online = online > 0 ? (int32_t)online : 0;
    me.cpus_allowed = fb_cpus_allowed();
    fb_machine_id(me.machine, sizeof me.machine);

    fb_slots_fold();
    size_t n = (size_t)FB_NCALLS * FB_NBINS, used = 0;
    for (size_t i = 0; i < n; i++)
        used += fb.stats[i].count != 0;
    fb_entry_t *mine = malloc((used ? used : 1) * sizeof *mine);
    size_t k = 0;
    for (size_t i = 0; mine && i < n; i++) {
        const fb_stat_t *s = &fb.stats[i];
        if (!s->count)
            continue;
        mine[k++] = (fb_entry_t){(int32_t)(i / FB_NBINS), (int32_t)(i % FB_NBINS), s->count, s->bytes,
                                 (double)s->ticks * tick_seconds, (double)s->min * tick_seconds,
                                 (double)s->max * tick_seconds};
        me.calls_time += (double)s->ticks * tick_seconds;
    }
    me.n_entries = mine ? (int32_t)k : 0;
    fb_main_thread_time();
    me.nthreads = fb.nthreads;
    for (int t = 0; t < FB_MAX_THREADS && t < fb.nthreads; t++) {
        me.thread_time[t] = (double)fb_thread_slots[t].ticks * tick_seconds;
        me.thread_calls[t] = fb_thread_slots[t].calls;
        me.thread_main[t] = (int8_t)fb_thread_slots[t].main;
        me.thread_outside[t] = (int8_t)fb_thread_slots[t].outside_level;
    }
    /* Calls of one thread never overlap, nor do those of threads that MPI serializes; with
     * MPI_THREAD_MULTIPLE the time any thread was inside MPI counts once. Never more than
     * the run: what the clocks' disagreement could add is cut off (and said). */
    me.mpi_time = fb.threaded ? (double)fb_busy_ticks * tick_seconds : me.calls_time;
    if (me.mpi_time > app_time) {
        me.mpi_time = app_time;
        me.capped = 1;
    }

    size_t ncell = 0, cells_total = (size_t)FB_NLAYERS * (size_t)size;
    for (size_t i = 0; i < cells_total; i++)
        ncell += fb.matrix[i].msgs != 0;
    fb_cell_out_t *mycells = malloc((ncell ? ncell : 1) * sizeof *mycells);
    k = 0;
    for (size_t i = 0; mycells && i < cells_total; i++)
        if (fb.matrix[i].msgs)
            mycells[k++] = (fb_cell_out_t){(int32_t)(i / (size_t)size), (int32_t)(i % (size_t)size),
                                           fb.matrix[i].msgs, fb.matrix[i].bytes};
    me.n_cells = mycells ? (int32_t)k : 0;

    fb_site_out_t *mysites = fb_sites_out(&me, tick_seconds);
    fb_module_t *mymodules = fb_modules_out;
    fb_window_out_t *mywindows = fb_windows_out(&me, end_tick, tick_seconds);
    fb_marks_out(&me, tick_seconds);
    for (int c = 0; c < FB_NCALLS; c++)
        me.before_init[c] = fb.before_init[c];

    /* Every rank is inside MPI_Finalize now; only here does the profiler communicate. */
    fb_gathered_t g = {0};
    g.infos = rank == 0 ? malloc((size_t)size * sizeof *g.infos) : NULL;
    PMPI_Gather(&me, (int)sizeof me, MPI_BYTE, g.infos, (int)sizeof me, MPI_BYTE, 0, MPI_COMM_WORLD);
    int ok = rank != 0 || g.infos != NULL;
    g.entries = fb_gather_parts(mine, me.n_entries, sizeof *mine, g.infos, offsetof(fb_rank_info_t, n_entries), &ok);
    g.cells = fb_gather_parts(mycells, me.n_cells, sizeof *mycells, g.infos, offsetof(fb_rank_info_t, n_cells), &ok);
    g.sites = fb_gather_parts(mysites, me.n_sites, sizeof *mysites, g.infos, offsetof(fb_rank_info_t, n_sites), &ok);
    g.modules = fb_gather_parts(mymodules, me.n_modules, sizeof *mymodules, g.infos, offsetof(fb_rank_info_t, n_modules), &ok);
    g.windows = fb_gather_parts(mywindows, me.n_wentries, sizeof *mywindows, g.infos, offsetof(fb_rank_info_t, n_wentries), &ok);

    if (rank == 0 && ok)
        fb_write_profile(fb_profile_path(), &g);
    free(mine);
    free(mycells);
    free(mysites);
    free(mywindows);
    free(g.infos);
    free(g.entries);
    free(g.cells);
    free(g.sites);
    free(g.modules);
    free(g.windows);
    PMPI_Comm_free_keyval(&fb.comm_keyval);
    PMPI_Win_free_keyval(&fb.win_keyval);
    /* Rank 0 wrote the profile while the others waited: under MPICH over UCX, ranks that
     * reach PMPI_Finalize at different times can hang in it. */
    if (fb_quiesce_needed())
        fb_quiesce();
}
