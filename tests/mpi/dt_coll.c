/*
 * dt_coll.c - collectives with derived datatypes (MPI-3.1 chapter 5): the send and receive
 * types of a collective may differ as long as the signatures match, data lands in type-map
 * order, and gaps of the receive types are not written (checked against a sentinel).
 *  - Bcast: the root sends a vector of ints, the others receive contiguous ints (and the
 *    other way round).
 *  - Gather: each rank sends a vector(3, 1, 2) of ints; the root receives with a column type
 *    (vector(3, 1, P) resized to one int), so rank i's three ints land in column i of a 3 x P
 *    matrix.
 *  - Allgather: two struct {char, int, double} (padded, resized to sizeof) per rank.
 *  - Alltoall: rank j gets column j of the sender's 2 x P matrix of doubles (column type as
 *    above), received as 2 contiguous doubles.
 *  - Reduce and Allreduce with a user-defined sum (MPI_Op_create) over a contiguous(4) of
 *    doubles type and a vector(3, 1, 2) of ints type, count 2, every root; the predefined
 *    MPI_SUM on a derived type is MPI_ERR_OP (reductions define predefined operations on basic
 *    types only; both peers agree).
 * Runs with any number of ranks.
 */
#include "mtest.h"
#include <stddef.h>

#define SENT (-77)

struct cid {
    char c;
    int i;
    double d;
};

static void test_bcast(int P, int me)
{
    MPI_Datatype v;
    MPI_Type_vector(5, 1, 3, MPI_INT, &v); /* ints 0 3 6 9 12 */
    MPI_Type_commit(&v);
    for (int root = 0; root < P; root++) {
        int buf[15];
        for (int i = 0; i < 15; i++)
            buf[i] = me == root ? (i % 3 == 0 ? 1000 * root + i : -5) : SENT;
        if (me == root)
            CALL(MPI_Bcast(buf, 1, v, root, MPI_COMM_WORLD));
        else
            CALL(MPI_Bcast(buf, 5, MPI_INT, root, MPI_COMM_WORLD));
        for (int i = 0; i < 15; i++) {
            int want = me == root ? (i % 3 == 0 ? 1000 * root + i : -5) : (i < 5 ? 1000 * root + 3 * i : SENT);
            CHECK(buf[i] == want, "Bcast vector->contig root %d: int %d is %d, want %d", root, i, buf[i], want);
        }
        /* contiguous at the root, vector elsewhere */
        for (int i = 0; i < 15; i++)
            buf[i] = me == root ? 7 * root + i : SENT;
        if (me == root)
            CALL(MPI_Bcast(buf, 5, MPI_INT, root, MPI_COMM_WORLD));
        else
            CALL(MPI_Bcast(buf, 1, v, root, MPI_COMM_WORLD));
        for (int i = 0; i < 15; i++) {
            int want = me == root ? 7 * root + i : (i % 3 == 0 ? 7 * root + i / 3 : SENT);
            CHECK(buf[i] == want, "Bcast contig->vector root %d: int %d is %d, want %d", root, i, buf[i], want);
        }
    }
    MPI_Type_free(&v);
}

/* column j of a rows x P matrix of `base`, one element wide in extent */
static MPI_Datatype column(int rows, int P, MPI_Datatype base, int size)
{
    MPI_Datatype v, c;
    MPI_Type_vector(rows, 1, P, base, &v);
    MPI_Type_create_resized(v, 0, size, &c);
    MPI_Type_free(&v);
    MPI_Type_commit(&c);
    return c;
}

static void test_gather(int P, int me)
{
    MPI_Datatype v, col = column(3, P, MPI_INT, sizeof(int));
    MPI_Type_vector(3, 1, 2, MPI_INT, &v);
    MPI_Type_commit(&v);
    int src[5] = {100 * me, -1, 100 * me + 1, -1, 100 * me + 2};
    int *m = mtest_malloc(3 * P * sizeof(int));
    for (int root = 0; root < P; root++) {
        for (int i = 0; i < 3 * P; i++)
            m[i] = SENT;
        CALL(MPI_Gather(src, 1, v, m, 1, col, root, MPI_COMM_WORLD));
        for (int i = 0; me == root && i < 3 * P; i++) {
            int r = i / P, c = i % P; /* row r, column c = rank c's element r */
            CHECK(m[i] == 100 * c + r, "Gather into columns, root %d: [%d][%d] is %d, want %d", root, r, c, m[i],
                  100 * c + r);
        }
        for (int i = 0; me != root && i < 3 * P; i++)
            CHECK(m[i] == SENT, "Gather: non-root %d receive buffer written", me);
    }
    free(m);
    MPI_Type_free(&v);
    MPI_Type_free(&col);
}

static void test_allgather(int P, int me)
{
    int bl[3] = {1, 1, 1};
    MPI_Aint d[3] = {offsetof(struct cid, c), offsetof(struct cid, i), offsetof(struct cid, d)};
    MPI_Datatype ty[3] = {MPI_CHAR, MPI_INT, MPI_DOUBLE}, s, t;
    MPI_Type_create_struct(3, bl, d, ty, &s);
    MPI_Type_create_resized(s, 0, sizeof(struct cid), &t);
    MPI_Type_free(&s);
    MPI_Type_commit(&t);
    struct cid mine[2], *all = mtest_malloc(2 * P * sizeof(struct cid));
    for (int k = 0; k < 2; k++) {
        memset(&mine[k], 0, sizeof mine[k]);
        mine[k].c = (char)('a' + me + k);
        mine[k].i = 1000 * me + k;
        mine[k].d = me + 0.25 * k;
    }
    memset(all, 0x5a, 2 * P * sizeof(struct cid));
    CALL(MPI_Allgather(mine, 2, t, all, 2, t, MPI_COMM_WORLD));
    for (int r = 0; r < P; r++)
        for (int k = 0; k < 2; k++) {
            struct cid *e = &all[2 * r + k];
            CHECK(e->c == (char)('a' + r + k) && e->i == 1000 * r + k && e->d == r + 0.25 * k,
                  "Allgather struct from %d #%d: {%d, %d, %g}", r, k, e->c, e->i, e->d);
            const unsigned char *pad = (const unsigned char *)e + 1;
            CHECK(pad[0] == 0x5a && pad[1] == 0x5a && pad[2] == 0x5a, "Allgather: padding of struct %d/%d written", r,
                  k);
        }
    free(all);
    MPI_Type_free(&t);
}

