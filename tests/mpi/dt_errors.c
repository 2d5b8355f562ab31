/*
 * dt_errors.c - error classes of datatype misuse under MPI_ERRORS_RETURN (MPI-3.1 sections
 * 4.1 and 8.4), where MPICH 4.0.2 and Open MPI 4.1.4 both detect the error:
 *  - sending, receiving or packing with an uncommitted derived type: MPI_ERR_TYPE;
 *  - MPI_DATATYPE_NULL in Send, Type_size, Type_contiguous, Type_create_resized, Type_dup,
 *    Type_set_name, Type_commit and Type_free, and Type_free of a predefined type: MPI_ERR_TYPE;
 *  - a negative count in a constructor: MPI_ERR_COUNT (both peers); a negative block length:
 *    MPICH says MPI_ERR_COUNT, Open MPI MPI_ERR_ARG; the standard names no class, either is
 *    accepted;
 *  - create_subarray with a bad order and create_darray whose blocks cannot cover the array:
 *    MPI_ERR_ARG; create_darray with rank >= size: MPICH MPI_ERR_RANK, Open MPI MPI_ERR_ARG;
 *  - Type_get_contents of a predefined type, and with arrays smaller than the envelope says:
 *    erroneous (MPI-3.1 4.1.13) but no class is named (MPICH: MPI_ERR_TYPE / MPI_ERR_OTHER,
 *    Open MPI: MPI_ERR_INTERN); any error is accepted.
 * Errors of calls without a communicator go to MPI_COMM_WORLD's handler in MPI-3.1 and to
 * MPI_COMM_SELF's in MPI-4.0, so both get MPI_ERRORS_RETURN.
 * Misuse that MPICH does not detect (a freed handle, Pack/Unpack past the buffer, subarray and
 * darray bounds, overlapping receive types) is in dt_errors_reflex.c and dt_overlap.c.
 */
#include "mtest.h"

