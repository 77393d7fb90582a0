/* options.c - command line parsing (see options.h). */
#include "options.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_WINDOW 64
#define DEFAULT_TIME_BUDGET 0.2
#define DEFAULT_MIN_ITERATIONS 10
#define DEFAULT_CACHE_POOL (64LL << 20)
#define DEFAULT_SEED 1
#define DEFAULT_SIZE (1LL << 20)
#define DEFAULT_REPETITIONS 3
#define DEFAULT_RETESTS 4
#define MAX_REPETITIONS 1000

static void set_defaults(fb_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->window = DEFAULT_WINDOW;
    opt->warmup = -1;
    opt->time_budget = DEFAULT_TIME_BUDGET;
    opt->min_iterations = DEFAULT_MIN_ITERATIONS;
    opt->cache_pool = DEFAULT_CACHE_POOL;
    opt->seed = DEFAULT_SEED;
    opt->inject_corruption = -1;
    opt->test_die_after = -1;
    opt->test_underestimate = 1.0;
    opt->format = FB_FORMAT_JSONL;
    opt->mode = FB_MODE_EXCHANGE;
    opt->size = DEFAULT_SIZE;
    opt->repetitions = DEFAULT_REPETITIONS;
    opt->retest = DEFAULT_RETESTS;
}

static const struct {
    unsigned flag;
    const char *name;
} option_names[] = {
    {FB_OPT_SIZES, "--sizes"},           {FB_OPT_WINDOW, "--window"},
    {FB_OPT_ITERATIONS, "--iterations"}, {FB_OPT_TIME_BUDGET, "--time-budget"},
    {FB_OPT_MIN_ITERATIONS, "--min-iterations"}, {FB_OPT_PAIRS, "--pairs"},
    {FB_OPT_RANDOM_RINGS, "--random-rings"}, {FB_OPT_ROOT, "--root"},
    {FB_OPT_SEED, "--seed"},             {FB_OPT_MODE, "--mode"},
    {FB_OPT_SIZE, "--size"},             {FB_OPT_REPETITIONS, "--repetitions"},
    {FB_OPT_RETEST, "--retest"},
};

const char *fb_option_name(unsigned flag)
{
    for (size_t i = 0; i < sizeof option_names / sizeof option_names[0]; i++)
        if (option_names[i].flag == flag)
            return option_names[i].name;
    return NULL;
}

static unsigned option_flag(const char *name)
{
    for (size_t i = 0; i < sizeof option_names / sizeof option_names[0]; i++)
        if (strcmp(option_names[i].name, name) == 0)
            return option_names[i].flag;
    return 0;
}

static int fail(char *err, int errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, (size_t)errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int parse_ll(const char *text, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_int(const char *text, int lo, int hi, int *out)
{
    long long v;
    if (parse_ll(text, lo, hi, &v))
        return -1;
    *out = (int)v;
    return 0;
}

int fb_parse_bytes(const char *text, long long *out)
{
    /* K/M/G follow OSU (1024-based); kB/MB/GB are the decimal SI units. */
    static const struct { const char *suffix; long long mult; } units[] = {
        {"", 1}, {"B", 1},
        {"K", 1LL << 10}, {"k", 1LL << 10}, {"Ki", 1LL << 10}, {"KiB", 1LL << 10},
        {"M", 1LL << 20}, {"m", 1LL << 20}, {"Mi", 1LL << 20}, {"MiB", 1LL << 20},
        {"G", 1LL << 30}, {"g", 1LL << 30}, {"Gi", 1LL << 30}, {"GiB", 1LL << 30},
        {"kB", 1000LL}, {"KB", 1000LL}, {"MB", 1000000LL}, {"GB", 1000000000LL},
    };
    char *end;
    if (!text || !*text || *text == '-' || *text == '+' || *text == ' ')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text)
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].suffix) != 0)
            continue;
        if (v > (unsigned long long)(LLONG_MAX / units[i].mult))
            return -1;
        *out = (long long)v * units[i].mult;
        return 0;
    }
    return -1;
}

int fb_sizes_expand(long long min, long long max, long long **sizes)
{
    int n = 0;
    long long *list = malloc(66 * sizeof *list);
    *sizes = list;
    if (!list)
        return 0;
    if (min == 0)
        list[n++] = 0;
    for (long long p = 1; p > 0 && p <= max; p *= 2)
        if (p >= min)
            list[n++] = p;
    *sizes = list;
    return n;
}

