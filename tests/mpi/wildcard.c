/*
 * wildcard.c - matching by (source, tag, communicator) with MPI_ANY_SOURCE and MPI_ANY_TAG
 * (MPI-3.1 section 3.2.4): a receive for a specific tag skips earlier messages with other tags,
 * MPI_ANY_SOURCE with a specific tag picks the one sender using that tag, and the status always
 * names the actual source, tag and count. Needs >= 2 ranks.
 */
#include "mtest.h"

#define BIG (200 * 1024)

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    if (!MTest_NeedRanks(2))
        return MTest_Finalize();
    MPI_Status st;
    int n;

    /* 1. Specific tag skips a pending message with another tag (both small and large). */
    for (int big = 0; big < 2; big++) {
        size_t len = big ? BIG : 16;
        char *a = mtest_malloc(len), *b = mtest_malloc(len);
        if (mtest_rank == 1) {
            MPI_Request req[2];
            mtest_fill(a, len, 1, 1);
            mtest_fill(b, len, 1, 2);
            MPI_Isend(a, (int)len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &req[0]);
            MPI_Isend(b, (int)len, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &req[1]);
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        } else if (mtest_rank == 0) {
            MPI_Recv(b, (int)len, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &st);
            CHECK_EQ(st.MPI_TAG, 2);
            CHECK_DATA(b, len, 1, 2, "tag 2 received first");
            MPI_Recv(a, (int)len, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            CHECK_EQ(st.MPI_TAG, 1);
            CHECK_EQ(st.MPI_SOURCE, 1);
            MPI_Get_count(&st, MPI_BYTE, &n);
            CHECK_EQ(n, (int)len);
            CHECK_DATA(a, len, 1, 1, "tag 1 received second");
        }
        free(a);
        free(b);
        MPI_Barrier(MPI_COMM_WORLD); /* keep the next phase's messages out of this phase's wildcards */
    }

    /* 2. Every rank r > 0 sends tag r; rank 0 asks for each tag with MPI_ANY_SOURCE, in reverse. */
    if (mtest_rank > 0) {
        int v = 1000 + mtest_rank;
        MPI_Send(&v, 1, MPI_INT, 0, mtest_rank, MPI_COMM_WORLD);
    } else {
        for (int r = mtest_size - 1; r > 0; r--) {
            int v = -1;
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, r, MPI_COMM_WORLD, &st);
            CHECK_EQ(st.MPI_SOURCE, r);
            CHECK_EQ(st.MPI_TAG, r);
            CHECK_EQ(v, 1000 + r);
        }
    }

    MPI_Barrier(MPI_COMM_WORLD);
    /* 3. Specific source with MPI_ANY_TAG: every rank r > 0 sends two messages (tags 5 and 6). */
    if (mtest_rank > 0) {
        int v[2] = {mtest_rank * 10, mtest_rank * 10 + 1};
        MPI_Request req[2];
        MPI_Isend(&v[0], 1, MPI_INT, 0, 5, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(&v[1], 1, MPI_INT, 0, 6, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    } else {
        for (int r = mtest_size - 1; r > 0; r--)
            for (int k = 0; k < 2; k++) {
                int v = -1;
                MPI_Recv(&v, 1, MPI_INT, r, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
                CHECK_EQ(st.MPI_SOURCE, r);
                CHECK_EQ(st.MPI_TAG, 5 + k);
                CHECK_EQ(v, r * 10 + k);
            }
    }

    MPI_Barrier(MPI_COMM_WORLD);
    /* 4. Wildcards never match across communicators. */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    if (mtest_rank == 1) {
        int a = 1, b = 2;
        MPI_Request req[2];
        MPI_Isend(&a, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(&b, 1, MPI_INT, 0, 0, dup, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    } else if (mtest_rank == 0) {
        int v = -1;
        MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, dup, &st);
        CHECK(v == 2, "wildcard receive on a dup got %d, want the dup's message 2", v);
        MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        CHECK_EQ(v, 1);
    }
    MPI_Comm_free(&dup);
    return MTest_Finalize();
}
