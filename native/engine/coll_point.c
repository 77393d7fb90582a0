/* coll_point.c - per-rank summaries of collective calls (see coll_point.h). */
#include "coll_point.h"

#include <stdlib.h>

#include "stats.h"

double *fb_gather_per_rank(const fb_ctx *ctx, double mine)
{
    double *all = ctx->rank == 0 ? fb_malloc((size_t)ctx->np * sizeof *all) : NULL;
    MPI_Gather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return all;
}

void fb_per_rank_point(const fb_ctx *ctx, fb_point *pt, const double *per_rank, const fb_plan *plan,
                       const char *stats_over)
{
    fb_stats_compute(&pt->st, per_rank, ctx->np);
    pt->value = pt->st.mean;
    pt->iterations = plan->iterations;
    fb_json_str(&pt->detail, "stats_over", stats_over);
    fb_json_int(&pt->detail, "min_rank", fb_argmin(per_rank, ctx->np));
    fb_json_int(&pt->detail, "max_rank", fb_argmax(per_rank, ctx->np));
    fb_json_open_array(&pt->detail, "per_rank");
    for (int r = 0; r < ctx->np; r++)
        fb_json_num(&pt->detail, NULL, per_rank[r]);
    fb_json_close_array(&pt->detail);
    fb_point_plan(pt, plan);
}

void fb_per_call_point(const fb_ctx *ctx, fb_point *pt, double *samples, const fb_plan *plan, double elapsed)
{
    double average = elapsed * 1e6 / (double)plan->iterations;
    for (long long i = 0; i < plan->samples; i++)
        samples[i] *= 1e6;
    double *per_call = ctx->rank == 0 ? fb_malloc((size_t)plan->samples * sizeof *per_call) : NULL;
    MPI_Reduce(samples, per_call, (int)plan->samples, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    double fastest = 1e300, fastest_all = 0.0;
    for (long long i = 0; i < plan->samples; i++)
        if (samples[i] < fastest)
            fastest = samples[i];
    MPI_Reduce(&fastest, &fastest_all, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    double *per_rank = fb_gather_per_rank(ctx, average);
    if (ctx->rank == 0) {
        fb_stats_compute(&pt->st, per_call, plan->samples);
        double sum = 0.0;
        for (int r = 0; r < ctx->np; r++)
            sum += per_rank[r];
        pt->value = sum / ctx->np;
        pt->iterations = plan->iterations;
        fb_json_str(&pt->detail, "stats_over", "per-call time, max over ranks");
        fb_json_str(&pt->detail, "value_is", "mean over ranks of each rank's average call time (OSU)");
        long long lo = fb_argmin(per_rank, ctx->np), hi = fb_argmax(per_rank, ctx->np);
        fb_json_num(&pt->detail, "rank_average_min", per_rank[lo]);
        fb_json_num(&pt->detail, "rank_average_max", per_rank[hi]);
        fb_json_int(&pt->detail, "min_rank", lo);
        fb_json_int(&pt->detail, "max_rank", hi);
        fb_json_open_array(&pt->detail, "per_rank");
        for (int r = 0; r < ctx->np; r++)
            fb_json_num(&pt->detail, NULL, per_rank[r]);
        fb_json_close_array(&pt->detail);
        fb_json_num(&pt->detail, "fastest_call_us", fastest_all);
        fb_json_num(&pt->detail, "slowest_call_us", pt->st.max);
        fb_point_plan(pt, plan);
    }
    free(per_call);
    free(per_rank);
}

void fb_barrier_between(void *state)
{
    (void)state;
    MPI_Barrier(MPI_COMM_WORLD);
}

void fb_coll_alloc(fb_ctx *ctx, fb_coll_regions regions, int kind, size_t min_bytes, fb_buf *sbuf, fb_buf *rbuf)
{
    size_t send_max, recv_max;
    regions(kind, ctx->np, fb_largest_size(ctx), &send_max, &recv_max);
    fb_buf_alloc_for(sbuf, send_max > min_bytes ? send_max : min_bytes, &ctx->opt);
    fb_buf_alloc_for(rbuf, recv_max > min_bytes ? recv_max : min_bytes, &ctx->opt);
}

void fb_coll_use(fb_ctx *ctx, fb_coll_regions regions, int kind, long long size, fb_buf *sbuf, fb_buf *rbuf)
{
    size_t send_bytes, recv_bytes;
    regions(kind, ctx->np, size, &send_bytes, &recv_bytes);
    fb_buf_use(sbuf, send_bytes);
    fb_buf_use(rbuf, recv_bytes);
    ctx->check.size = size;
}

void fb_coll_params(fb_point *pt, int root, int reduction, const char *size_meaning)
{
    if (root >= 0)
        fb_json_int(&pt->params, "root", root);
    if (reduction) {
        fb_json_str(&pt->params, "datatype", "MPI_FLOAT");
        fb_json_str(&pt->params, "op", "MPI_SUM");
    }
    fb_json_str(&pt->params, "size_meaning", size_meaning);
}

void fb_coll_latency_point(fb_ctx *ctx, fb_kernel *kern, long long size, int root, int reduction,
                           const char *size_meaning)
{
    fb_plan plan;
    double elapsed;
    fb_prepare(ctx, kern, &plan);
    double *samples = fb_measure_max_over_ranks(ctx, kern, &plan, &elapsed);
    /* One sample per call on every rank (collectives are never batched), the same count
     * on every rank (the plan and the guard's verdicts are shared). */
    fb_point pt;
    if (ctx->rank == 0) {
        fb_point_init(&pt, "latency", "us", size);
        pt.label = "Avg Latency";
        fb_coll_params(&pt, root, reduction, size_meaning);
    }
    fb_per_call_point(ctx, &pt, samples, &plan, elapsed);
    fb_emit(ctx, &pt, 1);
    free(samples);
}
