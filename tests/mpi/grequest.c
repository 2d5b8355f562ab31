/*
 * grequest.c - generalized requests (MPI-3.1 section 12.2), one thread.
 *
 * Checks, for every way a generalized request ends, which callbacks run, how often, in which
 * order and with which arguments:
 * - completed before MPI_Wait: query_fn fills the status (MPI_Status_set_elements inside it),
 *   then free_fn; the handle becomes MPI_REQUEST_NULL;
 * - MPI_Test / MPI_Request_get_status before completion run nothing; Request_get_status after it
 *   runs query_fn only (the request stays), the next Test runs query_fn and free_fn;
 * - MPI_Request_free after MPI_Grequest_complete: free_fn runs in Request_free, query_fn never
 *   (freed before completion: grequest_free.c);
 * - MPI_Cancel passes complete=false / true to cancel_fn; a query_fn that reports the
 *   cancellation makes MPI_Test_cancelled true;
 * - Waitall, Testany, Waitany, Testsome, Waitsome over generalized requests mixed with ordinary
 *   sends and receives (to itself), MPI_STATUSES_IGNORE included (query_fn still gets a status);
 * - a query_fn that returns an error: MPI_Wait returns an error, MPI_Waitall returns
 *   MPI_ERR_IN_STATUS with the error in that request's status (MPI_SUCCESS in the others), and
 *   free_fn still runs.
 */
#include "mtest.h"

#define MAXEV 64

/* The extra_state of one generalized request. */
typedef struct {
    int id;
    int queried, freed, cancels, cancel_complete;
    int query_rc;     /* what query_fn returns */
    int report_cancel; /* query_fn marks the status cancelled */
    int null_status;  /* query_fn was handed NULL or MPI_STATUS_IGNORE */
} greq_t;

static char events[MAXEV * 8]; /* "q1 f1 c2 ..." in call order */

static void event(char what, int id)
{
    size_t n = strlen(events);
    if (n + 8 < sizeof events)
        snprintf(events + n, sizeof events - n, "%c%d ", what, id);
}

static int query_fn(void *extra, MPI_Status *status)
{
    greq_t *g = extra;
    g->queried++;
    event('q', g->id);
    if (status == NULL || status == MPI_STATUS_IGNORE) {
        g->null_status++;
        return g->query_rc;
    }
    status->MPI_SOURCE = 100 + g->id;
    status->MPI_TAG = 200 + g->id;
    MPI_Status_set_elements(status, MPI_INT, g->id);
    MPI_Status_set_cancelled(status, g->report_cancel);
    return g->query_rc;
}

static int free_fn(void *extra)
{
    greq_t *g = extra;
    g->freed++;
    event('f', g->id);
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    greq_t *g = extra;
    g->cancels++;
    g->cancel_complete = complete;
    event('c', g->id);
    return MPI_SUCCESS;
}

static MPI_Request start(greq_t *g, int id)
{
    MPI_Request r = MPI_REQUEST_NULL;
    memset(g, 0, sizeof *g);
    g->id = id;
    CALL(MPI_Grequest_start(query_fn, free_fn, cancel_fn, g, &r));
    CHECK(r != MPI_REQUEST_NULL, "Grequest_start returned MPI_REQUEST_NULL");
    return r;
}

/* The status query_fn of request `id` writes. */
static void check_queried_status(const MPI_Status *st, int id)
{
    int n = -1;
    CHECK_EQ(st->MPI_SOURCE, 100 + id);
    CHECK_EQ(st->MPI_TAG, 200 + id);
    MPI_Get_count(st, MPI_INT, &n);
    CHECK_EQ(n, id);
}

static void check_events(const char *want)
{
    CHECK(strcmp(events, want) == 0, "callbacks \"%s\", want \"%s\"", events, want);
    events[0] = 0;
}

/* The class of an error a failing query_fn produced: its own, or MPI_ERR_OTHER (MPICH wraps it). */
static void check_query_error(int rc, int want)
{
    int cls = -1;
    CHECK(rc != MPI_SUCCESS, "a failing query_fn gave MPI_SUCCESS");
    if (rc == MPI_SUCCESS)
        return;
    MPI_Error_class(rc, &cls);
    CHECK(cls == want || cls == MPI_ERR_OTHER, "class %d (%s)", cls, mtest_errstr(rc));
}

