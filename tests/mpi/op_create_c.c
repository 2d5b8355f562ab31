/*
 * op_create_c.c - MPI_Op_create_c (MPI-4.0 section 6.9.5): a user operation whose function takes
 * its count as an MPI_Count. A non-commutative "keep the left operand's marked elements, add the
 * rest" operation over ints (element by element, as the standard requires: an implementation
 * may hand the function any chunks of the vector), through MPI_Reduce_local, MPI_Allreduce
 * (eager and large counts) and MPI_Reduce; the function also checks the count and datatype it
 * is handed.
 */
#include "mtest.h"

#define BIG 20000
#define MARK 1000000 /* elements at or above it are kept from the left operand */

static int bad_args;

/* inout[i] = in[i] + inout[i], but a marked left (lower-rank) operand is kept. */
static void addkeep(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt)
{
    int *a = in, *b = inout;
    if (*dt != MPI_INT || *len < 0 || *len > BIG)
        bad_args++;
    for (MPI_Count i = 0; i < *len; i++)
        b[i] = a[i] >= MARK ? a[i] : a[i] + b[i];
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Op op;
    int commute = -1, *x = mtest_malloc(BIG * sizeof(int)), *y = mtest_malloc(BIG * sizeof(int));
    CALL(MPI_Op_create_c(addkeep, 0, &op));
    CALL(MPI_Op_commutative(op, &commute));
    CHECK_EQ(commute, 0);

    int a[3] = {MARK + 1, 2, 3}, b[3] = {10, 20, 30};
    CALL(MPI_Reduce_local(a, b, 3, MPI_INT, op));
    CHECK(b[0] == MARK + 1 && b[1] == 22 && b[2] == 33, "Reduce_local: %d %d %d", b[0], b[1], b[2]);

    const int counts[] = {1, 100, BIG};
    for (int c = 0; c < 3; c++) {
        int n = counts[c];
        for (int i = 0; i < n; i++)
            x[i] = i == 0 ? MARK + mtest_rank + 7 : mtest_rank + i;
        CALL(MPI_Allreduce(x, y, n, MPI_INT, op, MPI_COMM_WORLD));
        int wrong = 0, ranksum = mtest_size * (mtest_size - 1) / 2;
        for (int i = 1; i < n; i++)
            wrong += y[i] != ranksum + mtest_size * i;
        CHECK_EQ(y[0], MARK + 7); /* rank 0's first element */
        CHECK_EQ(wrong, 0);
        CALL(MPI_Reduce(x, y, n, MPI_INT, op, mtest_size - 1, MPI_COMM_WORLD));
        if (mtest_rank == mtest_size - 1)
            CHECK_EQ(y[0], MARK + 7);
    }
    CHECK_EQ(bad_args, 0);
    CALL(MPI_Op_free(&op));
    free(x);
    free(y);
    return MTest_Finalize();
}
