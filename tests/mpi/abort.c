/*
 * abort.c - fault test: the last rank calls MPI_Abort(MPI_COMM_WORLD, 7) while every other rank
 * blocks in MPI_Recv from it. Expected: the launcher exits with code 7 (Reflex's mpiexec; other
 * launchers only promise non-zero), every other rank is killed, nothing is left behind.
 * This program never prints " No Errors". Runs with any number of ranks.
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int x = 0, last = mtest_size - 1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (mtest_rank == last)
        MPI_Abort(MPI_COMM_WORLD, 7);
    else
        MPI_Recv(&x, 1, MPI_INT, last, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    fprintf(stderr, "[%d] still running after MPI_Abort\n", mtest_rank);
    MPI_Finalize();
    return 3;
}
