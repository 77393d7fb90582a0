/* coll_point.h - what the collective families of collective.c, gather_scatter.c and nbc.c share: a call
 * timed between barriers on every rank, summarised over ranks the
 * way OSU summarises a collective (the average of the per-rank averages, min and max with
 * their ranks). */
#ifndef FB_COLL_POINT_H
#define FB_COLL_POINT_H

#include "buffers.h"
#include "fabricbench.h"
#include "output.h"
#include "timing.h"

/* Collective: every rank's value, gathered on rank 0 (a malloc'd array of np there, NULL
 * elsewhere). */
double *fb_gather_per_rank(const fb_ctx *ctx, double mine);

/* Rank 0: fills pt's statistics, value (mean over ranks), per-rank detail and plan from
 * the per-rank values (np of them). */
void fb_per_rank_point(const fb_ctx *ctx, fb_point *pt, const double *per_rank, const fb_plan *plan,
                       const char *stats_over);

/* Collective, after fb_measure_max_over_ranks: the per-call times (seconds, every rank's own)
 * become the record's distribution as collective.c records it (each call's time is its slowest
 * rank's, in us) and the value stays OSU's average over ranks of each rank's mean call time;
 * fills pt on rank 0 (initialised by the caller). */
void fb_per_call_point(const fb_ctx *ctx, fb_point *pt, double *samples, const fb_plan *plan, double elapsed);

/* The barrier between timed calls (fb_kernel.between). */
void fb_barrier_between(void *state);

/* A collective family's send and receive region (bytes) of a call of `kind` with `size` bytes
 * per rank on np ranks. */
typedef void (*fb_coll_regions)(int kind, int np, long long size, size_t *send, size_t *recv);

/* Both buffers allocated for the regions of the run's largest size (min_bytes at least). */
void fb_coll_alloc(fb_ctx *ctx, fb_coll_regions regions, int kind, size_t min_bytes, fb_buf *sbuf, fb_buf *rbuf);

/* Before one size is measured: both buffers laid out for its regions, the checker told the size. */
void fb_coll_use(fb_ctx *ctx, fb_coll_regions regions, int kind, long long size, fb_buf *sbuf, fb_buf *rbuf);

/* Rank 0: a collective point's params: the root (root >= 0), MPI_FLOAT summed (reduction), and
 * what its size means. */
void fb_coll_params(fb_point *pt, int root, int reduction, const char *size_meaning);

/* Collective: one size of a blocking collective timed call by call (kern), emitted as OSU's
 * "Avg Latency" point in us with fb_coll_params' params. */
void fb_coll_latency_point(fb_ctx *ctx, fb_kernel *kern, long long size, int root, int reduction,
                           const char *size_meaning);

#endif
