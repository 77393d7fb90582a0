/* stats.h - the summary statistics every point record carries, and the fixed-size
 * sketch of the sample distribution (101 quantiles) that lets a later analysis compute
 * a confidence interval of the median or a rank test without every sample. */
#ifndef FB_STATS_H
#define FB_STATS_H

#define FB_QUANTILES 101 /* the 0 %, 1 %, ..., 100 % quantiles */

typedef struct {
    long long n;
    double min, median, mean, p99, max;
    double stdev; /* sample standard deviation (n - 1); 0 when n == 1 */
    int has_quantiles;        /* q was computed from samples (fb_stats_compute) */
    double q[FB_QUANTILES];   /* q[k]: the k % quantile; every entry the sample when n == 1 */
} fb_stats;

/* Summarise x[0..n-1] (n >= 1). Percentiles and quantiles interpolate linearly between
 * the two closest ranks, as numpy.percentile does by default, so Python can reproduce
 * them; median is q[50], min q[0], max q[100], p99 q[99]. */
void fb_stats_compute(fb_stats *st, const double *x, long long n);

/* Median of the finite values of x[0..n-1] (reorders x); NAN when there are none. */
double fb_median_finite(double *x, long long n);

/* Geometric mean of positive values (HPCC's average over random rings). */
double fb_geomean(const double *x, long long n);

/* Index of the smallest / largest element. */
long long fb_argmin(const double *x, long long n);
long long fb_argmax(const double *x, long long n);

#endif
