/*
 * conformance.c - rules of the standard that MPICH's test suite (tests/mpich-suite) found Reflex
 * breaking, each checked here on its own:
 *   1. calls that complete one operation leave status.MPI_ERROR alone (MPI-3.1 3.2.5);
 *   2. arguments the standard ignores are not checked: counts and datatypes at non-roots and
 *      beside MPI_IN_PLACE, the origin of a get-accumulate with MPI_NO_OP;
 *   3. identical send and receive buffers of a collective are MPI_ERR_BUFFER;
 *   4. MPI_WIN_BASE of an empty window is the base given; MPI_PROC_NULL lock/unlock/flush;
 *   5. an attribute of a freed keyval is deleted through a saved copy of the handle;
 *   6. a predefined pair type counts two basic elements (MPI_Get_elements);
 *   7. MPI_C_LONG_DOUBLE_COMPLEX sums;
 *   8. a NULL output array with values to receive is MPI_ERR_ARG, not a crash;
 *   9. MPI_Comm_create_group over changing subgroups of one parent with one tag;
 *  10. MPI_Testall sets its flag when all completed and one failed (MPI_ERR_IN_STATUS);
 *  11. MPI_Reduce_local refuses MPI_IN_PLACE and aliased buffers; MPI_Compare_and_swap refuses
 *      floating-point types (MPI_ERR_BUFFER, MPI_ERR_TYPE, not a crash or a silent swap).
 */
#include "mtest.h"
#include <complex.h>

static void status_error_kept(void)
{
    int v = 7, r = 0;
    MPI_Status st;
    MPI_Request req;
    st.MPI_ERROR = MPI_ERR_DIMS;
    MPI_Sendrecv(&v, 1, MPI_INT, mtest_rank, 1, &r, 1, MPI_INT, mtest_rank, 1, MPI_COMM_WORLD, &st);
    CHECK_EQ(st.MPI_ERROR, MPI_ERR_DIMS);
    MPI_Isend(&v, 1, MPI_INT, mtest_rank, 2, MPI_COMM_WORLD, &req);
    MPI_Probe(mtest_rank, 2, MPI_COMM_WORLD, &st);
    CHECK_EQ(st.MPI_ERROR, MPI_ERR_DIMS);
    MPI_Wait(&req, &st);
    CHECK_EQ(st.MPI_ERROR, MPI_ERR_DIMS);
    MPI_Recv(&r, 1, MPI_INT, mtest_rank, 2, MPI_COMM_WORLD, &st);
    CHECK_EQ(st.MPI_ERROR, MPI_ERR_DIMS);
}

