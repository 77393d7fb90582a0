/* loggp.c - LogGP parameters between ranks 0 and 1, in the manner of Netgauge's LogGP
 * method (Hoefler et al., "Netgauge: A Network Performance Measurement Framework"), one
 * record per size and quantity, all in microseconds:
 *
 *   latency        blocking ping-pong, round trip / 2
 *   overhead_send  time rank 0 spends inside MPI_Send (the receiver replies with an
 *                  untimed acknowledgement after each message)
 *   overhead_recv  time rank 0 spends inside MPI_Recv for a message that has already
 *                  arrived (rank 0 waits 1.5 round trips of that size before receiving)
 *   gap            time per message of WINDOW back-to-back MPI_Sends less the time of one,
 *                  over WINDOW - 1: g + (s - 1) G
 *
 * L follows as latency - overhead_send - overhead_recv; models/p2p.py fits o + s O and
 * g + (s - 1) G over the sizes. Ranks other than 0 and 1 stay idle. */
#include <stdlib.h>
#include <string.h>

#include "buffers.h"
#include "fabricbench.h"
#include "output.h"
#include "stats.h"
#include "tags.h"
#include "timing.h"

enum { LG_PINGPONG, LG_SEND, LG_RECV, LG_TRAIN, LG_NKERNELS };

typedef struct {
    fb_ctx *ctx;
    int kernel;       /* which of the four patterns one iteration runs */
    int size;
    int window;       /* messages of one LG_TRAIN iteration */
    double delay_s;   /* LG_RECV: how long rank 0 waits before receiving */
    double train_one; /* LG_TRAIN with window > 1: seconds of a train of one (the gap's base) */
    double *part;     /* per iteration: the time inside the timed call (LG_SEND, LG_RECV) */
    long long nparts;
    fb_buf sbuf, rbuf;
    char ack[4];
} lg_state;

static void spin_for(double seconds)
{
    double until = MPI_Wtime() + seconds;
    while (MPI_Wtime() < until)
        ;
}

