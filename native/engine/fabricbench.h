/* fabricbench.h - what every part of the engine shares: the run context and the
 * benchmark table entry. Each benchmark family (pt2pt.c, collective.c, hpcc_net.c,
 * allpairs.c, info.c) exports its run functions here; main.c dispatches to them. */
#ifndef FABRICBENCH_H
#define FABRICBENCH_H

#include <mpi.h>
#include <stddef.h>

#include "options.h"
#include "util.h"

#define FB_VERSION "0.1.0"
#define FB_HOST_MAX 256
#define FB_MAX_METRICS 4
#define FB_MAX_FIXED_SIZES 2

typedef struct fb_ctx fb_ctx;
struct fb_probe;

enum fb_pairing {
    FB_PAIRS_NONE,     /* --pairs does not apply */
    FB_PAIRS_HALVES,   /* rank i with rank i + np/2; --pairs <= np/2 */
    FB_PAIRS_SAMPLED,  /* --pairs = how many ordered pairs to sample */
};

/* One row of the benchmark table (benchmarks.c), which `fabricbench-mpi list` exports. */
typedef struct fb_bench {
    const char *name;
    const char *family;
    const char *title;            /* a report's heading; NULL: its MPI call (collective, nbc) or its name */
    const char *summary;
    const char *size_meaning;     /* collectives: what a size is, in their points' params */
    const char *metrics[FB_MAX_METRICS]; /* what its point records measure */
    int min_ranks;
    int even_ranks;
    long long size_min, size_max; /* default --sizes; -1 when the benchmark takes no --sizes */
    long long size_floor;         /* sizes below this are skipped (reductions need a float) */
    long long fixed_sizes[FB_MAX_FIXED_SIZES]; /* the sizes of a benchmark without --sizes */
    int nfixed;
    int points_per_size;          /* point records per size */
    enum fb_pairing pairing;
    unsigned takes;               /* FB_OPT_* it accepts; any other of those is a usage error */
    void (*run)(fb_ctx *ctx);
    int variant;                  /* which call of its family's runner (collectives.h) */
} fb_bench;

/* Validation state of this rank: the first mismatch it saw. */
typedef struct {
    long long size;   /* message size of the point being measured, for the message */
    int failed;
    char message[512];
} fb_check_state;

struct fb_ctx {
    int rank, np;
    const fb_bench *bench;
    fb_options opt;
    long long *sizes;             /* the message sizes to measure, in order */
    int nsizes;

    long long points_planned;
    long long points_done;

    double wtick_us;              /* MPI_Wtick */
    double timer_resolution_us;   /* smallest step seen between MPI_Wtime calls */
    double timer_overhead_us;     /* cost of one MPI_Wtime call */

    char host[FB_HOST_MAX];
    char *hosts;                  /* rank 0: np names of FB_HOST_MAX bytes, by rank */
    int nhosts;                   /* distinct hosts */
    char mpi_library[256];        /* first line of MPI_Get_library_version */
    char mpi_library_full[1024];
    char mpi_version[16];
    double t_start;

    fb_check_state check;
    char table_header[1024];      /* last table header printed */
    struct fb_probe *probe;       /* the host probe (probe.h), NULL when not taken */
};

/* Rank 0, after the run began: the host name of rank r. */
static inline const char *fb_host_of(const fb_ctx *ctx, int r) { return ctx->hosts + (size_t)r * FB_HOST_MAX; }

/* The benchmark table (benchmarks.c). */
const fb_bench *fb_bench_find(const char *name);
void fb_bench_print_help(void);                /* the benchmark list of --help, to stdout */
int fb_bench_list(int format);                 /* `fabricbench-mpi list`: no MPI needed */
/* Rank-count and option checks once np is known; the same verdict on every rank. Returns 0,
 * or -1 with the reason in err and *usage set when the usage line should follow it. */
int fb_bench_check(const fb_ctx *ctx, char *err, size_t len, int *usage);
/* Fills ctx->sizes and ctx->points_planned; -1 when no size is left to measure. */
int fb_bench_sizes(fb_ctx *ctx);

/* The largest message size of the run (0 when there is none). */
long long fb_largest_size(const fb_ctx *ctx);

/* Benchmarks, by family. */
void fb_run_latency(fb_ctx *ctx);
void fb_run_bw(fb_ctx *ctx);
void fb_run_bibw(fb_ctx *ctx);
void fb_run_mbw_mr(fb_ctx *ctx);
void fb_run_multi_lat(fb_ctx *ctx);
void fb_run_loggp(fb_ctx *ctx);
void fb_run_exchange(fb_ctx *ctx);

/* the collective families' runners: collectives.h */

void fb_run_put_latency(fb_ctx *ctx);
void fb_run_get_latency(fb_ctx *ctx);
void fb_run_put_bw(fb_ctx *ctx);
void fb_run_get_bw(fb_ctx *ctx);
void fb_run_put_bibw(fb_ctx *ctx);
void fb_run_acc_latency(fb_ctx *ctx);
void fb_run_fop_latency(fb_ctx *ctx);
void fb_run_cas_latency(fb_ctx *ctx);

void fb_run_pingpong_pairs(fb_ctx *ctx);
void fb_run_ring(fb_ctx *ctx);

void fb_run_allpairs(fb_ctx *ctx);

void fb_run_info(fb_ctx *ctx);

#endif
