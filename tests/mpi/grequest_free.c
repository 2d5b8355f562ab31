/*
 * grequest_free.c - a generalized request freed before it completes (MPI-3.1 section 12.2):
 * free_fn "will be called either in the MPI call MPI_REQUEST_FREE(request), or in the MPI call
 * MPI_GREQUEST_COMPLETE(request), whichever happens last". So MPI_Request_free runs no callback,
 * MPI_Grequest_complete then runs free_fn once, and query_fn never runs. Also with the request
 * cancelled first (cancel_fn runs once, complete=false). (MPICH 4.0.2 runs free_fn at once in
 * MPI_Request_free: see testlist.)
 */
#include "mtest.h"

typedef struct {
    int queried, freed, cancels;
} greq_t;

static int query_fn(void *extra, MPI_Status *status)
{
    ((greq_t *)extra)->queried++;
    MPI_Status_set_elements(status, MPI_BYTE, 0);
    return MPI_SUCCESS;
}

static int free_fn(void *extra)
{
    ((greq_t *)extra)->freed++;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    greq_t *g = extra;
    g->cancels++;
    CHECK_EQ(complete, 0);
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int cancel = 0; cancel < 2; cancel++) {
        greq_t g = {0, 0, 0};
        MPI_Request r = MPI_REQUEST_NULL, keep;
        CALL(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &g, &r));
        keep = r;
        if (cancel)
            CALL(MPI_Cancel(&r));
        CALL(MPI_Request_free(&r));
        CHECK(r == MPI_REQUEST_NULL, "handle not MPI_REQUEST_NULL after Request_free");
        CHECK_EQ(g.freed, 0);
        CALL(MPI_Grequest_complete(keep));
        CHECK_EQ(g.freed, 1);
        CHECK_EQ(g.queried, 0);
        CHECK_EQ(g.cancels, cancel);
    }
    return MTest_Finalize();
}
