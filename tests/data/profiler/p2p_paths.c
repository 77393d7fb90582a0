/* The point-to-point wrappers' two paths: the fast one (MPI_COMM_WORLD, the thread's last
 * datatype) and the out-of-line one (another communicator, another datatype, a 0 count).
 * Exactly 2 ranks. A communicator split with the ranks reversed (its rank 0 is world rank 1),
 * then rank 0 sends to rank 1:
 *   3 x 1 MPI_INT on the reversed communicator (to its rank 0)          3 x 4 B
 *   MPI_INT, MPI_DOUBLE, MPI_INT, MPI_DOUBLE on MPI_COMM_WORLD          2 x 4 B, 2 x 8 B
 *   0 x MPI_INT on MPI_COMM_WORLD                                        0 B
 * Rank 1 receives each with the same count and datatype. So each rank's MPI_Send (rank 0)
 * or MPI_Recv (rank 1): size bin 3 (4 B) 5 calls 20 B, bin 4 (8 B) 2 calls 16 B, bin 0 one
 * call; the matrix: 0 -> 1, 8 messages, 36 B. */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, i, n[1] = {7};
    double d[1] = {1.5};
    MPI_Comm rev;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split(MPI_COMM_WORLD, 0, 1 - rank, &rev);
    for (i = 0; i < 3; i++) {
        if (rank == 0)
            MPI_Send(n, 1, MPI_INT, 0, i, rev);
        else
            MPI_Recv(n, 1, MPI_INT, 1, i, rev, MPI_STATUS_IGNORE);
    }
    for (i = 0; i < 4; i++) {
        MPI_Datatype t = i % 2 ? MPI_DOUBLE : MPI_INT;
        void *buf = i % 2 ? (void *)d : (void *)n;
        if (rank == 0)
            MPI_Send(buf, 1, t, 1, 10 + i, MPI_COMM_WORLD);
        else
            MPI_Recv(buf, 1, t, 0, 10 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (rank == 0)
        MPI_Send(n, 0, MPI_INT, 1, 20, MPI_COMM_WORLD);
    else
        MPI_Recv(n, 0, MPI_INT, 0, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Comm_free(&rev);
    MPI_Finalize();
    return 0;
}
