/* Point-to-point calls that repeat their arguments, alternate them, move to a duplicated
 * communicator and to a datatype made after another was freed, for
 * tests/test_profiler_repeats.py (2 ranks: rank 0 sends, rank 1 receives the same). */
#include <mpi.h>

static char buf[4096];

static void xfer(int rank, int count, MPI_Datatype type, MPI_Comm comm)
{
    if (rank == 0)
        MPI_Send(buf, count, type, 1, 5, comm);
    else
        MPI_Recv(buf, count, type, 0, 5, comm, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
    int rank;
    MPI_Comm dup;
    MPI_Datatype t;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (int i = 0; i < 40; i++) /* 8 B, the same every time */
        xfer(rank, 8, MPI_BYTE, MPI_COMM_WORLD);
    for (int i = 0; i < 30; i++) /* 1 B and 2 B in turn */
        xfer(rank, 1 + (i & 1), MPI_BYTE, MPI_COMM_WORLD);
    for (int i = 0; i < 20; i++) /* 16 B on the duplicate */
        xfer(rank, 4, MPI_INT, dup);
    MPI_Type_contiguous(10, MPI_INT, &t); /* 40 B */
    MPI_Type_commit(&t);
    for (int i = 0; i < 10; i++)
        xfer(rank, 1, t, MPI_COMM_WORLD);
    MPI_Type_free(&t);
    MPI_Type_contiguous(25, MPI_INT, &t); /* 100 B, perhaps under the freed one's handle */
    MPI_Type_commit(&t);
    for (int i = 0; i < 10; i++)
        xfer(rank, 1, t, MPI_COMM_WORLD);
    MPI_Type_free(&t);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return 0;
}
