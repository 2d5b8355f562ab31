/*
 * kill_launcher.c - fault test: after a barrier, rank 0 kills the launcher (its parent) with
 * SIGKILL, which can clean nothing up, while every rank blocks in MPI_Recv for a message nobody
 * sends. The ranks must die with the launcher (Reflex arms a parent-death signal at MPI_Init)
 * rather than wait forever: no process of the job and no /dev/shm/reflex-* file may remain.
 * Reflex only (under Hydra the parent is a proxy). Never prints " No Errors".
 */
#include "mtest.h"
#include <signal.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int x = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (mtest_rank == 0)
        kill(getppid(), SIGKILL);
    MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    fprintf(stderr, "[%d] MPI_Recv that nobody sends to returned\n", mtest_rank);
    MPI_Finalize();
    return 3;
}
