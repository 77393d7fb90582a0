/* check.h - --validate: patterned send buffers, checked receive buffers, and the
 * --inject-corruption test hook that proves the checks work.
 *
 * A pattern depends on the message size, the iteration and a key (normally the
 * sending rank), so a stale, misplaced or corrupted message is caught. Warm-up
 * iterations use negative iteration numbers. The corruption hook acts on the chosen
 * rank from timed iteration 1 on: it flips one byte of every message it sends and
 * of every message it receives (before checking). */
#ifndef FB_CHECK_H
#define FB_CHECK_H

#include <stddef.h>

#include "fabricbench.h"

/* Bytes: fill a send buffer / check a received one (src = the sending rank, for the message). */
void fb_fill(fb_ctx *ctx, void *buf, size_t bytes, long long iter, long long key);
void fb_verify(fb_ctx *ctx, void *buf, size_t bytes, long long iter, long long key, int src);

/* Floats for reductions: element e of rank r holds ((offset + e + iter + r) mod 64),
 * small integers whose sums are exact; the check recomputes the sum over contributors. */
void fb_fill_floats(fb_ctx *ctx, float *buf, size_t count, long long iter, long long offset);
void fb_verify_float_sum(fb_ctx *ctx, float *buf, size_t count, long long iter, long long offset);

/* Collective: if any rank saw a mismatch, the lowest such rank prints its message and
 * every rank exits with status 3. Called once per point when validating. */
void fb_check_agree(fb_ctx *ctx);

#endif
