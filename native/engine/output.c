/* output.c - records and tables on stdout, one complete line per write (see output.h). */
#include "output.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "probe.h"

/* One write() per line, with SIGTERM/SIGINT/SIGHUP held until it is done: mpirun
 * tears a job down with SIGTERM before SIGKILL, so the line finishes. */
static void write_all(const char *buf, size_t len)
{
    sigset_t block, saved;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &saved);
    while (len > 0) {
        ssize_t n = write(STDOUT_FILENO, buf, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            sigprocmask(SIG_SETMASK, &saved, NULL);
            fb_fatal("cannot write to stdout: %s", strerror(errno));
        }
        buf += n;
        len -= (size_t)n;
    }
    sigprocmask(SIG_SETMASK, &saved, NULL);
}

static void write_json_line(fb_json *j)
{
    size_t len = j->len;
    char *line = fb_malloc(len + 1);
    memcpy(line, j->buf, len);
    line[len] = '\n';
    write_all(line, len + 1);
    free(line);
}

void fb_output_text(const char *text) { write_all(text, strlen(text)); }

void fb_record_begin(fb_json *j, const char *kind)
{
    fb_json_init(j);
    fb_json_open(j, NULL);
    fb_json_str(j, "record", kind);
}

void fb_record_write(fb_json *j)
{
    fb_json_close(j);
    write_json_line(j);
    fb_json_free(j);
}

void fb_point_init(fb_point *p, const char *metric, const char *unit, long long size)
{
    memset(p, 0, sizeof *p);
    p->metric = metric;
    p->unit = unit;
    p->size = size;
    fb_json_init_members(&p->params);
    fb_json_init_members(&p->detail);
}

void fb_point_free(fb_point *p)
{
    fb_json_free(&p->params);
    fb_json_free(&p->detail);
}

/* ---- JSON Lines ---------------------------------------------------------------- */

/* detail.sketch: the sample distribution as its 101 percentiles (stats.h). */
static void write_sketch(fb_json *j, const fb_stats *st)
{
    fb_json_open(j, "sketch");
    fb_json_open_array(j, "q");
    for (int k = 0; k < FB_QUANTILES; k++)
        fb_json_num(j, NULL, st->q[k]);
    fb_json_close_array(j);
    fb_json_close(j);
}

/* detail.precision: the median's 95 % CI over the same values, its relative half-width
 * (reached), and against the point's --precision target whether it met it. */
static void write_precision(fb_json *j, const fb_point *p)
{
    const fb_stats *st = &p->st;
    fb_json_open(j, "precision");
    fb_json_num(j, "confidence", FB_CI_LEVEL);
    if (st->has_ci) {
        fb_json_open_array(j, "median_ci");
        fb_json_num(j, NULL, st->ci_lo);
        fb_json_num(j, NULL, st->ci_hi);
        fb_json_close_array(j);
    }
    fb_json_num(j, "reached", st->has_ci ? st->precision : NAN); /* null: too few samples, or median 0 */
    if (p->precision_target > 0.0) {
        fb_json_num(j, "target", p->precision_target);
        fb_json_bool(j, "met", st->has_ci && isfinite(st->precision) && st->precision <= p->precision_target);
    } else {
        fb_json_null(j, "target");
    }
    fb_json_close(j);
}

static void write_point_json(fb_ctx *ctx, const fb_point *p)
{
    fb_json j;
    fb_record_begin(&j, "point");
    fb_json_str(&j, "benchmark", ctx->bench->name);
    fb_json_open(&j, "params");
    fb_json_int(&j, "size", p->size);
    fb_json_int(&j, "ranks", ctx->np);
    fb_json_splice(&j, &p->params);
    fb_json_str(&j, "cache", ctx->opt.cache_cold ? "cold" : "warm");
    fb_json_bool(&j, "validate", ctx->opt.validate);
    fb_json_close(&j);
    fb_json_str(&j, "metric", p->metric);
    fb_json_str(&j, "unit", p->unit);
    fb_json_int(&j, "n", p->st.n);
    if (p->iterations > 0)
        fb_json_int(&j, "iterations", p->iterations);
    fb_json_num(&j, "value", p->value);
    fb_json_num(&j, "min", p->st.min);
    fb_json_num(&j, "median", p->st.median);
    fb_json_num(&j, "mean", p->st.mean);
    fb_json_num(&j, "p99", p->st.p99);
    fb_json_num(&j, "max", p->st.max);
    fb_json_num(&j, "stdev", p->st.stdev);
    if (p->detail.len || p->st.has_quantiles) {
        fb_json_open(&j, "detail");
        fb_json_splice(&j, &p->detail);
        if (p->st.has_quantiles) {
            write_sketch(&j, &p->st);
            write_precision(&j, p);
        }
        fb_json_close(&j);
    }
    fb_record_write(&j);
}

