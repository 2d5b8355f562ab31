/*
 * procnull.c - MPI_PROC_NULL with blocking calls (MPI-3.1 section 3.11): sends in every mode to
 * MPI_PROC_NULL, receives, MPI_Sendrecv and MPI_Sendrecv_replace with it succeed at once; a
 * receive's status has source MPI_PROC_NULL, tag MPI_ANY_TAG and count 0, and its buffer is not
 * touched. Nonblocking and persistent requests on MPI_PROC_NULL are in procnull_nb.c.
 * Runs with any number of ranks.
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int buf[4] = {1, 2, 3, 4}, in[4] = {9, 9, 9, 9};
    MPI_Status st;
    int n = -1;

    MPI_Send(buf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
    MPI_Ssend(buf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
    MPI_Rsend(buf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
    MPI_Bsend(buf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD); /* no buffer needed */

    MPI_Recv(in, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st);
    CHECK_PROC_NULL_STATUS(st, MPI_INT);
    MPI_Get_elements(&st, MPI_INT, &n);
    CHECK_EQ(n, 0);
    MPI_Recv(in, 4, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    CHECK_PROC_NULL_STATUS(st, MPI_INT);

    MPI_Sendrecv(buf, 4, MPI_INT, MPI_PROC_NULL, 1, in, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st);
    CHECK_PROC_NULL_STATUS(st, MPI_INT);
    MPI_Sendrecv_replace(buf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st);
    CHECK_PROC_NULL_STATUS(st, MPI_INT);
    CHECK(buf[0] == 1 && buf[3] == 4, "Sendrecv_replace with MPI_PROC_NULL changed the buffer");

    /* Half PROC_NULL: a real send to self, a receive from nobody (and the reverse). */
    int v = 42, x = 0;
    MPI_Request r;
    MPI_Irecv(&x, 1, MPI_INT, mtest_rank, 2, MPI_COMM_WORLD, &r);
    MPI_Sendrecv(&v, 1, MPI_INT, mtest_rank, 2, in, 4, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD, &st);
    CHECK_PROC_NULL_STATUS(st, MPI_INT);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK_EQ(x, 42);
    MPI_Isend(&v, 1, MPI_INT, mtest_rank, 3, MPI_COMM_WORLD, &r);
    x = 0;
    MPI_Sendrecv(&v, 1, MPI_INT, MPI_PROC_NULL, 3, &x, 1, MPI_INT, mtest_rank, 3, MPI_COMM_WORLD, &st);
    CHECK_EQ(st.MPI_SOURCE, mtest_rank);
    CHECK_EQ(x, 42);
    MPI_Wait(&r, MPI_STATUS_IGNORE);

    for (int i = 0; i < 4; i++)
        CHECK_EQ(in[i], 9);
    return MTest_Finalize();
}
