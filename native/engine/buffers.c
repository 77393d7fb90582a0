/* buffers.c - aligned, pre-touched buffers and cold-cache pools (see buffers.h). */
#include "buffers.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

void fb_buf_alloc(fb_buf *b, size_t max_region, int cold, size_t pool_bytes)
{
    size_t page = page_size();
    size_t region = round_up(max_region ? max_region : 1, page);
    size_t bytes = region;
    if (cold) {
        bytes = pool_bytes > 2 * region ? round_up(pool_bytes, page) : 2 * region;
    }
    void *mem = NULL;
    if (posix_memalign(&mem, page, bytes) != 0)
        fb_fatal("cannot allocate %zu bytes of message buffer", bytes);
    /* Touch every page now so page faults never land in a timed loop. */
    memset(mem, 1, bytes);
    b->base = mem;
    b->bytes = bytes;
    b->stride = region;
    b->nregions = cold ? bytes / region : 1;
}

void fb_buf_alloc_for(fb_buf *b, size_t max_region, const fb_options *opt)
{
    fb_buf_alloc(b, max_region, opt->cache_cold, (size_t)opt->cache_pool);
}

void fb_buf_use(fb_buf *b, size_t region)
{
    if (b->nregions <= 1)
        return;
    size_t page = page_size();
    b->stride = round_up(region ? region : 1, page);
    b->nregions = b->bytes / b->stride;
}

void fb_buf_free(fb_buf *b)
{
    free(b->base);
    memset(b, 0, sizeof *b);
}
