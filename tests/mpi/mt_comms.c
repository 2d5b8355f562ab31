/*
 * mt_comms.c - MPI_THREAD_MULTIPLE: each of THREADS threads works on its own duplicate of
 * MPI_COMM_WORLD (duplicated by the main thread, in order, before the threads start), all with
 * the same tag: a ring shift with Sendrecv, then Irecv from the left + Send to the right + Wait,
 * then a window of Isend/Irecv to both neighbours completed by Waitall. Payload seeds include the
 * thread index, so a message matched across communicators is detected. Then every thread
 * exchanges with MPI_ANY_SOURCE on its communicator.
 */
#include "mtest_threads.h"

#define THREADS 4
#define ITERS 60
#define WINDOW 4
#define MAXSIZE 40000

static MPI_Comm comms[THREADS];

static int size_of(int i) { return (i % 3 == 0) ? 24 : (i % 3 == 1) ? 3000 : MAXSIZE; }

static void *worker(void *arg)
{
    int t = MTEST_THREAD_INDEX(arg), rank, size;
    MPI_Comm comm = comms[t];
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned char *out = mtest_malloc(2 * WINDOW * MAXSIZE), *in = mtest_malloc(2 * WINDOW * MAXSIZE);
    MPI_Request req[4 * WINDOW];
    MPI_Status st;
    for (int i = 0; i < ITERS; i++) {
        int n = size_of(i + t), seed = t * 100000 + i * 10;
        mtest_fill(out, n, rank, seed);
        MPI_Sendrecv(out, n, MPI_BYTE, right, 0, in, n, MPI_BYTE, left, 0, comm, &st);
        TCHECK_EQ(st.MPI_SOURCE, left);
        TCHECK_DATA(in, n, left, seed, "sendrecv");

        mtest_fill(out, n, rank, seed + 1);
        MPI_Irecv(in, n, MPI_BYTE, left, 0, comm, &req[0]);
        MPI_Send(out, n, MPI_BYTE, right, 0, comm);
        MPI_Wait(&req[0], &st);
        TCHECK_DATA(in, n, left, seed + 1, "irecv/send/wait");

        for (int k = 0; k < WINDOW; k++) {
            unsigned char *o = out + (size_t)2 * k * MAXSIZE, *r = in + (size_t)2 * k * MAXSIZE;
            mtest_fill(o, n, rank, seed + 2 + k);
            mtest_fill(o + MAXSIZE, n, rank, seed + 2 + k);
            MPI_Irecv(r, n, MPI_BYTE, left, 0, comm, &req[4 * k]);
            MPI_Irecv(r + MAXSIZE, n, MPI_BYTE, right, 0, comm, &req[4 * k + 1]);
            MPI_Isend(o, n, MPI_BYTE, right, 0, comm, &req[4 * k + 2]);
            MPI_Isend(o + MAXSIZE, n, MPI_BYTE, left, 0, comm, &req[4 * k + 3]);
        }
        MPI_Waitall(4 * WINDOW, req, MPI_STATUSES_IGNORE);
        for (int k = 0; k < WINDOW; k++) {
            unsigned char *r = in + (size_t)2 * k * MAXSIZE;
            TCHECK_DATA(r, n, left, seed + 2 + k, "window from the left");
            TCHECK_DATA(r + MAXSIZE, n, right, seed + 2 + k, "window from the right");
        }
    }
    /* Wildcard sources: every rank sends one message to every rank on this communicator. */
    int *seen = calloc(size, sizeof(int)), msg_out[2] = {rank, t};
    MPI_Request *sreq = mtest_malloc(size * sizeof(MPI_Request));
    for (int d = 0; d < size; d++)
        MPI_Isend(msg_out, 2, MPI_INT, d, 0, comm, &sreq[d]);
    for (int k = 0; k < size; k++) {
        int msg[2] = {-1, -1};
        MPI_Recv(msg, 2, MPI_INT, MPI_ANY_SOURCE, 0, comm, &st);
        TCHECK_EQ(msg[0], st.MPI_SOURCE);
        TCHECK_EQ(msg[1], t);
        if (msg[0] >= 0 && msg[0] < size)
            seen[msg[0]]++;
    }
    MPI_Waitall(size, sreq, MPI_STATUSES_IGNORE);
    for (int k = 0; k < size; k++)
        TCHECK_EQ(seen[k], 1);
    free(sreq);
    free(seen);
    free(out);
    free(in);
    return NULL;
}

int main(int argc, char **argv)
{
    if (MTest_Init_multiple(&argc, &argv)) {
        mtest_threads_on_dups(THREADS, worker, comms, THREADS);
    }
    return MTest_Finalize();
}
