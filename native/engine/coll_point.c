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
