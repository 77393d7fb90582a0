/* benchmarks.c - the benchmark table, the one place that says what each benchmark is:
 * its family, metrics, default sizes, rank needs and the options it takes. main.c runs
 * from it, --help prints it, and `fabricbench-mpi list` exports it (JSON Lines, one line
 * per benchmark) for the Python side, which builds its own table from that output. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives.h"
#include "fabricbench.h"
#include "json.h"
#include "util.h"

#define MiB (1024LL * 1024LL)
#define NO_SIZES (-1LL)

#define SIZED (FB_OPT_SIZES | FB_OPT_TIMING)
#define LATENCY {"latency"}
#define HPCC_SIZES .fixed_sizes = {8, 2000000}, .nfixed = 2
#define RMA (FB_OPT_WIN_SYNC | FB_OPT_WIN_ALLOC)
#define NBC_METRICS {"latency", "pure_comm", "overlap"}

/* Sizes: the default --sizes range (NO_SIZES: the benchmark takes no --sizes, and measures
 * its fixed_sizes, or --size); floor: the smallest size it can measure; points: records per
 * size. Takes: the benchmark-specific options it accepts (options.h); giving another is a
 * usage error. info takes the timing options and ignores them, because `fabricbench run`
 * passes --iterations and --time-budget to every step. */