/* ---- Table ----------------------------------------------------------------------- */

static const char *value_label(const fb_point *p)
{
    if (p->label)
        return p->label;
    if (strcmp(p->metric, "latency") == 0)
        return "Latency";
    if (strcmp(p->metric, "bandwidth") == 0)
        return "Bandwidth";
    if (strcmp(p->metric, "bibandwidth") == 0)
        return "Bi-Bandwidth";
    if (strcmp(p->metric, "message_rate") == 0)
        return "Messages/s";
    return "Time";
}

static void addf(char *buf, size_t cap, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (len + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, cap - len, fmt, ap);
    va_end(ap);
}

/* OSU-style: a "# ..." header naming every column with its unit, then one row per
 * point; the header is repeated only when the columns change. */
static void write_table_row(fb_ctx *ctx, const fb_point *pts, int n)
{
    char header[1024] = "", row[2048] = "", title[96], first[64];
    const fb_point *p = &pts[0];
    if (p->series_name) {
        snprintf(first, sizeof first, "# %s", p->series_name);
        addf(header, sizeof header, "%-12s%-12s", first, "Size");
        addf(row, sizeof row, "%-12s", p->series ? p->series : "");
    } else {
        addf(header, sizeof header, "%-12s", "# Size");
    }
    addf(row, sizeof row, "%-12lld", p->size);
    if (n == 1) {
        static const char *const names[] = {"Min", "Median", "P99", "Max"};
        const double values[] = {p->st.min, p->st.median, p->st.p99, p->st.max};
        snprintf(title, sizeof title, "%s(%s)", value_label(p), p->unit);
        addf(header, sizeof header, " %18s", title);
        addf(row, sizeof row, " %18.2f", p->value);
        for (int i = 0; i < 4; i++) {
            snprintf(title, sizeof title, "%s(%s)", names[i], p->unit);
            addf(header, sizeof header, " %16s", title);
            addf(row, sizeof row, " %16.2f", values[i]);
        }
        addf(header, sizeof header, " %10s %12s\n", "Samples", "Iterations");
        addf(row, sizeof row, " %10lld %12lld\n", p->st.n, p->iterations);
    } else {
        for (int i = 0; i < n; i++) {
            snprintf(title, sizeof title, "%s(%s)", value_label(&pts[i]), pts[i].unit);
            addf(header, sizeof header, " %20s", title);
            addf(row, sizeof row, " %20.2f", pts[i].value);
        }
        addf(header, sizeof header, " %12s\n", "Iterations");
        addf(row, sizeof row, " %12lld\n", p->iterations);
    }
    if (strcmp(header, ctx->table_header) != 0) {
        fb_output_text(header);
        snprintf(ctx->table_header, sizeof ctx->table_header, "%s", header);
    }
    fb_output_text(row);
}

/* ---- Records ----------------------------------------------------------------------- */

void fb_emit(fb_ctx *ctx, fb_point *pts, int n)
{
    if (ctx->opt.validate)
        fb_check_agree(ctx);
    if (ctx->rank == 0) {
        if (ctx->opt.format == FB_FORMAT_TABLE)
            write_table_row(ctx, pts, n);
        else
            for (int i = 0; i < n; i++)
                write_point_json(ctx, &pts[i]);
    }
    if (ctx->rank == 0)
        for (int i = 0; i < n; i++)
            fb_point_free(&pts[i]);
    ctx->points_done += n;
    if (ctx->opt.test_die_after >= 0 && ctx->points_done >= ctx->opt.test_die_after &&
        ctx->rank == ctx->np - 1) {
        fprintf(stderr, "fabricbench-mpi: test hook: rank %d kills itself after %lld points\n", ctx->rank,
                ctx->points_done);
        raise(SIGKILL);
    }
}

/* The effective options. The all-pairs check has its own (mode, size, repetitions,
 * retest) and takes none of the timing and pairing ones, so its record leaves those out;
 * the other benchmarks list the common set. */
