/* Four threads of rank 0 wait in MPI_Recv at the same time, for about a second, until
 * rank 1 sends each of them a message (MPI_THREAD_MULTIPLE). The calls' times add up to
 * four times the wait; the rank was inside MPI for one. tests/test_profiler.py checks
 * that the profile reports the rank's MPI time within its run time, and each thread's. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#define THREADS 4

static void *wait_for_rank_1(void *arg)
{
    int tag = (int)(long)arg, value = 0;
    MPI_Recv(&value, 1, MPI_INT, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = 0, rank = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "threads_wait: this MPI gives no MPI_THREAD_MULTIPLE\n");
        MPI_Abort(MPI_COMM_WORLD, 77);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        pthread_t t[THREADS];
        for (long i = 0; i < THREADS; i++)
            pthread_create(&t[i], NULL, wait_for_rank_1, (void *)i);
        for (int i = 0; i < THREADS; i++)
            pthread_join(t[i], NULL);
    } else if (rank == 1) {
        sleep(1);
        for (int i = 0; i < THREADS; i++)
            MPI_Send(&i, 1, MPI_INT, 0, i, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