static const fb_bench benchmarks[] = {
    {.name = "latency", .family = "pt2pt", .run = fb_run_latency, .min_ranks = 2, .metrics = LATENCY,
     .title = "Point-to-point latency (ping-pong, one-way)",
     .summary = "blocking ping-pong between ranks 0 and 1, one-way = round trip / 2",
     .size_min = 0, .size_max = 4 * MiB, .points_per_size = 1, .takes = SIZED},
    {.name = "bw", .family = "pt2pt", .run = fb_run_bw, .min_ranks = 2, .even_ranks = 1, .metrics = {"bandwidth"},
     .title = "Unidirectional bandwidth",
     .summary = "rank 0 to 1: a window of non-blocking sends, acknowledged by the receiver",
     .size_min = 1, .size_max = 4 * MiB, .points_per_size = 1, .takes = SIZED | FB_OPT_WINDOW | FB_OPT_WINDOW_BYTES},
    {.name = "bibw", .family = "pt2pt", .run = fb_run_bibw, .min_ranks = 2, .even_ranks = 1,
     .metrics = {"bibandwidth"},
     .title = "Bidirectional bandwidth",
     .summary = "ranks 0 and 1: windows of non-blocking sends in both directions at once",
     .size_min = 1, .size_max = 4 * MiB, .points_per_size = 1, .takes = SIZED | FB_OPT_WINDOW | FB_OPT_WINDOW_BYTES},
    {.name = "mbw_mr", .family = "pt2pt", .run = fb_run_mbw_mr, .min_ranks = 2, .even_ranks = 1,
     .metrics = {"bandwidth", "message_rate"},
     .title = "Multi-pair bandwidth and message rate",
     .summary = "multi-pair bandwidth and message rate, rank i sends to rank i + np/2",
     .size_min = 1, .size_max = 4 * MiB, .points_per_size = 2, .pairing = FB_PAIRS_HALVES,
     .takes = SIZED | FB_OPT_WINDOW | FB_OPT_WINDOW_BYTES | FB_OPT_PAIRS},
    {.name = "multi_lat", .family = "pt2pt", .run = fb_run_multi_lat, .min_ranks = 2, .even_ranks = 1,
     .title = "Multi-pair latency",
     .metrics = LATENCY, .summary = "ping-pong latency of all pairs (i, i + np/2) at once",
     .size_min = 0, .size_max = 4 * MiB, .points_per_size = 1, .pairing = FB_PAIRS_HALVES,
     .takes = SIZED | FB_OPT_PAIRS},
    {.name = "loggp", .family = "pt2pt", .run = fb_run_loggp, .min_ranks = 2,
     .metrics = {"latency", "overhead_send", "overhead_recv", "gap"},
     .summary = "LogGP between ranks 0 and 1 (Netgauge's method): latency, send and receive overhead, gap per size",
     .size_min = 1, .size_max = 64 * 1024, .points_per_size = 4, .takes = SIZED | FB_OPT_WINDOW},
    {.name = "exchange", .family = "pt2pt", .run = fb_run_exchange, .min_ranks = 2,
     .metrics = {"latency", "cpu_per_message"},
     .summary = "every rank swaps halos with its ring neighbours at once: time per message, and the core "
                "time a message takes from a rank that also computes",
     .size_min = 1, .size_max = 64 * 1024, .points_per_size = 2, .takes = SIZED},
    {.name = "barrier", .family = "collective", .run = fb_run_collective, .variant = BARRIER,
     .min_ranks = 1, .metrics = LATENCY,
     .summary = "MPI_Barrier latency",
     .size_meaning = "no payload",
     .size_min = NO_SIZES, .size_max = NO_SIZES, .fixed_sizes = {0},
     .nfixed = 1, .points_per_size = 1, .takes = FB_OPT_TIMING},
    {.name = "bcast", .family = "collective", .run = fb_run_collective, .variant = BCAST,
     .min_ranks = 1, .metrics = LATENCY,
     .summary = "MPI_Bcast latency (size = bytes broadcast)",
     .size_meaning = "bytes broadcast from the root",
     .size_min = 1, .size_max = 1 * MiB, .points_per_size = 1, .takes = SIZED | FB_OPT_ROOT},
    {.name = "reduce", .family = "collective", .run = fb_run_collective, .variant = REDUCE,
     .min_ranks = 1, .metrics = LATENCY,
     .summary = "MPI_Reduce latency, MPI_FLOAT sum (size = bytes per rank)",
     .size_meaning = "bytes of MPI_FLOAT per rank, reduced to the root",
     .size_min = 4, .size_max = 1 * MiB, .size_floor = 4, .points_per_size = 1, .takes = SIZED | FB_OPT_ROOT},
    {.name = "allreduce", .family = "collective", .run = fb_run_collective, .variant = ALLREDUCE,
     .min_ranks = 1, .metrics = LATENCY,
     .summary = "MPI_Allreduce latency, MPI_FLOAT sum (size = bytes per rank)",
     .size_meaning = "bytes of MPI_FLOAT per rank",
     .size_min = 4, .size_max = 1 * MiB, .size_floor = 4, .points_per_size = 1, .takes = SIZED},
    {.name = "allgather", .family = "collective", .run = fb_run_collective, .variant = ALLGATHER,
     .min_ranks = 1, .metrics = LATENCY,
     .summary = "MPI_Allgather latency (size = bytes each rank contributes)",
     .size_meaning = "bytes contributed by each rank (receive buffer: ranks x size)",
     .size_min = 1, .size_max = 1 * MiB, .points_per_size = 1, .takes = SIZED},
    {.name = "alltoall", .family = "collective", .run = fb_run_collective, .variant = ALLTOALL,
     .min_ranks = 1, .metrics = LATENCY,
     .summary = "MPI_Alltoall latency (size = bytes per destination block)",
     .size_meaning = "bytes per destination block (send and receive buffers: ranks x size)",
     .size_min = 1, .size_max = 1 * MiB, .points_per_size = 1, .takes = SIZED},
    {.name = "reduce_scatter", .family = "collective", .run = fb_run_collective, .variant = REDUCE_SCATTER,
     .min_ranks = 1,
     .metrics = LATENCY,
     .summary = "MPI_Reduce_scatter_block latency, MPI_FLOAT sum (size = bytes each rank receives)",
     .size_meaning = "bytes of MPI_FLOAT each rank receives (MPI_Reduce_scatter_block; send: ranks x size)",
     .size_min = 4, .size_max = 1 * MiB, .size_floor = 4, .points_per_size = 1, .takes = SIZED},
    {.name = "gather", .family = "collective", .run = fb_run_gather_scatter, .variant = GATHER,
     .min_ranks = 1, .metrics = LATENCY,
     .summary = "MPI_Gather latency (size = bytes each rank sends to the root)",
     .size_meaning = "bytes each rank sends to the root (root receives ranks x size)",
     .size_min = 1, .size_max = 1 * MiB, .points_per_size = 1, .takes = SIZED | FB_OPT_ROOT},
    {.name = "scatter", .family = "collective", .run = fb_run_gather_scatter, .variant = SCATTER,
     .min_ranks = 1, .metrics = LATENCY,
     .summary = "MPI_Scatter latency (size = bytes each rank receives)",
     .size_meaning = "bytes each rank receives from the root (root sends ranks x size)",
     .size_min = 1, .size_max = 1 * MiB, .points_per_size = 1, .takes = SIZED | FB_OPT_ROOT},
    {.name = "gatherv", .family = "collective", .run = fb_run_gather_scatter, .variant = GATHERV,
     .min_ranks = 1, .metrics = LATENCY,
     .summary = "MPI_Gatherv latency, equal counts (size = bytes per rank)",
     .size_meaning = "bytes each rank sends to the root, equal counts (root receives ranks x size)",
     .size_min = 1, .size_max = 1 * MiB, .points_per_size = 1, .takes = SIZED | FB_OPT_ROOT},
    {.name = "scatterv", .family = "collective", .run = fb_run_gather_scatter, .variant = SCATTERV,
     .min_ranks = 1, .metrics = LATENCY,
     .summary = "MPI_Scatterv latency, equal counts (size = bytes per rank)",
     .size_meaning = "bytes each rank receives from the root, equal counts (root sends ranks x size)",
     .size_min = 1, .size_max = 1 * MiB, .points_per_size = 1, .takes = SIZED | FB_OPT_ROOT},
    {.name = "allgatherv", .family = "collective", .run = fb_run_gather_scatter, .variant = ALLGATHERV,
     .min_ranks = 1, .metrics = LATENCY,
     .summary = "MPI_Allgatherv latency, equal counts (size = bytes per rank)",
     .size_meaning = "bytes contributed by each rank, equal counts (receive buffer: ranks x size)",
     .size_min = 1, .size_max = 1 * MiB, .points_per_size = 1, .takes = SIZED},
    {.name = "alltoallv", .family = "collective", .run = fb_run_gather_scatter, .variant = ALLTOALLV,
     .min_ranks = 1, .metrics = LATENCY,
     .summary = "MPI_Alltoallv latency, equal counts (size = bytes per block)",
     .size_meaning = "bytes per destination block, equal counts (send and receive buffers: ranks x size)",
     .size_min = 1, .size_max = 1 * MiB, .points_per_size = 1, .takes = SIZED},
    {.name = "iallreduce", .family = "nbc", .run = fb_run_nbc, .variant = IALLREDUCE,
     .min_ranks = 1, .metrics = NBC_METRICS,
     .summary = "MPI_Iallreduce (MPI_FLOAT sum): overall, pure comm., overlap %",
     .size_meaning = "bytes of MPI_FLOAT per rank",
     .size_min = 4, .size_max = 1 * MiB, .size_floor = 4, .points_per_size = 3, .takes = SIZED},
    {.name = "ibcast", .family = "nbc", .run = fb_run_nbc, .variant = IBCAST,
     .min_ranks = 1, .metrics = NBC_METRICS,
     .summary = "MPI_Ibcast from rank 0: overall, pure comm., overlap %",
     .size_meaning = "bytes broadcast from rank 0",
     .size_min = 1, .size_max = 1 * MiB, .points_per_size = 3, .takes = SIZED},
    {.name = "ialltoall", .family = "nbc", .run = fb_run_nbc, .variant = IALLTOALL,
     .min_ranks = 1, .metrics = NBC_METRICS,
     .summary = "MPI_Ialltoall: overall, pure communication, overlap %",
     .size_meaning = "bytes per destination block (send and receive buffers: ranks x size)",
     .size_min = 1, .size_max = 1 * MiB, .points_per_size = 3, .takes = SIZED},
    {.name = "iallgather", .family = "nbc", .run = fb_run_nbc, .variant = IALLGATHER,
     .min_ranks = 1, .metrics = NBC_METRICS,
     .summary = "MPI_Iallgather: overall, pure communication, overlap %",
     .size_meaning = "bytes contributed by each rank (receive buffer: ranks x size)",
     .size_min = 1, .size_max = 1 * MiB, .points_per_size = 3, .takes = SIZED},
    {.name = "ibarrier", .family = "nbc", .run = fb_run_nbc, .variant = IBARRIER,
     .min_ranks = 1, .metrics = NBC_METRICS,
     .summary = "MPI_Ibarrier: overall, pure communication, overlap %",
     .size_meaning = "no payload",
     .size_min = NO_SIZES, .size_max = NO_SIZES, .fixed_sizes = {0}, .nfixed = 1, .points_per_size = 3,
     .takes = FB_OPT_TIMING},
    {.name = "put_latency", .family = "onesided", .run = fb_run_put_latency, .min_ranks = 2, .metrics = LATENCY,
     .title = "MPI_Put latency",
     .summary = "MPI_Put, rank 0 to rank 1's window, then --win-sync",
     .size_min = 1, .size_max = 4 * MiB, .points_per_size = 1, .takes = SIZED | RMA},
    {.name = "get_latency", .family = "onesided", .run = fb_run_get_latency, .min_ranks = 2, .metrics = LATENCY,
     .title = "MPI_Get latency",
     .summary = "MPI_Get by rank 0 from rank 1's window, then --win-sync",
     .size_min = 1, .size_max = 4 * MiB, .points_per_size = 1, .takes = SIZED | RMA},
    {.name = "put_bw", .family = "onesided", .run = fb_run_put_bw, .min_ranks = 2, .metrics = {"bandwidth"},
     .title = "MPI_Put bandwidth",
     .summary = "a window of MPI_Put to rank 1, then --win-sync: bandwidth",
     .size_min = 1, .size_max = 4 * MiB, .points_per_size = 1, .takes = SIZED | RMA | FB_OPT_WINDOW},
    {.name = "get_bw", .family = "onesided", .run = fb_run_get_bw, .min_ranks = 2, .metrics = {"bandwidth"},
     .title = "MPI_Get bandwidth",
     .summary = "a window of MPI_Get from rank 1, then --win-sync: bandwidth",
     .size_min = 1, .size_max = 4 * MiB, .points_per_size = 1, .takes = SIZED | RMA | FB_OPT_WINDOW},
    {.name = "put_bibw", .family = "onesided", .run = fb_run_put_bibw, .min_ranks = 2, .metrics = {"bibandwidth"},
     .title = "MPI_Put bi-directional bandwidth",
     .summary = "ranks 0 and 1 put a window to each other, pscw or fence",
     .size_min = 1, .size_max = 4 * MiB, .points_per_size = 1, .takes = SIZED | RMA | FB_OPT_WINDOW},
    {.name = "acc_latency", .family = "onesided", .run = fb_run_acc_latency, .min_ranks = 2, .metrics = LATENCY,
     .title = "MPI_Accumulate latency",
     .summary = "MPI_Accumulate (MPI_CHAR sum) to rank 1, then --win-sync",
     .size_min = 1, .size_max = 4 * MiB, .points_per_size = 1, .takes = SIZED | RMA},
    {.name = "fop_latency", .family = "onesided", .run = fb_run_fop_latency, .min_ranks = 2, .metrics = LATENCY,
     .title = "MPI_Fetch_and_op latency",
     .summary = "MPI_Fetch_and_op, one MPI_LONG_LONG on rank 1's window",
     .size_min = NO_SIZES, .size_max = NO_SIZES, .fixed_sizes = {8}, .nfixed = 1, .points_per_size = 1,
     .takes = FB_OPT_TIMING | RMA},
    {.name = "cas_latency", .family = "onesided", .run = fb_run_cas_latency, .min_ranks = 2, .metrics = LATENCY,
     .title = "MPI_Compare_and_swap latency",
     .summary = "MPI_Compare_and_swap, one MPI_LONG_LONG on rank 1's window",
     .size_min = NO_SIZES, .size_max = NO_SIZES, .fixed_sizes = {8}, .nfixed = 1, .points_per_size = 1,
     .takes = FB_OPT_TIMING | RMA},
    {.name = "pingpong_pairs", .family = "hpcc", .run = fb_run_pingpong_pairs, .min_ranks = 2,
     .metrics = {"latency", "bandwidth"},
     .title = "HPCC ping-pong over pairs",
     .summary = "HPCC ping-pong over all (or sampled) ordered pairs: 8 B latency, 2,000,000 B bandwidth",
     .size_min = NO_SIZES, .size_max = NO_SIZES, HPCC_SIZES, .points_per_size = 1, .pairing = FB_PAIRS_SAMPLED,
     .takes = FB_OPT_TIMING | FB_OPT_PAIRS | FB_OPT_SEED},
    {.name = "ring", .family = "hpcc", .run = fb_run_ring, .min_ranks = 2, .metrics = {"latency", "bandwidth"},
     .title = "HPCC ring",
     .summary = "HPCC naturally and randomly ordered rings: 8 B latency, 2,000,000 B bandwidth per process",
     .size_min = NO_SIZES, .size_max = NO_SIZES, HPCC_SIZES, .points_per_size = 2,
     .takes = FB_OPT_TIMING | FB_OPT_RANDOM_RINGS | FB_OPT_SEED},
    {.name = "allpairs", .family = "health", .run = fb_run_allpairs, .min_ranks = 2,
     .metrics = {"latency", "bandwidth"},
     .title = "All pairs",
     .summary = "link check, one rank per node: every pair's bandwidth at --size and 8 B latency, then retests",
     .size_min = NO_SIZES, .size_max = NO_SIZES, .points_per_size = 0, .takes = FB_OPT_ALLPAIRS | FB_OPT_WINDOW},
    {.name = "info", .family = "info", .run = fb_run_info, .min_ranks = 1,
     .summary = "one rank_info record per rank: host, pid, MPI library, timer",
     .size_min = NO_SIZES, .size_max = NO_SIZES, .points_per_size = 0, .takes = FB_OPT_TIMING},
};
#define NBENCH ((int)(sizeof benchmarks / sizeof benchmarks[0]))

