/* onesided.c - one-sided (RMA) benchmarks, defined as the OSU Micro-Benchmarks define them:
 *
 *   put_latency, get_latency, acc_latency, fop_latency, cas_latency
 *       rank 0 issues one operation on rank 1's window and completes it with the chosen
 *       synchronisation; latency = time per operation. With fence and pscw the operation
 *       goes both ways in turn (rank 0 to 1, then 1 to 0: an RMA ping-pong) and latency =
 *       round trip / 2, as OSU prints it.
 *   put_bw, get_bw
 *       rank 0 issues a window (--window, 64) of operations, then completes them;
 *       bandwidth = window x size / time.
 *   put_bibw
 *       ranks 0 and 1 both put a window to each other in one epoch (pscw or fence);
 *       bandwidth = 2 x window x size / time.
 *
 * --win-sync is OSU's -s: flush (MPI_Win_lock once per size, MPI_Win_flush per operation
 * or window), flush_local, lock (MPI_Win_lock/unlock around each operation or window),
 * lock_all, pscw (post/start/complete/wait) and fence. --win-alloc is OSU's -w: the window
 * comes from MPI_Win_allocate, MPI_Win_create on our own buffer, or MPI_Win_create_dynamic
 * plus MPI_Win_attach. As in OSU the window is made for each message size, outside timing.
 * acc_latency accumulates MPI_CHAR with MPI_SUM (OSU's choice); fop_latency and cas_latency
 * use one MPI_LONG_LONG (8 bytes).
 *
 * --validate checks every timed operation: a put's or accumulate's bytes are read back
 * (passive synchronisation) or checked by the target once its epoch closes (active); a
 * get's bytes are first written by the target or by a put; fetch-and-op and
 * compare-and-swap check the value fetched against the running count on the target. The
 * extra reads make a validated run slower: validate, then measure. Ranks beyond 0 and 1
 * stay idle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buffers.h"
#include "check.h"
#include "fabricbench.h"
#include "output.h"
#include "stats.h"
#include "timing.h"

enum os_op { OP_PUT, OP_GET, OP_ACC, OP_FOP, OP_CAS };
enum os_kind { K_LAT, K_BW, K_BIBW };

#define REGION_CAP (64LL << 20) /* window operations wrap around this many bytes of the window */
#define MIN_WINDOW 4096         /* bytes of the smallest window made */

static const char *const sync_names[] = {"flush", "lock", "pscw", "fence", "flush_local", "lock_all"};
static const char *const alloc_names[] = {"allocate", "create", "dynamic"};
static const char *const op_names[] = {"MPI_Put", "MPI_Get", "MPI_Accumulate", "MPI_Fetch_and_op",
                                       "MPI_Compare_and_swap"};

typedef struct {
    fb_ctx *ctx;
    enum os_op op;
    enum os_kind kind;
    int sync, alloc;
    int me;                 /* rank in the pair communicator, -1 outside it */
    int peer;
    MPI_Comm pair;
    MPI_Group peer_group;
    MPI_Win win;
    char *win_base;         /* this rank's window memory */
    fb_buf own;             /* the memory of a create or dynamic window */
    MPI_Aint disp0;         /* displacement of the peer's window memory (dynamic: its address) */
    int size, window;
    long long region;       /* bytes of the window that operations use */
    fb_buf sbuf, rbuf, zeros;
    long long fetched_expected; /* fop, cas: the count on the peer this rank expects */
    long long operand[2];       /* fop, cas: origin operands, alive until the operation completes */
} os_state;

static int active(const os_state *s) { return s->sync == FB_SYNC_PSCW || s->sync == FB_SYNC_FENCE; }

/* ---- operations ------------------------------------------------------------------ */

static MPI_Aint disp_of(const os_state *s, int j)
{
    return s->disp0 + (MPI_Aint)(((long long)j * s->size) % s->region);
}

