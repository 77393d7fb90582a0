/* main.c - fabricbench-mpi: parse the command line, check the rank count, describe
 * the run, and dispatch to the benchmark from the table below.
 *
 * Every rank parses the same argv, so a bad option is seen by all of them at once:
 * rank 0 prints one usage message and every rank finalizes and exits with 2. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fabricbench.h"
#include "output.h"
#include "timing.h"

#define MiB (1024LL * 1024LL)
#define FIXED (-1LL)

#define SIZED (FB_OPT_SIZES | FB_OPT_TIMING)

/* Sizes: the default --sizes range (FIXED: the benchmark takes no --sizes); floor: the
 * smallest size it can measure; points: records per size (or in all, for FIXED). Takes:
 * the benchmark-specific options it accepts (options.h); giving another is a usage error.
 * info takes the timing options and ignores them, because `fabricbench run` passes
 * --iterations and --time-budget to every step. */
static const fb_bench benchmarks[] = {
    {.name = "latency", .family = "pt2pt", .run = fb_run_latency, .min_ranks = 2,
     .summary = "blocking ping-pong between ranks 0 and 1, one-way = round trip / 2",
     .size_min = 0, .size_max = 4 * MiB, .points_per_size = 1, .takes = SIZED},
    {.name = "bw", .family = "pt2pt", .run = fb_run_bw, .min_ranks = 2,
     .summary = "rank 0 to 1: a window of non-blocking sends, acknowledged by the receiver",
     .size_min = 1, .size_max = 4 * MiB, .points_per_size = 1, .takes = SIZED | FB_OPT_WINDOW},
    {.name = "bibw", .family = "pt2pt", .run = fb_run_bibw, .min_ranks = 2,
     .summary = "ranks 0 and 1: windows of non-blocking sends in both directions at once",
     .size_min = 1, .size_max = 4 * MiB, .points_per_size = 1, .takes = SIZED | FB_OPT_WINDOW},
    {.name = "mbw_mr", .family = "pt2pt", .run = fb_run_mbw_mr, .min_ranks = 2, .even_ranks = 1,
     .summary = "multi-pair bandwidth and message rate, rank i sends to rank i + np/2",
     .size_min = 1, .size_max = 4 * MiB, .points_per_size = 2, .pairing = FB_PAIRS_HALVES,
     .takes = SIZED | FB_OPT_WINDOW | FB_OPT_PAIRS},
    {.name = "multi_lat", .family = "pt2pt", .run = fb_run_multi_lat, .min_ranks = 2, .even_ranks = 1,
     .summary = "ping-pong latency of all pairs (i, i + np/2) at once",
     .size_min = 0, .size_max = 4 * MiB, .points_per_size = 1, .pairing = FB_PAIRS_HALVES,
     .takes = SIZED | FB_OPT_PAIRS},
    {.name = "barrier", .family = "collective", .run = fb_run_barrier, .min_ranks = 1,
     .summary = "MPI_Barrier latency",
     .size_min = FIXED, .size_max = FIXED, .points_per_size = 1, .takes = FB_OPT_TIMING},
    {.name = "bcast", .family = "collective", .run = fb_run_bcast, .min_ranks = 1,
     .summary = "MPI_Bcast latency (size = bytes broadcast)",
     .size_min = 1, .size_max = 1 * MiB, .points_per_size = 1, .takes = SIZED | FB_OPT_ROOT},
    {.name = "reduce", .family = "collective", .run = fb_run_reduce, .min_ranks = 1,
     .summary = "MPI_Reduce latency, MPI_FLOAT sum (size = bytes per rank)",
     .size_min = 4, .size_max = 1 * MiB, .size_floor = 4, .points_per_size = 1, .takes = SIZED | FB_OPT_ROOT},
    {.name = "allreduce", .family = "collective", .run = fb_run_allreduce, .min_ranks = 1,
     .summary = "MPI_Allreduce latency, MPI_FLOAT sum (size = bytes per rank)",
     .size_min = 4, .size_max = 1 * MiB, .size_floor = 4, .points_per_size = 1, .takes = SIZED},
    {.name = "allgather", .family = "collective", .run = fb_run_allgather, .min_ranks = 1,
     .summary = "MPI_Allgather latency (size = bytes each rank contributes)",
     .size_min = 1, .size_max = 1 * MiB, .points_per_size = 1, .takes = SIZED},
    {.name = "alltoall", .family = "collective", .run = fb_run_alltoall, .min_ranks = 1,
     .summary = "MPI_Alltoall latency (size = bytes per destination block)",
     .size_min = 1, .size_max = 1 * MiB, .points_per_size = 1, .takes = SIZED},
    {.name = "reduce_scatter", .family = "collective", .run = fb_run_reduce_scatter, .min_ranks = 1,
     .summary = "MPI_Reduce_scatter_block latency, MPI_FLOAT sum (size = bytes each rank receives)",
     .size_min = 4, .size_max = 1 * MiB, .size_floor = 4, .points_per_size = 1, .takes = SIZED},
    {.name = "pingpong_pairs", .family = "hpcc", .run = fb_run_pingpong_pairs, .min_ranks = 2,
     .summary = "HPCC ping-pong over all (or sampled) ordered pairs: 8 B latency, 2,000,000 B bandwidth",
     .size_min = FIXED, .size_max = FIXED, .points_per_size = 2, .pairing = FB_PAIRS_SAMPLED,
     .takes = FB_OPT_TIMING | FB_OPT_PAIRS | FB_OPT_SEED},
    {.name = "ring", .family = "hpcc", .run = fb_run_ring, .min_ranks = 2,
     .summary = "HPCC naturally and randomly ordered rings: 8 B latency, 2,000,000 B bandwidth per process",
     .size_min = FIXED, .size_max = FIXED, .points_per_size = 4,
     .takes = FB_OPT_TIMING | FB_OPT_RANDOM_RINGS | FB_OPT_SEED},
    {.name = "allpairs", .family = "health", .run = fb_run_allpairs, .min_ranks = 2,
     .summary = "link check, one rank per node: every pair's bandwidth at --size and 8 B latency, then retests",
     .size_min = FIXED, .size_max = FIXED, .points_per_size = 0, .takes = FB_OPT_ALLPAIRS | FB_OPT_WINDOW},
    {.name = "info", .family = "info", .run = fb_run_info, .min_ranks = 1,
     .summary = "one rank_info record per rank: host, pid, MPI library, timer",
     .size_min = FIXED, .size_max = FIXED, .points_per_size = 0, .takes = FB_OPT_TIMING},
};
#define NBENCH ((int)(sizeof benchmarks / sizeof benchmarks[0]))