static void test_alltoall(int P, int me)
{
    MPI_Datatype col = column(2, P, MPI_DOUBLE, sizeof(double));
    double *m = mtest_malloc(2 * P * sizeof(double)), *in = mtest_malloc((2 * P + 1) * sizeof(double));
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < P; j++)
            m[r * P + j] = me * 1000 + r * 100 + j; /* column j goes to rank j */
    for (int i = 0; i < 2 * P + 1; i++)
        in[i] = SENT;
    CALL(MPI_Alltoall(m, 1, col, in, 2, MPI_DOUBLE, MPI_COMM_WORLD));
    for (int s = 0; s < P; s++)
        for (int r = 0; r < 2; r++) {
            double want = s * 1000 + r * 100 + me;
            CHECK(in[2 * s + r] == want, "Alltoall column: from %d row %d is %g, want %g", s, r, in[2 * s + r], want);
        }
    CHECK(in[2 * P] == SENT, "Alltoall wrote past the receive buffer");
    free(m);
    free(in);
    MPI_Type_free(&col);
}

/* ints of 2 x vector(3, 1, 2): 0 2 4, then 5 7 9 (the extent is 5 ints) */
static int in_vec(int i)
{
    return i == 0 || i == 2 || i == 4 || i == 5 || i == 7 || i == 9;
}

static MPI_Datatype c4, v3;

/* User-defined sum over either derived type: the buffers have the datatype's layout. */
static void dt_sum(void *in, void *inout, int *len, MPI_Datatype *t)
{
    if (*t == c4) {
        for (int i = 0; i < 4 * *len; i++)
            ((double *)inout)[i] += ((double *)in)[i];
    } else if (*t == v3) {
        for (int k = 0; k < *len; k++)
            for (int j = 0; j < 3; j++)
                ((int *)inout)[5 * k + 2 * j] += ((int *)in)[5 * k + 2 * j];
    } else {
        FAIL("user op called with an unexpected datatype");
    }
}

static void test_reduce(int P, int me)
{
    MPI_Op op;
    CALL(MPI_Op_create(dt_sum, 1, &op));
    MPI_Type_contiguous(4, MPI_DOUBLE, &c4);
    MPI_Type_commit(&c4);
    MPI_Type_vector(3, 1, 2, MPI_INT, &v3);
    MPI_Type_commit(&v3);
    double ds[8], dr[9];
    int is[10], ir[11];
    for (int i = 0; i < 8; i++)
        ds[i] = me + 0.5 * i;
    for (int i = 0; i < 10; i++)
        is[i] = (me + 1) * (i + 1);
    double dsum_rank = P * (P - 1) / 2.0;
    int isum_rank = P * (P + 1) / 2;
    for (int root = 0; root < P; root++) {
        for (int i = 0; i < 9; i++)
            dr[i] = SENT;
        for (int i = 0; i < 11; i++)
            ir[i] = SENT;
        CALL(MPI_Reduce(ds, dr, 2, c4, op, root, MPI_COMM_WORLD));
        CALL(MPI_Reduce(is, ir, 2, v3, op, root, MPI_COMM_WORLD));
        if (me != root)
            continue;
        for (int i = 0; i < 8; i++)
            CHECK(dr[i] == dsum_rank + P * 0.5 * i, "Reduce contig(4) doubles root %d: [%d] = %g, want %g", root, i,
                  dr[i], dsum_rank + P * 0.5 * i);
        CHECK(dr[8] == SENT, "Reduce wrote past 2 x contig(4)");
        for (int i = 0; i < 11; i++) {
            int want = in_vec(i) ? isum_rank * (i + 1) : SENT;
            CHECK(ir[i] == want, "Reduce vector(3,1,2) ints root %d: [%d] = %d, want %d", root, i, ir[i], want);
        }
    }
    for (int i = 0; i < 11; i++)
        ir[i] = SENT;
    CALL(MPI_Allreduce(is, ir, 2, v3, op, MPI_COMM_WORLD));
    for (int i = 0; i < 11; i++) {
        int want = in_vec(i) ? isum_rank * (i + 1) : SENT;
        CHECK(ir[i] == want, "Allreduce vector(3,1,2) ints: [%d] = %d, want %d", i, ir[i], want);
    }

    /* Predefined operations are defined on basic types only for reductions (MPI-3.1 5.9.2;
     * unlike MPI_Accumulate, 11.3.4): MPICH 4.0.2 and Open MPI 4.1.4 both return MPI_ERR_OP
     * for MPI_SUM on a derived type, on every rank. */
    CHECK_CLASS(MPI_Allreduce(ds, dr, 2, c4, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_OP);
    MPI_Op_free(&op);
    MPI_Type_free(&c4);
    MPI_Type_free(&v3);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int P = mtest_size, me = mtest_rank;
    test_bcast(P, me);
    test_gather(P, me);
    test_allgather(P, me);
    test_alltoall(P, me);
    test_reduce(P, me);
    return MTest_Finalize();
}
