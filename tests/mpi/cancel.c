/*
 * cancel.c - cancelling a posted receive (MPI-3.1 section 3.8.4): a receive that nothing matches
 * is cancelled (MPI_Test_cancelled true after MPI_Wait) and does not swallow a later message;
 * when a cancel races with a matching message either outcome is legal, but it must be
 * consistent: cancelled means the message is still there for another receive, not cancelled
 * means the data arrived. Runs with any number of ranks (partner or self).
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int peer = mtest_partner();
    MPI_Request req;
    MPI_Status st;
    int flag, buf[4];

    /* 1. Nothing matches: the cancel must succeed, for named and wildcard sources. */
    for (int wild = 0; wild < 2; wild++) {
        buf[0] = -7;
        MPI_Irecv(buf, 4, MPI_INT, wild ? MPI_ANY_SOURCE : peer, 999, MPI_COMM_WORLD, &req);
        MPI_Cancel(&req);
        MPI_Wait(&req, &st);
        CHECK(req == MPI_REQUEST_NULL, "Wait did not free the cancelled request");
        flag = 0;
        MPI_Test_cancelled(&st, &flag);
        CHECK(flag, "unmatched receive (wildcard %d) was not cancelled", wild);
        CHECK_EQ(buf[0], -7);
    }

    MPI_Barrier(MPI_COMM_WORLD); /* the partner's tag-999 message below must not meet part 1 */
    /* 2. The cancelled receives did not take the next message with that tag. */
    {
        int v = 1000 + mtest_rank;
        MPI_Request sreq;
        MPI_Isend(&v, 1, MPI_INT, peer, 999, MPI_COMM_WORLD, &sreq);
        MPI_Recv(buf, 4, MPI_INT, peer, 999, MPI_COMM_WORLD, &st);
        CHECK_EQ(buf[0], 1000 + peer);
        MPI_Test_cancelled(&st, &flag);
        CHECK(!flag, "a normal receive reports cancelled");
        MPI_Wait(&sreq, MPI_STATUS_IGNORE);
    }

    /* 3. Cancel racing a matching message (small and large): outcome must be consistent. */
    const int sizes[] = {1, 300000};
    for (int k = 0; k < 2; k++) {
        int len = sizes[k];
        char *out = mtest_malloc(len), *in = mtest_malloc(len);
        MPI_Request sreq;
        mtest_fill(out, len, mtest_rank, k);
        MPI_Irecv(in, len, MPI_BYTE, peer, 50 + k, MPI_COMM_WORLD, &req);
        MPI_Isend(out, len, MPI_BYTE, peer, 50 + k, MPI_COMM_WORLD, &sreq);
        MPI_Cancel(&req);
        MPI_Wait(&req, &st);
        MPI_Test_cancelled(&st, &flag);
        if (flag) {
            memset(in, 0, len);
            MPI_Recv(in, len, MPI_BYTE, peer, 50 + k, MPI_COMM_WORLD, &st);
        }
        CHECK_DATA(in, (size_t)len, peer, k, "message after a cancel race");
        MPI_Wait(&sreq, MPI_STATUS_IGNORE);
        free(out);
        free(in);
    }

    /* 4. Cancel a completed-but-not-waited receive: it completes normally. */
    {
        int v = 5, r = 0;
        MPI_Request sreq;
        MPI_Irecv(&r, 1, MPI_INT, peer, 60, MPI_COMM_WORLD, &req);
        MPI_Isend(&v, 1, MPI_INT, peer, 60, MPI_COMM_WORLD, &sreq);
        MPI_Wait(&sreq, MPI_STATUS_IGNORE);
        /* wait until the receive is known complete without freeing it */
        do
            MPI_Request_get_status(req, &flag, &st);
        while (!flag);
        MPI_Cancel(&req);
        MPI_Wait(&req, &st);
        MPI_Test_cancelled(&st, &flag);
        CHECK(!flag, "cancelling a completed receive marked it cancelled");
        CHECK_EQ(r, 5);
    }

    return MTest_Finalize();
}
