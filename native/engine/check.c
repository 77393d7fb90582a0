/* check.c - data validation and the corruption test hook (see check.h). */
#include "check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint32_t pattern_seed(size_t bytes, long long iter, long long key)
{
    uint64_t h = (uint64_t)bytes * 0x9e3779b97f4a7c15ULL;
    h ^= (uint64_t)iter + 0x632be59bd9b4e019ULL + (h << 6) + (h >> 2);
    h ^= (uint64_t)key * 0xc2b2ae3d27d4eb4fULL + (h << 6) + (h >> 2);
    h ^= h >> 29;
    return (uint32_t)h;
}

static inline unsigned char pattern_byte(uint32_t seed, size_t j)
{
    return (unsigned char)(seed + j + (j >> 8) * 7u);
}

static int corrupting(const fb_ctx *ctx, long long iter, size_t bytes)
{
    return ctx->opt.inject_corruption == ctx->rank && iter >= 1 && bytes > 0;
}

static void record_failure(fb_ctx *ctx, long long iter, size_t offset, const char *expected, const char *got,
                           int src, const char *what)
{
    if (ctx->check.failed)
        return;
    ctx->check.failed = 1;
    char from[48] = "";
    if (src >= 0)
        snprintf(from, sizeof from, " from rank %d", src);
    snprintf(ctx->check.message, sizeof ctx->check.message,
             "fabricbench-mpi: validation failed: benchmark %s, size %lld bytes: rank %d received corrupt %s%s "
             "at iteration %lld, byte offset %zu (expected %s, got %s)\n",
             ctx->bench->name, ctx->check.size, ctx->rank, what, from, iter, offset, expected, got);
}

void fb_fill(fb_ctx *ctx, void *buf, size_t bytes, long long iter, long long key)
{
    unsigned char *p = buf;
    uint32_t seed = pattern_seed(bytes, iter, key);
    for (size_t j = 0; j < bytes; j++)
        p[j] = pattern_byte(seed, j);
    if (corrupting(ctx, iter, bytes))
        p[bytes / 2] ^= 0xff;
}

void fb_verify(fb_ctx *ctx, void *buf, size_t bytes, long long iter, long long key, int src)
{
    unsigned char *p = buf;
    if (corrupting(ctx, iter, bytes))
        p[bytes / 2] ^= 0xff;
    uint32_t seed = pattern_seed(bytes, iter, key);
    for (size_t j = 0; j < bytes; j++) {
        if (p[j] != pattern_byte(seed, j)) {
            char expected[8], got[8];
            snprintf(expected, sizeof expected, "0x%02x", pattern_byte(seed, j));
            snprintf(got, sizeof got, "0x%02x", p[j]);
            record_failure(ctx, iter, j, expected, got, src, "data");
            return;
        }
    }
}

static inline float float_term(long long index, long long iter, int rank)
{
    return (float)((uint64_t)(index + iter + rank) & 63u);
}

void fb_fill_floats(fb_ctx *ctx, float *buf, size_t count, long long iter, long long offset)
{
    for (size_t e = 0; e < count; e++)
        buf[e] = float_term(offset + (long long)e, iter, ctx->rank);
    if (corrupting(ctx, iter, count * sizeof(float)))
        ((unsigned char *)buf)[count * sizeof(float) / 2] ^= 0xff;
}

void fb_verify_float_sum(fb_ctx *ctx, float *buf, size_t count, long long iter, long long offset)
{
    if (corrupting(ctx, iter, count * sizeof(float)))
        ((unsigned char *)buf)[count * sizeof(float) / 2] ^= 0xff;
    for (size_t e = 0; e < count; e++) {
        float expected = 0.0f;
        for (int r = 0; r < ctx->np; r++)
            expected += float_term(offset + (long long)e, iter, r);
        if (!(buf[e] == expected)) {
            char want[32], got[32];
            snprintf(want, sizeof want, "%g", (double)expected);
            snprintf(got, sizeof got, "%g", (double)buf[e]);
            record_failure(ctx, iter, e * sizeof(float), want, got, -1, "reduction result (float sum)");
            return;
        }
    }
}

void fb_check_agree(fb_ctx *ctx)
{
    int mine = ctx->check.failed ? ctx->rank : ctx->np;
    int first;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == ctx->np)
        return;
    if (ctx->rank == first) {
        fputs(ctx->check.message, stderr);
        fflush(stderr);
    }
    /* Everyone is here, so a clean shutdown cannot hang. */
    fb_finalize();
    exit(FB_EXIT_VALIDATION);
}
