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
    int has_ci;               /* n >= FB_CI_MIN_N: ci_lo, ci_hi and precision are set */
    double ci_lo, ci_hi;      /* 95 % confidence interval of the median (order statistics) */
    double precision;         /* relative half-width: (ci_hi - ci_lo) / 2 / |median|; NAN if median is 0 */
    double q[FB_QUANTILES];   /* q[k]: the k % quantile; every entry the sample when n == 1 */
} fb_stats;

#define FB_CI_LEVEL 0.95
#define FB_CI_MIN_N 6 /* fewer samples have no 95 % interval of the median: 2 x 0.5^n > 0.05 */

/* Summarise x[0..n-1] (n >= 1). Percentiles and quantiles interpolate linearly between
 * the two closest ranks, as numpy.percentile does by default, so Python can reproduce
 * them; median is q[50], min q[0], max q[100], p99 q[99]. */
void fb_stats_compute(fb_stats *st, const double *x, long long n);

/* The order statistics that bound the median's 95 % confidence interval in n sorted samples:
 * the interval is [s[*lo], s[*hi]] (0-based, *hi = n - 1 - *lo), the widest j with
 * P(B < j) <= 2.5 % for B ~ Binomial(n, 1/2) (exact up to 4096 samples, the normal
 * approximation above). Distribution-free: it only assumes independent samples. Returns -1
 * when n < FB_CI_MIN_N. */
int fb_median_ci_ranks(long long n, long long *lo, long long *hi);

/* The stopping rule's figure: the relative half-width of the 95 % CI of the median of
 * x[0..n-1] (x is not changed; linear time, no sort), or of their reciprocals when that is
 * larger (a record of rates made from these times), so that a point stopped by the rule meets
 * the target in its record whichever it reports. NAN when n < FB_CI_MIN_N or the
 * median is 0. Benchmarks that schedule their samples themselves call this between
 * stretches of samples (fb_precision_reached in timing.h adds the run's target and floor). */
double fb_median_precision(const double *x, long long n);

/* Median of the finite values of x[0..n-1] (reorders x); NAN when there are none. */
double fb_median_finite(double *x, long long n);

/* Geometric mean of positive values (HPCC's average over random rings). */
double fb_geomean(const double *x, long long n);

/* Index of the smallest / largest element. */
long long fb_argmin(const double *x, long long n);
long long fb_argmax(const double *x, long long n);

#endif
