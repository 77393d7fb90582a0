/* fb_quiesce.c - leaving MPI without hanging under MPICH 4.0 over UCX 1.13's TCP transport.
 *
 * MPICH 4.0's UCX netmod, in MPI_Finalize, closes its endpoint to every rank, progresses
 * until the closes complete, and then waits in a PMI barrier that no longer progresses UCX.
 * Closing a TCP endpoint that sent data since the peer last acknowledged needs one more
 * acknowledgement from that peer. A rank whose endpoints need nothing from a late rank (it
 * sent that rank nothing, or the late rank acknowledged while still busy in MPI) finishes
 * its closes and stops reading its sockets; the late rank's close request to it then waits
 * forever (seen as 25 unread bytes in the early rank's receive queue, the late rank spinning
 * in ucp_worker_progress, the others blocked in read on the PMI socket).
 *
 * So, before MPI_Finalize: (1) a message each way between every pair, so every rank's close
 * to every peer needs that peer's answer and no rank can finish before all have started;
 * (2) a pause without MPI, so every rank has left that exchange (and stopped answering)
 * before the first close request arrives. A rank then sends its own close requests before
 * it answers any, on the same connection, so the peer reads them before it can finish.
 * PMPI_ names, so that the profiler does not count these calls as the application's. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#endif
#include "fb_quiesce.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int fb_quiesce_needed(void)
{
#ifdef MPICH_VERSION
    static char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    PMPI_Get_library_version(version, &len);
    return strstr(version, "ucx") != NULL;
#else
    return 0;
#endif
}

void fb_quiesce(void)
{
    /* A communicator of its own: no message of the application can match these. */
    MPI_Comm comm;
    PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
    int np = 1;
    PMPI_Comm_size(comm, &np);
    int *out = calloc((size_t)np, sizeof *out), *in = calloc((size_t)np, sizeof *in);
    MPI_Request *reqs = calloc(2 * (size_t)np, sizeof *reqs);
    if (out && in && reqs) {
        for (int peer = 0; peer < np; peer++) {
            PMPI_Irecv(&in[peer], 1, MPI_INT, peer, 0, comm, &reqs[2 * peer]);
            PMPI_Isend(&out[peer], 1, MPI_INT, peer, 0, comm, &reqs[2 * peer + 1]);
        }
        for (int i = 0; i < 2 * np; i++)  /* one by one: gcc 12 misreads MPICH's MPI_STATUSES_IGNORE */
            PMPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
    } else {
        PMPI_Barrier(comm);  /* no memory for the exchange: the weaker guard */
    }
    PMPI_Comm_free(&comm);
    free(out);
    free(in);
    free(reqs);
    struct timespec pause = {FB_QUIESCE_PAUSE_MS / 1000, (FB_QUIESCE_PAUSE_MS % 1000) * 1000000L};
    nanosleep(&pause, NULL);
}