/* Fixed sizes of the benchmarks that do not take --sizes. */
static const long long barrier_sizes[] = {0};
static const long long hpcc_sizes[] = {8, 2000000};

void fb_fatal(const char *fmt, ...)
{
    va_list ap;
    char msg[512];
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "fabricbench-mpi: error: %s\n", msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, FB_EXIT_ERROR);
    exit(FB_EXIT_ERROR);
}

void *fb_malloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        fb_fatal("out of memory (%zu bytes)", bytes);
    return p;
}

void *fb_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        fb_fatal("out of memory (%zu x %zu bytes)", n, size);
    return p;
}

/* Leave with status code after MPI_Finalize; rank 0 prints the message (if any). */
static void finish(const fb_ctx *ctx, int code, const char *message, int with_usage)
{
    if (ctx->rank == 0 && message) {
        fprintf(stderr, "fabricbench-mpi: %s\n", message);
        if (with_usage)
            fb_print_usage();
        fflush(stderr);
    }
    MPI_Finalize();
    exit(code);
}

static void print_help(void)
{
    printf("fabricbench-mpi %s - MPI interconnect measurements, JSON Lines on stdout\n\n", FB_VERSION);
    printf("usage: mpirun -np N fabricbench-mpi BENCHMARK [options]\n\nBenchmarks:\n");
    for (int i = 0; i < NBENCH; i++)
        printf("  %-15s %s\n", benchmarks[i].name, benchmarks[i].summary);
    printf("\n");
    fb_print_options_help();
}

static const fb_bench *find_bench(const char *name)
{
    for (int i = 0; i < NBENCH; i++)
        if (strcmp(benchmarks[i].name, name) == 0)
            return &benchmarks[i];
    return NULL;
}