const fb_bench *fb_bench_find(const char *name)
{
    for (int i = 0; i < NBENCH; i++)
        if (strcmp(benchmarks[i].name, name) == 0)
            return &benchmarks[i];
    return NULL;
}

void fb_bench_print_help(void)
{
    for (int i = 0; i < NBENCH; i++) {
        printf("  %-15s ", benchmarks[i].name);
        fb_print_wrapped(stdout, benchmarks[i].summary, 18, 18);
    }
}

/* ---- list ------------------------------------------------------------------------------ */

static const char *pairing_name(enum fb_pairing p)
{
    return p == FB_PAIRS_HALVES ? "halves" : p == FB_PAIRS_SAMPLED ? "sampled" : "none";
}

/* The row's title; a collective's (blocking or not) is its MPI call ("allreduce" -> "MPI_Allreduce"). */
static const char *bench_title(const fb_bench *b, char *buf, size_t n)
{
    if (b->title)
        return b->title;
    if (strcmp(b->family, "collective") && strcmp(b->family, "nbc"))
        return b->name;
    snprintf(buf, n, "MPI_%s", b->name);
    if (strlen(buf) > 4)
        buf[4] = (char)toupper((unsigned char)buf[4]);
    return buf;
}

static void list_record(const fb_bench *b, fb_json *j)
{
    char lo[32], hi[32], range[80];
    const char *accepted[64];
    int naccepted = fb_options_accepted(b->takes, accepted, 64);
    fb_json_open(j, NULL);
    fb_json_str(j, "name", b->name);
    fb_json_str(j, "family", b->family);
    fb_json_open_array(j, "metrics");
    for (int m = 0; m < FB_MAX_METRICS && b->metrics[m]; m++)
        fb_json_str(j, NULL, b->metrics[m]);
    fb_json_close_array(j);
    if (b->size_max == NO_SIZES) {
        fb_json_null(j, "sizes");
    } else {
        fb_format_bytes(b->size_min, lo, sizeof lo);
        fb_format_bytes(b->size_max, hi, sizeof hi);
        snprintf(range, sizeof range, "%s:%s", lo, hi);
        fb_json_str(j, "sizes", range);
    }
    fb_json_open_array(j, "fixed_sizes");
    for (int i = 0; i < b->nfixed; i++)
        fb_json_int(j, NULL, b->fixed_sizes[i]);
    fb_json_close_array(j);
    fb_json_int(j, "size_floor", b->size_floor);
    fb_json_int(j, "points_per_size", b->points_per_size);
    fb_json_int(j, "min_ranks", b->min_ranks);
    fb_json_bool(j, "even_ranks", b->even_ranks);
    fb_json_str(j, "pairing", pairing_name(b->pairing));
    fb_json_open_array(j, "options");
    for (int i = 0; i < naccepted && i < 64; i++)
        fb_json_str(j, NULL, accepted[i]);
    fb_json_close_array(j);
    char title[64];
    fb_json_str(j, "title", bench_title(b, title, sizeof title));
    fb_json_str(j, "summary", b->summary);
    fb_json_close(j);
}

