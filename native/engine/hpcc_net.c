/* hpcc_net.c - the HPC Challenge network tests, defined as HPCC's b_eff-based
 * latency/bandwidth benchmark defines them (HPCC 1.5, bench_lat_bw):
 *
 *   pingpong_pairs  ping-pong between ordered pairs of ranks, one pair at a time
 *                   (a token passes from client to client, so no two pairs overlap).
 *                   Per pair: latency = the best of M measurements of L round trips,
 *                   time / (2 L); bandwidth = size / that latency. Reported: min, avg,
 *                   max over pairs; latency at 8 bytes, bandwidth at 2,000,000 bytes.
 *                   All np (np - 1) pairs when they fit the time budget, otherwise a
 *                   random sample drawn on rank 0 from --seed.
 *   ring            every rank exchanges a message with both ring neighbours at once,
 *                   by two MPI_Sendrecv and by Irecv/Isend (the faster of the two
 *                   counts). Per measurement: time / (2 L), the maximum over ranks;
 *                   a ring's latency is the best measurement. Naturally ordered ring:
 *                   ranks in order. Randomly ordered rings: permutations drawn on rank 0
 *                   from --seed and broadcast; their latencies are averaged
 *                   geometrically. Bandwidth per process = size / latency.
 *
 * HPCC's counts: ping-pong L = 8, M = 5 at 8 bytes and L = 1, M = 2 at 2,000,000
 * bytes; rings M = 8 with 30 random rings at 8 bytes and M = 3 with 10 random rings
 * at 2,000,000 bytes. Here L grows to fill --time-budget (never below HPCC's L, or
 * --min-iterations if given); --iterations N fixes it. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buffers.h"
#include "check.h"
#include "fabricbench.h"
#include "output.h"
#include "stats.h"
#include "tags.h"
#include "timing.h"

#define LAT_BYTES 8
#define BW_BYTES 2000000
#define MAX_DETAIL_PAIRS 1024
#define MAX_LISTED_PERMUTATION_ENTRIES 4096


/* HPCC's loop length, measurement count and random ring count for one message size. */
typedef struct {
    long long size;
    int loop;
    int measurements;
    int random_rings;
} hpcc_counts;

static const hpcc_counts pingpong_lat = {LAT_BYTES, 8, 5, 0};
static const hpcc_counts pingpong_bw = {BW_BYTES, 1, 2, 0};
static const hpcc_counts ring_lat = {LAT_BYTES, 5, 8, 30};
static const hpcc_counts ring_bw = {BW_BYTES, 2, 3, 10};

/* ---- shared helpers ------------------------------------------------------------------ */

/* n buffers for messages of hc->size bytes, which validation messages name. */
static void use_buffers(fb_ctx *ctx, const hpcc_counts *hc, fb_buf *const bufs[], int n)
{
    ctx->check.size = hc->size;
    for (int b = 0; b < n; b++)
        fb_buf_alloc_for(bufs[b], (size_t)hc->size, &ctx->opt);
}

static void free_buffers(fb_buf *const bufs[], int n)
{
    for (int b = 0; b < n; b++)
        fb_buf_free(bufs[b]);
}

static long long floor_loop(const fb_ctx *ctx, int hpcc_loop)
{
    return ctx->opt.min_iterations_given ? ctx->opt.min_iterations : hpcc_loop;
}

/* ---- pingpong_pairs ---------------------------------------------------------------------- */

typedef struct {
    fb_ctx *ctx;
    int client, server;
    int size;
    long long loop;
    fb_buf sbuf, rbuf;
} pp_state;

