/* output.h - everything rank 0 writes to stdout: the run record, point records (as
 * JSON Lines or as a human table), rank_info records and the end record.
 *
 * Every line is built completely in memory and handed to the kernel in one write()
 * with termination signals held back, so a killed run leaves only whole lines. */
#ifndef FB_OUTPUT_H
#define FB_OUTPUT_H

#include "fabricbench.h"
#include "json.h"
#include "stats.h"

typedef struct {
    const char *metric;      /* latency, bandwidth, bibandwidth, message_rate, time */
    const char *unit;        /* us, MB/s, msg/s, s */
    const char *label;       /* table column title of the value; NULL: from the metric */
    const char *series_name; /* table column for a series (e.g. "Ordering"); NULL: none */
    const char *series;      /* the series value (e.g. "natural") */
    long long size;
    fb_stats st;
    double value;
    long long iterations;    /* 0: not reported */
    double precision_target; /* the --precision this point was measured to; 0: none (fb_point_plan) */
    fb_json params;          /* extra params members; size, ranks, cache, validate are added */
    fb_json detail;          /* detail members; omitted when empty */
} fb_point;

void fb_point_init(fb_point *p, const char *metric, const char *unit, long long size);
void fb_point_free(fb_point *p);

/* Collective, called by every rank once per measured row (one or more records of
 * the same size, e.g. bandwidth and message rate). Checks validation first, then
 * rank 0 writes the records and frees them (pts is used on rank 0 only). A record
 * whose statistics came from fb_stats_compute carries its sketch (detail.sketch) and the
 * median's confidence interval with the precision reached (detail.precision). */
void fb_emit(fb_ctx *ctx, fb_point *pts, int n);

void fb_output_run(fb_ctx *ctx);                    /* rank 0 */
/* Rank 0, JSON mode: a record is begun as {"record": kind, then written whole (and freed). */
void fb_record_begin(fb_json *j, const char *kind);
void fb_record_write(fb_json *j);
void fb_output_text(const char *text);              /* rank 0: raw text (table mode) */
void fb_output_end(fb_ctx *ctx);                    /* rank 0 */

#endif