static void completed_before_wait(void)
{
    greq_t g;
    MPI_Status st;
    MPI_Request r = start(&g, 1);
    CALL(MPI_Grequest_complete(r));
    CHECK_EQ(g.queried + g.freed, 0);
    CALL(MPI_Wait(&r, &st));
    CHECK(r == MPI_REQUEST_NULL, "handle not MPI_REQUEST_NULL after Wait");
    check_queried_status(&st, 1);
    check_events("q1 f1 ");

    r = start(&g, 2);
    CALL(MPI_Grequest_complete(r));
    CALL(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK_EQ(g.null_status, 0); /* query_fn gets a real status even when the caller ignores it */
    check_events("q2 f2 ");
}

static void test_and_get_status(void)
{
    greq_t g;
    MPI_Status st;
    int flag = -1;
    MPI_Request r = start(&g, 3);
    CALL(MPI_Test(&r, &flag, &st));
    CHECK_EQ(flag, 0);
    CALL(MPI_Request_get_status(r, &flag, &st));
    CHECK_EQ(flag, 0);
    check_events("");
    CALL(MPI_Grequest_complete(r));
    CALL(MPI_Request_get_status(r, &flag, &st));
    CHECK_EQ(flag, 1);
    check_queried_status(&st, 3);
    CHECK(r != MPI_REQUEST_NULL, "Request_get_status freed the request");
    check_events("q3 ");
    CALL(MPI_Test(&r, &flag, &st));
    CHECK_EQ(flag, 1);
    check_queried_status(&st, 3);
    CHECK(r == MPI_REQUEST_NULL, "handle not MPI_REQUEST_NULL after Test");
    check_events("q3 f3 ");
}

static void freed_after_completion(void)
{
    greq_t g;
    MPI_Request r = start(&g, 5);
    CALL(MPI_Grequest_complete(r));
    check_events("");
    CALL(MPI_Request_free(&r));
    CHECK(r == MPI_REQUEST_NULL, "handle not MPI_REQUEST_NULL after Request_free");
    check_events("f5 ");
    CHECK_EQ(g.queried, 0);
}

static void cancelled(void)
{
    greq_t g;
    MPI_Status st;
    int flag = -1;
    MPI_Request r = start(&g, 7);
    CALL(MPI_Cancel(&r));
    CHECK_EQ(g.cancels, 1);
    CHECK_EQ(g.cancel_complete, 0);
    g.report_cancel = 1; /* the application honours the cancellation */
    CALL(MPI_Grequest_complete(r));
    CALL(MPI_Cancel(&r));
    CHECK_EQ(g.cancels, 2);
    CHECK(g.cancel_complete != 0, "cancel_fn after completion got complete=false");
    CALL(MPI_Wait(&r, &st));
    CALL(MPI_Test_cancelled(&st, &flag));
    CHECK_EQ(flag, 1);
    check_events("c7 c7 q7 f7 ");
}

/* Waitall over [recv from self, greq, send to self, greq], statuses kept and ignored. */
static void waitall_mixed(void)
{
    greq_t g1, g2;
    int out = 42, in = -1;
    MPI_Status st[4];
    for (int ignore = 0; ignore < 2; ignore++) {
        MPI_Request r[4];
        MPI_Irecv(&in, 1, MPI_INT, mtest_rank, 9, MPI_COMM_WORLD, &r[0]);
        r[1] = start(&g1, 8);
        MPI_Isend(&out, 1, MPI_INT, mtest_rank, 9, MPI_COMM_WORLD, &r[2]);
        r[3] = start(&g2, 9);
        CALL(MPI_Grequest_complete(r[3]));
        CALL(MPI_Grequest_complete(r[1]));
        CALL(MPI_Waitall(4, r, ignore ? MPI_STATUSES_IGNORE : st));
        for (int i = 0; i < 4; i++)
            CHECK(r[i] == MPI_REQUEST_NULL, "request %d not MPI_REQUEST_NULL", i);
        CHECK_EQ(in, 42);
        CHECK_EQ(g1.queried * 10 + g1.freed, 11);
        CHECK_EQ(g2.queried * 10 + g2.freed, 11);
        CHECK_EQ(g1.null_status + g2.null_status, 0);
        if (!ignore) {
            CHECK_EQ(st[0].MPI_SOURCE, mtest_rank);
            CHECK_EQ(st[0].MPI_TAG, 9);
            check_queried_status(&st[1], 8);
            check_queried_status(&st[3], 9);
        }
        events[0] = 0;
    }
}

/* Testany/Waitany/Testsome/Waitsome over generalized requests and a receive from self. */
static void any_and_some(void)
{
    greq_t g1, g2;
    MPI_Request r[3];
    MPI_Status st, sts[3];
    int index = -1, flag = -1, out = 5, in = -1, outcount = -1, idx[3];
    r[0] = start(&g1, 10);
    MPI_Irecv(&in, 1, MPI_INT, mtest_rank, 11, MPI_COMM_WORLD, &r[1]);
    r[2] = MPI_REQUEST_NULL;
    CALL(MPI_Testany(3, r, &index, &flag, &st));
    CHECK_EQ(flag, 0);
    CHECK_EQ(index, MPI_UNDEFINED);
    CALL(MPI_Grequest_complete(r[0]));
    CALL(MPI_Testany(3, r, &index, &flag, &st));
    CHECK_EQ(flag, 1);
    CHECK_EQ(index, 0);
    check_queried_status(&st, 10);
    check_events("q10 f10 ");
    MPI_Send(&out, 1, MPI_INT, mtest_rank, 11, MPI_COMM_WORLD);
    CALL(MPI_Waitany(3, r, &index, &st));
    CHECK_EQ(index, 1);
    CHECK_EQ(in, 5);

    r[0] = start(&g1, 12);
    r[1] = start(&g2, 13);
    CALL(MPI_Testsome(2, r, &outcount, idx, sts));
    CHECK_EQ(outcount, 0);
    CALL(MPI_Grequest_complete(r[1]));
    CALL(MPI_Testsome(2, r, &outcount, idx, sts));
    CHECK_EQ(outcount, 1);
    CHECK_EQ(idx[0], 1);
    check_queried_status(&sts[0], 13);
    CALL(MPI_Grequest_complete(r[0]));
    CALL(MPI_Waitsome(2, r, &outcount, idx, sts));
    CHECK_EQ(outcount, 1);
    CHECK_EQ(idx[0], 0);
    check_queried_status(&sts[0], 12);
    check_events("q13 f13 q12 f12 ");
    CALL(MPI_Waitsome(2, r, &outcount, idx, sts));
    CHECK_EQ(outcount, MPI_UNDEFINED);
}

static void query_errors(void)
{
    greq_t g, bad;
    MPI_Status st[2];
    MPI_Request r = start(&bad, 14);
    bad.query_rc = MPI_ERR_TAG;
    CALL(MPI_Grequest_complete(r));
    check_query_error(MPI_Wait(&r, st), MPI_ERR_TAG);
    CHECK_EQ(bad.queried * 10 + bad.freed, 11);

    /* The failing request last: MPICH leaves the requests after a failed one pending. */
    MPI_Request rs[2];
    rs[0] = start(&g, 15);
    rs[1] = start(&bad, 16);
    bad.query_rc = MPI_ERR_TAG;
    CALL(MPI_Grequest_complete(rs[0]));
    CALL(MPI_Grequest_complete(rs[1]));
    st[0].MPI_ERROR = st[1].MPI_ERROR = -1;
    int rc = MPI_Waitall(2, rs, st);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK_EQ(cls, MPI_ERR_IN_STATUS);
    CHECK_EQ(st[0].MPI_ERROR, MPI_SUCCESS);
    check_query_error(st[1].MPI_ERROR, MPI_ERR_TAG);
    CHECK_EQ(g.queried * 10 + g.freed, 11);
    CHECK_EQ(bad.queried * 10 + bad.freed, 11);
    events[0] = 0;
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    completed_before_wait();
    test_and_get_status();
    freed_after_completion();
    cancelled();
    waitall_mixed();
    any_and_some();
    query_errors();
    return MTest_Finalize();
}
