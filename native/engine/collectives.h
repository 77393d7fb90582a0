/* collectives.h - the calls of the collective families (collective.c, gather_scatter.c,
 * nbc.c): a benchmark's row in the table names its family's runner and its call (variant). */
#ifndef FB_COLLECTIVES_H
#define FB_COLLECTIVES_H

#include "fabricbench.h"

enum coll { BARRIER, BCAST, REDUCE, ALLREDUCE, ALLGATHER, ALLTOALL, REDUCE_SCATTER };
enum gs { GATHER, SCATTER, GATHERV, SCATTERV, ALLGATHERV, ALLTOALLV };
enum nbc { IALLREDUCE, IBCAST, IALLTOALL, IALLGATHER, IBARRIER };

/* Run the benchmark's call (ctx->bench->variant) of each family. */
void fb_run_collective(fb_ctx *ctx);
void fb_run_gather_scatter(fb_ctx *ctx);
void fb_run_nbc(fb_ctx *ctx);

#endif
