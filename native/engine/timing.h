/* timing.h - timer facts, warm-up, the iteration plan and the timed sample loop.
 *
 * A benchmark describes one iteration of its pattern as a kernel; this module warms
 * it up, decides how many iterations to time (rank 0 decides, everyone is told), and
 * times them in samples. A sample covers one iteration, or a batch of iterations when
 * one iteration is so short that reading the clock would be a visible part of it. */
#ifndef FB_TIMING_H
#define FB_TIMING_H

#include "fabricbench.h"
#include "json.h"

typedef struct {
    /* Runs iterations first .. first+count-1 on this rank (every rank calls it). */
    void (*run)(void *state, long long first, long long count);
    /* Untimed work after each sample, e.g. the barrier between collective calls; may be NULL. */
    void (*between)(void *state);
    void *state;
    int batchable; /* may a sample cover several iterations? */
} fb_kernel;

typedef struct {
    long long iterations;  /* timed iterations */
    long long batch;       /* iterations per sample */
    long long samples;     /* ceil(iterations / batch) */
    long long warmup;      /* warm-up iterations that were run */
    double estimate;       /* seconds per iteration seen in the warm-up (max over ranks) */
} fb_plan;

/* Measures MPI_Wtime's resolution and call overhead (microseconds). */
void fb_timer_probe(double *resolution_us, double *overhead_us);

/* Runs the warm-up (--warmup N, or automatic doubling rounds) and returns the
 * per-iteration time every rank agrees on (the maximum over ranks). */
double fb_warmup(fb_ctx *ctx, fb_kernel *k, long long *warmup_run);

/* Decides the plan on rank 0 and broadcasts it: --iterations N, or enough iterations
 * to fill budget seconds at the estimated pace (at least min_iterations). */
void fb_plan_point(fb_ctx *ctx, double estimate, double budget, long long min_iterations, int batchable,
                   fb_plan *plan);

/* Warm-up plus plan with the run's own budget and floor: the common case. */
void fb_prepare(fb_ctx *ctx, fb_kernel *k, fb_plan *plan);

/* Times plan->iterations iterations. Returns a malloc'd array of plan->samples
 * per-iteration times in seconds; *elapsed gets the total timed seconds. */
double *fb_measure(fb_ctx *ctx, fb_kernel *k, const fb_plan *plan, double *elapsed);

/* A barrier that sleeps while it waits, so ranks with nothing to do (the ranks outside
 * a point-to-point measurement) leave the CPU to the ranks being measured; this matters
 * whenever ranks share cores. Never used inside a timed region. */
void fb_quiet_barrier(void);

/* Sleeps until a message from source with tag is waiting (then receive it as usual). */
void fb_quiet_probe(int source, int tag);

/* Adds how the point was measured to a record's detail: batch, warm-up, estimate. */
void fb_plan_detail(fb_json *detail, const fb_plan *plan);

#endif
