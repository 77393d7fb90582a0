/* allpairs.c - the all-pairs link health check: every ordered pair of ranks (one rank
 * per node) measured for bandwidth and latency under the same load, then the suspicious
 * pairs measured again alone, so that fabricbench's analysis can tell a bad node or link
 * from a busy moment.
 *
 *   --mode exchange  exchange rounds (mpiGraph's pattern, the default): in round
 *                    d = 1 .. N-1 rank r sends a window to (r + d) mod N while it receives
 *                    one from (r - d) mod N, so every node sends one stream and receives one.
 *   --mode pairs     disjoint pairs: a round-robin tournament of N/2 pairs per round (N-1
 *                    rounds; N rounds with one rank resting when N is odd); in each pair
 *                    the lower rank sends its window first, then the higher one, so a node
 *                    only ever does one transfer.
 * Records say benchmark "allpairs" either way, and params.mode which pattern it was.
 *
 * Bandwidth at --size bytes (default 1 MiB): a window of --window non-blocking
 * messages, acknowledged by the receiver, every round starting at a barrier.
 * Each transfer gives two figures, like mpiGraph's Send and Recv matrices: "send" as the
 * sender times it (posting the window to the receiver's acknowledgement: the OSU bw
 * definition) and "recv" as the receiver times it (posting its receives to the last
 * arrival). MB/s is decimal. In exchange round N/2 a rank's two peers coincide; that
 * round runs its two directions one after the other, as pairs mode does. Latency: 8-byte
 * ping-pong over the tournament of disjoint pairs, both ends initiating in turn; a
 * measurement is the median of LAT_ROUND_TRIPS round trips timed one by one, halved.
 *
 * The sweep over all rounds is repeated --repetitions times (default 3, spread in time so
 * that one busy moment spoils one repetition of a pair, not all); a pair's record is the
 * median over repetitions with the statistics over them. --warmup N (default 1) untimed
 * windows per pair come first and set up every connection.
 *
 * Retest: afterwards rank 0 picks the pairs to measure again one at a time, every other
 * rank sleeping in a barrier. Screens (deliberately more lenient than the analysis's
 * default thresholds, so that whatever it flags has been retested): every pair of the
 * nodes whose send or receive median (receiver-timed bandwidth) is below SCREEN_FRACTION
 * of the global median, or whose latency median is above 1 / LAT_SCREEN_FRACTION of the
 * global one (at most NODE_PAIR_CAP pairs); then every pair below the same screens
 * against what its sender sends and its receiver receives elsewhere (the lower of the
 * two medians; at most CELL_CAP pairs), and at least the --retest K (default 4) lowest of
 * those. Retest records carry params.retest = true and retest_reason "node" or "slowest".
 *
 * Records: per ordered pair and size, bandwidth "send" and "recv" (params size, src, dst,
 * rank_src, rank_dst, src_host, dst_host, direction, mode, window), per ordered pair
 * latency (size 8, direction "send": the src initiates and times), then per metric a
 * matrix record (params.scope "matrix"; statistics over pairs; detail.matrix with every
 * cell, row = src, column = dst, when N <= MAX_MATRIX_DETAIL). Host names are the run
 * record's (gethostname of each rank).
 *
 * Waiting: ranks spin in MPI waits as usual, unless ranks outnumber the cores of the
 * machine they share (same kernel boot id: the lab's nodes), where they nap between tests
 * (see wait_all); detail.waiting of the matrix records says which. */
#include <math.h>
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
#define LAT_ROUND_TRIPS 16
#define LAT_WARMUP 2
#define DEFAULT_WARMUP 1
#define SCREEN_FRACTION 0.85
#define LAT_SCREEN_FRACTION 0.6
#define NODE_PAIR_CAP 64
#define CELL_CAP 64
#define MAX_MATRIX_DETAIL 64
#define ACK_BYTES 4
#define POLITE_SPIN_S 20e-6

enum mode { EXCHANGE, PAIRS };
enum { WHY_SWEEP, WHY_NODE, WHY_SLOW };

typedef struct {
    fb_ctx *ctx;
    enum mode mode;
    int np, me, reps, window, warmup;
    int polite;         /* ranks outnumber the cores they share: wait by napping, not spinning */
    long long size;     /* bandwidth message size being measured */
    fb_buf sbuf, rbuf;
    MPI_Request *reqs;  /* window receives, window sends, ack receive, ack send */
    char ack_s[ACK_BYTES], ack_r[ACK_BYTES];
    char lat_s[LAT_BYTES], lat_r[LAT_BYTES];
    double *rtt;        /* LAT_ROUND_TRIPS round-trip times */
    int lat_peer, lat_initiator; /* the ping-pong being run */
    /* This rank's samples by peer, [peer * reps + rep]: send-side and latency of me -> peer,
     * receive-side of peer -> me. */
    double *send_bw, *recv_bw, *lat;
    /* Rank 0: medians by ordered pair, [src * np + dst]; NAN where not measured. */
    double *med_send, *med_recv, *med_lat;
} ap_state;

