/*
 * part_errors.c - error classes of partitioned communication (MPI-4.0 chapter 4) under
 * MPI_ERRORS_RETURN, each call leaving the request usable:
 *   partitions < 1 -> MPI_ERR_ARG; count < 0 -> MPI_ERR_COUNT; a wildcard source or tag on
 *   MPI_Precv_init -> MPI_ERR_RANK / MPI_ERR_TAG; MPI_Pready on an inactive request or on a
 *   receive, MPI_Parrived on an inactive request or on a send, MPI_Start on an active one ->
 *   MPI_ERR_REQUEST; a partition out of range, marked ready twice, or an empty range ->
 *   MPI_ERR_ARG; a negative list length -> MPI_ERR_ARG. The exchange then completes normally.
 *   MPI_Cancel leaves a partitioned receive to complete normally; totals that differ end in
 *   MPI_ERR_TRUNCATE at both sides. Runs on any number of ranks (each rank talks to itself).
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int me = mtest_rank, sbuf[8] = {1, 2, 3, 4, 5, 6, 7, 8}, rbuf[8] = {0};
    MPI_Request s, r, x;
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Info ni = MPI_INFO_NULL;

    CHECK_CLASS(MPI_Psend_init(sbuf, 0, 2, MPI_INT, me, 1, w, ni, &x), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Psend_init(sbuf, -3, 2, MPI_INT, me, 1, w, ni, &x), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Precv_init(rbuf, 0, 2, MPI_INT, me, 1, w, ni, &x), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Psend_init(sbuf, 2, -1, MPI_INT, me, 1, w, ni, &x), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_Precv_init(rbuf, 2, 2, MPI_INT, MPI_ANY_SOURCE, 1, w, ni, &x), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Precv_init(rbuf, 2, 2, MPI_INT, me, MPI_ANY_TAG, w, ni, &x), MPI_ERR_TAG);

    CALL(MPI_Psend_init(sbuf, 4, 2, MPI_INT, me, 1, w, ni, &s));
    CALL(MPI_Precv_init(rbuf, 4, 2, MPI_INT, me, 1, w, ni, &r));
    int flag = 0;
    CHECK_CLASS(MPI_Pready(0, s), MPI_ERR_REQUEST);          /* not started */
    CHECK_CLASS(MPI_Parrived(r, 0, &flag), MPI_ERR_REQUEST); /* not started */
    CALL(MPI_Start(&s));
    CALL(MPI_Start(&r));
    CHECK_CLASS(MPI_Start(&s), MPI_ERR_REQUEST); /* active */
    CHECK_CLASS(MPI_Pready(4, s), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Pready(-1, s), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Pready_range(2, 1, s), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Pready_range(3, 4, s), MPI_ERR_ARG);
    int bad[2] = {1, 9};
    CHECK_CLASS(MPI_Pready_list(2, bad, s), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Pready(0, r), MPI_ERR_REQUEST);          /* a receive */
    CHECK_CLASS(MPI_Parrived(s, 0, &flag), MPI_ERR_REQUEST); /* a send */
    CHECK_CLASS(MPI_Parrived(r, 4, &flag), MPI_ERR_ARG);
    CALL(MPI_Pready(1, s));
    CHECK_CLASS(MPI_Pready(1, s), MPI_ERR_ARG); /* ready already */
    int dup[2] = {0, 0};
    CHECK_CLASS(MPI_Pready_list(2, dup, s), MPI_ERR_ARG);
    /* the failed calls marked nothing: 0, 2 and 3 are still to be readied */
    int rest[3] = {3, 0, 2};
    CALL(MPI_Pready_list(3, rest, s));
    CALL(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CALL(MPI_Wait(&s, MPI_STATUS_IGNORE));
    for (int i = 0; i < 8; i++)
        CHECK_EQ(rbuf[i], i + 1);
    CHECK_CLASS(MPI_Pready(0, s), MPI_ERR_REQUEST); /* inactive again */

    /* MPI_Cancel does not cancel a partitioned receive: the round completes normally */
    MPI_Status st;
    CALL(MPI_Start(&r));
    CALL(MPI_Start(&s));
    CALL(MPI_Cancel(&r));
    CHECK_CLASS(MPI_Pready_list(-1, rest, s), MPI_ERR_ARG);
    CALL(MPI_Pready_range(0, 3, s));
    CALL(MPI_Wait(&r, &st));
    CALL(MPI_Wait(&s, MPI_STATUS_IGNORE));
    int cancelled = 1;
    MPI_Test_cancelled(&st, &cancelled);
    CHECK(!cancelled, "a partitioned receive reports itself cancelled");
    CALL(MPI_Request_free(&s));
    CALL(MPI_Request_free(&r));

    /* totals that differ: 3 ints into 2 -> MPI_ERR_TRUNCATE at both ends */
    CALL(MPI_Psend_init(sbuf, 3, 1, MPI_INT, me, 2, w, ni, &s));
    CALL(MPI_Precv_init(rbuf, 2, 1, MPI_INT, me, 2, w, ni, &r));
    CALL(MPI_Start(&s));
    CALL(MPI_Start(&r));
    CALL(MPI_Pready_range(0, 2, s));
    CHECK_CLASS(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_ERR_TRUNCATE);
    CHECK_CLASS(MPI_Wait(&s, MPI_STATUS_IGNORE), MPI_ERR_TRUNCATE);
    CALL(MPI_Request_free(&s));
    CALL(MPI_Request_free(&r));
    return MTest_Finalize();
}
