/* Calls nearly every MPI function libfabricbench-prof wraps, once or a few times, on 4 ranks,
 * from MPI_THREAD_MULTIPLE with two threads sending at once. tests/test_profiler.py checks
 * that each shows up and that v/w collectives, in-place and intercommunicator variants are
 * sized by the documented rules. */
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 4
static int rank;

static void *thread_sends(void *arg)
{
    int tag = 100 + (int)(long)arg, v = 0;
    /* ranks pair up 0<->1, 2<->3; each of two threads sends 50 ints x 1 to the partner */
    for (int i = 0; i < 50; i++) {
        if (rank % 2 == 0) {
            MPI_Send(&v, 1, MPI_INT, rank + 1, tag, MPI_COMM_WORLD);
        } else {
            MPI_Recv(&v, 1, MPI_INT, rank - 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    return NULL;
}

/* Environment and communicator queries, datatypes, MPI-IO and persistent collectives:
 * each wrapped call once (the reads and writes: 4 ints). */
static void local_calls_types_and_io(void)
{
    int flag, v, sub, len, res, n = 0;
    char name[MPI_MAX_OBJECT_NAME], lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Initialized(&flag);
    MPI_Finalized(&flag);
    MPI_Get_version(&v, &sub);
    MPI_Get_library_version(lib, &len);
    MPI_Query_thread(&v);
    MPI_Is_thread_main(&flag);
    MPI_Comm c = MPI_COMM_WORLD, parent;
    MPI_Group g;
    MPI_Errhandler eh;
    MPI_Info info;
    void *attr;
    MPI_Comm_remote_size(c, &v); /* an error on an intracommunicator: still a call */
    MPI_Comm_compare(c, MPI_COMM_SELF, &res);
    MPI_Comm_group(c, &g);
    MPI_Group_free(&g);
    MPI_Comm_remote_group(MPI_COMM_SELF, &g); /* an error too */
    MPI_Comm_test_inter(c, &flag);
    MPI_Comm_set_name(MPI_COMM_SELF, "self");
    MPI_Comm_get_name(MPI_COMM_SELF, name, &len);
    MPI_Comm_get_attr(c, MPI_TAG_UB, &attr, &flag);
    MPI_Comm_set_attr(MPI_COMM_SELF, MPI_TAG_UB, NULL); /* predefined: an error */
    MPI_Comm_delete_attr(MPI_COMM_SELF, MPI_TAG_UB);
    MPI_Comm_get_errhandler(c, &eh);
    MPI_Comm_set_errhandler(c, eh);
    MPI_Errhandler_free(&eh);
    MPI_Comm_get_info(c, &info);
    MPI_Comm_set_info(c, info);
    MPI_Info_free(&info);
    MPI_Comm_get_parent(&parent);

    MPI_Datatype t[11];
    int bl[2] = {1, 1}, di[2] = {0, 2}, sizes[1] = {4}, subs[1] = {2}, starts[1] = {1};
    MPI_Aint ad[2] = {0, 8};
    MPI_Datatype two[2] = {MPI_INT, MPI_INT};
    MPI_Type_contiguous(2, MPI_INT, &t[n++]);
    MPI_Type_vector(2, 1, 2, MPI_INT, &t[n++]);
    MPI_Type_create_hvector(2, 1, 8, MPI_INT, &t[n++]);
    MPI_Type_indexed(2, bl, di, MPI_INT, &t[n++]);
    MPI_Type_create_hindexed(2, bl, ad, MPI_INT, &t[n++]);
    MPI_Type_create_indexed_block(2, 1, di, MPI_INT, &t[n++]);
    MPI_Type_create_struct(2, bl, ad, two, &t[n++]);
    MPI_Type_create_subarray(1, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &t[n++]);
    MPI_Type_create_resized(MPI_INT, 0, 8, &t[n++]);
    MPI_Type_dup(MPI_INT, &t[n++]);
    MPI_Type_commit(&t[0]);
    for (int i = 0; i < n; i++)
        MPI_Type_free(&t[i]);

    /* MPI-IO on a file named after rank 0's pid, in the working directory. */
    char path[64];
    int pid = (int)getpid(), buf[4] = {1, 2, 3, 4};
    MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
    snprintf(path, sizeof path, "fb-coverage-%d.dat", pid);
    MPI_File fh;
    MPI_Offset off;
    MPI_Request rq[6];
    MPI_Status st;
    MPI_File_open(c, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_set_size(fh, 0);
    MPI_File_preallocate(fh, 1024);
    MPI_File_get_size(fh, &off);
    MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    MPI_File_seek(fh, 16 * rank, MPI_SEEK_SET);
    MPI_File_get_position(fh, &off);
    MPI_File_write(fh, buf, 4, MPI_INT, &st);
    MPI_File_read(fh, buf, 4, MPI_INT, &st);
    MPI_File_write_all(fh, buf, 4, MPI_INT, &st);
    MPI_File_read_all(fh, buf, 4, MPI_INT, &st);
    MPI_File_write_at(fh, 16 * rank, buf, 4, MPI_INT, &st);
    MPI_File_read_at(fh, 16 * rank, buf, 4, MPI_INT, &st);
    MPI_File_write_at_all(fh, 16 * rank, buf, 4, MPI_INT, &st);
    MPI_File_read_at_all(fh, 16 * rank, buf, 4, MPI_INT, &st);
    MPI_File_iwrite(fh, buf, 4, MPI_INT, &rq[0]);
    MPI_File_iread(fh, buf, 4, MPI_INT, &rq[1]);
    MPI_File_iwrite_at(fh, 0, buf, 4, MPI_INT, &rq[2]);
    MPI_File_iread_at(fh, 0, buf, 4, MPI_INT, &rq[3]);
    MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
    MPI_File_iwrite_all(fh, buf, 4, MPI_INT, &rq[4]);
    MPI_Wait(&rq[4], MPI_STATUS_IGNORE);
    MPI_File_iread_all(fh, buf, 4, MPI_INT, &rq[5]);
    MPI_Wait(&rq[5], MPI_STATUS_IGNORE);
    MPI_File_write_shared(fh, buf, 4, MPI_INT, &st);
    MPI_File_read_shared(fh, buf, 4, MPI_INT, &st);
    MPI_File_write_ordered(fh, buf, 4, MPI_INT, &st);
    MPI_File_read_ordered(fh, buf, 4, MPI_INT, &st);
    MPI_File_sync(fh);
    MPI_File_close(&fh);
    MPI_Barrier(c);
    if (rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);

#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
    /* MPI-4 persistent collectives (Open MPI's MPIX_ names): each set up and freed once. */
    int cnt[N] = {1, 1, 1, 1}, dsp[N] = {0, 1, 2, 3}, nb[2] = {1, 1};
    MPI_Aint nbd[2] = {0, 4};
    MPI_Datatype ty[N] = {MPI_INT, MPI_INT, MPI_INT, MPI_INT};
    int sb[N] = {0}, rb[N];
    int dims[1] = {N}, per[1] = {1};
    MPI_Comm cart;
    MPI_Cart_create(c, 1, dims, per, 0, &cart);
    MPI_Request p[23];
    int k = 0;
    MPIX_Allgather_init(sb, 1, MPI_INT, rb, 1, MPI_INT, c, MPI_INFO_NULL, &p[k++]);
    MPIX_Allgatherv_init(sb, 1, MPI_INT, rb, cnt, dsp, MPI_INT, c, MPI_INFO_NULL, &p[k++]);
    MPIX_Allreduce_init(sb, rb, 1, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &p[k++]);
    MPIX_Alltoall_init(sb, 1, MPI_INT, rb, 1, MPI_INT, c, MPI_INFO_NULL, &p[k++]);
    MPIX_Alltoallv_init(sb, cnt, dsp, MPI_INT, rb, cnt, dsp, MPI_INT, c, MPI_INFO_NULL, &p[k++]);
    MPIX_Alltoallw_init(sb, cnt, dsp, ty, rb, cnt, dsp, ty, c, MPI_INFO_NULL, &p[k++]);
    MPIX_Barrier_init(c, MPI_INFO_NULL, &p[k++]);
    MPIX_Bcast_init(sb, 1, MPI_INT, 0, c, MPI_INFO_NULL, &p[k++]);
    MPIX_Exscan_init(sb, rb, 1, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &p[k++]);
    MPIX_Gather_init(sb, 1, MPI_INT, rb, 1, MPI_INT, 0, c, MPI_INFO_NULL, &p[k++]);
    MPIX_Gatherv_init(sb, 1, MPI_INT, rb, cnt, dsp, MPI_INT, 0, c, MPI_INFO_NULL, &p[k++]);
    MPIX_Reduce_init(sb, rb, 1, MPI_INT, MPI_SUM, 0, c, MPI_INFO_NULL, &p[k++]);
    MPIX_Reduce_scatter_init(sb, rb, cnt, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &p[k++]);
    MPIX_Reduce_scatter_block_init(sb, rb, 1, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &p[k++]);
    MPIX_Scan_init(sb, rb, 1, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &p[k++]);
    MPIX_Scatter_init(sb, 1, MPI_INT, rb, 1, MPI_INT, 0, c, MPI_INFO_NULL, &p[k++]);
    MPIX_Scatterv_init(sb, cnt, dsp, MPI_INT, rb, 1, MPI_INT, 0, c, MPI_INFO_NULL, &p[k++]);
    MPIX_Neighbor_allgather_init(sb, 1, MPI_INT, rb, 1, MPI_INT, cart, MPI_INFO_NULL, &p[k++]);
    MPIX_Neighbor_allgatherv_init(sb, 1, MPI_INT, rb, nb, dsp, MPI_INT, cart, MPI_INFO_NULL, &p[k++]);
    MPIX_Neighbor_alltoall_init(sb, 1, MPI_INT, rb, 1, MPI_INT, cart, MPI_INFO_NULL, &p[k++]);
    MPIX_Neighbor_alltoallv_init(sb, nb, dsp, MPI_INT, rb, nb, dsp, MPI_INT, cart, MPI_INFO_NULL, &p[k++]);
    MPIX_Neighbor_alltoallw_init(sb, nb, nbd, ty, rb, nb, nbd, ty, cart, MPI_INFO_NULL, &p[k++]);
    for (int i = 0; i < k; i++)
        MPI_Request_free(&p[i]);
    MPI_Comm_free(&cart);
#endif
}

int main(int argc, char **argv)
{
    int provided, size, flag, idx, outcount, indices[4];
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != N) MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Comm W = MPI_COMM_WORLD;
    int right = (rank + 1) % N, left = (rank + N - 1) % N;
    int s[64] = {0}, r[64] = {0}, counts[N], mine[N], ones[N], displs[N];
    int nsend[2] = {2, 3}, nrecv[2] = {3, 2}; /* cart neighbours: [left, right] */
    MPI_Datatype types[N];
    MPI_Request req[4];
    MPI_Status st;

    if (provided == MPI_THREAD_MULTIPLE) {
        pthread_t t[2];
        for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, thread_sends, (void *)i);
        for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    }

    /* point-to-point variants, one message each to the right */
    MPI_Bsend_init(s, 1, MPI_INT, right, 1, W, &req[0]); /* never started: only counted */
    MPI_Request_free(&req[0]);
    MPI_Rsend_init(s, 1, MPI_INT, right, 1, W, &req[0]);
    MPI_Request_free(&req[0]);
    int bufsize = 1024 + MPI_BSEND_OVERHEAD;
    void *bbuf = malloc(bufsize);
    MPI_Buffer_attach(bbuf, bufsize);
    MPI_Irecv(r, 2, MPI_INT, left, 2, W, &req[0]);
    MPI_Bsend(s, 2, MPI_INT, right, 2, W);
    MPI_Wait(&req[0], &st);
    MPI_Irecv(r, 2, MPI_INT, left, 3, W, &req[0]);
    MPI_Barrier(W);
    MPI_Rsend(s, 2, MPI_INT, right, 3, W);
    MPI_Waitany(1, req, &idx, &st);
    MPI_Irecv(r, 2, MPI_INT, left, 4, W, &req[0]);
    MPI_Ibsend(s, 2, MPI_INT, right, 4, W, &req[1]);
    MPI_Waitsome(2, req, &outcount, indices, MPI_STATUSES_IGNORE);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    MPI_Buffer_detach(&bbuf, &bufsize);
    free(bbuf);
    MPI_Irecv(r, 2, MPI_INT, left, 5, W, &req[0]);
    MPI_Issend(s, 2, MPI_INT, right, 5, W, &req[1]);
    do { MPI_Testall(2, req, &flag, MPI_STATUSES_IGNORE); } while (!flag);
    MPI_Irecv(r, 2, MPI_INT, left, 6, W, &req[0]);
    MPI_Barrier(W);
    MPI_Irsend(s, 2, MPI_INT, right, 6, W, &req[1]);
    MPI_Testany(2, req, &idx, &flag, MPI_STATUS_IGNORE);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    MPI_Send(s, 3, MPI_INT, right, 7, W);
    MPI_Probe(left, 7, W, &st);
    MPI_Recv(r, 3, MPI_INT, left, 7, W, MPI_STATUS_IGNORE);
    MPI_Send(s, 3, MPI_INT, right, 8, W);
    MPI_Message msg;
    do { MPI_Improbe(left, 8, W, &flag, &msg, &st); } while (!flag);
    MPI_Mrecv(r, 3, MPI_INT, &msg, MPI_STATUS_IGNORE);
    MPI_Send(s, 3, MPI_INT, right, 9, W);
    MPI_Mprobe(left, 9, W, &msg, &st);
    MPI_Imrecv(r, 3, MPI_INT, &msg, &req[0]);
    do { MPI_Test(&req[0], &flag, MPI_STATUS_IGNORE); } while (!flag);
    MPI_Sendrecv_replace(s, 4, MPI_INT, right, 10, left, 10, W, MPI_STATUS_IGNORE);
    MPI_Irecv(r, 1, MPI_INT, left, 11, W, &req[0]);
    MPI_Isend(s, 1, MPI_INT, right, 11, W, &req[1]);
    MPI_Testsome(2, req, &outcount, indices, MPI_STATUSES_IGNORE);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    MPI_Irecv(r, 1, MPI_INT, MPI_ANY_SOURCE, 12, W, &req[0]);
    MPI_Cancel(&req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Request_get_status(MPI_REQUEST_NULL, &flag, MPI_STATUS_IGNORE);
    MPI_Iprobe(MPI_ANY_SOURCE, 999, W, &flag, MPI_STATUS_IGNORE);
    /* persistent: Ssend_init/Rsend_init to the right, Startall twice */
    MPI_Recv_init(r, 5, MPI_INT, left, 13, W, &req[0]);
    MPI_Ssend_init(s, 5, MPI_INT, right, 13, W, &req[1]);
    for (int i = 0; i < 2; i++) {
        MPI_Startall(2, req);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);

    /* collectives: rank i contributes i + 1 ints to v/w variants (counts[i] = i + 1 on receipt) */
    for (int i = 0; i < N; i++) {
        counts[i] = i + 1;
        mine[i] = rank + 1;
        ones[i] = 1;
        displs[i] = 8 * i;
        types[i] = MPI_INT;
    }
    int one = rank;
    MPI_Gather(s, 2, MPI_INT, r, 2, MPI_INT, 0, W);
    MPI_Gatherv(s, rank + 1, MPI_INT, r, counts, displs, MPI_INT, 3, W);
    MPI_Scatter(s, 2, MPI_INT, r, 2, MPI_INT, 1, W);
    MPI_Scatterv(s, counts, displs, MPI_INT, r, rank + 1, MPI_INT, 0, W);
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, 2, MPI_INT, W);
    MPI_Allgatherv(s, rank + 1, MPI_INT, r, counts, displs, MPI_INT, W);
    MPI_Alltoallv(s, mine, displs, MPI_INT, r, counts, displs, MPI_INT, W);
    MPI_Alltoallw(s, mine, displs, types, r, counts, displs, types, W);
    MPI_Reduce(&one, r, 1, MPI_INT, MPI_SUM, 0, W);
    MPI_Reduce_scatter(s, r, counts, MPI_INT, MPI_SUM, W);
    MPI_Reduce_scatter_block(s, r, 2, MPI_INT, MPI_SUM, W);
    MPI_Scan(&one, r, 1, MPI_INT, MPI_SUM, W);
    MPI_Exscan(&one, r, 1, MPI_INT, MPI_SUM, W);
    MPI_Request creq[16];
    int k = 0;
    MPI_Ibarrier(W, &creq[k++]);
    MPI_Ibcast(s, 1, MPI_INT, 0, W, &creq[k++]);
    MPI_Waitall(k, creq, MPI_STATUSES_IGNORE);
    k = 0;
    int r2[64], r3[64], r4[64], r5[64], r6[64], r7[64], r8[64], r9[64], r10[64], r11[64], r12[64];
    MPI_Igather(s, 1, MPI_INT, r2, 1, MPI_INT, 0, W, &creq[k++]);
    MPI_Igatherv(s, rank + 1, MPI_INT, r3, counts, displs, MPI_INT, 0, W, &creq[k++]);
    MPI_Iscatter(s, 1, MPI_INT, r4, 1, MPI_INT, 0, W, &creq[k++]);
    MPI_Iscatterv(s, counts, displs, MPI_INT, r5, rank + 1, MPI_INT, 0, W, &creq[k++]);
    MPI_Iallgather(s, 1, MPI_INT, r6, 1, MPI_INT, W, &creq[k++]);
    MPI_Iallgatherv(s, rank + 1, MPI_INT, r7, counts, displs, MPI_INT, W, &creq[k++]);
    MPI_Ialltoall(s, 1, MPI_INT, r8, 1, MPI_INT, W, &creq[k++]);
    MPI_Ialltoallv(s, mine, displs, MPI_INT, r9, counts, displs, MPI_INT, W, &creq[k++]);
    MPI_Ialltoallw(s, mine, displs, types, r10, counts, displs, types, W, &creq[k++]);
    MPI_Ireduce(s, r11, 1, MPI_INT, MPI_SUM, 0, W, &creq[k++]);
    MPI_Iallreduce(s, r12, 1, MPI_INT, MPI_SUM, W, &creq[k++]);
    MPI_Waitall(k, creq, MPI_STATUSES_IGNORE);
    k = 0;
    MPI_Ireduce_scatter(s, r2, counts, MPI_INT, MPI_SUM, W, &creq[k++]);
    MPI_Ireduce_scatter_block(s, r3, 1, MPI_INT, MPI_SUM, W, &creq[k++]);
    MPI_Iscan(s, r4, 1, MPI_INT, MPI_SUM, W, &creq[k++]);
    MPI_Iexscan(s, r5, 1, MPI_INT, MPI_SUM, W, &creq[k++]);
    MPI_Waitall(k, creq, MPI_STATUSES_IGNORE);

    /* communicators: dup, create, create_group, split_type, idup, cart + neighbourhood */
    MPI_Comm dup, dupi, created, cgroup, shm, idup, cart, sub, graph, dist, dista;
    MPI_Group wg, even;
    MPI_Comm_dup(W, &dup);
    MPI_Comm_dup_with_info(W, MPI_INFO_NULL, &dupi);
    MPI_Comm_group(W, &wg);
    int evens[2] = {0, 2};
    MPI_Group_incl(wg, 2, evens, &even);
    MPI_Comm_create(W, even, &created);
    if (rank % 2 == 0) {
        MPI_Comm_create_group(W, even, 5, &cgroup);
        MPI_Send(s, 6, MPI_INT, 1 - (rank / 2), 14, cgroup); /* sub-rank 0 -> 1 is world 0 -> 2 */
        MPI_Recv(r, 6, MPI_INT, 1 - (rank / 2), 14, cgroup, MPI_STATUS_IGNORE);
        MPI_Comm_free(&cgroup);
    }
    MPI_Comm_split_type(W, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shm);
    MPI_Comm_idup(W, &idup, &creq[0]);
    MPI_Wait(&creq[0], MPI_STATUS_IGNORE);
    int dims[1] = {N}, periods[1] = {1}, remain[1] = {1};
    MPI_Cart_create(W, 1, dims, periods, 0, &cart);
    MPI_Cart_sub(cart, remain, &sub);
    MPI_Neighbor_allgather(s, 1, MPI_INT, r, 1, MPI_INT, cart);
    MPI_Neighbor_allgatherv(s, 1, MPI_INT, r, ones, displs, MPI_INT, cart);
    MPI_Neighbor_alltoall(s, 3, MPI_INT, r, 3, MPI_INT, cart);
    MPI_Neighbor_alltoallv(s, nsend, displs, MPI_INT, r, nrecv, displs, MPI_INT, cart); /* 2 + 3 ints */
    MPI_Aint adispls[N] = {0, 32, 64, 96};
    MPI_Neighbor_alltoallw(s, nsend, adispls, types, r, nrecv, adispls, types, cart);
    MPI_Ineighbor_allgather(s, 1, MPI_INT, r2, 1, MPI_INT, cart, &creq[0]);
    MPI_Ineighbor_allgatherv(s, 1, MPI_INT, r3, ones, displs, MPI_INT, cart, &creq[1]);
    MPI_Ineighbor_alltoall(s, 1, MPI_INT, r4, 1, MPI_INT, cart, &creq[2]);
    MPI_Ineighbor_alltoallv(s, nsend, displs, MPI_INT, r5, nrecv, displs, MPI_INT, cart, &creq[3]);
    MPI_Ineighbor_alltoallw(s, nsend, adispls, types, r6, nrecv, adispls, types, cart, &creq[4]);
    MPI_Waitall(5, creq, MPI_STATUSES_IGNORE);
    int index[N] = {1, 2, 3, 4}, edges[N] = {1, 2, 3, 0};
    MPI_Graph_create(W, N, index, edges, 0, &graph);
    int src1[1] = {left}, dst1[1] = {right}, degree[1] = {1}, node[1] = {rank}, w1[1] = {1};
    MPI_Dist_graph_create(W, 1, node, degree, dst1, w1, MPI_INFO_NULL, 0, &dist);
    MPI_Dist_graph_create_adjacent(W, 1, src1, w1, 1, dst1, w1, MPI_INFO_NULL, 0, &dista);
    MPI_Neighbor_alltoallv(s, ones, displs, MPI_INT, r, ones, displs, MPI_INT, dista); /* 1 int */

    /* intercommunicator between {0,2} and {1,3}: a Bcast from world 1 and a merge */
    MPI_Comm half, inter, merged;
    MPI_Comm_split(W, rank % 2, rank, &half);
    MPI_Intercomm_create(half, 0, W, rank % 2 == 0 ? 1 : 0, 15, &inter);
    int hr;
    MPI_Comm_rank(half, &hr);
    int root = rank % 2 == 1 ? (hr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    MPI_Bcast(s, 7, MPI_INT, root, inter);
    MPI_Send(s, 1, MPI_INT, hr, 16, inter); /* to the same-index rank of the other group */
    MPI_Recv(r, 1, MPI_INT, hr, 16, inter, MPI_STATUS_IGNORE);
    MPI_Intercomm_merge(inter, rank % 2, &merged);

    MPI_Comm_free(&merged); MPI_Comm_free(&inter); MPI_Comm_free(&half);
    MPI_Comm_free(&dista); MPI_Comm_free(&dist); MPI_Comm_free(&graph);
    MPI_Comm_free(&sub); MPI_Comm_free(&cart); MPI_Comm_free(&idup); MPI_Comm_free(&shm);
    if (created != MPI_COMM_NULL) MPI_Comm_free(&created);
    MPI_Comm_disconnect(&dupi);
    MPI_Group_free(&even); MPI_Group_free(&wg);

    /* one-sided on a duplicate communicator in reversed order: window rank i is world 3 - i */
    MPI_Comm rev;
    MPI_Comm_split(dup, 0, N - rank, &rev);
    int *base;
    MPI_Win win, dyn, shwin;
    MPI_Win_allocate(64 * sizeof(int), sizeof(int), MPI_INFO_NULL, rev, &base, &win);
    int wr;
    MPI_Comm_rank(rev, &wr);
    int target = (wr + 1) % N; /* world rank 3 - target */
    MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
    MPI_Put(s, 3, MPI_INT, target, 0, 3, MPI_INT, win);
    MPI_Accumulate(s, 2, MPI_INT, target, 4, 2, MPI_INT, MPI_SUM, win);
    MPI_Get_accumulate(s, 1, MPI_INT, r, 1, MPI_INT, target, 8, 1, MPI_INT, MPI_SUM, win);
    MPI_Fetch_and_op(s, r, MPI_INT, target, 9, MPI_SUM, win);
    int cmp = 0;
    MPI_Compare_and_swap(s, &cmp, r, MPI_INT, target, 10, win);
    MPI_Win_flush(target, win);
    MPI_Win_flush_local(target, win);
    MPI_Win_unlock(target, win);
    MPI_Win_lock_all(0, win);
    MPI_Request wreq[4];
    MPI_Rput(s, 1, MPI_INT, target, 11, 1, MPI_INT, win, &wreq[0]);
    MPI_Rget(r, 1, MPI_INT, target, 12, 1, MPI_INT, win, &wreq[1]);
    MPI_Raccumulate(s, 1, MPI_INT, target, 13, 1, MPI_INT, MPI_SUM, win, &wreq[2]);
    MPI_Rget_accumulate(s, 1, MPI_INT, r2, 1, MPI_INT, target, 14, 1, MPI_INT, MPI_SUM, win, &wreq[3]);
    MPI_Waitall(4, wreq, MPI_STATUSES_IGNORE);
    MPI_Win_flush_all(win);
    MPI_Win_flush_local_all(win);
    MPI_Win_sync(win);
    MPI_Win_unlock_all(win);
    MPI_Barrier(rev);
    MPI_Group wing, peer;
    MPI_Win_get_group(win, &wing);
    int pr = (wr + 1) % N, pl = (wr + N - 1) % N;
    MPI_Group_incl(wing, 1, &pr, &peer);
    MPI_Group src;
    MPI_Group_incl(wing, 1, &pl, &src);
    MPI_Win_post(src, 0, win);
    MPI_Win_start(peer, 0, win);
    MPI_Get(r, 2, MPI_INT, pr, 0, 2, MPI_INT, win);
    MPI_Win_complete(win);
    MPI_Win_wait(win);
    MPI_Group_free(&peer); MPI_Group_free(&src); MPI_Group_free(&wing);
    MPI_Win_free(&win);
    MPI_Win_create_dynamic(MPI_INFO_NULL, W, &dyn);
    MPI_Win_free(&dyn);
    MPI_Aint shsize;
    int shdisp;
    int *shbase;
    MPI_Win_allocate_shared(16, 1, MPI_INFO_NULL, MPI_COMM_SELF, &shbase, &shwin);
    MPI_Win_shared_query(shwin, 0, &shsize, &shdisp, &shbase);
    MPI_Win_free(&shwin);
    MPI_Comm_free(&rev);
    MPI_Comm_free(&dup);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* two queries above fail on purpose */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    local_calls_types_and_io();
    MPI_Finalize();
    return 0;
}
