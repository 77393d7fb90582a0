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
 * Ranks outside the measured pairs stay idle (they only join the bookkeeping
 * collectives between points). */
#include <stdlib.h>
#include <string.h>

#include "buffers.h"
#include "check.h"
#include "fabricbench.h"
#include "output.h"
#include "stats.h"
#include "timing.h"

enum { TAG_PING = 1, TAG_PONG, TAG_DATA, TAG_ACK };
enum role { IDLE, INITIATOR, RESPONDER };

#define ACK_BYTES 4
#define MAX_DETAIL_PAIRS 1024
#define MAX_POOLED_SAMPLES (1LL << 24)

typedef struct {
    fb_ctx *ctx;
    enum role role;
    int peer;
    int size;
    int window;
    int plain;           /* warm cache, no validation: the tightest loop */
    fb_buf sbuf, rbuf;
    MPI_Request *reqs;
    char ack[ACK_BYTES];
} pair_state;

static long long max_size(const fb_ctx *ctx)
{
    long long m = 0;
    for (int i = 0; i < ctx->nsizes; i++)
        if (ctx->sizes[i] > m)
            m = ctx->sizes[i];
    return m;
}

static void pair_setup(fb_ctx *ctx, pair_state *s, enum role role, int peer, int window)
{
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    s->role = role;
    s->peer = peer;
    s->window = window;
    s->plain = !ctx->opt.validate && !ctx->opt.cache_cold;
    size_t region = role == IDLE ? 1 : (size_t)max_size(ctx);
    fb_buf_alloc(&s->sbuf, region, ctx->opt.cache_cold, (size_t)ctx->opt.cache_pool);
    fb_buf_alloc(&s->rbuf, region, ctx->opt.cache_cold, (size_t)ctx->opt.cache_pool);
    s->reqs = fb_malloc(2 * (size_t)window * sizeof *s->reqs);
}

