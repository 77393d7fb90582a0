/* Instructions and time per MPI call as an application sees them, with or without
 * libfabricbench-prof; compiled and run by profiler_instructions.py.
 *
 * usage: profiler_instructions count rank|sendrecv|dup N   (one rank, under valgrind
 *                                 --tool=callgrind: the loop is what callgrind collects)
 *        mpirun -np 2 profiler_instructions time N REPS   (prints one JSON line from rank 0)
 *
 * The loops are separate functions (never inlined) so that callgrind can count exactly
 * their instructions, MPI's and the profiler's included: fb_loop_comm_rank makes N calls of
 * MPI_Comm_rank, the cheapest MPI call there is; fb_loop_self_sendrecv makes N pairs of a
 * 1-byte MPI_Send to this rank and the MPI_Recv that matches it, which never wait, so the
 * count does not depend on timing; fb_loop_dup_sendrecv makes the same pairs on a duplicate
 * of MPI_COMM_WORLD (a communicator whose ranks the profiler translates to world ranks). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pingpong.h"

static int fb_me;             /* this rank, read once in main */
static MPI_Comm fb_dup;       /* MPI_Comm_dup(MPI_COMM_WORLD), made in main */

__attribute__((noinline)) void fb_loop_comm_rank(long n)
{
    int rank;
    for (long i = 0; i < n; i++)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
}

__attribute__((noinline)) void fb_loop_self_sendrecv(long n)
{
    char byte = 0;
    int me = fb_me;
    for (long i = 0; i < n; i++) {
        MPI_Send(&byte, 1, MPI_BYTE, me, 7, MPI_COMM_WORLD);
        MPI_Recv(&byte, 1, MPI_BYTE, me, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

__attribute__((noinline)) void fb_loop_dup_sendrecv(long n)
{
    char byte = 0;
    int me = fb_me;
    MPI_Comm comm = fb_dup;
    for (long i = 0; i < n; i++) {
        MPI_Send(&byte, 1, MPI_BYTE, me, 7, comm);
        MPI_Recv(&byte, 1, MPI_BYTE, me, 7, comm, MPI_STATUS_IGNORE);
    }
}

static double timed(void (*loop)(long), long n)
{
    double t0 = MPI_Wtime();
    loop(n);
    return (MPI_Wtime() - t0) / (double)n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    fb_me = rank;
    MPI_Comm_dup(MPI_COMM_WORLD, &fb_dup);
    long n = argc > 2 ? atol(argv[2]) : 0;
    if (argc > 3 && strcmp(argv[1], "count") == 0 && atol(argv[3]) > 0) {
        if (strcmp(argv[2], "rank") == 0)
            fb_loop_comm_rank(atol(argv[3]));
        else if (strcmp(argv[2], "dup") == 0)
            fb_loop_dup_sendrecv(atol(argv[3]));
        else
            fb_loop_self_sendrecv(atol(argv[3]));
    } else if (argc > 3 && strcmp(argv[1], "time") == 0 && n > 0 && size >= 2) {
        int reps = atoi(argv[3]);
        double rank_s = 1e30, self_s = 1e30, pp_s = 1e30, t;
        /* Short loops, many of them, the best kept: other work on the machine only adds time. */
        for (int r = 0; r < reps; r++) {
            if ((t = timed(fb_loop_comm_rank, n)) < rank_s) rank_s = t;
            if ((t = timed(fb_loop_self_sendrecv, n / 4 + 1) / 2.0) < self_s) self_s = t;
            if ((t = fb_pingpong_oneway(n / 20 + 1, rank)) < pp_s) pp_s = t;
        }
        if (rank == 0)
            printf("{\"comm_rank_ns\": %.3f, \"self_send_recv_ns\": %.3f, \"pingpong_oneway_ns\": %.3f}\n",
                   rank_s * 1e9, self_s * 1e9, pp_s * 1e9);
    } else {
        if (rank == 0)
            fprintf(stderr, "usage: profiler_instructions count rank|sendrecv|dup N | mpirun -np 2 profiler_instructions time N REPS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_free(&fb_dup);
    MPI_Finalize();
    return 0;
}
