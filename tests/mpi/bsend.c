/*
 * bsend.c - buffered mode (MPI-3.1 sections 3.4 and 3.6): with a buffer attached by
 * MPI_Buffer_attach (sized with MPI_Pack_size + MPI_BSEND_OVERHEAD), MPI_Bsend and MPI_Ibsend
 * complete locally before any receive is posted; MPI_Buffer_detach waits for the buffered
 * messages, returns the attached address and size, and the buffer can be attached again.
 * (Too small a buffer is bsend_small.c.) Ring: every rank sends to its right and receives from
 * its left (self at 1 rank).
 */
#include "mtest.h"

#define NMSG 5
#define LEN 20000

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int right = (mtest_rank + 1) % mtest_size, left = (mtest_rank + mtest_size - 1) % mtest_size;
    int packed = 0;
    MPI_Pack_size(LEN, MPI_BYTE, MPI_COMM_WORLD, &packed);
    int bsize = NMSG * (packed + MPI_BSEND_OVERHEAD);
    char *bbuf = mtest_malloc(bsize), *msg = mtest_malloc(LEN), *in = mtest_malloc(LEN);
    void *det = NULL;
    int detsize = 0;

    for (int round = 0; round < 2; round++) {
        CALL(MPI_Buffer_attach(bbuf, bsize));
        /* All sends complete before anyone receives: the receives come after a barrier. */
        for (int i = 0; i < NMSG; i++) {
            mtest_fill(msg, LEN, mtest_rank, 10 * round + i);
            if (i % 2) {
                MPI_Request r;
                MPI_Ibsend(msg, LEN, MPI_BYTE, right, i, MPI_COMM_WORLD, &r);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            } else {
                MPI_Bsend(msg, LEN, MPI_BYTE, right, i, MPI_COMM_WORLD);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = NMSG - 1; i >= 0; i--) { /* any order: tags tell them apart */
            MPI_Recv(in, LEN, MPI_BYTE, left, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK_DATA(in, LEN, left, 10 * round + i, "buffered message");
        }
        CALL(MPI_Buffer_detach(&det, &detsize));
        CHECK(det == bbuf, "detach returned %p, attached %p", det, (void *)bbuf);
        CHECK_EQ(detsize, bsize);
    }

    /* Detach with messages still in the buffer: detach blocks until they are delivered. */
    {
        CALL(MPI_Buffer_attach(bbuf, bsize));
        mtest_fill(msg, LEN, mtest_rank, 77);
        MPI_Bsend(msg, LEN, MPI_BYTE, right, 77, MPI_COMM_WORLD);
        MPI_Request r;
        MPI_Irecv(in, LEN, MPI_BYTE, left, 77, MPI_COMM_WORLD, &r);
        CALL(MPI_Buffer_detach(&det, &detsize));
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK_DATA(in, LEN, left, 77, "message buffered before detach");
    }

    {
        int v = mtest_rank, r = -1;
        MPI_Sendrecv(&v, 1, MPI_INT, right, 79, &r, 1, MPI_INT, left, 79, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK_EQ(r, left);
    }
    free(bbuf);
    free(msg);
    free(in);
    return MTest_Finalize();
}
