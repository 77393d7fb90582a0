/* stats.h - the summary statistics every point record carries. */
#ifndef FB_STATS_H
#define FB_STATS_H

typedef struct {
    long long n;
    double min, median, mean, p99, max;
    double stdev; /* sample standard deviation (n - 1); 0 when n == 1 */
} fb_stats;

/* Summarise x[0..n-1] (n >= 1). Percentiles interpolate linearly between the two
 * closest ranks, as numpy.percentile does by default, so Python can reproduce them. */
void fb_stats_compute(fb_stats *st, const double *x, long long n);

/* Geometric mean of positive values (HPCC's average over random rings). */
double fb_geomean(const double *x, long long n);

/* Index of the smallest / largest element. */
long long fb_argmin(const double *x, long long n);
long long fb_argmax(const double *x, long long n);

#endif
