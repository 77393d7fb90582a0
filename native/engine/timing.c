/* timing.c - warm-up, iteration plans and the sample loop (see timing.h). */
#include "timing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stats.h"
#include "tags.h"

#define WARMUP_BASE (-(1LL << 40))      /* warm-up iterations are numbered below 0 */
#define WARMUP_ROUND_TARGET 0.01         /* seconds: an automatic warm-up round this long ends it */
#define WARMUP_ROUND_TARGET_RULE 0.002   /* ... under the precision rule, which learns the pace as it goes */
#define WARMUP_MAX_ITERATIONS (1LL << 21)
#define MAX_SAMPLES FB_MAX_SAMPLES
#define MAX_ITERATIONS (1LL << 40)
#define GUARD_FACTOR 2.0                 /* an adaptive point stops after this many budgets */
#define GUARD_STRETCHES 32               /* checks per budget, at the pace seen so far */
#define GUARD_SPIN_S 200e-6              /* a rank waiting for the verdict spins this long, then naps */

void fb_timer_probe(double *resolution_us, double *overhead_us)
{
    enum { CALLS = 20000 };
    double smallest = 1e30;
    double prev = MPI_Wtime(), start = prev;
    for (int i = 0; i < CALLS; i++) {
        double now = MPI_Wtime();
        if (now > prev && now - prev < smallest)
            smallest = now - prev;
        prev = now;
    }
    *overhead_us = (prev - start) / CALLS * 1e6;
    *resolution_us = smallest < 1e30 ? smallest * 1e6 : MPI_Wtick() * 1e6;
}

void fb_wait_napping(int n, MPI_Request *reqs, double spin_s)
{
    int done = 0;
    double t0 = spin_s > 0.0 ? MPI_Wtime() : 0.0;
    MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
    while (!done) {
        if (spin_s <= 0.0 || MPI_Wtime() - t0 > spin_s)
            fb_nap();
        MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
    }
}

/* A dissemination barrier over point-to-point messages. MPI_Ibarrier would do, but a
 * non-blocking collective can leave an extra progress callback registered in the MPI
 * library for the rest of the run, a few nanoseconds on every later poll. */