static void pair_use_size(pair_state *s, long long size)
{
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
                MPI_Send(sb, s->size, MPI_CHAR, s->peer, TAG_PING, MPI_COMM_WORLD);
                MPI_Recv(rb, s->size, MPI_CHAR, s->peer, TAG_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        } else {
            for (long long i = 0; i < count; i++) {
                MPI_Recv(rb, s->size, MPI_CHAR, s->peer, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sb, s->size, MPI_CHAR, s->peer, TAG_PONG, MPI_COMM_WORLD);
            }
        }
        return;
    }
    for (long long i = first; i < first + count; i++) {
        char *sb = fb_buf_at(&s->sbuf, i), *rb = fb_buf_at(&s->rbuf, i);
        if (s->role == INITIATOR) {
            if (ctx->opt.validate)
                fb_fill(ctx, sb, (size_t)s->size, i, ctx->rank);
            MPI_Send(sb, s->size, MPI_CHAR, s->peer, TAG_PING, MPI_COMM_WORLD);
            MPI_Recv(rb, s->size, MPI_CHAR, s->peer, TAG_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (ctx->opt.validate)
                fb_verify(ctx, rb, (size_t)s->size, i, s->peer, s->peer);
        } else {
            MPI_Recv(rb, s->size, MPI_CHAR, s->peer, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (ctx->opt.validate) {
                fb_verify(ctx, rb, (size_t)s->size, i, s->peer, s->peer);
                fb_fill(ctx, sb, (size_t)s->size, i, ctx->rank);
            }
            MPI_Send(sb, s->size, MPI_CHAR, s->peer, TAG_PONG, MPI_COMM_WORLD);
        }
    }
}

/* One iteration: a window of messages from the initiator, then a short acknowledgement. */
static void window_run(void *state, long long first, long long count)
{
    pair_state *s = state;
    fb_ctx *ctx = s->ctx;
    if (s->role == IDLE)
        return;
    for (long long i = first; i < first + count; i++) {
        char *sb = fb_buf_at(&s->sbuf, i), *rb = fb_buf_at(&s->rbuf, i);
        if (s->role == INITIATOR) {
            if (ctx->opt.validate)
                fb_fill(ctx, sb, (size_t)s->size, i, ctx->rank);
            for (int w = 0; w < s->window; w++)
                MPI_Isend(sb, s->size, MPI_CHAR, s->peer, TAG_DATA, MPI_COMM_WORLD, &s->reqs[w]);
            MPI_Waitall(s->window, s->reqs, MPI_STATUSES_IGNORE);
            MPI_Recv(s->ack, ACK_BYTES, MPI_CHAR, s->peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int w = 0; w < s->window; w++)
                MPI_Irecv(rb, s->size, MPI_CHAR, s->peer, TAG_DATA, MPI_COMM_WORLD, &s->reqs[w]);
            MPI_Waitall(s->window, s->reqs, MPI_STATUSES_IGNORE);
            if (ctx->opt.validate)
                fb_verify(ctx, rb, (size_t)s->size, i, s->peer, s->peer);
            MPI_Send(s->ack, ACK_BYTES, MPI_CHAR, s->peer, TAG_ACK, MPI_COMM_WORLD);
        }
    }
}

/* One iteration: both sides post a window of receives and a window of sends. */
static void biwindow_run(void *state, long long first, long long count)
{
    pair_state *s = state;
    fb_ctx *ctx = s->ctx;
    if (s->role == IDLE)
        return;
    for (long long i = first; i < first + count; i++) {
        char *sb = fb_buf_at(&s->sbuf, i), *rb = fb_buf_at(&s->rbuf, i);
        if (ctx->opt.validate)
            fb_fill(ctx, sb, (size_t)s->size, i, ctx->rank);
        for (int w = 0; w < s->window; w++)
            MPI_Irecv(rb, s->size, MPI_CHAR, s->peer, TAG_DATA, MPI_COMM_WORLD, &s->reqs[w]);
        for (int w = 0; w < s->window; w++)
            MPI_Isend(sb, s->size, MPI_CHAR, s->peer, TAG_DATA, MPI_COMM_WORLD, &s->reqs[s->window + w]);
        MPI_Waitall(2 * s->window, s->reqs, MPI_STATUSES_IGNORE);
        if (ctx->opt.validate)
            fb_verify(ctx, rb, (size_t)s->size, i, s->peer, s->peer);
    }
}

/* ---- ranks 0 and 1 ---------------------------------------------------------------- */

static enum role role_of_01(const fb_ctx *ctx, int *peer)
{
    *peer = ctx->rank == 0 ? 1 : 0;
    return ctx->rank == 0 ? INITIATOR : ctx->rank == 1 ? RESPONDER : IDLE;
}

void fb_run_latency(fb_ctx *ctx)
{
    pair_state s;
    int peer;
    enum role role = role_of_01(ctx, &peer);
    pair_setup(ctx, &s, role, peer, 1);
    for (int k = 0; k < ctx->nsizes; k++) {
        long long size = ctx->sizes[k];
        pair_use_size(&s, size);
        fb_kernel kern = {pingpong_run, NULL, &s, 1};
        fb_plan plan;
        double elapsed;
        fb_prepare(ctx, &kern, &plan);
        double *samples = fb_measure(ctx, &kern, &plan, &elapsed);
        fb_point pt;
        if (ctx->rank == 0) {
            for (long long i = 0; i < plan.samples; i++)
                samples[i] = samples[i] * 1e6 / 2.0; /* round trip -> one-way, us */
            fb_point_init(&pt, "latency", "us", size);
            fb_stats_compute(&pt.st, samples, plan.samples);
            pt.value = elapsed * 1e6 / (2.0 * (double)plan.iterations);
            pt.iterations = plan.iterations;
            fb_json_open_array(&pt.params, "peers");
            fb_json_int(&pt.params, NULL, 0);
            fb_json_int(&pt.params, NULL, 1);
            fb_json_close_array(&pt.params);
            fb_plan_detail(&pt.detail, &plan);
        }
        fb_emit(ctx, &pt, 1);
        if (ctx->rank == 0)
            fb_point_free(&pt);
        free(samples);
    }
    pair_teardown(&s);
}

/* bw and bibw: rank 0 times windows; bytes per iteration = directions * window * size. */
static void run_window_bandwidth(fb_ctx *ctx, int directions)
{
    pair_state s;
    int peer;
    enum role role = role_of_01(ctx, &peer);
    pair_setup(ctx, &s, role, peer, ctx->opt.window);
    for (int k = 0; k < ctx->nsizes; k++) {
        long long size = ctx->sizes[k];
        pair_use_size(&s, size);
        fb_kernel kern = {directions == 2 ? biwindow_run : window_run, NULL, &s, 1};
        fb_plan plan;
        double elapsed;
        fb_prepare(ctx, &kern, &plan);
        double *samples = fb_measure(ctx, &kern, &plan, &elapsed);
        fb_point pt;
        if (ctx->rank == 0) {
            double bytes = (double)directions * (double)ctx->opt.window * (double)size;
            for (long long i = 0; i < plan.samples; i++)
                samples[i] = bytes / samples[i] / 1e6;
            fb_point_init(&pt, directions == 2 ? "bibandwidth" : "bandwidth", "MB/s", size);
            fb_stats_compute(&pt.st, samples, plan.samples);
            pt.value = bytes * (double)plan.iterations / elapsed / 1e6;
            pt.iterations = plan.iterations;
            fb_json_int(&pt.params, "window", ctx->opt.window);
            fb_json_open_array(&pt.params, "peers");
            fb_json_int(&pt.params, NULL, 0);
            fb_json_int(&pt.params, NULL, 1);
            fb_json_close_array(&pt.params);
            fb_plan_detail(&pt.detail, &plan);
            fb_json_num(&pt.detail, "elapsed_s", elapsed);
        }
        fb_emit(ctx, &pt, 1);
        if (ctx->rank == 0)
            fb_point_free(&pt);
        free(samples);
    }
    pair_teardown(&s);
}

void fb_run_bw(fb_ctx *ctx) { run_window_bandwidth(ctx, 1); }
void fb_run_bibw(fb_ctx *ctx) { run_window_bandwidth(ctx, 2); }

/* ---- pairs (i, i + np/2) ------------------------------------------------------------ */

static int pair_count(const fb_ctx *ctx) { return ctx->opt.pairs ? ctx->opt.pairs : ctx->np / 2; }

static enum role role_in_halves(const fb_ctx *ctx, int pairs, int *peer)
{
    int half = ctx->np / 2;
    if (ctx->rank < pairs) {
        *peer = ctx->rank + half;
        return INITIATOR;
    }
    if (ctx->rank >= half && ctx->rank < half + pairs) {
        *peer = ctx->rank - half;
        return RESPONDER;
    }
    *peer = -1;
    return IDLE;
}

static void pairs_params(const fb_ctx *ctx, fb_json *params, int pairs)
{
    fb_json_int(params, "pairs", pairs);
    fb_json_str(params, "pairing", "i <-> i + np/2");
    (void)ctx;
}

void fb_run_mbw_mr(fb_ctx *ctx)
{
    int pairs = pair_count(ctx), peer;
    enum role role = role_in_halves(ctx, pairs, &peer);
    pair_state s;
    pair_setup(ctx, &s, role, peer, ctx->opt.window);
    double *elapsed_all = ctx->rank == 0 ? fb_malloc((size_t)ctx->np * sizeof(double)) : NULL;
    for (int k = 0; k < ctx->nsizes; k++) {
        long long size = ctx->sizes[k];
        pair_use_size(&s, size);
        fb_kernel kern = {window_run, NULL, &s, 1};
        fb_plan plan;
        double elapsed;
        fb_prepare(ctx, &kern, &plan);
        double *samples = fb_measure(ctx, &kern, &plan, &elapsed);

        /* Per-sample aggregates: each sender's rate in that sample, summed over senders. */
        double *bw = fb_calloc((size_t)plan.samples, sizeof *bw);
        double *mr = fb_calloc((size_t)plan.samples, sizeof *mr);
        if (role == INITIATOR) {
            for (long long i = 0; i < plan.samples; i++) {
                mr[i] = (double)ctx->opt.window / samples[i];
                bw[i] = mr[i] * (double)size / 1e6;
            }
        }
        int root = ctx->rank == 0;
        MPI_Reduce(root ? MPI_IN_PLACE : bw, root ? bw : NULL, (int)plan.samples, MPI_DOUBLE, MPI_SUM, 0,
                   MPI_COMM_WORLD);
        MPI_Reduce(root ? MPI_IN_PLACE : mr, root ? mr : NULL, (int)plan.samples, MPI_DOUBLE, MPI_SUM, 0,
                   MPI_COMM_WORLD);
        double mine = role == INITIATOR ? elapsed : 0.0;
        MPI_Gather(&mine, 1, MPI_DOUBLE, elapsed_all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);

        fb_point pts[2];
        if (ctx->rank == 0) {
            /* OSU: every pair's messages over the time of the slowest pair. */
            double slowest = 0.0;
            for (int p = 0; p < pairs; p++)
                if (elapsed_all[p] > slowest)
                    slowest = elapsed_all[p];
            double messages = (double)pairs * (double)ctx->opt.window * (double)plan.iterations;
            fb_point_init(&pts[0], "bandwidth", "MB/s", size);
            fb_point_init(&pts[1], "message_rate", "msg/s", size);
            fb_stats_compute(&pts[0].st, bw, plan.samples);
            fb_stats_compute(&pts[1].st, mr, plan.samples);
            pts[0].value = messages * (double)size / slowest / 1e6;
            pts[1].value = messages / slowest;
            pts[0].label = "Aggregate BW";
            for (int m = 0; m < 2; m++) {
                fb_point *pt = &pts[m];
                pt->iterations = plan.iterations;
                fb_json_int(&pt->params, "window", ctx->opt.window);
                pairs_params(ctx, &pt->params, pairs);
                fb_plan_detail(&pt->detail, &plan);
                fb_json_num(&pt->detail, "elapsed_s", slowest);
                if (pairs <= MAX_DETAIL_PAIRS) {
                    fb_json_open_array(&pt->detail, "per_pair");
                    for (int p = 0; p < pairs; p++) {
                        double rate = (double)ctx->opt.window * (double)plan.iterations / elapsed_all[p];
                        fb_json_open(&pt->detail, NULL);
                        fb_json_open_array(&pt->detail, "ranks");
                        fb_json_int(&pt->detail, NULL, p);
                        fb_json_int(&pt->detail, NULL, p + ctx->np / 2);
                        fb_json_close_array(&pt->detail);
                        fb_json_num(&pt->detail, "value", m == 0 ? rate * (double)size / 1e6 : rate);
                        fb_json_close(&pt->detail);
                    }
                    fb_json_close_array(&pt->detail);
                }
            }
        }
        fb_emit(ctx, pts, 2);
        if (ctx->rank == 0) {
            fb_point_free(&pts[0]);
            fb_point_free(&pts[1]);
        }
        free(bw);
        free(mr);
        free(samples);
    }
    free(elapsed_all);
    pair_teardown(&s);
}

void fb_run_multi_lat(fb_ctx *ctx)
{
    int pairs = pair_count(ctx), peer;
    enum role role = role_in_halves(ctx, pairs, &peer);
    pair_state s;
    pair_setup(ctx, &s, role, peer, 1);
    int *counts = fb_calloc((size_t)ctx->np, sizeof(int));
    int *displs = fb_calloc((size_t)ctx->np, sizeof(int));
    double *elapsed_all = fb_calloc((size_t)ctx->np, sizeof(double));
    for (int k = 0; k < ctx->nsizes; k++) {
        long long size = ctx->sizes[k];
        pair_use_size(&s, size);
        fb_kernel kern = {pingpong_run, NULL, &s, 1};
        fb_plan plan;
        double elapsed;
        fb_prepare(ctx, &kern, &plan);
        double *samples = fb_measure(ctx, &kern, &plan, &elapsed);
        for (long long i = 0; i < plan.samples; i++)
            samples[i] = samples[i] * 1e6 / 2.0;

        /* Pool every pair's samples on rank 0 (thinned evenly if there are very many). */
        long long stride = ((long long)pairs * plan.samples + MAX_POOLED_SAMPLES - 1) / MAX_POOLED_SAMPLES;
        int per_pair = (int)((plan.samples + stride - 1) / stride);
        double *mine = fb_malloc((size_t)per_pair * sizeof *mine);
        for (int i = 0; i < per_pair; i++)
            mine[i] = samples[(long long)i * stride];
        for (int r = 0; r < ctx->np; r++) {
            counts[r] = r < pairs ? per_pair : 0;
            displs[r] = r < pairs ? r * per_pair : 0;
        }
        double *pooled = ctx->rank == 0 ? fb_malloc((size_t)pairs * (size_t)per_pair * sizeof *pooled) : NULL;
        MPI_Gatherv(mine, role == INITIATOR ? per_pair : 0, MPI_DOUBLE, pooled, counts, displs, MPI_DOUBLE, 0,
                    MPI_COMM_WORLD);
        double mine_elapsed = role == INITIATOR ? elapsed : 0.0;
        MPI_Gather(&mine_elapsed, 1, MPI_DOUBLE, elapsed_all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);

        fb_point pt;
        if (ctx->rank == 0) {
            fb_point_init(&pt, "latency", "us", size);
            fb_stats_compute(&pt.st, pooled, (long long)pairs * per_pair);
            double sum = 0.0;
            for (int p = 0; p < pairs; p++)
                sum += elapsed_all[p] * 1e6 / (2.0 * (double)plan.iterations);
            pt.value = sum / pairs; /* OSU: the average over pairs of each pair's latency */
            pt.iterations = plan.iterations;
            pairs_params(ctx, &pt.params, pairs);
            fb_plan_detail(&pt.detail, &plan);
            fb_json_str(&pt.detail, "stats_over", "samples of all pairs, pooled");
            if (stride > 1)
                fb_json_int(&pt.detail, "pooled_every_nth_sample", stride);
            if (pairs <= MAX_DETAIL_PAIRS) {
                fb_json_open_array(&pt.detail, "per_pair");
                for (int p = 0; p < pairs; p++) {
                    fb_stats st;
                    fb_stats_compute(&st, pooled + (size_t)p * per_pair, per_pair);
                    fb_json_open(&pt.detail, NULL);
                    fb_json_open_array(&pt.detail, "ranks");
                    fb_json_int(&pt.detail, NULL, p);
                    fb_json_int(&pt.detail, NULL, p + ctx->np / 2);
                    fb_json_close_array(&pt.detail);
                    fb_json_num(&pt.detail, "value", elapsed_all[p] * 1e6 / (2.0 * (double)plan.iterations));
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
        if (ctx->rank == 0)
            fb_point_free(&pt);
        free(pooled);
        free(mine);
        free(samples);
    }
    free(counts);
    free(displs);
    free(elapsed_all);
    pair_teardown(&s);
}
