/* options.c - command line parsing (see options.h): one table row per option. */
#include "options.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REPETITIONS 1000

_Static_assert(offsetof(fb_options, benchmark) == 0, "offset 0 means 'no field' in the option table");

static void set_defaults(fb_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->window = 64;
    opt->warmup = -1;
    opt->time_budget = 0.2;
    opt->min_iterations = 10;
    opt->precision = 0.01;
    opt->cache_pool = 64LL << 20;
    opt->seed = 1;
    opt->inject_corruption = -1;
    opt->test_die_after = -1;
    opt->test_underestimate = 1.0;
    opt->test_overestimate = 1.0;
    opt->format = FB_FORMAT_JSONL;
    opt->mode = FB_MODE_EXCHANGE;
    opt->size = 1LL << 20;
    opt->repetitions = 3;
    opt->retest = 4;
    opt->win_sync = -1;
    opt->win_alloc = FB_WIN_ALLOCATE;
}

/* ---- the table ----------------------------------------------------------------------- */

typedef struct option_def option_def;
typedef int (*parse_fn)(const option_def *d, fb_options *opt, const char *value, char *err, int errlen);

enum section { COMMON, ALLPAIRS, HOOKS, HIDDEN };

struct option_def {
    const char *name;
    const char *metavar;     /* NULL: a switch that takes no value */
    parse_fn parse;
    size_t field;            /* offsetof the value in fb_options */
    size_t also;             /* offsetof an int that giving the option sets to 1; 0 = none */
    unsigned flag;           /* FB_OPT_* when only some benchmarks take it; 0 = every benchmark */
    long long lo, hi;        /* integers and byte counts: accepted range */
    double dlo, dhi;         /* reals: (dlo, dhi], or [dlo, dhi] when closed */
    int closed;
    const char *const *choices; /* words, stored as their index */
    const char *expected;    /* the error says "--name: expected <expected>, got '<value>'" */
    enum section section;
    const char *help;        /* --help text; '\n' starts an indented continuation line */
};

