/*
 * coll_alias.c - collective calls whose arguments the standard forbids but which the library
 * can see, under MPI_ERRORS_RETURN:
 *  - a send buffer that is the receive buffer (or this rank's block of it) instead of
 *    MPI_IN_PLACE -> MPI_ERR_BUFFER, at every rank and before any communication (Allreduce,
 *    Allgather with &recv[rank*n], Alltoall, Reduce_scatter_block, Scan, Iallreduce);
 *  - a Bcast whose receivers expect more data than the root sends (the type signatures differ,
 *    MPI-3.1 5.1) -> MPI_ERR_TRUNCATE where the root's data arrives ("collective arguments
 *    differ"): at least one rank must report it, none may report success with data it never got
 *    and then use it;
 *  - a Scatter whose root sends blocks longer than a receiver takes -> MPI_ERR_TRUNCATE at
 *    that receiver;
 *  - an Ibcast whose receivers expect more than the root sends -> an error at *every* non-root
 *    rank: those the root's data reaches directly see the length (MPI_ERR_TRUNCATE), those
 *    below them in the tree hear that their sender failed (MPI_ERR_OTHER);
 *  - an Ireduce where the others contribute fewer elements than the root reduces -> an error at
 *    the root; an Iallreduce where the last rank contributes fewer -> an error at every rank
 *    (contributions land in the schedule's temporaries, which are checked like user blocks);
 *  - an Iallgather where rank 0 sends fewer elements than each block holds (its own send and
 *    receive signatures differ) -> an error at every rank: rank 0 sees it locally, the others
 *    hear of it with rank 0's data.
 * After each erroneous call the communicator still works. Runs with any number of ranks.
 */
#include "mtest.h"

static int P, me;

/* every rank calls, every rank must get MPI_ERR_BUFFER */
static void aliasing(MPI_Comm w)
{
    int n = 4, *buf = mtest_malloc((size_t)n * P * sizeof(int));
    for (int i = 0; i < n * P; i++)
        buf[i] = i;
    MPI_Request rq = MPI_REQUEST_NULL;
    CHECK_CLASS(MPI_Allreduce(buf, buf, n, MPI_INT, MPI_SUM, w), MPI_ERR_BUFFER);
    CHECK_CLASS(MPI_Allgather(buf + me * n, n, MPI_INT, buf, n, MPI_INT, w), MPI_ERR_BUFFER);
    CHECK_CLASS(MPI_Alltoall(buf, 1, MPI_INT, buf, 1, MPI_INT, w), MPI_ERR_BUFFER);
    CHECK_CLASS(MPI_Reduce_scatter_block(buf, buf, 1, MPI_INT, MPI_SUM, w), MPI_ERR_BUFFER);
    CHECK_CLASS(MPI_Scan(buf, buf, n, MPI_INT, MPI_SUM, w), MPI_ERR_BUFFER);
    CHECK_CLASS(MPI_Iallreduce(buf, buf, n, MPI_INT, MPI_MAX, w, &rq), MPI_ERR_BUFFER);
    CHECK(rq == MPI_REQUEST_NULL, "a failed Iallreduce returned a request");
    for (int i = 0; i < n * P; i++)
        CHECK(buf[i] == i, "a refused call changed buf[%d] to %d", i, buf[i]);
    /* distinct buffers of the same shape are fine */
    int *out = mtest_malloc((size_t)n * P * sizeof(int));
    CALL(MPI_Allgather(buf + me * n, n, MPI_INT, out, n, MPI_INT, w));
    for (int i = 0; i < n * P; i++)
        CHECK_EQ(out[i], i);
    free(out);
    free(buf);
}

/* the outcome of a nonblocking call started with rc and request rq, once it is over */
static int outcome(int rc, MPI_Request *rq)
{
    return rc == MPI_SUCCESS ? MPI_Wait(rq, MPI_STATUS_IGNORE) : rc;
}

