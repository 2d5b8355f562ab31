/*
 * rsend.c - ready mode (MPI-3.1 section 3.4): MPI_Rsend and MPI_Irsend are correct when the
 * matching receive is already posted, which a zero-byte "ready" message guarantees. Sizes from
 * 0 bytes to 1 MiB. Ring: receive from the left, send to the right (self at 1 rank).
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int right = (mtest_rank + 1) % mtest_size, left = (mtest_rank + mtest_size - 1) % mtest_size;
    const int sizes[] = {0, 8, 1000, 65536, 1 << 20};
    for (int k = 0; k < 5; k++) {
        for (int nonblocking = 0; nonblocking < 2; nonblocking++) {
            int len = sizes[k], seed = 2 * k + nonblocking;
            char *out = mtest_malloc(len), *in = mtest_malloc(len);
            MPI_Request rreq, ready, sreq;
            MPI_Status st;
            mtest_fill(out, len, mtest_rank, seed);
            MPI_Irecv(in, len, MPI_BYTE, left, 1, MPI_COMM_WORLD, &rreq);
            MPI_Isend(NULL, 0, MPI_BYTE, left, 2, MPI_COMM_WORLD, &ready); /* "my receive is posted" */
            MPI_Recv(NULL, 0, MPI_BYTE, right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (nonblocking) {
                MPI_Irsend(out, len, MPI_BYTE, right, 1, MPI_COMM_WORLD, &sreq);
                MPI_Wait(&sreq, MPI_STATUS_IGNORE);
            } else {
                MPI_Rsend(out, len, MPI_BYTE, right, 1, MPI_COMM_WORLD);
            }
            MPI_Wait(&rreq, &st);
            MPI_Wait(&ready, MPI_STATUS_IGNORE);
            int n = -1;
            MPI_Get_count(&st, MPI_BYTE, &n);
            CHECK_EQ(n, len);
            CHECK_DATA(in, (size_t)len, left, seed, "ready-mode message");
            free(out);
            free(in);
        }
    }
    return MTest_Finalize();
}
