/*
 * probe.c - MPI_Probe and MPI_Iprobe (MPI-3.1 section 3.8.1): the status describes the pending
 * message (source, tag, count) without receiving it, a later receive gets that same message,
 * Iprobe returns false when nothing matches, and probing MPI_PROC_NULL returns at once with
 * source MPI_PROC_NULL, tag MPI_ANY_TAG and count 0. Runs with any number of ranks (messages
 * go to the partner rank, which is the rank itself when unpaired).
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int peer = mtest_partner();
    MPI_Status st;
    int flag, n;
    const int sizes[] = {0, 1, 100, 100000, 1 << 20};
    const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);

    /* 1. Probe then receive a buffer sized from the status. */
    for (int k = 0; k < nsizes; k++) {
        char *out = mtest_malloc(sizes[k]);
        MPI_Request req;
        mtest_fill(out, sizes[k], mtest_rank, k);
        MPI_Isend(out, sizes[k], MPI_BYTE, peer, 40 + k, MPI_COMM_WORLD, &req);
        MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        CHECK_EQ(st.MPI_SOURCE, peer);
        CHECK_EQ(st.MPI_TAG, 40 + k);
        MPI_Get_count(&st, MPI_BYTE, &n);
        CHECK_EQ(n, sizes[k]);
        /* probing again sees the same message */
        MPI_Probe(peer, 40 + k, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &n);
        CHECK_EQ(n, sizes[k]);
        char *in = mtest_malloc(n);
        MPI_Recv(in, n, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st);
        CHECK_DATA(in, (size_t)n, peer, k, "probed message");
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        free(in);
        free(out);
    }

    /* 2. Iprobe: false for a tag nobody uses; true eventually for a sent message. */
    MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, &st);
    CHECK(!flag, "Iprobe found a message with tag 12345 that nobody sent");
    {
        int v = mtest_rank, r = -1;
        MPI_Request req;
        MPI_Isend(&v, 1, MPI_INT, peer, 77, MPI_COMM_WORLD, &req);
        do
            MPI_Iprobe(peer, 77, MPI_COMM_WORLD, &flag, &st);
        while (!flag);
        CHECK_EQ(st.MPI_SOURCE, peer);
        CHECK_EQ(st.MPI_TAG, 77);
        MPI_Get_count(&st, MPI_INT, &n);
        CHECK_EQ(n, 1);
        MPI_Recv(&r, 1, MPI_INT, peer, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK_EQ(r, peer);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }

    /* 3. Probe picks the first message in order; the tag filter skips to a later one. */
    {
        int v[3] = {1, 2, 3}, r;
        MPI_Request req[3];
        for (int i = 0; i < 3; i++)
            MPI_Isend(&v[i], 1, MPI_INT, peer, 80 + i, MPI_COMM_WORLD, &req[i]);
        MPI_Probe(peer, 82, MPI_COMM_WORLD, &st);
        CHECK_EQ(st.MPI_TAG, 82);
        MPI_Probe(peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        CHECK_EQ(st.MPI_TAG, 80);
        for (int i = 0; i < 3; i++) {
            MPI_Recv(&r, 1, MPI_INT, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            CHECK_EQ(st.MPI_TAG, 80 + i);
            CHECK_EQ(r, i + 1);
        }
        MPI_Waitall(3, req, MPI_STATUSES_IGNORE);
    }

    /* 4. MPI_PROC_NULL. */
    MPI_Probe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st);
    CHECK_PROC_NULL_STATUS(st, MPI_INT);
    flag = 0;
    MPI_Iprobe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag, "Iprobe(MPI_PROC_NULL) returned flag false");
    CHECK_PROC_NULL_STATUS(st, MPI_INT);

    return MTest_Finalize();
}
