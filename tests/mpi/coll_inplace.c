/*
 * coll_inplace.c - MPI_IN_PLACE everywhere MPI-3.1 chapter 5 allows it on an intracommunicator,
 * in the blocking and the nonblocking form, checked against a serial reference:
 *  - Gather(v) at the root (its block is already in place), Scatter(v) at the root (its block
 *    stays in the send buffer, the receive buffer is not used);
 *  - Allgather(v) (every rank's block already in the receive buffer);
 *  - Alltoall(v,w) (sent data is read from the receive buffer before it is overwritten;
 *    symmetric counts as the standard requires);
 *  - Reduce at the root, Allreduce, Reduce_scatter(_block) (input is the whole receive buffer,
 *    result at its start), Scan and Exscan.
 * Each at every root where there is one. Runs with any number of ranks.
 */
#include "mtest.h"

#define SENT (-55)

static int P, me, nb;

/* Blocking or nonblocking (then waited for) form of one collective. */
#define COLL(blocking, nonblocking, ...)                                  \
    do {                                                                  \
        if (nb) {                                                         \
            MPI_Request r_ = MPI_REQUEST_NULL;                            \
            CALL(nonblocking(__VA_ARGS__, &r_));                          \
            CALL(MPI_Wait(&r_, MPI_STATUS_IGNORE));                       \
        } else                                                            \
            CALL(blocking(__VA_ARGS__));                                  \
    } while (0)

static int val(int from, int to, int k) { return 1 + from * 1000 + to * 10 + k; }
static int cnt(int r) { return r % 3 + 1; }

static void check_ints(const char *what, int root, const int *got, const int *want, int n)
{
    for (int i = 0; i < n; i++)
        if (got[i] != want[i]) {
            FAIL("%s (%s) root %d: element %d is %d, want %d", what, nb ? "nonblocking" : "blocking", root, i,
                 got[i], want[i]);
            return;
        }
}