static int fail(char *err, int errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *err, int errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, (size_t)errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int expected(const option_def *d, const char *value, char *err, int errlen)
{
    return fail(err, errlen, "%s: expected %s, got '%s'", d->name, d->expected, value);
}

static void *at(fb_options *opt, size_t offset) { return (char *)opt + offset; }

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

static int p_switch(const option_def *d, fb_options *opt, const char *value, char *err, int errlen)
{
    (void)value, (void)err, (void)errlen;
    *(int *)at(opt, d->field) = 1;
    return 0;
}

static int p_int(const option_def *d, fb_options *opt, const char *value, char *err, int errlen)
{
    long long v;
    if (parse_ll(value, d->lo, d->hi, &v))
        return expected(d, value, err, errlen);
    *(int *)at(opt, d->field) = (int)v;
    return 0;
}

static int p_ll(const option_def *d, fb_options *opt, const char *value, char *err, int errlen)
{
    if (parse_ll(value, d->lo, d->hi, at(opt, d->field)))
        return expected(d, value, err, errlen);
    return 0;
}

static int p_real(const option_def *d, fb_options *opt, const char *value, char *err, int errlen)
{
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    if (errno || end == value || *end || !isfinite(v) || v < d->dlo || (v == d->dlo && !d->closed) || v > d->dhi)
        return expected(d, value, err, errlen);
    *(double *)at(opt, d->field) = v;
    return 0;
}

static int p_bytes(const option_def *d, fb_options *opt, const char *value, char *err, int errlen)
{
    long long v;
    if (fb_parse_bytes(value, &v) || v < d->lo)
        return expected(d, value, err, errlen);
    if (v > d->hi)
        return fail(err, errlen, "%s: %lld bytes is more than one MPI message can carry here (max %lld)", d->name, v,
                    d->hi);
    *(long long *)at(opt, d->field) = v;
    return 0;
}

static int p_seed(const option_def *d, fb_options *opt, const char *value, char *err, int errlen)
{
    char *end;
    errno = 0;
    if (*value == '-')
        return expected(d, value, err, errlen);
    unsigned long long v = strtoull(value, &end, 10);
    if (errno || end == value || *end)
        return expected(d, value, err, errlen);
    *(uint64_t *)at(opt, d->field) = (uint64_t)v;
    return 0;
}

static int p_choice(const option_def *d, fb_options *opt, const char *value, char *err, int errlen)
{
    for (int i = 0; d->choices[i]; i++) {
        if (strcmp(value, d->choices[i]) == 0) {
            *(int *)at(opt, d->field) = i;
            return 0;
        }
    }
    return expected(d, value, err, errlen);
}

static int p_sizes(const option_def *d, fb_options *opt, const char *text, char *err, int errlen)
{
    (void)d;
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
    return 0;
}

#define F(member) offsetof(fb_options, member)

static const char *const cache_words[] = {"warm", "cold", NULL};       /* cache_cold: 0, 1 */
static const char *const mode_words[] = {"exchange", "pairs", NULL};   /* FB_MODE_* */
static const char *const format_words[] = {"jsonl", "table", NULL};    /* FB_FORMAT_* */
static const char *const order_words[] = {"ascending", "random", NULL}; /* order_random: 0, 1 */
static const char *const sync_words[] = {"flush", "lock", "pscw", "fence", "flush_local", "lock_all",
                                         NULL}; /* FB_SYNC_* */
static const char *const alloc_words[] = {"allocate", "create", "dynamic", NULL}; /* FB_WIN_* */

static const option_def options[] = {
    {"--sizes", "MIN:MAX", p_sizes, F(size_min), F(sizes_given), FB_OPT_SIZES, .section = COMMON,
     .help = "message sizes: the powers of two between MIN and MAX, plus 0 when\n"
             "MIN is 0. Suffixes K/M/G (= KiB/MiB/GiB, 1024-based) and kB/MB/GB\n"
             "(1000-based). Collectives: bytes per rank (see the record params)."},
    {"--window", "N", p_int, F(window), 0, FB_OPT_WINDOW, 1, 1 << 20, .expected = "a positive integer",
     .help = "messages in flight per iteration for bw, bibw, mbw_mr, allpairs (64)"},
    {"--max-window-bytes", "BYTES", p_bytes, F(window_bytes), 0, FB_OPT_WINDOW_BYTES, 1, LLONG_MAX,
     .expected = "a byte count of at least 1 (suffixes K, M, G, KiB, MiB, GiB)",
     .help = "bw, bibw, mbw_mr: fewer messages per window where window x size would\n"
             "exceed BYTES (at least one), so a slow link's large sizes fit their\n"
             "time; the record's params.window says what was used (no cap)"},
    {"--warmup", "N", p_int, F(warmup), 0, 0, 0, INT_MAX, .expected = "an integer >= 0",
     .help = "warm-up iterations per point (default: automatic, doubling rounds\n"
             "until a round lasts 10 ms or a quarter of the time budget)"},
    {"--iterations", "N", p_ll, F(iterations), 0, FB_OPT_ITERATIONS, 1, 1LL << 40, .expected = "a positive integer",
     .help = "fixed number of timed iterations per point"},
    {"--time-budget", "SECONDS", p_real, F(time_budget), F(time_budget_given), FB_OPT_TIME_BUDGET, .dlo = 0.0,
     .dhi = 86400.0, .expected = "seconds > 0",
     .help = "adaptive count: enough iterations to fill SECONDS per point (0.2),\n"
             "decided on rank 0 from the warm-up and broadcast; a point that runs\n"
             "slower than its warm-up said stops after about 2 x SECONDS"},
    {"--min-iterations", "N", p_ll, F(min_iterations), F(min_iterations_given), FB_OPT_MIN_ITERATIONS, 1, 1LL << 40,
     .expected = "a positive integer", .help = "floor of the adaptive count, also when it stops early (10;\n"
                                                    "when given, also of --precision's 8-sample stops)"},
    {"--precision", "P", p_real, F(precision), F(precision_given), FB_OPT_PRECISION, .dlo = 0.0, .dhi = 1.0,
     .closed = 1, .expected = "a fraction from 0 to 1, e.g. 0.01",
     .help = "stopping rule of the adaptive count: stop a point once the 95 %\n"
             "confidence interval of its median (order statistics) has a half-width\n"
             "of at most P x median, after at least 30 samples and --min-iterations\n"
             "(8 samples when 30 do not fit the budget), or give up once the budget\n"
             "cannot hold the samples P needs; --time-budget stays the ceiling.\n"
             "0: fill the budget (0.01)"},
    {"--cache", "warm|cold", p_choice, F(cache_cold), .choices = cache_words, .expected = "warm or cold",
     .help = "cold: each iteration uses a fresh buffer region of a pool (warm)"},
    {"--cache-pool", "BYTES", p_bytes, F(cache_pool), 0, 0, 4096, LLONG_MAX,
     .expected = "a byte count of at least 4K", .help = "size of each cold-cache buffer pool (64M)"},
    {"--validate", NULL, p_switch, F(validate),
     .help = "fill send buffers with a pattern (size, iteration, rank) and check\n"
             "every received byte; a mismatch exits with status 3"},
    {"--seed", "N", p_seed, F(seed), 0, FB_OPT_SEED, .expected = "an integer >= 0",
     .help = "seed of ring's random rings, of pingpong_pairs' sampling and of\n"
             "--order random's shuffle (1)"},
    {"--pairs", "N", p_int, F(pairs), 0, FB_OPT_PAIRS, 1, INT_MAX, .expected = "a positive integer",
     .help = "pairs for mbw_mr and multi_lat (np/2), or the number of sampled\n"
             "pairs for pingpong_pairs (all that fit the time budget)"},
    {"--random-rings", "N", p_int, F(random_rings), 0, FB_OPT_RANDOM_RINGS, 1, 100000,
     .expected = "a positive integer", .help = "random rings for ring (HPCC: 30 for latency, 10 for bandwidth)"},
    {"--root", "R", p_int, F(root), 0, FB_OPT_ROOT, 0, INT_MAX, .expected = "a rank >= 0",
     .help = "root rank of bcast and reduce (0)"},
    {"--win-sync", "MODE", p_choice, F(win_sync), 0, FB_OPT_WIN_SYNC, .choices = sync_words,
     .expected = "flush, lock, pscw, fence, flush_local or lock_all",
     .help = "one-sided synchronisation, OSU's -s: flush, lock,\n"
             "pscw, fence, flush_local, lock_all (flush;\n"
             "put_bibw: pscw or fence, default pscw)"},
    {"--win-alloc", "MODE", p_choice, F(win_alloc), 0, FB_OPT_WIN_ALLOC, .choices = alloc_words,
     .expected = "create, allocate or dynamic",
     .help = "one-sided window, OSU's -w: MPI_Win_allocate,\n"
             "MPI_Win_create, or MPI_Win_create_dynamic +\n"
             "MPI_Win_attach (allocate)"},
    {"--order", "ascending|random", p_choice, F(order_random), .choices = order_words,
     .expected = "ascending or random",
     .help = "order in which the message sizes are measured (ascending); random:\n"
             "a shuffle drawn from --seed, so a burst of load on the host hits\n"
             "scattered sizes rather than a run of neighbouring ones"},
    {"--format", "jsonl|table", p_choice, F(format), .choices = format_words, .expected = "jsonl or table",
     .help = "JSON Lines records (default) or a human table"},
    {"--mode", "exchange|pairs", p_choice, F(mode), 0, FB_OPT_MODE, .choices = mode_words,
     .expected = "exchange or pairs", .section = ALLPAIRS,
     .help = "exchange: in round d = 1..N-1 rank r sends to (r+d) mod N while it\n"
             "receives from (r-d) mod N (mpiGraph); pairs: N/2 disjoint pairs per\n"
             "round, one direction at a time (exchange)"},
    {"--size", "BYTES", p_bytes, F(size), 0, FB_OPT_SIZE, 1, INT_MAX,
     .expected = "a byte count of at least 1 (suffixes K, M, G, KiB, MiB, GiB)", .section = ALLPAIRS,
     .help = "bandwidth message size, suffixes as for --sizes (1M); latency is\n"
             "always measured at 8 bytes"},
    {"--repetitions", "N", p_int, F(repetitions), 0, FB_OPT_REPETITIONS, 1, MAX_REPETITIONS,
     .expected = "an integer from 1 to 1000", .section = ALLPAIRS,
     .help = "sweeps over every pair; a pair's record is the median (3)"},
    {"--retest", "K", p_int, F(retest), 0, FB_OPT_RETEST, 1, INT_MAX, .expected = "a positive integer",
     .section = ALLPAIRS, .help = "at least the K slowest pairs are measured again alone (4)"},
    {"--inject-corruption", "RANK", p_int, F(inject_corruption), F(validate), 0, 0, INT_MAX,
     .expected = "a rank >= 0", .section = HOOKS,
     .help = "RANK flips one byte of every message it sends or receives\n"
             "after the first timed iteration (implies --validate)"},
    {"--test-die-after", "N", p_ll, F(test_die_after), 0, 0, 0, 1LL << 40, .expected = "an integer >= 0",
     .section = HOOKS, .help = "the highest rank kills itself with SIGKILL after N points"},
    {"--test-underestimate", "F", p_real, F(test_underestimate), 0, 0, .dlo = 1.0, .dhi = 1e12, .closed = 1,
     .expected = "a factor >= 1", .section = HOOKS,
     .help = "the adaptive plan takes the warm-up pace as F times faster than\n"
             "it was, so that the time-budget guard has to stop the point"},
    {"--test-overestimate", "F", p_real, F(test_overestimate), 0, 0, .dlo = 1.0, .dhi = 1e12, .closed = 1,
     .expected = "a factor >= 1", .section = HOOKS,
     .help = "the adaptive plan takes the warm-up pace as F times slower than\n"
             "it was (a preempted warm-up), so that it plans too few iterations"},
    {"--help", NULL, p_switch, F(help), .section = HIDDEN},
    {"-h", NULL, p_switch, F(help), .section = HIDDEN},
    {"--version", NULL, p_switch, F(version), .section = HIDDEN},
};
#define NOPTIONS ((int)(sizeof options / sizeof options[0]))

_Static_assert(sizeof(int) == sizeof(enum fb_format), "--format is stored through an int");

static const option_def *find_option(const char *name)
{
    for (int i = 0; i < NOPTIONS; i++)
        if (strcmp(options[i].name, name) == 0)
            return &options[i];
    return NULL;
}

const char *fb_option_name(unsigned flag)
{
    for (int i = 0; i < NOPTIONS; i++)
        if (options[i].flag == flag)
            return options[i].name;
    return NULL;
}

int fb_options_accepted(unsigned takes, const char **names, int max)
{
    int n = 0;
    for (int i = 0; i < NOPTIONS; i++) {
        const option_def *d = &options[i];
        if (d->section == HOOKS || d->section == HIDDEN || (d->flag && !(takes & d->flag)))
            continue;
        if (n < max)
            names[n] = d->name;
        n++;
    }
    return n;
}

/* ---- parsing ------------------------------------------------------------------------- */

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

void fb_format_bytes(long long bytes, char *out, size_t len)
{
    static const struct { long long mult; const char *suffix; } units[] = {
        {1LL << 30, "G"}, {1LL << 20, "M"}, {1LL << 10, "K"},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (bytes >= units[i].mult && bytes % units[i].mult == 0) {
            snprintf(out, len, "%lld%s", bytes / units[i].mult, units[i].suffix);
            return;
        }
    }
    snprintf(out, len, "%lld", bytes);
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
    return n;
}

/* One command-line word (and the value after it when the option takes one). */
static int parse_option(fb_options *opt, int argc, char **argv, int *i, char *err, int errlen)
{
    const char *arg = argv[*i];
    char name[64];
    const char *eq = strchr(arg, '=');
    size_t namelen = eq ? (size_t)(eq - arg) : strlen(arg);
    if (namelen >= sizeof name)
        return fail(err, errlen, "unknown option '%s'", arg);
    memcpy(name, arg, namelen);
    name[namelen] = '\0';
    const option_def *d = find_option(name);
    if (!d || (eq && !d->metavar))
        return fail(err, errlen, "unknown option '%s'", d ? arg : name);
    const char *value = NULL;
    if (eq) {
        value = eq + 1;
    } else if (d->metavar) {
        if (*i + 1 >= argc)
            return fail(err, errlen, "%s needs a value", name);
        value = argv[++*i];
    }
    if (d->parse(d, opt, value, err, errlen))
        return -1;
    if (d->also)
        *(int *)at(opt, d->also) = 1;
    opt->given |= d->flag;
    return 0;
}

int fb_options_parse(fb_options *opt, int argc, char **argv, char *err, int errlen)
{
    set_defaults(opt);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (arg[0] == '-') {
            if (parse_option(opt, argc, argv, &i, err, errlen))
                return -1;
        } else if (opt->benchmark) {
            return fail(err, errlen, "unexpected argument '%s' (benchmark is already '%s')", arg, opt->benchmark);
        } else {
            opt->benchmark = arg;
        }
    }
    if (opt->help || opt->version)
        return 0;
    if (!opt->benchmark)
        return fail(err, errlen, "no benchmark given");
    return 0;
}

