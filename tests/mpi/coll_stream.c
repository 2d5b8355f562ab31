/*
 * coll_stream.c - Alltoall, Reduce and Bcast of messages larger than a shared-memory board
 * slot (32 KiB). On Reflex these stream through the board in slot-sized pieces, one board
 * epoch each (by default alltoall and reduce on 2 ranks of their own cores, bcast on 3+ ranks
 * sharing cores; on any rank count with REFLEX_COLL_STREAM=on). The test checks every result against a serial reference:
 *  - alltoall blocks of one int short of, exactly, and just over whole pieces (a 2-rank
 *    piece is 32640 bytes on x86-64: a slot in whole 128-byte lines), odd sizes, and
 *    4 MiB + 4 (more pieces than a rank has slots, so slots are reused within one call);
 *  - MPI_IN_PLACE alltoall (every piece of a block leaves before the same piece arrives);
 *  - a strided receive type on odd ranks (pieces unpacked at an offset into a vector type);
 *  - Reduce (SUM of ints, exact in any order) at every root and in place at the root (rank
 *    order under a non-commutative operation, and MAXLOC on MPI_DOUBLE_INT, a type with a
 *    gap, are checked by coll_direct, which the test list also runs with
 *    REFLEX_COLL_STREAM=on);
 *  - Bcast from every root, odd non-root ranks receiving through a strided vector for odd
 *    roots;
 *  - back-to-back calls alternating large and small (board) sizes, with a Barrier between
 *    some, so that epochs taken by the pieces line up across ranks.
 * Runs with any number of ranks.
 */
#include "mtest.h"

static int P, me;

static int ival(int from, int to, long i) { return from * 1000003 + to * 1009 + (int)(i % 1000); }

/* One element covering n ints at stride 2 (a block of n ints with a gap after each). */
static MPI_Datatype strided_ints(long n)
{
    MPI_Datatype vec, type;
    MPI_Type_vector((int)n, 1, 2, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, sizeof(int) * n * 2, &type);
    MPI_Type_free(&vec);
    MPI_Type_commit(&type);
    return type;
}

/* Alltoall of n ints per block (MPI_IN_PLACE when inplace; odd ranks receive through a vector
 * type of stride 2 when strided). */
static void check_alltoall(long n, int inplace, int strided)
{
    int stride = strided && me % 2 ? 2 : 1;
    int *send = mtest_malloc(sizeof(int) * n * P + 4);
    int *recv = mtest_malloc(sizeof(int) * n * P * stride + 4);
    for (long k = 0; k < n * P; k++)
        send[k] = ival(me, (int)(k / n), k % n);
    for (long k = 0; k < n * P * stride; k++)
        recv[k] = inplace ? send[k] : -1;
    MPI_Datatype rtype = stride == 2 ? strided_ints(n) : MPI_INT;
    int rcount = stride == 2 ? 1 : (int)n;
    if (inplace)
        CALL(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, (int)n, MPI_INT, MPI_COMM_WORLD));
    else
        CALL(MPI_Alltoall(send, (int)n, MPI_INT, recv, rcount, rtype, MPI_COMM_WORLD));
    for (long k = 0; k < n * P; k++) {
        int from = (int)(k / n), want = ival(from, me, k % n);
        if (recv[k * stride] != want) {
            FAIL("alltoall n=%ld inplace=%d strided=%d: from %d element %ld = %d, want %d", n, inplace,
                 stride == 2, from, k % n, recv[k * stride], want);
            break;
        }
        if (stride == 2 && recv[k * 2 + 1] != -1) {
            FAIL("alltoall n=%ld: the gap after element %ld was written", n, k);
            break;
        }
    }
    if (stride == 2)
        MPI_Type_free(&rtype);
    free(send), free(recv);
}

/* Reduce of n ints (SUM) to root, in place at the root when inplace. */
static void check_sum(long n, int root, int inplace)
{
    int *in = mtest_malloc(sizeof(int) * n + 4), *out = mtest_malloc(sizeof(int) * n + 4);
    for (long i = 0; i < n; i++)
        in[i] = ival(me, 0, i) % 65536, out[i] = inplace ? in[i] : -1;
    const void *send = inplace && me == root ? MPI_IN_PLACE : (const void *)in;
    CALL(MPI_Reduce(send, me == root ? out : NULL, (int)n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
    for (long i = 0; me == root && i < n; i++) {
        int want = 0;
        for (int r = 0; r < P; r++)
            want += ival(r, 0, i) % 65536;
        if (out[i] != want) {
            FAIL("reduce n=%ld root=%d inplace=%d: out[%ld] = %d, want %d", n, root, inplace, i,
                 out[i], want);
            break;
        }
    }
    free(in), free(out);
}

/* Bcast of n ints from root; odd ranks receive through a stride-2 vector when strided. */
static void check_bcast(long n, int root, int strided)
{
    int stride = strided && me % 2 && me != root ? 2 : 1;
    int *buf = mtest_malloc(sizeof(int) * n * stride + 4);
    for (long k = 0; k < n * stride; k++)
        buf[k] = me == root ? ival(root, 7, k) : -1;
    MPI_Datatype type = stride == 2 ? strided_ints(n) : MPI_INT;
    int count = stride == 2 ? 1 : (int)n;
    CALL(MPI_Bcast(buf, count, type, root, MPI_COMM_WORLD));
    for (long k = 0; k < n; k++) {
        int want = ival(root, 7, k);
        if (buf[k * stride] != want || (stride == 2 && buf[k * 2 + 1] != -1)) {
            FAIL("bcast n=%ld root=%d strided=%d: element %ld = %d, want %d (or a gap written)", n,
                 root, stride == 2, k, buf[k * stride], want);
            break;
        }
    }
    if (stride == 2)
        MPI_Type_free(&type);
    free(buf);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    P = mtest_size;
    me = mtest_rank;
    /* ints per block/operand: around one and two 2-rank pieces (8160 ints), odd, 4 MiB + 4. */
    const long sizes[] = {8159, 8160, 8161, 16320, 16321, 25001, 100003, (1L << 20) + 1};
    for (int s = 0; s < 8; s++) {
        long n = sizes[s];
        check_alltoall(n, 0, 0);
        check_alltoall(n, 1, 0);
        check_alltoall(n, 0, 1);
        check_alltoall(3, 0, 0); /* small, on the board, between large ones */
        for (int root = 0; root < P; root++) {
            if (s == 7 && root != P / 2)
                continue; /* the largest: one root */
            check_sum(n, root, 0);
            check_sum(n, root, 1);
            check_sum(3, root, 0);
            check_bcast(n, root, root % 2);
        }
        if (s % 2)
            MPI_Barrier(MPI_COMM_WORLD);
    }
    return MTest_Finalize();
}
