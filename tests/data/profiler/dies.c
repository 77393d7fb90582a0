/* Rank 1 kills itself (SIGKILL) in the middle of a loop of collectives; the other ranks
 * are left waiting inside MPI_Allreduce. Used to check that the profiler never hangs a job
 * and that fabricbench reports why no profile was written. Built with -DNO_KILL it is a
 * plain loop of 20 MPI_Allreduce of one int. */
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, x = 1, y;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 20; i++) {
#ifndef NO_KILL
        if (rank == 1 && i == 5)
            raise(SIGKILL);
#endif
        MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        usleep(1000);
    }
    MPI_Finalize();
    return 0;
}