static const char *mode_name(const ap_state *s) { return s->mode == EXCHANGE ? "exchange" : "pairs"; }

static const char *host_of(const ap_state *s, int rank) { return fb_host_of(s->ctx, rank); }

/* ---- waiting ---------------------------------------------------------------------------- */

/* Completes n requests. Spinning is right with a core per rank (a real cluster); when
 * ranks outnumber the cores they share (the lab: every node on this machine's cores),
 * spinners starve the very ranks whose data they wait for, and a receiver that is not
 * scheduled for a time slice stalls its sender's TCP stream and shows up as a slow
 * link. Then a wait spins POLITE_SPIN_S and naps between tests after that. */
static void wait_all(const ap_state *s, int n, MPI_Request *reqs)
{
    if (s->polite)
        fb_wait_napping(n, reqs, POLITE_SPIN_S);
    else
        MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
}

static void barrier(const ap_state *s)
{
    if (s->polite)
        fb_quiet_barrier();
    else
        MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- schedules ------------------------------------------------------------------------ */

/* Rounds of the circle method over np rounded up to even. */
static int tournament_rounds(int np) { return np % 2 ? np : np - 1; }

/* r's partner in round t of the circle method over m = np rounded up to even: rank m - 1
 * stays put while the others rotate. -1 when r rests (its partner is the extra rank). */
static int tournament_partner(int r, int t, int np)
{
    int m = np + np % 2, k = m - 1, p;
    if (r == k)
        p = t;
    else if (r == t)
        p = k;
    else
        p = ((2 * t - r) % k + k) % k;
    return p >= np ? -1 : p;
}

static int sweep_rounds(const ap_state *s) { return s->mode == EXCHANGE ? s->np - 1 : tournament_rounds(s->np); }

/* Whom this rank sends to and receives from in bandwidth round `round` (-1: nobody). */
static void round_peers(const ap_state *s, int round, int *to, int *from)
{
    if (s->mode == EXCHANGE) {
        int d = round + 1;
        *to = (s->me + d) % s->np;
        *from = (s->me - d + s->np) % s->np;
    } else {
        *to = *from = tournament_partner(s->me, round, s->np);
    }
}

/* ---- measurements ----------------------------------------------------------------------- */

/* One window: this rank sends --window messages to `to` and receives as many from `from`
 * at the same time (either may be -1); each receiver acknowledges its window. Rates in
 * MB/s: *send_rate as the sender times it, *recv_rate as the receiver does. */
static void window_transfer(ap_state *s, int to, int from, long long iter, double *send_rate, double *recv_rate)
{
    fb_ctx *ctx = s->ctx;
    const int w = s->window, size = (int)s->size;
    MPI_Request *rq = s->reqs, *sq = s->reqs + w, *ack_in = s->reqs + 2 * w, *ack_out = s->reqs + 2 * w + 1;
    char *sb = fb_buf_at(&s->sbuf, iter), *rb = fb_buf_at(&s->rbuf, iter);
    if (to >= 0 && ctx->opt.validate)
        fb_fill(ctx, sb, (size_t)size, iter, s->me);

    double t0 = MPI_Wtime(), t_last = t0, t_ack = t0;
    if (to >= 0)
        MPI_Irecv(s->ack_r, ACK_BYTES, MPI_CHAR, to, FB_TAG_AP_ACK, MPI_COMM_WORLD, ack_in);
    if (from >= 0)
        for (int i = 0; i < w; i++)
            MPI_Irecv(rb, size, MPI_CHAR, from, FB_TAG_AP_DATA, MPI_COMM_WORLD, &rq[i]);
    if (to >= 0)
        for (int i = 0; i < w; i++)
            MPI_Isend(sb, size, MPI_CHAR, to, FB_TAG_AP_DATA, MPI_COMM_WORLD, &sq[i]);
    if (from >= 0) {
        wait_all(s, w, rq);
        t_last = MPI_Wtime();
        MPI_Isend(s->ack_s, ACK_BYTES, MPI_CHAR, from, FB_TAG_AP_ACK, MPI_COMM_WORLD, ack_out);
    }
    if (to >= 0) {
        wait_all(s, w, sq);
        wait_all(s, 1, ack_in);
        t_ack = MPI_Wtime();
    }
    if (from >= 0) {
        wait_all(s, 1, ack_out);
        if (ctx->opt.validate)
            fb_verify(ctx, rb, (size_t)size, iter, from, from);
    }

    const double bytes = (double)w * (double)size;
    if (send_rate)
        *send_rate = to >= 0 && t_ack > t0 ? bytes / (t_ack - t0) / 1e6 : NAN;
    if (recv_rate)
        *recv_rate = from >= 0 && t_last > t0 ? bytes / (t_last - t0) / 1e6 : NAN;
}

/* Median of the finite values of x[0..n-1], left as they are (tmp: room for n). */
static double median_of(const double *x, long long n, double *tmp)
{
    memcpy(tmp, x, (size_t)n * sizeof *tmp);
    return fb_median_finite(tmp, n);
}

/* count 8-byte round trips with s->lat_peer, the initiator sending first. */
static void round_trips(void *state, long long first, long long count)
{
    ap_state *s = state;
    const int peer = s->lat_peer;
    MPI_Request req[2];
    (void)first;
    for (long long i = 0; i < count; i++) {
        if (s->lat_initiator) {
            MPI_Irecv(s->lat_r, LAT_BYTES, MPI_CHAR, peer, FB_TAG_AP_PONG, MPI_COMM_WORLD, &req[0]);
            MPI_Isend(s->lat_s, LAT_BYTES, MPI_CHAR, peer, FB_TAG_AP_PING, MPI_COMM_WORLD, &req[1]);
            wait_all(s, 2, req);
        } else {
            MPI_Irecv(s->lat_r, LAT_BYTES, MPI_CHAR, peer, FB_TAG_AP_PING, MPI_COMM_WORLD, &req[0]);
            wait_all(s, 1, &req[0]);
            MPI_Isend(s->lat_s, LAT_BYTES, MPI_CHAR, peer, FB_TAG_AP_PONG, MPI_COMM_WORLD, &req[1]);
            wait_all(s, 1, &req[1]);
        }
    }
}

/* warmup untimed round trips with peer, then LAT_ROUND_TRIPS timed one by one; the
 * initiator returns the median one-way time in us. */
static double pingpong(ap_state *s, int peer, int initiator, int warmup)
{
    fb_kernel kern = {round_trips, NULL, s, 0, NULL};
    s->lat_peer = peer;
    s->lat_initiator = initiator;
    round_trips(s, -warmup, warmup);
    fb_time_samples(&kern, LAT_ROUND_TRIPS, 1, 0, LAT_ROUND_TRIPS, s->rtt);
    return initiator ? fb_median_finite(s->rtt, LAT_ROUND_TRIPS) * 1e6 / 2.0 : NAN;
}

/* Both directions of a latency pair: the lower rank initiates first, then the higher. */
static void latency_pair(ap_state *s, int peer, int warmup, double *mine)
{
    int first = s->me < peer;
    if (first)
        *mine = pingpong(s, peer, 1, warmup);
    (void)pingpong(s, peer, 0, warmup);
    if (!first)
        *mine = pingpong(s, peer, 1, warmup);
}

/* One bandwidth round of a sweep; rep < 0 is a warm-up (nothing kept). */
static void bandwidth_round(ap_state *s, int round, int rep)
{
    int to, from;
    double sent = NAN, received = NAN;
    long long iter = rep < 0 ? rep : rep + 1;
    round_peers(s, round, &to, &from);
    barrier(s);
    if (s->mode == EXCHANGE && to != from) {
        window_transfer(s, to, from, iter, &sent, &received);
    } else if (to >= 0) {
        /* The lower rank's window first, then the higher rank's: one transfer at a time. In
         * exchange round N/2 a rank's two peers are one and the same, and both directions
         * at once would share a connection (over TCP the control messages of one direction
         * queue behind the other's data, which halves both): that round goes this way too. */
        if (s->me < to) {
            window_transfer(s, to, -1, iter, &sent, NULL);
            window_transfer(s, -1, from, iter, NULL, &received);
        } else {
            window_transfer(s, -1, from, iter, NULL, &received);
            window_transfer(s, to, -1, iter, &sent, NULL);
        }
    }
    if (rep >= 0) {
        if (to >= 0)
            s->send_bw[(size_t)to * s->reps + rep] = sent;
        if (from >= 0)
            s->recv_bw[(size_t)from * s->reps + rep] = received;
    }
}

/* ---- records ---------------------------------------------------------------------------- */

typedef struct {
    fb_point pt;
    char label[64];
} ap_point;

static void pair_params(const ap_state *s, fb_json *params, int src, int dst, const char *direction)
{
    fb_json_int(params, "src", src);
    fb_json_int(params, "dst", dst);
    fb_json_int(params, "rank_src", src);
    fb_json_int(params, "rank_dst", dst);
    fb_json_str(params, "src_host", host_of(s, src));
    fb_json_str(params, "dst_host", host_of(s, dst));
    fb_json_str(params, "direction", direction);
    fb_json_str(params, "mode", mode_name(s));
}

/* A pair's record from its samples (rank 0). */
static void pair_point(ap_state *s, ap_point *ap, int bandwidth, int src, int dst, const char *direction,
                       const double *samples, int round, int why)
{
    fb_point *pt = &ap->pt;
    int n = s->reps;
    double *kept = fb_malloc((size_t)n * sizeof *kept);
    long long k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(samples[i]))
            kept[k++] = samples[i];
    fb_point_init(pt, bandwidth ? "bandwidth" : "latency", bandwidth ? "MB/s" : "us", bandwidth ? s->size : LAT_BYTES);
    if (k)
        fb_stats_compute(&pt->st, kept, k);
    else
        pt->st.n = 1; /* no usable sample (a clock that did not move): all zero, flagged below */
    pt->st.has_quantiles = 0; /* a pair's record has its few samples in detail, and pairs are many */
    pt->value = k ? pt->st.median : 0.0;
    pt->iterations = bandwidth ? (long long)n * s->window : (long long)n * LAT_ROUND_TRIPS;
    pair_params(s, &pt->params, src, dst, direction);
    if (bandwidth)
        fb_json_int(&pt->params, "window", s->window);
    if (why != WHY_SWEEP) {
        fb_json_bool(&pt->params, "retest", 1);
        fb_json_str(&pt->params, "retest_reason", why == WHY_NODE ? "node" : "slowest");
    }
    fb_json_open_array(&pt->detail, "samples");
    for (int i = 0; i < n; i++)
        fb_json_num(&pt->detail, NULL, samples[i]);
    fb_json_close_array(&pt->detail);
    if (!k)
        fb_json_bool(&pt->detail, "no_valid_sample", 1);
    if (round >= 0)
        fb_json_int(&pt->detail, "round", round + 1);
    if (bandwidth)
        fb_json_str(&pt->detail, "timed_by", strcmp(direction, "send") == 0
                                                 ? "sender: posting the window to the receiver's acknowledgement"
                                                 : "receiver: posting its receives to the last arrival");
    else
        fb_json_str(&pt->detail, "timed_by", "src: median of 16 round trips, halved");
    snprintf(ap->label, sizeof ap->label, "%d->%d %s%s", src, dst, bandwidth ? direction : "lat",
             why != WHY_SWEEP ? " retest" : "");
    pt->series_name = "Pair";
    pt->series = ap->label;
    free(kept);
}

