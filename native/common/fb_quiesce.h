/* fb_quiesce.h - what the engine and the profiler do right before MPI_Finalize so that
 * MPICH over UCX's TCP transport cannot hang in it (see fb_quiesce.c). */
#ifndef FB_QUIESCE_H
#define FB_QUIESCE_H

/* Milliseconds every rank waits, touching no MPI, between the last exchange and MPI_Finalize. */
#define FB_QUIESCE_PAUSE_MS 100

/* Whether this MPI's MPI_Finalize needs fb_quiesce: MPICH (its ABI family) over UCX. */
int fb_quiesce_needed(void);

/* Collective over MPI_COMM_WORLD, called by every rank right before MPI_Finalize when
 * fb_quiesce_needed(): one message each way between every pair of ranks, then the pause. */
void fb_quiesce(void);

#endif
