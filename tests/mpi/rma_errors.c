/*
 * rma_errors.c - error classes of erroneous RMA calls under MPI_ERRORS_RETURN (MPI-3.1 8.4 table
 * 8.2 and 11.8). Each case uses a fresh window where the error could disturb the next one:
 *  - a Put past the end of the target's window (target_disp + count beyond its size):
 *    MPI_ERR_RMA_RANGE (11.8: "target memory is not part of the window");
 *  - MPI_Win_unlock of a target that is not locked: MPI_ERR_RMA_SYNC;
 *  - MPI_Put outside any epoch: MPI_ERR_RMA_SYNC;
 *  - MPI_Win_complete without MPI_Win_start, MPI_Win_wait without MPI_Win_post, MPI_Win_flush
 *    and MPI_Win_unlock_all outside a passive epoch: MPI_ERR_RMA_SYNC;
 *  - inside the access epoch of MPI_Win_start, MPI_Win_lock and MPI_Win_lock_all, and inside
 *    a lock, MPI_Win_start: MPI_ERR_RMA_SYNC (11.5: access epochs are disjoint); MPI_Win_free
 *    inside an epoch: MPI_ERR_RMA_SYNC, raised on the window's handler (MPI_ERRORS_RETURN) while
 *    MPI_COMM_WORLD's is MPI_ERRORS_ARE_FATAL;
 *  - Put, Get, Accumulate and Get_accumulate that move no data succeed (also with a derived
 *    type of size 0), but 0 ints accumulated onto 0 doubles is MPI_ERR_TYPE;
 *  - MPI_Win_shared_query on a window not made by MPI_Win_allocate_shared: MPI_ERR_RMA_FLAVOR;
 *  - MPI_Win_attach and MPI_Win_detach on a window not made by MPI_Win_create_dynamic:
 *    MPI_ERR_RMA_FLAVOR;
 *  - MPI_WIN_NULL as window: MPI_ERR_WIN (raised on MPI_COMM_WORLD's handler, 8.3);
 *  - MPI_Accumulate with an operation not defined for the type (BAND on MPI_DOUBLE, SUM on
 *    MPI_2INT) or a user-defined operation: MPI_ERR_OP;
 *  - a bad lock type: MPI_ERR_LOCKTYPE; a bad target rank: MPI_ERR_RANK; a negative count:
 *    MPI_ERR_COUNT; a negative window size: MPI_ERR_SIZE; a displacement unit of 0 or less:
 *    MPI_ERR_DISP; an unknown assertion bit: MPI_ERR_ASSERT.
 * With MTEST_RMA_SHARED=1 the windows come from MPI_Win_allocate_shared (on Reflex, Put, Get and
 * flush then take the direct path of plain copies, which must decline every erroneous call so
 * that it is reported); the range case also checks that the last element of a window, and not
 * one byte more, can be written and read back.
 * The case to run is chosen with MTEST_RMA_ERROR=range|sync|flavor|args (default: all). Runs
 * with any number of ranks.
 */
#include "mtest.h"

static int want(const char *name)
{
    const char *e = getenv("MTEST_RMA_ERROR");
    return !e || !*e || !strcmp(e, "all") || !strcmp(e, name);
}

static MPI_Win make(int **base)
{
    MPI_Win win;
    if (getenv("MTEST_RMA_SHARED"))
        CALL(MPI_Win_allocate_shared(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, base, &win));
    else
        CALL(MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, base, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    return win;
}

static void user_op(void *in, void *inout, int *len, MPI_Datatype *t) { (void)in; (void)inout; (void)len; (void)t; }

/* operations that move no data (a count of 0, or a type of size 0) succeed and send nothing,
 * except that an accumulate's types must still be built from one predefined type (MPI-3.1
 * 11.3.4: 0 ints onto 0 doubles is MPI_ERR_TYPE); a type of size 0 agrees with any. Inside an
 * epoch on `right`. */
static void zero_size_operations(MPI_Win win, int right)
{
    MPI_Datatype none;
    MPI_Type_contiguous(0, MPI_INT, &none);
    MPI_Type_commit(&none);
    int v[2] = {0}, r[2] = {0};
    MPI_Datatype kinds[3] = {none, MPI_INT, MPI_DOUBLE};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            int n = kinds[i] == none, m = kinds[j] == none; /* a type of size 0 may have a count */
            CALL(MPI_Put(v, n, kinds[i], right, 0, m, kinds[j], win));
            CALL(MPI_Get(v, n, kinds[i], right, 0, m, kinds[j], win));
            int differ = i && j && i != j;
            int acc = MPI_Accumulate(v, n, kinds[i], right, 0, m, kinds[j], MPI_SUM, win);
            int getacc = MPI_Get_accumulate(v, n, kinds[i], r, n, kinds[i], right, 0, m, kinds[j], MPI_SUM, win);
            if (differ) {
                CHECK_CLASS(acc, MPI_ERR_TYPE);
                CHECK_CLASS(getacc, MPI_ERR_TYPE);
            } else {
                CALL(acc);
                CALL(getacc);
            }
        }
    CALL(MPI_Win_flush(right, win));
    MPI_Type_free(&none);
}

