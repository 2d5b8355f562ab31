/*
 * dt_overlap.c - receiving into a datatype whose blocks overlap in memory is erroneous
 * (MPI-3.1 section 4.1: "the type map of a receive buffer must not specify overlapping
 * entries"), and Reflex detects it: the receive fails with MPI_ERR_TYPE or MPI_ERR_BUFFER, and
 * nothing is silently overwritten. Sending from such a type is legal and must work.
 * Two types: an indexed type whose two blocks share an int, and a type without overlap inside
 * but whose extent (resized to 4 bytes for 2 ints) makes consecutive copies overlap (count 2).
 * MPICH 4.0.2 and Open MPI 4.1.4 do not detect this, so the testlist runs it for Reflex only.
 * Every rank talks to itself.
 */
#include "mtest.h"

#define CHECK_OVERLAP_ERROR(rc, what)                                                                   \
    do {                                                                                                \
        int r_ = (rc), c_ = -1;                                                                         \
        if (r_ == MPI_SUCCESS) {                                                                        \
            mtest_report(__FILE__, __LINE__, what, "returned MPI_SUCCESS, want MPI_ERR_TYPE or MPI_ERR_BUFFER"); \
            break;                                                                                      \
        }                                                                                               \
        MPI_Error_class(r_, &c_);                                                                       \
        if (c_ != MPI_ERR_TYPE && c_ != MPI_ERR_BUFFER)                                                 \
            mtest_report(__FILE__, __LINE__, what, "class %d (%s), want MPI_ERR_TYPE or MPI_ERR_BUFFER", c_, \
                         mtest_errstr(r_));                                                             \
    } while (0)

/* Receive 4 ints sent to self into (type, count); the receive must fail. Drain the message when
 * the failed receive left it queued. */
static void recv_must_fail(MPI_Datatype t, int count, int tag, const char *what)
{
    int out[4] = {11, 22, 33, 44}, in[8], drain[4];
    MPI_Request sr, rr;
    for (int i = 0; i < 8; i++)
        in[i] = -1;
    CALL(MPI_Isend(out, 4, MPI_INT, mtest_rank, tag, MPI_COMM_WORLD, &sr));
    int rc = MPI_Recv(in, count, t, mtest_rank, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK_OVERLAP_ERROR(rc, what);
    int flag = 0;
    MPI_Iprobe(mtest_rank, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    if (flag)
        MPI_Recv(drain, 4, MPI_INT, mtest_rank, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CALL(MPI_Wait(&sr, MPI_STATUS_IGNORE));

    /* nonblocking: the error comes from Irecv or from its completion */
    CALL(MPI_Isend(out, 4, MPI_INT, mtest_rank, tag + 1, MPI_COMM_WORLD, &sr));
    rc = MPI_Irecv(in, count, t, mtest_rank, tag + 1, MPI_COMM_WORLD, &rr);
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&rr, MPI_STATUS_IGNORE);
    CHECK_OVERLAP_ERROR(rc, what);
    flag = 0;
    MPI_Iprobe(mtest_rank, tag + 1, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    if (flag)
        MPI_Recv(drain, 4, MPI_INT, mtest_rank, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CALL(MPI_Wait(&sr, MPI_STATUS_IGNORE));
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    /* indexed {2 ints at 0, 2 ints at 1}: int 1 is in both blocks */
    int bl[2] = {2, 2}, ds[2] = {0, 1};
    MPI_Datatype ov, pair, shrunk;
    MPI_Type_indexed(2, bl, ds, MPI_INT, &ov);
    CALL(MPI_Type_commit(&ov));
    recv_must_fail(ov, 1, 10, "receive into indexed {0-1, 1-2}");

    /* sending from it is fine: ints 0 1 1 2 */
    int src[3] = {5, 6, 7}, got[4] = {0};
    CALL(MPI_Sendrecv(src, 1, ov, mtest_rank, 20, got, 4, MPI_INT, mtest_rank, 20, MPI_COMM_WORLD,
                      MPI_STATUS_IGNORE));
    CHECK(got[0] == 5 && got[1] == 6 && got[2] == 6 && got[3] == 7, "send from overlapping type: %d %d %d %d", got[0],
          got[1], got[2], got[3]);

    /* 2 ints with extent 4: two copies share an int */
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_create_resized(pair, 0, 4, &shrunk);
    CALL(MPI_Type_commit(&shrunk));
    recv_must_fail(shrunk, 2, 30, "receive into 2 x (2 ints resized to extent 4)");

    MPI_Type_free(&ov);
    MPI_Type_free(&pair);
    MPI_Type_free(&shrunk);
    return MTest_Finalize();
}
