/*
 * grequest_fortran.c - generalized requests whose callbacks have Fortran calling conventions, as
 * MPICH's Fortran binding registers them: MPI_Grequest_start, then
 * MPII_Grequest_set_lang_f77(request) (an internal entry point of MPICH's libmpi that its
 * libmpichfort.so.12 calls, for mpif.h, `use mpi` and `use mpi_f08` alike).
 *
 * The callbacks here are written in C the way gfortran compiles the Fortran subroutines: every
 * argument by reference, the error code in a last IERROR argument, the status an
 * MPI_F_STATUS_SIZE integer array, extra_state the address the binding passed (the
 * application's INTEGER(KIND=MPI_ADDRESS_KIND) variable). Checks:
 * - query fills a Fortran status (through MPI_Status_f2c/c2f, as MPI_STATUS_SET_ELEMENTS
 *   does), MPI_Wait returns it in C form, then free runs once; extra_state is passed through;
 * - MPI_Cancel before and after MPI_Grequest_complete passes COMPLETE = .FALSE./.TRUE. by
 *   reference;
 * - an error code in IERROR of the query reaches MPI_Wait, and free still runs;
 * - MPI_Waitall with MPI_STATUSES_IGNORE still runs both queries;
 * - a request without set_lang keeps C conventions (mixed in the same Waitall).
 */
#include "mtest.h"

void MPII_Grequest_set_lang_f77(MPI_Request greq);

/* What the application keeps behind its extra_state. */
typedef struct {
    int queried, freed, cancels;
    MPI_Fint complete; /* the COMPLETE the last cancel saw */
    MPI_Fint query_err; /* what query puts into IERROR */
} state_t;

static void f_query(void *extra, MPI_Fint *fstatus, MPI_Fint *ierr)
{
    state_t *s = extra;
    MPI_Status c;
    s->queried++;
    MPI_Status_f2c(fstatus, &c);
    MPI_Status_set_elements(&c, MPI_INT, 3);
    MPI_Status_set_cancelled(&c, 0);
    c.MPI_SOURCE = 5;
    c.MPI_TAG = 77;
    MPI_Status_c2f(&c, fstatus);
    *ierr = s->query_err;
}

static void f_free(void *extra, MPI_Fint *ierr)
{
    ((state_t *)extra)->freed++;
    *ierr = MPI_SUCCESS;
}

static void f_cancel(void *extra, const MPI_Fint *complete, MPI_Fint *ierr)
{
    state_t *s = extra;
    s->cancels++;
    s->complete = *complete;
    *ierr = MPI_SUCCESS;
}

static int c_query(void *extra, MPI_Status *status)
{
    ((state_t *)extra)->queried++;
    MPI_Status_set_elements(status, MPI_INT, 1);
    return MPI_SUCCESS;
}

static int c_free(void *extra)
{
    ((state_t *)extra)->freed++;
    return MPI_SUCCESS;
}

static int c_cancel(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

/* A generalized request with the Fortran callbacks on `s`. */
static MPI_Request start_fortran(state_t *s)
{
    MPI_Request r = MPI_REQUEST_NULL;
    memset(s, 0, sizeof *s);
    s->complete = -1;
    CALL(MPI_Grequest_start((MPI_Grequest_query_function *)(void (*)(void))f_query,
                            (MPI_Grequest_free_function *)(void (*)(void))f_free,
                            (MPI_Grequest_cancel_function *)(void (*)(void))f_cancel, s, &r));
    MPII_Grequest_set_lang_f77(r);
    return r;
}

static void query_then_free(void)
{
    state_t s;
    MPI_Request r = start_fortran(&s);
    MPI_Status st;
    int flag = 1, count = -1, cancelled = 1;
    CALL(MPI_Test(&r, &flag, &st));
    CHECK(!flag && s.queried == 0, "pending request: flag %d, queried %d", flag, s.queried);
    CALL(MPI_Grequest_complete(r));
    CALL(MPI_Wait(&r, &st));
    CALL(MPI_Get_count(&st, MPI_INT, &count));
    CALL(MPI_Test_cancelled(&st, &cancelled));
    CHECK_EQ(s.queried * 10 + s.freed, 11);
    CHECK_EQ(count, 3);
    CHECK_EQ(st.MPI_SOURCE, 5);
    CHECK_EQ(st.MPI_TAG, 77);
    CHECK_EQ(cancelled, 0);
    CHECK(r == MPI_REQUEST_NULL, "request not MPI_REQUEST_NULL after wait");
}

static void cancel_flags(void)
{
    state_t s;
    MPI_Request r = start_fortran(&s);
    CALL(MPI_Cancel(&r));
    CHECK_EQ(s.cancels, 1);
    CHECK_EQ(s.complete, 0);
    CALL(MPI_Grequest_complete(r));
    CALL(MPI_Cancel(&r));
    CHECK_EQ(s.cancels, 2);
    CHECK_EQ(s.complete, 1);
    CALL(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK_EQ(s.queried * 10 + s.freed, 11);
}

static void query_error(void)
{
    state_t s;
    MPI_Request r = start_fortran(&s);
    int rc, cls = -1;
    s.query_err = MPI_ERR_TAG;
    CALL(MPI_Grequest_complete(r));
    rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Error_class(rc, &cls);
    CHECK_EQ(cls, MPI_ERR_TAG);
    CHECK_EQ(s.queried * 10 + s.freed, 11);
}

static void waitall_mixed(void)
{
    state_t f1, f2, c;
    MPI_Request r[3];
    r[0] = start_fortran(&f1);
    memset(&c, 0, sizeof c);
    CALL(MPI_Grequest_start(c_query, c_free, c_cancel, &c, &r[1]));
    r[2] = start_fortran(&f2);
    for (int i = 0; i < 3; i++)
        CALL(MPI_Grequest_complete(r[i]));
    CALL(MPI_Waitall(3, r, MPI_STATUSES_IGNORE));
    CHECK_EQ(f1.queried * 10 + f1.freed, 11);
    CHECK_EQ(c.queried * 10 + c.freed, 11);
    CHECK_EQ(f2.queried * 10 + f2.freed, 11);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    query_then_free();
    cancel_flags();
    query_error();
    waitall_mixed();
    return MTest_Finalize();
}
