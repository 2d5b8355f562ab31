/*
 * dt_errors_reflex.c - datatype misuse that the standard calls erroneous without requiring
 * detection, and that Reflex detects (DESIGN: every call checks its arguments; never silent
 * corruption). Under MPI_ERRORS_RETURN:
 *  - a freed datatype handle in Type_size, Type_commit and Send: MPI_ERR_TYPE (MPICH 4.0.2 and
 *    Open MPI 4.1.4 both accept it and return MPI_SUCCESS);
 *  - MPI_Pack past the end of the output buffer and MPI_Unpack past the end of the input:
 *    MPI_ERR_TRUNCATE (Open MPI's class; MPI_ERR_ARG is also accepted; MPICH returns success),
 *    with the position unchanged;
 *  - create_subarray with a subsize larger than the size or a start past the end, and
 *    create_darray whose grid does not have `size` processes: MPI_ERR_ARG (Open MPI's class;
 *    MPICH returns success).
 * Reflex only in the testlist.
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int n, buf[64] = {0}, drain[64];

    /* a freed handle */
    MPI_Datatype t, saved;
    MPI_Type_contiguous(2, MPI_INT, &t);
    MPI_Type_commit(&t);
    saved = t;
    MPI_Type_free(&t);
    CHECK_CLASS(MPI_Type_size(saved, &n), MPI_ERR_TYPE);
    int rc = MPI_Send(buf, 1, saved, mtest_rank, 1, MPI_COMM_WORLD);
    CHECK_CLASS(rc, MPI_ERR_TYPE);
    if (rc == MPI_SUCCESS)
        MPI_Recv(drain, (int)sizeof drain, MPI_BYTE, mtest_rank, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK_CLASS(MPI_Type_commit(&saved), MPI_ERR_TYPE);

    /* Pack/Unpack past the buffer */
    MPI_Datatype four;
    MPI_Type_contiguous(4, MPI_INT, &four);
    MPI_Type_commit(&four);
    char out[64];
    int pos = 0;
    CHECK_CLASS2(MPI_Pack(buf, 10, MPI_INT, out, 8, &pos, MPI_COMM_WORLD), MPI_ERR_TRUNCATE, MPI_ERR_ARG);
    CHECK_EQ(pos, 0);
    pos = 4;
    CHECK_CLASS2(MPI_Pack(buf, 1, four, out, 16, &pos, MPI_COMM_WORLD), MPI_ERR_TRUNCATE, MPI_ERR_ARG);
    CHECK_EQ(pos, 4);
    pos = 0;
    CHECK_CLASS2(MPI_Unpack(out, 8, &pos, drain, 1, four, MPI_COMM_WORLD), MPI_ERR_TRUNCATE, MPI_ERR_ARG);
    CHECK_EQ(pos, 0);
    MPI_Type_free(&four);

    /* subarray and darray bounds */
    int sz[2] = {4, 4}, big[2] = {5, 1}, ss[2] = {2, 2}, st0[2] = {0, 0}, st3[2] = {3, 0};
    CHECK_CLASS(MPI_Type_create_subarray(2, sz, big, st0, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Type_create_subarray(2, sz, ss, st3, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG);
    int g[1] = {10}, dd[1] = {MPI_DISTRIBUTE_BLOCK}, da[1] = {MPI_DISTRIBUTE_DFLT_DARG}, ps[1] = {3};
    CHECK_CLASS(MPI_Type_create_darray(4, 1, 1, g, dd, da, ps, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG);
    return MTest_Finalize();
}
