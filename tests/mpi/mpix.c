/*
 * mpix.c - the MPICH extensions Reflex exports because MPICH's Fortran binding links against them
 * (crates/reflex-mpi/src/mpix.rs). Reflex's mpi.h declares them as MPICH's does; the prototypes
 * below repeat them, so that a header which lacks one still compiles this test.
 * - ULFM without failures (a dead rank ends a Reflex job): MPIX_Comm_failure_ack succeeds,
 *   MPIX_Comm_failure_get_acked gives MPI_GROUP_EMPTY, MPIX_Comm_agree ANDs the flags,
 *   MPIX_Comm_shrink gives a working communicator of every rank, MPIX_Comm_revoke is
 *   MPI_ERR_UNSUPPORTED_OPERATION, and a bad communicator is MPI_ERR_COMM;
 * - GPU queries answer 0; an unknown GPU type is MPI_ERR_ARG;
 * - MPIX_Delete_error_class/_code/_string: a class with codes cannot go, a code is not a class,
 *   deleted entries are gone, predefined classes cannot be deleted;
 * - the PMPIX_ names are exported too.
 */
#include "mtest.h"

int MPIX_Comm_failure_ack(MPI_Comm comm);
int MPIX_Comm_failure_get_acked(MPI_Comm comm, MPI_Group *failedgrp);
int MPIX_Comm_agree(MPI_Comm comm, int *flag);
int MPIX_Comm_shrink(MPI_Comm comm, MPI_Comm *newcomm);
int MPIX_Comm_revoke(MPI_Comm comm);
int PMPIX_Comm_agree(MPI_Comm comm, int *flag);
int MPIX_GPU_query_support(int gpu_type, int *is_supported);
int MPIX_Query_cuda_support(void);
int MPIX_Query_ze_support(void);
int MPIX_Query_hip_support(void);
int MPIX_Delete_error_class(int errorclass);
int MPIX_Delete_error_code(int errorcode);
int MPIX_Delete_error_string(int errorcode);

static void fault_tolerance(void)
{
    MPI_Group failed = MPI_GROUP_NULL;
    MPI_Comm shrunk = MPI_COMM_NULL;
    int flag, size = -1, rank = -1, sum = 0;
    CALL(MPIX_Comm_failure_ack(MPI_COMM_WORLD));
    CALL(MPIX_Comm_failure_get_acked(MPI_COMM_WORLD, &failed));
    CHECK(failed == MPI_GROUP_EMPTY, "acked group %#x is not MPI_GROUP_EMPTY", (unsigned)failed);

    /* Rank r clears bit r: the AND keeps the bits above the ranks'. */
    flag = 0xff & ~(1 << mtest_rank);
    CALL(MPIX_Comm_agree(MPI_COMM_WORLD, &flag));
    CHECK_EQ(flag, 0xff & ~((1 << mtest_size) - 1));
    flag = 1;
    CALL(PMPIX_Comm_agree(MPI_COMM_SELF, &flag));
    CHECK_EQ(flag, 1);

    CALL(MPIX_Comm_shrink(MPI_COMM_WORLD, &shrunk));
    CALL(MPI_Comm_size(shrunk, &size));
    CALL(MPI_Comm_rank(shrunk, &rank));
    CHECK_EQ(size, mtest_size);
    CHECK_EQ(rank, mtest_rank);
    CALL(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, shrunk));
    CHECK_EQ(sum, mtest_size * (mtest_size - 1) / 2);
    CALL(MPI_Comm_free(&shrunk));

    CHECK_CLASS(MPIX_Comm_revoke(MPI_COMM_WORLD), MPI_ERR_UNSUPPORTED_OPERATION);
    CHECK_CLASS(MPIX_Comm_failure_ack(MPI_COMM_NULL), MPI_ERR_COMM);
    CHECK_CLASS(MPIX_Comm_agree(MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
}

static void gpu_queries(void)
{
    for (int type = 0; type < 3; type++) {
        int supported = -1;
        CALL(MPIX_GPU_query_support(type, &supported));
        CHECK_EQ(supported, 0);
    }
    int supported = -1;
    CHECK_CLASS(MPIX_GPU_query_support(7, &supported), MPI_ERR_ARG);
    CHECK_EQ(MPIX_Query_cuda_support(), 0);
    CHECK_EQ(MPIX_Query_ze_support(), 0);
    CHECK_EQ(MPIX_Query_hip_support(), 0);
}

static void delete_errors(void)
{
    int cls, code, other, len = -1, c = -1;
    char text[MPI_MAX_ERROR_STRING];
    CALL(MPI_Add_error_class(&cls));
    CALL(MPI_Add_error_code(cls, &code));
    CALL(MPI_Add_error_string(code, "about to go"));
    CHECK_CLASS(MPIX_Delete_error_class(cls), MPI_ERR_ARG);
    CHECK_CLASS(MPIX_Delete_error_code(cls), MPI_ERR_ARG);
    CHECK_CLASS(MPIX_Delete_error_class(code), MPI_ERR_ARG);
    CALL(MPIX_Delete_error_string(code));
    CALL(MPI_Error_string(code, text, &len));
    CHECK_EQ(len, 0);
    CALL(MPI_Error_class(code, &c));
    CHECK_EQ(c, cls);
    CALL(MPIX_Delete_error_code(code));
    CHECK_CLASS(MPIX_Delete_error_code(code), MPI_ERR_ARG);
    CALL(MPIX_Delete_error_class(cls));
    CHECK_CLASS(MPI_Add_error_code(cls, &other), MPI_ERR_ARG);
    CHECK_CLASS(MPIX_Delete_error_class(MPI_ERR_RANK), MPI_ERR_ARG);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    fault_tolerance();
    gpu_queries();
    delete_errors();
    return MTest_Finalize();
}
