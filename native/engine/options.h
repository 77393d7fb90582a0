/* options.h - the command line: which benchmark, and how to measure it.
 *
 * Every option is one row of a table in options.c (name, value parser, range, help);
 * parsing is pure (no MPI) and deterministic, so every rank parses the same argv and
 * reaches the same verdict without talking to the others. */
#ifndef FB_OPTIONS_H
#define FB_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

enum fb_format { FB_FORMAT_JSONL, FB_FORMAT_TABLE };
enum fb_allpairs_mode { FB_MODE_EXCHANGE, FB_MODE_PAIRS };
/* One-sided synchronisation and window creation, OSU's -s and -w choices. */
enum fb_win_sync { FB_SYNC_FLUSH, FB_SYNC_LOCK, FB_SYNC_PSCW, FB_SYNC_FENCE, FB_SYNC_FLUSH_LOCAL, FB_SYNC_LOCK_ALL };
enum fb_win_alloc { FB_WIN_ALLOCATE, FB_WIN_CREATE, FB_WIN_DYNAMIC };

/* Options that only some benchmarks take. Each benchmark lists the ones it takes
 * (fb_bench.takes); giving any other is a usage error. The rest (--warmup, --cache,
 * --cache-pool, --validate, --format, the test hooks) apply to every benchmark. */
enum {
    FB_OPT_SIZES = 1 << 0, FB_OPT_WINDOW = 1 << 1,
    /* how many iterations a point times */
    FB_OPT_ITERATIONS = 1 << 2, FB_OPT_TIME_BUDGET = 1 << 3, FB_OPT_MIN_ITERATIONS = 1 << 4,
    /* who talks to whom */
    FB_OPT_PAIRS = 1 << 5, FB_OPT_RANDOM_RINGS = 1 << 6, FB_OPT_ROOT = 1 << 7, FB_OPT_SEED = 1 << 8,
    /* the all-pairs check's own */
    FB_OPT_MODE = 1 << 9, FB_OPT_SIZE = 1 << 10, FB_OPT_REPETITIONS = 1 << 11, FB_OPT_RETEST = 1 << 12,
    FB_OPT_PRECISION = 1 << 13, FB_OPT_WINDOW_BYTES = 1 << 14,
    /* one-sided (onesided.c): how the window is made and how epochs are synchronised */
    FB_OPT_WIN_SYNC = 1 << 15, FB_OPT_WIN_ALLOC = 1 << 16,
    FB_OPT_TIMING = FB_OPT_ITERATIONS | FB_OPT_TIME_BUDGET | FB_OPT_MIN_ITERATIONS | FB_OPT_PRECISION,
    FB_OPT_ALLPAIRS = FB_OPT_MODE | FB_OPT_SIZE | FB_OPT_REPETITIONS | FB_OPT_RETEST,
};

typedef struct {
    const char *benchmark;     /* first member: options.c relies on no option living at offset 0 */

    int sizes_given;
    long long size_min, size_max;

    int window;                /* bw, bibw, mbw_mr: messages in flight per iteration */
    long long window_bytes;    /* bw, bibw, mbw_mr: at most this many bytes per window (fewer messages); 0 = no cap */
    int warmup;                /* warm-up iterations per point; -1 = automatic */
    long long iterations;      /* fixed timed iterations per point; 0 = adaptive */
    double time_budget;        /* seconds per point when adaptive */
    int time_budget_given;
    double precision;          /* stop once the median's 95 % CI half-width / median <= this; 0 = off */
    int precision_given;
    long long min_iterations;  /* floor of the adaptive count */
    int min_iterations_given;
    int cache_cold;            /* fresh buffer region per iteration */
    long long cache_pool;      /* bytes per buffer pool in cold mode */
    int validate;
    uint64_t seed;
    int pairs;                 /* 0 = benchmark default */
    int random_rings;          /* 0 = HPCC defaults (30 for latency, 10 for bandwidth) */
    int root;                  /* bcast, reduce */
    int win_sync;              /* one-sided: enum fb_win_sync; -1 = the benchmark's OSU default */
    int win_alloc;             /* one-sided: enum fb_win_alloc */
    int mode;                  /* allpairs: enum fb_allpairs_mode, exchange rounds or disjoint pairs */
    long long size;            /* allpairs: the bandwidth message size (1 MiB) */
    int repetitions;           /* allpairs: sweeps over every pair (3) */
    int retest;                /* allpairs: at least this many slowest pairs measured again alone (4) */
    int format;                /* enum fb_format */
    int order_random;          /* measure the sizes in a random order drawn from --seed */
    unsigned given;            /* FB_OPT_* of the options on the command line */

    /* Test hooks (documented as such; not for measurements). */
    int inject_corruption;     /* rank that corrupts its data after the first iteration; -1 = none */
    long long test_die_after;  /* the last rank SIGKILLs itself after this many points; -1 = never */
    double test_underestimate; /* the adaptive plan divides the warm-up pace by this; 1 = off */
    double test_overestimate;  /* ... and multiplies it by this; 1 = off */

    int help, version;
} fb_options;

/* Fills *opt from argv: every option known and well-formed, a benchmark named. Returns 0
 * on success; otherwise writes a one-line reason into err and returns -1. */
int fb_options_parse(fb_options *opt, int argc, char **argv, char *err, int errlen);

/* The checks between options (--iterations excludes --time-budget, ...), made once the
 * benchmark has accepted every option given. Returns 0, or -1 with a reason in err. */
int fb_options_check(const fb_options *opt, char *err, int errlen);

/* Parses a byte count such as 0, 4096, 4K, 4KiB, 1M, 2MiB, 1G, 2000000, 4MB (decimal).
 * Returns 0 on success. */
int fb_parse_bytes(const char *text, long long *out);

/* Writes bytes the way --sizes takes them: 4M, 64K, 2000000. */
void fb_format_bytes(long long bytes, char *out, size_t len);

/* Powers of two between min and max, with 0 first when min is 0. Returns the count
 * (0 if none) and a malloc'd array in *sizes. */
int fb_sizes_expand(long long min, long long max, long long **sizes);

/* "--sizes" for FB_OPT_SIZES, and so on; NULL for anything else. */
const char *fb_option_name(unsigned flag);

/* The options a benchmark that takes `takes` accepts for a measurement (every option
 * but the test hooks, --help and --version), in --help order. Writes up to max names
 * and returns how many there are. */
int fb_options_accepted(unsigned takes, const char **names, int max);

void fb_print_usage(void);  /* the short usage line, to stderr */
void fb_print_options_help(void); /* the option list of --help, to stdout */

#endif
