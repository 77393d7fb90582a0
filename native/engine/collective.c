/* collective.c - blocking collectives, timed call by call as OSU times them.
 *
 * Every rank times each call (a barrier separates calls and is not timed). The record's
 * distribution is over calls: a call's time is the longest any rank spent in it (the
 * maximum over ranks, call by call, IMB's t_max per call), so n = calls and the median,
 * p99 and the median's CI exist as for point-to-point. `value` stays OSU's figure: the
 * mean over ranks of each rank's average call time (OSU's "Avg Latency"), with the
 * smallest and largest rank average (OSU's Min and Max) in detail.rank_average_min/max.
 *
 * Sizes are bytes per rank: the bytes broadcast (bcast), each rank's vector
 * (reduce, allreduce), each rank's contribution (allgather), each per-destination
 * block (alltoall), each rank's result block (reduce_scatter). Reductions sum
 * MPI_FLOAT, so their sizes are multiples of 4 bytes. */
#include <stdlib.h>
#include <string.h>

#include "buffers.h"
#include "check.h"
#include "coll_point.h"
#include "collectives.h"
#include "fabricbench.h"
#include "output.h"
#include "stats.h"
#include "timing.h"

typedef struct {
    fb_ctx *ctx;
    enum coll kind;
    int size;   /* bytes per rank */
    int count;  /* floats per rank, for reductions */
    int root;
    fb_buf sbuf, rbuf;
} coll_state;

static void coll_run(void *state, long long first, long long count)
{
    coll_state *s = state;
    fb_ctx *ctx = s->ctx;
    const int v = ctx->opt.validate, me = ctx->rank, np = ctx->np;
    const size_t bytes = (size_t)s->size;
    for (long long i = first; i < first + count; i++) {
        char *sb = fb_buf_at(&s->sbuf, i), *rb = fb_buf_at(&s->rbuf, i);
        switch (s->kind) {
        case BARRIER:
            MPI_Barrier(MPI_COMM_WORLD);
            break;
        case BCAST:
            if (v && me == s->root)
                fb_fill(ctx, sb, bytes, i, s->root);
            MPI_Bcast(sb, s->size, MPI_CHAR, s->root, MPI_COMM_WORLD);
            if (v && me != s->root)
                fb_verify(ctx, sb, bytes, i, s->root, s->root);
            break;
        case REDUCE:
            if (v)
                fb_fill_floats(ctx, (float *)sb, (size_t)s->count, i, 0);
            MPI_Reduce(sb, rb, s->count, MPI_FLOAT, MPI_SUM, s->root, MPI_COMM_WORLD);
            if (v && me == s->root)
                fb_verify_float_sum(ctx, (float *)rb, (size_t)s->count, i, 0);
            break;
        case ALLREDUCE:
            if (v)
                fb_fill_floats(ctx, (float *)sb, (size_t)s->count, i, 0);
            MPI_Allreduce(sb, rb, s->count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            if (v)
                fb_verify_float_sum(ctx, (float *)rb, (size_t)s->count, i, 0);
            break;
        case ALLGATHER:
            if (v)
                fb_fill(ctx, sb, bytes, i, me);
            MPI_Allgather(sb, s->size, MPI_CHAR, rb, s->size, MPI_CHAR, MPI_COMM_WORLD);
            if (v)
                for (int r = 0; r < np; r++)
                    fb_verify(ctx, rb + (size_t)r * bytes, bytes, i, r, r);
            break;
        case ALLTOALL:
            if (v)
                for (int d = 0; d < np; d++)
                    fb_fill(ctx, sb + (size_t)d * bytes, bytes, i, (long long)me * np + d);
            MPI_Alltoall(sb, s->size, MPI_CHAR, rb, s->size, MPI_CHAR, MPI_COMM_WORLD);
            if (v)
                for (int r = 0; r < np; r++)
                    fb_verify(ctx, rb + (size_t)r * bytes, bytes, i, (long long)r * np + me, r);
            break;
        case REDUCE_SCATTER:
            if (v)
                fb_fill_floats(ctx, (float *)sb, (size_t)s->count * (size_t)np, i, 0);
            MPI_Reduce_scatter_block(sb, rb, s->count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            if (v)
                fb_verify_float_sum(ctx, (float *)rb, (size_t)s->count, i, (long long)me * s->count);
            break;
        }
    }
}

/* Bytes per iteration region of the send and receive buffers for a size. */
static void region_bytes(int kind, int np, long long size, size_t *send, size_t *recv)
{
    size_t one = (size_t)size, all = (size_t)size * (size_t)np;
    *send = *recv = one;
    if (kind == ALLGATHER)
        *recv = all;
    else if (kind == ALLTOALL)
        *send = *recv = all;
    else if (kind == REDUCE_SCATTER)
        *send = all;
}

static void run_collective(fb_ctx *ctx, enum coll kind)
{
    coll_state s = {.ctx = ctx, .kind = kind, .root = ctx->opt.root};

    fb_coll_alloc(ctx, region_bytes, kind, 0, &s.sbuf, &s.rbuf);
    const int rooted = kind == BCAST || kind == REDUCE;
    const int reduction = kind == REDUCE || kind == ALLREDUCE || kind == REDUCE_SCATTER;

    for (int k = 0; k < ctx->nsizes; k++) {
        long long size = ctx->sizes[k];
        fb_coll_use(ctx, region_bytes, kind, size, &s.sbuf, &s.rbuf);
        s.size = (int)size;
        s.count = (int)(size / (long long)sizeof(float));
        fb_kernel kern = {coll_run, kind == BARRIER ? NULL : fb_barrier_between, &s, 0, NULL};
        fb_coll_latency_point(ctx, &kern, size, rooted ? s.root : -1, reduction, ctx->bench->size_meaning);
    }
    fb_buf_free(&s.sbuf);
    fb_buf_free(&s.rbuf);
}

void fb_run_collective(fb_ctx *ctx) { run_collective(ctx, (enum coll)ctx->bench->variant); }