static void issue(os_state *s, int j, char *sb, char *rb)
{
    MPI_Aint d = disp_of(s, j);
    switch (s->op) {
    case OP_PUT:
        MPI_Put(sb, s->size, MPI_CHAR, s->peer, d, s->size, MPI_CHAR, s->win);
        break;
    case OP_GET:
        MPI_Get(rb + (size_t)(d - s->disp0), s->size, MPI_CHAR, s->peer, d, s->size, MPI_CHAR, s->win);
        break;
    case OP_ACC:
        MPI_Accumulate(sb, s->size, MPI_CHAR, s->peer, d, s->size, MPI_CHAR, MPI_SUM, s->win);
        break;
    case OP_FOP:
        s->operand[0] = 1;
        MPI_Fetch_and_op(&s->operand[0], rb, MPI_LONG_LONG, s->peer, s->disp0, MPI_SUM, s->win);
        break;
    case OP_CAS:
        s->operand[0] = s->fetched_expected + 1;
        s->operand[1] = s->fetched_expected;
        MPI_Compare_and_swap(&s->operand[0], &s->operand[1], rb, MPI_LONG_LONG, s->peer, s->disp0, s->win);
        break;
    }
}

/* Passive target: complete everything this rank issued at the peer (for the checks). */
static void passive_complete(os_state *s)
{
    if (s->sync == FB_SYNC_FLUSH || s->sync == FB_SYNC_FLUSH_LOCAL)
        MPI_Win_flush(s->peer, s->win);
}

static void passive_open(os_state *s)
{
    if (s->sync == FB_SYNC_LOCK)
        MPI_Win_lock(MPI_LOCK_SHARED, s->peer, 0, s->win);
    else if (s->sync == FB_SYNC_LOCK_ALL)
        MPI_Win_lock_all(0, s->win);
}

static void passive_close(os_state *s)
{
    if (s->sync == FB_SYNC_LOCK)
        MPI_Win_unlock(s->peer, s->win);
    else if (s->sync == FB_SYNC_LOCK_ALL)
        MPI_Win_unlock_all(s->win);
    else if (s->sync == FB_SYNC_FLUSH)
        MPI_Win_flush(s->peer, s->win);
    else
        MPI_Win_flush_local(s->peer, s->win);
}

/* Passive target, --validate: one put or get of the first region, completed at the peer. */
static void passive_transfer(os_state *s, int get, char *buf)
{
    passive_open(s);
    if (get)
        MPI_Get(buf, s->size, MPI_CHAR, s->peer, s->disp0, s->size, MPI_CHAR, s->win);
    else
        MPI_Put(buf, s->size, MPI_CHAR, s->peer, s->disp0, s->size, MPI_CHAR, s->win);
    passive_close(s);
    passive_complete(s);
}

/* ---- --validate ------------------------------------------------------------------ */

static void check_counter(os_state *s, long long got, long long iter)
{
    fb_ctx *ctx = s->ctx;
    if (ctx->opt.inject_corruption == ctx->rank && iter >= 1)
        got ^= 0xff;
    if (got == s->fetched_expected || ctx->check.failed)
        return;
    ctx->check.failed = 1;
    snprintf(ctx->check.message, sizeof ctx->check.message,
             "fabricbench-mpi: validation failed: benchmark %s: rank %d fetched %lld from rank %d's window at "
             "iteration %lld (expected %lld)\n",
             ctx->bench->name, ctx->rank, got, s->peer, iter, s->fetched_expected);
}

/* Before the operations of iteration i reach this rank's window: what it must hold. */
static void target_prepare(os_state *s, long long i)
{
    if (s->op == OP_ACC)
        memset(s->win_base, 0, (size_t)s->size);
    else if (s->op == OP_GET)
        fb_fill(s->ctx, s->win_base, (size_t)s->size, i, s->me);
}

