/*
 * mprobe.c - matched probe and matched receive (MPI-3.1 section 3.8.2): MPI_Mprobe/MPI_Improbe
 * remove the message from the matching queue (a later receive with the same envelope gets the
 * next message), MPI_Mrecv/MPI_Imrecv then receive exactly the probed one, for small and large
 * messages; probing MPI_PROC_NULL gives MPI_MESSAGE_NO_PROC, and receiving that returns at once
 * with a MPI_PROC_NULL status. Runs with any number of ranks (partner or self).
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int peer = mtest_partner();
    const int sizes[] = {0, 4, 1000, 1 << 20};
    MPI_Status st;
    MPI_Message msg;
    int n, flag;

    for (int k = 0; k < 4; k++) {
        int len = sizes[k];
        char *a = mtest_malloc(len), *b = mtest_malloc(len), *in = mtest_malloc(len);
        MPI_Request req[2], rreq;
        mtest_fill(a, len, mtest_rank, 2 * k);
        mtest_fill(b, len, mtest_rank, 2 * k + 1);
        MPI_Isend(a, len, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(b, len, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &req[1]);

        /* 1. Mprobe takes message a out of the queue; a plain Recv then gets b. */
        MPI_Mprobe(peer, 5, MPI_COMM_WORLD, &msg, &st);
        CHECK(msg != MPI_MESSAGE_NULL && msg != MPI_MESSAGE_NO_PROC, "Mprobe gave no message handle");
        CHECK_EQ(st.MPI_SOURCE, peer);
        CHECK_EQ(st.MPI_TAG, 5);
        MPI_Get_count(&st, MPI_BYTE, &n);
        CHECK_EQ(n, len);
        MPI_Recv(in, len, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &st);
        CHECK_DATA(in, (size_t)len, peer, 2 * k + 1, "plain receive after Mprobe (second message)");
        memset(in, 0, len);
        MPI_Mrecv(in, len, MPI_BYTE, &msg, &st);
        CHECK(msg == MPI_MESSAGE_NULL, "Mrecv did not set the message handle to MPI_MESSAGE_NULL");
        CHECK_EQ(st.MPI_SOURCE, peer);
        MPI_Get_count(&st, MPI_BYTE, &n);
        CHECK_EQ(n, len);
        CHECK_DATA(in, (size_t)len, peer, 2 * k, "Mrecv of the probed (first) message");
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);

        /* 2. Improbe (polled) + Imrecv + Wait. */
        MPI_Isend(a, len, MPI_BYTE, peer, 6, MPI_COMM_WORLD, &req[0]);
        do
            MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st);
        while (!flag);
        CHECK_EQ(st.MPI_TAG, 6);
        CHECK_EQ(st.MPI_SOURCE, peer);
        memset(in, 0, len);
        MPI_Imrecv(in, len, MPI_BYTE, &msg, &rreq);
        CHECK(msg == MPI_MESSAGE_NULL, "Imrecv did not set the message handle to MPI_MESSAGE_NULL");
        MPI_Wait(&rreq, &st);
        CHECK_EQ(st.MPI_SOURCE, peer);
        CHECK_EQ(st.MPI_TAG, 6);
        MPI_Get_count(&st, MPI_BYTE, &n);
        CHECK_EQ(n, len);
        CHECK_DATA(in, (size_t)len, peer, 2 * k, "Imrecv");
        MPI_Wait(&req[0], MPI_STATUS_IGNORE);
        free(a);
        free(b);
        free(in);
    }

    /* 3. Improbe with nothing pending returns flag false. */
    MPI_Improbe(MPI_ANY_SOURCE, 4242, MPI_COMM_WORLD, &flag, &msg, &st);
    CHECK(!flag, "Improbe matched tag 4242 that nobody sent");

    /* 4. MPI_PROC_NULL gives MPI_MESSAGE_NO_PROC. */
    int x = 99;
    MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &st);
    CHECK(msg == MPI_MESSAGE_NO_PROC, "Mprobe(MPI_PROC_NULL) did not give MPI_MESSAGE_NO_PROC");
    CHECK_PROC_NULL_STATUS(st, MPI_INT);
    MPI_Mrecv(&x, 1, MPI_INT, &msg, &st);
    CHECK(msg == MPI_MESSAGE_NULL, "Mrecv(MPI_MESSAGE_NO_PROC) did not set MPI_MESSAGE_NULL");
    CHECK_PROC_NULL_STATUS(st, MPI_INT);
    CHECK_EQ(x, 99);
    flag = 0;
    MPI_Improbe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &msg, &st);
    CHECK(flag, "Improbe(MPI_PROC_NULL) returned flag false");
    CHECK(msg == MPI_MESSAGE_NO_PROC, "Improbe(MPI_PROC_NULL) did not give MPI_MESSAGE_NO_PROC");
    MPI_Request r;
    MPI_Imrecv(&x, 1, MPI_INT, &msg, &r);
    MPI_Wait(&r, &st);
    CHECK_PROC_NULL_STATUS(st, MPI_INT);
    CHECK_EQ(x, 99);

    return MTest_Finalize();
}
