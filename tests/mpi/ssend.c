/*
 * ssend.c - synchronous-mode semantics (MPI-3.1 section 3.4): an MPI_Issend does not complete
 * before the matching receive has been posted. Checked without sleeps: the receiver is blocked
 * on a handshake message that the sender sends only after polling its Issend with MPI_Test many
 * times; only then does the receiver post the matching receive. Also blocking MPI_Ssend, Issend
 * to self, and Ssend to MPI_PROC_NULL. Needs >= 2 ranks for the cross-rank part.
 */
#include "mtest.h"

#define POLLS 2000

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    const int sizes[] = {0, 8, 4096, 1 << 20};
    MPI_Request req;
    MPI_Status st;
    int flag;

    /* 1. Pairs (2i, 2i+1): the even rank Issends, the odd rank receives after the handshake. */
    int peer = mtest_partner();
    if (peer != mtest_rank) {
        for (int k = 0; k < 4; k++) {
            int len = sizes[k];
            char *buf = mtest_malloc(len);
            if (mtest_rank % 2 == 0) {
                mtest_fill(buf, len, mtest_rank, k);
                MPI_Issend(buf, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &req);
                int early = 0;
                for (int i = 0; i < POLLS && !early; i++) {
                    MPI_Test(&req, &flag, &st);
                    early = flag;
                }
                CHECK(!early, "Issend of %d bytes completed before the receive was posted", len);
                MPI_Send(&early, 1, MPI_INT, peer, 2, MPI_COMM_WORLD); /* handshake */
                if (!early)
                    MPI_Wait(&req, &st);
            } else {
                int early = -1;
                MPI_Recv(&early, 1, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Recv(buf, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &st);
                CHECK_DATA(buf, (size_t)len, peer, k, "Issend message");
            }
            free(buf);
        }
        /* blocking Ssend in both directions, the other side receiving first */
        int v = mtest_rank, r = -1;
        if (mtest_rank % 2 == 0) {
            MPI_Ssend(&v, 1, MPI_INT, peer, 3, MPI_COMM_WORLD);
            MPI_Recv(&r, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&r, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Ssend(&v, 1, MPI_INT, peer, 3, MPI_COMM_WORLD);
        }
        CHECK_EQ(r, peer);
    }

    /* 2. Issend to self: not complete until our own receive is posted. */
    {
        int v = 17, r = 0, early = 0;
        MPI_Issend(&v, 1, MPI_INT, mtest_rank, 4, MPI_COMM_WORLD, &req);
        for (int i = 0; i < POLLS && !early; i++) {
            MPI_Test(&req, &flag, &st);
            early = flag;
        }
        CHECK(!early, "Issend to self completed before the receive was posted");
        MPI_Recv(&r, 1, MPI_INT, mtest_rank, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (!early)
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK_EQ(r, 17);
    }

    /* 3. Ssend to MPI_PROC_NULL returns at once. */
    {
        int v = 1;
        MPI_Ssend(&v, 1, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD);
        MPI_Issend(&v, 1, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    return MTest_Finalize();
}
