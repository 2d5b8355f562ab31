/*
 * procnull_nb.c - nonblocking and persistent requests on MPI_PROC_NULL (MPI-3.1 sections 3.7,
 * 3.9 and 3.11): they complete at once (the first MPI_Test succeeds); a receive's status, from
 * MPI_Wait, MPI_Test, MPI_Waitall or a persistent MPI_Start, has source MPI_PROC_NULL, tag
 * MPI_ANY_TAG and count 0, and its buffer is not touched. (MPICH 4.0.2 with ch4:ucx reports
 * source 0 / tag 0 for nonblocking and MPI_ANY_SOURCE for persistent receives here.)
 * Runs with any number of ranks.
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int buf[4] = {1, 2, 3, 4}, in[4] = {9, 9, 9, 9};
    MPI_Status st, sts[5];
    MPI_Request r[5];
    int flag;

    MPI_Isend(buf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[0]);
    MPI_Issend(buf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[1]);
    MPI_Irsend(buf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[2]);
    MPI_Ibsend(buf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[3]);
    MPI_Irecv(in, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[4]);
    MPI_Waitall(5, r, sts);
    CHECK_PROC_NULL_STATUS(sts[4], MPI_INT);

    MPI_Irecv(in, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[0]);
    MPI_Wait(&r[0], &st);
    CHECK_PROC_NULL_STATUS(st, MPI_INT);

    MPI_Irecv(in, 4, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_WORLD, &r[0]);
    flag = 0;
    MPI_Test(&r[0], &flag, &st);
    CHECK(flag, "Irecv from MPI_PROC_NULL not complete at the first Test");
    if (!flag)
        MPI_Wait(&r[0], &st);
    CHECK_PROC_NULL_STATUS(st, MPI_INT);

    /* persistent */
    int y = 4;
    MPI_Recv_init(in, 4, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r[0]);
    MPI_Send_init(&y, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r[1]);
    for (int i = 0; i < 3; i++) {
        MPI_Start(&r[0]);
        MPI_Wait(&r[0], &st);
        CHECK_PROC_NULL_STATUS(st, MPI_INT);
        MPI_Startall(2, r);
        MPI_Waitall(2, r, sts);
        CHECK_PROC_NULL_STATUS(sts[0], MPI_INT);
    }
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);

    for (int i = 0; i < 4; i++)
        CHECK_EQ(in[i], 9);
    return MTest_Finalize();
}