/* count round trips between s->client and s->server, numbered from first. */
static void pp_round_trips(pp_state *s, long long first, long long count)
{
    fb_ctx *ctx = s->ctx;
    const int v = ctx->opt.validate;
    for (long long i = first; i < first + count; i++) {
        char *sb = fb_buf_at(&s->sbuf, i), *rb = fb_buf_at(&s->rbuf, i);
        if (ctx->rank == s->client) {
            if (v)
                fb_fill(ctx, sb, (size_t)s->size, i, s->client);
            MPI_Send(sb, s->size, MPI_CHAR, s->server, FB_TAG_HPCC_PING, MPI_COMM_WORLD);
            MPI_Recv(rb, s->size, MPI_CHAR, s->server, FB_TAG_HPCC_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (v)
                fb_verify(ctx, rb, (size_t)s->size, i, s->server, s->server);
        } else if (ctx->rank == s->server) {
            MPI_Recv(rb, s->size, MPI_CHAR, s->client, FB_TAG_HPCC_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (v) {
                fb_verify(ctx, rb, (size_t)s->size, i, s->client, s->client);
                fb_fill(ctx, sb, (size_t)s->size, i, s->server);
            }
            MPI_Send(sb, s->size, MPI_CHAR, s->client, FB_TAG_HPCC_PONG, MPI_COMM_WORLD);
        }
    }
}

static void pp_kernel_run(void *state, long long first, long long count)
{
    pp_round_trips(state, first, count);
}

/* HPCC's measurement of one pair: M times (one untimed + L timed round trips); the
 * client returns the best time / (2 L) in seconds, the server returns 0. */
static double pp_measure_pair(pp_state *s, int measurements)
{
    double best = 1e300;
    long long iter = 0;
    for (int m = 0; m < measurements; m++) {
        pp_round_trips(s, iter++, 1);
        double t0 = MPI_Wtime();
        pp_round_trips(s, iter, s->loop);
        double t = MPI_Wtime() - t0;
        iter += s->loop;
        if (t / (2.0 * (double)s->loop) < best)
            best = t / (2.0 * (double)s->loop);
    }
    return s->ctx->rank == s->client ? best : 0.0;
}

/* Ordered pair number idx of np (np - 1): client idx / (np - 1), server the idx-th other rank. */
static void pair_from_index(long long idx, int np, int *client, int *server)
{
    *client = (int)(idx / (np - 1));
    int other = (int)(idx % (np - 1));
    *server = other < *client ? other : other + 1;
}

static int cmp_pair(const void *a, const void *b)
{
    const int *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] - y[0];
    return x[1] - y[1];
}

/* Rank 0: count distinct ordered pairs, all of them in order or a seeded random sample. */
static int *choose_pairs(const fb_ctx *ctx, long long count, long long total)
{
    int *list = fb_malloc((size_t)count * 2 * sizeof *list);
    if (count == total) {
        for (long long k = 0; k < total; k++)
            pair_from_index(k, ctx->np, &list[2 * k], &list[2 * k + 1]);
        return list;
    }
    /* Floyd's algorithm picks count distinct indices without listing all of them;
     * the chosen set lives in an open-addressing table. */
    long long cap = 1;
    int bits = 0;
    while (cap < 2 * count) {
        cap *= 2;
        bits++;
    }
    long long *table = fb_malloc((size_t)cap * sizeof *table);
    for (long long i = 0; i < cap; i++)
        table[i] = -1;
    uint64_t rng = ctx->opt.seed ^ 0x5eed0fa1157a11ULL;
    long long n = 0;
    for (long long j = total - count; j < total; j++) {
        long long t = (long long)(fb_splitmix64(&rng) % (uint64_t)(j + 1));
        for (int pass = 0; pass < 2; pass++) {
            long long h = bits ? (long long)(((uint64_t)t * 0x9e3779b97f4a7c15ULL) >> (64 - bits)) : 0;
            int present = 0;
            while (table[h] >= 0) {
                if (table[h] == t) {
                    present = 1;
                    break;
                }
                h = (h + 1) & (cap - 1);
            }
            if (!present) {
                table[h] = t;
                pair_from_index(t, ctx->np, &list[2 * n], &list[2 * n + 1]);
                n++;
                break;
            }
            t = j; /* t was taken: Floyd takes j instead, which cannot be */
        }
    }
    free(table);
    qsort(list, (size_t)count, 2 * sizeof *list, cmp_pair);
    return list;
}

static void pairs_point(fb_ctx *ctx, const hpcc_counts *hc, int bandwidth)
{
    const int np = ctx->np, me = ctx->rank;
    pp_state s;
    memset(&s, 0, sizeof s);
    s.ctx = ctx;
    s.size = (int)hc->size;
    fb_buf *bufs[2] = {&s.sbuf, &s.rbuf};
    use_buffers(ctx, hc, bufs, 2);

    /* Estimate a round trip on the pair (0, np - 1), as HPCC does. */
    s.client = 0;
    s.server = np - 1;
    fb_kernel kern = {pp_kernel_run, NULL, &s, 1, NULL};
    long long warm = 0;
    double rtt = fb_warmup(ctx, &kern, &warm);

    /* Rank 0 decides loop length and pair list; everyone is told. */
    long long total = (long long)np * (np - 1);
    long long decided[2] = {0, 0};
    if (me == 0) {
        long long loop = ctx->opt.iterations;
        if (!loop) {
            loop = floor_loop(ctx, hc->loop);
            double tick = 10.0 * ctx->wtick_us * 1e-6; /* HPCC: a measurement spans >= 10 ticks */
            if (rtt > 0.0 && loop * rtt < tick)
                loop = (long long)ceil(tick / rtt);
        }
        long long fit = total;
        if (ctx->opt.pairs) {
            fit = ctx->opt.pairs;
        } else if (rtt > 0.0) {
            double per_pair = (double)hc->measurements * (double)(loop + 1) * rtt;
            double budget = ctx->opt.iterations ? 1e300 : ctx->opt.time_budget;
            double can = floor(budget / per_pair);
            fit = can < (double)total ? (long long)can : total;
        }
        if (fit < 1)
            fit = 1;
        decided[0] = loop;
        decided[1] = fit < total ? fit : total;
    }
    MPI_Bcast(decided, 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    s.loop = decided[0];
    long long count = decided[1];
    int *list = me == 0 ? choose_pairs(ctx, count, total) : fb_malloc((size_t)count * 2 * sizeof(int));
    MPI_Bcast(list, (int)(2 * count), MPI_INT, 0, MPI_COMM_WORLD);

    double *result = fb_calloc((size_t)count, sizeof *result);
    MPI_Barrier(MPI_COMM_WORLD);
    for (long long k = 0; k < count; k++) {
        s.client = list[2 * k];
        s.server = list[2 * k + 1];
        if (me != s.client && me != s.server)
            continue;
        /* Waiting ranks sleep rather than spin: the pair being measured gets the CPU. */
        if (me == s.client && k > 0 && list[2 * (k - 1)] != me) {
            fb_quiet_probe(list[2 * (k - 1)], FB_TAG_HPCC_TOKEN);
            MPI_Recv(NULL, 0, MPI_CHAR, list[2 * (k - 1)], FB_TAG_HPCC_TOKEN, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        if (me == s.server)
            fb_quiet_probe(s.client, FB_TAG_HPCC_PING); /* the first, untimed ping */
        result[k] = pp_measure_pair(&s, hc->measurements);
        if (me == s.client && k + 1 < count && list[2 * (k + 1)] != me)
            MPI_Send(NULL, 0, MPI_CHAR, list[2 * (k + 1)], FB_TAG_HPCC_TOKEN, MPI_COMM_WORLD);
    }
    fb_quiet_barrier();
    MPI_Reduce(me == 0 ? MPI_IN_PLACE : result, me == 0 ? result : NULL, (int)count, MPI_DOUBLE, MPI_SUM, 0,
               MPI_COMM_WORLD);

    fb_point pt;
    if (me == 0) {
        double *values = fb_malloc((size_t)count * sizeof *values);
        for (long long k = 0; k < count; k++)
            values[k] = bandwidth ? (double)hc->size / result[k] / 1e6 : result[k] * 1e6;
        fb_point_init(&pt, bandwidth ? "bandwidth" : "latency", bandwidth ? "MB/s" : "us", hc->size);
        pt.label = bandwidth ? "Avg Bandwidth" : "Avg Latency";
        fb_stats_compute(&pt.st, values, count);
        pt.value = pt.st.mean; /* HPCC's AvgPingPong figure */
        pt.iterations = s.loop * hc->measurements;
        fb_json_int(&pt.params, "pairs", count);
        fb_json_int(&pt.detail, "loop_length", s.loop);
        fb_json_int(&pt.detail, "measurements", hc->measurements);
        fb_json_int(&pt.detail, "pairs_measured", count);
        fb_json_int(&pt.detail, "pairs_total", total);
        fb_json_bool(&pt.detail, "sampled", count < total);
        if (count < total)
            fb_json_int(&pt.detail, "seed", (long long)ctx->opt.seed);
        long long worst = bandwidth ? fb_argmin(values, count) : fb_argmax(values, count);
        long long best = bandwidth ? fb_argmax(values, count) : fb_argmin(values, count);
        const char *names[2] = {"worst_pair", "best_pair"};
        long long which[2] = {worst, best};
        for (int w = 0; w < 2; w++) {
            fb_json_open(&pt.detail, names[w]);
            fb_json_int(&pt.detail, "client", list[2 * which[w]]);
            fb_json_int(&pt.detail, "server", list[2 * which[w] + 1]);
            fb_json_num(&pt.detail, "value", values[which[w]]);
            fb_json_close(&pt.detail);
        }
        if (count <= MAX_DETAIL_PAIRS) {
            fb_json_open_array(&pt.detail, "per_pair");
            for (long long k = 0; k < count; k++) {
                fb_json_open_array(&pt.detail, NULL);
                fb_json_int(&pt.detail, NULL, list[2 * k]);
                fb_json_int(&pt.detail, NULL, list[2 * k + 1]);
                fb_json_num(&pt.detail, NULL, values[k]);
                fb_json_close_array(&pt.detail);
            }
            fb_json_close_array(&pt.detail);
        }
        fb_json_int(&pt.detail, "warmup_iterations", warm);
        fb_json_num(&pt.detail, "warmup_estimate_us", rtt * 1e6);
        fb_json_str(&pt.detail, "definition",
                    bandwidth ? "per pair: size / (best of M measurements of time / (2 L)); stats over pairs"
                              : "per pair: best of M measurements of time / (2 L); stats over pairs");
        free(values);
    }
    fb_emit(ctx, &pt, 1);
    free(result);
    free(list);
    free_buffers(bufs, 2);
}

void fb_run_pingpong_pairs(fb_ctx *ctx)
{
    pairs_point(ctx, &pingpong_lat, 0);
    pairs_point(ctx, &pingpong_bw, 1);
}

/* ---- ring ------------------------------------------------------------------------------ */

typedef struct {
    fb_ctx *ctx;
    int left, right;
    int size;
    int nonblocking;
    fb_buf to_right, to_left, from_left, from_right;
} ring_state;

static void ring_exchange(void *state, long long first, long long count)
{
    ring_state *s = state;
    fb_ctx *ctx = s->ctx;
    const int v = ctx->opt.validate, me = ctx->rank;
    const size_t bytes = (size_t)s->size;
    for (long long i = first; i < first + count; i++) {
        char *sr = fb_buf_at(&s->to_right, i), *sl = fb_buf_at(&s->to_left, i);
        char *rl = fb_buf_at(&s->from_left, i), *rr = fb_buf_at(&s->from_right, i);
        if (v) {
            fb_fill(ctx, sr, bytes, i, 2LL * me);
            fb_fill(ctx, sl, bytes, i, 2LL * me + 1);
        }
        if (s->nonblocking) {
            MPI_Request req[4];
            MPI_Irecv(rl, s->size, MPI_CHAR, s->left, FB_TAG_RING_TO_RIGHT, MPI_COMM_WORLD, &req[0]);
            MPI_Irecv(rr, s->size, MPI_CHAR, s->right, FB_TAG_RING_TO_LEFT, MPI_COMM_WORLD, &req[1]);
            MPI_Isend(sr, s->size, MPI_CHAR, s->right, FB_TAG_RING_TO_RIGHT, MPI_COMM_WORLD, &req[2]);
            MPI_Isend(sl, s->size, MPI_CHAR, s->left, FB_TAG_RING_TO_LEFT, MPI_COMM_WORLD, &req[3]);
            MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        } else {
            MPI_Sendrecv(sr, s->size, MPI_CHAR, s->right, FB_TAG_RING_TO_RIGHT, rl, s->size, MPI_CHAR, s->left,
                         FB_TAG_RING_TO_RIGHT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Sendrecv(sl, s->size, MPI_CHAR, s->left, FB_TAG_RING_TO_LEFT, rr, s->size, MPI_CHAR, s->right,
                         FB_TAG_RING_TO_LEFT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        if (v) {
            fb_verify(ctx, rl, bytes, i, 2LL * s->left, s->left);
            fb_verify(ctx, rr, bytes, i, 2LL * s->right + 1, s->right);
        }
    }
}

static void ring_neighbours(ring_state *s, const int *order, int np)
{
    for (int i = 0; i < np; i++) {
        if (order[i] == s->ctx->rank) {
            s->left = order[(i - 1 + np) % np];
            s->right = order[(i + 1) % np];
            return;
        }
    }
}

/* Rank 0: count random orders of np ranks (Fisher-Yates), reproducible from the seed.
 * Ring r is the same for every message size, so latency and bandwidth share rings. */
static void make_random_rings(uint64_t seed, int count, int np, int *orders)
{
    uint64_t rng = seed;
    for (int r = 0; r < count; r++) {
        int *order = orders + (size_t)r * np;
        for (int i = 0; i < np; i++)
            order[i] = i;
        for (int i = np - 1; i > 0; i--) {
            int j = (int)(fb_splitmix64(&rng) % (uint64_t)(i + 1));
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }
}

static void digest_hex(const int *values, size_t n, char out[17])
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a over little-endian 32-bit values */
    for (size_t i = 0; i < n; i++) {
        uint32_t v = (uint32_t)values[i];
        for (int b = 0; b < 4; b++) {
            h ^= (v >> (8 * b)) & 0xffu;
            h *= 0x100000001b3ULL;
        }
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* One ring point: every ring of orders[nrings][np] measured M times with both
 * variants. Returns (rank 0) per-measurement latencies, max over ranks, in seconds. */
static double *measure_rings(fb_ctx *ctx, ring_state *s, const int *orders, int nrings, const hpcc_counts *hc,
                             long long *loop_out, long long *warm_out)
{
    const int np = ctx->np, M = hc->measurements;
    ring_neighbours(s, orders, np);
    s->nonblocking = 0;
    fb_kernel kern = {ring_exchange, NULL, s, 1, NULL};
    double estimate = fb_warmup(ctx, &kern, warm_out);
    fb_plan plan;
    double budget = ctx->opt.time_budget / ((double)nrings * M * 2.0);
    fb_plan_point(ctx, estimate, budget, floor_loop(ctx, hc->loop), 0, &plan);
    long long loop = plan.iterations;

    double *lat = fb_malloc((size_t)nrings * M * sizeof *lat);
    long long iter = 0;
    for (int r = 0; r < nrings; r++) {
        ring_neighbours(s, orders + (size_t)r * np, np);
        for (int m = 0; m < M; m++) {
            double best = 1e300;
            for (int variant = 0; variant < 2; variant++) {
                s->nonblocking = variant;
                MPI_Barrier(MPI_COMM_WORLD);
                ring_exchange(s, iter++, 1); /* HPCC's untimed first iteration */
                double t0 = MPI_Wtime();
                ring_exchange(s, iter, loop);
                double t = (MPI_Wtime() - t0) / (2.0 * (double)loop);
                iter += loop;
                if (t < best)
                    best = t;
            }
            lat[(size_t)r * M + m] = best;
        }
    }
    double *slowest = ctx->rank == 0 ? fb_malloc((size_t)nrings * M * sizeof *slowest) : NULL;
    MPI_Reduce(lat, slowest, nrings * M, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    free(lat);
    *loop_out = loop;
    return slowest;
}

static void ring_points(fb_ctx *ctx, const hpcc_counts *hc, int bandwidth, const int *random_orders, int nrandom)
{
    const int np = ctx->np, M = hc->measurements;
    ring_state s;
    memset(&s, 0, sizeof s);
    s.ctx = ctx;
    s.size = (int)hc->size;
    fb_buf *bufs[4] = {&s.to_right, &s.to_left, &s.from_left, &s.from_right};
    use_buffers(ctx, hc, bufs, 4);

    int *natural = fb_malloc((size_t)np * sizeof *natural);
    for (int i = 0; i < np; i++)
        natural[i] = i;

    for (int ordering = 0; ordering < 2; ordering++) {
        const int random = ordering == 1;
        const int nrings = random ? nrandom : 1;
        long long loop = 0, warm = 0;
        double *slowest = measure_rings(ctx, &s, random ? random_orders : natural, nrings, hc, &loop, &warm);
        fb_point pt;
        if (ctx->rank == 0) {
            /* natural: the M measurements are the samples, the best one is HPCC's figure;
             * random: each ring's best measurement is a sample, the geometric mean is HPCC's. */
            int n = random ? nrings : M;
            double *lat = fb_malloc((size_t)n * sizeof *lat);
            for (int i = 0; i < n; i++) {
                if (!random) {
                    lat[i] = slowest[i];
                    continue;
                }
                lat[i] = slowest[(size_t)i * M];
                for (int m = 1; m < M; m++)
                    if (slowest[(size_t)i * M + m] < lat[i])
                        lat[i] = slowest[(size_t)i * M + m];
            }
            double headline = random ? fb_geomean(lat, n) : lat[fb_argmin(lat, n)];
            double *samples = fb_malloc((size_t)n * sizeof *samples);
            for (int i = 0; i < n; i++)
                samples[i] = bandwidth ? (double)hc->size / lat[i] / 1e6 : lat[i] * 1e6;
            fb_point_init(&pt, bandwidth ? "bandwidth" : "latency", bandwidth ? "MB/s" : "us", hc->size);
            pt.series_name = "Ordering";
            pt.series = random ? "random" : "natural";
            pt.label = bandwidth ? "BW per process" : "Latency";
            fb_stats_compute(&pt.st, samples, n);
            pt.value = bandwidth ? (double)hc->size / headline / 1e6 : headline * 1e6;
            pt.iterations = loop * M * nrings;
            fb_json_str(&pt.params, "ordering", random ? "random" : "natural");
            if (random) {
                fb_json_int(&pt.params, "random_rings", nrings);
                fb_json_int(&pt.params, "seed", (long long)ctx->opt.seed);
            }
            fb_json_int(&pt.detail, "loop_length", loop);
            fb_json_int(&pt.detail, "measurements", M);
            fb_json_str(&pt.detail, "definition",
                        random ? "per ring: best of M measurements of max over ranks of time / (2 L); "
                                 "value: geometric mean over rings"
                               : "per measurement: max over ranks of time / (2 L); value: best measurement");
            fb_json_str(&pt.detail, "stats_over", random ? "random rings" : "measurements");
            if (random) {
                char digest[17];
                digest_hex(random_orders, (size_t)nrings * np, digest);
                fb_json_str(&pt.detail, "permutations_digest", digest);
                if ((long long)nrings * np <= MAX_LISTED_PERMUTATION_ENTRIES) {
                    fb_json_open_array(&pt.detail, "permutations");
                    for (int r = 0; r < nrings; r++) {
                        fb_json_open_array(&pt.detail, NULL);
                        for (int i = 0; i < np; i++)
                            fb_json_int(&pt.detail, NULL, random_orders[(size_t)r * np + i]);
                        fb_json_close_array(&pt.detail);
                    }
                    fb_json_close_array(&pt.detail);
                }
                fb_json_open_array(&pt.detail, "per_ring");
                for (int r = 0; r < nrings; r++)
                    fb_json_num(&pt.detail, NULL, samples[r]);
                fb_json_close_array(&pt.detail);
            }
            fb_json_int(&pt.detail, "warmup_iterations", warm);
            free(samples);
            free(lat);
        }
        fb_emit(ctx, &pt, 1);
        free(slowest);
    }
    free(natural);
    free_buffers(bufs, 4);
}

void fb_run_ring(fb_ctx *ctx)
{
    const int np = ctx->np;
    int nlat = ctx->opt.random_rings ? ctx->opt.random_rings : ring_lat.random_rings;
    int nbw = ctx->opt.random_rings ? ctx->opt.random_rings : ring_bw.random_rings;
    int most = nlat > nbw ? nlat : nbw;
    int *orders = fb_malloc((size_t)most * np * sizeof *orders);
    if (ctx->rank == 0)
        make_random_rings(ctx->opt.seed, most, np, orders);
    MPI_Bcast(orders, most * np, MPI_INT, 0, MPI_COMM_WORLD);

    ring_points(ctx, &ring_lat, 0, orders, nlat);
    ring_points(ctx, &ring_bw, 1, orders, nbw);
    free(orders);
}