/* Why b refuses the option flag: a hint where the benchmark has its own word for it,
 * otherwise the benchmarks that do take it. */
static void refusal(const fb_bench *b, unsigned flag, char *err, size_t len)
{
    const char *name = fb_option_name(flag), *why = NULL;
    if (flag == FB_OPT_SIZES)
        why = b->takes & FB_OPT_SIZE ? "it measures bandwidth at one size: --size BYTES, default 1M"
              : strcmp(b->family, "hpcc") == 0 ? "HPCC's sizes are fixed: 8 bytes for latency, 2,000,000 bytes "
                                                 "for bandwidth"
                                               : "it sends no payload";
    else if ((b->takes & FB_OPT_REPETITIONS) && (flag & FB_OPT_TIMING))
        why = "every pair is measured once in each of --repetitions N sweeps, default 3; no time budget";
    else if ((b->takes & FB_OPT_RETEST) && flag == FB_OPT_PAIRS)
        why = "every pair is measured; --retest K says how many of the slowest are measured again alone";
    if (why) {
        snprintf(err, len, "%s does not take %s (%s)", b->name, name, why);
        return;
    }
    char users[256] = "";
    for (int i = 0; i < NBENCH; i++) {
        if (!(benchmarks[i].takes & flag))
            continue;
        size_t used = strlen(users);
        snprintf(users + used, sizeof users - used, "%s%s", used ? ", " : "", benchmarks[i].name);
    }
    snprintf(err, len, "%s does not take %s (it applies to %s)", b->name, name, users);
}

/* Rank-count and option checks that need np; the same verdict on every rank. */
static int check_layout(const fb_ctx *ctx, char *err, size_t len, int *usage)
{
    const fb_bench *b = ctx->bench;
    const fb_options *o = &ctx->opt;
    *usage = 0;
    if (ctx->np < b->min_ranks) {
        snprintf(err, len, "%s needs at least %d ranks (got %d); run it with mpirun -np %d or more", b->name,
                 b->min_ranks, ctx->np, b->min_ranks);
        return -1;
    }
    if (b->even_ranks && ctx->np % 2) {
        snprintf(err, len, "%s needs an even number of ranks (got %d): rank i is paired with rank i + np/2",
                 b->name, ctx->np);
        return -1;
    }
    *usage = 1;
    unsigned refused = o->given & ~b->takes;
    if (refused) {
        refusal(b, refused & -refused, err, len); /* the first one, in FB_OPT_* order */
        return -1;
    }
    if (o->root >= ctx->np) {
        snprintf(err, len, "--root %d is not a rank (there are %d ranks)", o->root, ctx->np);
        return -1;
    }
    if (o->inject_corruption >= ctx->np) {
        snprintf(err, len, "--inject-corruption %d is not a rank (there are %d ranks)", o->inject_corruption,
                 ctx->np);
        return -1;
    }
    if (o->pairs && b->pairing == FB_PAIRS_HALVES && o->pairs > ctx->np / 2) {
        snprintf(err, len, "--pairs %d: %s can form at most np/2 = %d pairs", o->pairs, b->name, ctx->np / 2);
        return -1;
    }
    return 0;
}

static int setup_sizes(fb_ctx *ctx)
{
    const fb_bench *b = ctx->bench;
    if (b->takes & FB_OPT_SIZE) {
        ctx->sizes = fb_malloc(sizeof *ctx->sizes);
        ctx->sizes[0] = ctx->opt.size;
        ctx->nsizes = 1;
        ctx->points_planned = b->points_per_size;
        return 0;
    }
    if (b->size_max == FIXED) {
        const long long *fixed = NULL;
        int n = 0;
        if (b->run == fb_run_barrier) {
            fixed = barrier_sizes;
            n = 1;
        } else if (strcmp(b->family, "hpcc") == 0) {
            fixed = hpcc_sizes;
            n = 2;
        }
        ctx->sizes = fb_malloc((size_t)(n ? n : 1) * sizeof *ctx->sizes);
        memcpy(ctx->sizes, fixed ? fixed : barrier_sizes, (size_t)n * sizeof *ctx->sizes);
        ctx->nsizes = n;
        ctx->points_planned = b->points_per_size;
        return 0;
    }
    long long lo = ctx->opt.sizes_given ? ctx->opt.size_min : b->size_min;
    long long hi = ctx->opt.sizes_given ? ctx->opt.size_max : b->size_max;
    long long *all;
    int n = fb_sizes_expand(lo, hi, &all), kept = 0, skipped = 0;
    for (int i = 0; i < n; i++) {
        if (all[i] < b->size_floor)
            skipped++;
        else
            all[kept++] = all[i];
    }
    if (skipped && kept && ctx->rank == 0)
        fprintf(stderr, "fabricbench-mpi: note: %s skips sizes below %lld bytes (one float)\n", b->name,
                b->size_floor);
    ctx->sizes = all;
    ctx->nsizes = kept;
    ctx->points_planned = (long long)kept * b->points_per_size;
    return kept > 0 ? 0 : -1;
}