static int parse_sizes(fb_options *opt, const char *text, char *err, int errlen)
{
    char buf[128];
    if (strlen(text) >= sizeof buf)
        return fail(err, errlen, "--sizes: value too long: '%s'", text);
    strcpy(buf, text);
    char *colon = strchr(buf, ':');
    const char *lo = buf, *hi = buf;
    if (colon) {
        *colon = '\0';
        hi = colon + 1;
    }
    if (fb_parse_bytes(lo, &opt->size_min) || fb_parse_bytes(hi, &opt->size_max))
        return fail(err, errlen, "--sizes: expected MIN:MAX in bytes (suffixes K, M, G, KiB, MiB, GiB), got '%s'", text);
    if (opt->size_min > opt->size_max)
        return fail(err, errlen, "--sizes: MIN is larger than MAX in '%s'", text);
    if (opt->size_max > INT_MAX)
        return fail(err, errlen, "--sizes: %lld bytes is more than one MPI message can carry here (max %d)",
                    opt->size_max, INT_MAX);
    long long *list = NULL;
    int n = fb_sizes_expand(opt->size_min, opt->size_max, &list);
    free(list);
    if (n == 0)
        return fail(err, errlen, "--sizes: no power of two between %lld and %lld", opt->size_min, opt->size_max);
    opt->sizes_given = 1;
    return 0;
}

/* Options that take a value: name and the parser that stores it. */
static int apply(fb_options *opt, const char *name, const char *value, char *err, int errlen)
{
    long long ll;
    opt->given |= option_flag(name);
    if (strcmp(name, "--sizes") == 0)
        return parse_sizes(opt, value, err, errlen);
    if (strcmp(name, "--window") == 0) {
        if (parse_int(value, 1, 1 << 20, &opt->window))
            return fail(err, errlen, "--window: expected a positive integer, got '%s'", value);
        return 0;
    }
    if (strcmp(name, "--warmup") == 0) {
        if (parse_int(value, 0, INT_MAX, &opt->warmup))
            return fail(err, errlen, "--warmup: expected an integer >= 0, got '%s'", value);
        return 0;
    }
    if (strcmp(name, "--iterations") == 0) {
        if (parse_ll(value, 1, 1LL << 40, &opt->iterations))
            return fail(err, errlen, "--iterations: expected a positive integer, got '%s'", value);
        return 0;
    }
    if (strcmp(name, "--min-iterations") == 0) {
        if (parse_ll(value, 1, 1LL << 40, &opt->min_iterations))
            return fail(err, errlen, "--min-iterations: expected a positive integer, got '%s'", value);
        opt->min_iterations_given = 1;
        return 0;
    }
    if (strcmp(name, "--time-budget") == 0) {
        char *end;
        errno = 0;
        double v = strtod(value, &end);
        if (errno || end == value || *end || !isfinite(v) || v <= 0.0 || v > 86400.0)
            return fail(err, errlen, "--time-budget: expected seconds > 0, got '%s'", value);
        opt->time_budget = v;
        opt->time_budget_given = 1;
        return 0;
    }
    if (strcmp(name, "--cache") == 0) {
        if (strcmp(value, "warm") == 0)
            opt->cache_cold = 0;
        else if (strcmp(value, "cold") == 0)
            opt->cache_cold = 1;
        else
            return fail(err, errlen, "--cache: expected warm or cold, got '%s'", value);
        return 0;
    }
    if (strcmp(name, "--cache-pool") == 0) {
        if (fb_parse_bytes(value, &opt->cache_pool) || opt->cache_pool < 4096)
            return fail(err, errlen, "--cache-pool: expected a byte count of at least 4K, got '%s'", value);
        return 0;
    }
    if (strcmp(name, "--seed") == 0) {
        char *end;
        errno = 0;
        if (*value == '-')
            return fail(err, errlen, "--seed: expected an integer >= 0, got '%s'", value);
        unsigned long long v = strtoull(value, &end, 10);
        if (errno || end == value || *end)
            return fail(err, errlen, "--seed: expected an integer >= 0, got '%s'", value);
        opt->seed = (uint64_t)v;
        return 0;
    }
    if (strcmp(name, "--pairs") == 0) {
        if (parse_int(value, 1, INT_MAX, &opt->pairs))
            return fail(err, errlen, "--pairs: expected a positive integer, got '%s'", value);
        return 0;
    }
    if (strcmp(name, "--random-rings") == 0) {
        if (parse_int(value, 1, 100000, &opt->random_rings))
            return fail(err, errlen, "--random-rings: expected a positive integer, got '%s'", value);
        return 0;
    }
    if (strcmp(name, "--root") == 0) {
        if (parse_int(value, 0, INT_MAX, &opt->root))
            return fail(err, errlen, "--root: expected a rank >= 0, got '%s'", value);
        return 0;
    }
    if (strcmp(name, "--mode") == 0) {
        if (strcmp(value, "exchange") == 0)
            opt->mode = FB_MODE_EXCHANGE;
        else if (strcmp(value, "pairs") == 0)
            opt->mode = FB_MODE_PAIRS;
        else
            return fail(err, errlen, "--mode: expected exchange or pairs, got '%s'", value);
        return 0;
    }
    if (strcmp(name, "--size") == 0) {
        if (fb_parse_bytes(value, &opt->size) || opt->size < 1)
            return fail(err, errlen, "--size: expected a byte count of at least 1 (suffixes K, M, G, KiB, MiB, GiB), "
                        "got '%s'", value);
        if (opt->size > INT_MAX)
            return fail(err, errlen, "--size: %lld bytes is more than one MPI message can carry here (max %d)",
                        opt->size, INT_MAX);
        return 0;
    }
    if (strcmp(name, "--repetitions") == 0) {
        if (parse_int(value, 1, MAX_REPETITIONS, &opt->repetitions))
            return fail(err, errlen, "--repetitions: expected an integer from 1 to %d, got '%s'", MAX_REPETITIONS,
                        value);
        return 0;
    }
    if (strcmp(name, "--retest") == 0) {
        if (parse_int(value, 1, INT_MAX, &opt->retest))
            return fail(err, errlen, "--retest: expected a positive integer, got '%s'", value);
        return 0;
    }
    if (strcmp(name, "--test-underestimate") == 0) {
        char *end;
        errno = 0;
        double v = strtod(value, &end);
        if (errno || end == value || *end || !isfinite(v) || v < 1.0 || v > 1e12)
            return fail(err, errlen, "--test-underestimate: expected a factor >= 1, got '%s'", value);
        opt->test_underestimate = v;
        return 0;
    }
    if (strcmp(name, "--format") == 0) {
        if (strcmp(value, "jsonl") == 0)
            opt->format = FB_FORMAT_JSONL;
        else if (strcmp(value, "table") == 0)
            opt->format = FB_FORMAT_TABLE;
        else
            return fail(err, errlen, "--format: expected jsonl or table, got '%s'", value);
        return 0;
    }
    if (strcmp(name, "--inject-corruption") == 0) {
        if (parse_int(value, 0, INT_MAX, &opt->inject_corruption))
            return fail(err, errlen, "--inject-corruption: expected a rank >= 0, got '%s'", value);
        opt->validate = 1; /* corruption is only visible to validation */
        return 0;
    }
    if (strcmp(name, "--test-die-after") == 0) {
        if (parse_ll(value, 0, 1LL << 40, &ll))
            return fail(err, errlen, "--test-die-after: expected an integer >= 0, got '%s'", value);
        opt->test_die_after = ll;
        return 0;
    }
    return fail(err, errlen, "unknown option '%s'", name);
}

