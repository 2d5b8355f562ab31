/*
 * mt_grequest.c - MPI_THREAD_MULTIPLE: generalized requests completed by another thread (the
 * use MPI-3.1 section 12.2 was made for: an operation run by a helper thread, reported as a
 * request).
 *
 * Each round, with the partner rank (pairs 0-1, 2-3, ...; an unpaired rank with itself): the main
 * thread starts a generalized request and a helper thread that receives one message from the
 * partner (eager or rendezvous size), records its status and calls MPI_Grequest_complete. The
 * main thread sends its own message to the partner and completes the request by MPI_Wait, by
 * MPI_Waitall together with an ordinary receive, or by polling MPI_Test, in turn: the wait may
 * start before or after the helper completes it. query_fn reports the helper's receive status;
 * query_fn and free_fn must each run exactly once, in that order, and the data must arrive.
 * An unpaired rank's helper makes the data itself instead of receiving it (MPICH 4.0.2 loses
 * messages between threads of one rank, see mt_deadlock in testlist).
 */
#include "mtest_threads.h"

#define ROUNDS 24
#define MAXSIZE 100000 /* above the eager limits of Reflex (64 KiB), MPICH and Open MPI */

typedef struct {
    MPI_Request req;
    unsigned char *buf;
    int tag, source, count;
    int queried, freed; /* 1 = query ran, 2 = free ran after it */
} job_t;

static int partner;

static int size_of(int round) { return round % 4 == 1 ? MAXSIZE : 50 * (round + 1); }

static int query_fn(void *extra, MPI_Status *status)
{
    job_t *j = extra;
    j->queried++;
    status->MPI_SOURCE = j->source;
    status->MPI_TAG = j->tag;
    MPI_Status_set_elements(status, MPI_BYTE, j->count);
    MPI_Status_set_cancelled(status, 0);
    return MPI_SUCCESS;
}

static int free_fn(void *extra)
{
    job_t *j = extra;
    TCHECK(j->queried == 1, "free_fn before query_fn (queried %d)", j->queried);
    j->freed++;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    TCHECK(0, "cancel_fn called");
    return MPI_SUCCESS;
}

/* The helper: receives (or, unpaired, makes) the data, records the status, completes. */
static void *helper(void *arg)
{
    job_t *j = arg;
    MPI_Status st;
    if (partner == mtest_rank) {
        j->source = mtest_rank;
        j->count = size_of(j->tag);
        mtest_fill(j->buf, j->count, mtest_rank, j->tag);
    } else {
        MPI_Recv(j->buf, MAXSIZE, MPI_BYTE, partner, j->tag, MPI_COMM_WORLD, &st);
        j->source = st.MPI_SOURCE;
        MPI_Get_count(&st, MPI_BYTE, &j->count);
    }
    TCHECK_EQ(MPI_Grequest_complete(j->req), MPI_SUCCESS);
    return NULL;
}

static void round_trip(int round, unsigned char *out, unsigned char *in2, job_t *j)
{
    MPI_Status st, sts[2];
    MPI_Request reqs[2];
    pthread_t tid;
    int n = size_of(round);

    memset(j, 0, sizeof *j);
    j->buf = in2 + MAXSIZE; /* the helper's receive buffer */
    j->tag = round;
    MPI_Grequest_start(query_fn, free_fn, cancel_fn, j, &j->req);
    pthread_create(&tid, NULL, helper, j);
    mtest_fill(out, n, mtest_rank, round);
    MPI_Request sreq = MPI_REQUEST_NULL;
    if (partner != mtest_rank)
        MPI_Isend(out, n, MPI_BYTE, partner, round, MPI_COMM_WORLD, &sreq);
    switch (round % 3) {
    case 0:
        MPI_Wait(&j->req, &st);
        break;
    case 1:
        reqs[0] = j->req;
        MPI_Irecv(in2, MAXSIZE, MPI_BYTE, partner, 1000 + round, MPI_COMM_WORLD, &reqs[1]);
        MPI_Send(out, 10, MPI_BYTE, partner, 1000 + round, MPI_COMM_WORLD); /* eager */
        MPI_Waitall(2, reqs, sts);
        j->req = reqs[0];
        st = sts[0];
        TCHECK_EQ(sts[1].MPI_SOURCE, partner);
        TCHECK_DATA(in2, 10, partner, round, "second message");
        break;
    default:
        for (int flag = 0; !flag;)
            MPI_Test(&j->req, &flag, &st);
    }
    MPI_Wait(&sreq, MPI_STATUS_IGNORE);
    pthread_join(tid, NULL);
    int count = -1;
    MPI_Get_count(&st, MPI_BYTE, &count);
    TCHECK(j->req == MPI_REQUEST_NULL, "round %d: handle not MPI_REQUEST_NULL", round);
    TCHECK_EQ(st.MPI_SOURCE, partner);
    TCHECK_EQ(st.MPI_TAG, round);
    TCHECK_EQ(count, n);
    TCHECK_EQ(j->queried, 1);
    TCHECK_EQ(j->freed, 1);
    TCHECK_DATA(j->buf, n, partner, round, "helper's message");
}

int main(int argc, char **argv)
{
    if (MTest_Init_multiple(&argc, &argv)) {
        unsigned char *out = mtest_malloc(MAXSIZE), *in = mtest_malloc(2 * MAXSIZE);
        job_t job;
        partner = mtest_partner();
        for (int round = 0; round < ROUNDS; round++)
            round_trip(round, out, in, &job);
        free(out);
        free(in);
    }
    return MTest_Finalize();
}
