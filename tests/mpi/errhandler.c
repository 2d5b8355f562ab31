/*
 * errhandler.c - error handlers (MPI-3.1 section 8.3): MPI_COMM_WORLD starts with
 * MPI_ERRORS_ARE_FATAL; MPI_Comm_set_errhandler/MPI_Comm_get_errhandler round-trip
 * MPI_ERRORS_RETURN; a handler made with MPI_Comm_create_errhandler is called exactly once per
 * failing call, with the communicator and an error code of the right class, after which the call
 * returns that code; MPI_Comm_call_errhandler invokes it with the given code; MPI_Comm_dup
 * inherits the handler; freeing a handler that is still attached keeps it working.
 * Runs with any number of ranks.
 */
#include "mtest.h"

static int calls = 0, last_code = MPI_SUCCESS;
static MPI_Comm last_comm = MPI_COMM_NULL;

static void handler(MPI_Comm *comm, int *code, ...)
{
    calls++;
    last_code = *code;
    last_comm = *comm;
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Errhandler eh, got;
    int rc, cls, result;

    /* Default and round trip of the predefined handlers. */
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got);
    CHECK(got == MPI_ERRORS_ARE_FATAL, "MPI_COMM_WORLD does not start with MPI_ERRORS_ARE_FATAL");
    MPI_Errhandler_free(&got);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got);
    CHECK(got == MPI_ERRORS_RETURN, "get after set did not return MPI_ERRORS_RETURN");
    MPI_Errhandler_free(&got);

    /* A user handler on a duplicate of MPI_COMM_WORLD. */
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    CALL(MPI_Comm_create_errhandler(handler, &eh));
    CALL(MPI_Comm_set_errhandler(comm, eh));
    MPI_Comm_get_errhandler(comm, &got);
    CHECK(got == eh, "get_errhandler did not return the user handler");
    MPI_Errhandler_free(&got);

    rc = MPI_Send(NULL, 0, MPI_INT, mtest_size + 3, 0, comm); /* bad rank */
    CHECK_EQ(calls, 1);
    CHECK_CLASS(last_code, MPI_ERR_RANK);
    CHECK(rc == last_code, "call returned %d, handler got %d", rc, last_code);
    MPI_Comm_compare(last_comm, comm, &result);
    CHECK(result == MPI_IDENT, "handler got another communicator (compare %d)", result);

    rc = MPI_Recv(NULL, 0, MPI_INT, 0, -5, comm, MPI_STATUS_IGNORE); /* bad tag */
    CHECK_EQ(calls, 2);
    CHECK_CLASS(last_code, MPI_ERR_TAG);

    /* A successful call does not call the handler. */
    int v = 1, r = 0;
    MPI_Sendrecv(&v, 1, MPI_INT, mtest_rank, 0, &r, 1, MPI_INT, mtest_rank, 0, comm, MPI_STATUS_IGNORE);
    CHECK_EQ(calls, 2);

    /* Comm_call_errhandler passes the code through. */
    CALL(MPI_Comm_call_errhandler(comm, MPI_ERR_OTHER));
    CHECK_EQ(calls, 3);
    MPI_Error_class(last_code, &cls);
    CHECK_EQ(cls, MPI_ERR_OTHER);

    /* A dup inherits the handler; freeing the handler object leaves it attached and working. */
    MPI_Comm dup2;
    MPI_Comm_dup(comm, &dup2);
    MPI_Errhandler_free(&eh);
    CHECK(eh == MPI_ERRHANDLER_NULL, "Errhandler_free did not set MPI_ERRHANDLER_NULL");
    rc = MPI_Send(NULL, -1, MPI_INT, 0, 0, dup2); /* bad count */
    CHECK_EQ(calls, 4);
    CHECK_CLASS(rc, MPI_ERR_COUNT);
    MPI_Comm_compare(last_comm, dup2, &result);
    CHECK(result == MPI_IDENT, "handler on the dup got another communicator (compare %d)", result);

    /* Setting MPI_ERRORS_RETURN on the dup stops the calls. */
    MPI_Comm_set_errhandler(dup2, MPI_ERRORS_RETURN);
    rc = MPI_Send(NULL, 0, MPI_INT, -7, 0, dup2);
    CHECK_CLASS(rc, MPI_ERR_RANK);
    CHECK_EQ(calls, 4);

    MPI_Comm_free(&dup2);
    MPI_Comm_free(&comm);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    return MTest_Finalize();
}
