/* Datatype sizes the profiler caches: rank 0 sends one message of a derived type of 2 ints
 * (8 B), frees the type while recording is off (MPI_Pcontrol(0)), makes a type of 4 ints
 * (16 B; MPI may give it the freed handle) and sends one message of it. The profile must
 * show one 8 B and one 16 B MPI_Send. Exactly 2 ranks. */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, buf[4] = {1, 2, 3, 4};
    MPI_Datatype t;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int ints = 2; ints <= 4; ints += 2) {
        MPI_Type_contiguous(ints, MPI_INT, &t);
        MPI_Type_commit(&t);
        if (rank == 0)
            MPI_Send(buf, 1, t, 1, ints, MPI_COMM_WORLD);
        else if (rank == 1)
            MPI_Recv(buf, 1, t, 0, ints, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Pcontrol(0);
        MPI_Type_free(&t);
        MPI_Pcontrol(1);
    }
    MPI_Finalize();
    return 0;
}
