/*
 * sendrecv.c - MPI_Sendrecv and MPI_Sendrecv_replace (MPI-3.1 section 3.10) in a ring: every
 * rank sends to its right neighbour and receives from its left one in one call, with a named
 * and a wildcard source, for sizes from 0 bytes to 4 MiB, and around the ring several times
 * with the replace variant so the data comes back home. Runs with any number of ranks.
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int right = (mtest_rank + 1) % mtest_size, left = (mtest_rank + mtest_size - 1) % mtest_size;
    const int sizes[] = {0, 1, 4000, 100000, 4 << 20};
    MPI_Status st;
    int n;

    for (int k = 0; k < 5; k++) {
        int len = sizes[k];
        char *out = mtest_malloc(len), *in = mtest_malloc(len);
        mtest_fill(out, len, mtest_rank, k);
        for (int wild = 0; wild < 2; wild++) {
            memset(in, 0, len);
            MPI_Sendrecv(out, len, MPI_BYTE, right, 10 + k, in, len, MPI_BYTE,
                         wild ? MPI_ANY_SOURCE : left, wild ? MPI_ANY_TAG : 10 + k, MPI_COMM_WORLD, &st);
            CHECK_EQ(st.MPI_SOURCE, left);
            CHECK_EQ(st.MPI_TAG, 10 + k);
            MPI_Get_count(&st, MPI_BYTE, &n);
            CHECK_EQ(n, len);
            CHECK_DATA(in, (size_t)len, left, k, "Sendrecv");
        }

        /* Sendrecv_replace: one hop, then all the way round the ring. */
        memcpy(in, out, len);
        MPI_Sendrecv_replace(in, len, MPI_BYTE, right, 20, left, 20, MPI_COMM_WORLD, &st);
        CHECK_EQ(st.MPI_SOURCE, left);
        CHECK_DATA(in, (size_t)len, left, k, "Sendrecv_replace, one hop");
        for (int hop = 1; hop < mtest_size; hop++)
            MPI_Sendrecv_replace(in, len, MPI_BYTE, right, 21, left, 21, MPI_COMM_WORLD, &st);
        CHECK_DATA(in, (size_t)len, mtest_rank, k, "Sendrecv_replace, round the ring");
        free(out);
        free(in);
    }

    /* Different send and receive types and counts: 3 ints out, 12 bytes in. */
    int v[3] = {mtest_rank, mtest_rank + 1, mtest_rank + 2};
    int w[3] = {-1, -1, -1};
    MPI_Sendrecv(v, 3, MPI_INT, right, 30, w, 12, MPI_BYTE, left, 30, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_BYTE, &n);
    CHECK_EQ(n, 12);
    CHECK(w[0] == left && w[2] == left + 2, "got %d %d %d from %d", w[0], w[1], w[2], left);
    return MTest_Finalize();
}