static void gather_scatter(void)
{
    enum { C = 3 };
    int *buf = mtest_malloc(P * C * sizeof(int)), *want = mtest_malloc(P * C * sizeof(int));
    int *counts = mtest_malloc(P * sizeof(int)), *displs = mtest_malloc(P * sizeof(int));
    int mine[C + 1], span = 0;
    for (int r = P - 1; r >= 0; r--) { /* backwards */
        counts[r] = cnt(r);
        displs[r] = span;
        span += cnt(r);
    }
    for (int root = 0; root < P; root++) {
        /* Gather: the root's block already sits in place */
        for (int k = 0; k < C; k++)
            mine[k] = val(me, 0, k);
        for (int i = 0; i < P * C; i++)
            buf[i] = me == root ? (i / C == root ? val(root, 0, i % C) : SENT) : SENT;
        if (me == root)
            COLL(MPI_Gather, MPI_Igather, MPI_IN_PLACE, C, MPI_INT, buf, C, MPI_INT, root, MPI_COMM_WORLD);
        else
            COLL(MPI_Gather, MPI_Igather, mine, C, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
        if (me == root) {
            for (int i = 0; i < P * C; i++)
                want[i] = val(i / C, 0, i % C);
            check_ints("Gather IN_PLACE", root, buf, want, P * C);
        }
        /* Gatherv */
        for (int i = 0; i < span; i++)
            buf[i] = SENT;
        if (me == root) {
            for (int k = 0; k < cnt(root); k++)
                buf[displs[root] + k] = val(root, 1, k);
            COLL(MPI_Gatherv, MPI_Igatherv, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs, MPI_INT, root,
                 MPI_COMM_WORLD);
            for (int r = 0; r < P; r++)
                for (int k = 0; k < cnt(r); k++)
                    want[displs[r] + k] = val(r, 1, k);
            check_ints("Gatherv IN_PLACE", root, buf, want, span);
        } else {
            for (int k = 0; k < cnt(me); k++)
                mine[k] = val(me, 1, k);
            COLL(MPI_Gatherv, MPI_Igatherv, mine, cnt(me), MPI_INT, NULL, NULL, NULL, MPI_INT, root, MPI_COMM_WORLD);
        }
        /* Scatter: the root keeps its block in the send buffer, its receive buffer is unused */
        for (int i = 0; i < P * C; i++)
            buf[i] = val(root, i / C, i % C);
        for (int k = 0; k <= C; k++)
            mine[k] = SENT;
        if (me == root) {
            COLL(MPI_Scatter, MPI_Iscatter, buf, C, MPI_INT, MPI_IN_PLACE, C, MPI_INT, root, MPI_COMM_WORLD);
            for (int i = 0; i < P * C; i++)
                want[i] = val(root, i / C, i % C);
            check_ints("Scatter IN_PLACE (root's send buffer)", root, buf, want, P * C);
        } else {
            COLL(MPI_Scatter, MPI_Iscatter, NULL, 0, MPI_DATATYPE_NULL, mine, C, MPI_INT, root, MPI_COMM_WORLD);
            for (int k = 0; k < C; k++)
                want[k] = val(root, me, k);
            want[C] = SENT;
            check_ints("Scatter IN_PLACE (non-root)", root, mine, want, C + 1);
        }
        /* Scatterv */
        for (int k = 0; k <= C; k++)
            mine[k] = SENT;
        if (me == root) {
            for (int r = 0; r < P; r++)
                for (int k = 0; k < cnt(r); k++)
                    buf[displs[r] + k] = val(root, r, k);
            memcpy(want, buf, span * sizeof(int));
            COLL(MPI_Scatterv, MPI_Iscatterv, buf, counts, displs, MPI_INT, MPI_IN_PLACE, 0, MPI_INT, root,
                 MPI_COMM_WORLD);
            check_ints("Scatterv IN_PLACE (root's send buffer)", root, buf, want, span);
        } else {
            COLL(MPI_Scatterv, MPI_Iscatterv, NULL, NULL, NULL, MPI_INT, mine, cnt(me), MPI_INT, root, MPI_COMM_WORLD);
            for (int k = 0; k < cnt(me); k++)
                want[k] = val(root, me, k);
            want[cnt(me)] = SENT;
            check_ints("Scatterv IN_PLACE (non-root)", root, mine, want, cnt(me) + 1);
        }
    }
    free(buf);
    free(want);
    free(counts);
    free(displs);
}

static void allgathers(void)
{
    enum { C = 2 };
    int *buf = mtest_malloc((P * C + 1) * sizeof(int)), *want = mtest_malloc((P * C + 1) * sizeof(int));
    int *counts = mtest_malloc(P * sizeof(int)), *displs = mtest_malloc(P * sizeof(int));
    for (int i = 0; i < P * C; i++) {
        buf[i] = i / C == me ? val(me, 2, i % C) : SENT;
        want[i] = val(i / C, 2, i % C);
    }
    COLL(MPI_Allgather, MPI_Iallgather, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, C, MPI_INT, MPI_COMM_WORLD);
    check_ints("Allgather IN_PLACE", -1, buf, want, P * C);
    int span = 0;
    for (int r = 0; r < P; r++) { /* odd ranks first */
        int q = (2 * r + 1 < P) ? 2 * r + 1 : 2 * (r - P / 2);
        counts[q] = cnt(q) - 1; /* some zero */
        displs[q] = span;
        span += counts[q];
    }
    for (int i = 0; i < span; i++)
        buf[i] = SENT;
    for (int k = 0; k < counts[me]; k++)
        buf[displs[me] + k] = val(me, 3, k);
    for (int r = 0; r < P; r++)
        for (int k = 0; k < counts[r]; k++)
            want[displs[r] + k] = val(r, 3, k);
    COLL(MPI_Allgatherv, MPI_Iallgatherv, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs, MPI_INT,
         MPI_COMM_WORLD);
    check_ints("Allgatherv IN_PLACE", -1, buf, want, span);
    free(buf);
    free(want);
    free(counts);
    free(displs);
}

/* Symmetric pair counts, so that in-place alltoallv/w is well defined. */
static int sym(int i, int j) { return (i + j) % 3 + (i == j); }

static void alltoalls(void)
{
    enum { C = 2 };
    int *buf = mtest_malloc(P * 4 * sizeof(int)), *want = mtest_malloc(P * 4 * sizeof(int));
    int *counts = mtest_malloc(P * sizeof(int)), *displs = mtest_malloc(P * sizeof(int));
    MPI_Datatype *types = mtest_malloc(P * sizeof(MPI_Datatype));
    for (int i = 0; i < P * C; i++) {
        buf[i] = val(me, i / C, i % C);
        want[i] = val(i / C, me, i % C);
    }
    COLL(MPI_Alltoall, MPI_Ialltoall, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, C, MPI_INT, MPI_COMM_WORLD);
    check_ints("Alltoall IN_PLACE", -1, buf, want, P * C);
    int span = 0;
    for (int r = P - 1; r >= 0; r--) {
        counts[r] = sym(me, r);
        displs[r] = span;
        span += counts[r] + 1;
    }
    for (int i = 0; i < span; i++)
        buf[i] = want[i] = SENT;
    for (int r = 0; r < P; r++)
        for (int k = 0; k < counts[r]; k++) {
            buf[displs[r] + k] = val(me, r, k);
            want[displs[r] + k] = val(r, me, k);
        }
    COLL(MPI_Alltoallv, MPI_Ialltoallv, MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, buf, counts, displs, MPI_INT,
         MPI_COMM_WORLD);
    check_ints("Alltoallv IN_PLACE", -1, buf, want, span);
    /* Alltoallw: the same layout in bytes */
    for (int r = 0; r < P; r++) {
        displs[r] *= sizeof(int);
        types[r] = MPI_INT;
    }
    for (int i = 0; i < span; i++)
        buf[i] = want[i] = SENT;
    for (int r = 0; r < P; r++)
        for (int k = 0; k < counts[r]; k++) {
            buf[displs[r] / sizeof(int) + k] = val(me, r, k + 5);
            want[displs[r] / sizeof(int) + k] = val(r, me, k + 5);
        }
    COLL(MPI_Alltoallw, MPI_Ialltoallw, MPI_IN_PLACE, NULL, NULL, NULL, buf, counts, displs, types, MPI_COMM_WORLD);
    check_ints("Alltoallw IN_PLACE", -1, buf, want, span);
    free(buf);
    free(want);
    free(counts);
    free(displs);
    free(types);
}

static void reductions(void)
{
    enum { C = 4 };
    int n = P * C;
    int *buf = mtest_malloc(n * sizeof(int)), *want = mtest_malloc(n * sizeof(int));
    int *counts = mtest_malloc(P * sizeof(int));
    for (int root = 0; root < P; root++) {
        for (int i = 0; i < C; i++)
            buf[i] = val(me, root, i);
        if (me == root)
            COLL(MPI_Reduce, MPI_Ireduce, MPI_IN_PLACE, buf, C, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
        else
            COLL(MPI_Reduce, MPI_Ireduce, buf, NULL, C, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
        if (me == root) {
            for (int i = 0; i < C; i++) {
                want[i] = 0;
                for (int r = 0; r < P; r++)
                    want[i] += val(r, root, i);
            }
            check_ints("Reduce IN_PLACE", root, buf, want, C);
        }
    }
    /* Allreduce, Scan, Exscan: input in the receive buffer */
    for (int c = 0; c < 3; c++) {
        for (int i = 0; i < C; i++)
            buf[i] = val(me, c, i);
        int hi = c == 0 ? P : c == 1 ? me + 1 : me;
        for (int i = 0; i < C; i++) {
            want[i] = 0;
            for (int r = 0; r < hi; r++)
                want[i] += val(r, c, i);
        }
        if (c == 0) {
            COLL(MPI_Allreduce, MPI_Iallreduce, MPI_IN_PLACE, buf, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            check_ints("Allreduce IN_PLACE", -1, buf, want, C);
        } else if (c == 1) {
            COLL(MPI_Scan, MPI_Iscan, MPI_IN_PLACE, buf, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            check_ints("Scan IN_PLACE", -1, buf, want, C);
        } else {
            COLL(MPI_Exscan, MPI_Iexscan, MPI_IN_PLACE, buf, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            if (me > 0)
                check_ints("Exscan IN_PLACE", -1, buf, want, C);
        }
    }
    /* Reduce_scatter_block / Reduce_scatter: the whole input vector in the receive buffer */
    for (int i = 0; i < n; i++)
        buf[i] = val(me, 7, i);
    COLL(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, MPI_IN_PLACE, buf, C, MPI_INT, MPI_SUM,
         MPI_COMM_WORLD);
    for (int i = 0; i < C; i++) {
        want[i] = 0;
        for (int r = 0; r < P; r++)
            want[i] += val(r, 7, me * C + i);
    }
    check_ints("Reduce_scatter_block IN_PLACE", -1, buf, want, C);
    int total = 0, before = 0;
    for (int r = 0; r < P; r++) {
        counts[r] = (r * 5 + 2) % C; /* uneven, some zero */
        if (r < me)
            before += counts[r];
        total += counts[r];
    }
    for (int i = 0; i < total; i++)
        buf[i] = val(me, 8, i);
    COLL(MPI_Reduce_scatter, MPI_Ireduce_scatter, MPI_IN_PLACE, buf, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < counts[me]; i++) {
        want[i] = 0;
        for (int r = 0; r < P; r++)
            want[i] += val(r, 8, before + i);
    }
    check_ints("Reduce_scatter IN_PLACE", -1, buf, want, counts[me]);
    free(buf);
    free(want);
    free(counts);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    P = mtest_size;
    me = mtest_rank;
    for (nb = 0; nb < 2; nb++) {
        gather_scatter();
        allgathers();
        alltoalls();
        reductions();
    }
    return MTest_Finalize();
}