/* After the epoch in which the peer's operations reached this rank's window closed. */
static void target_verify(os_state *s, long long i)
{
    if (s->op == OP_PUT || s->op == OP_ACC)
        fb_verify(s->ctx, s->win_base, (size_t)s->size, i, s->peer, s->peer);
}

static void origin_prepare(os_state *s, char *sb, long long i)
{
    if (s->op == OP_PUT || s->op == OP_ACC)
        fb_fill(s->ctx, sb, (size_t)s->size, i, s->me);
}

/* Passive target: rank 0 both writes and reads the pattern, so --inject-corruption's flip at
 * fill time must not be undone at check time: the check compares with the clean pattern. */
static void verify_own(os_state *s, char *buf, long long i, long long key)
{
    fb_ctx *ctx = s->ctx;
    int hooked = ctx->opt.inject_corruption;
    ctx->opt.inject_corruption = -1;
    fb_verify(ctx, buf, (size_t)s->size, i, key, s->peer);
    ctx->opt.inject_corruption = hooked;
}

/* After this rank's operations completed; passive: also checks what reached the peer. */
static void origin_verify(os_state *s, char *rb, long long i)
{
    fb_ctx *ctx = s->ctx;
    if (s->op == OP_FOP || s->op == OP_CAS) {
        check_counter(s, *(long long *)rb, i);
        return;
    }
    if (s->op == OP_GET) {
        if (active(s))
            fb_verify(ctx, rb, (size_t)s->size, i, s->peer, s->peer);
        else
            verify_own(s, rb, i, s->me);
        return;
    }
    if (!active(s)) { /* read back what the put or accumulate left in the peer's window */
        passive_transfer(s, 1, fb_buf_at(&s->rbuf, i));
        verify_own(s, fb_buf_at(&s->rbuf, i), i, s->me);
    }
}

/* Passive target, --validate, before the operations: a get reads a pattern we put there,
 * an accumulate adds to zeros. */
static void passive_prepare(os_state *s, char *sb, long long i)
{
    if (s->op == OP_GET) {
        fb_fill(s->ctx, sb, (size_t)s->size, i, s->me);
        passive_transfer(s, 0, sb);
    } else if (s->op == OP_ACC) {
        passive_transfer(s, 0, s->zeros.base);
    }
    origin_prepare(s, sb, i);
}

/* ---- one iteration ------------------------------------------------------------------- */

static void issue_all(os_state *s, char *sb, char *rb)
{
    int n = s->kind == K_LAT ? 1 : s->window;
    for (int j = 0; j < n; j++)
        issue(s, j, sb, rb);
}

/* Rank 0 alone: operations on rank 1's window, completed by a passive synchronisation. */
static void passive_iteration(os_state *s, long long i, char *sb, char *rb, int v)
{
    if (v)
        passive_prepare(s, sb, i);
    passive_open(s);
    issue_all(s, sb, rb);
    passive_close(s);
    if (v)
        origin_verify(s, rb, i);
}

/* One epoch with fence or pscw in which `from` operates on the other rank's window (both:
 * both ranks at once). */
static void active_epoch(os_state *s, long long i, char *sb, char *rb, int v, int from, int both)
{
    const int origin = both || s->me == from, target = both || s->me != from;
    if (v && target)
        target_prepare(s, i);
    if (v && origin)
        origin_prepare(s, sb, i);
    if (s->sync == FB_SYNC_FENCE) {
        MPI_Win_fence(0, s->win);
        if (origin)
            issue_all(s, sb, rb);
        MPI_Win_fence(0, s->win);
    } else {
        if (target)
            MPI_Win_post(s->peer_group, 0, s->win);
        if (origin) {
            MPI_Win_start(s->peer_group, 0, s->win);
            issue_all(s, sb, rb);
            MPI_Win_complete(s->win);
        }
        if (target)
            MPI_Win_wait(s->win);
    }
    if (v && target)
        target_verify(s, i);
    if (v && origin && (s->op == OP_GET || s->op == OP_FOP || s->op == OP_CAS))
        origin_verify(s, rb, i);
}

