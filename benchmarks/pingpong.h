/* pingpong.h - the 1-byte ping-pong between ranks 0 and 1 that the profiler benchmarks
 * (profiler_instructions.c, profiler_overhead.c) time; other ranks only join the barrier. */
#ifndef FB_BENCH_PINGPONG_H
#define FB_BENCH_PINGPONG_H

#include <mpi.h>

/* n round trips of one byte; returns the one-way time in seconds (round trip / 2). */
static inline double fb_pingpong_oneway(long n, int rank)
{
    char byte = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < n && rank < 2; i++) {
        if (rank == 0) {
            MPI_Send(&byte, 1, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(&byte, 1, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&byte, 1, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&byte, 1, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) / (2.0 * (double)n);
}

#endif