static void describe_environment(fb_ctx *ctx)
{
    int len = 0, major = 0, minor = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_library_version(lib, &len);
    snprintf(ctx->mpi_library_full, sizeof ctx->mpi_library_full, "%s", lib);
    lib[strcspn(lib, "\r\n")] = '\0';
    snprintf(ctx->mpi_library, sizeof ctx->mpi_library, "%s", lib);
    MPI_Get_version(&major, &minor);
    snprintf(ctx->mpi_version, sizeof ctx->mpi_version, "%d.%d", major, minor);

    ctx->wtick_us = MPI_Wtick() * 1e6;
    fb_timer_probe(&ctx->timer_resolution_us, &ctx->timer_overhead_us);

    if (gethostname(ctx->host, sizeof ctx->host) != 0)
        snprintf(ctx->host, sizeof ctx->host, "unknown");
    ctx->host[FB_HOST_MAX - 1] = '\0';
    if (ctx->rank == 0)
        ctx->hosts = fb_calloc((size_t)ctx->np, FB_HOST_MAX);
    MPI_Gather(ctx->host, FB_HOST_MAX, MPI_CHAR, ctx->hosts, FB_HOST_MAX, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (ctx->rank == 0) {
        ctx->nhosts = 0;
        for (int r = 0; r < ctx->np; r++) {
            int seen = 0;
            for (int q = 0; q < r && !seen; q++)
                seen = strcmp(ctx->hosts + (size_t)q * FB_HOST_MAX, ctx->hosts + (size_t)r * FB_HOST_MAX) == 0;
            ctx->nhosts += !seen;
        }
    }
}

int main(int argc, char **argv)
{
    static fb_ctx ctx;
    char err[512];
    int usage;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ctx.np);
    ctx.t_start = MPI_Wtime();

    if (fb_options_parse(&ctx.opt, argc, argv, err, sizeof err))
        finish(&ctx, FB_EXIT_USAGE, err, 1);
    if (ctx.opt.help || ctx.opt.version) {
        if (ctx.rank == 0) {
            if (ctx.opt.help)
                print_help();
            else
                printf("fabricbench-mpi %s\n", FB_VERSION);
            fflush(stdout);
        }
        finish(&ctx, FB_EXIT_OK, NULL, 0);
    }
    ctx.bench = find_bench(ctx.opt.benchmark);
    if (!ctx.bench) {
        snprintf(err, sizeof err, "unknown benchmark '%s'", ctx.opt.benchmark);
        finish(&ctx, FB_EXIT_USAGE, err, 1);
    }
    if (check_layout(&ctx, err, sizeof err, &usage))
        finish(&ctx, FB_EXIT_USAGE, err, usage);

    if (setup_sizes(&ctx)) {
        snprintf(err, sizeof err, "%s: no message size left to measure (its smallest size is %lld bytes)",
                 ctx.bench->name, ctx.bench->size_floor);
        finish(&ctx, FB_EXIT_USAGE, err, 1);
    }
    describe_environment(&ctx);
    if (ctx.rank == 0)
        fb_output_run(&ctx);

    ctx.bench->run(&ctx);

    if (ctx.rank == 0)
        fb_output_end(&ctx);
    free(ctx.sizes);
    free(ctx.hosts);
    MPI_Finalize();
    return FB_EXIT_OK;
}
