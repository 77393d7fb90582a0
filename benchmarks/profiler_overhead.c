/* Cost of MPI calls as an application sees them; compiled and run by profiler_overhead.py
 * with and without libfabricbench-prof. Prints one JSON line from rank 0.
 *
 * usage: mpirun -np 2 profiler_overhead ITERATIONS_IPROBE ITERATIONS_PINGPONG REPETITIONS
 *
 * Every repetition times the same loop twice, with recording on (MPI_Pcontrol(1)) and off
 * (MPI_Pcontrol(0)), so the cost of recording is measured inside one process, side by side,
 * which other load on the machine disturbs far less than a comparison of two runs. Without
 * the library MPI_Pcontrol does nothing and the two figures are the same loop. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "pingpong.h"

static double iprobe_loop(long n)
{
    int flag;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < n; i++) /* never matches: the cheapest call that enters MPI's progress */
        MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    return (MPI_Wtime() - t0) / (double)n;
}

static double min2(double a, double b) { return a < b ? a : b; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4 || size < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np 2 profiler_overhead N_IPROBE N_PINGPONG REPS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long n_iprobe = atol(argv[1]), n_pp = atol(argv[2]);
    int reps = atoi(argv[3]);

    fb_pingpong_oneway(n_pp / 4 + 1, rank); /* warm-up */
    double ip_on = 1e30, ip_off = 1e30, pp_on = 1e30, pp_off = 1e30;
    for (int r = 0; r < reps; r++) {
        MPI_Pcontrol(1);
        ip_on = min2(ip_on, iprobe_loop(n_iprobe));
        pp_on = min2(pp_on, fb_pingpong_oneway(n_pp, rank));
        MPI_Pcontrol(0);
        ip_off = min2(ip_off, iprobe_loop(n_iprobe));
        pp_off = min2(pp_off, fb_pingpong_oneway(n_pp, rank));
    }
    MPI_Pcontrol(1);
    if (rank == 0)
        printf("{\"iprobe_on_ns\": %.3f, \"iprobe_off_ns\": %.3f, \"pingpong_on_us\": %.5f, \"pingpong_off_us\": %.5f}\n",
               ip_on * 1e9, ip_off * 1e9, pp_on * 1e6, pp_off * 1e6);
    MPI_Finalize();
    return 0;
}
