/* timing.h - timer facts, warm-up, the iteration plan and the timed sample loop.
 *
 * A benchmark describes one iteration of its pattern as a kernel; this module warms
 * it up, decides how many iterations to time (rank 0 decides, everyone is told), and
 * times them in samples. A sample covers one iteration, or a batch of iterations when
 * one iteration is so short that reading the clock would be a visible part of it.
 *
 * The warm-up's pace can be far too optimistic when ranks share cores with other work
 * (a descheduled rank stalls its partner), so an adaptive point is also guarded: between
 * stretches of samples, outside the timed region, rank 0 looks at the wall clock and
 * tells every rank whether to go on; once twice the budget has passed the point stops
 * with the iterations done so far (never fewer than the floor). */
#ifndef FB_TIMING_H
#define FB_TIMING_H

#include "fabricbench.h"
#include "json.h"
#include "output.h"

/* Why a point's timing stopped (detail.stop). */
enum fb_stop {
    FB_STOP_PLANNED,   /* every planned iteration: --iterations N, or the time budget filled */
    FB_STOP_PRECISION, /* the median's CI reached --precision */
    FB_STOP_GUARD,     /* the wall-clock guard (2 x budget) cut it short */
    FB_STOP_UNREACHABLE, /* the median's CI, shrinking as 1/sqrt(n), could not reach --precision
                          * within the budget: stopped rather than spend it */
};

/* Samples the stopping rule needs before it may stop a point (besides --min-iterations). */
#define FB_PRECISION_MIN_SAMPLES 30
/* ... unless that many samples would not fit the time budget at the pace seen (a large message,
 * a slow link): then this many do, and the default --min-iterations does not hold the rule back
 * (an explicit one does). The 95 % CI of the median of 8 samples is their range. */
#define FB_PRECISION_FEW_SAMPLES 8
/* The rule gives up on a point when the samples its CI needs (its half-width shrinks as
 * 1/sqrt(n)) exceed this many times what the budget holds at the pace seen, ... */
#define FB_PRECISION_FUTILE 4.0
/* ... and no sooner than this fraction of the budget (at a quarter, a loaded machine's mbw_mr
 * points were given up that the whole budget brought to 1 %). */
#define FB_PRECISION_GIVE_UP_AFTER 0.5

typedef struct {
    /* Runs iterations first .. first+count-1 on this rank (every rank calls it). */
    void (*run)(void *state, long long first, long long count);
    /* Untimed work after each sample, e.g. the barrier between collective calls; may be NULL. */
    void (*between)(void *state);
    void *state;
    int batchable; /* may a sample cover several iterations? */
    /* Rank 0, for the stopping rule: the values the record is made of from the first n samples
     * (seconds per iteration), when they are not the samples (or their reciprocals) scaled: an
     * overhead timed inside the iteration, a time less a known part. NULL: the samples. */
    void (*record_values)(void *state, const double *samples, long long n, double *out);
} fb_kernel;

/* Samples a point can have at most (8 MiB of them); under the precision rule a point may go on
 * past its plan up to this many (with batch 1, iterations). */
#define FB_MAX_SAMPLES (1LL << 20)

typedef struct {
    long long iterations;  /* timed iterations (after fb_measure: the ones actually timed) */
    long long batch;       /* iterations per sample */
    long long samples;     /* ceil(iterations / batch) (after fb_measure: samples taken) */
    long long warmup;      /* warm-up iterations that were run */
    double estimate;       /* seconds per iteration the plan went by (warm-up pace, max over ranks) */
    long long planned;     /* iterations planned */
    long long floor;       /* the guard never stops before this many iterations */
    double limit;          /* seconds of wall time after which the guard stops; 0 = no guard */
    double budget;         /* the time budget (seconds); 0 with --iterations */
    long long rule_floor;  /* iterations before the stopping rule may stop a point of long samples */
    int stopped_early;     /* fb_measure stopped at the limit, before `planned` */
    double precision_target; /* relative half-width of the median's 95 % CI that stops the point; 0 = none */
    double precision_seen;   /* rank 0: the figure at the last check (NAN: never checked) */
    enum fb_stop stop;       /* why fb_measure stopped */
} fb_plan;

