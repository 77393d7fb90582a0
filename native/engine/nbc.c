/* nbc.c - non-blocking collectives and overlap, defined as OSU's osu_iallreduce, osu_ibcast,
 * osu_ialltoall, osu_iallgather and osu_ibarrier define them. For each size:
 *
 *   1. pure communication time: every rank times start + MPI_Wait of the call (a barrier
 *      between calls, not timed) and averages its own calls;
 *   2. compute calibration: each rank sizes a CPU-only computation (a dependent integer
 *      chain) to last as long as its own pure communication time, as OSU sizes its dummy
 *      compute to the measured latency;
 *   3. overlapped run: start the call, compute, MPI_Wait; each part timed. Overall = init +
 *      compute + MPI_Test + wait.
 *
 * Each figure is averaged over ranks and overlap % is OSU's:
 *     overlap = max(0, 100 - 100 x (overall - (compute - test)) / pure_comm)
 * 100 % means the call completed entirely while the ranks computed; 0 % that computing
 * hid nothing. Like OSU by default, the computation makes no MPI_Test calls (so progress
 * depends on the library's own progress engine; the MPI_Test time is 0).
 *
 * Three records per size: latency (overall time, OSU's Overall(us); comparable to an
 * imported OSU point), pure_comm (OSU's Pure Comm.(us)) and overlap (%). Sizes as the
 * blocking collectives: bytes per rank (iallreduce: MPI_FLOAT sum, multiples of 4). */
#include <stdlib.h>
#include <string.h>

#include "buffers.h"
#include "check.h"
#include "coll_point.h"
#include "collectives.h"
#include "fabricbench.h"
#include "output.h"
#include "stats.h"
#include "timing.h"

#define CHAIN_CALIBRATION_S 0.005 /* seconds of integer chain that set its pace */

typedef struct {
    fb_ctx *ctx;
    enum nbc kind;
    int size, count;
    int overlap;          /* phase 3: compute between start and wait */
    long long steps;      /* integer-chain steps of the computation */
    long long timed;      /* iterations counted into the sums below */
    double init_s, compute_s, wait_s;
    fb_buf sbuf, rbuf;
} nbc_state;

static void nbc_start(nbc_state *s, char *sb, char *rb, long long i, MPI_Request *req)
{
    fb_ctx *ctx = s->ctx;
    const int v = ctx->opt.validate, me = ctx->rank, np = ctx->np;
    const size_t bytes = (size_t)s->size;
    switch (s->kind) {
    case IALLREDUCE:
        if (v)
            fb_fill_floats(ctx, (float *)sb, (size_t)s->count, i, 0);
        MPI_Iallreduce(sb, rb, s->count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, req);
        break;
    case IBCAST:
        if (v && me == 0)
            fb_fill(ctx, sb, bytes, i, 0);
        MPI_Ibcast(sb, s->size, MPI_CHAR, 0, MPI_COMM_WORLD, req);
        break;
    case IALLTOALL:
        if (v)
            for (int d = 0; d < np; d++)
                fb_fill(ctx, sb + (size_t)d * bytes, bytes, i, (long long)me * np + d);
        MPI_Ialltoall(sb, s->size, MPI_CHAR, rb, s->size, MPI_CHAR, MPI_COMM_WORLD, req);
        break;
    case IALLGATHER:
        if (v)
            fb_fill(ctx, sb, bytes, i, me);
        MPI_Iallgather(sb, s->size, MPI_CHAR, rb, s->size, MPI_CHAR, MPI_COMM_WORLD, req);
        break;
    case IBARRIER:
        MPI_Ibarrier(MPI_COMM_WORLD, req);
        break;
    }
}

