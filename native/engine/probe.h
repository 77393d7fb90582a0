/* probe.h - the host probe: a few milliseconds at the start of every launch that measure
 * the host itself, not the fabric, so that `compare` can tell a host that changed state
 * between two runs (CPU clock, where the hypervisor put the virtual CPUs) from a change of
 * the fabric. Two figures: the time of a fixed dependent chain of integer operations on
 * every rank (the core's speed), and the round trip of one cache line between the first
 * two ranks that share a node, through a shared-memory window and C11 atomics (what two
 * cores pay to talk, whatever the MPI library's transport). */
#ifndef FB_PROBE_H
#define FB_PROBE_H

#include "fabricbench.h"
#include "json.h"

typedef struct fb_probe {
    double *loop_us;   /* rank 0: np loop times (microseconds), by rank */
    double c2c_us;     /* cache-line round trip (microseconds); < 0 when not measured */
    int c2c_ranks[2];  /* the world ranks of that round trip */
    const char *c2c_skipped; /* why there is no round trip, or NULL */
} fb_probe;

/* Collective: every rank measures; rank 0 gathers the figures. */
void fb_probe_host(fb_ctx *ctx, fb_probe *probe);

/* Rank 0: the probe as the run record's "host_probe" object. */
void fb_probe_json(const fb_ctx *ctx, const fb_probe *probe, fb_json *j);

void fb_probe_free(fb_probe *probe);

#endif