static const char *const valued_options[] = {
    "--sizes", "--window", "--warmup", "--iterations", "--min-iterations", "--time-budget",
    "--cache", "--cache-pool", "--seed", "--pairs", "--random-rings", "--root", "--format",
    "--mode", "--size", "--repetitions", "--retest",
    "--inject-corruption", "--test-die-after", "--test-underestimate",
};

static int takes_value(const char *name)
{
    for (size_t i = 0; i < sizeof valued_options / sizeof valued_options[0]; i++)
        if (strcmp(name, valued_options[i]) == 0)
            return 1;
    return 0;
}

int fb_options_parse(fb_options *opt, int argc, char **argv, char *err, int errlen)
{
    set_defaults(opt);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            opt->help = 1;
            continue;
        }
        if (strcmp(arg, "--version") == 0) {
            opt->version = 1;
            continue;
        }
        if (strcmp(arg, "--validate") == 0) {
            opt->validate = 1;
            continue;
        }
        if (arg[0] != '-') {
            if (opt->benchmark)
                return fail(err, errlen, "unexpected argument '%s' (benchmark is already '%s')", arg, opt->benchmark);
            opt->benchmark = arg;
            continue;
        }
        char name[64];
        const char *eq = strchr(arg, '=');
        const char *value;
        size_t namelen = eq ? (size_t)(eq - arg) : strlen(arg);
        if (namelen >= sizeof name)
            return fail(err, errlen, "unknown option '%s'", arg);
        memcpy(name, arg, namelen);
        name[namelen] = '\0';
        if (!takes_value(name))
            return fail(err, errlen, "unknown option '%s'", name);
        if (eq) {
            value = eq + 1;
        } else {
            if (i + 1 >= argc)
                return fail(err, errlen, "%s needs a value", name);
            value = argv[++i];
        }
        if (apply(opt, name, value, err, errlen))
            return -1;
    }
    if (opt->help || opt->version)
        return 0;
    if (!opt->benchmark)
        return fail(err, errlen, "no benchmark given");
    if (opt->iterations && opt->time_budget_given)
        return fail(err, errlen, "--iterations (fixed count) and --time-budget (adaptive count) exclude each other");
    if (opt->iterations && opt->min_iterations_given)
        return fail(err, errlen, "--min-iterations applies to the adaptive count, not to --iterations");
    if (opt->iterations && opt->test_underestimate > 1.0)
        return fail(err, errlen, "--test-underestimate applies to the adaptive count, not to --iterations");
    return 0;
}

