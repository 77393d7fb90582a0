/* exchange.c - the halo swap with every rank at once, and what a message costs a core.
 *
 * Every rank is in a ring and, per iteration, swaps a message with each neighbour the
 * way stencil codes exchange halos (LAMMPS, most finite-difference codes): post a receive
 * from the left, send to the right, wait; then the same the other way. Each swap waits
 * on the partner, so when ranks share cores a message also waits for its partner's turn
 * on a core, which no two-rank ping-pong shows.
 *
 * Two records per size:
 *   latency          microseconds per message when the ranks only exchange (iteration / 2,
 *                    slowest rank);
 *   cpu_per_message  the core time one message (a send and a receive) takes from a rank
 *                    that also computes: the iteration is timed again with c of fixed
 *                    work before the swaps (c = twice the bare iteration, enough to keep
 *                    the cores busy), and (T_busy / share - c) / 2, where share is the
 *                    ranks on the machine over its CPUs (2 for 4 ranks on 2 cores; 1 with
 *                    a core each, when the figure is the message's own time). The machine
 *                    is the boot id, which ranks in network namespaces of one host share.
 *                    The work is a dependent integer chain whose step count is calibrated
 *                    on this rank alone, so a descheduled rank does not count time it did
 *                    not compute.
 * The share, the ranks on the machine, its CPUs and c are in each record's params. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buffers.h"
#include "check.h"
#include "fabricbench.h"
#include "output.h"
#include "stats.h"
#include "tags.h"
#include "timing.h"
#include "util.h"

#define CALIBRATE_STEPS 20000
#define CALIBRATE_REPS 50
#define MACHINE_ID 64

typedef struct {
    fb_ctx *ctx;
    int left, right, size;
    long long work;  /* chain steps before each iteration's swaps */
    double share, c_us; /* with work: the core share and the work's microseconds (the record's terms) */
    fb_buf sbuf, rbuf;
} ex_state;

/* One swap of iteration it; with --validate the message carries the sender's pattern. */
static void swap(ex_state *s, int from, int to, int tag, long long it)
{
    fb_ctx *ctx = s->ctx;
    MPI_Request req;
    MPI_Irecv(s->rbuf.base, s->size, MPI_CHAR, from, tag, MPI_COMM_WORLD, &req);
    if (ctx->opt.validate)
        fb_fill(ctx, s->sbuf.base, (size_t)s->size, it, ctx->rank);
    MPI_Send(s->sbuf.base, s->size, MPI_CHAR, to, tag, MPI_COMM_WORLD);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (ctx->opt.validate)
        fb_verify(ctx, s->rbuf.base, (size_t)s->size, it, from, from);
}

static void ex_run(void *state, long long first, long long count)
{
    ex_state *s = state;
    for (long long i = first; i < first + count; i++) {
        fb_int_chain(s->work);
        swap(s, s->left, s->right, FB_TAG_RING_TO_RIGHT, i);
        swap(s, s->right, s->left, FB_TAG_RING_TO_LEFT, i);
    }
}

/* Chain steps per microsecond on this rank alone: the quickest of short repetitions (a
 * repetition is far shorter than a time slice, so most run without being descheduled). */
static double steps_per_us(void)
{
    double best = 0.0;
    for (int r = 0; r < CALIBRATE_REPS; r++) {
        double t0 = MPI_Wtime();
        fb_int_chain(CALIBRATE_STEPS);
        double us = (MPI_Wtime() - t0) * 1e6;
        if (us > 0 && CALIBRATE_STEPS / us > best)
            best = CALIBRATE_STEPS / us;
    }
    double all;
    MPI_Allreduce(&best, &all, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/* This rank's machine: its boot id (the host name where there is none). */
static void machine_id(char id[MACHINE_ID])
{
    memset(id, 0, MACHINE_ID);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f || !fgets(id, MACHINE_ID, f)) {
        int len = 0;
        char name[MPI_MAX_PROCESSOR_NAME];
        MPI_Get_processor_name(name, &len);
        snprintf(id, MACHINE_ID, "host %.58s", name);
    }
    if (f)
        fclose(f);
}

/* The CPUs this rank may run on. */
static int usable_cpus(void)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    int allowed = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
    int n = online > 0 ? (int)online : 1;
    return allowed > 0 && allowed < n ? allowed : n;
}