static void nbc_verify(nbc_state *s, char *sb, char *rb, long long i)
{
    fb_ctx *ctx = s->ctx;
    const int me = ctx->rank, np = ctx->np;
    const size_t bytes = (size_t)s->size;
    if (!ctx->opt.validate)
        return;
    switch (s->kind) {
    case IALLREDUCE:
        fb_verify_float_sum(ctx, (float *)rb, (size_t)s->count, i, 0);
        break;
    case IBCAST:
        if (me != 0)
            fb_verify(ctx, sb, bytes, i, 0, 0);
        break;
    case IALLTOALL:
        for (int r = 0; r < np; r++)
            fb_verify(ctx, rb + (size_t)r * bytes, bytes, i, (long long)r * np + me, r);
        break;
    case IALLGATHER:
        for (int r = 0; r < np; r++)
            fb_verify(ctx, rb + (size_t)r * bytes, bytes, i, r, r);
        break;
    case IBARRIER:
        break;
    }
}

static void nbc_run(void *state, long long first, long long count)
{
    nbc_state *s = state;
    for (long long i = first; i < first + count; i++) {
        char *sb = fb_buf_at(&s->sbuf, i), *rb = fb_buf_at(&s->rbuf, i);
        MPI_Request req;
        double t0 = MPI_Wtime();
        nbc_start(s, sb, rb, i, &req);
        double t1 = MPI_Wtime();
        if (s->overlap)
            fb_int_chain(s->steps);
        double t2 = MPI_Wtime();
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        double t3 = MPI_Wtime();
        nbc_verify(s, sb, rb, i);
        if (i >= 0) {
            s->init_s += t1 - t0;
            s->compute_s += t2 - t1;
            s->wait_s += t3 - t2;
            s->timed++;
        }
    }
}

/* Seconds per integer-chain step on this rank: the fastest of three runs of about
 * CHAIN_CALIBRATION_S (the fastest is the one least disturbed by other work). */
static double chain_pace(void)
{
    long long steps = 1000;
    double t = 0.0;
    while (t < CHAIN_CALIBRATION_S / 4) {
        steps *= 2;
        double t0 = MPI_Wtime();
        fb_int_chain(steps);
        t = MPI_Wtime() - t0;
    }
    double best = 1e300;
    long long n = (long long)((double)steps * CHAIN_CALIBRATION_S / t) + 1;
    for (int k = 0; k < 3; k++) {
        double t0 = MPI_Wtime();
        fb_int_chain(n);
        double per = (MPI_Wtime() - t0) / (double)n;
        if (per < best)
            best = per;
    }
    return best;
}

/* Times the kernel over a planned point; returns this rank's seconds per iteration. */
static double nbc_phase(fb_ctx *ctx, nbc_state *s, fb_plan *plan)
{
    fb_kernel kern = {nbc_run, fb_barrier_between, s, 0, NULL};
    double elapsed;
    fb_prepare(ctx, &kern, plan);
    s->init_s = s->compute_s = s->wait_s = 0.0;
    s->timed = 0;
    free(fb_measure(ctx, &kern, plan, &elapsed));
    return elapsed / (double)plan->iterations;
}

static void region_bytes(int kind, int np, long long size, size_t *send, size_t *recv)
{
    size_t one = (size_t)size, all = (size_t)size * (size_t)np;
    *send = kind == IALLTOALL ? all : one;
    *recv = kind == IALLTOALL || kind == IALLGATHER ? all : one;
    if (!*send)
        *send = 1;
    if (!*recv)
        *recv = 1;
}

static void nbc_point(fb_ctx *ctx, fb_point *pt, const char *metric, const char *unit, long long size,
                      const double *per_rank, const fb_plan *plan, const char *over, enum nbc kind)
{
    fb_point_init(pt, metric, unit, size);
    fb_per_rank_point(ctx, pt, per_rank, plan, over);
    fb_coll_params(pt, kind == IBCAST ? 0 : -1, kind == IALLREDUCE, ctx->bench->size_meaning);
}

