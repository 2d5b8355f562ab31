/*
 * coll_direct.c - Reduce, Allreduce, Allgather(v) and Alltoall of messages larger than a
 * shared-memory board slot (32 KiB). On Reflex, within one node, these run single-copy: ranks
 * read (and for Reduce write) each other's buffers directly, each reducing one piece of the
 * vector. The test checks every result against a serial reference:
 *  - sizes just above the slot and of a few MiB, element counts not divisible by the rank
 *    count and smaller than it (empty pieces);
 *  - SUM on int and double (values whose sums are exact, compared with memcmp), MAXLOC on
 *    MPI_DOUBLE_INT to everyone and to one root (pieces in whole pairs), one element of a
 *    large contiguous type (fewer elements than ranks);
 *  - a user operation that is associative but not commutative (composition of affine maps on
 *    MPI_2INT): the operands must be combined in rank order;
 *  - MPI_IN_PLACE in Allreduce, Allgather and at every root of Reduce;
 *  - non-dense datatypes on some ranks only (a strided vector as receive type, a resized
 *    struct as send type), so that ranks with and without contiguous buffers meet in one call;
 *  - Bcast from a moving root (single-copy from the root's buffer on 3 ranks or more);
 *  - Allgatherv with blocks of different sizes, some above and some below a slot;
 *  - back-to-back calls with different roots and alternating small and large sizes.
 * Runs with any number of ranks.
 */
#include "mtest.h"

static int P, me;

static double dval(int r, long i)
{
    return (double)((r * 131 + i * 17) % 1009) / 8.0; /* sums exact in any order */
}

/* Composition of affine maps x -> a*x + b, applied right to left: (f o g)(x) = f(g(x)). */
typedef struct {
    int a, b;
} affine;

static void compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    affine *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        affine r = {x[i].a * y[i].a, x[i].a * y[i].b + x[i].b};
        y[i] = r;
    }
}

static affine aval(int r, long i)
{
    affine f = {(int)((r + i) % 3) + 1, (int)((r * 5 + i) % 7)};
    return f;
}