static void options_json(fb_ctx *ctx, fb_json *j)
{
    const fb_options *o = &ctx->opt;
    const int allpairs = (ctx->bench->takes & FB_OPT_ALLPAIRS) != 0;
    fb_json_open(j, "options");
    fb_json_open_array(j, "sizes");
    for (int i = 0; i < ctx->nsizes; i++)
        fb_json_int(j, NULL, ctx->sizes[i]);
    fb_json_close_array(j);
    fb_json_int(j, "window", o->window);
    if (o->window_bytes > 0)
        fb_json_int(j, "max_window_bytes", o->window_bytes);
    if (o->warmup >= 0)
        fb_json_int(j, "warmup", o->warmup);
    else
        fb_json_str(j, "warmup", "auto");
    if (!allpairs) {
        if (o->iterations)
            fb_json_int(j, "iterations", o->iterations);
        else
            fb_json_null(j, "iterations");
        if (o->iterations)
            fb_json_null(j, "time_budget_s");
        else
            fb_json_num(j, "time_budget_s", o->time_budget);
        fb_json_int(j, "min_iterations", o->min_iterations);
        if (o->iterations)
            fb_json_null(j, "precision");
        else
            fb_json_num(j, "precision", o->precision);
    }
    fb_json_str(j, "cache", o->cache_cold ? "cold" : "warm");
    fb_json_int(j, "cache_pool_bytes", o->cache_pool);
    fb_json_bool(j, "validate", o->validate);
    if (allpairs) {
        fb_json_str(j, "mode", o->mode == FB_MODE_PAIRS ? "pairs" : "exchange");
        fb_json_int(j, "size", o->size);
        fb_json_int(j, "repetitions", o->repetitions);
        fb_json_int(j, "retest", o->retest);
    } else {
        fb_json_int(j, "seed", (long long)o->seed);
        if (o->pairs)
            fb_json_int(j, "pairs", o->pairs);
        else
            fb_json_null(j, "pairs");
        if (o->random_rings)
            fb_json_int(j, "random_rings", o->random_rings);
        else
            fb_json_null(j, "random_rings");
        fb_json_int(j, "root", o->root);
    }
    fb_json_str(j, "order", o->order_random ? "random" : "ascending");
    fb_json_str(j, "format", o->format == FB_FORMAT_TABLE ? "table" : "jsonl");
    if (o->inject_corruption >= 0)
        fb_json_int(j, "inject_corruption", o->inject_corruption);
    if (o->test_underestimate > 1.0)
        fb_json_num(j, "test_underestimate", o->test_underestimate);
    if (o->test_overestimate > 1.0)
        fb_json_num(j, "test_overestimate", o->test_overestimate);
    fb_json_close(j);
}

void fb_output_run(fb_ctx *ctx)
{
    if (ctx->opt.format == FB_FORMAT_TABLE) {
        char text[2048];
        snprintf(text, sizeof text,
                 "# fabricbench-mpi %s (v%s): %s\n"
                 "# %s; %d rank%s on %d host%s; MPI_Wtime resolution %.3g us\n"
                 "# Latency in microseconds; bandwidth in MB/s = 10^6 bytes/s\n",
                 ctx->bench->name, FB_VERSION, ctx->bench->summary, ctx->mpi_library, ctx->np,
                 ctx->np == 1 ? "" : "s", ctx->nhosts, ctx->nhosts == 1 ? "" : "s", ctx->timer_resolution_us);
        fb_output_text(text);
        return;
    }
    char started[32];
    time_t now = time(NULL);
    struct tm utc;
    gmtime_r(&now, &utc);
    strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", &utc);

    fb_json j;
    fb_record_begin(&j, "run");
    fb_json_str(&j, "tool", "fabricbench-mpi");
    fb_json_str(&j, "version", FB_VERSION);
    fb_json_str(&j, "benchmark", ctx->bench->name);
    fb_json_str(&j, "mpi_library", ctx->mpi_library);
    fb_json_str(&j, "mpi_version", ctx->mpi_version);
    fb_json_int(&j, "ranks", ctx->np);
    fb_json_open_array(&j, "hosts");
    for (int r = 0; r < ctx->np; r++)
        fb_json_str(&j, NULL, fb_host_of(ctx, r));
    fb_json_close_array(&j);
    fb_json_num(&j, "timer_resolution_us", ctx->wtick_us);
    fb_json_str(&j, "timer", "MPI_Wtime");
    fb_json_str(&j, "timer_resolution_source", "MPI_Wtick");
    fb_json_num(&j, "timer_measured_resolution_us", ctx->timer_resolution_us);
    fb_json_num(&j, "timer_overhead_us", ctx->timer_overhead_us);
    fb_json_int(&j, "points_planned", ctx->points_planned);
    options_json(ctx, &j);
    if (ctx->probe)
        fb_probe_json(ctx, ctx->probe, &j);
    fb_json_str(&j, "started", started);
    fb_record_write(&j);
}

void fb_output_end(fb_ctx *ctx)
{
    double elapsed = MPI_Wtime() - ctx->t_start;
    if (ctx->opt.format == FB_FORMAT_TABLE) {
        char text[128];
        snprintf(text, sizeof text, "# %lld points in %.2f s\n", ctx->points_done, elapsed);
        fb_output_text(text);
        return;
    }
    fb_json j;
    fb_record_begin(&j, "end");
    fb_json_str(&j, "status", "complete");
    fb_json_int(&j, "points", ctx->points_done);
    fb_json_num(&j, "elapsed_s", elapsed);
    fb_record_write(&j);
}
