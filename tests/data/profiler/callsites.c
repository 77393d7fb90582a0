/* Call sites, Pcontrol marks, calls before MPI_Init and from a second thread, for
 * tests/test_profiler_sites.py (2 ranks; compile with -g). The test finds each site's line
 * by the "site:" comment on it, so keep one MPI call per marked line. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>

enum { HALO = 300, SUMS = 200, CONFIGS = 100 };
static double field[512], ghost[512];

__attribute__((noinline)) static void halo_exchange(int peer)
{
    MPI_Sendrecv(field, 512, MPI_DOUBLE, peer, 1, ghost, 512, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* site: halo_exchange */
}

__attribute__((noinline)) static double global_sum(double x)
{
    double sum = 0;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* site: global_sum */
    return sum;
}

__attribute__((noinline)) static void share_config(int *config)
{
    MPI_Bcast(config, 4, MPI_INT, 0, MPI_COMM_WORLD); /* site: share_config */
}

static void *helper(void *arg)
{
    int rank;
    (void)arg;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank); /* from a second thread under MPI_THREAD_FUNNELED */
    return NULL;
}

int main(int argc, char **argv)
{
    int flag, provided, rank, config[4] = {1, 2, 3, 4};
    MPI_Initialized(&flag); /* before MPI_Init: counted apart */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    pthread_t t;
    pthread_create(&t, NULL, helper, NULL);
    pthread_join(t, NULL);

    MPI_Pcontrol(2);
    for (int i = 0; i < HALO; i++)
        halo_exchange(rank ^ 1);
    MPI_Pcontrol(3);
    double s = 0;
    for (int i = 0; i < SUMS; i++)
        s += global_sum(1.0);
    MPI_Pcontrol(4);
    for (int i = 0; i < CONFIGS; i++)
        share_config(config);
    if (rank == 0)
        printf("sum %g\n", s);
    MPI_Finalize();
    return 0;
}