static void insignificant_arguments(void)
{
    int n = mtest_size, *all = mtest_malloc(n * sizeof(int)), mine = mtest_rank + 1;
    MPI_Datatype junk = (MPI_Datatype) 0; /* not a handle at all */
    if (mtest_rank == 0) {
        MPI_Gather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    } else {
        MPI_Gather(&mine, 1, MPI_INT, NULL, -1, junk, 0, MPI_COMM_WORLD);
    }
    if (mtest_rank == 0)
        for (int i = 0; i < n; i++)
            CHECK_EQ(all[i], i + 1);
    all[mtest_rank] = 100 + mtest_rank;
    MPI_Allgather(MPI_IN_PLACE, -1, junk, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++)
        CHECK_EQ(all[i], 100 + i);
    free(all);

    int cell = 40 + mtest_rank, got = 0;
    MPI_Win win;
    MPI_Win_create(&cell, sizeof cell, sizeof cell, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Get_accumulate(NULL, -1, MPI_DATATYPE_NULL, &got, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_NO_OP,
                       win);
    MPI_Win_unlock(0, win);
    CHECK_EQ(got, 40);
    MPI_Win_free(&win);
}

static void aliased_buffers(void)
{
    int buf[2] = {1, 2}, err;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    err = MPI_Allreduce(buf, buf, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(err != MPI_SUCCESS, "aliased MPI_Allreduce buffers were accepted");
    if (err != MPI_SUCCESS) {
        int class;
        MPI_Error_class(err, &class);
        CHECK_EQ(class, MPI_ERR_BUFFER);
    }
    err = MPI_Allreduce(MPI_IN_PLACE, buf, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK_EQ(err, MPI_SUCCESS);
    CHECK_EQ(buf[1], 2 * mtest_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void empty_window_and_proc_null(void)
{
    MPI_Win win;
    void *base = (void *) 1;
    int flag = 0;
    MPI_Win_create(NULL, 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
    CHECK(flag && base == NULL, "MPI_WIN_BASE of an empty window created at NULL is %p", base);
    CHECK_EQ(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, MPI_PROC_NULL, 0, win), MPI_SUCCESS);
    CHECK_EQ(MPI_Win_flush(MPI_PROC_NULL, win), MPI_SUCCESS);
    CHECK_EQ(MPI_Win_unlock(MPI_PROC_NULL, win), MPI_SUCCESS);
    MPI_Win_free(&win);
}

static int deleted = 0;
static int count_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void) comm, (void) keyval, (void) value, (void) extra;
    deleted++;
    return MPI_SUCCESS;
}

static void freed_keyval(void)
{
    int keyval, saved, flag = 0;
    void *value;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, count_delete, &keyval, NULL);
    saved = keyval;
    MPI_Comm_set_attr(MPI_COMM_WORLD, keyval, &deleted);
    MPI_Comm_free_keyval(&keyval);
    CHECK_EQ(keyval, MPI_KEYVAL_INVALID);
    CHECK_EQ(MPI_Comm_get_attr(MPI_COMM_WORLD, saved, &value, &flag), MPI_SUCCESS);
    CHECK(flag && value == &deleted, "attribute of a freed keyval lost");
    CHECK_EQ(MPI_Comm_delete_attr(MPI_COMM_WORLD, saved), MPI_SUCCESS);
    CHECK_EQ(deleted, 1);
}

static void pair_elements(void)
{
    struct { double d; int i; } in[2] = {{1.5, 1}, {2.5, 2}}, out[2];
    MPI_Status st;
    int n = 0;
    MPI_Sendrecv(in, 2, MPI_DOUBLE_INT, mtest_rank, 3, out, 2, MPI_DOUBLE_INT, mtest_rank, 3,
                 MPI_COMM_WORLD, &st);
    MPI_Get_elements(&st, MPI_DOUBLE_INT, &n);
    CHECK_EQ(n, 4);
    MPI_Get_count(&st, MPI_DOUBLE_INT, &n);
    CHECK_EQ(n, 2);
}

static void long_double_complex(void)
{
    long double _Complex v = (long double) (mtest_rank + 1) + 2.0L * I, sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_C_LONG_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD);
    long double n = mtest_size;
    CHECK(creall(sum) == n * (n + 1) / 2 && cimagl(sum) == 2 * n, "long double complex sum");
}

static void null_output_array(void)
{
    MPI_Group world;
    int ranks[1] = {0}, class = 0;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int err = MPI_Group_translate_ranks(world, 1, ranks, world, NULL);
    MPI_Error_class(err, &class);
    CHECK_EQ(class, MPI_ERR_ARG);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Group_free(&world);
}

static void create_group_subsets(void)
{
    MPI_Group world;
    int *ranks = mtest_malloc(mtest_size * sizeof(int));
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    for (int round = 0; round < 50; round++) {
        int n = 0, in = 0;
        for (int r = 0; r < mtest_size; r++)
            if ((r * 7 + round * 3) % 5 < 3) { /* a different subset every round */
                in |= r == mtest_rank;
                ranks[n++] = r;
            }
        MPI_Group sub;
        MPI_Group_incl(world, n, ranks, &sub);
        if (in) {
            MPI_Comm comm;
            int size = 0;
            MPI_Comm_create_group(MPI_COMM_WORLD, sub, 0, &comm);
            MPI_Allreduce(&in, &size, 1, MPI_INT, MPI_SUM, comm);
            CHECK_EQ(size, n);
            MPI_Comm_free(&comm);
        }
        MPI_Group_free(&sub);
    }
    MPI_Group_free(&world);
    free(ranks);
}

static int error_class(int err)
{
    int class = MPI_SUCCESS;
    MPI_Error_class(err, &class);
    return class;
}

static void testall_flag_with_a_failure(void)
{
    int small[1], big[2] = {1, 2}, flag = 0, err;
    MPI_Request reqs[2];
    MPI_Status st[2];
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Irecv(small, 1, MPI_INT, mtest_rank, 5, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(big, 2, MPI_INT, mtest_rank, 5, MPI_COMM_WORLD, &reqs[1]);
    do
        err = MPI_Testall(2, reqs, &flag, st);
    while (err == MPI_SUCCESS && !flag);
    CHECK_EQ(error_class(err), MPI_ERR_IN_STATUS);
    CHECK(flag, "MPI_Testall returned MPI_ERR_IN_STATUS with the flag false");
    CHECK_EQ(error_class(st[0].MPI_ERROR), MPI_ERR_TRUNCATE);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void refused_local_and_atomic_arguments(void)
{
    int a[2] = {1, 2}, b[2] = {3, 4};
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK_EQ(error_class(MPI_Reduce_local(MPI_IN_PLACE, b, 2, MPI_INT, MPI_SUM)), MPI_ERR_BUFFER);
    CHECK_EQ(error_class(MPI_Reduce_local(a, MPI_IN_PLACE, 2, MPI_INT, MPI_SUM)), MPI_ERR_BUFFER);
    CHECK_EQ(error_class(MPI_Reduce_local(b, b, 2, MPI_INT, MPI_SUM)), MPI_ERR_BUFFER);
    CHECK_EQ(MPI_Reduce_local(a, b, 2, MPI_INT, MPI_SUM), MPI_SUCCESS);
    CHECK_EQ(b[1], 6);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    float cell = 1.0f, compare = 1.0f, swap = 2.0f, old = 0.0f;
    MPI_Win win;
    MPI_Win_create(&cell, sizeof cell, sizeof cell, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, mtest_rank, 0, win);
    int err = MPI_Compare_and_swap(&swap, &compare, &old, MPI_FLOAT, mtest_rank, 0, win);
    MPI_Win_unlock(mtest_rank, win);
    CHECK_EQ(error_class(err), MPI_ERR_TYPE);
    MPI_Win_free(&win);
    CHECK(cell == 1.0f, "a refused compare-and-swap changed the window");
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    status_error_kept();
    insignificant_arguments();
    aliased_buffers();
    empty_window_and_proc_null();
    freed_keyval();
    pair_elements();
    long_double_complex();
    null_output_array();
    create_group_subsets();
    testall_flag_with_a_failure();
    refused_local_and_atomic_arguments();
    return MTest_Finalize();
}
