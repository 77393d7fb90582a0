/* pt2pt.c - point-to-point benchmarks, defined as the OSU Micro-Benchmarks define them:
 *
 *   latency    blocking ping-pong, ranks 0 and 1; one-way latency = round trip / 2
 *   bw         rank 0 sends a window of non-blocking messages, rank 1 acknowledges the
 *              window with a short reply; bandwidth = bytes / time
 *   bibw       ranks 0 and 1 both send a window to each other at once
 *   mbw_mr     pairs (i, i + np/2) run bw at the same time: aggregate bandwidth and
 *              message rate
 *   multi_lat  pairs (i, i + np/2) run the ping-pong at the same time
 *
 * Each benchmark is a role for every rank, a kernel (one iteration of its pattern) and a
 * report that turns one size's samples into records; measure_sizes() runs the kernel
 * over the sizes. Ranks outside the measured pairs stay idle (they only join the
 * bookkeeping collectives between points). */
#include <stdlib.h>
#include <string.h>

#include "buffers.h"
#include "check.h"
#include "fabricbench.h"
#include "output.h"
#include "stats.h"
#include "tags.h"
#include "timing.h"

enum role { IDLE, INITIATOR, RESPONDER };

#define ACK_BYTES 4
#define MAX_DETAIL_PAIRS 1024
#define MAX_POOLED_SAMPLES (1LL << 24)

typedef struct {
    fb_ctx *ctx;
    enum role role;
    int peer;
    int size;
    int window;          /* messages per window at the current size */
    int window_max;      /* --window: the reqs array holds this many per direction */
    int both_ways;       /* bibw: both ranks send a window at once */
    int pairs;           /* pairs measured at once (mbw_mr, multi_lat) */
    int plain;           /* warm cache, no validation: the tightest loop */
    fb_buf sbuf, rbuf;
    MPI_Request *reqs;
    char ack[ACK_BYTES];
} pair_state;

static void pair_setup(fb_ctx *ctx, pair_state *s, enum role role, int peer, int window)
{
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    s->role = role;
    s->peer = peer;
    s->window = window;
    s->window_max = window;
    s->plain = !ctx->opt.validate && !ctx->opt.cache_cold;
    size_t region = role == IDLE ? 1 : (size_t)fb_largest_size(ctx);
    fb_buf_alloc_for(&s->sbuf, region, &ctx->opt);
    fb_buf_alloc_for(&s->rbuf, region, &ctx->opt);
    s->reqs = fb_malloc(2 * (size_t)window * sizeof *s->reqs);
}

static void pair_use_size(pair_state *s, long long size)
{
    /* --max-window-bytes: fewer messages per window at large sizes (never more than --window). */
    if (s->window_max > 1 && s->ctx->opt.window_bytes > 0) {
        long long fit = size > 0 ? s->ctx->opt.window_bytes / size : s->window_max;
        s->window = (int)(fit < 1 ? 1 : fit > s->window_max ? s->window_max : fit);
    }
    s->size = (int)size;
    s->ctx->check.size = size;
    fb_buf_use(&s->sbuf, (size_t)size);
    fb_buf_use(&s->rbuf, (size_t)size);
}

static void pair_teardown(pair_state *s)
{
    fb_buf_free(&s->sbuf);
    fb_buf_free(&s->rbuf);
    free(s->reqs);
}

/* ---- kernels ------------------------------------------------------------------- */

