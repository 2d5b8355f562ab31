/*
 * bsend_small.c - buffered send that does not fit (MPI-3.1 section 3.6): with a buffer too
 * small for the message attached, or none at all, MPI_Bsend and MPI_Ibsend fail with
 * MPI_ERR_BUFFER under MPI_ERRORS_RETURN instead of blocking or overrunning the buffer; the
 * buffer can be detached afterwards and the library keeps working. (Open MPI 4.1.4 blocks
 * forever here.) Runs with any number of ranks.
 */
#include "mtest.h"

#define LEN 20000

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int right = (mtest_rank + 1) % mtest_size, left = (mtest_rank + mtest_size - 1) % mtest_size;
    int small = 100 + MPI_BSEND_OVERHEAD, detsize = 0;
    char *bbuf = mtest_malloc(small), *msg = mtest_malloc(LEN);
    void *det = NULL;
    MPI_Request req;
    mtest_fill(msg, LEN, mtest_rank, 0);

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* No buffer attached at all. */
    CHECK_CLASS(MPI_Bsend(msg, LEN, MPI_BYTE, right, 1, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    /* A buffer too small. */
    CALL(MPI_Buffer_attach(bbuf, small));
    CHECK_CLASS(MPI_Bsend(msg, LEN, MPI_BYTE, right, 1, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    CHECK_CLASS(MPI_Ibsend(msg, LEN, MPI_BYTE, right, 1, MPI_COMM_WORLD, &req), MPI_ERR_BUFFER);
    /* A message that fits still works. */
    CALL(MPI_Bsend(msg, 50, MPI_BYTE, right, 2, MPI_COMM_WORLD));
    char in[50];
    CALL(MPI_Recv(in, 50, MPI_BYTE, left, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_DATA(in, 50, left, 0, "small buffered message");
    CALL(MPI_Buffer_detach(&det, &detsize));
    CHECK(det == bbuf, "detach returned %p, attached %p", det, (void *)bbuf);
    CHECK_EQ(detsize, small);

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    free(bbuf);
    free(msg);
    return MTest_Finalize();
}