static void lg_run(void *state, long long first, long long count)
{
    lg_state *s = state;
    int rank = s->ctx->rank;
    char *sb = s->sbuf.base, *rb = s->rbuf.base;
    if (rank > 1)
        return;
    int peer = 1 - rank;
    for (long long i = first; i < first + count; i++) {
        double t0, part = 0.0;
        switch (s->kernel) {
        case LG_PINGPONG:
            if (rank == 0) {
                MPI_Send(sb, s->size, MPI_CHAR, peer, FB_TAG_LG_DATA, MPI_COMM_WORLD);
                MPI_Recv(rb, s->size, MPI_CHAR, peer, FB_TAG_LG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(rb, s->size, MPI_CHAR, peer, FB_TAG_LG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sb, s->size, MPI_CHAR, peer, FB_TAG_LG_DATA, MPI_COMM_WORLD);
            }
            break;
        case LG_SEND:
            if (rank == 0) {
                t0 = MPI_Wtime();
                MPI_Send(sb, s->size, MPI_CHAR, peer, FB_TAG_LG_DATA, MPI_COMM_WORLD);
                part = MPI_Wtime() - t0;
                MPI_Recv(s->ack, 4, MPI_CHAR, peer, FB_TAG_LG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(rb, s->size, MPI_CHAR, peer, FB_TAG_LG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(s->ack, 4, MPI_CHAR, peer, FB_TAG_LG_ACK, MPI_COMM_WORLD);
            }
            break;
        case LG_RECV:
            if (rank == 0) {
                spin_for(s->delay_s);
                t0 = MPI_Wtime();
                MPI_Recv(rb, s->size, MPI_CHAR, peer, FB_TAG_LG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                part = MPI_Wtime() - t0;
                MPI_Send(s->ack, 4, MPI_CHAR, peer, FB_TAG_LG_ACK, MPI_COMM_WORLD);
            } else {
                MPI_Send(sb, s->size, MPI_CHAR, peer, FB_TAG_LG_DATA, MPI_COMM_WORLD);
                MPI_Recv(s->ack, 4, MPI_CHAR, peer, FB_TAG_LG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            break;
        default: /* LG_TRAIN */
            for (int w = 0; w < s->window; w++) {
                if (rank == 0)
                    MPI_Send(sb, s->size, MPI_CHAR, peer, FB_TAG_LG_DATA, MPI_COMM_WORLD);
                else
                    MPI_Recv(rb, s->size, MPI_CHAR, peer, FB_TAG_LG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            if (rank == 0)
                MPI_Recv(s->ack, 4, MPI_CHAR, peer, FB_TAG_LG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else
                MPI_Send(s->ack, 4, MPI_CHAR, peer, FB_TAG_LG_ACK, MPI_COMM_WORLD);
        }
        if (s->part && i < s->nparts)
            s->part[i] = part;
    }
}

/* Rank 0: the values a kernel's record is made of, for the stopping rule (fb_kernel). */
static void lg_values(void *state, const double *samples, long long n, double *out)
{
    lg_state *s = state;
    for (long long i = 0; i < n; i++) {
        if (s->kernel == LG_SEND || s->kernel == LG_RECV)
            out[i] = i < s->nparts ? s->part[i] : 0.0;
        else if (s->kernel == LG_TRAIN && s->window > 1)
            out[i] = samples[i] > s->train_one ? (samples[i] - s->train_one) / (s->window - 1) : 0.0;
        else
            out[i] = samples[i];
    }
}

/* Runs one kernel at the current size; returns rank 0's mean seconds per iteration (every
 * rank gets it) and, for the partial kernels, leaves the per-iteration parts in s->part. */
static double lg_measure(lg_state *s, int kernel, int window, fb_plan *plan, double **samples)
{
    fb_kernel k = {lg_run, NULL, s, 0, lg_values};
    s->kernel = kernel;
    s->window = window;
    free(s->part);
    s->part = NULL;
    s->nparts = 0;
    fb_prepare(s->ctx, &k, plan);
    if (kernel == LG_SEND || kernel == LG_RECV) {
        /* Room for what the precision rule may add past the plan (untouched pages cost nothing). */
        s->nparts = plan->iterations > FB_MAX_SAMPLES ? plan->iterations : FB_MAX_SAMPLES;
        s->part = fb_calloc((size_t)s->nparts, sizeof *s->part);
    }
    double elapsed;
    *samples = fb_measure(s->ctx, &k, plan, &elapsed);
    if (s->nparts > plan->iterations) /* the guard stopped the point early */
        s->nparts = plan->iterations;
    double mean = plan->iterations > 0 ? elapsed / (double)plan->iterations : 0.0;
    MPI_Bcast(&mean, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return mean;
}

static void lg_emit(lg_state *s, const char *metric, double *us, long long n, double value_us, const fb_plan *plan)
{
    fb_point pt;
    if (s->ctx->rank == 0) {
        fb_point_init(&pt, metric, "us", s->size);
        fb_stats_compute(&pt.st, us, n);
        pt.value = value_us;
        pt.iterations = plan->iterations;
        fb_json_open_array(&pt.params, "peers");
        fb_json_int(&pt.params, NULL, 0);
        fb_json_int(&pt.params, NULL, 1);
        fb_json_close_array(&pt.params);
        if (strcmp(metric, "gap") == 0)
            fb_json_int(&pt.params, "window", s->window);
        fb_point_plan(&pt, plan);
    }
    fb_emit(s->ctx, &pt, 1);
}

static double scaled_mean(double *v, long long n, double factor)
{
    double sum = 0.0;
    for (long long i = 0; i < n; i++)
        sum += (v[i] *= factor);
    return n ? sum / (double)n : 0.0;
}

void fb_run_loggp(fb_ctx *ctx)
{
    lg_state s;
    memset(&s, 0, sizeof s);
    s.ctx = ctx;
    size_t region = ctx->rank > 1 ? 1 : (size_t)fb_largest_size(ctx);
    fb_buf_alloc_for(&s.sbuf, region, &ctx->opt);
    fb_buf_alloc_for(&s.rbuf, region, &ctx->opt);
    const int window = ctx->opt.window > 1 ? ctx->opt.window : 2;
    for (int k = 0; k < ctx->nsizes; k++) {
        fb_plan plan;
        double *samples;
        s.size = (int)ctx->sizes[k];
        ctx->check.size = ctx->sizes[k];
        fb_buf_use(&s.sbuf, (size_t)s.size);
        fb_buf_use(&s.rbuf, (size_t)s.size);

        double rtt = lg_measure(&s, LG_PINGPONG, 1, &plan, &samples);
        double lat = scaled_mean(samples, plan.samples, 1e6 / 2.0);
        lg_emit(&s, "latency", samples, plan.samples, lat, &plan);
        free(samples);

        lg_measure(&s, LG_SEND, 1, &plan, &samples);
        free(samples);
        lg_emit(&s, "overhead_send", s.part, s.nparts, scaled_mean(s.part, s.nparts, 1e6), &plan);

        s.delay_s = 1.5 * rtt;
        lg_measure(&s, LG_RECV, 1, &plan, &samples);
        free(samples);
        lg_emit(&s, "overhead_recv", s.part, s.nparts, scaled_mean(s.part, s.nparts, 1e6), &plan);

        double one = lg_measure(&s, LG_TRAIN, 1, &plan, &samples);
        free(samples);
        s.train_one = one;
        double many = lg_measure(&s, LG_TRAIN, window, &plan, &samples);
        /* Per sample: (train of `window` - train of one) / (window - 1). */
        for (long long i = 0; i < plan.samples; i++) {
            samples[i] = (samples[i] - one) / (window - 1) * 1e6;
            if (samples[i] < 0)
                samples[i] = 0;
        }
        double gap = (many - one) / (window - 1) * 1e6;
        lg_emit(&s, "gap", samples, plan.samples, gap > 0 ? gap : 0.0, &plan); /* noise can make it negative */
        free(samples);
    }
    free(s.part);
    fb_buf_free(&s.sbuf);
    fb_buf_free(&s.rbuf);
}