int fb_bench_list(int format)
{
    for (int i = 0; i < NBENCH; i++) {
        const fb_bench *b = &benchmarks[i];
        if (format == FB_FORMAT_TABLE) {
            char sizes[80] = "-", ranks[32];
            snprintf(ranks, sizeof ranks, "%d%s", b->min_ranks, b->even_ranks ? " even" : "");
            if (b->size_max != NO_SIZES) {
                char lo[32], hi[32];
                fb_format_bytes(b->size_min, lo, sizeof lo);
                fb_format_bytes(b->size_max, hi, sizeof hi);
                snprintf(sizes, sizeof sizes, "%s:%s", lo, hi);
            }
            if (i == 0)
                printf("# %-15s %-11s %-8s %-7s %s\n", "Benchmark", "Family", "Sizes", "Ranks", "Summary");
            printf("%-17s %-11s %-8s %-7s ", b->name, b->family, sizes, ranks);
            fb_print_wrapped(stdout, b->summary, 47, 47);
            continue;
        }
        fb_json j;
        fb_json_init(&j);
        list_record(b, &j);
        printf("%.*s\n", (int)j.len, j.buf);
        fb_json_free(&j);
    }
    return fflush(stdout) == 0 && !ferror(stdout) ? FB_EXIT_OK : FB_EXIT_ERROR;
}

