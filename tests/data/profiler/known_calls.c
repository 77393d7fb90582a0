/* MPI calls with known counts, sizes and peers for tests/test_profiler.py (exactly 4 ranks).
 * Every figure the test expects is derived in the comment above the code that makes it. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4) {
        if (rank == 0)
            fprintf(stderr, "known_calls needs exactly 4 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int right = (rank + 1) % 4, left = (rank + 3) % 4;
    double d[100] = {0};

    /* 1. Blocking: rank 0 sends 5 x 100 doubles (800 B) to rank 1. */
    for (int i = 0; i < 5; i++) {
        if (rank == 0)
            MPI_Send(d, 100, MPI_DOUBLE, 1, 10, MPI_COMM_WORLD);
        else if (rank == 1)
            MPI_Recv(d, 100, MPI_DOUBLE, 0, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }

    /* 2. Non-blocking ring: 3 x 16 ints (64 B) to the right, one MPI_Waitall. */
    int sring[3][16] = {{0}}, rring[3][16];
    MPI_Request req[6];
    for (int i = 0; i < 3; i++)
        MPI_Irecv(rring[i], 16, MPI_INT, left, 20 + i, MPI_COMM_WORLD, &req[i]);
    for (int i = 0; i < 3; i++)
        MPI_Isend(sring[i], 16, MPI_INT, right, 20 + i, MPI_COMM_WORLD, &req[3 + i]);
    MPI_Waitall(6, req, MPI_STATUSES_IGNORE);

    /* 3. Sendrecv with rank ^ 1: 32 doubles (256 B) each way. */
    double sr[32] = {0}, rr[32];
    MPI_Sendrecv(sr, 32, MPI_DOUBLE, rank ^ 1, 30, rr, 32, MPI_DOUBLE, rank ^ 1, 30, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);

    /* 4. Sub-communicators {0,2} and {1,3}: an Ssend of 1 int (4 B) from sub-rank 0 to
     *    sub-rank 1 (world 0->2, 1->3), then 2 x Alltoall of 2048 ints (8 KiB) per destination. */
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &sub);
    int subrank, one = 1;
    MPI_Comm_rank(sub, &subrank);
    if (subrank == 0)
        MPI_Ssend(&one, 1, MPI_INT, 1, 35, sub);
    else
        MPI_Recv(&one, 1, MPI_INT, 0, 35, sub, MPI_STATUS_IGNORE);
    int *a2a_s = calloc(2 * 2048, sizeof(int)), *a2a_r = calloc(2 * 2048, sizeof(int));
    for (int i = 0; i < 2; i++)
        MPI_Alltoall(a2a_s, 2048, MPI_INT, a2a_r, 2048, MPI_INT, sub);
    MPI_Comm_free(&sub);

    /* 5. Bcast of 1 double (8 B) from world rank 2; Allreduce of 1 int (4 B). */
    MPI_Bcast(d, 1, MPI_DOUBLE, 2, MPI_COMM_WORLD);
    int x = rank, y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

    /* 6. Persistent: rank 2 -> rank 3, 4 starts of 32 ints (128 B). */
    int pbuf[32] = {0};
    MPI_Request preq;
    if (rank == 2 || rank == 3) {
        if (rank == 2)
            MPI_Send_init(pbuf, 32, MPI_INT, 3, 40, MPI_COMM_WORLD, &preq);
        else
            MPI_Recv_init(pbuf, 32, MPI_INT, 2, 40, MPI_COMM_WORLD, &preq);
        for (int i = 0; i < 4; i++) {
            MPI_Start(&preq);
            MPI_Wait(&preq, MPI_STATUS_IGNORE);
        }
        MPI_Request_free(&preq);
    }

    /* 7. One-sided: put 4 ints (16 B) into the right neighbour, get 2 ints (8 B) from the left. */
    int winbuf[8] = {0}, put4[4] = {1, 2, 3, 4}, get2[2];
    MPI_Win win;
    MPI_Win_create(winbuf, sizeof winbuf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    MPI_Put(put4, 4, MPI_INT, right, 0, 4, MPI_INT, win);
    MPI_Win_fence(0, win);
    MPI_Get(get2, 2, MPI_INT, left, 4, 2, MPI_INT, win);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);

    /* 8. Nothing between MPI_Pcontrol(0) and MPI_Pcontrol(1) is recorded. */
    MPI_Pcontrol(0);
    for (int i = 0; i < 5; i++)
        MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        MPI_Send(d, 1, MPI_DOUBLE, 1, 50, MPI_COMM_WORLD);
    else if (rank == 1)
        MPI_Recv(d, 1, MPI_DOUBLE, 0, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Pcontrol(1);
    MPI_Barrier(MPI_COMM_WORLD);

    /* 9. A send to MPI_PROC_NULL (1 double, 8 B) is counted but has no peer. */
    MPI_Send(d, 1, MPI_DOUBLE, MPI_PROC_NULL, 60, MPI_COMM_WORLD);

    free(a2a_s);
    free(a2a_r);
    MPI_Finalize();
    return 0;
}
