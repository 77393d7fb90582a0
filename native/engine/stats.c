/* stats.c - summary statistics over samples (see stats.h). */
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile_sorted(const double *s, long long n, double q)
{
    double pos = q * (double)(n - 1);
    long long lo = (long long)floor(pos);
    long long hi = lo + 1 < n ? lo + 1 : lo;
    double frac = pos - (double)lo;
    return s[lo] + (s[hi] - s[lo]) * frac;
}

int fb_median_ci_ranks(long long n, long long *lo, long long *hi)
{
    if (n < FB_CI_MIN_N)
        return -1;
    const double tail = (1.0 - FB_CI_LEVEL) / 2.0;
    long long j; /* the interval is the j-th smallest .. the j-th largest (1-based) */
    if (n <= 4096) {
        /* P(B <= k) summed from k = 0 up while it stays within the tail. */
        double cdf = 0.0, lnorm = -(double)n * log(2.0);
        j = 0;
        for (long long k = 0; k < n; k++) {
            double pmf = exp(lgamma((double)n + 1) - lgamma((double)k + 1) - lgamma((double)(n - k) + 1) + lnorm);
            if (cdf + pmf > tail)
                break;
            cdf += pmf;
            j = k + 1; /* P(B < j) = P(B <= k) <= tail */
        }
    } else {
        j = (long long)floor(0.5 * (double)n - 0.5 * 1.959963984540054 * sqrt((double)n));
    }
    if (j < 1)
        j = 1;
    *lo = j - 1;
    *hi = n - j;
    return 0;
}

static void swap_d(double *a, double *b)
{
    double t = *a;
    *a = *b;
    *b = t;
}

/* Moves the k-th smallest of a[0..n-1] to a[k], smaller ones before it, larger after. */
static void select_kth(double *a, long long n, long long k)
{
    long long left = 0, right = n - 1;
    while (right > left) {
        long long mid = left + (right - left) / 2;
        if (a[mid] < a[left])
            swap_d(&a[mid], &a[left]);
        if (a[right] < a[left])
            swap_d(&a[right], &a[left]);
        if (a[right] < a[mid])
            swap_d(&a[right], &a[mid]);
        double pivot = a[mid];
        long long i = left, j = right;
        while (i <= j) {
            while (a[i] < pivot)
                i++;
            while (a[j] > pivot)
                j--;
            if (i <= j) {
                swap_d(&a[i], &a[j]);
                i++;
                j--;
            }
        }
        if (k <= j)
            right = j;
        else if (k >= i)
            left = i;
        else
            return;
    }
}

static double largest(const double *a, long long n)
{
    double m = a[0];
    for (long long i = 1; i < n; i++)
        if (a[i] > m)
            m = a[i];
    return m;
}

double fb_median_precision(const double *x, long long n)
{
    long long lo, hi;
    if (fb_median_ci_ranks(n, &lo, &hi) != 0)
        return NAN;
    double *a = malloc((size_t)n * sizeof *a);
    if (!a) {
        fputs("fabricbench-mpi: error: out of memory computing statistics\n", stderr);
        abort();
    }
    memcpy(a, x, (size_t)n * sizeof *a);
    /* Each selection leaves a[0..k-1] <= a[k] <= a[k+1..]: later ones work on a part. */
    select_kth(a, n, hi);
    double upper = a[hi];
    long long m = n / 2;
    select_kth(a, hi, m); /* m < hi for n >= FB_CI_MIN_N */
    double mid_hi = a[m], mid_lo = n % 2 == 0 ? largest(a, m) : a[m];
    select_kth(a, m, lo);
    double lower = a[lo];
    free(a);
    double median = 0.5 * (mid_lo + mid_hi);
    if (median == 0.0)
        return NAN;
    double figure = (upper - lower) / 2.0 / fabs(median);
    /* The record may carry the reciprocals (a bandwidth or a rate from times): their median's
     * interval is [1/upper, 1/lower] around the mean of the middle reciprocals, a little wider
     * relative to its median when the interval is skewed. The larger figure holds for both. */
    if (lower > 0.0) {
        double rate = (upper - lower) / (upper * lower) / (1.0 / mid_lo + 1.0 / mid_hi);
        if (rate > figure)
            figure = rate;
    }
    return figure;
}

void fb_stats_compute(fb_stats *st, const double *x, long long n)
{
    memset(st, 0, sizeof *st);
    if (n <= 0)
        return;
    double *s = malloc((size_t)n * sizeof *s);
    if (!s) {
        fputs("fabricbench-mpi: error: out of memory computing statistics\n", stderr);
        abort();
    }
    memcpy(s, x, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);

    double sum = 0.0;
    for (long long i = 0; i < n; i++)
        sum += s[i];
    double mean = sum / (double)n;
    double ss = 0.0;
    for (long long i = 0; i < n; i++)
        ss += (s[i] - mean) * (s[i] - mean);

    for (int k = 0; k < FB_QUANTILES; k++)
        st->q[k] = percentile_sorted(s, n, (double)k / (FB_QUANTILES - 1));
    st->has_quantiles = 1;
    st->n = n;
    st->min = st->q[0];
    st->max = st->q[FB_QUANTILES - 1];
    st->mean = mean;
    st->median = st->q[50];
    st->p99 = st->q[99];
    st->stdev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
    long long lo, hi;
    if (fb_median_ci_ranks(n, &lo, &hi) == 0) {
        st->has_ci = 1;
        st->ci_lo = s[lo];
        st->ci_hi = s[hi];
        st->precision = st->median != 0.0 ? (st->ci_hi - st->ci_lo) / 2.0 / fabs(st->median) : NAN;
    }
    free(s);
}

double fb_median_finite(double *x, long long n)
{
    long long k = 0;
    for (long long i = 0; i < n; i++)
        if (isfinite(x[i]))
            x[k++] = x[i];
    if (k == 0)
        return NAN;
    qsort(x, (size_t)k, sizeof *x, cmp_double);
    return k % 2 ? x[k / 2] : 0.5 * (x[k / 2 - 1] + x[k / 2]);
}

double fb_geomean(const double *x, long long n)
{
    double logsum = 0.0;
    for (long long i = 0; i < n; i++)
        logsum += log(x[i]);
    return n > 0 ? exp(logsum / (double)n) : 0.0;
}

long long fb_argmin(const double *x, long long n)
{
    long long best = 0;
    for (long long i = 1; i < n; i++)
        if (x[i] < x[best])
            best = i;
    return best;
}

long long fb_argmax(const double *x, long long n)
{
    long long best = 0;
    for (long long i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}