#define CHECK_ERROR(rc)                                                                         \
    do {                                                                                        \
        if ((rc) == MPI_SUCCESS)                                                                \
            mtest_report(__FILE__, __LINE__, #rc, "returned MPI_SUCCESS for an erroneous call"); \
    } while (0)

static void test_uncommitted(void)
{
    MPI_Datatype u, c;
    MPI_Request r;
    int buf[8] = {0}, pk[16], pos = 0;
    MPI_Type_vector(2, 1, 2, MPI_INT, &u);
    MPI_Type_vector(2, 1, 2, MPI_INT, &c);
    MPI_Type_commit(&c);

    int rc = MPI_Isend(buf, 1, u, mtest_rank, 5, MPI_COMM_WORLD, &r);
    CHECK_CLASS(rc, MPI_ERR_TYPE);
    if (rc == MPI_SUCCESS) { /* drain the message so the program still ends cleanly */
        MPI_Recv(pk, 1, c, mtest_rank, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    rc = MPI_Send(buf, 1, u, mtest_rank, 5, MPI_COMM_WORLD);
    CHECK_CLASS(rc, MPI_ERR_TYPE);
    if (rc == MPI_SUCCESS)
        MPI_Recv(pk, 1, c, mtest_rank, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    rc = MPI_Irecv(buf, 1, u, mtest_rank, 6, MPI_COMM_WORLD, &r);
    CHECK_CLASS(rc, MPI_ERR_TYPE);
    if (rc == MPI_SUCCESS) {
        MPI_Cancel(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    CHECK_CLASS(MPI_Pack(buf, 1, u, pk, sizeof pk, &pos, MPI_COMM_WORLD), MPI_ERR_TYPE);
    CHECK_EQ(pos, 0);

    /* after commit the same type works */
    CALL(MPI_Type_commit(&u));
    CALL(MPI_Sendrecv(buf, 1, u, mtest_rank, 7, pk, 1, c, mtest_rank, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_Type_free(&u);
    MPI_Type_free(&c);
}

static void test_counts(void)
{
    MPI_Datatype t = MPI_DATATYPE_NULL;
    int bl[2] = {1, -1}, ds[2] = {0, 4}, buf[4];
    MPI_Aint ad[2] = {0, 8};
    MPI_Datatype tys[2] = {MPI_INT, MPI_INT};

    CHECK_CLASS(MPI_Type_contiguous(-1, MPI_INT, &t), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_Type_vector(-1, 1, 1, MPI_INT, &t), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_Type_create_hvector(-1, 1, 8, MPI_INT, &t), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_Type_indexed(-1, bl, ds, MPI_INT, &t), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_Type_create_hindexed(-2, bl, ad, MPI_INT, &t), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_Type_create_indexed_block(-1, 1, ds, MPI_INT, &t), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_Type_create_struct(-1, bl, ad, tys, &t), MPI_ERR_COUNT);
    CHECK_CLASS2(MPI_Type_vector(2, -1, 1, MPI_INT, &t), MPI_ERR_COUNT, MPI_ERR_ARG);
    CHECK_CLASS2(MPI_Type_indexed(2, bl, ds, MPI_INT, &t), MPI_ERR_COUNT, MPI_ERR_ARG);
    CHECK_CLASS2(MPI_Type_create_hindexed(2, bl, ad, MPI_INT, &t), MPI_ERR_COUNT, MPI_ERR_ARG);
    CHECK_CLASS2(MPI_Type_create_indexed_block(2, -1, ds, MPI_INT, &t), MPI_ERR_COUNT, MPI_ERR_ARG);
    CHECK_CLASS2(MPI_Type_create_struct(2, bl, ad, tys, &t), MPI_ERR_COUNT, MPI_ERR_ARG);
    CHECK(t == MPI_DATATYPE_NULL, "a failed constructor returned a handle");
    CHECK_CLASS(MPI_Send(buf, -1, MPI_INT, mtest_rank, 1, MPI_COMM_WORLD), MPI_ERR_COUNT);
}

static void test_null(void)
{
    MPI_Datatype t, x;
    int n, buf[4] = {0};
    CHECK_CLASS(MPI_Send(buf, 1, MPI_DATATYPE_NULL, mtest_rank, 1, MPI_COMM_WORLD), MPI_ERR_TYPE);
    CHECK_CLASS(MPI_Type_size(MPI_DATATYPE_NULL, &n), MPI_ERR_TYPE);
    CHECK_CLASS(MPI_Type_contiguous(2, MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE);
    CHECK_CLASS(MPI_Type_create_resized(MPI_DATATYPE_NULL, 0, 8, &t), MPI_ERR_TYPE);
    CHECK_CLASS(MPI_Type_dup(MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE);
    CHECK_CLASS(MPI_Type_set_name(MPI_DATATYPE_NULL, "x"), MPI_ERR_TYPE);
    x = MPI_DATATYPE_NULL;
    CHECK_CLASS(MPI_Type_commit(&x), MPI_ERR_TYPE);
    x = MPI_DATATYPE_NULL;
    CHECK_CLASS(MPI_Type_free(&x), MPI_ERR_TYPE);
    x = MPI_INT;
    CHECK_CLASS(MPI_Type_free(&x), MPI_ERR_TYPE);
    CHECK(x == MPI_INT, "a failed Type_free changed the handle");
    /* MPI_INT is still usable */
    CALL(MPI_Type_size(MPI_INT, &n));
    CHECK_EQ(n, (int)sizeof(int));
}

static void test_args(void)
{
    MPI_Datatype t, v;
    int sz[2] = {4, 4}, ss[2] = {2, 2}, st[2] = {0, 0};
    CHECK_CLASS(MPI_Type_create_subarray(2, sz, ss, st, 12345, MPI_INT, &t), MPI_ERR_ARG);
    int g[1] = {10}, dd[1] = {MPI_DISTRIBUTE_BLOCK}, da[1] = {MPI_DISTRIBUTE_DFLT_DARG}, ps[1] = {3}, d2[1] = {2};
    /* block size 2 on 3 processes covers 6 of 10 elements */
    CHECK_CLASS(MPI_Type_create_darray(3, 1, 1, g, dd, d2, ps, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG);
    CHECK_CLASS2(MPI_Type_create_darray(3, 3, 1, g, dd, da, ps, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_RANK, MPI_ERR_ARG);

    int ints[4];
    MPI_Aint addrs[4];
    MPI_Datatype types[4];
    CHECK_ERROR(MPI_Type_get_contents(MPI_INT, 4, 4, 4, ints, addrs, types));
    MPI_Type_vector(2, 1, 2, MPI_INT, &v);
    CHECK_ERROR(MPI_Type_get_contents(v, 1, 0, 1, ints, addrs, types)); /* vector has 3 integers */
    MPI_Type_free(&v);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    test_uncommitted();
    test_counts();
    test_null();
    test_args();
    return MTest_Finalize();
}
