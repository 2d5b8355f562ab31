/*
 * pmpi_count.c - PMPI interception (MPI-3.1 chapter 14): run with mode=pmpi, i.e. linked
 * against libpmpi_prof.so (pmpi_prof.c) ahead of the MPI library. Every rank does 5 MPI_Send
 * and 5 MPI_Recv around a ring (plus calls the profiler does not wrap), then checks through
 * pmpi_prof_counts() that the wrappers saw exactly 1 MPI_Init, 5 MPI_Send and 5 MPI_Recv: the
 * library's own internal calls must go to PMPI_ names, not through the user-visible symbols.
 * The profiler's MPI_Finalize line ("pmpi_prof: ... finalize=1") is checked by the runner.
 * Runs with any number of ranks.
 */
#include "mtest.h"

/* Defined by libpmpi_prof.so; weak so that a build without it fails the check, not the link. */
void pmpi_prof_counts(int *init, int *send, int *recv) __attribute__((weak));

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int right = (mtest_rank + 1) % mtest_size, left = (mtest_rank + mtest_size - 1) % mtest_size;
    int v = mtest_rank, r = -1;
    for (int i = 0; i < 5; i++) { /* receive posted first: safe with any rank count, even 1 */
        MPI_Request q;
        MPI_Irecv(&r, 1, MPI_INT, left, i, MPI_COMM_WORLD, &q);
        MPI_Send(&v, 1, MPI_INT, right, i, MPI_COMM_WORLD);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        CHECK_EQ(r, left);
        MPI_Isend(&v, 1, MPI_INT, right, 10 + i, MPI_COMM_WORLD, &q);
        MPI_Recv(&r, 1, MPI_INT, left, 10 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        CHECK_EQ(r, left);
    }
    /* Calls the profiler does not wrap, some of which use send/recv inside many libraries. */
    MPI_Sendrecv(&v, 1, MPI_INT, right, 9, &r, 1, MPI_INT, left, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&r, &v, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

    if (!pmpi_prof_counts) {
        FAIL("not linked with libpmpi_prof.so (run this program with mode=pmpi)");
    } else {
        int init = -1, send = -1, recv = -1;
        pmpi_prof_counts(&init, &send, &recv);
        CHECK_EQ(init, 1);
        CHECK_EQ(send, 5);
        CHECK_EQ(recv, 5);
    }
    return MTest_Finalize();
}