static void pingpong_run(void *state, long long first, long long count)
{
    pair_state *s = state;
    fb_ctx *ctx = s->ctx;
    if (s->role == IDLE)
        return;
    if (s->plain) {
        char *sb = s->sbuf.base, *rb = s->rbuf.base;
        if (s->role == INITIATOR) {
            for (long long i = 0; i < count; i++) {
                MPI_Send(sb, s->size, MPI_CHAR, s->peer, FB_TAG_PING, MPI_COMM_WORLD);
                MPI_Recv(rb, s->size, MPI_CHAR, s->peer, FB_TAG_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        } else {
            for (long long i = 0; i < count; i++) {
                MPI_Recv(rb, s->size, MPI_CHAR, s->peer, FB_TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sb, s->size, MPI_CHAR, s->peer, FB_TAG_PONG, MPI_COMM_WORLD);
            }
        }
        return;
    }
    for (long long i = first; i < first + count; i++) {
        char *sb = fb_buf_at(&s->sbuf, i), *rb = fb_buf_at(&s->rbuf, i);
        if (s->role == INITIATOR) {
            if (ctx->opt.validate)
                fb_fill(ctx, sb, (size_t)s->size, i, ctx->rank);
            MPI_Send(sb, s->size, MPI_CHAR, s->peer, FB_TAG_PING, MPI_COMM_WORLD);
            MPI_Recv(rb, s->size, MPI_CHAR, s->peer, FB_TAG_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (ctx->opt.validate)
                fb_verify(ctx, rb, (size_t)s->size, i, s->peer, s->peer);
        } else {
            MPI_Recv(rb, s->size, MPI_CHAR, s->peer, FB_TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (ctx->opt.validate) {
                fb_verify(ctx, rb, (size_t)s->size, i, s->peer, s->peer);
                fb_fill(ctx, sb, (size_t)s->size, i, ctx->rank);
            }
            MPI_Send(sb, s->size, MPI_CHAR, s->peer, FB_TAG_PONG, MPI_COMM_WORLD);
        }
    }
}

/* One iteration: a window of messages from the initiator, then a short acknowledgement;
 * or, both ways (bibw), both sides post a window of receives and a window of sends. */
static void window_run(void *state, long long first, long long count)
{
    pair_state *s = state;
    fb_ctx *ctx = s->ctx;
    if (s->role == IDLE)
        return;
    const int sends = s->both_ways || s->role == INITIATOR, receives = s->both_ways || s->role == RESPONDER;
    for (long long i = first; i < first + count; i++) {
        char *sb = fb_buf_at(&s->sbuf, i), *rb = fb_buf_at(&s->rbuf, i);
        int posted = 0;
        if (sends && ctx->opt.validate)
            fb_fill(ctx, sb, (size_t)s->size, i, ctx->rank);
        for (int w = 0; receives && w < s->window; w++)
            MPI_Irecv(rb, s->size, MPI_CHAR, s->peer, FB_TAG_DATA, MPI_COMM_WORLD, &s->reqs[posted++]);
        for (int w = 0; sends && w < s->window; w++)
            MPI_Isend(sb, s->size, MPI_CHAR, s->peer, FB_TAG_DATA, MPI_COMM_WORLD, &s->reqs[posted++]);
        MPI_Waitall(posted, s->reqs, MPI_STATUSES_IGNORE);
        if (receives && ctx->opt.validate)
            fb_verify(ctx, rb, (size_t)s->size, i, s->peer, s->peer);
        if (s->both_ways)
            continue;
        if (s->role == INITIATOR)
            MPI_Recv(s->ack, ACK_BYTES, MPI_CHAR, s->peer, FB_TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else
            MPI_Send(s->ack, ACK_BYTES, MPI_CHAR, s->peer, FB_TAG_ACK, MPI_COMM_WORLD);
    }
}

/* ---- sizes and records ----------------------------------------------------------- */

/* Turns one size's samples (this rank's, seconds per iteration; may be rescaled in place)
 * into records and emits them; every rank calls it. */
typedef void (*report_fn)(pair_state *s, const fb_plan *plan, double *samples, double elapsed);

static void measure_sizes(pair_state *s, void (*kernel)(void *, long long, long long), report_fn report)
{
    fb_ctx *ctx = s->ctx;
    for (int k = 0; k < ctx->nsizes; k++) {
        pair_use_size(s, ctx->sizes[k]);
        fb_kernel kern = {kernel, NULL, s, 1, NULL};
        fb_plan plan;
        double elapsed;
        fb_prepare(ctx, &kern, &plan);
        double *samples = fb_measure(ctx, &kern, &plan, &elapsed);
        report(s, &plan, samples, elapsed);
        free(samples);
    }
    pair_teardown(s);
}

static void peers_01(fb_json *params)
{
    fb_json_open_array(params, "peers");
    fb_json_int(params, NULL, 0);
    fb_json_int(params, NULL, 1);
    fb_json_close_array(params);
}

static void pairs_params(fb_json *params, int pairs)
{
    fb_json_int(params, "pairs", pairs);
    fb_json_str(params, "pairing", "i <-> i + np/2");
}

/* Opens pair p's entry of a detail.per_pair list: {"ranks": [p, p + np/2], ... */
static void open_pair(fb_json *detail, int p, int np)
{
    fb_json_open(detail, NULL);
    fb_json_open_array(detail, "ranks");
    fb_json_int(detail, NULL, p);
    fb_json_int(detail, NULL, p + np / 2);
    fb_json_close_array(detail);
}

/* ---- ranks 0 and 1 ---------------------------------------------------------------- */

static enum role role_of_01(const fb_ctx *ctx, int *peer)
{
    *peer = ctx->rank == 0 ? 1 : 0;
    return ctx->rank == 0 ? INITIATOR : ctx->rank == 1 ? RESPONDER : IDLE;
}

static void report_latency(pair_state *s, const fb_plan *plan, double *samples, double elapsed)
{
    fb_ctx *ctx = s->ctx;
    fb_point pt;
    if (ctx->rank == 0) {
        for (long long i = 0; i < plan->samples; i++)
            samples[i] = samples[i] * 1e6 / 2.0; /* round trip -> one-way, us */
        fb_point_init(&pt, "latency", "us", s->size);
        fb_stats_compute(&pt.st, samples, plan->samples);
        pt.value = elapsed * 1e6 / (2.0 * (double)plan->iterations);
        pt.iterations = plan->iterations;
        peers_01(&pt.params);
        fb_point_plan(&pt, plan);
    }
    fb_emit(ctx, &pt, 1);
}

void fb_run_latency(fb_ctx *ctx)
{
    pair_state s;
    int peer;
    enum role role = role_of_01(ctx, &peer);
    pair_setup(ctx, &s, role, peer, 1);
    measure_sizes(&s, pingpong_run, report_latency);
}

/* bw and bibw: rank 0 times windows; bytes per iteration = directions * window * size. */
static void report_window_bandwidth(pair_state *s, const fb_plan *plan, double *samples, double elapsed)
{
    fb_ctx *ctx = s->ctx;
    fb_point pt;
    if (ctx->rank == 0) {
        double bytes = (s->both_ways ? 2.0 : 1.0) * (double)s->window * (double)s->size;
        for (long long i = 0; i < plan->samples; i++)
            samples[i] = bytes / samples[i] / 1e6;
        fb_point_init(&pt, s->both_ways ? "bibandwidth" : "bandwidth", "MB/s", s->size);
        fb_stats_compute(&pt.st, samples, plan->samples);
        pt.value = bytes * (double)plan->iterations / elapsed / 1e6;
        pt.iterations = plan->iterations;
        fb_json_int(&pt.params, "window", s->window);
        if (s->window < s->window_max)  /* --max-window-bytes took messages out of the window */
            fb_json_int(&pt.detail, "window_capped_from", s->window_max);
        peers_01(&pt.params);
        fb_point_plan(&pt, plan);
        fb_json_num(&pt.detail, "elapsed_s", elapsed);
    }
    fb_emit(ctx, &pt, 1);
}

static void run_window_bandwidth(fb_ctx *ctx, int both_ways)
{
    pair_state s;
    int peer;
    enum role role = role_of_01(ctx, &peer);
    pair_setup(ctx, &s, role, peer, ctx->opt.window);
    s.both_ways = both_ways;
    measure_sizes(&s, window_run, report_window_bandwidth);
}

void fb_run_bw(fb_ctx *ctx) { run_window_bandwidth(ctx, 0); }
void fb_run_bibw(fb_ctx *ctx) { run_window_bandwidth(ctx, 1); }

/* ---- pairs (i, i + np/2) ------------------------------------------------------------ */

static void setup_halves(fb_ctx *ctx, pair_state *s, int window)
{
    int pairs = ctx->opt.pairs ? ctx->opt.pairs : ctx->np / 2, half = ctx->np / 2, peer = -1;
    enum role role = IDLE;
    if (ctx->rank < pairs) {
        peer = ctx->rank + half;
        role = INITIATOR;
    } else if (ctx->rank >= half && ctx->rank < half + pairs) {
        peer = ctx->rank - half;
        role = RESPONDER;
    }
    pair_setup(ctx, s, role, peer, window);
    s->pairs = pairs;
}

/* Rank 0: every rank's elapsed time, 0 for those that do not initiate (NULL elsewhere). */
static double *gather_elapsed(const pair_state *s, double elapsed)
{
    double mine = s->role == INITIATOR ? elapsed : 0.0;
    double *all = s->ctx->rank == 0 ? fb_malloc((size_t)s->ctx->np * sizeof *all) : NULL;
    MPI_Gather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return all;
}

static void report_mbw_mr(pair_state *s, const fb_plan *plan, double *samples, double elapsed)
{
    fb_ctx *ctx = s->ctx;
    const int pairs = s->pairs, root = ctx->rank == 0;
    /* Per-sample aggregates: each sender's rate in that sample, summed over senders. */
    double *bw = fb_calloc((size_t)plan->samples, sizeof *bw);
    double *mr = fb_calloc((size_t)plan->samples, sizeof *mr);
    if (s->role == INITIATOR) {
        for (long long i = 0; i < plan->samples; i++) {
            mr[i] = (double)s->window / samples[i];
            bw[i] = mr[i] * (double)s->size / 1e6;
        }
    }
    MPI_Reduce(root ? MPI_IN_PLACE : bw, root ? bw : NULL, (int)plan->samples, MPI_DOUBLE, MPI_SUM, 0,
               MPI_COMM_WORLD);
    MPI_Reduce(root ? MPI_IN_PLACE : mr, root ? mr : NULL, (int)plan->samples, MPI_DOUBLE, MPI_SUM, 0,
               MPI_COMM_WORLD);
    double *elapsed_all = gather_elapsed(s, elapsed);

    fb_point pts[2];
    if (root) {
        /* OSU: every pair's messages over the time of the slowest pair. */
        double slowest = 0.0;
        for (int p = 0; p < pairs; p++)
            if (elapsed_all[p] > slowest)
                slowest = elapsed_all[p];
        double messages = (double)pairs * (double)s->window * (double)plan->iterations;
        fb_point_init(&pts[0], "bandwidth", "MB/s", s->size);
        fb_point_init(&pts[1], "message_rate", "msg/s", s->size);
        fb_stats_compute(&pts[0].st, bw, plan->samples);
        fb_stats_compute(&pts[1].st, mr, plan->samples);
        pts[0].value = messages * (double)s->size / slowest / 1e6;
        pts[1].value = messages / slowest;
        pts[0].label = "Aggregate BW";
        for (int m = 0; m < 2; m++) {
            fb_point *pt = &pts[m];
            pt->iterations = plan->iterations;
            fb_json_int(&pt->params, "window", s->window);
            if (s->window < s->window_max)
                fb_json_int(&pt->detail, "window_capped_from", s->window_max);
            pairs_params(&pt->params, pairs);
            fb_point_plan(pt, plan);
            fb_json_num(&pt->detail, "elapsed_s", slowest);
            if (pairs > MAX_DETAIL_PAIRS)
                continue;
            fb_json_open_array(&pt->detail, "per_pair");
            for (int p = 0; p < pairs; p++) {
                double rate = (double)s->window * (double)plan->iterations / elapsed_all[p];
                open_pair(&pt->detail, p, ctx->np);
                fb_json_num(&pt->detail, "value", m == 0 ? rate * (double)s->size / 1e6 : rate);
                fb_json_close(&pt->detail);
            }
            fb_json_close_array(&pt->detail);
        }
    }
    fb_emit(ctx, pts, 2);
    free(elapsed_all);
    free(bw);
    free(mr);
}

void fb_run_mbw_mr(fb_ctx *ctx)
{
    pair_state s;
    setup_halves(ctx, &s, ctx->opt.window);
    measure_sizes(&s, window_run, report_mbw_mr);
}

static void report_multi_lat(pair_state *s, const fb_plan *plan, double *samples, double elapsed)
{
    fb_ctx *ctx = s->ctx;
    const int pairs = s->pairs;
    for (long long i = 0; i < plan->samples; i++)
        samples[i] = samples[i] * 1e6 / 2.0;

    /* Pool every pair's samples on rank 0 (thinned evenly if there are very many). */
    long long stride = ((long long)pairs * plan->samples + MAX_POOLED_SAMPLES - 1) / MAX_POOLED_SAMPLES;
    int per_pair = (int)((plan->samples + stride - 1) / stride);
    double *mine = fb_malloc((size_t)per_pair * sizeof *mine);
    for (int i = 0; i < per_pair; i++)
        mine[i] = samples[(long long)i * stride];
    int *counts = fb_calloc((size_t)ctx->np, sizeof(int));
    int *displs = fb_calloc((size_t)ctx->np, sizeof(int));
    for (int r = 0; r < pairs; r++) {
        counts[r] = per_pair;
        displs[r] = r * per_pair;
    }
    double *pooled = ctx->rank == 0 ? fb_malloc((size_t)pairs * (size_t)per_pair * sizeof *pooled) : NULL;
    MPI_Gatherv(mine, s->role == INITIATOR ? per_pair : 0, MPI_DOUBLE, pooled, counts, displs, MPI_DOUBLE, 0,
                MPI_COMM_WORLD);
    double *elapsed_all = gather_elapsed(s, elapsed);

    fb_point pt;
    if (ctx->rank == 0) {
        fb_point_init(&pt, "latency", "us", s->size);
        fb_stats_compute(&pt.st, pooled, (long long)pairs * per_pair);
        double sum = 0.0;
        for (int p = 0; p < pairs; p++)
            sum += elapsed_all[p] * 1e6 / (2.0 * (double)plan->iterations);
        pt.value = sum / pairs; /* OSU: the average over pairs of each pair's latency */
        pt.iterations = plan->iterations;
        pairs_params(&pt.params, pairs);
        fb_point_plan(&pt, plan);
        fb_json_str(&pt.detail, "stats_over", "samples of all pairs, pooled");
        if (stride > 1)
            fb_json_int(&pt.detail, "pooled_every_nth_sample", stride);
        if (pairs <= MAX_DETAIL_PAIRS) {
            fb_json_open_array(&pt.detail, "per_pair");
            for (int p = 0; p < pairs; p++) {
                fb_stats st;
                fb_stats_compute(&st, pooled + (size_t)p * per_pair, per_pair);
                open_pair(&pt.detail, p, ctx->np);
                fb_json_num(&pt.detail, "value", elapsed_all[p] * 1e6 / (2.0 * (double)plan->iterations));
                fb_json_num(&pt.detail, "min", st.min);
                fb_json_num(&pt.detail, "median", st.median);
                fb_json_num(&pt.detail, "p99", st.p99);
                fb_json_num(&pt.detail, "max", st.max);
                fb_json_close(&pt.detail);
            }
            fb_json_close_array(&pt.detail);
        }
    }
    fb_emit(ctx, &pt, 1);
    free(elapsed_all);
    free(pooled);
    free(counts);
    free(displs);
    free(mine);
}

void fb_run_multi_lat(fb_ctx *ctx)
{
    pair_state s;
    setup_halves(ctx, &s, 1);
    measure_sizes(&s, pingpong_run, report_multi_lat);
}