static void run_nbc(fb_ctx *ctx, enum nbc kind)
{
    nbc_state s = {.ctx = ctx, .kind = kind};
    fb_coll_alloc(ctx, region_bytes, kind, 0, &s.sbuf, &s.rbuf);
    const double pace = chain_pace();

    for (int k = 0; k < ctx->nsizes; k++) {
        long long size = ctx->sizes[k];
        fb_coll_use(ctx, region_bytes, kind, size, &s.sbuf, &s.rbuf);
        s.size = (int)size;
        s.count = (int)(size / (long long)sizeof(float));

        fb_plan pure_plan, plan;
        s.overlap = 0;
        double pure = nbc_phase(ctx, &s, &pure_plan);
        s.steps = (long long)(pure / pace + 0.5);
        s.overlap = 1;
        double overall = nbc_phase(ctx, &s, &plan);
        double n = s.timed ? (double)s.timed : 1.0;
        double init = s.init_s / n, compute = s.compute_s / n, wait = s.wait_s / n, test = 0.0;
        double mine_overlap = pure > 0 ? 100.0 - 100.0 * (overall - (compute - test)) / pure : 0.0;

        double *overall_r = fb_gather_per_rank(ctx, overall * 1e6);
        double *pure_r = fb_gather_per_rank(ctx, pure * 1e6);
        double *compute_r = fb_gather_per_rank(ctx, compute * 1e6);
        double *init_r = fb_gather_per_rank(ctx, init * 1e6);
        double *wait_r = fb_gather_per_rank(ctx, wait * 1e6);
        double *overlap_r = fb_gather_per_rank(ctx, mine_overlap < 0 ? 0 : mine_overlap);
        fb_point pts[3];
        if (ctx->rank == 0) {
            nbc_point(ctx, &pts[0], "latency", "us", size, overall_r, &plan, "per-rank average overall time", kind);
            nbc_point(ctx, &pts[1], "pure_comm", "us", size, pure_r, &pure_plan,
                      "per-rank average time of start + MPI_Wait alone", kind);
            nbc_point(ctx, &pts[2], "overlap", "%", size, overlap_r, &plan, "per-rank overlap", kind);
            pts[0].label = "Overall";
            pts[1].label = "Pure Comm.";
            pts[2].label = "Overlap(%)";
            double avg_compute = 0, avg_init = 0, avg_wait = 0;
            for (int r = 0; r < ctx->np; r++) {
                avg_compute += compute_r[r] / ctx->np;
                avg_init += init_r[r] / ctx->np;
                avg_wait += wait_r[r] / ctx->np;
            }
            double avg_overall = pts[0].value, avg_pure = pts[1].value;
            double osu = avg_pure > 0 ? 100.0 - 100.0 * (avg_overall - avg_compute) / avg_pure : 0.0;
            pts[2].value = osu < 0 ? 0 : osu; /* OSU's figure: from the averages over ranks */
            for (int m = 0; m < 3; m++) {
                fb_json *d = &pts[m].detail;
                fb_json_num(d, "compute_us", avg_compute);
                fb_json_num(d, "init_us", avg_init);
                fb_json_num(d, "test_us", 0.0);
                fb_json_num(d, "wait_us", avg_wait);
                fb_json_num(d, "pure_comm_us", avg_pure);
                fb_json_num(d, "min_comm_us", pts[1].st.min);
                fb_json_num(d, "max_comm_us", pts[1].st.max);
                fb_json_num(d, "overlap_pct", pts[2].value);
                fb_json_int(d, "compute_steps_rank0", s.steps);
                /* about 1 when the computation ran as calibrated; far above, other work shared
                 * the cores and the overlap says more about the host than the library */
                fb_json_num(d, "compute_vs_pure_comm", avg_pure > 0 ? avg_compute / avg_pure : 0.0);
                fb_json_str(d, "compute", "integer chain calibrated to each rank's pure communication time");
            }
        }
        fb_emit(ctx, pts, 3);
        free(overall_r);
        free(pure_r);
        free(compute_r);
        free(init_r);
        free(wait_r);
        free(overlap_r);
    }
    fb_buf_free(&s.sbuf);
    fb_buf_free(&s.rbuf);
}

void fb_run_nbc(fb_ctx *ctx) { run_nbc(ctx, (enum nbc)ctx->bench->variant); }
