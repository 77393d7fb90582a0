/* probe.c - the host probe (see probe.h). */
#include "probe.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "stats.h"
#include "timing.h"

#define LOOP_STEPS (1 << 17)   /* about 0.2 ms of dependent multiplies on a 3 GHz core */
#define LOOP_REPS 11
#define TRIPS 1000             /* cache-line round trips per repetition */
#define TRIP_REPS 7
#define TRIP_TIMEOUT_S 0.2     /* a repetition this slow: the two ranks did not run together */
#define LINE 64

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The median time of the integer chain (fb_int_chain): the core's clock and whatever
 * shares the core. */
static double loop_us(void)
{
    double t[LOOP_REPS];
    for (int r = 0; r < LOOP_REPS; r++) {
        double t0 = now_s();
        fb_int_chain(LOOP_STEPS);
        t[r] = 1e6 * (now_s() - t0);
    }
    return fb_median_finite(t, LOOP_REPS);
}

/* One side of the round trips on the shared line: `first` writes odd turns and waits for
 * the even ones. Returns the median microseconds per round trip, or -1 after a timeout
 * (seen by both sides through `abort_flag`). */
static double round_trips(atomic_uint *turn, atomic_uint *abort_flag, int first, MPI_Comm comm)
{
    double t[TRIP_REPS];
    unsigned v = 0;
    int timed_out = 0;
    for (int r = 0; r < TRIP_REPS; r++) {
        MPI_Barrier(comm);
        double t0 = now_s();
        for (int i = 0; i < TRIPS && !timed_out; i++) {
            unsigned mine = v + (first ? 1u : 2u), theirs = v + (first ? 2u : 1u);
            if (first)
                atomic_store_explicit(turn, mine, memory_order_release);
            for (unsigned spins = 0; atomic_load_explicit(turn, memory_order_acquire) != theirs; spins++) {
                if (atomic_load_explicit(abort_flag, memory_order_relaxed)) {
                    timed_out = 1;
                    break;
                }
                if ((spins & 4095u) == 4095u && now_s() - t0 > TRIP_TIMEOUT_S) {
                    atomic_store_explicit(abort_flag, 1u, memory_order_relaxed);
                    timed_out = 1;
                    break;
                }
            }
            if (!first && !timed_out)
                atomic_store_explicit(turn, mine, memory_order_release);
            v += 2;
        }
        t[r] = 1e6 * (now_s() - t0) / TRIPS;
        if (timed_out)
            return -1.0;
    }
    return fb_median_finite(t, TRIP_REPS);
}

/* Non-participants of a node's window still take part in its barriers. */
static void idle_barriers(MPI_Comm comm)
{
    for (int r = 0; r < TRIP_REPS; r++)
        MPI_Barrier(comm);
}

/* The round trip between node ranks 0 and 1 of the lowest world rank's node that has two
 * ranks; -1 with a reason when there is none or it could not be measured. */
static double core_to_core(fb_ctx *ctx, fb_probe *probe)
{
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int nrank = 0, nsize = 1;
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nsize);
    int leader = ctx->rank;  /* the world rank of this node's rank 0 */
    MPI_Bcast(&leader, 1, MPI_INT, 0, node);
    int candidate = nsize >= 2 ? leader : ctx->np, chosen = ctx->np;
    MPI_Allreduce(&candidate, &chosen, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    int crowded = fb_ranks_outnumber_cores(ctx);
    if (chosen == ctx->np || crowded) {
        probe->c2c_skipped = crowded ? "ranks outnumber the cores of a node" : "no two ranks share a node";
        MPI_Comm_free(&node);
        return -1.0;
    }
    MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
    char *base = NULL;
    MPI_Win win;
    int rc = MPI_Win_allocate_shared(nrank == 0 ? 4 * LINE : 0, 1, MPI_INFO_NULL, node, &base, &win);
    int ok = rc == MPI_SUCCESS, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    double us = -1.0;
    if (all_ok) {
        MPI_Aint bytes;
        int unit;
        char *line = NULL;
        MPI_Win_shared_query(win, 0, &bytes, &unit, &line);
        atomic_uint *turn = (atomic_uint *)(void *)line, *abort_flag = (atomic_uint *)(void *)(line + 2 * LINE);
        if (nrank == 0) {
            atomic_init(turn, 0u);
            atomic_init(abort_flag, 0u);
        }
        MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
        MPI_Win_sync(win);
        MPI_Barrier(node);
        MPI_Win_sync(win);
        if (leader == chosen && nrank < 2)
            us = round_trips(turn, abort_flag, nrank == 0, node);
        else
            idle_barriers(node);
        MPI_Win_unlock_all(win);
        MPI_Win_free(&win);
    } else if (ok) {
        MPI_Win_free(&win);
    }
    MPI_Comm_free(&node);
    double found = leader == chosen && nrank == 0 ? us : -2.0, best = -2.0;
    MPI_Allreduce(&found, &best, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int pair[2] = {chosen, -1}, second = leader == chosen && nrank == 1 ? ctx->rank : -1;
    MPI_Allreduce(&second, &pair[1], 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    probe->c2c_ranks[0] = pair[0];
    probe->c2c_ranks[1] = pair[1];
    if (!all_ok)
        probe->c2c_skipped = "the MPI library gave no shared-memory window";
    else if (best < 0)
        probe->c2c_skipped = "the two ranks did not run at the same time";
    return best < 0 ? -1.0 : best;
}

void fb_probe_host(fb_ctx *ctx, fb_probe *probe)
{
    probe->loop_us = ctx->rank == 0 ? fb_calloc((size_t)ctx->np, sizeof(double)) : NULL;
    probe->c2c_skipped = NULL;
    probe->c2c_ranks[0] = probe->c2c_ranks[1] = -1;
    double mine = loop_us();
    MPI_Gather(&mine, 1, MPI_DOUBLE, probe->loop_us, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    probe->c2c_us = core_to_core(ctx, probe);
}

void fb_probe_json(const fb_ctx *ctx, const fb_probe *probe, fb_json *j)
{
    fb_json_open(j, "host_probe");
    fb_json_open_array(j, "loop_us");
    for (int r = 0; r < ctx->np; r++)
        fb_json_num(j, NULL, probe->loop_us[r]);
    fb_json_close_array(j);
    if (probe->c2c_us >= 0) {
        fb_json_num(j, "c2c_us", probe->c2c_us);
        fb_json_open_array(j, "c2c_ranks");
        fb_json_int(j, NULL, probe->c2c_ranks[0]);
        fb_json_int(j, NULL, probe->c2c_ranks[1]);
        fb_json_close_array(j);
    } else {
        fb_json_null(j, "c2c_us");
        fb_json_str(j, "c2c_skipped", probe->c2c_skipped ? probe->c2c_skipped : "not measured");
    }
    fb_json_close(j);
}

void fb_probe_free(fb_probe *probe)
{
    free(probe->loop_us);
    probe->loop_us = NULL;
}
