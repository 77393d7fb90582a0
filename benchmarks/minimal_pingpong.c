/* minimal_pingpong.c - the smallest honest ping-pong and windowed-bandwidth loops, the
 * yardstick benchmarks/engine_overhead.py holds fabricbench-mpi against.
 *
 *   minimal_pingpong latency SIZE ITERATIONS WARMUP          -> one-way latency in us
 *   minimal_pingpong bw SIZE ITERATIONS WARMUP WINDOW        -> bandwidth in MB/s (1e6 B/s)
 *
 * Same definitions as the engine (and OSU): latency = round-trip time / 2 averaged over
 * the timed iterations; bandwidth = bytes sent / time, the receiver acknowledging each
 * window with a 4-byte reply. One clock read before and one after the timed loop. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *page_buffer(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, bytes ? bytes : 1) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    memset(p, 1, bytes ? bytes : 1);
    return p;
}

static void pingpong(int rank, char *sb, char *rb, int size, long n)
{
    for (long i = 0; i < n; i++) {
        if (rank == 0) {
            MPI_Send(sb, size, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(rb, size, MPI_CHAR, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(rb, size, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sb, size, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
        }
    }
}

static void windows(int rank, char *sb, char *rb, int size, long n, int window, MPI_Request *req)
{
    char ack[4] = {0};
    for (long i = 0; i < n; i++) {
        if (rank == 0) {
            for (int w = 0; w < window; w++)
                MPI_Isend(sb, size, MPI_CHAR, 1, 3, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
            MPI_Recv(ack, 4, MPI_CHAR, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            for (int w = 0; w < window; w++)
                MPI_Irecv(rb, size, MPI_CHAR, 0, 3, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
            MPI_Send(ack, 4, MPI_CHAR, 0, 4, MPI_COMM_WORLD);
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 5 || (strcmp(argv[1], "bw") == 0 && argc < 6)) {
        if (rank == 0)
            fprintf(stderr, "usage: minimal_pingpong latency|bw SIZE ITERATIONS WARMUP [WINDOW]\n");
        MPI_Finalize();
        return 2;
    }
    int bw = strcmp(argv[1], "bw") == 0;
    int size = atoi(argv[2]);
    long iterations = atol(argv[3]), warmup = atol(argv[4]);
    int window = bw ? atoi(argv[5]) : 1;
    char *sb = page_buffer((size_t)size), *rb = page_buffer((size_t)size);
    MPI_Request *req = malloc((size_t)window * sizeof *req);

    if (bw)
        windows(rank, sb, rb, size, warmup, window, req);
    else
        pingpong(rank, sb, rb, size, warmup);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (bw)
        windows(rank, sb, rb, size, iterations, window, req);
    else
        pingpong(rank, sb, rb, size, iterations);
    double t = MPI_Wtime() - t0;

    if (rank == 0) {
        if (bw)
            printf("bw_MBps=%.6f\n", (double)size * window * iterations / t / 1e6);
        else
            printf("latency_us=%.6f\n", t * 1e6 / (2.0 * iterations));
    }
    free(req);
    free(sb);
    free(rb);
    MPI_Finalize();
    return 0;
}
