/*
 * coll_errors.c - error classes of erroneous collective calls under MPI_ERRORS_RETURN. Every
 * rank makes an erroneous call that fails before any communication, so nobody waits for a
 * partner that returned early:
 *  - an invalid root (size, -5) -> MPI_ERR_ROOT (Bcast, Reduce, Gather, Ibcast);
 *  - a negative count -> MPI_ERR_COUNT (Bcast, Allreduce, Allgather, Iallreduce), a negative
 *    entry of a count array -> MPI_ERR_COUNT (Alltoallv);
 *  - NULL count arrays -> MPI_ERR_ARG (Alltoallv; MPICH 4.0.2 crashes on a NULL Allgatherv
 *    recvcounts, so that case is left out);
 *  - a predefined operation on a derived datatype -> MPI_ERR_OP (Allreduce, Reduce_scatter_block,
 *    Scan);
 *  - MPI_IN_PLACE where the standard does not allow it: as both buffers of a gather's root and
 *    the send buffer of its other ranks (MPI_ERR_BUFFER; MPI_ERR_ARG accepted too).
 * Then, on a duplicate communicator, counts that differ between ranks: a Bcast whose root
 * sends more than the others receive, and a Gather whose root expects less than the others
 * send, give MPI_ERR_TRUNCATE where the data arrives (MPI-3.1 5.1 leaves other detection to
 * the implementation). Runs with any number of ranks.
 */
#include "mtest.h"

static int P, me;


int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Comm_set_errhandler(w, MPI_ERRORS_RETURN);
    P = mtest_size;
    me = mtest_rank;
    int buf[16] = {0}, out[16 * 8] = {0}, *cnt = mtest_malloc(P * sizeof(int)), *dsp = mtest_malloc(P * sizeof(int));
    for (int r = 0; r < P; r++) {
        cnt[r] = 1;
        dsp[r] = r;
    }
    int *big = mtest_malloc(16 * P * sizeof(int));
    MPI_Request rq = MPI_REQUEST_NULL;

    /* invalid roots */
    CHECK_CLASS(MPI_Bcast(buf, 1, MPI_INT, P, w), MPI_ERR_ROOT);
    CHECK_CLASS(MPI_Bcast(buf, 1, MPI_INT, -5, w), MPI_ERR_ROOT);
    CHECK_CLASS(MPI_Reduce(buf, out, 1, MPI_INT, MPI_SUM, P, w), MPI_ERR_ROOT);
    CHECK_CLASS(MPI_Gather(buf, 1, MPI_INT, big, 1, MPI_INT, -5, w), MPI_ERR_ROOT);
    CHECK_CLASS(MPI_Ibcast(buf, 1, MPI_INT, P + 3, w, &rq), MPI_ERR_ROOT);

    /* negative counts */
    CHECK_CLASS(MPI_Bcast(buf, -1, MPI_INT, 0, w), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_Allreduce(buf, out, -2, MPI_INT, MPI_SUM, w), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_Allgather(buf, -1, MPI_INT, big, -1, MPI_INT, w), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_Iallreduce(buf, out, -1, MPI_INT, MPI_SUM, w, &rq), MPI_ERR_COUNT);
    cnt[P - 1] = -1;
    CHECK_CLASS(MPI_Alltoallv(big, cnt, dsp, MPI_INT, out, cnt, dsp, MPI_INT, w), MPI_ERR_COUNT);
    cnt[P - 1] = 1;

    /* NULL count / displacement arrays */
    CHECK_CLASS(MPI_Alltoallv(big, NULL, dsp, MPI_INT, out, NULL, dsp, MPI_INT, w), MPI_ERR_ARG);

    /* predefined operation on a derived datatype */
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    CHECK_CLASS(MPI_Allreduce(buf, out, 1, pair, MPI_SUM, w), MPI_ERR_OP);
    CHECK_CLASS(MPI_Reduce_scatter_block(big, out, 1, pair, MPI_MAX, w), MPI_ERR_OP);
    CHECK_CLASS(MPI_Scan(buf, out, 1, pair, MPI_PROD, w), MPI_ERR_OP);
    MPI_Type_free(&pair);

    /* MPI_IN_PLACE where it is not allowed, at the non-roots of a gather (the root's call is wrong too:
     * a negative receive count) */
    if (me == 0)
        CHECK_CLASS(MPI_Gather(buf, 1, MPI_INT, big, -1, MPI_INT, 0, w), MPI_ERR_COUNT);
    else
        CHECK_CLASS2(MPI_Gather(MPI_IN_PLACE, 1, MPI_INT, big, 1, MPI_INT, 0, w), MPI_ERR_BUFFER, MPI_ERR_ARG);

    /* the communicator still works */
    int one = 1, sum = 0;
    CALL(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, w));
    CHECK_EQ(sum, P);

    /* counts that differ between ranks: truncation where the data lands */
    if (P > 1) {
        MPI_Comm d;
        MPI_Comm_dup(w, &d);
        MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
        int rc = MPI_Bcast(buf, me == 0 ? 4 : 2, MPI_INT, 0, d);
        /* Where the root's 4 ints land (its children in a tree; every rank in a flat scheme) the
         * block is truncated; ranks fed by a non-root get 2 ints and may succeed, or hear that
         * their sender failed (MPI_ERR_OTHER). */
        int cls = MPI_SUCCESS, truncated = 0, any = 0;
        if (rc != MPI_SUCCESS)
            MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_SUCCESS || cls == MPI_ERR_TRUNCATE || cls == MPI_ERR_OTHER,
              "Bcast with differing counts: class %d", cls);
        truncated = cls == MPI_ERR_TRUNCATE;
        CALL(MPI_Allreduce(&truncated, &any, 1, MPI_INT, MPI_MAX, w));
        CHECK(any == 1, "no rank reported MPI_ERR_TRUNCATE for a Bcast with differing counts");
        rc = MPI_Gather(buf, 4, MPI_INT, big, me == 0 ? 2 : 4, MPI_INT, 0, d);
        if (me == 0)
            CHECK_CLASS(rc, MPI_ERR_TRUNCATE);
        MPI_Comm_free(&d);
    }
    free(cnt);
    free(dsp);
    free(big);
    return MTest_Finalize();
}