static void counter_advance(os_state *s, int origin)
{
    if ((s->op == OP_FOP || s->op == OP_CAS) && origin)
        s->fetched_expected++;
}

/* The fence ping-pong, three fences per iteration as OSU's: rank 0 operates on rank 1's
 * window between the first two, rank 1 on rank 0's between the last two. */
static void fence_pingpong(os_state *s, long long i, char *sb, char *rb, int v)
{
    const int first = s->me == 0;
    const int fetching = s->op == OP_GET || s->op == OP_FOP || s->op == OP_CAS;
    if (v)
        first ? origin_prepare(s, sb, i) : target_prepare(s, i);
    MPI_Win_fence(0, s->win);
    if (first)
        issue_all(s, sb, rb);
    else if (v)
        origin_prepare(s, sb, i);
    if (first && v)
        target_prepare(s, i); /* nobody reaches rank 0's window before the next fence */
    MPI_Win_fence(0, s->win);
    if (v && !first)
        target_verify(s, i);
    if (v && first && fetching)
        origin_verify(s, rb, i);
    counter_advance(s, first);
    if (!first)
        issue_all(s, sb, rb);
    MPI_Win_fence(0, s->win);
    if (v && first)
        target_verify(s, i);
    if (v && !first && fetching)
        origin_verify(s, rb, i);
    counter_advance(s, !first);
}

static void os_run(void *state, long long first, long long count)
{
    os_state *s = state;
    if (s->me < 0)
        return;
    const int v = s->ctx->opt.validate;
    for (long long i = first; i < first + count; i++) {
        char *sb = fb_buf_at(&s->sbuf, i), *rb = fb_buf_at(&s->rbuf, i);
        if (!active(s)) {
            if (s->me == 0)
                passive_iteration(s, i, sb, rb, v);
            counter_advance(s, s->me == 0);
        } else if (s->kind == K_BIBW) {
            active_epoch(s, i, sb, rb, v, 0, 1);
        } else if (s->kind == K_LAT && s->sync == FB_SYNC_FENCE) {
            fence_pingpong(s, i, sb, rb, v);
        } else {
            active_epoch(s, i, sb, rb, v, 0, 0);
            counter_advance(s, s->me == 0);
            if (s->kind == K_LAT) { /* the RMA ping-pong's way back */
                active_epoch(s, i, sb, rb, v, 1, 0);
                counter_advance(s, s->me == 1);
            }
        }
    }
}

/* ---- windows ---------------------------------------------------------------------------- */

static void window_open(os_state *s)
{
    if (s->me < 0)
        return;
    /* At least a page: MPICH 4.0's MPI_Win_allocate gives ranks on one host overlapping memory
     * for windows of a few bytes (a get from the peer reads one's own window). */
    MPI_Aint bytes = (MPI_Aint)(s->region > MIN_WINDOW ? s->region : MIN_WINDOW);
    if (s->alloc == FB_WIN_ALLOCATE) {
        MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, s->pair, &s->win_base, &s->win);
        s->disp0 = 0;
    } else {
        fb_buf_alloc(&s->own, (size_t)bytes, 0, 0);
        s->win_base = s->own.base;
        if (s->alloc == FB_WIN_CREATE) {
            MPI_Win_create(s->win_base, bytes, 1, MPI_INFO_NULL, s->pair, &s->win);
            s->disp0 = 0;
        } else {
            MPI_Aint mine;
            MPI_Win_create_dynamic(MPI_INFO_NULL, s->pair, &s->win);
            MPI_Win_attach(s->win, s->win_base, bytes);
            MPI_Get_address(s->win_base, &mine);
            MPI_Sendrecv(&mine, 1, MPI_AINT, s->peer, 0, &s->disp0, 1, MPI_AINT, s->peer, 0, s->pair,
                         MPI_STATUS_IGNORE);
        }
    }
    memset(s->win_base, 0, (size_t)bytes); /* touched; fop and cas count from 0 */
    s->fetched_expected = 0;
    MPI_Barrier(s->pair); /* every window is zeroed before anyone operates on it */
    if (s->me == 0 && (s->sync == FB_SYNC_FLUSH || s->sync == FB_SYNC_FLUSH_LOCAL))
        MPI_Win_lock(MPI_LOCK_SHARED, s->peer, 0, s->win);
}