int fb_options_check(const fb_options *opt, char *err, int errlen)
{
    if (opt->iterations && opt->time_budget_given)
        return fail(err, errlen, "--iterations (fixed count) and --time-budget (adaptive count) exclude each other");
    if (opt->iterations && opt->min_iterations_given)
        return fail(err, errlen, "--min-iterations applies to the adaptive count, not to --iterations");
    if (opt->iterations && opt->precision_given)
        return fail(err, errlen, "--precision is the stopping rule of the adaptive count, not of --iterations");
    if (opt->iterations && opt->test_underestimate > 1.0)
        return fail(err, errlen, "--test-underestimate applies to the adaptive count, not to --iterations");
    if (opt->iterations && opt->test_overestimate > 1.0)
        return fail(err, errlen, "--test-overestimate applies to the adaptive count, not to --iterations");
    return 0;
}

/* ---- help ------------------------------------------------------------------------------ */

void fb_print_usage(void)
{
    fputs("usage: fabricbench-mpi BENCHMARK [options]\n"
          "       (fabricbench-mpi --help lists benchmarks and options)\n", stderr);
}

static void print_section(enum section section)
{
    for (int i = 0; i < NOPTIONS; i++) {
        const option_def *d = &options[i];
        if (d->section != section)
            continue;
        char head[64];
        snprintf(head, sizeof head, "%s%s%s", d->name, d->metavar ? " " : "", d->metavar ? d->metavar : "");
        if (strlen(head) <= 22) {
            printf("  %-22s ", head);
        } else {
            printf("  %s\n%25s", head, "");
        }
        fb_print_wrapped(stdout, d->help, 25, 25);
    }
}

void fb_print_options_help(void)
{
    puts("Options:");
    print_section(COMMON);
    puts("  --help, --version\n\n"
         "allpairs (also takes --window, and --warmup: untimed windows per pair,\n"
         "default 1):");
    print_section(ALLPAIRS);
    puts("\nAn option the benchmark does not take (--sizes for ring, --iterations or --pairs\n"
         "for allpairs, --mode for latency, ...) is a usage error.\n\n"
         "Test hooks (for the test suite, not for measurements):");
    print_section(HOOKS);
    puts("\nOutput: JSON Lines on stdout from rank 0 (run record, point records, end\n"
         "record); errors on stderr. Exit status: 0 ok, 1 error, 2 bad usage, 3 validation\n"
         "failure.");
}
