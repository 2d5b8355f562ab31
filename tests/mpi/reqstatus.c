/*
 * reqstatus.c - MPI_Request_get_status (MPI-3.1 section 3.7.3): reports completion without
 * freeing the request (the handle stays valid and MPI_Wait afterwards returns the same status),
 * reports "not complete" for a receive that cannot have matched yet (the partner is held back
 * by a handshake), and on MPI_REQUEST_NULL returns flag true with an empty status.
 * Needs >= 2 ranks for the cross-rank part.
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int peer = mtest_partner();
    MPI_Request r;
    MPI_Status st, st2;
    int flag;

    if (peer != mtest_rank) {
        if (mtest_rank % 2 == 0) {
            int v = -1, polls = 1000, early = 0;
            MPI_Irecv(&v, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, &r);
            for (int i = 0; i < polls && !early; i++) {
                MPI_Request_get_status(r, &flag, &st);
                early = flag;
            }
            CHECK(!early, "Request_get_status: receive complete before anything was sent");
            MPI_Send(NULL, 0, MPI_BYTE, peer, 2, MPI_COMM_WORLD); /* "now send" */
            do
                MPI_Request_get_status(r, &flag, &st);
            while (!flag);
            CHECK(r != MPI_REQUEST_NULL, "Request_get_status freed the request");
            CHECK_EQ(st.MPI_SOURCE, peer);
            CHECK_EQ(st.MPI_TAG, 1);
            CHECK_EQ(v, 1000 + peer);
            MPI_Request_get_status(r, &flag, &st); /* again: still complete */
            CHECK(flag, "second Request_get_status on a complete request returned false");
            MPI_Wait(&r, &st2);
            CHECK(r == MPI_REQUEST_NULL, "Wait did not free the request");
            CHECK_EQ(st2.MPI_SOURCE, peer);
            CHECK_EQ(st2.MPI_TAG, 1);
        } else {
            int v = 1000 + mtest_rank;
            MPI_Recv(NULL, 0, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Isend(&v, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, &r);
            do
                MPI_Request_get_status(r, &flag, MPI_STATUS_IGNORE);
            while (!flag);
            CHECK(r != MPI_REQUEST_NULL, "Request_get_status freed the send request");
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
    }

    /* Self message, and the null request. */
    int a = 7, b = 0;
    MPI_Request s;
    MPI_Irecv(&b, 1, MPI_INT, mtest_rank, 3, MPI_COMM_WORLD, &r);
    MPI_Isend(&a, 1, MPI_INT, mtest_rank, 3, MPI_COMM_WORLD, &s);
    do
        MPI_Request_get_status(r, &flag, &st);
    while (!flag);
    CHECK_EQ(b, 7);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Wait(&s, MPI_STATUS_IGNORE);
    MPI_Request null = MPI_REQUEST_NULL;
    flag = 0;
    MPI_Request_get_status(null, &flag, &st);
    CHECK(flag, "Request_get_status(MPI_REQUEST_NULL) returned false");
    CHECK_EMPTY_STATUS(st, MPI_INT);
    return MTest_Finalize();
}