static void check_double_sum(long n, int root, int inplace)
{
    double *in = mtest_malloc(sizeof(double) * n + 8), *out = mtest_malloc(sizeof(double) * n + 8);
    double *want = mtest_malloc(sizeof(double) * n + 8);
    for (long i = 0; i < n; i++) {
        double acc = dval(P - 1, i);
        for (int r = P - 2; r >= 0; r--)
            acc = dval(r, i) + acc;
        want[i] = acc, in[i] = dval(me, i), out[i] = inplace ? in[i] : -1.0;
    }
    int reads = root < 0 || root == me;
    const void *send = inplace && reads ? MPI_IN_PLACE : (const void *)in;
    if (root < 0)
        CALL(MPI_Allreduce(send, out, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    else
        CALL(MPI_Reduce(send, reads ? out : NULL, (int)n, MPI_DOUBLE, MPI_SUM, root,
                                   MPI_COMM_WORLD));
    if (reads)
        CHECK(memcmp(out, want, sizeof(double) * n) == 0,
                    "double SUM n=%ld root=%d inplace=%d: result differs from x0+(x1+...)", n,
                    root, inplace);
    free(in), free(out), free(want);
}

static void check_int_sum(long n, int root)
{
    int *in = mtest_malloc(sizeof(int) * n + 4), *out = mtest_malloc(sizeof(int) * n + 4);
    for (long i = 0; i < n; i++)
        in[i] = (int)(me * 1000 + i), out[i] = -1;
    int reads = root < 0 || root == me;
    if (root < 0)
        CALL(MPI_Allreduce(in, out, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    else
        CALL(MPI_Reduce(in, out, (int)n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
    for (long i = 0; reads && i < n; i++)
        if (out[i] != (int)(1000 * P * (P - 1) / 2 + P * i)) {
            FAIL("int SUM n=%ld root=%d: out[%ld]=%d", n, root, i, out[i]);
            break;
        }
    free(in), free(out);
}

/* MAXLOC of n MPI_DOUBLE_INT (a type with a gap) to root, or to everyone when root < 0. */
static void check_maxloc(long n, int root)
{
    struct {
        double v;
        int i;
    } *in = mtest_malloc(sizeof(*in) * n + 16), *out = mtest_malloc(sizeof(*in) * n + 16);
    for (long i = 0; i < n; i++)
        in[i].v = (double)((me * 7 + i) % P), in[i].i = me;
    if (root < 0)
        CALL(MPI_Allreduce(in, out, (int)n, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD));
    else
        CALL(MPI_Reduce(in, out, (int)n, MPI_DOUBLE_INT, MPI_MAXLOC, root, MPI_COMM_WORLD));
    for (long i = 0; (root < 0 || root == me) && i < n; i++) {
        int best = 0;
        for (int r = 1; r < P; r++)
            if ((r * 7 + i) % P > (best * 7 + i) % P)
                best = r;
        if (out[i].v != (double)((best * 7 + i) % P) || out[i].i != best) {
            FAIL("MAXLOC n=%ld: out[%ld] = (%g, %d), want rank %d", n, i, out[i].v,
                       out[i].i, best);
            break;
        }
    }
    free(in), free(out);
}

static void check_affine(long n, int root, MPI_Op op)
{
    affine *in = mtest_malloc(sizeof(affine) * n + 8), *out = mtest_malloc(sizeof(affine) * n + 8);
    for (long i = 0; i < n; i++)
        in[i] = aval(me, i);
    int reads = root < 0 || root == me;
    const void *send = in;
    if (reads && root >= 0)
        memcpy(out, in, sizeof(affine) * n), send = MPI_IN_PLACE;
    if (root < 0)
        CALL(MPI_Allreduce(send, out, (int)n, MPI_2INT, op, MPI_COMM_WORLD));
    else
        CALL(MPI_Reduce(send, out, (int)n, MPI_2INT, op, root, MPI_COMM_WORLD));
    for (long i = 0; reads && i < n; i++) {
        affine acc = aval(P - 1, i);
        for (int r = P - 2; r >= 0; r--) {
            affine x = aval(r, i), y = {x.a * acc.a, x.a * acc.b + x.b};
            acc = y;
        }
        if (out[i].a != acc.a || out[i].b != acc.b) {
            FAIL("user op n=%ld root=%d: out[%ld] = (%d,%d), want (%d,%d)", n, root, i,
                       out[i].a, out[i].b, acc.a, acc.b);
            break;
        }
    }
    free(in), free(out);
}

/* Allgather of n ints per rank; odd ranks receive through a strided vector type. */
static void check_allgather(long n, int inplace)
{
    int stride = me % 2 ? 2 : 1;
    int *buf = mtest_malloc(sizeof(int) * n * P * stride + 4), *in = mtest_malloc(sizeof(int) * n + 4);
    for (long i = 0; i < n * P * stride; i++)
        buf[i] = -1;
    for (long i = 0; i < n; i++)
        in[i] = (int)(me * 100003 + i);
    MPI_Datatype vec, rtype = MPI_INT;
    if (stride > 1) {
        MPI_Type_vector(1, 1, 2, MPI_INT, &vec);
        MPI_Type_create_resized(vec, 0, 2 * sizeof(int), &rtype);
        MPI_Type_free(&vec);
        MPI_Type_commit(&rtype);
    }
    if (inplace)
        for (long i = 0; i < n; i++)
            buf[(me * n + i) * stride] = in[i];
    CALL(MPI_Allgather(inplace ? MPI_IN_PLACE : in, (int)n, MPI_INT, buf, (int)n,
                                  rtype, MPI_COMM_WORLD));
    for (long k = 0; k < n * P; k++) {
        int r = (int)(k / n), want = (int)(r * 100003 + k % n);
        if (buf[k * stride] != want || (stride > 1 && buf[k * stride + 1] != -1)) {
            FAIL("allgather n=%ld inplace=%d stride=%d: element %ld = %d, want %d", n,
                       inplace, stride, k, buf[k * stride], want);
            break;
        }
    }
    if (stride > 1)
        MPI_Type_free(&rtype);
    free(buf), free(in);
}

/* Bcast of n ints from root; odd ranks receive through a strided vector type. */
static void check_bcast(long n, int root)
{
    int stride = me % 2 ? 2 : 1;
    int *buf = mtest_malloc(sizeof(int) * n * stride + 4);
    for (long i = 0; i < n * stride; i++)
        buf[i] = me == root ? (int)(root * 31 + i) : -1;
    MPI_Datatype vec, type = MPI_INT;
    if (stride > 1) {
        MPI_Type_vector(1, 1, 2, MPI_INT, &vec);
        MPI_Type_create_resized(vec, 0, 2 * sizeof(int), &type);
        MPI_Type_free(&vec);
        MPI_Type_commit(&type);
        for (long i = 0; me == root && i < n; i++)
            buf[2 * i] = (int)(root * 31 + i), buf[2 * i + 1] = -1;
    }
    CALL(MPI_Bcast(buf, (int)n, type, root, MPI_COMM_WORLD));
    for (long i = 0; i < n; i++)
        if (buf[i * stride] != (int)(root * 31 + i) || (stride > 1 && buf[i * stride + 1] != -1)) {
            FAIL("bcast n=%ld root=%d stride=%d: element %ld = %d", n, root, stride, i,
                 buf[i * stride]);
            break;
        }
    if (stride > 1)
        MPI_Type_free(&type);
    free(buf);
}

/* Allgatherv: rank r contributes (r % 3) * big + r ints. */
static void check_allgatherv(long big)
{
    int *counts = mtest_malloc(sizeof(int) * P), *displs = mtest_malloc(sizeof(int) * P);
    long total = 0;
    for (int r = 0; r < P; r++)
        counts[r] = (int)((r % 3) * big + r), displs[r] = (int)total, total += counts[r];
    int *out = mtest_malloc(sizeof(int) * total + 4), *in = mtest_malloc(sizeof(int) * counts[me] + 4);
    for (int i = 0; i < counts[me]; i++)
        in[i] = me * 7919 + i;
    CALL(MPI_Allgatherv(in, counts[me], MPI_INT, out, counts, displs, MPI_INT,
                                   MPI_COMM_WORLD));
    for (int r = 0; r < P; r++)
        for (int i = 0; i < counts[r]; i++)
            if (out[displs[r] + i] != r * 7919 + i) {
                FAIL("allgatherv: rank %d element %d = %d", r, i, out[displs[r] + i]);
                r = P;
                break;
            }
    free(counts), free(displs), free(out), free(in);
}

/* Alltoall of n ints per block; ranks 1 mod 3 send through a struct type with a gap. */
static void check_alltoall(long n)
{
    int gap = me % 3 == 1;
    int *send = mtest_malloc(sizeof(int) * n * P * (1 + gap) + 4), *recv = mtest_malloc(sizeof(int) * n * P + 4);
    for (long k = 0; k < n * P; k++) {
        long to = k / n, i = k % n;
        send[k * (1 + gap)] = (int)(me * 1000003 + to * 1009 + i);
        if (gap)
            send[k * (1 + gap) + 1] = -7;
        recv[k] = -1;
    }
    MPI_Datatype stype = MPI_INT, vec;
    if (gap) {
        MPI_Type_vector(1, 1, 2, MPI_INT, &vec);
        MPI_Type_create_resized(vec, 0, 2 * sizeof(int), &stype);
        MPI_Type_free(&vec);
        MPI_Type_commit(&stype);
    }
    CALL(MPI_Alltoall(send, (int)n, stype, recv, (int)n, MPI_INT, MPI_COMM_WORLD));
    for (long k = 0; k < n * P; k++) {
        long from = k / n, i = k % n;
        int want = (int)(from * 1000003 + me * 1009 + i);
        if (recv[k] != want) {
            FAIL("alltoall n=%ld: from %ld element %ld = %d, want %d", n, from, i, recv[k],
                       want);
            break;
        }
    }
    if (gap)
        MPI_Type_free(&stype);
    free(send), free(recv);
}

enum { BIG = 10000 };

/* Sum of elements of BIG doubles. */
static void big_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    double *x = in, *y = inout;
    for (long i = 0; i < (long)*len * BIG; i++)
        y[i] += x[i];
}

/* One element of BIG doubles (a user operation: predefined ones take predefined types only):
 * fewer elements than ranks, so some pieces are empty. */
static void check_one_element(void)
{
    enum { N = BIG };
    MPI_Op op;
    CALL(MPI_Op_create(big_sum, 1, &op));
    MPI_Datatype big;
    CALL(MPI_Type_contiguous(N, MPI_DOUBLE, &big));
    CALL(MPI_Type_commit(&big));
    double *in = mtest_malloc(sizeof(double) * N), *out = mtest_malloc(sizeof(double) * N);
    for (int i = 0; i < N; i++)
        in[i] = me + i;
    CALL(MPI_Allreduce(in, out, 1, big, op, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++)
        if (out[i] != (double)P * (P - 1) / 2 + (double)P * i) {
            FAIL("one element of %d doubles: out[%d] = %g", N, i, out[i]);
            break;
        }
    CALL(MPI_Type_free(&big));
    CALL(MPI_Op_free(&op));
    free(in), free(out);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    P = mtest_size;
    me = mtest_rank;
    MPI_Op affine_op;
    MPI_Op_create(compose, 0, &affine_op);
    const long sizes[] = {4097, 9001, 100003, 1 << 18};
    for (int s = 0; s < 4; s++) {
        long n = sizes[s];
        for (int root = -1; root < P; root++) {
            if (s == 3 && root >= 0 && root != P / 2)
                continue; /* the largest: allreduce and one root */
            check_double_sum(n, root, 0);
            check_double_sum(n, root, 1);
            check_int_sum(n, root);
            check_double_sum(3, root, 0); /* small, on the board, between large ones */
        }
        check_maxloc(n, -1);
        check_maxloc(n, P - 1);
        check_affine(n, -1, affine_op);
        check_affine(n, P - 1, affine_op);
        check_allgather(n / P + 1, 0);
        check_allgather(n / P + 1, 1);
        check_alltoall(n / P + 1);
        check_bcast(n, s % P);
    }
    check_allgatherv(10000);
    check_one_element();
    MPI_Op_free(&affine_op);
    return MTest_Finalize();
}
