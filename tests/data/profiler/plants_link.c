/* A hostile neighbour: before MPI_Finalize, rank 0 plants a symbolic link where the
 * profiler's temporary file will be made (<FABRICBENCH_PROFILE>.tmp.<pid>), pointing at
 * argv[1]. The profiler must neither follow it nor fail: the victim stays as it was. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank = 0, x = 1, y = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *profile = getenv("FABRICBENCH_PROFILE");
    if (rank == 0 && profile && argc > 1) {
        char link[4096];
        snprintf(link, sizeof link, "%s.tmp.%d", profile, (int)getpid());
        if (symlink(argv[1], link) != 0) {
            perror("plants_link: symlink");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