/* Ranks on the busiest machine over its CPUs, at least 1; *ranks and *cpus say which. */
static double core_share(fb_ctx *ctx, int *ranks, int *cpus)
{
    char mine[MACHINE_ID];
    machine_id(mine);
    char *all = fb_malloc((size_t)ctx->np * MACHINE_ID);
    int my_cpus = usable_cpus();
    int *all_cpus = fb_malloc((size_t)ctx->np * sizeof *all_cpus);
    MPI_Allgather(mine, MACHINE_ID, MPI_CHAR, all, MACHINE_ID, MPI_CHAR, MPI_COMM_WORLD);
    MPI_Allgather(&my_cpus, 1, MPI_INT, all_cpus, 1, MPI_INT, MPI_COMM_WORLD);
    double share = 1.0;
    *ranks = 1;
    *cpus = my_cpus;
    for (int r = 0; r < ctx->np; r++) {
        int same = 0;
        for (int q = 0; q < ctx->np; q++)
            same += memcmp(all + (size_t)r * MACHINE_ID, all + (size_t)q * MACHINE_ID, MACHINE_ID) == 0;
        double x = (double)same / (double)all_cpus[r];
        if (x > share || r == 0) {
            share = x > 1.0 ? x : 1.0;
            *ranks = same;
            *cpus = all_cpus[r];
        }
    }
    free(all);
    free(all_cpus);
    return share;
}

/* Rank 0: the values the record is made of, for the stopping rule (fb_kernel): with work, the
 * CPU time per message left once the work is taken out. */
static void ex_values(void *state, const double *samples, long long n, double *out)
{
    const ex_state *s = state;
    for (long long i = 0; i < n; i++) {
        double m = s->work ? (samples[i] * 1e6 / s->share - s->c_us) / 2.0 : samples[i];
        out[i] = m > 0 ? m : 0.0;
    }
}

/* Times the iteration at the state's work; returns seconds per iteration (slowest rank). */
static double time_iteration(ex_state *s, fb_plan *plan, double **samples)
{
    fb_kernel kern = {ex_run, NULL, s, 0, ex_values};
    double elapsed, slowest;
    fb_prepare(s->ctx, &kern, plan);
    *samples = fb_measure(s->ctx, &kern, plan, &elapsed);
    double per = elapsed / (double)plan->iterations;
    MPI_Allreduce(&per, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

static void params(fb_point *pt, double share, int ranks, int cpus, double busy_us)
{
    fb_json_str(&pt->params, "pattern", "ring halo swap, every rank");
    fb_json_num(&pt->params, "core_share", share);
    fb_json_int(&pt->params, "machine_ranks", ranks);
    fb_json_int(&pt->params, "machine_cpus", cpus);
    fb_json_num(&pt->params, "compute_us", busy_us);
}

void fb_run_exchange(fb_ctx *ctx)
{
    ex_state s = {.ctx = ctx};
    s.left = (ctx->rank + ctx->np - 1) % ctx->np;
    s.right = (ctx->rank + 1) % ctx->np;
    fb_buf_alloc_for(&s.sbuf, (size_t)fb_largest_size(ctx), &ctx->opt);
    fb_buf_alloc_for(&s.rbuf, (size_t)fb_largest_size(ctx), &ctx->opt);
    int machine_ranks, machine_cpus;
    const double per_us = steps_per_us(), share = core_share(ctx, &machine_ranks, &machine_cpus);

    for (int k = 0; k < ctx->nsizes; k++) {
        s.size = (int)ctx->sizes[k];
        ctx->check.size = ctx->sizes[k];
        fb_buf_use(&s.sbuf, (size_t)s.size);
        fb_buf_use(&s.rbuf, (size_t)s.size);
        fb_plan bare, busy;
        double *bare_samples, *busy_samples;
        s.work = 0;
        const double t_bare = time_iteration(&s, &bare, &bare_samples);
        const double c_us = 2.0 * t_bare * 1e6;
        s.work = (long long)(c_us * per_us);
        s.share = share;
        s.c_us = c_us;
        const double t_busy = time_iteration(&s, &busy, &busy_samples);
        s.work = 0;

        fb_point pts[2];
        if (ctx->rank == 0) {
            for (long long i = 0; i < bare.samples; i++)
                bare_samples[i] *= 1e6 / 2.0;
            for (long long i = 0; i < busy.samples; i++) {
                double m = (busy_samples[i] * 1e6 / share - c_us) / 2.0;
                busy_samples[i] = m > 0 ? m : 0.0;
            }
            fb_point_init(&pts[0], "latency", "us", s.size);
            fb_stats_compute(&pts[0].st, bare_samples, bare.samples);
            pts[0].value = t_bare * 1e6 / 2.0;
            pts[0].iterations = bare.iterations;
            fb_point_plan(&pts[0], &bare);
            fb_point_init(&pts[1], "cpu_per_message", "us", s.size);
            fb_stats_compute(&pts[1].st, busy_samples, busy.samples);
            double m = (t_busy * 1e6 / share - c_us) / 2.0;
            pts[1].value = m > 0 ? m : 0.0;
            pts[1].iterations = busy.iterations;
            fb_point_plan(&pts[1], &busy);
            for (int p = 0; p < 2; p++)
                params(&pts[p], share, machine_ranks, machine_cpus, p ? c_us : 0.0);
        }
        fb_emit(ctx, pts, 2);
        free(bare_samples);
        free(busy_samples);
    }
    fb_buf_free(&s.sbuf);
    fb_buf_free(&s.rbuf);
}