/* ---- checks once np is known ------------------------------------------------------------- */

/* Why b refuses the option flag: a hint where the benchmark has its own word for it,
 * otherwise the benchmarks that do take it. */
static void refusal(const fb_bench *b, unsigned flag, char *err, size_t len)
{
    const char *name = fb_option_name(flag), *why = NULL;
    if (flag == FB_OPT_SIZES)
        why = b->takes & FB_OPT_SIZE ? "it measures bandwidth at one size: --size BYTES, default 1M"
              : strcmp(b->family, "hpcc") == 0 ? "HPCC's sizes are fixed: 8 bytes for latency, 2,000,000 bytes "
                                                 "for bandwidth"
              : strcmp(b->family, "onesided") == 0 ? "it operates on one 8-byte MPI_LONG_LONG"
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

int fb_bench_check(const fb_ctx *ctx, char *err, size_t len, int *usage)
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
        snprintf(err, len, "%s needs an even number of ranks (got %d): %s", b->name, ctx->np,
                 b->pairing == FB_PAIRS_HALVES ? "rank i is paired with rank i + np/2"
                                               : "it measures a pair of ranks (0 and 1) and leaves no rank unpaired");
        return -1;
    }
    *usage = 1;
    unsigned takes = b->takes;
    if (o->order_random && (b->takes & FB_OPT_SIZES))
        takes |= FB_OPT_SEED; /* the seed of the shuffle */
    unsigned refused = o->given & ~takes;
    if (refused) {
        refusal(b, refused & -refused, err, len); /* the first one, in FB_OPT_* order */
        return -1;
    }
    if (fb_options_check(o, err, (int)len))
        return -1;
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

