/* Two ranks, four threads each inside MPI at the same time (MPI_THREAD_MULTIPLE): on each
 * rank, thread i receives, ROUNDS times, a message that thread i of the other rank sends
 * after a short sleep, then sends one back. So about four receives wait at once on each
 * rank: their times add up to about four times the time the rank was inside MPI.
 * tests/test_profiler_targets.py checks that no call's share of MPI time or of wall time
 * exceeds 100% (the issue: "MPI_Recv 336% of MPI time (225% of wall time)"). */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define THREADS 4
#define ROUNDS 5

static int peer;

static void nap(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static void *talk(void *arg)
{
    int tag = (int)(long)arg, value = 0, rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int r = 0; r < ROUNDS; r++) {
        if (rank == 0) { /* waits in MPI_Recv while rank 1's thread naps */
            MPI_Recv(&value, 1, MPI_INT, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&value, 1, MPI_INT, peer, tag, MPI_COMM_WORLD);
        } else {
            nap(40);
            MPI_Send(&value, 1, MPI_INT, peer, tag, MPI_COMM_WORLD);
            MPI_Recv(&value, 1, MPI_INT, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = 0, rank = 0, size = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE || size != 2) {
        if (rank == 0)
            fprintf(stderr, "threads_share: needs MPI_THREAD_MULTIPLE and exactly 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 77);
    }
    peer = 1 - rank;
    MPI_Barrier(MPI_COMM_WORLD);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, talk, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