/* Measures MPI_Wtime's resolution and call overhead (microseconds). */
void fb_timer_probe(double *resolution_us, double *overhead_us);

/* Runs the warm-up (--warmup N, or automatic doubling rounds) and returns the
 * per-iteration time every rank agrees on (the maximum over ranks). */
double fb_warmup(fb_ctx *ctx, fb_kernel *k, long long *warmup_run);

/* Decides the plan on rank 0 and broadcasts it: --iterations N, or enough iterations
 * to fill budget seconds at the estimated pace (at least min_iterations), guarded at
 * twice the budget. */
void fb_plan_point(fb_ctx *ctx, double estimate, double budget, long long min_iterations, int batchable,
                   fb_plan *plan);

/* Warm-up plus plan with the run's own budget and floor: the common case. */
void fb_prepare(fb_ctx *ctx, fb_kernel *k, fb_plan *plan);

/* Times plan->iterations iterations, or fewer when the guard stops the point (then
 * plan->iterations and plan->samples say what was done, and plan->stopped_early is set).
 * Returns a malloc'd array of plan->samples per-iteration times in seconds; *elapsed gets
 * the total timed seconds. */
double *fb_measure(fb_ctx *ctx, fb_kernel *k, fb_plan *plan, double *elapsed);

/* fb_measure for points whose record is over the maximum across ranks, sample by sample
 * (collectives: a call's time is its slowest rank's): the stopping rule judges those maxima
 * (every rank joins a reduction at each check) instead of rank 0's own samples. */
double *fb_measure_max_over_ranks(fb_ctx *ctx, fb_kernel *k, fb_plan *plan, double *elapsed);

/* A barrier that sleeps while it waits, so ranks with nothing to do (the ranks outside
 * a point-to-point measurement) leave the CPU to the ranks being measured; this matters
 * whenever ranks share cores. Never used inside a timed region. */
void fb_quiet_barrier(void);

/* Sleeps until a message from source with tag is waiting (then receive it as usual). */
void fb_quiet_probe(int source, int tag);

/* Times samples from .. to-1 of a plan of `iterations` in samples of `batch` (sample s
 * covers iterations s * batch onwards; only the last may be shorter) on this rank alone:
 * no barrier, no guard. samples[s] gets seconds per iteration; returns the seconds timed.
 * fb_measure's loop, and the loop of benchmarks that schedule their ranks themselves. */
double fb_time_samples(fb_kernel *k, long long iterations, long long batch, long long from, long long to,
                       double *samples);

/* Completes n requests: tests them for spin_s seconds, then naps between tests (a rank
 * waiting this way leaves the CPU to ranks that share its cores). */
void fb_wait_napping(int n, MPI_Request *reqs, double spin_s);

/* Collective: do the ranks on some machine (one kernel) outnumber its cores? Then waiting
 * ranks should nap rather than spin. */
int fb_ranks_outnumber_cores(const fb_ctx *ctx);

/* The stopping rule, for benchmarks that schedule their samples themselves: have
 * samples[0..n-1] (the iterations they cover: `iterations`) reached the plan's precision
 * target? Never before FB_PRECISION_MIN_SAMPLES samples and plan->floor iterations; always
 * false without a target. Call it on the rank that holds the samples (rank 0 in fb_measure)
 * and share its verdict; it costs linear time in n, so check after the samples grew by a
 * quarter or more, not after every sample. Sets plan->precision_seen. */
int fb_precision_reached(fb_plan *plan, const double *samples, long long n, long long iterations);

/* Records how the point was measured (fb_plan_detail) and its precision target, so that the
 * record's detail.precision says whether the point reached it. Every benchmark that measures
 * with a plan calls this for each of its records. */
void fb_point_plan(fb_point *pt, const fb_plan *plan);

/* Adds how the point was measured to a record's detail: batch, warm-up, estimate, and
 * when the guard stopped it, the iterations planned and the time limit. */
void fb_plan_detail(fb_json *detail, const fb_plan *plan);

#endif
