/* buffers.h - page-aligned message buffers, touched before any timing.
 *
 * Warm cache: one region, reused by every iteration. Cold cache: a large pool cut
 * into regions; iteration i uses region i mod count, so consecutive iterations
 * touch memory that has left the caches. */
#ifndef FB_BUFFERS_H
#define FB_BUFFERS_H

#include <stddef.h>
#include <stdint.h>

#include "options.h"

typedef struct {
    char *base;
    size_t bytes;       /* allocated */
    size_t stride;      /* distance between regions */
    uint64_t nregions;  /* 1 in warm mode */
} fb_buf;

/* Allocates room for regions of up to max_region bytes; pool_bytes applies to cold mode. */
void fb_buf_alloc(fb_buf *b, size_t max_region, int cold, size_t pool_bytes);
/* The same, warm or cold as the run's --cache and --cache-pool say. */
void fb_buf_alloc_for(fb_buf *b, size_t max_region, const fb_options *opt);
/* Sets the region size for the following iterations (<= max_region). */
void fb_buf_use(fb_buf *b, size_t region);
void fb_buf_free(fb_buf *b);

static inline char *fb_buf_at(const fb_buf *b, long long iteration)
{
    if (b->nregions <= 1)
        return b->base;
    return b->base + (size_t)((uint64_t)iteration % b->nregions) * b->stride;
}

#endif