void fb_print_usage(void)
{
    fputs("usage: fabricbench-mpi BENCHMARK [options]   (fabricbench-mpi --help lists benchmarks and options)\n",
          stderr);
}

void fb_print_options_help(void)
{
    fputs(
        "Options:\n"
        "  --sizes MIN:MAX        message sizes: the powers of two between MIN and MAX, plus 0 when\n"
        "                         MIN is 0. Suffixes K/M/G (= KiB/MiB/GiB, 1024-based) and kB/MB/GB\n"
        "                         (1000-based). Collectives: bytes per rank (see the record params).\n"
        "  --window N             messages in flight per iteration for bw, bibw, mbw_mr, allpairs (64)\n"
        "  --warmup N             warm-up iterations per point (default: automatic, doubling rounds\n"
        "                         until a round lasts 10 ms or a quarter of the time budget)\n"
        "  --iterations N         fixed number of timed iterations per point\n"
        "  --time-budget SECONDS  adaptive count: enough iterations to fill SECONDS per point (0.2),\n"
        "                         decided on rank 0 from the warm-up and broadcast; a point that runs\n"
        "                         slower than its warm-up said stops after about 2 x SECONDS\n"
        "  --min-iterations N     floor of the adaptive count, also when it stops early (10)\n"
        "  --cache warm|cold      cold: each iteration uses a fresh buffer region of a pool (warm)\n"
        "  --cache-pool BYTES     size of each cold-cache buffer pool (64M)\n"
        "  --validate             fill send buffers with a pattern (size, iteration, rank) and check\n"
        "                         every received byte; a mismatch exits with status 3\n"
        "  --seed N               seed of ring's random rings and of pingpong_pairs' sampling (1)\n"
        "  --pairs N              pairs for mbw_mr and multi_lat (np/2), or the number of sampled\n"
        "                         pairs for pingpong_pairs (all that fit the time budget)\n"
        "  --random-rings N       random rings for ring (HPCC: 30 for latency, 10 for bandwidth)\n"
        "  --root R               root rank of bcast and reduce (0)\n"
        "  --format jsonl|table   JSON Lines records (default) or a human table\n"
        "  --help, --version\n"
        "\n"
        "allpairs (also takes --window, and --warmup: untimed windows per pair, default 1):\n"
        "  --mode exchange|pairs  exchange: in round d = 1..N-1 rank r sends to (r+d) mod N while it\n"
        "                         receives from (r-d) mod N (mpiGraph); pairs: N/2 disjoint pairs per\n"
        "                         round, one direction at a time (exchange)\n"
        "  --size BYTES           bandwidth message size, suffixes as for --sizes (1M); latency is\n"
        "                         always measured at 8 bytes\n"
        "  --repetitions N        sweeps over every pair; a pair's record is the median (3)\n"
        "  --retest K             at least the K slowest pairs are measured again alone (4)\n"
        "\n"
        "An option the benchmark does not take (--sizes for ring, --iterations or --pairs for\n"
        "allpairs, --mode for latency, ...) is a usage error.\n"
        "\n"
        "Test hooks (for the test suite, not for measurements):\n"
        "  --inject-corruption RANK  RANK flips one byte of every message it sends or receives\n"
        "                         after the first timed iteration (implies --validate)\n"
        "  --test-die-after N     the highest rank kills itself with SIGKILL after N points\n"
        "  --test-underestimate F the adaptive plan takes the warm-up pace as F times faster than\n"
        "                         it was, so that the time-budget guard has to stop the point\n"
        "\n"
        "Output: JSON Lines on stdout from rank 0 (run record, point records, end record);\n"
        "errors on stderr. Exit status: 0 ok, 1 error, 2 bad usage, 3 validation failure.\n",
        stdout);
}
