/* Three phases with different call mixes, one after the other, for the change-point test
 * in tests/test_profiler_sites.py (2 ranks): 4 KiB MPI_Sendrecv, then 16 KiB MPI_Alltoall,
 * then 1 KiB MPI_Isend/MPI_Irecv completed by MPI_Waitall. Each runs about
 * PHASE_SECONDS, as rank 0 times it (the others follow its iteration count). */
#include <mpi.h>
#include <stdlib.h>

#define PHASE_SECONDS 0.4
static char sbuf[65536], rbuf[65536];

static void sendrecv(int peer)
{
    MPI_Sendrecv(sbuf, 4096, MPI_BYTE, peer, 1, rbuf, 4096, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static void alltoall(int peer)
{
    (void)peer;
    MPI_Alltoall(sbuf, 16384, MPI_BYTE, rbuf, 16384, MPI_BYTE, MPI_COMM_WORLD);
}

static void nonblocking(int peer)
{
    MPI_Request req[2];
    MPI_Irecv(rbuf, 1024, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(sbuf, 1024, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
}

/* Runs step in blocks of 20 until rank 0 has spent PHASE_SECONDS; one 1-int message per
 * block says whether to go on, so all ranks make the same calls. */
static void phase(void (*step)(int), int rank)
{
    double start = MPI_Wtime();
    int more = 1;
    while (more) {
        for (int i = 0; i < 20; i++)
            step(rank ^ 1);
        if (rank == 0) {
            more = MPI_Wtime() - start < PHASE_SECONDS;
            MPI_Send(&more, 1, MPI_INT, 1, 9, MPI_COMM_WORLD);
        } else {
            MPI_Recv(&more, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
}

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    phase(sendrecv, rank);
    phase(alltoall, rank);
    phase(nonblocking, rank);
    MPI_Finalize();
    return 0;
}
