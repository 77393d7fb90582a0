/* coll_point.h - what the collective families of gather_scatter.c and nbc.c share: a call
 * timed between barriers on every rank, summarised over ranks the
 * way OSU summarises a collective (the average of the per-rank averages, min and max with
 * their ranks). */
#ifndef FB_COLL_POINT_H
#define FB_COLL_POINT_H

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

#endif
