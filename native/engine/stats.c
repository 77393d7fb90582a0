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