/* the root sends 2 ints, the others expect 4 */
static void short_bcast(MPI_Comm d)
{
    int buf[4] = {7, 7, 7, 7};
    if (me == 0)
        buf[0] = buf[1] = 5;
    int rc = MPI_Bcast(buf, me == 0 ? 2 : 4, MPI_INT, 0, d);
    int cls = MPI_SUCCESS, truncated, any = 0;
    MPI_Error_class(rc, &cls);
    /* MPI_ERR_OTHER: a rank below one that failed, in a tree */
    CHECK(cls == MPI_SUCCESS || cls == MPI_ERR_TRUNCATE || cls == MPI_ERR_OTHER, "short Bcast: class %d", cls);
    truncated = cls == MPI_ERR_TRUNCATE;
    CALL(MPI_Allreduce(&truncated, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    CHECK(any == 1, "no rank reported MPI_ERR_TRUNCATE for a Bcast that sent less than expected");
}

/* the root sends 2 ints, the others expect 4, nonblocking: every non-root must fail */
static void short_ibcast(MPI_Comm d)
{
    int buf[4] = {0};
    MPI_Request rq;
    int rc = outcome(MPI_Ibcast(buf, me == 0 ? 2 : 4, MPI_INT, 0, d, &rq), &rq);
    if (me != 0)
        CHECK_CLASS2(rc, MPI_ERR_TRUNCATE, MPI_ERR_OTHER);
}

/* the root sends blocks of 3 ints, the last rank takes 2 */
static void long_scatter(MPI_Comm d)
{
    int *all = mtest_malloc(3 * (size_t)P * sizeof(int)), got[3] = {0};
    for (int i = 0; i < 3 * P; i++)
        all[i] = i;
    int take = me == P - 1 ? 2 : 3;
    int rc = MPI_Scatter(all, 3, MPI_INT, got, take, MPI_INT, 0, d);
    if (me == P - 1)
        CHECK_CLASS(rc, MPI_ERR_TRUNCATE);
    else if (rc == MPI_SUCCESS)
        for (int i = 0; i < 3; i++)
            CHECK_EQ(got[i], 3 * me + i);
    free(all);
}

/* the root reduces 4 ints, the others contribute 1 */
static void short_ireduce(MPI_Comm d)
{
    int in[4] = {1, 1, 1, 1}, out[4] = {0};
    MPI_Request rq;
    int rc = outcome(MPI_Ireduce(in, out, me == 0 ? 4 : 1, MPI_INT, MPI_SUM, 0, d, &rq), &rq);
    if (me == 0)
        CHECK_CLASS2(rc, MPI_ERR_TRUNCATE, MPI_ERR_OTHER);
}

/* the last rank contributes 1 int, the others 4 */
static void short_iallreduce(MPI_Comm d)
{
    int in[4] = {1, 1, 1, 1}, out[4] = {0};
    MPI_Request rq;
    int rc = outcome(MPI_Iallreduce(in, out, me == P - 1 ? 1 : 4, MPI_INT, MPI_SUM, d, &rq), &rq);
    CHECK_CLASS2(rc, MPI_ERR_TRUNCATE, MPI_ERR_OTHER);
}

/* rank 0 sends 1 int, every block holds 4 */
static void short_iallgather(MPI_Comm d)
{
    int in[4] = {1, 2, 3, 4}, *out = mtest_malloc(4 * (size_t)P * sizeof(int));
    MPI_Request rq;
    int rc = outcome(MPI_Iallgather(in, me == 0 ? 1 : 4, MPI_INT, out, 4, MPI_INT, d, &rq), &rq);
    CHECK_CLASS2(rc, MPI_ERR_TRUNCATE, MPI_ERR_OTHER);
    free(out);
}

/* runs one erroneous collective on a communicator of its own, freed after (stray data of a
 * failed collective must not reach a later one) */
static void on_own_comm(void (*mismatch)(MPI_Comm))
{
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
    mismatch(d);
    MPI_Comm_free(&d);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Comm_set_errhandler(w, MPI_ERRORS_RETURN);
    P = mtest_size;
    me = mtest_rank;
    aliasing(w);
    if (P > 1) {
        on_own_comm(short_bcast);
        on_own_comm(long_scatter);
        on_own_comm(short_ibcast);
        on_own_comm(short_ireduce);
        on_own_comm(short_iallreduce);
        on_own_comm(short_iallgather);
    }
    int one = 1, sum = 0;
    CALL(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, w));
    CHECK_EQ(sum, P);
    return MTest_Finalize();
}