/* epochs that may not overlap, and a window freed inside one */
static void overlapping_epochs(int **base)
{
    MPI_Win win = make(base);
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int right = (mtest_rank + 1) % mtest_size;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    CALL(MPI_Win_post(world, 0, win));
    CALL(MPI_Win_start(world, 0, win));
    CHECK_CLASS(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Win_lock(MPI_LOCK_SHARED, right, MPI_MODE_NOCHECK, win), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Win_lock_all(0, win), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Win_free(&win), MPI_ERR_RMA_SYNC);
    CHECK(win != MPI_WIN_NULL, "a refused MPI_Win_free set the handle to MPI_WIN_NULL");
    CALL(MPI_Win_complete(win));
    CALL(MPI_Win_wait(win));
    CALL(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    CHECK_CLASS(MPI_Win_start(world, 0, win), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Win_free(&win), MPI_ERR_RMA_SYNC);
    CALL(MPI_Win_unlock(right, win));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Group_free(&world);
    CALL(MPI_Win_free(&win));
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int *base, v[8] = {0}, right = (mtest_rank + 1) % mtest_size;
    MPI_Win win;

    if (want("range")) {
        win = make(&base);
        CALL(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
        CHECK_CLASS(MPI_Put(v, 2, MPI_INT, right, 3, 2, MPI_INT, win), MPI_ERR_RMA_RANGE);
        CHECK_CLASS(MPI_Get(v, 1, MPI_INT, right, 4, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
        CHECK_CLASS(MPI_Accumulate(v, 8, MPI_INT, right, 0, 8, MPI_INT, MPI_SUM, win), MPI_ERR_RMA_RANGE);
        CHECK_CLASS(MPI_Put(v, 1, MPI_INT, right, -1, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
        CHECK_CLASS(MPI_Put(v, 5, MPI_CHAR, right, 12, 5, MPI_CHAR, win), MPI_ERR_RMA_RANGE);
        int last = 1000 + mtest_rank, back = -1;
        CALL(MPI_Put(&last, 1, MPI_INT, right, 3, 1, MPI_INT, win));
        CALL(MPI_Win_flush(right, win));
        CALL(MPI_Get(&back, 4, MPI_CHAR, right, 3, 4, MPI_CHAR, win));
        CALL(MPI_Win_flush(right, win));
        CHECK(back == last, "rank %d read %d back from the last element of rank %d, wrote %d", mtest_rank, back,
              right, last);
        CALL(MPI_Win_unlock(right, win));
        CALL(MPI_Win_free(&win));
    }
    if (want("sync")) {
        win = make(&base);
        CHECK_CLASS(MPI_Win_unlock(right, win), MPI_ERR_RMA_SYNC);
        CHECK_CLASS(MPI_Put(v, 1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
        CHECK_CLASS(MPI_Win_complete(win), MPI_ERR_RMA_SYNC);
        CHECK_CLASS(MPI_Win_wait(win), MPI_ERR_RMA_SYNC);
        CHECK_CLASS(MPI_Win_flush(right, win), MPI_ERR_RMA_SYNC);
        CHECK_CLASS(MPI_Win_unlock_all(win), MPI_ERR_RMA_SYNC);
        MPI_Barrier(MPI_COMM_WORLD);
        CALL(MPI_Win_free(&win));
        overlapping_epochs(&base);
    }
    if (want("flavor")) {
        MPI_Aint sz;
        int du, *p;
        win = make(&base);
        CHECK_CLASS(MPI_Win_shared_query(win, 0, &sz, &du, &p), MPI_ERR_RMA_FLAVOR);
        CHECK_CLASS(MPI_Win_attach(win, v, sizeof v), MPI_ERR_RMA_FLAVOR);
        CHECK_CLASS(MPI_Win_detach(win, v), MPI_ERR_RMA_FLAVOR);
        CALL(MPI_Win_free(&win));
    }
    if (want("args")) {
        MPI_Win bad = MPI_WIN_NULL;
        CHECK_CLASS(MPI_Win_fence(0, bad), MPI_ERR_WIN);
        CHECK_CLASS(MPI_Put(v, 1, MPI_INT, 0, 0, 1, MPI_INT, bad), MPI_ERR_WIN);
        CHECK_CLASS(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, bad), MPI_ERR_WIN);
        win = make(&base);
        MPI_Op op;
        MPI_Op_create(user_op, 1, &op);
        double d = 1;
        CALL(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
        CHECK_CLASS(MPI_Accumulate(&d, 1, MPI_DOUBLE, right, 0, 1, MPI_DOUBLE, MPI_BAND, win), MPI_ERR_OP);
        CHECK_CLASS(MPI_Accumulate(v, 1, MPI_2INT, right, 0, 1, MPI_2INT, MPI_SUM, win), MPI_ERR_OP);
        CHECK_CLASS(MPI_Accumulate(v, 1, MPI_INT, right, 0, 1, MPI_INT, op, win), MPI_ERR_OP);
        CHECK_CLASS(MPI_Put(v, 1, MPI_INT, mtest_size, 0, 1, MPI_INT, win), MPI_ERR_RANK);
        CHECK_CLASS(MPI_Put(v, -1, MPI_INT, right, 0, -1, MPI_INT, win), MPI_ERR_COUNT);
        zero_size_operations(win, right);
        CALL(MPI_Win_unlock(right, win));
        CHECK_CLASS(MPI_Win_lock(12345, right, 0, win), MPI_ERR_LOCKTYPE);
        CHECK_CLASS(MPI_Win_fence(1 << 20, win), MPI_ERR_ASSERT);
        MPI_Op_free(&op);
        CALL(MPI_Win_free(&win));
        CHECK_CLASS(MPI_Win_create(v, -8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win), MPI_ERR_SIZE);
        CHECK_CLASS(MPI_Win_create(v, sizeof v, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &win), MPI_ERR_DISP);
    }
    return MTest_Finalize();
}
