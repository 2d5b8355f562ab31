/*
 * rma_errhandler.c - error handlers on windows (MPI-3.1 8.3.2): a new window starts with
 * MPI_ERRORS_ARE_FATAL (it does not inherit the communicator's handler); MPI_Win_set_errhandler /
 * MPI_Win_get_errhandler round-trip MPI_ERRORS_RETURN; a handler made with
 * MPI_Win_create_errhandler is called once per failing RMA call with the window and an error
 * code of the right class (a target rank out of range: MPI_ERR_RANK; a negative count:
 * MPI_ERR_COUNT), and the call returns that code; MPI_Win_call_errhandler passes a predefined
 * code and a user-defined one (MPI_Add_error_class) through; a freed handler object stays
 * attached and working; successful calls do not call it. Runs with any number of ranks.
 */
#include "mtest.h"

static int calls = 0, last_code = MPI_SUCCESS;
static MPI_Win last_win = MPI_WIN_NULL;

static void handler(MPI_Win *win, int *code, ...)
{
    calls++;
    last_code = *code;
    last_win = *win;
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int *mem = NULL, cls = -1, rc;
    MPI_Win win;
    MPI_Errhandler eh, got;
    CALL(MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    mem[0] = 0; /* before any epoch; the barrier orders it before the others' accumulates */
    MPI_Barrier(MPI_COMM_WORLD);

    CALL(MPI_Win_get_errhandler(win, &got));
    CHECK(got == MPI_ERRORS_ARE_FATAL, "a new window does not start with MPI_ERRORS_ARE_FATAL");
    MPI_Errhandler_free(&got);
    CALL(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    CALL(MPI_Win_get_errhandler(win, &got));
    CHECK(got == MPI_ERRORS_RETURN, "get after set did not return MPI_ERRORS_RETURN");
    MPI_Errhandler_free(&got);

    CALL(MPI_Win_create_errhandler(handler, &eh));
    CALL(MPI_Win_set_errhandler(win, eh));
    CALL(MPI_Win_get_errhandler(win, &got));
    CHECK(got == eh, "get_errhandler did not return the user handler");
    MPI_Errhandler_free(&got);

    int v = 1;
    CALL(MPI_Win_lock_all(0, win));
    rc = MPI_Put(&v, 1, MPI_INT, mtest_size + 2, 0, 1, MPI_INT, win); /* bad rank */
    CHECK_EQ(calls, 1);
    CHECK_CLASS(last_code, MPI_ERR_RANK);
    CHECK(rc == last_code, "call returned %d, handler got %d", rc, last_code);
    CHECK(last_win == win, "handler got another window");
    rc = MPI_Get(&v, -1, MPI_INT, 0, 0, -1, MPI_INT, win); /* bad count */
    CHECK_EQ(calls, 2);
    CHECK_CLASS(rc, MPI_ERR_COUNT);
    CHECK(rc == last_code, "call returned %d, handler got %d", rc, last_code);
    /* a successful operation does not call it */
    CALL(MPI_Accumulate(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win));
    CALL(MPI_Win_unlock_all(win));
    CHECK_EQ(calls, 2);

    /* Win_call_errhandler: a predefined class and a user class */
    CALL(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
    CHECK_EQ(calls, 3);
    MPI_Error_class(last_code, &cls);
    CHECK_EQ(cls, MPI_ERR_OTHER);
    int ucls, ucode;
    CALL(MPI_Add_error_class(&ucls));
    CALL(MPI_Add_error_code(ucls, &ucode));
    CALL(MPI_Win_call_errhandler(win, ucode));
    CHECK_EQ(calls, 4);
    CHECK_EQ(last_code, ucode);

    /* the handler object freed: still attached and called */
    MPI_Errhandler_free(&eh);
    CHECK(eh == MPI_ERRHANDLER_NULL, "Errhandler_free did not set MPI_ERRHANDLER_NULL");
    CALL(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    rc = MPI_Put(&v, 1, MPI_INT, -3, 0, 1, MPI_INT, win);
    CHECK_EQ(calls, 5);
    CHECK_CLASS(rc, MPI_ERR_RANK);
    CALL(MPI_Win_unlock(0, win));

    /* back to ERRORS_RETURN: no more calls, the code is still returned */
    CALL(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    CALL(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    rc = MPI_Put(&v, 1, MPI_INT, mtest_size, 0, 1, MPI_INT, win);
    CHECK_CLASS(rc, MPI_ERR_RANK);
    CALL(MPI_Win_unlock(0, win));
    CHECK_EQ(calls, 5);

    MPI_Barrier(MPI_COMM_WORLD);
    if (mtest_rank == 0) {
        CALL(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK_EQ(mem[0], mtest_size); /* the one good Accumulate of each rank */
        CALL(MPI_Win_unlock(0, win));
    }
    CALL(MPI_Win_free(&win));
    return MTest_Finalize();
}
