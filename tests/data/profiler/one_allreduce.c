/* The smallest profiled program: one MPI_Allreduce of one int on every rank. */
#include <mpi.h>

int main(int argc, char **argv)
{
    int one = 1, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return sum > 0 ? 0 : 1;
}
