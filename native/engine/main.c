/* main.c - fabricbench-mpi: parse the command line, check it against the benchmark
 * table (benchmarks.c), describe the run, and dispatch to the benchmark.
 *
 * Every rank parses the same argv, so a bad option is seen by all of them at once:
 * rank 0 prints one usage message and every rank finalizes and exits with 2.
 * `fabricbench-mpi list` prints the benchmark table and never starts MPI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fabricbench.h"
#include "output.h"
#include "probe.h"
#include "timing.h"

/* Leave with status code after fb_finalize; rank 0 prints the message (if any). */
static void finish(const fb_ctx *ctx, int code, const char *message, int with_usage)
{
    if (ctx->rank == 0 && message) {
        fprintf(stderr, "fabricbench-mpi: %s\n", message);
        if (with_usage)
            fb_print_usage();
        fflush(stderr);
    }
    fb_finalize();
    exit(code);
}

static void print_help(void)
{
    printf("fabricbench-mpi %s - MPI interconnect measurements, JSON Lines on stdout\n\n", FB_VERSION);
    printf("usage: mpirun -np N fabricbench-mpi BENCHMARK [options]\n"
           "       fabricbench-mpi list [--format jsonl|table]\n"
           "                              (the benchmark table; no MPI)\n\nBenchmarks:\n");
    fb_bench_print_help();
    printf("\n");
    fb_print_options_help();
}

/* `fabricbench-mpi list [--format F]`: runs before (and without) MPI_Init. parse_err is
 * the parser's complaint about argv, if it had one. */
static int list_command(int argc, char **argv, const fb_options *opt, const char *parse_err)
{
    char err[512];
    for (int i = 1; i < argc && !parse_err; i++) {
        if (strcmp(argv[i], "--format") == 0)
            i++;
        else if (strcmp(argv[i], "list") != 0 && strncmp(argv[i], "--format=", 9) != 0) {
            snprintf(err, sizeof err, "list takes no option but --format (got '%s')", argv[i]);
            parse_err = err;
        }
    }
    if (!parse_err)
        return fb_bench_list(opt->format);
    fprintf(stderr, "fabricbench-mpi: %s\n", parse_err);
    fb_print_usage();
    return FB_EXIT_USAGE;
}

/* Copies src into dst[size], cut if it must be: MPICH's library version string is up to 8 KiB. */
static void copy_cut(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src);
    if (n >= size)
        n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void describe_environment(fb_ctx *ctx)
{
    int len = 0, major = 0, minor = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_library_version(lib, &len);
    copy_cut(ctx->mpi_library_full, sizeof ctx->mpi_library_full, lib);
    lib[strcspn(lib, "\r\n")] = '\0';
    copy_cut(ctx->mpi_library, sizeof ctx->mpi_library, lib);
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
                seen = strcmp(fb_host_of(ctx, q), fb_host_of(ctx, r)) == 0;
            ctx->nhosts += !seen;
        }
    }
}

int main(int argc, char **argv)
{
    static fb_ctx ctx;
    char err[512];
    int usage;

    int bad = fb_options_parse(&ctx.opt, argc, argv, err, sizeof err);
    if (ctx.opt.benchmark && strcmp(ctx.opt.benchmark, "list") == 0)
        return list_command(argc, argv, &ctx.opt, bad ? err : NULL);

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
    ctx.bench = fb_bench_find(ctx.opt.benchmark);
    if (!ctx.bench) {
        snprintf(err, sizeof err, "unknown benchmark '%s'", ctx.opt.benchmark);
        finish(&ctx, FB_EXIT_USAGE, err, 1);
    }
    if (fb_bench_check(&ctx, err, sizeof err, &usage))
        finish(&ctx, FB_EXIT_USAGE, err, usage);

    if (fb_bench_sizes(&ctx)) {
        snprintf(err, sizeof err, "%s: no message size left to measure (its smallest size is %lld bytes)",
                 ctx.bench->name, ctx.bench->size_floor);
        finish(&ctx, FB_EXIT_USAGE, err, 1);
    }
    describe_environment(&ctx);
    static fb_probe probe;
    if (ctx.opt.format != FB_FORMAT_TABLE) {
        fb_probe_host(&ctx, &probe);
        ctx.probe = &probe;
    }
    if (ctx.rank == 0)
        fb_output_run(&ctx);

    ctx.bench->run(&ctx);

    if (ctx.rank == 0)
        fb_output_end(&ctx);
    free(ctx.sizes);
    free(ctx.hosts);
    fb_probe_free(&probe);
    fb_finalize();
    return FB_EXIT_OK;
}