void fb_quiet_barrier(void)
{
    int rank, np;
    char out = 0, in;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    for (int step = 1; step < np; step *= 2) {
        MPI_Request req[2];
        MPI_Irecv(&in, 1, MPI_CHAR, (rank - step + np) % np, FB_TAG_QUIET_BARRIER, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(&out, 1, MPI_CHAR, (rank + step) % np, FB_TAG_QUIET_BARRIER, MPI_COMM_WORLD, &req[1]);
        fb_wait_napping(2, req, 0.0);
    }
}

void fb_quiet_probe(int source, int tag)
{
    int waiting = 0;
    MPI_Iprobe(source, tag, MPI_COMM_WORLD, &waiting, MPI_STATUS_IGNORE);
    while (!waiting) {
        fb_nap();
        MPI_Iprobe(source, tag, MPI_COMM_WORLD, &waiting, MPI_STATUS_IGNORE);
    }
}

/* Runs count iterations the way timed samples would (between steps included) and
 * returns the wall time, which is what the time budget has to pay for. */
static double run_timed_wall(fb_kernel *k, long long first, long long count)
{
    double t0 = MPI_Wtime();
    if (k->batchable || !k->between) {
        k->run(k->state, first, count);
        if (k->between)
            k->between(k->state);
    } else {
        for (long long i = 0; i < count; i++) {
            k->run(k->state, first + i, 1);
            k->between(k->state);
        }
    }
    return MPI_Wtime() - t0;
}

double fb_warmup(fb_ctx *ctx, fb_kernel *k, long long *warmup_run)
{
    double local, agreed;
    long long done = 0;
    if (ctx->opt.warmup >= 0) {
        /* The first half settles connections and caches; the second half is the estimate. */
        long long half = ctx->opt.warmup / 2, rest = ctx->opt.warmup - half;
        if (half)
            run_timed_wall(k, WARMUP_BASE, half);
        local = rest ? run_timed_wall(k, WARMUP_BASE + half, rest) / (double)rest : 0.0;
        done = ctx->opt.warmup;
        fb_quiet_barrier();
        MPI_Allreduce(&local, &agreed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    } else {
        /* Under the precision rule the plan is only a first guess (measure() extends it while
         * the budget lasts), so the pace needs a shorter look: a quiet small message reaches
         * its target in less time than a 10 ms warm-up round. */
        int rule = !ctx->opt.iterations && ctx->opt.precision > 0.0;
        double target = rule ? WARMUP_ROUND_TARGET_RULE : WARMUP_ROUND_TARGET;
        if (!ctx->opt.iterations && ctx->opt.time_budget / 4 < target)
            target = ctx->opt.time_budget / 4;
        double previous = 0.0; /* per-iteration time of the round before */
        for (long long round = 1, next;; round = next) {
            local = run_timed_wall(k, WARMUP_BASE + done, round);
            done += round;
            double longest;
            fb_quiet_barrier();
            MPI_Allreduce(&local, &longest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            double pace = longest / (double)round;
            /* At least two rounds: the very first iteration pays for connection set-up. */
            /* Under the rule one iteration as long as a round is warm-up enough (a large message):
             * its pace, connection set-up included, is only the plan's first guess. */
            if ((longest >= target && (done > round || rule)) || done + 2 * round > WARMUP_MAX_ITERATIONS) {
                /* The better of the last two rounds: one stall (a preempted rank) must
                 * not shrink the whole point to a handful of iterations. */
                agreed = previous > 0.0 && previous < pace ? previous : pace;
                break;
            }
            previous = pace;
            next = 2 * round;
        }
    }
    if (warmup_run)
        *warmup_run = done;
    return agreed;
}

/* Shortest sample worth taking: long enough that the clock read costs < 0.5 % and
 * the timer's resolution < 1 %. */
static double sample_target(const fb_ctx *ctx)
{
    double t = 200.0 * ctx->timer_overhead_us * 1e-6;
    if (t < 100.0 * ctx->wtick_us * 1e-6)
        t = 100.0 * ctx->wtick_us * 1e-6;
    if (t < 2e-6)
        t = 2e-6;
    return t;
}

void fb_plan_point(fb_ctx *ctx, double estimate, double budget, long long min_iterations, int batchable,
                   fb_plan *plan)
{
    long long decided[3] = {0, 1, 0};
    if (!ctx->opt.iterations && ctx->opt.test_underestimate > 1.0)
        estimate /= ctx->opt.test_underestimate; /* test hook: a warm-up that saw a faster machine */
    if (!ctx->opt.iterations && ctx->opt.test_overestimate > 1.0)
        estimate *= ctx->opt.test_overestimate; /* test hook: a warm-up slowed down by a preempted rank */
    if (ctx->rank == 0) {
        long long iters;
        if (ctx->opt.iterations) {
            iters = ctx->opt.iterations;
        } else if (estimate > 0.0) {
            double want = ceil(budget / estimate);
            iters = want > (double)MAX_ITERATIONS ? MAX_ITERATIONS : (long long)want;
            if (iters < min_iterations)
                iters = min_iterations;
        } else {
            iters = min_iterations;
        }
        long long batch = 1;
        double target = sample_target(ctx);
        if (batchable && estimate > 0.0 && estimate < target)
            batch = (long long)ceil(target / estimate);
        if (batchable && (iters + batch - 1) / batch > MAX_SAMPLES)
            batch = (iters + MAX_SAMPLES - 1) / MAX_SAMPLES;
        if (batch > iters)
            batch = iters;
        /* Whole samples under the rule: measure() may extend the plan by whole samples. */
        if (!ctx->opt.iterations && ctx->opt.precision > 0.0)
            iters = (iters + batch - 1) / batch * batch;
        decided[0] = iters;
        decided[1] = batch;
        decided[2] = (iters + batch - 1) / batch;
    }
    MPI_Bcast(decided, 3, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    plan->iterations = decided[0];
    plan->batch = decided[1];
    plan->samples = decided[2];
    plan->estimate = estimate;
    plan->planned = decided[0];
    plan->floor = min_iterations;
    plan->limit = ctx->opt.iterations ? 0.0 : GUARD_FACTOR * budget;
    plan->budget = ctx->opt.iterations ? 0.0 : budget;
    plan->rule_floor = ctx->opt.min_iterations_given || min_iterations < FB_PRECISION_FEW_SAMPLES
                           ? min_iterations
                           : FB_PRECISION_FEW_SAMPLES;
    plan->stopped_early = 0;
    plan->precision_target = ctx->opt.iterations ? 0.0 : ctx->opt.precision;
    plan->precision_seen = NAN;
    plan->stop = FB_STOP_PLANNED;
}

int fb_precision_reached(fb_plan *plan, const double *samples, long long n, long long iterations)
{
    if (plan->precision_target <= 0.0 || n < FB_PRECISION_MIN_SAMPLES || iterations < plan->floor)
        return 0;
    plan->precision_seen = fb_median_precision(samples, n);
    return isfinite(plan->precision_seen) && plan->precision_seen <= plan->precision_target;
}

void fb_prepare(fb_ctx *ctx, fb_kernel *k, fb_plan *plan)
{
    long long warm = 0;
    double estimate = fb_warmup(ctx, k, &warm);
    fb_plan_point(ctx, estimate, ctx->opt.time_budget, ctx->opt.min_iterations, k->batchable, plan);
    plan->warmup = warm;
}

/* Rank 0, between stretches of samples: how many samples the next stretch has, 0 to stop.
 * A stretch lasts about 1/GUARD_STRETCHES of the budget at the pace seen so far (wall clock,
 * checks included), and at most as many samples as were taken so far: the stretches start
 * at one sample and double, so a pace far slower than the warm-up's is noticed at once. Under
 * the precision rule a stretch is at most a quarter of the samples so far once the rule may
 * judge them (a point is judged every quarter, so it overshoots its target by a quarter at
 * most), and the plan is only a first guess: when its samples are done and the budget is not,
 * the point goes on at the pace seen (a warm-up slowed down by a preempted rank planned too
 * few; the rule, not the guess, should end the point). */
static long long guard_next(const fb_plan *plan, long long samples_done, long long iterations_done, double wall)
{
    if (wall >= plan->limit && iterations_done >= plan->floor)
        return 0;
    int rule = plan->precision_target > 0.0;
    long long left = plan->samples - samples_done;
    double per_sample = wall / (double)samples_done;
    if (left <= 0) {
        if (!rule || wall >= plan->budget || samples_done >= MAX_SAMPLES ||
            iterations_done + plan->batch > MAX_ITERATIONS)
            return 0;
        double more = per_sample > 0.0 ? ceil((plan->budget - wall) / per_sample) : 1.0;
        left = MAX_SAMPLES - samples_done;
        if (more < (double)left)
            left = (long long)more;
    }
    double fit = per_sample > 0.0 ? plan->limit / GUARD_FACTOR / GUARD_STRETCHES / per_sample : (double)left;
    long long next = fit < (double)left ? (long long)fit : left;
    long long most = rule && samples_done >= FB_PRECISION_FEW_SAMPLES ? samples_done / 4 : samples_done;
    if (next > most)
        next = most;
    return next < 1 ? 1 : next;
}

/* Rank 0, at a check of the stopping rule over n samples (iterations_done iterations, wall
 * seconds so far): -1 when the point has reached its target, -2 when it cannot within its
 * budget, 0 to go on. The rule judges FB_PRECISION_MIN_SAMPLES samples or more, or as few as
 * FB_PRECISION_FEW_SAMPLES when that many would not fit the budget (and then the default
 * --min-iterations does not hold it back, an explicit one does). It gives up when the samples the target needs, at a half-width shrinking
 * as 1/sqrt(n) from the one seen, exceed FB_PRECISION_FUTILE times what the budget holds, once
 * FB_PRECISION_GIVE_UP_AFTER of the budget is spent. */
static long long rule_verdict(fb_plan *plan, const double *judged, long long n, long long iterations_done,
                              double wall)
{
    double per_sample = wall / (double)n;
    long long least = FB_PRECISION_MIN_SAMPLES * per_sample > plan->budget ? FB_PRECISION_FEW_SAMPLES
                                                                           : FB_PRECISION_MIN_SAMPLES;
    long long floor_ = least == FB_PRECISION_FEW_SAMPLES ? plan->rule_floor : plan->floor;
    if (n < least || iterations_done < floor_)
        return 0;
    plan->precision_seen = fb_median_precision(judged, n);
    if (isfinite(plan->precision_seen) && plan->precision_seen <= plan->precision_target)
        return -1;
    /* Not on a first look: samples straddling preemptions (a mixture of fast and stalled) have
     * a wide interval until there are enough of them for its bounds to leave the stalls, so
     * the half-width seen early over-predicts; half the budget buys that many. */
    if (iterations_done < floor_ || per_sample <= 0.0 || wall < plan->budget * FB_PRECISION_GIVE_UP_AFTER)
        return 0;
    double ratio = isfinite(plan->precision_seen) ? plan->precision_seen / plan->precision_target : INFINITY;
    double needed = (double)n * ratio * ratio, holds = plan->budget / per_sample;
    return needed > FB_PRECISION_FUTILE * (holds > (double)n ? holds : (double)n) ? -2 : 0;
}

/* Rank 0's verdict to every rank, down a binomial tree of point-to-point messages. A
 * waiting rank spins for GUARD_SPIN_S (the measured ranks arrive together and go straight
 * on to the next sample) and then naps (ranks with nothing to measure give the CPU back). */
static long long guard_verdict(long long verdict)
{
    int rank, np, mask = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (rank == 0) {
        while (mask < np)
            mask <<= 1;
    } else {
        while (!(rank & mask))
            mask <<= 1;
        MPI_Request req;
        MPI_Irecv(&verdict, 1, MPI_LONG_LONG, rank - mask, FB_TAG_GUARD, MPI_COMM_WORLD, &req);
        fb_wait_napping(1, &req, GUARD_SPIN_S);
    }
    for (int m = mask >> 1; m > 0; m >>= 1)
        if (rank + m < np)
            MPI_Send(&verdict, 1, MPI_LONG_LONG, rank + m, FB_TAG_GUARD, MPI_COMM_WORLD);
    return verdict;
}

double fb_time_samples(fb_kernel *k, long long iterations, long long batch, long long from, long long to,
                       double *samples)
{
    double total = 0.0, prev = MPI_Wtime();
    for (long long s = from; s < to; s++) {
        long long first = s * batch;
        long long count = iterations - first < batch ? iterations - first : batch;
        k->run(k->state, first, count);
        double now = MPI_Wtime();
        samples[s] = (now - prev) / (double)count;
        total += now - prev;
        if (k->between) {
            k->between(k->state);
            now = MPI_Wtime();
        }
        prev = now;
    }
    return total;
}

static double *measure(fb_ctx *ctx, fb_kernel *k, fb_plan *plan, double *elapsed, int max_over_ranks);

double *fb_measure(fb_ctx *ctx, fb_kernel *k, fb_plan *plan, double *elapsed)
{
    return measure(ctx, k, plan, elapsed, 0);
}

double *fb_measure_max_over_ranks(fb_ctx *ctx, fb_kernel *k, fb_plan *plan, double *elapsed)
{
    return measure(ctx, k, plan, elapsed, 1);
}

static double *measure(fb_ctx *ctx, fb_kernel *k, fb_plan *plan, double *elapsed, int max_over_ranks)
{
    long long room = plan->samples;
    double *samples = fb_malloc((size_t)room * sizeof *samples);
    double total = 0.0;
    long long s = 0, checked = 0; /* samples at the last precision check */
    /* Unguarded (--iterations): one stretch of every sample. */
    long long stretch_end = plan->limit > 0.0 ? 1 : plan->samples;
    /* Under the rule the point may go on past its planned samples (guard_next). */
    int rule = plan->precision_target > 0.0 && plan->limit > 0.0;
    long long next = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (;;) {
        total += fb_time_samples(k, plan->iterations, plan->batch, s, stretch_end, samples);
        s = stretch_end;
        if (s >= plan->samples && !rule)
            break;
        /* Outside the timed region: the next sample starts its clock after the verdict. */
        long long done = s * plan->batch;
        if (done > plan->iterations)
            done = plan->iterations;
        next = 0;
        /* The stopping rule, each time the samples grew by a quarter (linear cost each time);
         * every rank knows s, so every rank knows when a check comes. */
        int check = rule && s >= FB_PRECISION_FEW_SAMPLES && done >= plan->rule_floor && s >= checked + checked / 4;
        if (check)
            checked = s;
        const double *judged = samples;
        double *maxima = NULL, *values = NULL;
        if (check && max_over_ranks && ctx->np > 1) {
            maxima = ctx->rank == 0 ? fb_malloc((size_t)s * sizeof *maxima) : NULL;
            MPI_Reduce(samples, maxima, (int)s, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            judged = maxima;
        }
        if (check && k->record_values && ctx->rank == 0) { /* judge what the record will be made of */
            values = fb_malloc((size_t)s * sizeof *values);
            k->record_values(k->state, judged, s, values);
            judged = values;
        }
        if (ctx->rank == 0) {
            double wall = MPI_Wtime() - start;
            next = check ? rule_verdict(plan, judged, s, done, wall) : 0;
            if (next == 0)
                next = guard_next(plan, s, done, wall);
        }
        free(maxima);
        free(values);
        next = guard_verdict(next);
        if (next < 0)
            plan->stop = next == -1 ? FB_STOP_PRECISION : FB_STOP_UNREACHABLE;
        if (next <= 0)
            break;
        stretch_end = s + next;
        if (stretch_end > plan->samples) { /* the rule goes on past the plan, by whole samples */
            plan->samples = stretch_end;
            plan->iterations = stretch_end * plan->batch;
            if (stretch_end > room) {
                room = stretch_end > 2 * room ? stretch_end : 2 * room;
                samples = realloc(samples, (size_t)room * sizeof *samples);
                if (!samples) {
                    fputs("fabricbench-mpi: error: out of memory for samples\n", stderr);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            }
        }
    }
    if (s < plan->samples) {
        if (plan->stop == FB_STOP_PLANNED) {
            plan->stopped_early = 1;
            plan->stop = FB_STOP_GUARD;
        }
        plan->samples = s;
        plan->iterations = s * plan->batch;
    }
    fb_quiet_barrier();
    *elapsed = total;
    return samples;
}

/* Ranks on one kernel (same boot id: lab nodes differ in host name only) against its cores. */
int fb_ranks_outnumber_cores(const fb_ctx *ctx)
{
    char id[FB_HOST_MAX];
    memset(id, 0, sizeof id);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f || !fgets(id, sizeof id, f))
        snprintf(id, sizeof id, "%s", ctx->host);
    if (f)
        fclose(f);
    char *all = fb_malloc((size_t)ctx->np * FB_HOST_MAX);
    MPI_Allgather(id, FB_HOST_MAX, MPI_CHAR, all, FB_HOST_MAX, MPI_CHAR, MPI_COMM_WORLD);
    int sharing = 0;
    for (int r = 0; r < ctx->np; r++)
        sharing += memcmp(all + (size_t)r * FB_HOST_MAX, id, FB_HOST_MAX) == 0;
    free(all);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int mine = cores > 0 && sharing > cores, any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}

void fb_point_plan(fb_point *pt, const fb_plan *plan)
{
    fb_plan_detail(&pt->detail, plan);
    pt->precision_target = plan->precision_target;
}

void fb_plan_detail(fb_json *detail, const fb_plan *plan)
{
    static const char *const why[] = {[FB_STOP_PLANNED] = "budget", [FB_STOP_PRECISION] = "precision",
                                      [FB_STOP_GUARD] = "guard", [FB_STOP_UNREACHABLE] = "unreachable"};
    fb_json_str(detail, "stop", plan->limit <= 0.0 ? "iterations" : why[plan->stop]);
    fb_json_int(detail, "batch", plan->batch);
    fb_json_int(detail, "warmup_iterations", plan->warmup);
    fb_json_num(detail, "warmup_estimate_us", plan->estimate * 1e6);
    if (plan->stopped_early)
        fb_json_bool(detail, "stopped_early", 1);
    if (plan->stopped_early || plan->stop == FB_STOP_PRECISION || plan->stop == FB_STOP_UNREACHABLE)
        fb_json_int(detail, "iterations_planned", plan->planned);
    if (plan->stopped_early)
        fb_json_num(detail, "time_limit_s", plan->limit);
}