/* ---- sizes --------------------------------------------------------------------------------- */

static void set_sizes(fb_ctx *ctx, const long long *sizes, int n)
{
    ctx->sizes = fb_malloc((size_t)(n ? n : 1) * sizeof *ctx->sizes);
    memcpy(ctx->sizes, sizes, (size_t)n * sizeof *ctx->sizes);
    ctx->nsizes = n;
    ctx->points_planned = (long long)n * ctx->bench->points_per_size;
}

/* Fisher-Yates from the seed (mixed with a constant of its own, so it is not the rings' draw). */
static void shuffle_sizes(long long *sizes, int n, uint64_t seed)
{
    uint64_t rng = seed ^ 0x0bde5ed51e5ULL;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(fb_splitmix64(&rng) % (uint64_t)(i + 1));
        long long t = sizes[i];
        sizes[i] = sizes[j];
        sizes[j] = t;
    }
}

int fb_bench_sizes(fb_ctx *ctx)
{
    const fb_bench *b = ctx->bench;
    if (b->takes & FB_OPT_SIZE) {
        set_sizes(ctx, &ctx->opt.size, 1);
        return 0;
    }
    if (b->size_max == NO_SIZES) {
        set_sizes(ctx, b->fixed_sizes, b->nfixed);
        return 0;
    }
    long long lo = ctx->opt.sizes_given ? ctx->opt.size_min : b->size_min;
    long long hi = ctx->opt.sizes_given ? ctx->opt.size_max : b->size_max;
    long long *all;
    int n = fb_sizes_expand(lo, hi, &all), kept = 0, skipped = 0;
    if (!all)
        fb_fatal("out of memory listing message sizes");
    for (int i = 0; i < n; i++) {
        if (all[i] < b->size_floor)
            skipped++;
        else
            all[kept++] = all[i];
    }
    if (skipped && kept && ctx->rank == 0)
        fprintf(stderr, "fabricbench-mpi: note: %s skips sizes below %lld bytes (one float)\n", b->name,
                b->size_floor);
    if (ctx->opt.order_random) /* the same shuffle on every rank: all parse the same seed */
        shuffle_sizes(all, kept, ctx->opt.seed);
    ctx->sizes = all;
    ctx->nsizes = kept;
    ctx->points_planned = (long long)kept * b->points_per_size;
    return kept > 0 ? 0 : -1;
}

long long fb_largest_size(const fb_ctx *ctx)
{
    long long m = 0;
    for (int i = 0; i < ctx->nsizes; i++)
        if (ctx->sizes[i] > m)
            m = ctx->sizes[i];
    return m;
}
