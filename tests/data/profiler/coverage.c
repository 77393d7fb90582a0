/* Calls nearly every MPI function libfabricbench-prof wraps, once or a few times, on 4 ranks,
 * from MPI_THREAD_MULTIPLE with two threads sending at once. tests/test_profiler.py checks
 * that each shows up and that v/w collectives, in-place and intercommunicator variants are
 * sized by the documented rules. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    MPI_Finalize();
    return 0;
}
