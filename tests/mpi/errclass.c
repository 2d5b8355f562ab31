/*
 * errclass.c - argument checking (MPI-3.1 sections 2.8 and 8.4) under MPI_ERRORS_RETURN: each
 * bad argument gives its error class and a non-empty error string, and the library keeps
 * working afterwards: bad rank (MPI_ERR_RANK), bad tag (MPI_ERR_TAG), negative count
 * (MPI_ERR_COUNT), MPI_COMM_NULL (MPI_ERR_COMM), MPI_DATATYPE_NULL (MPI_ERR_TYPE), NULL buffer
 * with count > 0 (MPI_ERR_BUFFER), bad root (MPI_ERR_ROOT), MPI_OP_NULL (MPI_ERR_OP), and
 * invalid requests (MPI_ERR_REQUEST). Runs with any number of ranks.
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm w = MPI_COMM_WORLD;
    int buf[4] = {0}, tag_ub = 32767, *ub = NULL, flag = 0;
    MPI_Request req;

    MPI_Comm_set_errhandler(w, MPI_ERRORS_RETURN);
    MPI_Comm_get_attr(w, MPI_TAG_UB, &ub, &flag);
    if (flag)
        tag_ub = *ub;

    /* ranks */
    CHECK_CLASS(MPI_Send(buf, 1, MPI_INT, mtest_size, 0, w), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Send(buf, 1, MPI_INT, -5, 0, w), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Send(buf, 1, MPI_INT, MPI_ANY_SOURCE, 0, w), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Recv(buf, 1, MPI_INT, mtest_size + 1, 0, w, MPI_STATUS_IGNORE), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Isend(buf, 1, MPI_INT, mtest_size, 0, w, &req), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Irecv(buf, 1, MPI_INT, -7, 0, w, &req), MPI_ERR_RANK);

    /* tags */
    CHECK_CLASS(MPI_Send(buf, 1, MPI_INT, 0, -1, w), MPI_ERR_TAG);
    CHECK_CLASS(MPI_Send(buf, 1, MPI_INT, 0, MPI_ANY_TAG, w), MPI_ERR_TAG);
    CHECK_CLASS(MPI_Recv(buf, 1, MPI_INT, 0, -3, w, MPI_STATUS_IGNORE), MPI_ERR_TAG);
    if (tag_ub < 0x7fffffff)
        CHECK_CLASS(MPI_Isend(buf, 1, MPI_INT, 0, tag_ub + 1, w, &req), MPI_ERR_TAG);

    /* counts */
    CHECK_CLASS(MPI_Send(buf, -1, MPI_INT, 0, 0, w), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_Irecv(buf, -2, MPI_INT, 0, 0, w, &req), MPI_ERR_COUNT);

    /* communicator */
    CHECK_CLASS(MPI_Send(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM);
    CHECK_CLASS(MPI_Recv(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL, MPI_STATUS_IGNORE), MPI_ERR_COMM);
    int r;
    CHECK_CLASS(MPI_Comm_rank(MPI_COMM_NULL, &r), MPI_ERR_COMM);
    CHECK_CLASS(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM);

    /* datatype */
    CHECK_CLASS(MPI_Send(buf, 1, MPI_DATATYPE_NULL, 0, 0, w), MPI_ERR_TYPE);
    CHECK_CLASS(MPI_Irecv(buf, 1, MPI_DATATYPE_NULL, 0, 0, w, &req), MPI_ERR_TYPE);

    /* buffer */
    CHECK_CLASS(MPI_Send(NULL, 4, MPI_INT, 0, 0, w), MPI_ERR_BUFFER);
    CHECK_CLASS(MPI_Recv(NULL, 4, MPI_INT, 0, 0, w, MPI_STATUS_IGNORE), MPI_ERR_BUFFER);

    /* root and op (collectives: every rank makes the same bad call) */
    CHECK_CLASS(MPI_Bcast(buf, 1, MPI_INT, mtest_size, w), MPI_ERR_ROOT);
    CHECK_CLASS(MPI_Bcast(buf, 1, MPI_INT, -1, w), MPI_ERR_ROOT);
    CHECK_CLASS(MPI_Reduce(buf, buf + 1, 1, MPI_INT, MPI_SUM, mtest_size + 2, w), MPI_ERR_ROOT);
    CHECK_CLASS(MPI_Allreduce(buf, buf + 1, 1, MPI_INT, MPI_OP_NULL, w), MPI_ERR_OP);

    /* requests */
    req = MPI_REQUEST_NULL;
    CHECK_CLASS(MPI_Start(&req), MPI_ERR_REQUEST);
    req = MPI_REQUEST_NULL;
    CHECK_CLASS(MPI_Request_free(&req), MPI_ERR_REQUEST);
    {
        MPI_Request nonpersistent;
        int v = 1, x = 0;
        MPI_Irecv(&x, 1, MPI_INT, mtest_rank, 9, w, &nonpersistent);
        CHECK_CLASS(MPI_Start(&nonpersistent), MPI_ERR_REQUEST);
        MPI_Send(&v, 1, MPI_INT, mtest_rank, 9, w);
        CALL(MPI_Wait(&nonpersistent, MPI_STATUS_IGNORE));
        CHECK_EQ(x, 1);
    }

    /* Still working after all that. */
    int v = mtest_rank, got = -1, sum = 0;
    CALL(MPI_Sendrecv(&v, 1, MPI_INT, mtest_partner(), 1, &got, 1, MPI_INT, mtest_partner(), 1, w,
                      MPI_STATUS_IGNORE));
    CHECK_EQ(got, mtest_partner());
    CALL(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, w));
    CHECK_EQ(sum, mtest_size * (mtest_size - 1) / 2);
    MPI_Comm_set_errhandler(w, MPI_ERRORS_ARE_FATAL);
    return MTest_Finalize();
}
