/*
 * jacobi.c - a small MPI mini-app for scaling studies: 2-D Jacobi relaxation of Laplace's
 * equation on a fixed global grid (strong scaling), decomposed over a 2-D Cartesian grid of
 * ranks, with a one-cell halo exchanged every iteration (rows contiguous, columns as a
 * vector datatype).
 *
 *   mpicc -O2 -o jacobi jacobi.c
 *   mpirun -np 4 ./jacobi [-n GRID] [-i ITERATIONS] [--fail-marker PATH]
 *
 * Rank 0 prints, after the timed loop:
 *   Grid: 1024 x 1024, 200 iterations, 4 ranks (2 x 2)
 *   Residual: 1.234e-03
 *   Elapsed: 0.123456 s
 *   FOM: 1698.2 Mcells/s
 * FOM = grid cells updated per second over all ranks (higher is better).
 *
 * --fail-marker PATH: if PATH exists, rank 0 removes it and the run exits with status 3
 * (every rank finalizes cleanly first), so a test can make exactly one repetition fail.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IDX(i, j) ((size_t)(i) * (size_t)(ny + 2) + (size_t)(j))

static int parse_int(const char *text, const char *what)
{
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (!end || *end || v < 1 || v > 1000000) {
        fprintf(stderr, "jacobi: bad %s '%s'\n", what, text);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return (int)v;
}

int main(int argc, char **argv)
{
    int n = 1024, iterations = 200;
    const char *fail_marker = NULL;
    int size, rank;

    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "-n") && a + 1 < argc)
            n = parse_int(argv[++a], "grid size");
        else if (!strcmp(argv[a], "-i") && a + 1 < argc)
            iterations = parse_int(argv[++a], "iteration count");
        else if (!strcmp(argv[a], "--fail-marker") && a + 1 < argc)
            fail_marker = argv[++a];
        else {
            if (rank == 0)
                fprintf(stderr, "usage: jacobi [-n GRID] [-i ITERATIONS] [--fail-marker PATH]\n");
            MPI_Finalize();
            return 2;
        }
    }

    int fail = 0;
    if (rank == 0 && fail_marker && access(fail_marker, F_OK) == 0) {
        unlink(fail_marker);
        fail = 1;
    }
    MPI_Bcast(&fail, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (fail) {
        if (rank == 0)
            fprintf(stderr, "jacobi: error: failing on purpose (marker %s was present)\n", fail_marker);
        MPI_Finalize();
        return rank == 0 ? 3 : 0;
    }

    int dims[2] = {0, 0}, periods[2] = {0, 0}, coords[2];
    MPI_Comm cart;
    MPI_Dims_create(size, 2, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    MPI_Cart_coords(cart, rank, 2, coords);
    int up, down, left, right;
    MPI_Cart_shift(cart, 0, 1, &up, &down);
    MPI_Cart_shift(cart, 1, 1, &left, &right);

    /* Local block: rows split over dims[0], columns over dims[1]; the remainder goes to the first. */
    int nx = n / dims[0] + (coords[0] < n % dims[0]);
    int ny = n / dims[1] + (coords[1] < n % dims[1]);
    size_t cells = (size_t)(nx + 2) * (size_t)(ny + 2);
    double *u = calloc(cells, sizeof(double));
    double *unew = calloc(cells, sizeof(double));
    if (!u || !unew) {
        fprintf(stderr, "jacobi: rank %d: out of memory for a %d x %d block\n", rank, nx, ny);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* Boundary condition: the global top edge is held at 1, the others at 0. */
    if (up == MPI_PROC_NULL)
        for (int j = 0; j < ny + 2; j++)
            u[IDX(0, j)] = unew[IDX(0, j)] = 1.0;

    MPI_Datatype column;
    MPI_Type_vector(nx, 1, ny + 2, MPI_DOUBLE, &column);
    MPI_Type_commit(&column);

    MPI_Barrier(cart);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iterations; it++) {
        MPI_Sendrecv(&u[IDX(1, 1)], ny, MPI_DOUBLE, up, 0, &u[IDX(nx + 1, 1)], ny, MPI_DOUBLE, down, 0, cart, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&u[IDX(nx, 1)], ny, MPI_DOUBLE, down, 1, &u[IDX(0, 1)], ny, MPI_DOUBLE, up, 1, cart, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&u[IDX(1, 1)], 1, column, left, 2, &u[IDX(1, ny + 1)], 1, column, right, 2, cart, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&u[IDX(1, ny)], 1, column, right, 3, &u[IDX(1, 0)], 1, column, left, 3, cart, MPI_STATUS_IGNORE);
        for (int i = 1; i <= nx; i++)
            for (int j = 1; j <= ny; j++)
                unew[IDX(i, j)] = 0.25 * (u[IDX(i - 1, j)] + u[IDX(i + 1, j)] + u[IDX(i, j - 1)] + u[IDX(i, j + 1)]);
        double *tmp = u;
        u = unew;
        unew = tmp;
    }
    double local = MPI_Wtime() - t0, elapsed;
    MPI_Allreduce(&local, &elapsed, 1, MPI_DOUBLE, MPI_MAX, cart);

    double diff = 0.0, residual;
    for (int i = 1; i <= nx; i++)
        for (int j = 1; j <= ny; j++) {
            double d = u[IDX(i, j)] - unew[IDX(i, j)];
            diff += d * d;
        }
    MPI_Allreduce(&diff, &residual, 1, MPI_DOUBLE, MPI_SUM, cart);

    if (rank == 0) {
        double fom = (double)n * (double)n * (double)iterations / (elapsed > 0 ? elapsed : 1e-9) / 1e6;
        printf("Grid: %d x %d, %d iterations, %d ranks (%d x %d)\n", n, n, iterations, size, dims[0], dims[1]);
        printf("Residual: %.3e\n", residual);
        printf("Elapsed: %.6f s\n", elapsed);
        printf("FOM: %.1f Mcells/s\n", fom);
        fflush(stdout);
    }
    MPI_Type_free(&column);
    free(u);
    free(unew);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}