static void window_close(os_state *s)
{
    if (s->me < 0)
        return;
    if (s->me == 0 && (s->sync == FB_SYNC_FLUSH || s->sync == FB_SYNC_FLUSH_LOCAL))
        MPI_Win_unlock(s->peer, s->win);
    if (s->alloc == FB_WIN_DYNAMIC)
        MPI_Win_detach(s->win, s->win_base);
    MPI_Win_free(&s->win);
    if (s->alloc != FB_WIN_ALLOCATE)
        fb_buf_free(&s->own);
}

/* ---- records ------------------------------------------------------------------------------ */

static void report(os_state *s, const fb_plan *plan, double *samples, double elapsed)
{
    fb_ctx *ctx = s->ctx;
    fb_point pt;
    if (ctx->rank == 0) {
        const int round_trip = s->kind == K_LAT && active(s);
        if (s->kind == K_LAT) {
            double scale = 1e6 / (round_trip ? 2.0 : 1.0);
            for (long long i = 0; i < plan->samples; i++)
                samples[i] *= scale;
            fb_point_init(&pt, "latency", "us", s->size);
            pt.value = elapsed * scale / (double)plan->iterations;
        } else {
            double bytes = (s->kind == K_BIBW ? 2.0 : 1.0) * (double)s->window * (double)s->size;
            for (long long i = 0; i < plan->samples; i++)
                samples[i] = bytes / samples[i] / 1e6;
            fb_point_init(&pt, s->kind == K_BIBW ? "bibandwidth" : "bandwidth", "MB/s", s->size);
            pt.value = bytes * (double)plan->iterations / elapsed / 1e6;
            fb_json_int(&pt.params, "window", s->window);
        }
        fb_stats_compute(&pt.st, samples, plan->samples);
        pt.iterations = plan->iterations;
        fb_json_str(&pt.params, "win", alloc_names[s->alloc]);
        fb_json_str(&pt.params, "sync", sync_names[s->sync]);
        fb_json_open_array(&pt.params, "peers");
        fb_json_int(&pt.params, NULL, 0);
        fb_json_int(&pt.params, NULL, 1);
        fb_json_close_array(&pt.params);
        if (s->op == OP_ACC) {
            fb_json_str(&pt.params, "datatype", "MPI_CHAR");
            fb_json_str(&pt.params, "op", "MPI_SUM");
        } else if (s->op == OP_FOP || s->op == OP_CAS) {
            fb_json_str(&pt.params, "datatype", "MPI_LONG_LONG");
        }
        fb_json_str(&pt.detail, "operation", op_names[s->op]);
        if (round_trip)
            fb_json_str(&pt.detail, "timing", "RMA ping-pong (rank 0 to 1, then 1 to 0), latency = round trip / 2");
        fb_point_plan(&pt, plan);
    }
    fb_emit(ctx, &pt, 1);
}

/* A choice that OSU's program refuses is a usage error, the same on every rank. */
static void refuse(fb_ctx *ctx, const char *why)
{
    if (ctx->rank == 0) {
        fprintf(stderr, "fabricbench-mpi: %s\n", why);
        fb_print_usage();
    }
    fb_finalize();
    exit(FB_EXIT_USAGE);
}