/* Collective: every rank calls it with the same n; pts is read on rank 0 only. */
static void emit_points(ap_state *s, ap_point *pts, int n)
{
    static ap_point dummy;
    for (int i = 0; i < n; i++)
        fb_emit(s->ctx, s->me == 0 ? &pts[i].pt : &dummy.pt, 1);
}

/* After the last repetition of a round: every rank's row gathered on rank 0 (NULL on the
 * others). A row is [to, then reps samples of each series k, taken from by_peer[k] at
 * peers[k]] (NAN where peers[k] is -1). */
static double *gather_round(ap_state *s, int to, int nseries, double *const by_peer[], const int peers[])
{
    const int reps = s->reps, stride = 1 + nseries * reps;
    double *mine = fb_malloc((size_t)stride * sizeof *mine);
    mine[0] = to;
    for (int k = 0; k < nseries; k++)
        for (int i = 0; i < reps; i++)
            mine[1 + k * reps + i] = peers[k] >= 0 ? by_peer[k][(size_t)peers[k] * reps + i] : NAN;
    double *all = s->me == 0 ? fb_malloc((size_t)s->np * stride * sizeof *all) : NULL;
    MPI_Gather(mine, stride, MPI_DOUBLE, all, stride, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    free(mine);
    return all;
}

/* After the last repetition of a round: rank 0 emits every transfer's records and keeps
 * their medians. Bandwidth: a send record (the sender's row) and a receive record (the
 * receiver's row: dst received from src in this round); latency: the initiator's record. */
static void emit_round(ap_state *s, int round, int bandwidth)
{
    const int np = s->np, reps = s->reps, nseries = bandwidth ? 2 : 1, stride = 1 + nseries * reps;
    int to, from;
    if (bandwidth)
        round_peers(s, round, &to, &from);
    else
        to = from = tournament_partner(s->me, round, np);
    double *by_peer[2] = {bandwidth ? s->send_bw : s->lat, s->recv_bw};
    double *medians[2] = {bandwidth ? s->med_send : s->med_lat, s->med_recv};
    const int peers[2] = {to, from};
    double *all = gather_round(s, to, nseries, by_peer, peers);

    /* Every rank knows how many transfers the round had: one per sending rank. */
    int transfers = 0;
    for (int r = 0; r < np; r++)
        transfers += bandwidth && s->mode == EXCHANGE ? 1 : tournament_partner(r, round, np) >= 0;
    ap_point *pts = s->me == 0 ? fb_calloc((size_t)nseries * transfers, sizeof *pts) : NULL;
    if (s->me == 0) {
        int k = 0;
        double *tmp = fb_malloc((size_t)reps * sizeof *tmp);
        for (int src = 0; src < np; src++) {
            int dst = (int)all[(size_t)src * stride];
            if (dst < 0)
                continue;
            for (int series = 0; series < nseries; series++) {
                const double *x = all + (size_t)(series ? dst : src) * stride + 1 + (size_t)series * reps;
                pair_point(s, &pts[k++], bandwidth, src, dst, series ? "recv" : "send", x, round, WHY_SWEEP);
                medians[series][(size_t)src * np + dst] = median_of(x, reps, tmp);
            }
        }
        free(tmp);
    }
    emit_points(s, pts, nseries * transfers);
    free(pts);
    free(all);
}

/* Rank 0: one record of the whole matrix (row = src, column = dst), statistics over pairs. */
static void matrix_point(ap_state *s, ap_point *ap, const double *m, int bandwidth, const char *direction)
{
    const int np = s->np;
    fb_point *pt = &ap->pt;
    double *vals = fb_malloc((size_t)np * np * sizeof *vals);
    long long n = 0, worst = -1, best = -1;
    for (long long i = 0; i < (long long)np * np; i++) {
        if (!isfinite(m[i]))
            continue;
        vals[n++] = m[i];
        int lower_is_better = !bandwidth;
        if (worst < 0 || (lower_is_better ? m[i] > m[worst] : m[i] < m[worst]))
            worst = i;
        if (best < 0 || (lower_is_better ? m[i] < m[best] : m[i] > m[best]))
            best = i;
    }
    fb_point_init(pt, bandwidth ? "bandwidth" : "latency", bandwidth ? "MB/s" : "us", bandwidth ? s->size : LAT_BYTES);
    if (n)
        fb_stats_compute(&pt->st, vals, n);
    else
        pt->st.n = 1;
    pt->value = n ? pt->st.median : 0.0;
    fb_json_str(&pt->params, "scope", "matrix");
    fb_json_str(&pt->params, "direction", direction);
    fb_json_str(&pt->params, "mode", mode_name(s));
    if (bandwidth)
        fb_json_int(&pt->params, "window", s->window);
    fb_json_str(&pt->detail, "stats_over", "ordered pairs (each pair's median over repetitions)");
    fb_json_int(&pt->detail, "repetitions", s->reps);
    fb_json_str(&pt->detail, "waiting", s->polite ? "polite: ranks outnumber the cores they share" : "spin");
    const char *names[2] = {"worst_pair", "best_pair"};
    long long which[2] = {worst, best};
    for (int w = 0; w < 2 && n; w++) {
        fb_json_open(&pt->detail, names[w]);
        fb_json_int(&pt->detail, "src", which[w] / np);
        fb_json_int(&pt->detail, "dst", which[w] % np);
        fb_json_num(&pt->detail, "value", m[which[w]]);
        fb_json_close(&pt->detail);
    }
    fb_json_open_array(&pt->detail, "hosts");
    for (int r = 0; r < np; r++)
        fb_json_str(&pt->detail, NULL, host_of(s, r));
    fb_json_close_array(&pt->detail);
    if (np <= MAX_MATRIX_DETAIL) {
        fb_json_open_array(&pt->detail, "matrix");
        for (int i = 0; i < np; i++) {
            fb_json_open_array(&pt->detail, NULL);
            for (int j = 0; j < np; j++)
                fb_json_num(&pt->detail, NULL, m[(size_t)i * np + j]); /* NAN (diagonal) -> null */
            fb_json_close_array(&pt->detail);
        }
        fb_json_close_array(&pt->detail);
    }
    snprintf(ap->label, sizeof ap->label, "matrix %s", bandwidth ? direction : "lat");
    pt->series_name = "Pair";
    pt->series = ap->label;
    free(vals);
}

static void emit_matrix(ap_state *s, int bandwidth)
{
    int n = bandwidth ? 2 : 1;
    ap_point pts[2];
    if (s->me == 0) {
        if (bandwidth) {
            matrix_point(s, &pts[0], s->med_send, 1, "send");
            matrix_point(s, &pts[1], s->med_recv, 1, "recv");
        } else {
            matrix_point(s, &pts[0], s->med_lat, 0, "send");
        }
    }
    emit_points(s, pts, n);
}

/* ---- retest ----------------------------------------------------------------------------- */

typedef struct {
    int src, dst, why;
} ap_pair;

/* Medians of the rows (sending side) and columns (receiving side) of an np x np matrix. */
static void row_col_medians(const double *m, int np, double *rows, double *cols)
{
    double *tmp = fb_malloc((size_t)np * sizeof *tmp);
    for (int i = 0; i < np; i++) {
        rows[i] = median_of(m + (size_t)i * np, np, tmp);
        for (int j = 0; j < np; j++)
            tmp[j] = m[(size_t)j * np + i];
        cols[i] = fb_median_finite(tmp, np);
    }
    free(tmp);
}

static double matrix_median(const double *m, int np)
{
    double *all = fb_malloc((size_t)np * np * sizeof *all);
    double g = median_of(m, (long long)np * np, all);
    free(all);
    return g;
}

static int listed(const ap_pair *list, int n, int src, int dst)
{
    for (int i = 0; i < n; i++)
        if (list[i].src == src && list[i].dst == dst)
            return 1;
    return 0;
}

/* Rank 0: the pairs to measure again alone (see the header). Returns the count. */
static int choose_retests(ap_state *s, ap_pair **out)
{
    const int np = s->np;
    const size_t cells = (size_t)np * np;
    int want = s->ctx->opt.retest;
    long long total = (long long)np * (np - 1);
    if (want > total)
        want = (int)total;
    int cell_cap = want > CELL_CAP ? want : CELL_CAP;
    /* Latency as a speed (1 / latency), so that one rule serves both: lower is worse. */
    const double *bw = s->med_recv;
    double *lspeed = fb_malloc(cells * sizeof *lspeed);
    for (size_t c = 0; c < cells; c++)
        lspeed[c] = 1.0 / s->med_lat[c];
    double *rows = fb_malloc((size_t)np * sizeof *rows), *cols = fb_malloc((size_t)np * sizeof *cols);
    double *lrows = fb_malloc((size_t)np * sizeof *lrows), *lcols = fb_malloc((size_t)np * sizeof *lcols);
    row_col_medians(bw, np, rows, cols);
    row_col_medians(lspeed, np, lrows, lcols);
    double g = matrix_median(bw, np), lg = matrix_median(lspeed, np);
    ap_pair *list = fb_malloc((size_t)(NODE_PAIR_CAP + cell_cap) * sizeof *list);
    int n = 0;

    /* Screened nodes, the worst first: their sending side, receiving side, or both. A
     * score below 1 is below the screen. */
    double *score = fb_malloc((size_t)np * sizeof *score);
    int *side = fb_calloc((size_t)np, sizeof *side); /* 1 send, 2 receive */
    for (int i = 0; i < np; i++) {
        double out_bw = rows[i] / g / SCREEN_FRACTION, in_bw = cols[i] / g / SCREEN_FRACTION;
        double out_lat = lrows[i] / lg / LAT_SCREEN_FRACTION, in_lat = lcols[i] / lg / LAT_SCREEN_FRACTION;
        side[i] = (out_bw < 1.0 || out_lat < 1.0 ? 1 : 0) | (in_bw < 1.0 || in_lat < 1.0 ? 2 : 0);
        score[i] = fmin(fmin(out_bw, in_bw), fmin(out_lat, in_lat));
        if (!isfinite(score[i]))
            score[i] = 2.0;
    }
    for (;;) {
        int worst = -1;
        for (int i = 0; i < np; i++)
            if (score[i] < 1.0 && (worst < 0 || score[i] < score[worst]))
                worst = i;
        if (worst < 0)
            break;
        score[worst] = 2.0;
        for (int j = 0; j < np && n < NODE_PAIR_CAP; j++) {
            if (j == worst)
                continue;
            if ((side[worst] & 1) && !listed(list, n, worst, j))
                list[n++] = (ap_pair){worst, j, WHY_NODE};
            if ((side[worst] & 2) && n < NODE_PAIR_CAP && !listed(list, n, j, worst))
                list[n++] = (ap_pair){j, worst, WHY_NODE};
        }
    }

    /* Cells against what their sender sends and their receiver receives elsewhere: every
     * one below the screen (at most cell_cap), and at least the `want` lowest. The lowest
     * cell_cap + n scores are collected in one pass (kept sorted), then filtered. */
    int room = cell_cap + n, kept = 0;
    ap_pair *cand = fb_malloc((size_t)room * sizeof *cand);
    double *ratio = fb_malloc((size_t)room * sizeof *ratio);
    for (int i = 0; i < np; i++)
        for (int j = 0; j < np; j++) {
            size_t c = (size_t)i * np + j;
            double q_bw = bw[c] / fmin(rows[i], cols[j]) / SCREEN_FRACTION;
            double q_lat = lspeed[c] / fmin(lrows[i], lcols[j]) / LAT_SCREEN_FRACTION;
            double q = fmin(isfinite(q_bw) ? q_bw : INFINITY, isfinite(q_lat) ? q_lat : INFINITY);
            if (i == j || !isfinite(q) || (kept == room && q >= ratio[kept - 1]))
                continue;
            int at = kept < room ? kept++ : kept - 1;
            while (at > 0 && ratio[at - 1] > q) {
                ratio[at] = ratio[at - 1];
                cand[at] = cand[at - 1];
                at--;
            }
            ratio[at] = q;
            cand[at] = (ap_pair){i, j, WHY_SLOW};
        }
    for (int c = 0, added = 0; c < kept && added < cell_cap && (added < want || ratio[c] < 1.0); c++)
        if (!listed(list, n, cand[c].src, cand[c].dst)) {
            list[n++] = cand[c];
            added++;
        }
    free(cand);
    free(ratio);
    free(score);
    free(side);
    free(rows);
    free(cols);
    free(lrows);
    free(lcols);
    free(lspeed);
    *out = list;
    return n;
}

/* Measures one pair alone: bandwidth src -> dst and latency initiated by src, --repetitions
 * each; every other rank sleeps in the barrier of the next pair. */
static void retest_pair(ap_state *s, const ap_pair *p)
{
    const int reps = s->reps, me = s->me;
    double *res = fb_malloc((size_t)3 * reps * sizeof *res); /* send bw, recv bw, latency */
    for (int i = 0; i < 3 * reps; i++)
        res[i] = NAN;
    fb_quiet_barrier();
    if (me == p->src || me == p->dst) {
        int sender = me == p->src, peer = sender ? p->dst : p->src;
        for (int w = 0; w < s->warmup; w++)
            window_transfer(s, sender ? peer : -1, sender ? -1 : peer, -1 - w, NULL, NULL);
        for (int r = 0; r < reps; r++)
            window_transfer(s, sender ? peer : -1, sender ? -1 : peer, r + 1, sender ? &res[r] : NULL,
                            sender ? NULL : &res[reps + r]);
        for (int r = 0; r < reps; r++) {
            double v = pingpong(s, peer, sender, r == 0 ? LAT_WARMUP : 0);
            if (sender)
                res[2 * reps + r] = v;
        }
        if (me != 0) {
            if (sender)
                MPI_Send(res, reps, MPI_DOUBLE, 0, FB_TAG_AP_RESULT, MPI_COMM_WORLD);
            else
                MPI_Send(res + reps, reps, MPI_DOUBLE, 0, FB_TAG_AP_RESULT, MPI_COMM_WORLD);
            if (sender)
                MPI_Send(res + 2 * reps, reps, MPI_DOUBLE, 0, FB_TAG_AP_RESULT, MPI_COMM_WORLD);
        }
    }
    ap_point pts[3];
    if (me == 0) {
        if (p->src != 0) {
            fb_quiet_probe(p->src, FB_TAG_AP_RESULT);
            MPI_Recv(res, reps, MPI_DOUBLE, p->src, FB_TAG_AP_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Recv(res + 2 * reps, reps, MPI_DOUBLE, p->src, FB_TAG_AP_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        if (p->dst != 0) {
            fb_quiet_probe(p->dst, FB_TAG_AP_RESULT);
            MPI_Recv(res + reps, reps, MPI_DOUBLE, p->dst, FB_TAG_AP_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        pair_point(s, &pts[0], 1, p->src, p->dst, "send", res, -1, p->why);
        pair_point(s, &pts[1], 1, p->src, p->dst, "recv", res + reps, -1, p->why);
        pair_point(s, &pts[2], 0, p->src, p->dst, "send", res + 2 * reps, -1, p->why);
    }
    /* The others wait here asleep: with --validate, emitting is a collective that would spin. */
    if (s->ctx->opt.validate)
        fb_quiet_barrier();
    emit_points(s, pts, 3);
    free(res);
}

static void retest(ap_state *s)
{
    ap_pair *list = NULL;
    int n = 0;
    if (s->me == 0)
        n = choose_retests(s, &list);
    MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int *flat = fb_malloc((size_t)(3 * n + 1) * sizeof *flat);
    if (s->me == 0)
        for (int i = 0; i < n; i++) {
            flat[3 * i] = list[i].src;
            flat[3 * i + 1] = list[i].dst;
            flat[3 * i + 2] = list[i].why;
        }
    MPI_Bcast(flat, 3 * n, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) {
        ap_pair p = {flat[3 * i], flat[3 * i + 1], flat[3 * i + 2]};
        retest_pair(s, &p);
    }
    fb_quiet_barrier();
    free(flat);
    free(list);
}

/* ---- the benchmark ------------------------------------------------------------------------ */

static void fill_nan(double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = NAN;
}

void fb_run_allpairs(fb_ctx *ctx)
{
    ap_state s;
    memset(&s, 0, sizeof s);
    s.ctx = ctx;
    s.mode = ctx->opt.mode == FB_MODE_PAIRS ? PAIRS : EXCHANGE;
    s.np = ctx->np;
    s.me = ctx->rank;
    s.window = ctx->opt.window;
    s.reps = ctx->opt.repetitions;
    s.warmup = ctx->opt.warmup >= 0 ? ctx->opt.warmup : DEFAULT_WARMUP;
    fb_buf_alloc_for(&s.sbuf, (size_t)fb_largest_size(ctx), &ctx->opt);
    fb_buf_alloc_for(&s.rbuf, (size_t)fb_largest_size(ctx), &ctx->opt);
    s.reqs = fb_malloc(((size_t)2 * s.window + 2) * sizeof *s.reqs);
    s.rtt = fb_malloc(LAT_ROUND_TRIPS * sizeof *s.rtt);
    memset(s.ack_s, 0, sizeof s.ack_s);
    memset(s.lat_s, 0, sizeof s.lat_s);
    size_t per_peer = (size_t)s.np * s.reps;
    s.send_bw = fb_malloc(per_peer * sizeof(double));
    s.recv_bw = fb_malloc(per_peer * sizeof(double));
    s.lat = fb_malloc(per_peer * sizeof(double));
    fill_nan(s.lat, per_peer);
    if (s.me == 0) {
        size_t cells = (size_t)s.np * s.np;
        s.med_send = fb_malloc(cells * sizeof(double));
        s.med_recv = fb_malloc(cells * sizeof(double));
        s.med_lat = fb_malloc(cells * sizeof(double));
        fill_nan(s.med_lat, cells);
    }
    s.polite = fb_ranks_outnumber_cores(ctx);

    /* Latency first: tournament rounds, every repetition, the lower rank of a pair first. */
    const int lrounds = tournament_rounds(s.np);
    for (int rep = 0; rep < s.reps; rep++)
        for (int t = 0; t < lrounds; t++) {
            int peer = tournament_partner(s.me, t, s.np);
            barrier(&s);
            if (peer >= 0)
                latency_pair(&s, peer, rep == 0 ? LAT_WARMUP : 0, &s.lat[(size_t)peer * s.reps + rep]);
            if (rep == s.reps - 1)
                emit_round(&s, t, 0);
        }
    emit_matrix(&s, 0);

    const int rounds = sweep_rounds(&s);
    for (int k = 0; k < ctx->nsizes; k++) {
        s.size = ctx->sizes[k];
        ctx->check.size = s.size;
        fb_buf_use(&s.sbuf, (size_t)s.size);
        fb_buf_use(&s.rbuf, (size_t)s.size);
        fill_nan(s.send_bw, per_peer);
        fill_nan(s.recv_bw, per_peer);
        if (s.me == 0) {
            fill_nan(s.med_send, (size_t)s.np * s.np);
            fill_nan(s.med_recv, (size_t)s.np * s.np);
        }
        for (int w = 0; w < s.warmup; w++)
            for (int r = 0; r < rounds; r++)
                bandwidth_round(&s, r, -1 - w);
        for (int rep = 0; rep < s.reps; rep++)
            for (int r = 0; r < rounds; r++) {
                bandwidth_round(&s, r, rep);
                if (rep == s.reps - 1)
                    emit_round(&s, r, 1);
            }
        emit_matrix(&s, 1);
        retest(&s);
    }

    fb_buf_free(&s.sbuf);
    fb_buf_free(&s.rbuf);
    free(s.reqs);
    free(s.rtt);
    free(s.send_bw);
    free(s.recv_bw);
    free(s.lat);
    free(s.med_send);
    free(s.med_recv);
    free(s.med_lat);
}
