/*
 * dt_large_count.c - MPI_Type_contiguous_c with a count beyond INT_MAX (MPI-4.0 section 5.1.2).
 *
 * A type of INT_MAX + INT_MAX/1024 bytes must report its size and extent through the MPI_Count
 * queries, MPI_UNDEFINED through the int ones, and describe itself: an MPI-4 library as a
 * contiguous type with one large count (MPI_Type_get_contents_c gives the count and MPI_BYTE back);
 * an MPI-3.1 library (where MPI_VERSION < 4) as a struct of a vector of INT_MAX-element blocks and
 * a contiguous remainder. With 2 or more ranks, rank 0 sends one such element (2.1 GB) to rank 1, which
 * receives it as MPI_BYTEs with MPI_Recv_c and checks the count and sampled bytes.
 */
#include <limits.h>
#include "mtest.h"

#define COUNT ((MPI_Count)INT_MAX + INT_MAX / 1024)

static unsigned char pattern(MPI_Count i)
{
    return (unsigned char)(i * 2654435761u >> 13);
}

static void check_queries(MPI_Datatype t)
{
    MPI_Count size = 0, lb = -1, extent = 0;
    int isize = 0;
    CALL(MPI_Type_size_c(t, &size));
    CHECK_EQ(size, COUNT);
    CALL(MPI_Type_size(t, &isize));
    CHECK_EQ(isize, MPI_UNDEFINED);
    CALL(MPI_Type_get_extent_c(t, &lb, &extent));
    CHECK_EQ(lb, 0);
    CHECK_EQ(extent, COUNT);
}

#if MPI_VERSION >= 4
static void check_contents(MPI_Datatype t)
{
    MPI_Count ni, na, nl, nd;
    int combiner;
    CALL(MPI_Type_get_envelope_c(t, &ni, &na, &nl, &nd, &combiner));
    CHECK_EQ(combiner, MPI_COMBINER_CONTIGUOUS);
    CHECK(ni == 0 && na == 0 && nl == 1 && nd == 1, "%lld ints, %lld addresses, %lld counts, %lld types",
          (long long)ni, (long long)na, (long long)nl, (long long)nd);
    if (ni != 0 || na != 0 || nl != 1 || nd != 1)
        return;
    MPI_Count count = 0;
    MPI_Datatype base = MPI_DATATYPE_NULL;
    CALL(MPI_Type_get_contents_c(t, 0, 0, 1, 1, NULL, NULL, &count, &base));
    CHECK_EQ(count, COUNT);
    CHECK(base == MPI_BYTE, "contiguous of another type");
}
#else
static void check_contents(MPI_Datatype t)
{
    int ni, na, nd, combiner, ints[4];
    MPI_Aint addrs[4];
    MPI_Datatype parts[2], base;
    CALL(MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner));
    CHECK_EQ(combiner, MPI_COMBINER_STRUCT);
    CHECK_EQ(ni, 3);
    CHECK_EQ(na, 2);
    CHECK_EQ(nd, 2);
    if (ni != 3 || na != 2 || nd != 2)
        return;
    CALL(MPI_Type_get_contents(t, 3, 2, 2, ints, addrs, parts));
    CHECK_EQ(ints[0], 2);
    CHECK_EQ(addrs[1], (MPI_Count)INT_MAX);
    CALL(MPI_Type_get_envelope(parts[0], &ni, &na, &nd, &combiner));
    CHECK_EQ(combiner, MPI_COMBINER_VECTOR);
    CALL(MPI_Type_get_contents(parts[0], 3, 0, 1, ints, addrs, &base));
    CHECK(base == MPI_BYTE, "vector of another type");
    CHECK(ints[0] == 1 && ints[1] == INT_MAX && ints[2] == INT_MAX, "vector(%d, %d, %d)", ints[0],
          ints[1], ints[2]);
    CALL(MPI_Type_get_envelope(parts[1], &ni, &na, &nd, &combiner));
    CHECK_EQ(combiner, MPI_COMBINER_CONTIGUOUS);
    CALL(MPI_Type_get_contents(parts[1], 1, 0, 1, ints, addrs, &base));
    CHECK(base == MPI_BYTE, "contiguous of another type");
    CHECK_EQ(ints[0], INT_MAX / 1024);
    CALL(MPI_Type_free(&parts[0]));
    CALL(MPI_Type_free(&parts[1]));
}
#endif

static void transfer(MPI_Datatype t)
{
    unsigned char *buf = malloc((size_t)COUNT);
    if (!buf) {
        FAIL("cannot allocate %lld bytes", (long long)COUNT);
        return;
    }
    const MPI_Count step = 4093; /* a prime: samples land in every page and at both ends */
    if (mtest_rank == 0) {
        memset(buf, 0, (size_t)COUNT);
        for (MPI_Count i = 0; i < COUNT; i += step)
            buf[i] = pattern(i);
        buf[COUNT - 1] = pattern(COUNT - 1);
        CALL(MPI_Send(buf, 1, t, 1, 7, MPI_COMM_WORLD));
    } else if (mtest_rank == 1) {
        MPI_Status st;
        MPI_Count got = 0;
        memset(buf, 0xff, (size_t)COUNT);
        CALL(MPI_Recv_c(buf, COUNT, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &st));
        CALL(MPI_Get_count_c(&st, MPI_BYTE, &got));
        CHECK_EQ(got, COUNT);
        long long wrong = 0;
        for (MPI_Count i = 0; i < COUNT; i += step)
            wrong += buf[i] != pattern(i) || (i + 1 < COUNT && buf[i + 1] != 0);
        CHECK_EQ(wrong, 0);
        CHECK_EQ(buf[COUNT - 1], pattern(COUNT - 1));
    }
    free(buf);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype t;
    CALL(MPI_Type_contiguous_c(COUNT, MPI_BYTE, &t));
    CALL(MPI_Type_commit(&t));
    check_queries(t);
    check_contents(t);
    if (mtest_size >= 2)
        transfer(t);
    CALL(MPI_Type_free(&t));
    return MTest_Finalize();
}