static void run_onesided(fb_ctx *ctx, enum os_op op, enum os_kind kind)
{
    os_state s;
    memset(&s, 0, sizeof s);
    s.ctx = ctx;
    s.op = op;
    s.kind = kind;
    s.alloc = ctx->opt.win_alloc;
    s.sync = ctx->opt.win_sync >= 0 ? ctx->opt.win_sync : kind == K_BIBW ? FB_SYNC_PSCW : FB_SYNC_FLUSH;
    s.window = kind == K_LAT ? 1 : ctx->opt.window;
    if (kind == K_BIBW && !active(&s)) {
        char why[160];
        snprintf(why, sizeof why, "%s takes --win-sync pscw or fence (both ranks put at once), not %s",
                 ctx->bench->name, sync_names[s.sync]);
        refuse(ctx, why);
    }
    MPI_Comm_split(MPI_COMM_WORLD, ctx->rank < 2 ? 0 : MPI_UNDEFINED, ctx->rank, &s.pair);
    s.me = ctx->rank < 2 ? ctx->rank : -1;
    s.peer = 1 - ctx->rank;
    if (s.me >= 0) {
        MPI_Group all;
        MPI_Comm_group(s.pair, &all);
        MPI_Group_incl(all, 1, &s.peer, &s.peer_group);
        MPI_Group_free(&all);
    }
    long long largest = fb_largest_size(ctx);
    size_t region_max = (size_t)(kind == K_LAT ? largest : (long long)s.window * largest);
    if ((long long)region_max > REGION_CAP && region_max > (size_t)largest)
        region_max = (size_t)(REGION_CAP > largest ? REGION_CAP : largest);
    int idle = s.me < 0;
    fb_buf_alloc_for(&s.sbuf, idle ? 8 : (size_t)largest + 8, &ctx->opt);
    fb_buf_alloc_for(&s.rbuf, idle ? 8 : region_max + 8, &ctx->opt);
    fb_buf_alloc(&s.zeros, idle ? 8 : (size_t)largest + 8, 0, 0);
    memset(s.zeros.base, 0, s.zeros.bytes);

    for (int k = 0; k < ctx->nsizes; k++) {
        s.size = (int)ctx->sizes[k];
        ctx->check.size = s.size;
        long long want = (long long)s.window * s.size;
        s.region = want > REGION_CAP && REGION_CAP >= s.size ? REGION_CAP : want;
        fb_buf_use(&s.sbuf, (size_t)s.size + 8);
        fb_buf_use(&s.rbuf, (size_t)s.region + 8);
        window_open(&s);
        fb_kernel kern = {os_run, NULL, &s, 1, NULL};
        fb_plan plan;
        double elapsed;
        fb_prepare(ctx, &kern, &plan);
        double *samples = fb_measure(ctx, &kern, &plan, &elapsed);
        window_close(&s);
        report(&s, &plan, samples, elapsed);
        free(samples);
    }
    if (s.me >= 0) {
        MPI_Group_free(&s.peer_group);
        MPI_Comm_free(&s.pair);
    }
    fb_buf_free(&s.sbuf);
    fb_buf_free(&s.rbuf);
    fb_buf_free(&s.zeros);
}

void fb_run_put_latency(fb_ctx *ctx) { run_onesided(ctx, OP_PUT, K_LAT); }
void fb_run_get_latency(fb_ctx *ctx) { run_onesided(ctx, OP_GET, K_LAT); }
void fb_run_acc_latency(fb_ctx *ctx) { run_onesided(ctx, OP_ACC, K_LAT); }
void fb_run_fop_latency(fb_ctx *ctx) { run_onesided(ctx, OP_FOP, K_LAT); }
void fb_run_cas_latency(fb_ctx *ctx) { run_onesided(ctx, OP_CAS, K_LAT); }
void fb_run_put_bw(fb_ctx *ctx) { run_onesided(ctx, OP_PUT, K_BW); }
void fb_run_get_bw(fb_ctx *ctx) { run_onesided(ctx, OP_GET, K_BW); }
void fb_run_put_bibw(fb_ctx *ctx) { run_onesided(ctx, OP_PUT, K_BIBW); }
