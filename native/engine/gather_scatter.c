/* gather_scatter.c - the rest of OSU's blocking collectives: gather, scatter and the
 * v-variants gatherv, scatterv, allgatherv, alltoallv, timed call by call as OSU times them
 * (a barrier between calls, not timed; every rank averages its own calls; the record
 * summarises the per-rank averages: value = mean over ranks, min and max with their rank).
 *
 * Size = bytes per rank block: what each rank sends to the root (gather, gatherv), receives
 * from it (scatter, scatterv), contributes (allgatherv) or sends to each destination
 * (alltoallv). The v-variants use equal counts and contiguous displacements (rank r's block
 * at r x size), as OSU's osu_gatherv, osu_scatterv, osu_allgatherv and osu_alltoallv do, so
 * they measure the v-interface on the same data as the plain call. */
#include <stdlib.h>
#include <string.h>

#include "buffers.h"
#include "check.h"
#include "coll_point.h"
#include "collectives.h"
#include "fabricbench.h"
#include "output.h"
#include "timing.h"

typedef struct {
    fb_ctx *ctx;
    enum gs kind;
    int size, root;
    int *counts, *displs; /* the v-variants' equal counts and contiguous displacements */
    fb_buf sbuf, rbuf;
} gs_state;

static void gs_fill_blocks(fb_ctx *ctx, char *buf, int size, long long i, int me, int np)
{
    for (int d = 0; d < np; d++)
        fb_fill(ctx, buf + (size_t)d * (size_t)size, (size_t)size, i, (long long)me * np + d);
}

static void gs_verify_blocks(fb_ctx *ctx, char *buf, int size, long long i, int me, int np, int from_all)
{
    for (int r = 0; r < np; r++)
        fb_verify(ctx, buf + (size_t)r * (size_t)size, (size_t)size, i,
                  from_all ? (long long)r * np + me : (long long)r, r);
}

static void gs_run(void *state, long long first, long long count)
{
    gs_state *s = state;
    fb_ctx *ctx = s->ctx;
    const int v = ctx->opt.validate, me = ctx->rank, np = ctx->np, n = s->size, root = s->root;
    const size_t bytes = (size_t)n;
    for (long long i = first; i < first + count; i++) {
        char *sb = fb_buf_at(&s->sbuf, i), *rb = fb_buf_at(&s->rbuf, i);
        switch (s->kind) {
        case GATHER:
        case GATHERV:
            if (v)
                fb_fill(ctx, sb, bytes, i, me);
            if (s->kind == GATHER)
                MPI_Gather(sb, n, MPI_CHAR, rb, n, MPI_CHAR, root, MPI_COMM_WORLD);
            else
                MPI_Gatherv(sb, n, MPI_CHAR, rb, s->counts, s->displs, MPI_CHAR, root, MPI_COMM_WORLD);
            if (v && me == root)
                gs_verify_blocks(ctx, rb, n, i, me, np, 0);
            break;
        case SCATTER:
        case SCATTERV:
            if (v && me == root)
                for (int d = 0; d < np; d++)
                    fb_fill(ctx, sb + (size_t)d * bytes, bytes, i, d);
            if (s->kind == SCATTER)
                MPI_Scatter(sb, n, MPI_CHAR, rb, n, MPI_CHAR, root, MPI_COMM_WORLD);
            else
                MPI_Scatterv(sb, s->counts, s->displs, MPI_CHAR, rb, n, MPI_CHAR, root, MPI_COMM_WORLD);
            if (v)
                fb_verify(ctx, rb, bytes, i, me, root);
            break;
        case ALLGATHERV:
            if (v)
                fb_fill(ctx, sb, bytes, i, me);
            MPI_Allgatherv(sb, n, MPI_CHAR, rb, s->counts, s->displs, MPI_CHAR, MPI_COMM_WORLD);
            if (v)
                gs_verify_blocks(ctx, rb, n, i, me, np, 0);
            break;
        case ALLTOALLV:
            if (v)
                gs_fill_blocks(ctx, sb, n, i, me, np);
            MPI_Alltoallv(sb, s->counts, s->displs, MPI_CHAR, rb, s->counts, s->displs, MPI_CHAR, MPI_COMM_WORLD);
            if (v)
                gs_verify_blocks(ctx, rb, n, i, me, np, 1);
            break;
        }
    }
}

/* Bytes of the send and receive regions for one size. */
static void gs_region(int kind, int np, long long size, size_t *send, size_t *recv)
{
    size_t one = (size_t)size, all = (size_t)size * (size_t)np;
    *send = kind == SCATTER || kind == SCATTERV || kind == ALLTOALLV ? all : one;
    *recv = kind == SCATTER || kind == SCATTERV ? one : all;
}

static void run_gs(fb_ctx *ctx, enum gs kind)
{
    gs_state s = {.ctx = ctx, .kind = kind, .root = ctx->opt.root};
    s.counts = fb_malloc((size_t)ctx->np * sizeof *s.counts);
    s.displs = fb_malloc((size_t)ctx->np * sizeof *s.displs);
    fb_coll_alloc(ctx, gs_region, kind, 1, &s.sbuf, &s.rbuf);
    const int rooted = kind == GATHER || kind == SCATTER || kind == GATHERV || kind == SCATTERV;

    for (int k = 0; k < ctx->nsizes; k++) {
        long long size = ctx->sizes[k];
        fb_coll_use(ctx, gs_region, kind, size, &s.sbuf, &s.rbuf);
        s.size = (int)size;
        for (int r = 0; r < ctx->np; r++) {
            s.counts[r] = s.size;
            s.displs[r] = r * s.size;
        }
        fb_kernel kern = {gs_run, fb_barrier_between, &s, 0, NULL};
        fb_coll_latency_point(ctx, &kern, size, rooted ? s.root : -1, 0, ctx->bench->size_meaning);
    }
    free(s.counts);
    free(s.displs);
    fb_buf_free(&s.sbuf);
    fb_buf_free(&s.rbuf);
}

void fb_run_gather_scatter(fb_ctx *ctx) { run_gs(ctx, (enum gs)ctx->bench->variant); }
